//! The fingerprints `simhash_attach()` computes for the rows already in a table, in parallel.
//!
//! The attach writes each row once: one `ALTER TABLE` rewrite fills the fingerprint column
//! (`ALTER COLUMN ... TYPE bigint USING simhash_internal.fill_value(tableoid, ctid, <text>, <options>)`) and
//! computes the generated band columns from it. A rewrite evaluates that expression in one process;
//! so first a parallel scan (`simhash_internal.fill_stash()` over a parallel `simhash()`, in the leader above
//! the Gather) collects the fingerprints of the rows by table and row position, and the rewrite
//! takes each row's from here. The table is locked against every other writer from before the scan
//! to after the rewrite, so a row keeps its position and its text; a row not collected (a table
//! beyond the memory budget, or no parallel scan) is fingerprinted by the rewrite itself, with the
//! same function as `simhash()`. The collection lives until the end of the transaction.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use pgrx::prelude::*;

use crate::text::Text;

/// A table's collected rows: (row position << 1 | 1 when the fingerprint is NULL, fingerprint),
/// sorted by position at the first lookup.
#[derive(Default)]
struct Rows {
    rows: Vec<(u64, i64)>,
    sorted: bool,
}

thread_local! {
    static STASH: RefCell<HashMap<pg_sys::Oid, Rows>> = RefCell::new(HashMap::new());
    static CALLBACK: Cell<bool> = const { Cell::new(false) };
}

fn position(tid: &pg_sys::ItemPointerData) -> u64 {
    pgrx::itemptr::item_pointer_to_u64(*tid)
}

unsafe extern "C-unwind" fn xact_callback(event: pg_sys::XactEvent::Type, _arg: *mut std::ffi::c_void) {
    use pg_sys::XactEvent::*;
    if matches!(
        event,
        XACT_EVENT_COMMIT
            | XACT_EVENT_ABORT
            | XACT_EVENT_PREPARE
            | XACT_EVENT_PARALLEL_COMMIT
            | XACT_EVENT_PARALLEL_ABORT
    ) {
        STASH.with(|s| *s.borrow_mut() = HashMap::new());
    }
}

/// Forgets every collected fingerprint.
#[pg_extern(parallel_unsafe, schema = "simhash_internal", name = "fill_reset")]
pub(crate) fn fill_reset() {
    STASH.with(|s| *s.borrow_mut() = HashMap::new());
}

/// Collects the fingerprint of the row at `row` of table `tableoid` (for [`fill_value`]).
#[pg_extern(parallel_restricted, schema = "simhash_internal", name = "fill_stash")]
pub(crate) fn fill_stash(
    tableoid: pg_sys::Oid,
    row: pg_sys::ItemPointerData,
    fingerprint: Option<i64>,
) -> bool {
    if !CALLBACK.with(|c| c.replace(true)) {
        unsafe { pg_sys::RegisterXactCallback(Some(xact_callback), std::ptr::null_mut()) };
    }
    let entry = match fingerprint {
        Some(fp) => (position(&row) << 1, fp),
        None => (position(&row) << 1 | 1, 0),
    };
    STASH.with(|s| {
        let mut s = s.borrow_mut();
        let rows = s.entry(tableoid).or_default();
        rows.rows.push(entry);
        rows.sorted = false;
    });
    true
}

/// The fingerprint `simhash(doc, <options>)` of the row at `row` of table `tableoid`: the one
/// collected by [`fill_stash`], or else computed.
#[allow(clippy::too_many_arguments)]
#[pg_extern(parallel_unsafe, schema = "simhash_internal", name = "fill_value")]
pub(crate) fn fill_value(
    tableoid: pg_sys::Oid,
    row: pg_sys::ItemPointerData,
    doc: Option<Text>,
    tokenizer: Text,
    shingle: i32,
    weighting: Text,
    stopwords: bool,
    fold: Text,
) -> Option<i64> {
    let key = position(&row);
    let found = STASH.with(|s| {
        let mut s = s.borrow_mut();
        let rows = s.get_mut(&tableoid)?;
        if !rows.sorted {
            rows.rows.sort_unstable_by_key(|&(k, _)| k >> 1);
            rows.sorted = true;
        }
        let i = rows.rows.binary_search_by_key(&key, |&(k, _)| k >> 1).ok()?;
        let (k, fp) = rows.rows[i];
        Some(if k & 1 == 1 { None } else { Some(fp) })
    });
    match found {
        Some(fp) => fp,
        None => {
            let doc = doc?;
            crate::api::fingerprint::fingerprint(
                &doc,
                &crate::api::fingerprint::options(
                    &tokenizer,
                    shingle,
                    &weighting,
                    stopwords,
                    &fold.to_utf8(),
                ),
            )
        }
    }
}
