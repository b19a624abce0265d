//! The duplicate check of one written row: the advisory locks that make concurrent near-duplicate
//! writes meet, the search of the attached table (every partition of a partitioned one) for the
//! nearest row within `max_distance`, and what the error and the flag column say of it.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use pgrx::prelude::*;

use crate::attachment::{Attachment, RowKey};
use crate::catalog::{attnum_of, cstr_utf8, qualified_name_of, relation_name, CatalogCache};
use crate::errors::{raise, EncodedError};
use crate::search::{fingerprint_attnum, search_table, TableSearch};
use crate::setup::attnum;

/// The fourth field of the tags of the extension's locks. `pg_advisory_lock(bigint)` makes tags with 1
/// there and `pg_advisory_lock(int, int)` with 2: no SQL call can take, or wait for, a lock of
/// this tag, so no role can block checked writes and no application's locks collide with them
/// (docs/ARCHITECTURE.md §8.2). In `pg_locks` they show as advisory locks with `objsubid` 21320.
pub const LOCK_TAG_FIELD4: u16 = 0x5348;

/// Takes the transaction-level locks `(relid, key)` (§8.2) for the keys of
/// `simhash_core::probe::lock_keys`: k+1 parts of the fingerprint, so that two writes within
/// distance k always wait for each other, whatever bands the lookup probes.
pub fn lock_parts(relid: pg_sys::Oid, fp: u64, max_distance: u32) {
    // Keys are (part << 8) | value with fewer than 32 parts: a slot each below MINHASH_SLOTS.
    lock_keys(
        relid,
        simhash_core::probe::lock_keys(fp, max_distance)
            .into_iter()
            .map(|key| (key, key as usize)),
    );
}

/// Takes the locks `(relid, key)` of `keys` (tag [`LOCK_TAG_FIELD4`]), each given with its slot in the set of held
/// locks (`slot` ≥ [`HELD_SLOTS`]: not remembered).
///
/// A lock this (sub)transaction already took is not asked for again: transaction-level advisory
/// locks stay held until the (sub)transaction that took them ends, so while the same one is
/// current the lock manager would only count one more hold. A bulk insert comes to hold every key
/// of a table after a few thousand rows, and then takes no lock at all per row.
pub fn lock_keys(relid: pg_sys::Oid, keys: impl IntoIterator<Item = (u32, usize)>) {
    let owner = unsafe {
        (
            crate::compat::local_transaction_id(),
            pg_sys::GetCurrentSubTransactionId(),
            relid,
        )
    };
    for (key, slot) in keys {
        let (word, bit) = (slot / 64 % HELD_WORDS, 1u64 << (slot % 64));
        let known = HELD_LOCKS.with(|h| {
            let mut h = h.borrow_mut();
            if h.0 != owner {
                *h = (owner, [0; HELD_WORDS]);
            }
            slot < HELD_SLOTS && h.1[word] & bit != 0
        });
        if known {
            continue;
        }
        let tag = pg_sys::LOCKTAG {
            locktag_field1: unsafe { pg_sys::MyDatabaseId }.to_u32(),
            locktag_field2: relid.to_u32(),
            locktag_field3: key,
            locktag_field4: LOCK_TAG_FIELD4,
            locktag_type: pg_sys::LockTagType::LOCKTAG_ADVISORY as u8,
            locktag_lockmethodid: pg_sys::USER_LOCKMETHOD as u8,
        };
        unsafe { pg_sys::LockAcquire(&tag, pg_sys::ExclusiveLock as pg_sys::LOCKMODE, false, false) };
        // Recorded only once granted: an error (a deadlock, a cancel) leaves the set without it.
        if slot < HELD_SLOTS {
            HELD_LOCKS.with(|h| h.borrow_mut().1[word] |= bit);
        }
    }
}

/// Slots of the set of held lock keys: 32 parts of 8 bits (SimHash), then from `MINHASH_SLOTS`
/// the `MINHASH_LOCK_SLOTS` of MinHash band keys (`crate::lsh`).
pub const MINHASH_SLOTS: usize = 32 * 256;
pub const MINHASH_LOCK_SLOTS: usize = 32 * 128;
const HELD_SLOTS: usize = MINHASH_SLOTS + MINHASH_LOCK_SLOTS;
const HELD_WORDS: usize = HELD_SLOTS.div_ceil(64);

thread_local! {
    /// The advisory lock keys known to be held on one table, with the (local transaction,
    /// subtransaction, table) they are held for: the set is emptied as soon as another one is
    /// current.
    static HELD_LOCKS: RefCell<((u32, pg_sys::SubTransactionId, pg_sys::Oid), [u64; HELD_WORDS])> =
        const { RefCell::new(((0, 0, pg_sys::Oid::INVALID), [0; HELD_WORDS])) };
}

/// The prepared lookup of one trigger, kept for the life of the backend.
struct Lookup {
    plan: pg_sys::SPIPlanPtr,
    key_columns: String,
    /// The names of the key columns; None for a key of system columns (ctid).
    key_names: Option<Vec<String>>,
}

thread_local! {
    static LOOKUPS: RefCell<HashMap<(u32, String, String), Lookup>> = RefCell::new(HashMap::new());
}

/// How near an existing row is: its Hamming distance (SimHash) or estimated similarity (MinHash).
#[derive(Clone, Copy)]
pub enum Measure {
    Distance(u32),
    Similarity(f64),
}

/// The nearest existing row within `max_distance` (the most similar one at least as similar as the
/// threshold).
pub struct Nearest {
    /// The row's key as messages show it; None when the writer may not see it
    /// (`crate::privileges::may_see_key`).
    pub key: Option<String>,
    pub measure: Measure,
    /// The row's key as the flag column stores it, copied out of SPI's memory.
    pub flag_value: Option<pg_sys::Datum>,
}

/// Builds and prepares the query that reads the key of the row found (and the flag column's value).
/// It names only `pg_catalog`'s functions, operators and types, with their schema.
unsafe fn prepare_lookup(relid: pg_sys::Oid) -> Lookup {
    let key = RowKey::of(relid, pg_sys::get_rel_relispartition(relid));
    // Always schema-qualified: the cached plan must not depend on the caller's search_path. Read
    // from the syscache: Citus hides its shards from queries on pg_class in some sessions.
    let qualified = qualified_name_of(relid);
    let key_text = key.message_sql("t");
    // The flag column holds a one-column key as itself, any other as the message's text.
    let flag_expr = match &key {
        RowKey::Columns(columns) if columns.len() == 1 => format!("t.{}", columns[0]),
        _ => key_text.clone(),
    };
    // The row was found through the band indexes (`search.rs`); this reads its key by ctid.
    let sql = format!(
        "SELECT {key_text}, {flag_expr} FROM ONLY {qualified} t WHERE t.ctid OPERATOR(pg_catalog.=) $1"
    );
    let plan = crate::spi::prepare_kept(&sql, &mut [pg_sys::TIDOID], "the trigger's key lookup");
    let key_names = match &key {
        RowKey::Columns(columns) => Some(columns.iter().map(|c| crate::attachment::unquote(c)).collect()),
        RowKey::Ctid { .. } => None,
    };
    Lookup {
        plan,
        key_columns: key.names(),
        key_names,
    }
}

/// The value of the scope column that a written row's duplicates must share, and how to compare.
pub struct ScopeFilter<'a> {
    pub column: &'a str,
    pub value: pg_sys::Datum,
    pub equal: *mut pg_sys::FmgrInfo,
    pub collation: pg_sys::Oid,
}

impl ScopeFilter<'_> {
    /// Whether the row in `slot` (of a table whose scope column is `attnum`) has the same value.
    unsafe fn matches(&self, slot: *mut pg_sys::TupleTableSlot, attnum: i16) -> bool {
        let mut should_free = false;
        let tuple = pg_sys::ExecFetchSlotHeapTuple(slot, false, &mut should_free);
        let value = pgrx::heap_getattr_raw(
            tuple,
            std::num::NonZeroUsize::new(attnum as usize).expect("a user column"),
            (*slot).tts_tupleDescriptor,
        );
        let same = value.is_some_and(|v| {
            pg_sys::FunctionCall2Coll(self.equal, self.collation, self.value, v).value() != 0
        });
        if should_free {
            pg_sys::heap_freetuple(tuple);
        }
        same
    }
}

/// A row being written, to check for near-duplicates: where it goes and what it holds.
pub struct Written<'a> {
    /// The table the row is written to (open).
    pub heap: pg_sys::Relation,
    /// The table the trigger was attached to: `heap`, or the partitioned table it is a partition of.
    pub attached_table: pg_sys::Oid,
    pub fp: u64,
    /// The fingerprint column of `heap`.
    pub fp_attnum: i16,
    /// The row's own TID (an UPDATE's old version, a written row), never its own near-duplicate.
    pub self_tid: pg_sys::ItemPointerData,
    /// With a scope, only rows of its value count.
    pub scope: Option<&'a ScopeFilter<'a>>,
    /// A row written by a COPY, checked after its batch is in the table.
    pub copy: Option<CopyCommand>,
}

/// The command of a COPY, whose rows `simhash_check_trigger()` checks one by one after each batch
/// of them is in the table: a row of the COPY that is not checked yet was written after the row
/// being checked, and does not count against it. The later row reports the pair and names the
/// earlier one, as an INSERT of the same rows does.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct CopyCommand {
    xmin: pg_sys::TransactionId,
    cid: pg_sys::CommandId,
}

/// A TID as a hashable key.
type TidKey = (u16, u16, u16);

pub fn tid_key(tid: &pg_sys::ItemPointerData) -> TidKey {
    (tid.ip_blkid.bi_hi, tid.ip_blkid.bi_lo, tid.ip_posid)
}

thread_local! {
    /// The rows of the latest COPY checked so far (a few bytes a row, kept until the next COPY).
    static COPY_CHECKED: RefCell<(Option<CopyCommand>, HashSet<TidKey>)> = RefCell::new((None, HashSet::new()));
}

impl CopyCommand {
    /// The transaction and command that inserted `tuple`, which no command has changed since.
    ///
    /// # Safety
    /// `tuple` must be a valid heap tuple.
    pub unsafe fn of(tuple: pg_sys::HeapTuple) -> CopyCommand {
        let header = &(*(*tuple).t_data).t_choice.t_heap;
        CopyCommand {
            xmin: header.t_xmin,
            cid: header.t_field3.t_cid,
        }
    }

    /// Whether the row in `slot` was written by this command and is not checked yet.
    unsafe fn not_checked_yet(self, slot: *mut pg_sys::TupleTableSlot) -> bool {
        let mut should_free = false;
        let tuple = pg_sys::ExecFetchSlotHeapTuple(slot, false, &mut should_free);
        let written_here = CopyCommand::of(tuple) == self;
        if should_free {
            pg_sys::heap_freetuple(tuple);
        }
        let key = tid_key(&(*slot).tts_tid);
        written_here
            && !COPY_CHECKED
                .with(|c| matches!(&*c.borrow(), (Some(cmd), rows) if *cmd == self && rows.contains(&key)))
    }

    /// Notes the row at `tid` as checked.
    pub fn checked(self, tid: pg_sys::ItemPointerData) {
        COPY_CHECKED.with(|c| {
            let mut c = c.borrow_mut();
            if c.0 != Some(self) {
                *c = (Some(self), HashSet::new());
            }
            c.1.insert(tid_key(&tid));
        });
    }
}

thread_local! {
    /// The leaf partitions of a partitioned table with an attachment, per relcache generation.
    static LEAF_TABLES: CatalogCache<pg_sys::Oid, Vec<pg_sys::Oid>> = CatalogCache::default();
}

/// The tables that hold the rows a write to `row.heap` is checked against: that table, or every
/// leaf partition of the attached partitioned table.
unsafe fn checked_tables(row: &Written) -> Vec<pg_sys::Oid> {
    let relid = (*row.heap).rd_id;
    if row.attached_table == relid {
        return vec![relid];
    }
    // The partitions change only with a relcache invalidation of the partitioned table.
    LEAF_TABLES.with(|l| {
        l.get_or_compute(row.attached_table, || {
            let root = crate::partitions::OpenTable::open(row.heap, row.attached_table);
            crate::partitions::leaf_tables(root.rel)
        })
    })
}

/// The nearest row within `att.max_distance` of `row`, as (distance, table, ctid), as `snapshot`
/// sees them.
unsafe fn nearest_row(
    att: &Attachment,
    row: &Written,
    snapshot: pg_sys::Snapshot,
) -> Option<(u32, pg_sys::Oid, pg_sys::ItemPointerData)> {
    let relid = (*row.heap).rd_id;
    let mut best: Option<(u32, pg_sys::Oid, pg_sys::ItemPointerData)> = None;
    for table in checked_tables(row) {
        let own = table == relid;
        let open = crate::partitions::OpenTable::open(row.heap, table);
        let rel = open.rel;
        let scope_attnum = row.scope.map(|s| {
            attnum_of((*rel).rd_att, s.column)
                .unwrap_or_else(|| attnum((*rel).rd_att, s.column, &relation_name(rel)) as i16)
        });
        let search = TableSearch {
            rel,
            att,
            fp_attnum: if own {
                row.fp_attnum
            } else {
                fingerprint_attnum(rel, att)
            },
            query: row.fp,
            k: att.max_distance,
            snapshot,
            exclude: own.then_some(row.self_tid),
            // The executor has locked the indexes of the table the row goes to; other partitions'
            // indexes are locked here.
            lockmode: if own {
                pg_sys::NoLock
            } else {
                pg_sys::AccessShareLock
            } as pg_sys::LOCKMODE,
        };
        search_table(&search, &mut |d, slot| {
            if row.copy.is_some_and(|copy| copy.not_checked_yet(slot)) {
                return;
            }
            let in_scope = match (row.scope, scope_attnum) {
                (Some(scope), Some(attnum)) => scope.matches(slot, attnum),
                _ => true,
            };
            if in_scope && best.is_none_or(|(bd, _, _)| d < bd) {
                best = Some((d, table, (*slot).tts_tid));
            }
        });
    }
    best
}

/// Finds the nearest row within `max_distance` of `row` with a fresh snapshot, so that rows
/// committed while this transaction waited on the locks are seen at every isolation level; with
/// the key columns of its table, as [`describe_row`] gives them.
pub unsafe fn find_nearest(
    ext_schema: impl FnOnce() -> String,
    att: &Attachment,
    row: &Written,
    flag_attr: Option<&pg_sys::FormData_pg_attribute>,
) -> (String, Option<Nearest>) {
    // A new command id first, as a read-write SPI query would: rows written earlier in this
    // statement (a multi-row INSERT) are then visible to the snapshot, which also sees every
    // transaction committed while this one waited on the locks.
    pg_sys::CommandCounterIncrement();
    let snapshot = pg_sys::RegisterSnapshot(pg_sys::GetLatestSnapshot());
    let Some((distance, relid, tid)) = nearest_row(att, row, snapshot) else {
        pg_sys::UnregisterSnapshot(snapshot);
        return (String::new(), None);
    };
    let found = describe_row(
        &ext_schema(),
        att,
        (relid, row.attached_table),
        tid,
        Measure::Distance(distance),
        flag_attr,
        snapshot,
    );
    pg_sys::UnregisterSnapshot(snapshot);
    found
}

/// The key columns of table `relid` and the key (and flag column value) of its row at `tid`, as
/// `snapshot` sees it: what the messages and the flag column say of a near-duplicate found in
/// `relid`, a table or partition of the attached table `attached`. Read as the owner of `relid`,
/// whatever the writer may SELECT, as a unique index finds any row; the key is kept for the
/// messages only when the writer may see it (`crate::privileges::may_see_key` on `attached`).
pub unsafe fn describe_row(
    ext_schema: &str,
    att: &Attachment,
    (relid, attached): (pg_sys::Oid, pg_sys::Oid),
    tid: pg_sys::ItemPointerData,
    measure: Measure,
    flag_attr: Option<&pg_sys::FormData_pg_attribute>,
    snapshot: pg_sys::Snapshot,
) -> (String, Option<Nearest>) {
    let ext_schema = ext_schema.to_string();
    pg_sys::SPI_connect();
    // The name is part of the key: the prepared query names the table, and a renamed table (or
    // schema) must not reach a stale plan.
    let cache_key = (relid.to_u32(), ext_schema.clone(), qualified_name_of(relid));
    let (plan, key_columns, key_names) = LOOKUPS.with(|lookups| {
        let mut lookups = lookups.borrow_mut();
        let lookup = lookups.entry(cache_key).or_insert_with(|| prepare_lookup(relid));
        (lookup.plan, lookup.key_columns.clone(), lookup.key_names.clone())
    });
    let visible = key_visible(attached, key_names.as_deref());
    let mut tid = tid;
    let mut values = [pg_sys::Datum::from(&mut tid as *mut pg_sys::ItemPointerData)];
    let nulls = [b' ' as std::ffi::c_char];
    let status = crate::privileges::as_owner(relid, true, || {
        pg_sys::SPI_execute_snapshot(
            plan,
            values.as_mut_ptr(),
            nulls.as_ptr(),
            snapshot,
            std::ptr::null_mut(),
            false,
            false,
            1,
        )
    });
    if status != pg_sys::SPI_OK_SELECT as i32 || pg_sys::SPI_processed == 0 {
        raise(EncodedError {
            code: PgSqlErrorCode::ERRCODE_INTERNAL_ERROR,
            message: format!("simhash_trigger could not read the key of the row found (SPI status {status})"),
            detail: None,
            hint: None,
        });
    }
    let table = &*pg_sys::SPI_tuptable;
    let row = *table.vals;
    let key = visible.then(|| cstr_utf8(pg_sys::SPI_getvalue(row, table.tupdesc, 1)));
    let flag_value = flag_attr.and_then(|attr| {
        if pg_sys::SPI_gettypeid(table.tupdesc, 2) != attr.atttypid {
            raise(EncodedError {
                code: PgSqlErrorCode::ERRCODE_DATATYPE_MISMATCH,
                message: format!(
                    "simhash_trigger: column \"{}\" does not have the type of the table's key",
                    att.flag_column()
                ),
                detail: None,
                hint: Some(
                    "The key or the flag column was altered after simhash_attach(); detach the table and attach it again."
                        .into(),
                ),
            });
        }
        let mut isnull = false;
        let value = pg_sys::SPI_getbinval(row, table.tupdesc, 2, &mut isnull);
        (!isnull).then(|| pg_sys::SPI_datumTransfer(value, attr.attbyval, attr.attlen as i32))
    });
    pg_sys::SPI_finish();
    (
        key_columns,
        Some(Nearest {
            key,
            measure,
            flag_value,
        }),
    )
}

/// Whether the writer may be told the key (columns `names`, None for ctid) of a row of the attached
/// table `attached`; not when a key column is missing from it.
unsafe fn key_visible(attached: pg_sys::Oid, names: Option<&[String]>) -> bool {
    use crate::privileges::{may_see_key, Columns};
    let Some(names) = names else {
        return may_see_key(attached, Columns::Table);
    };
    let rel = pg_sys::RelationIdGetRelation(attached);
    if rel.is_null() {
        return false;
    }
    let attnums: Option<Vec<i16>> = names.iter().map(|n| attnum_of((*rel).rd_att, n)).collect();
    pg_sys::RelationClose(rel);
    attnums.is_some_and(|attnums| may_see_key(attached, Columns::Some(&attnums)))
}

/// A similarity as messages show it: three decimals.
pub fn similarity_text(similarity: f64) -> String {
    format!("{similarity:.3}")
}

/// The error of a write to `table` that comes within `max_distance` of its row `n`: SQLSTATE 23505
/// with the attachment's trigger as its constraint name, so that an application tells it from a
/// unique violation (`PG_DIAG_CONSTRAINT_NAME`). The DETAIL names the row's key only when the writer
/// may see it, as PostgreSQL's unique violations do.
pub fn raise_duplicate(att: &Attachment, table: &str, key_columns: &str, n: &Nearest) -> ! {
    let limit = match att.minhash() {
        Some(m) => format!("threshold {}", m.threshold),
        None => format!("max_distance {}", att.max_distance),
    };
    // Without the key, no measure either: a distance or similarity to a row the writer may not read
    // would let it guess the row's text edit by edit.
    let detail = match (&n.key, n.measure) {
        (Some(key), Measure::Similarity(similarity)) => format!(
            "Key ({key_columns})=({key}) has estimated similarity {} ({limit}).",
            similarity_text(similarity)
        ),
        (Some(key), Measure::Distance(distance)) => {
            format!("Key ({key_columns})=({key}) is at Hamming distance {distance} ({limit}).")
        }
        (None, _) => format!("A row you may not read is a near-duplicate ({limit})."),
    };
    crate::errors::raise_violation(
        EncodedError {
            code: PgSqlErrorCode::ERRCODE_UNIQUE_VIOLATION,
            message: format!(
                "near-duplicate text in column \"{}\" of relation \"{table}\"",
                att.text_column
            ),
            detail: Some(detail),
            hint: None,
        },
        att.trigger_name(),
    )
}

/// On a shard of a Citus table, the trigger sees that shard's rows only: it checks a write only
/// where that is exact, among rows with the write's value of the distribution column, and refuses
/// otherwise (a check of one shard would let near-duplicates on other shards through unseen).
pub unsafe fn check_shard_scope(att: &Attachment, shard: &crate::citus::Distribution, rel: pg_sys::Relation) {
    if shard.hash_distributed() && shard.column.is_some() && att.scope_column == shard.column {
        return;
    }
    let column = shard.column.as_deref().unwrap_or("");
    raise(EncodedError {
        code: PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
        message: format!(
            "simhash_trigger: near-duplicate checks on shard \"{}\" of Citus table {} would miss the rows of other shards",
            relation_name(rel),
            shard.table
        ),
        detail: Some(if shard.hash_distributed() {
            format!(
                "on_duplicate => '{}' is scoped to {}, but the table is distributed by column \"{column}\".",
                att.mode.name(),
                att.scope_column
                    .as_deref()
                    .map_or("the whole table".to_string(), |c| format!("column \"{c}\""))
            )
        } else {
            "The table is a Citus reference or local table.".to_string()
        }),
        hint: Some(if shard.hash_distributed() {
            format!(
                "On the coordinator: SELECT simhash_detach(table); then simhash_attach(table, ..., scope => '{column}') \
                 to reject near-duplicates among rows with the same {column}, or on_duplicate => 'none'."
            )
        } else {
            "Detach it: simhash_attach() supports hash-distributed tables.".to_string()
        }),
    });
}
