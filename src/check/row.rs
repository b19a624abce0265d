//! A row being written and checked: where it goes, what it holds, the scope its duplicates must
//! share, and which rows of a COPY are checked already.

use std::cell::RefCell;
use std::collections::HashSet;

use pgrx::prelude::*;

use crate::catalog::{attnum_of, CatalogCache};
use crate::errors::{raise, EncodedError};

/// The value of the scope column that a written row's duplicates must share, and how to compare.
pub struct ScopeFilter<'a> {
    pub column: &'a str,
    pub value: pg_sys::Datum,
    pub equal: *mut pg_sys::FmgrInfo,
    pub collation: pg_sys::Oid,
}

impl ScopeFilter<'_> {
    /// Whether the row in `slot` (of a table whose scope column is `attnum`) has the same value.
    pub unsafe fn matches(&self, slot: *mut pg_sys::TupleTableSlot, attnum: i16) -> bool {
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
    /// The verification of candidates against the row's text, when the attachment verifies.
    pub verifier: Option<&'a crate::check::verify::Verifier>,
    /// Rows found that do not count (`crate::method::WrittenRow::ignore`).
    pub ignore: Option<&'a Ignore<'a>>,
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

/// Which rows found a check leaves out: given the OID of the table the row is in, and the row.
pub type Ignore<'a> = dyn Fn(pg_sys::Oid, *mut pg_sys::TupleTableSlot) -> bool + 'a;

/// A TID in heap order: block, then offset.
pub fn tid_order(tid: &pg_sys::ItemPointerData) -> (u32, u16) {
    (
        (u32::from(tid.ip_blkid.bi_hi) << 16) | u32::from(tid.ip_blkid.bi_lo),
        tid.ip_posid,
    )
}

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
    pub unsafe fn not_checked_yet(self, slot: *mut pg_sys::TupleTableSlot) -> bool {
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

/// The number of column `name` of a table the trigger reads or writes, or 42703 naming it.
pub fn attnum(tupdesc: pg_sys::TupleDesc, name: &str, table: &str) -> i32 {
    let Some(n) = attnum_of(tupdesc, name) else {
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

thread_local! {
    /// The leaf partitions of a partitioned table with an attachment, per relcache generation.
    static LEAF_TABLES: CatalogCache<pg_sys::Oid, Vec<pg_sys::Oid>> = CatalogCache::default();
}

/// The tables that hold the rows a write to `heap` is checked against: that table, or every
/// leaf partition of the attached partitioned table.
pub unsafe fn checked_tables(heap: pg_sys::Relation, attached_table: pg_sys::Oid) -> Vec<pg_sys::Oid> {
    let relid = (*heap).rd_id;
    if attached_table == relid {
        return vec![relid];
    }
    // The partitions change only with a relcache invalidation of the partitioned table, but while
    // one is being detached the list is the active snapshot's (with the partition or without it):
    // then it is not kept, or a later transaction of this backend would search (and wait for) a
    // partition that has left the table.
    let mut this_snapshot = None;
    let kept = LEAF_TABLES.with(|l| {
        l.get_or_find(attached_table, || {
            let root = crate::partitions::OpenTable::open(heap, attached_table);
            let (tables, detaching) = crate::partitions::leaf_tables_now(root.rel);
            if detaching {
                this_snapshot = Some(tables);
                None
            } else {
                Some(tables)
            }
        })
    });
    kept.or(this_snapshot).unwrap_or_default()
}
