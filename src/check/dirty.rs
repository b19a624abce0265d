//! The snapshot a duplicate check searches with (docs/ARCHITECTURE.md §8.3, §8.4): PostgreSQL's
//! "dirty" snapshot, as a unique or exclusion constraint's check uses it. It sees every row whose
//! inserting transaction committed or is still in progress, and tells which transaction a row
//! found is waiting on: the writer of a row not committed yet, or the deleter of a row being
//! deleted. A check acts on rows that are certain and waits for the others' transactions.

use pgrx::prelude::*;

/// A dirty snapshot (`InitDirtySnapshot`), never registered: a search passes its pointer and reads
/// after each visible row which transaction, if any, that row depends on (the visibility test
/// writes it into the snapshot).
pub struct Dirty(*mut pg_sys::SnapshotData, std::cell::Cell<Option<Pending>>);

impl Dirty {
    pub fn new() -> Dirty {
        // SAFETY: SnapshotData is plain data; a dirty snapshot is all zeros but its type.
        let mut data: Box<pg_sys::SnapshotData> = Box::new(unsafe { std::mem::zeroed() });
        data.snapshot_type = pg_sys::SnapshotType::SNAPSHOT_DIRTY;
        Dirty(Box::into_raw(data), std::cell::Cell::new(None))
    }

    pub fn ptr(&self) -> pg_sys::Snapshot {
        self.0
    }

    /// The transaction the row last found visible depends on: its inserter still in progress, or
    /// the transaction deleting it; None when the row is committed (or this transaction's own).
    pub fn in_progress(&self) -> Option<pg_sys::TransactionId> {
        // SAFETY: the pointer is this value's own allocation.
        let (xmin, xmax) = unsafe { ((*self.0).xmin, (*self.0).xmax) };
        [xmin, xmax]
            .into_iter()
            .find(|xid| *xid != pg_sys::InvalidTransactionId)
    }
}

impl Dirty {
    /// Whether a row found visible, at `tid` of `table`, is certain, given what
    /// [`Dirty::in_progress`] said of it when it was found (read before anything else, a
    /// verification's read of a toasted text included, can use the snapshot); if it depends on a
    /// transaction in progress, it is noted (the first such row) for [`Dirty::pending`].
    pub fn certain_given(
        &self,
        in_progress: Option<pg_sys::TransactionId>,
        table: pg_sys::Oid,
        tid: pg_sys::ItemPointerData,
    ) -> bool {
        match in_progress {
            None => true,
            Some(xid) => {
                if self.1.get().is_none() {
                    self.1.set(Some(Pending { xid, table, tid }));
                }
                false
            }
        }
    }

    /// The first row found that depends on a transaction in progress.
    pub fn pending(&self) -> Option<Pending> {
        self.1.get()
    }
}

impl Default for Dirty {
    fn default() -> Self {
        Dirty::new()
    }
}

impl Drop for Dirty {
    fn drop(&mut self) {
        // SAFETY: made by Box::into_raw in `new`, dropped once.
        drop(unsafe { Box::from_raw(self.0) });
    }
}

/// A row of another transaction in progress that a check found within reach: the check waits for
/// that transaction, then searches again.
#[derive(Clone, Copy)]
pub struct Pending {
    pub xid: pg_sys::TransactionId,
    pub table: pg_sys::Oid,
    pub tid: pg_sys::ItemPointerData,
}

/// Waits for `pending`'s transaction to end (`crate::check::locks::wait_for`, which first lets go
/// the keys of the rows being checked, taken at trigger depth `rows_depth`).
///
/// # Safety
/// Call inside a transaction.
pub unsafe fn wait(pending: Pending, rows_depth: i32) {
    let rel = pg_sys::RelationIdGetRelation(pending.table);
    crate::check::locks::wait_for(pending.xid, rel, pending.tid, rows_depth);
    if !rel.is_null() {
        pg_sys::RelationClose(rel);
    }
}
