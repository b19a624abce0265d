//! SimHash's duplicate check of one written row: the nearest row within `max_distance` over the
//! attached table (every partition of a partitioned one), under a fresh snapshot.

use pgrx::prelude::*;

use crate::attachment::{Attachment, SimHashSettings};
use crate::catalog::{attnum_of, relation_name, CatalogCache};
use crate::check::locks::lock_parts;
use crate::check::report::{describe_row, Measure, Nearest};
use crate::check::row::Written;
use crate::method::common::WrittenRow;

use super::search::{fingerprint_attnum, search_table, TableSearch};
use crate::check::row::attnum;

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
    sim: &SimHashSettings,
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
            sim,
            fp_attnum: if own {
                row.fp_attnum
            } else {
                fingerprint_attnum(rel, att)
            },
            query: row.fp,
            k: sim.max_distance,
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
    sim: &SimHashSettings,
    row: &Written,
    flag_attr: Option<&pg_sys::FormData_pg_attribute>,
) -> (String, Option<Nearest>) {
    // A new command id first, as a read-write SPI query would: rows written earlier in this
    // statement (a multi-row INSERT) are then visible to the snapshot, which also sees every
    // transaction committed while this one waited on the locks.
    pg_sys::CommandCounterIncrement();
    let snapshot = pg_sys::RegisterSnapshot(pg_sys::GetLatestSnapshot());
    let Some((distance, relid, tid)) = nearest_row(att, sim, row, snapshot) else {
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

/// SimHash's check of a written row with fingerprint `fp`: the locks of its parts on the attached
/// table (writers to different partitions meet), then its nearest row within `max_distance`; an
/// INSERT the statement-end check takes over (`crate::write::deferred`) is only locked here.
///
/// # Safety
/// As [`crate::method::nearest`].
pub unsafe fn check_written(
    att: &Attachment,
    sim: &SimHashSettings,
    fp: u64,
    row: &WrittenRow,
) -> Option<(String, Nearest)> {
    lock_parts(row.attached_table, fp, sim.max_distance as u32);
    if row.checked_after {
        return None;
    }
    let written = Written {
        heap: row.heap,
        attached_table: row.attached_table,
        fp,
        fp_attnum: row.value_attnum,
        self_tid: row.old_tid.unwrap_or_default(),
        scope: row.scope,
        copy: None,
    };
    let (key_columns, nearest) = find_nearest(row.ext_schema, att, sim, &written, row.flag_attr);
    nearest.map(|n| (key_columns, n))
}
