//! The check of a row after its write, with no keys (docs/ARCHITECTURE.md §8.2, §8.3): by the
//! check trigger (`crate::write::trigger`), at a statement's end (`crate::write::deferred`) and when
//! a table is attached as a partition (`crate::write::partition_attach`).

use pgrx::prelude::*;

use crate::attachment::Mode;
use crate::check::report::raise_duplicate;
use crate::check::row::ScopeFilter;
use crate::check::verify::{Asked, Verifier};
use crate::method::{Value, WrittenRow};
use crate::write::setup::Setup;

/// Attribute `attnum` of `tuple` (None: NULL or no such attribute).
///
/// # Safety
/// `tuple` must be a row of `tupdesc`.
pub unsafe fn getattr(
    tuple: pg_sys::HeapTuple,
    attnum: i32,
    tupdesc: pg_sys::TupleDesc,
) -> Option<pg_sys::Datum> {
    pgrx::heap_getattr_raw(tuple, std::num::NonZeroUsize::new(attnum as usize)?, tupdesc)
}

/// The scope filter of the row `tuple` for an attachment with a scope (None without one; Some(None)
/// for a NULL scope value, in no scope).
pub unsafe fn scope_of<'a>(
    setup: &'a Setup,
    tuple: pg_sys::HeapTuple,
    tupdesc: pg_sys::TupleDesc,
) -> Option<Option<ScopeFilter<'a>>> {
    setup.scope.map(|(n, equal, collation)| {
        getattr(tuple, n, tupdesc).map(|value| ScopeFilter {
            column: setup.att.scope_column.as_deref().unwrap_or_default(),
            value,
            equal,
            collation,
        })
    })
}

/// Checks the row `tuple` written into `rel` after its write, with no keys (§8.2, §8.3): its nearest
/// near-duplicate under a dirty snapshot, waiting for the transactions of any in progress, itself
/// and the rows `ignore` names left out. Raises `23505` in `'error'` mode; in `'skip'` and `'flag'`
/// mode, whose check before the write found none, a near-duplicate found now was written
/// concurrently, after that check: `40001`, and a retry skips or flags the row.
///
/// # Safety
/// `tuple` must be a row of `rel` (open) that this transaction wrote, valid through the call.
pub unsafe fn check_written_row(
    rel: pg_sys::Relation,
    setup: &Setup,
    ext_schema: &dyn Fn() -> String,
    tuple: pg_sys::HeapTuple,
    ignore: &dyn Fn(pg_sys::Oid, *mut pg_sys::TupleTableSlot) -> bool,
) {
    if let Some((key_columns, n)) = written_row_duplicate(rel, setup, ext_schema, tuple, ignore) {
        let table = setup.reported_table(rel);
        match setup.att.mode {
            Mode::Error => raise_duplicate(&setup.att, &table, &key_columns, &n),
            _ => crate::check::report::raise_concurrent(&setup.att, &table),
        }
    }
}

/// The nearest near-duplicate of the row `tuple` of `rel` found as [`check_written_row`] finds it,
/// with the key columns of its table.
///
/// # Safety
/// As [`check_written_row`].
pub unsafe fn written_row_duplicate(
    rel: pg_sys::Relation,
    setup: &Setup,
    ext_schema: &dyn Fn() -> String,
    tuple: pg_sys::HeapTuple,
    ignore: &dyn Fn(pg_sys::Oid, *mut pg_sys::TupleTableSlot) -> bool,
) -> Option<(String, crate::check::report::Nearest)> {
    let att = &setup.att;
    let tupdesc = (*rel).rd_att;
    let value = Value::from_stored(att, getattr(tuple, setup.fp_att, tupdesc))?;
    let scope = scope_of(setup, tuple, tupdesc);
    // A row whose scope value is NULL is in no scope: nobody's duplicate (as NULLs in a unique key).
    if let Some(None) = scope {
        return None;
    }
    let text_att = setup.text_att;
    let verifier = Verifier::of_datum(att, Asked::default(), move || getattr(tuple, text_att, tupdesc));
    crate::method::nearest(
        att,
        &value,
        &WrittenRow {
            heap: rel,
            attached_table: setup.attached_table,
            value_attnum: setup.fp_att as i16,
            old_tid: Some((*tuple).t_self),
            scope: scope.as_ref().and_then(Option::as_ref),
            flag_attr: None,
            ext_schema,
            checked_after: false,
            table_checks_after: false,
            verifier: verifier.as_ref(),
            keyless: true,
            ignore: Some(ignore),
        },
    )
}
