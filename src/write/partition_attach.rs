//! `ALTER TABLE parent ATTACH PARTITION t` of a table that has rows (docs/ARCHITECTURE.md §8.6): as a
//! unique index refuses to take a partition whose rows break it, an attachment in `'error'` or
//! `'skip'` mode refuses a partition with a row that has a near-duplicate among the partitioned
//! table's rows, the partition's own included. The ddl_command_start trigger fills the partition's
//! columns and notes it (`crate::partitions::take_attaching`); at the command's end, when it is a
//! partition with the triggers' clones and the indexes, each of its rows is checked as a written
//! row is (`crate::write::written::written_row_duplicate`), after every leaf partition is locked
//! against writers (`ShareLock`, as `CREATE INDEX` takes) until the transaction ends: a writer of
//! another partition that has not seen the new partition yet cannot write a near-duplicate of its
//! rows after the check.

use pgrx::prelude::*;

use crate::attachment::Mode;
use crate::catalog::{is_extension_function, relation_name};
use crate::errors::{raise, EncodedError};

/// Checks the rows of each table attached as a partition since the last call.
///
/// # Safety
/// Inside a transaction, at the end of the ALTER TABLE that attached them.
pub unsafe fn check_attached() {
    for (parent, partition, ext_schema) in crate::partitions::take_attaching() {
        if pg_sys::get_rel_relkind(partition) == 0 {
            continue;
        }
        let root = pg_sys::relation_open(parent, pg_sys::ShareLock as pg_sys::LOCKMODE);
        let leaves = crate::partitions::leaf_tables(root);
        for &leaf in &leaves {
            pg_sys::LockRelationOid(leaf, pg_sys::ShareLock as pg_sys::LOCKMODE);
        }
        let part = pg_sys::relation_open(partition, pg_sys::NoLock as pg_sys::LOCKMODE);
        let own = crate::partitions::leaf_tables(part);
        pg_sys::relation_close(part, pg_sys::NoLock as pg_sys::LOCKMODE);
        // Only what is now a partition of `parent` (the ALTER TABLE may have attached it elsewhere).
        for leaf in own.into_iter().filter(|leaf| leaves.contains(leaf)) {
            check_leaf(leaf, &ext_schema);
        }
        pg_sys::relation_close(root, pg_sys::NoLock as pg_sys::LOCKMODE);
    }
}

/// Checks every row of the new leaf partition `leaf` for each attachment (its trigger clones) that
/// keeps the table free of near-duplicates.
unsafe fn check_leaf(leaf: pg_sys::Oid, ext_schema: &str) {
    let rel = pg_sys::relation_open(leaf, pg_sys::NoLock as pg_sys::LOCKMODE);
    let trigdesc = (*rel).trigdesc;
    let triggers: Vec<pg_sys::Trigger> = if trigdesc.is_null() {
        Vec::new()
    } else {
        std::slice::from_raw_parts((*trigdesc).triggers, (*trigdesc).numtriggers as usize).to_vec()
    };
    let namespace = crate::catalog::extension_namespace();
    for trigger in triggers.iter().filter(|t| {
        is_extension_function(t.tgfoid, b"simhash_trigger", namespace)
            && t.tgenabled != b'D' as std::ffi::c_char
    }) {
        let setup = crate::write::setup::setup_for(rel, trigger);
        if !matches!(setup.att.mode, Mode::Error | Mode::Skip) || setup.attaching {
            continue;
        }
        check_rows(rel, &setup, ext_schema);
    }
    pg_sys::relation_close(rel, pg_sys::NoLock as pg_sys::LOCKMODE);
}

/// Each row of `rel` against every row of the partitioned table but itself and the rows of `rel`
/// after it (a pair is found once, by its later row).
unsafe fn check_rows(rel: pg_sys::Relation, setup: &crate::write::setup::Setup, ext_schema: &str) {
    let relid = (*rel).rd_id;
    let snapshot = pg_sys::RegisterSnapshot(pg_sys::GetLatestSnapshot());
    let flags = pg_sys::ScanOptions::SO_TYPE_SEQSCAN | pg_sys::ScanOptions::SO_ALLOW_PAGEMODE;
    let scan = pg_sys::heap_beginscan(
        rel,
        snapshot,
        0,
        std::ptr::null_mut(),
        std::ptr::null_mut(),
        flags,
    );
    let slot = pg_sys::table_slot_create(rel, std::ptr::null_mut());
    let schema = || ext_schema.to_string();
    while pg_sys::heap_getnextslot(scan, pg_sys::ScanDirection::ForwardScanDirection, slot) {
        pg_sys::check_for_interrupts!();
        let mut should_free = false;
        let tuple = pg_sys::ExecFetchSlotHeapTuple(slot, true, &mut should_free);
        let at = crate::check::row::tid_order(&(*tuple).t_self);
        let later = |table: pg_sys::Oid, found: *mut pg_sys::TupleTableSlot| {
            table == relid && crate::check::row::tid_order(&(*found).tts_tid) > at
        };
        let found = crate::write::written::written_row_duplicate(rel, setup, &schema, tuple, &later);
        if should_free {
            pg_sys::heap_freetuple(tuple);
        }
        if let Some((key_columns, n)) = found {
            let detail = n.key.as_ref().map(|key| {
                format!("Key ({key_columns})=({key}) is a near-duplicate of a row of the partition.")
            });
            raise(EncodedError {
                code: PgSqlErrorCode::ERRCODE_UNIQUE_VIOLATION,
                message: format!(
                    "could not attach partition \"{}\": near-duplicate text in column \"{}\"",
                    relation_name(rel),
                    setup.att.text_column
                ),
                detail,
                hint: Some(
                    "Find the pairs with simhash_pairs() on the table and remove one row of each first."
                        .into(),
                ),
            });
        }
    }
    pg_sys::ExecDropSingleTupleTableSlot(slot);
    pg_sys::heap_endscan(scan);
    pg_sys::UnregisterSnapshot(snapshot);
}
