//! SimHash's duplicate check of one written row: the nearest row within `max_distance` over the
//! attached table (every partition of a partitioned one), under a dirty snapshot (§8.3): rows of
//! transactions in progress are found too, and their transactions waited for.

use pgrx::prelude::*;

use crate::attachment::{Attachment, SimHashSettings};
use crate::catalog::{attnum_of, relation_name};
use crate::check::dirty::{Dirty, Pending};
use crate::check::locks::{lock_row, lock_written, part_keys, trigger_depth};
use crate::check::report::{describe_row, Measure, Nearest};
use crate::check::row::{checked_tables, Written};
use crate::check::verify::judge_found;
use crate::method::common::WrittenRow;

use super::search::{fingerprint_attnum, search_table, TableSearch};
use crate::check::row::attnum;

/// What a search under a dirty snapshot found within reach: the nearest row that is certain
/// (committed, or this transaction's own), and a row of another transaction in progress.
#[derive(Default)]
pub struct Found {
    pub nearest: Option<(u32, pg_sys::Oid, pg_sys::ItemPointerData, Option<f64>)>,
    pub pending: Option<Pending>,
}

/// The rows within `att.max_distance` of `row` that a dirty snapshot sees (§8.3).
unsafe fn nearest_row(att: &Attachment, sim: &SimHashSettings, row: &Written) -> Found {
    let relid = (*row.heap).rd_id;
    let dirty = Dirty::new();
    let snapshot = dirty.ptr();
    let mut found = Found::default();
    for table in checked_tables(row.heap, row.attached_table) {
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
            if row.ignore.is_some_and(|f| f(table, slot)) {
                return;
            }
            let in_scope = match (row.scope, scope_attnum) {
                (Some(scope), Some(attnum)) => scope.matches(slot, attnum),
                _ => true,
            };
            if !in_scope {
                return;
            }
            let Some((similarity, certain)) = judge_found(&dirty, row.verifier, rel, table, slot) else {
                return;
            };
            if certain && found.nearest.is_none_or(|(bd, _, _, _)| d < bd) {
                found.nearest = Some((d, table, (*slot).tts_tid, similarity));
            }
        });
    }
    found.pending = dirty.pending();
    found
}

/// What a check of a written row comes to.
pub enum Outcome {
    /// No near-duplicate; or the nearest, with the key columns of its table as [`describe_row`]
    /// gives them.
    Done(String, Option<Nearest>),
    /// A near-duplicate of a transaction in progress: wait for it, then check again.
    Wait(Pending),
}

/// The nearest row within `max_distance` of `row` under a dirty snapshot (§8.3, §8.4): a certain one
/// is acted on at once; otherwise a row of a transaction in progress is waited for by the caller.
pub unsafe fn find_nearest(
    ext_schema: impl FnOnce() -> String,
    att: &Attachment,
    sim: &SimHashSettings,
    row: &Written,
    flag_attr: Option<&pg_sys::FormData_pg_attribute>,
) -> Outcome {
    let found = nearest_row(att, sim, row);
    let Some((distance, relid, tid, similarity)) = found.nearest else {
        return match found.pending {
            Some(pending) => Outcome::Wait(pending),
            None => Outcome::Done(String::new(), None),
        };
    };
    // The key is read by a query: a new command id first, so that rows written earlier in this
    // statement are visible to the snapshot taken now, which sees the row found (committed).
    pg_sys::CommandCounterIncrement();
    let snapshot = pg_sys::RegisterSnapshot(pg_sys::GetLatestSnapshot());
    let (key_columns, nearest) = describe_row(
        &ext_schema(),
        att,
        (relid, row.attached_table),
        tid,
        match similarity {
            Some(similarity) => Measure::Verified {
                distance: Some(distance),
                similarity,
            },
            None => Measure::Distance(distance),
        },
        flag_attr,
        snapshot,
    );
    pg_sys::UnregisterSnapshot(snapshot);
    match nearest {
        Some(n) => Outcome::Done(key_columns, Some(n)),
        // Deleted since by a transaction that committed: search again, at once.
        None => Outcome::Wait(Pending {
            xid: pg_sys::InvalidTransactionId,
            table: relid,
            tid,
        }),
    }
}

/// Checks `row` until the outcome is certain: waits for (`crate::check::dirty::wait`, which lets the
/// row's keys go) the transactions of near-duplicates in progress, then searches again, after
/// `relock` takes the row's keys again. The row's keys were taken at the current trigger depth.
pub unsafe fn settle(
    ext_schema: &dyn Fn() -> String,
    att: &Attachment,
    sim: &SimHashSettings,
    row: &Written,
    flag_attr: Option<&pg_sys::FormData_pg_attribute>,
    relock: &dyn Fn(),
) -> (String, Option<Nearest>) {
    loop {
        relock();
        match find_nearest(ext_schema, att, sim, row, flag_attr) {
            Outcome::Done(key_columns, nearest) => return (key_columns, nearest),
            Outcome::Wait(pending) if pending.xid != pg_sys::InvalidTransactionId => {
                crate::check::dirty::wait(pending, trigger_depth())
            }
            Outcome::Wait(_) => {}
        }
    }
}

/// SimHash's check of a written row with fingerprint `fp`: the keys of its parts on the attached
/// table (writers to different partitions meet), then its nearest row within `max_distance`; an
/// INSERT the statement-end check takes over (`crate::write::deferred`) only takes keys here, so
/// that it is not written while a check made before a write holds one of them (§8.8).
///
/// # Safety
/// As [`crate::method::nearest`].
pub unsafe fn check_written(
    att: &Attachment,
    sim: &SimHashSettings,
    fp: u64,
    row: &WrittenRow,
) -> Option<(String, Nearest)> {
    let keys = part_keys(fp, sim.max_distance as u32);
    if row.checked_after {
        if !row.keyless {
            lock_written(row.attached_table, &keys);
        }
        return None;
    }
    let written = Written {
        heap: row.heap,
        attached_table: row.attached_table,
        fp,
        fp_attnum: row.value_attnum,
        self_tid: row.old_tid.unwrap_or_default(),
        scope: row.scope,
        verifier: row.verifier,
        ignore: row.ignore,
    };
    let (key_columns, nearest) = settle(row.ext_schema, att, sim, &written, row.flag_attr, &|| {
        if !row.keyless {
            lock_row(row.attached_table, &keys, row.table_checks_after)
        }
    });
    nearest.map(|n| (key_columns, n))
}
