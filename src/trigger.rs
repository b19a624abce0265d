//! The trigger that `simhash_attach()` puts on a table (SPEC §4): it computes the fingerprint once per
//! row write (the band columns are generated from it), and in `error`, `skip` or `flag` mode looks for
//! an existing near-duplicate under advisory locks, so that two concurrent near-duplicate writes never
//! both succeed.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::sync::atomic::{AtomicU64, Ordering};

use pgrx::prelude::*;
use simhash_core::{Chunking, Options};

use crate::errors::{raise, EncodedError, OrRaise};
use crate::leafmap::CatalogCache;
use crate::search::search_table;
use crate::text::{server_to_utf8_lossy, utf8_to_server, Text};

/// Fingerprints the trigger has computed in this backend: tests use it to show one per row write.
pub static FINGERPRINTS_COMPUTED: AtomicU64 = AtomicU64::new(0);

/// What the trigger does with a near-duplicate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Only maintain the fingerprint.
    None,
    /// Reject the write with SQLSTATE 23505.
    Error,
    /// Drop the row silently.
    Skip,
    /// Keep the row and record the existing row's key.
    Flag,
}

impl Mode {
    pub fn parse(s: &str) -> Option<Mode> {
        match s {
            "none" => Some(Mode::None),
            "error" => Some(Mode::Error),
            "skip" => Some(Mode::Skip),
            "flag" => Some(Mode::Flag),
            _ => None,
        }
    }
}

/// One attached text column: the trigger's arguments, in the order `simhash_attach()` writes them:
/// text column, nbands, max_distance, mode, tokenizer, shingle, weighting, stopwords, and since 0.3.0
/// fold (a trigger made before has 8 arguments and means fold 'auto') and, for a scoped attachment
/// only, the scope column ('' for none) and, for a distributed table checked through its registry,
/// 'registry'.
#[derive(Debug, Clone)]
pub struct Attachment {
    pub text_column: String,
    pub nbands: i32,
    pub max_distance: i32,
    pub mode: Mode,
    pub options: Options,
    /// Duplicates are looked for only among rows with the same value of this column.
    pub scope_column: Option<String>,
    /// A distributed table whose writes are checked by its registry on the coordinator.
    pub registry: bool,
}

impl Attachment {
    pub fn from_args(args: &[String]) -> Option<Attachment> {
        let (
            text_column,
            nbands,
            max_distance,
            mode,
            tokenizer,
            shingle,
            weighting,
            stopwords,
            fold,
            scope,
            registry,
        ) = match args {
            [c, n, k, m, t, s, w, st] => (c, n, k, m, t, s, w, st, "auto", "", false),
            [c, n, k, m, t, s, w, st, f] => (c, n, k, m, t, s, w, st, f.as_str(), "", false),
            [c, n, k, m, t, s, w, st, f, sc] => (c, n, k, m, t, s, w, st, f.as_str(), sc.as_str(), false),
            [c, n, k, m, t, s, w, st, f, sc, r] if r == "registry" => {
                (c, n, k, m, t, s, w, st, f.as_str(), sc.as_str(), true)
            }
            _ => return None,
        };
        let options = Options::parse_with_fold(
            tokenizer,
            shingle.parse().ok()?,
            weighting,
            stopwords == "true",
            fold,
        )
        .ok()?;
        Some(Attachment {
            text_column: text_column.clone(),
            nbands: nbands.parse().ok().filter(|n| (3..=64).contains(n))?,
            max_distance: max_distance.parse().ok().filter(|k| (0..=63).contains(k))?,
            mode: Mode::parse(mode)?,
            options,
            scope_column: (!scope.is_empty()).then(|| scope.to_string()),
            registry,
        })
    }

    pub fn fingerprint_column(&self) -> String {
        format!("{}_simhash", self.text_column)
    }

    pub fn band_column(&self, band: i32) -> String {
        format!("{}_band{band}", self.text_column)
    }

    pub fn flag_column(&self) -> String {
        format!("{}_duplicate_of", self.text_column)
    }

    /// The fingerprint the registry checked, written by the coordinator with the row.
    pub fn registered_column(&self) -> String {
        format!("{}_registered", self.text_column)
    }
}

/// Takes the transaction-level advisory locks of `pg_advisory_xact_lock(relid, key)` for the keys
/// of `simhash_core::probe::lock_keys`: k+1 parts of the fingerprint, so that two writes within
/// distance k always wait for each other, whatever bands the lookup probes.
///
/// A lock this (sub)transaction already took is not asked for again: transaction-level advisory
/// locks stay held until the (sub)transaction that took them ends, so while the same one is
/// current the lock manager would only count one more hold. A bulk insert comes to hold every key
/// of a table after a few thousand rows, and then takes no lock at all per row.
fn lock_parts(relid: pg_sys::Oid, fp: u64, max_distance: u32) {
    let owner = unsafe {
        (
            (*pg_sys::MyProc).lxid,
            pg_sys::GetCurrentSubTransactionId(),
            relid,
        )
    };
    for key in simhash_core::probe::lock_keys(fp, max_distance) {
        // Keys are (part << 8) | value with fewer than 32 parts: a bit each.
        let (word, bit) = ((key / 64) as usize % HELD_WORDS, 1u64 << (key % 64));
        let known = HELD_LOCKS.with(|h| {
            let mut h = h.borrow_mut();
            if h.0 != owner {
                *h = (owner, [0; HELD_WORDS]);
            }
            key < (HELD_WORDS * 64) as u32 && h.1[word] & bit != 0
        });
        if known {
            continue;
        }
        let tag = pg_sys::LOCKTAG {
            locktag_field1: unsafe { pg_sys::MyDatabaseId }.to_u32(),
            locktag_field2: relid.to_u32(),
            locktag_field3: key,
            locktag_field4: 2,
            locktag_type: pg_sys::LockTagType::LOCKTAG_ADVISORY as u8,
            locktag_lockmethodid: pg_sys::USER_LOCKMETHOD as u8,
        };
        unsafe { pg_sys::LockAcquire(&tag, pg_sys::ExclusiveLock as pg_sys::LOCKMODE, false, false) };
        // Recorded only once granted: an error (a deadlock, a cancel) leaves the set without it.
        if key < (HELD_WORDS * 64) as u32 {
            HELD_LOCKS.with(|h| h.borrow_mut().1[word] |= bit);
        }
    }
}

/// Words of the set of held lock keys: room for 32 parts of 8 bits.
const HELD_WORDS: usize = 32 * 256 / 64;

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
}

thread_local! {
    static LOOKUPS: RefCell<HashMap<(u32, String, String), Lookup>> = RefCell::new(HashMap::new());
}

/// The nearest existing row within `max_distance`.
pub struct Nearest {
    key: String,
    distance: i32,
    /// The row's key as the flag column stores it, copied out of SPI's memory.
    flag_value: Option<pg_sys::Datum>,
}

fn quote_ident(name: &str) -> String {
    pgrx::spi::quote_identifier(name)
}

/// Builds and prepares the query that reads the key of the row found (and the flag column's value).
unsafe fn prepare_lookup(relid: pg_sys::Oid, ext_schema: &str) -> Lookup {
    let pk = query_utf8(
        &format!(
            "SELECT pg_catalog.convert_to(string_agg(quote_ident(attname), ', ' ORDER BY ord), 'UTF8') \
             FROM {ext_schema}.simhash_primary_key($1)"
        ),
        relid,
    );
    // Always schema-qualified: the cached plan must not depend on the caller's search_path. Read
    // from the syscache: Citus hides its shards from queries on pg_class in some sessions.
    let qualified = crate::search::qualified_name_of(relid);
    let (key_columns, key_text, flag_expr) = match &pk {
        Some(cols) => {
            let texts: Vec<String> = cols.split(", ").map(|c| format!("t.{c}::text")).collect();
            let single = !cols.contains(", ");
            let key_text = format!("concat_ws(', ', {})", texts.join(", "));
            let flag = if single {
                format!("t.{cols}")
            } else {
                key_text.clone()
            };
            (cols.clone(), key_text, flag)
        }
        // A ctid names a row only within its partition.
        None if pg_sys::get_rel_relispartition(relid) => (
            "tableoid, ctid".to_string(),
            "concat_ws(', ', t.tableoid::regclass::text, t.ctid::text)".to_string(),
            "concat_ws(', ', t.tableoid::regclass::text, t.ctid::text)".to_string(),
        ),
        None => (
            "ctid".to_string(),
            "t.ctid::text".to_string(),
            "t.ctid::text".to_string(),
        ),
    };
    // The row was found through the band indexes (`search.rs`); this reads its key by ctid.
    let sql = format!("SELECT {key_text}, {flag_expr} FROM ONLY {qualified} t WHERE t.ctid = $1");
    let mut types = vec![pg_sys::TIDOID];
    let csql = server_cstring(&sql);
    let plan = pg_sys::SPI_prepare(csql.as_ptr(), types.len() as i32, types.as_mut_ptr());
    if plan.is_null() {
        raise(EncodedError {
            code: PgSqlErrorCode::ERRCODE_INTERNAL_ERROR,
            message: "simhash_trigger could not prepare its lookup query".into(),
            detail: Some(format!("Query: {sql}")),
            hint: None,
        });
    }
    pg_sys::SPI_keepplan(plan);
    Lookup { plan, key_columns }
}

/// A UTF-8 string as a C string in the server encoding, for SQL text and catalog names.
fn server_cstring(text: &str) -> CString {
    CString::new(utf8_to_server(text).into_owned()).unwrap_or_default()
}

/// A C string of the server encoding (a catalog name, a trigger argument, a value's output) as UTF-8.
unsafe fn cstr_utf8(ptr: *const std::ffi::c_char) -> String {
    server_to_utf8_lossy(CStr::from_ptr(ptr).to_bytes())
}

/// Runs a one-row query about `relid` whose single column is a `bytea` of UTF-8
/// (`convert_to(..., 'UTF8')`): pgrx reads `text` only in a UTF-8 database.
pub(crate) unsafe fn query_utf8(sql: &str, relid: pg_sys::Oid) -> Option<String> {
    let csql = server_cstring(sql);
    let mut types = [pg_sys::OIDOID];
    let mut values = [pg_sys::Datum::from(relid)];
    let nulls = [b' ' as std::ffi::c_char];
    let status = pg_sys::SPI_execute_with_args(
        csql.as_ptr(),
        1,
        types.as_mut_ptr(),
        values.as_mut_ptr(),
        nulls.as_ptr(),
        true,
        1,
    );
    if status != pg_sys::SPI_OK_SELECT as i32 || pg_sys::SPI_processed == 0 {
        return None;
    }
    let table = &*pg_sys::SPI_tuptable;
    let mut isnull = false;
    let value = pg_sys::SPI_getbinval(*table.vals, table.tupdesc, 1, &mut isnull);
    if isnull {
        return None;
    }
    let bytes = pg_sys::pg_detoast_datum_packed(value.cast_mut_ptr());
    let data = std::slice::from_raw_parts(
        pgrx::vardata_any(bytes) as *const u8,
        pgrx::varsize_any_exhdr(bytes),
    );
    Some(String::from_utf8_lossy(data).into_owned())
}

/// The value of the scope column that a written row's duplicates must share, and how to compare.
struct ScopeFilter<'a> {
    column: &'a str,
    value: pg_sys::Datum,
    equal: *mut pg_sys::FmgrInfo,
    collation: pg_sys::Oid,
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

/// The nearest row within `att.max_distance` of `fp` in the tables of `attached_table` (the firing
/// table, or every leaf partition of the attached partitioned table), as (distance, table, ctid),
/// leaving out the row at `self_tid` of `heap`, and with a scope only among rows of its value.
#[allow(clippy::too_many_arguments)] // the trigger's state, passed down once per checked write
unsafe fn nearest_row(
    heap: pg_sys::Relation,
    attached_table: pg_sys::Oid,
    att: &Attachment,
    fp: u64,
    fp_attnum: i16,
    self_tid: pg_sys::ItemPointerData,
    snapshot: pg_sys::Snapshot,
    scope: Option<&ScopeFilter>,
) -> Option<(u32, pg_sys::Oid, pg_sys::ItemPointerData)> {
    let relid = (*heap).rd_id;
    let tables = if attached_table == relid {
        vec![relid]
    } else {
        // The partitions change only with a relcache invalidation of the partitioned table.
        LEAF_TABLES.with(|l| {
            l.get_or_compute(attached_table, || {
                let root = crate::partitions::OpenTable::open(heap, attached_table);
                crate::partitions::leaf_tables(root.rel)
            })
        })
    };
    let mut best: Option<(u32, pg_sys::Oid, pg_sys::ItemPointerData)> = None;
    for table in tables {
        let own = table == relid;
        let open = crate::partitions::OpenTable::open(heap, table);
        let rel = open.rel;
        let fp_attnum = if own {
            fp_attnum
        } else {
            crate::search::fingerprint_attnum(rel, att)
        };
        let scope_attnum = scope.map(|s| {
            crate::search::attnum_of((*rel).rd_att, s.column)
                .unwrap_or_else(|| attnum((*rel).rd_att, s.column, &crate::search::relation_name(rel)) as i16)
        });
        // The executor has locked the indexes of the table the row goes to; other partitions'
        // indexes are locked here.
        let lockmode = if own {
            pg_sys::NoLock
        } else {
            pg_sys::AccessShareLock
        };
        search_table(
            rel,
            att,
            fp_attnum,
            fp,
            att.max_distance,
            snapshot,
            own.then_some(self_tid),
            lockmode as pg_sys::LOCKMODE,
            &mut |d, slot| {
                let in_scope = match (scope, scope_attnum) {
                    (Some(scope), Some(attnum)) => scope.matches(slot, attnum),
                    _ => true,
                };
                if in_scope && best.is_none_or(|(bd, _, _)| d < bd) {
                    best = Some((d, table, (*slot).tts_tid));
                }
            },
        );
    }
    best
}

/// Finds the nearest row within `max_distance` with a fresh snapshot, so that rows committed while
/// this transaction waited on the locks are seen at every isolation level.
#[allow(clippy::too_many_arguments)] // the trigger's state, passed down once per checked write
unsafe fn find_nearest(
    td: &pg_sys::TriggerData,
    fcinfo: pg_sys::FunctionCallInfo,
    att: &Attachment,
    fp: u64,
    self_tid: pg_sys::ItemPointerData,
    flag_attr: Option<&pg_sys::FormData_pg_attribute>,
    fp_attnum: i32,
    attached_table: pg_sys::Oid,
    scope: Option<&ScopeFilter>,
) -> (String, Option<Nearest>) {
    let heap = td.tg_relation;
    // A new command id first, as a read-write SPI query would: rows written earlier in this
    // statement (a multi-row INSERT) are then visible to the snapshot, which also sees every
    // transaction committed while this one waited on the locks.
    pg_sys::CommandCounterIncrement();
    let snapshot = pg_sys::RegisterSnapshot(pg_sys::GetLatestSnapshot());
    let Some((distance, relid, tid)) = nearest_row(
        heap,
        attached_table,
        att,
        fp,
        fp_attnum as i16,
        self_tid,
        snapshot,
        scope,
    ) else {
        pg_sys::UnregisterSnapshot(snapshot);
        return (String::new(), None);
    };
    let found = describe_row(
        &extension_schema(fcinfo),
        att,
        relid,
        tid,
        distance,
        flag_attr,
        snapshot,
    );
    pg_sys::UnregisterSnapshot(snapshot);
    found
}

/// The key columns of table `relid` and the key (and flag column value) of its row at `tid`, as
/// `snapshot` sees it: what the messages and the flag column say of a near-duplicate found.
pub unsafe fn describe_row(
    ext_schema: &str,
    att: &Attachment,
    relid: pg_sys::Oid,
    tid: pg_sys::ItemPointerData,
    distance: u32,
    flag_attr: Option<&pg_sys::FormData_pg_attribute>,
    snapshot: pg_sys::Snapshot,
) -> (String, Option<Nearest>) {
    let ext_schema = ext_schema.to_string();
    pg_sys::SPI_connect();
    // The name is part of the key: the prepared query names the table, and a renamed table (or
    // schema) must not reach a stale plan.
    let cache_key = (
        relid.to_u32(),
        ext_schema.clone(),
        crate::search::qualified_name_of(relid),
    );
    let (plan, key_columns) = LOOKUPS.with(|lookups| {
        let mut lookups = lookups.borrow_mut();
        let lookup = lookups
            .entry(cache_key)
            .or_insert_with(|| prepare_lookup(relid, &ext_schema));
        (lookup.plan, lookup.key_columns.clone())
    });
    let mut tid = tid;
    let mut values = [pg_sys::Datum::from(&mut tid as *mut pg_sys::ItemPointerData)];
    let nulls = [b' ' as std::ffi::c_char];
    let status = pg_sys::SPI_execute_snapshot(
        plan,
        values.as_mut_ptr(),
        nulls.as_ptr(),
        snapshot,
        std::ptr::null_mut(),
        false,
        false,
        1,
    );
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
    let key = cstr_utf8(pg_sys::SPI_getvalue(row, table.tupdesc, 1));
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
            distance: distance as i32,
            flag_value,
        }),
    )
}

/// The error of a write to `table` that comes within `max_distance` of its row `n`.
pub fn raise_duplicate(att: &Attachment, table: &str, key_columns: &str, n: &Nearest) -> ! {
    raise(EncodedError {
        code: PgSqlErrorCode::ERRCODE_UNIQUE_VIOLATION,
        message: format!(
            "near-duplicate text in column \"{}\" of relation \"{table}\"",
            att.text_column
        ),
        detail: Some(format!(
            "Key ({key_columns})=({}) is at Hamming distance {} (max_distance {}).",
            n.key, n.distance, att.max_distance
        )),
        hint: None,
    })
}

/// The schema the extension lives in (the trigger function's own), quoted for SQL.
unsafe fn extension_schema(fcinfo: pg_sys::FunctionCallInfo) -> String {
    let namespace = pg_sys::get_func_namespace((*(*fcinfo).flinfo).fn_oid);
    quote_ident(&cstr_utf8(pg_sys::get_namespace_name(namespace)))
}

fn attnum(tupdesc: pg_sys::TupleDesc, name: &str, table: &str) -> i32 {
    let Some(n) = crate::search::attnum_of(tupdesc, name) else {
        raise(EncodedError {
            code: PgSqlErrorCode::ERRCODE_UNDEFINED_COLUMN,
            message: format!("simhash_trigger: column \"{name}\" of table \"{table}\" does not exist"),
            detail: None,
            hint: Some(
                "The table was attached with simhash_attach(); detach and attach it again after renaming columns."
                    .into(),
            ),
        });
    };
    i32::from(n)
}

/// Checks that a column the trigger reads or writes still has the type the attach gave it: a
/// column altered since then would otherwise be read or written as the wrong type.
fn check_type(tupdesc: pg_sys::TupleDesc, attnum: i32, table: &str, allowed: &[pg_sys::Oid], want: &str) {
    let attr = attribute(tupdesc, attnum);
    let base = unsafe { pg_sys::getBaseType(attr.atttypid) };
    if !allowed.contains(&base) {
        let name = unsafe { cstr_utf8(attr.attname.data.as_ptr()) };
        raise(EncodedError {
            code: PgSqlErrorCode::ERRCODE_DATATYPE_MISMATCH,
            message: format!("simhash_trigger: column \"{name}\" of table \"{table}\" is not {want}"),
            detail: None,
            hint: Some(
                "The column was altered after simhash_attach(); detach the table and attach it again.".into(),
            ),
        });
    }
}

fn attribute(tupdesc: pg_sys::TupleDesc, attnum: i32) -> &'static pg_sys::FormData_pg_attribute {
    unsafe { &*(*tupdesc).attrs.as_ptr().add(attnum as usize - 1) }
}

unsafe fn getattr(
    tuple: pg_sys::HeapTuple,
    attnum: i32,
    tupdesc: pg_sys::TupleDesc,
) -> Option<pg_sys::Datum> {
    pgrx::heap_getattr_raw(tuple, std::num::NonZeroUsize::new(attnum as usize)?, tupdesc)
}

/// Whether two varlena datums hold the same bytes as stored (an unchanged toasted value keeps its
/// toast pointer, so a 100 MB text left alone by an UPDATE is not read).
unsafe fn same_stored_bytes(a: Option<pg_sys::Datum>, b: Option<pg_sys::Datum>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => {
            let (pa, pb) = (
                a.cast_mut_ptr::<pg_sys::varlena>(),
                b.cast_mut_ptr::<pg_sys::varlena>(),
            );
            let (la, lb) = (pgrx::varsize_any(pa), pgrx::varsize_any(pb));
            la == lb
                && std::slice::from_raw_parts(pa as *const u8, la)
                    == std::slice::from_raw_parts(pb as *const u8, lb)
        }
        _ => false,
    }
}

/// The trigger data of a call of a trigger function (after arming the allocator for its work), or
/// the error `not_a_trigger`.
unsafe fn trigger_data<'a>(
    fcinfo: pg_sys::FunctionCallInfo,
    not_a_trigger: &'static str,
) -> &'a pg_sys::TriggerData {
    crate::errors::arm_allocator();
    let context = (*fcinfo).context;
    if context.is_null() || (*context).type_ != pg_sys::NodeTag::T_TriggerData {
        trigger_error(not_a_trigger);
    }
    &*(context as *mut pg_sys::TriggerData)
}

fn trigger_error(message: &'static str) -> ! {
    raise(EncodedError {
        code: PgSqlErrorCode::ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED,
        message: message.into(),
        detail: None,
        hint: None,
    });
}

/// What the trigger derives from its arguments and its table's catalog entries: the same for
/// every row until a relcache invalidation (ALTER TABLE, an attach or detach of a partition), so
/// kept per (trigger, table) for the backend's current relcache generation.
#[derive(Clone)]
pub struct Setup {
    pub att: Attachment,
    text_att: i32,
    pub fp_att: i32,
    /// The flag column, if the table has one (required in flag mode only, when a row is checked).
    flag_att: Option<i32>,
    /// The table the trigger was attached to: this one, or the partitioned table it is a partition of.
    attached_table: pg_sys::Oid,
    /// Whether the table's simhash_check_trigger() checks the rows this trigger writes.
    deferred: bool,
    /// The scope column, its type's equality function and collation.
    scope: Option<(i32, *mut pg_sys::FmgrInfo, pg_sys::Oid)>,
    /// Where this table is a shard of a Citus table, that table's distribution.
    shard: Option<crate::citus::Distribution>,
    /// The registered-fingerprint column of a registry attachment.
    registered_att: Option<i32>,
}

impl Setup {
    /// Whether the duplicate check of an INSERT is left to `simhash_check_trigger()`: paired
    /// triggers in `'error'` mode, outside SERIALIZABLE (both triggers decide it the same way).
    fn checks_inserts_after(&self) -> bool {
        self.deferred && self.att.mode == Mode::Error && crate::deferred::defers()
    }
}

thread_local! {
    /// The leaf partitions of a partitioned table with an attachment, per relcache generation.
    static LEAF_TABLES: CatalogCache<pg_sys::Oid, Vec<pg_sys::Oid>> = CatalogCache::default();
    static SETUPS: CatalogCache<(pg_sys::Oid, pg_sys::Oid), Setup> = CatalogCache::default();
}

/// The trigger's [`Setup`] for the row in `td`, or the error of a trigger whose arguments or
/// columns no longer fit.
unsafe fn setup_of(td: &pg_sys::TriggerData) -> Setup {
    let trigger = &*td.tg_trigger;
    let rel = td.tg_relation;
    SETUPS.with(|setups| {
        setups.get_or_compute((trigger.tgoid, (*rel).rd_id), || {
            let args: Vec<String> = (0..trigger.tgnargs as usize)
                .map(|i| cstr_utf8(*trigger.tgargs.add(i)))
                .collect();
            let Some(att) = Attachment::from_args(&args) else {
                trigger_error(
                    "simhash_trigger() has invalid arguments: attach the table with simhash_attach()",
                );
            };
            let tupdesc = (*rel).rd_att;
            let table = crate::search::relation_name(rel);
            let text_att = attnum(tupdesc, &att.text_column, &table);
            let fp_att = attnum(tupdesc, &att.fingerprint_column(), &table);
            check_type(
                tupdesc,
                text_att,
                &table,
                &[pg_sys::TEXTOID, pg_sys::VARCHAROID, pg_sys::BPCHAROID],
                "text, varchar or char",
            );
            check_type(tupdesc, fp_att, &table, &[pg_sys::INT8OID], "bigint");
            let flag_att = crate::search::attnum_of(tupdesc, &att.flag_column()).map(i32::from);
            let scope = att.scope_column.as_deref().map(|column| {
                let n = attnum(tupdesc, column, &table);
                let attr = attribute(tupdesc, n);
                // Kept for the backend's life: the type cache is never freed.
                let typcache = pg_sys::lookup_type_cache(attr.atttypid, pg_sys::TYPECACHE_EQ_OPR_FINFO as i32);
                if (*typcache).eq_opr_finfo.fn_oid == pg_sys::InvalidOid {
                    raise(EncodedError {
                        code: PgSqlErrorCode::ERRCODE_UNDEFINED_FUNCTION,
                        message: format!(
                            "simhash_trigger: column \"{column}\" of table \"{table}\" has no equality operator"
                        ),
                        detail: None,
                        hint: Some("Attach the table again with another scope column.".into()),
                    });
                }
                (n, &mut (*typcache).eq_opr_finfo as *mut pg_sys::FmgrInfo, attr.attcollation)
            });
            let registered_att = att.registry.then(|| {
                let n = attnum(tupdesc, &att.registered_column(), &table);
                check_type(tupdesc, n, &table, &[pg_sys::INT8OID], "bigint");
                n
            });
            let shard = crate::citus::shard_distribution((*rel).rd_id);
            // A scoped, registry or Citus attachment checks as before, per row.
            let deferred = att.scope_column.is_none()
                && !att.registry
                && shard.is_none()
                && crate::deferred::paired(rel, trigger);
            Setup {
                registered_att,
                shard,
                scope,
                attached_table: crate::partitions::attached_table(rel, trigger),
                deferred,
                att,
                text_att,
                fp_att,
                flag_att,
            }
        })
    })
}

#[no_mangle]
#[doc(hidden)]
pub extern "C" fn pg_finfo_simhash_trigger() -> &'static pg_sys::Pg_finfo_record {
    const V1: pg_sys::Pg_finfo_record = pg_sys::Pg_finfo_record { api_version: 1 };
    &V1
}

/// `simhash_trigger()`: BEFORE INSERT OR UPDATE FOR EACH ROW, arguments written by `simhash_attach()`.
/// Its errors are reported in the server encoding (a key or a name may be non-ASCII in LATIN1).
#[no_mangle]
pub unsafe extern "C-unwind" fn simhash_trigger(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    crate::errors::guard(|| trigger(fcinfo))
}

unsafe fn trigger(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    let td = trigger_data(fcinfo, "simhash_trigger() must be called as a trigger");
    let event = td.tg_event;
    let op = event & pg_sys::TRIGGER_EVENT_OPMASK;
    if event & pg_sys::TRIGGER_EVENT_TIMINGMASK != pg_sys::TRIGGER_EVENT_BEFORE
        || event & pg_sys::TRIGGER_EVENT_ROW == 0
        || !(op == pg_sys::TRIGGER_EVENT_INSERT || op == pg_sys::TRIGGER_EVENT_UPDATE)
    {
        trigger_error("simhash_trigger() must run BEFORE INSERT OR UPDATE FOR EACH ROW");
    }
    let trigger = &*td.tg_trigger;
    let rel = &*td.tg_relation;
    let partition = (*rel.rd_rel).relispartition;
    let tupdesc = rel.rd_att;
    let setup = setup_of(td);
    let att = &setup.att;
    let (text_att, fp_att) = (setup.text_att, setup.fp_att);
    let (tuple, old) = if op == pg_sys::TRIGGER_EVENT_INSERT {
        (td.tg_trigtuple, None)
    } else {
        (td.tg_newtuple, Some(td.tg_trigtuple))
    };
    let text = getattr(tuple, text_att, tupdesc);
    let text_changed = old.is_none_or(|old| !same_stored_bytes(getattr(old, text_att, tupdesc), text));
    // An UPDATE that moves a row to another scope (site, tenant) is checked there, as a new text.
    let scope_changed = match (old, setup.scope) {
        (Some(old), Some((n, equal, collation))) if att.mode != Mode::None => {
            match (getattr(old, n, tupdesc), getattr(tuple, n, tupdesc)) {
                (None, None) => false,
                (Some(a), Some(b)) => pg_sys::FunctionCall2Coll(equal, collation, a, b).value() == 0,
                _ => true,
            }
        }
        _ => false,
    };
    if !text_changed && !scope_changed {
        let old = old.expect("an UPDATE has an old row");
        if same_bigint(getattr(old, fp_att, tupdesc), getattr(tuple, fp_att, tupdesc)) {
            if partition {
                let stored = getattr(tuple, fp_att, tupdesc).map(|d| d.value() as i64 as u64);
                crate::partitions::note_update(trigger, rel.rd_id, (*old).t_self, stored);
            }
            return pg_sys::Datum::from(tuple);
        }
    }

    let fp = text.and_then(|datum| {
        FINGERPRINTS_COMPUTED.fetch_add(1, Ordering::Relaxed);
        let doc = Text::from_raw_datum(datum);
        let utf8 = doc.to_utf8();
        simhash_core::try_fingerprint_with(
            &utf8,
            &att.options,
            Chunking::default(),
            &mut crate::fingerprint::check_interrupts,
        )
        .or_raise()
    });
    let mut columns = vec![fp_att];
    let mut values = vec![fp.map_or(pg_sys::Datum::from(0), |fp| pg_sys::Datum::from(fp as i64))];
    let mut nulls = vec![fp.is_none()];

    // The INSERT half of a row moved to another partition is no new text.
    let moved =
        partition && op == pg_sys::TRIGGER_EVENT_INSERT && crate::partitions::is_row_move(trigger, fp);
    if let (true, Some(n)) = (att.mode != Mode::None && text_changed, setup.registered_att) {
        // The registry on the coordinator checked this fingerprint and wrote it with the row; a
        // write that did not go through it is refused, never left unchecked.
        let registered = getattr(tuple, n, tupdesc).map(|d| d.value() as i64 as u64);
        if fp.is_some() && registered != fp {
            let table = match &setup.shard {
                Some(shard) => shard.table.clone(),
                None => crate::search::qualified_name_of(rel.rd_id),
            };
            raise(EncodedError {
                code: PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
                message: format!(
                    "simhash_trigger: writes of column \"{}\" of {table} are checked by its near-duplicate registry",
                    att.text_column
                ),
                detail: Some(format!(
                    "This write did not go through the registry (\"{}\" does not hold the text's fingerprint).",
                    att.registered_column()
                )),
                hint: Some(format!(
                    "INSERT through the view {}_{}_checked, which checks the registry on the coordinator.",
                    table.trim_matches('"'),
                    att.text_column
                )),
            });
        }
        return pg_sys::Datum::from(pg_sys::heap_modify_tuple_by_cols(
            tuple,
            tupdesc,
            columns.len() as i32,
            columns.as_mut_ptr(),
            values.as_mut_ptr(),
            nulls.as_mut_ptr(),
        ));
    }
    if att.mode != Mode::None && (text_changed || scope_changed) && !moved {
        let flag_att = (att.mode == Mode::Flag).then(|| {
            setup.flag_att.unwrap_or_else(|| {
                attnum(
                    tupdesc,
                    &att.flag_column(),
                    &crate::search::relation_name(td.tg_relation),
                )
            })
        });
        if let Some(shard) = &setup.shard {
            check_shard_scope(att, shard, td.tg_relation);
        }
        let scope = setup.scope.map(|(n, equal, collation)| {
            getattr(tuple, n, tupdesc).map(|value| ScopeFilter {
                column: att.scope_column.as_deref().unwrap_or_default(),
                value,
                equal,
                collation,
            })
        });
        // A row whose scope value is NULL is in no scope: nobody's duplicate (as NULLs in a unique key).
        let unscoped = matches!(scope, Some(None));
        let nearest = match fp {
            Some(_) if unscoped => None,
            Some(fp) => {
                // The locks key on the attached table: writers to different partitions meet.
                let attached_table = setup.attached_table;
                lock_parts(attached_table, fp, att.max_distance as u32);
                let deferred = op == pg_sys::TRIGGER_EVENT_INSERT && setup.checks_inserts_after();
                let self_tid = match old {
                    Some(old) => (*old).t_self,
                    None => pg_sys::ItemPointerData::default(),
                };
                let flag_attr = flag_att.map(|n| attribute(tupdesc, n));
                if deferred {
                    // simhash_check_trigger() checks the row once it is written (crate::deferred).
                    None
                } else {
                    let (key_columns, nearest) = find_nearest(
                        td,
                        fcinfo,
                        att,
                        fp,
                        self_tid,
                        flag_attr,
                        fp_att,
                        attached_table,
                        scope.flatten().as_ref(),
                    );
                    nearest.map(|n| (key_columns, n))
                }
            }
            None => None,
        };
        match (att.mode, nearest) {
            (Mode::Error, Some((key_columns, n))) => {
                // A shard's error names its distributed table (as regclass text, unquoted).
                let table = match &setup.shard {
                    Some(shard) => shard.table.trim_matches('"').to_string(),
                    None => crate::search::relation_name(td.tg_relation),
                };
                raise_duplicate(att, &table, &key_columns, &n)
            }
            (Mode::Skip, Some(_)) => return pg_sys::Datum::from(0),
            (Mode::Flag, nearest) => {
                let value = nearest.and_then(|(_, n)| n.flag_value);
                columns.push(flag_att.expect("flag mode has a flag column"));
                values.push(value.unwrap_or(pg_sys::Datum::from(0)));
                nulls.push(value.is_none());
            }
            _ => {}
        }
    }

    if let (true, Some(old)) = (partition, old) {
        crate::partitions::note_update(trigger, rel.rd_id, (*old).t_self, fp);
    }
    let modified = pg_sys::heap_modify_tuple_by_cols(
        tuple,
        tupdesc,
        columns.len() as i32,
        columns.as_mut_ptr(),
        values.as_mut_ptr(),
        nulls.as_mut_ptr(),
    );
    pg_sys::Datum::from(modified)
}

#[no_mangle]
#[doc(hidden)]
pub extern "C" fn pg_finfo_simhash_check_trigger() -> &'static pg_sys::Pg_finfo_record {
    const V1: pg_sys::Pg_finfo_record = pg_sys::Pg_finfo_record { api_version: 1 };
    &V1
}

/// `simhash_check_trigger()`: AFTER INSERT FOR EACH ROW beside `simhash_trigger()` on a table
/// attached with `on_duplicate => 'error'`, which leaves it the duplicate check of INSERTs: the row
/// is checked with the other rows of its statement at the statement's end (`crate::deferred`), or
/// at once outside a statement's executor (COPY).
#[no_mangle]
pub unsafe extern "C-unwind" fn simhash_check_trigger(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    crate::errors::guard(|| check_trigger(fcinfo))
}

unsafe fn check_trigger(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    let td = trigger_data(fcinfo, "simhash_check_trigger() must be called as a trigger");
    let event = td.tg_event;
    if event & pg_sys::TRIGGER_EVENT_TIMINGMASK != pg_sys::TRIGGER_EVENT_AFTER
        || event & pg_sys::TRIGGER_EVENT_ROW == 0
        || event & pg_sys::TRIGGER_EVENT_OPMASK != pg_sys::TRIGGER_EVENT_INSERT
    {
        trigger_error("simhash_check_trigger() must run AFTER INSERT FOR EACH ROW");
    }
    let setup = setup_of(td);
    // Unpaired (the BEFORE trigger disabled alone, a partition), the BEFORE trigger checks.
    if !setup.checks_inserts_after() {
        return pg_sys::Datum::from(0);
    }
    let rel = td.tg_relation;
    let tuple = td.tg_trigtuple;
    let Some(fp) = getattr(tuple, setup.fp_att, (*rel).rd_att).map(|d| d.value() as i64 as u64) else {
        return pg_sys::Datum::from(0);
    };
    let tid = (*tuple).t_self;
    if crate::deferred::in_statement() {
        crate::deferred::note(rel, &*td.tg_trigger, &setup, || extension_schema(fcinfo), fp, tid);
    } else {
        let (key_columns, nearest) = find_nearest(
            td,
            fcinfo,
            &setup.att,
            fp,
            tid,
            None,
            setup.fp_att,
            setup.attached_table,
            None,
        );
        if let Some(n) = nearest {
            raise_duplicate(&setup.att, &crate::search::relation_name(rel), &key_columns, &n);
        }
    }
    pg_sys::Datum::from(0)
}

/// On a shard of a Citus table, the trigger sees that shard's rows only: it checks a write only
/// where that is exact, among rows with the write's value of the distribution column, and refuses
/// otherwise (a check of one shard would let near-duplicates on other shards through unseen).
unsafe fn check_shard_scope(att: &Attachment, shard: &crate::citus::Distribution, rel: pg_sys::Relation) {
    if shard.hash_distributed() && shard.column.is_some() && att.scope_column == shard.column {
        return;
    }
    let column = shard.column.as_deref().unwrap_or("");
    raise(EncodedError {
        code: PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
        message: format!(
            "simhash_trigger: near-duplicate checks on shard \"{}\" of Citus table {} would miss the rows of other shards",
            crate::search::relation_name(rel),
            shard.table
        ),
        detail: Some(if shard.hash_distributed() {
            format!(
                "on_duplicate => '{}' is scoped to {}, but the table is distributed by column \"{column}\".",
                match att.mode {
                    Mode::Error => "error",
                    Mode::Skip => "skip",
                    Mode::Flag => "flag",
                    Mode::None => "none",
                },
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

/// Compares two bigint datums (the fingerprint column of the old and new row).
fn same_bigint(a: Option<pg_sys::Datum>, b: Option<pg_sys::Datum>) -> bool {
    a.map(|d| d.value() as i64) == b.map(|d| d.value() as i64)
}

extension_sql_file!("../sql/src/trigger.sql", name = "simhash_trigger");
