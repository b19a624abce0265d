//! The check after the write (docs/ARCHITECTURE.md §7.2, §8.2): the rows a statement wrote are
//! checked at its end, once they are in the table and its indexes, holding no lock of the
//! extension's.
//!
//! `simhash_check_trigger()` (AFTER INSERT OR UPDATE FOR EACH ROW, `crate::write::trigger::on_written`)
//! notes each written row here: its group (table and trigger, with the trigger's `Setup`), its
//! SimHash fingerprint (MinHash rows are read back by TID) and its TID, and whether it is checked
//! (an unchanged row is noted only for the statement order of the others). The `ExecutorFinish`
//! hook checks the rows its statement noted once the statement's AFTER triggers have run, innermost
//! statement first (`DEPTH`):
//!
//! - SimHash rows of an ordinary table without scope: all rows' probe values, band by band, in one
//!   ascending pass through the leaf list (`merged`, up to `MERGED_ROWS` rows a pass), under a dirty
//!   snapshot taken after every row was written (`check_group`, `first_duplicate`);
//! - a partition's, a scoped attachment's and MinHash's rows: one search each, in the order written
//!   across the statement's tables (`check_rows`, `crate::write::written::check_written_row`).
//!
//! A row found counts against row i only if it is not i and, when the statement wrote it, came
//! before i: the later row of a pair reports it. The first row with a certain near-duplicate fails
//! the statement (`23505` in `'error'` mode, `40001` in `'skip'` and `'flag'`, whose check before the
//! write found none); when none has one but a row of a transaction in progress is within reach, the
//! check waits for that transaction and checks again.
//!
//! Rows written outside a statement's executor (COPY runs its AFTER triggers itself) are checked by
//! the check trigger at once. A transaction never commits, or prepares, with rows unchecked: the
//! pre-commit and pre-prepare callback checks any left; aborts, and a subtransaction's abort for
//! its rows, drop them (`subxact_callback`). The keys of the older design (§8.8), where triggers
//! still take them, go at each statement's end.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use pgrx::prelude::*;
use simhash_core::probe::ProbePlan;

use crate::check::row::tid_key;
use crate::check::verify::{judge_found, text_of, Asked, Verifier};
use crate::errors::OrRaise;
use crate::method::simhash::search::{search_table, BandIndexes, HeapFetch, TableSearch};
use crate::write::setup::Setup;

/// A row written by the current statement, waiting for its check.
struct Pending {
    group: usize,
    /// The SimHash fingerprint (None: a MinHash row, whose signature is read back).
    fp: Option<u64>,
    tid: pg_sys::ItemPointerData,
    /// Whether the row is checked (else noted only for the statement order of the others).
    check: bool,
}

/// Rows of a statement searched in one pass (about 140 bytes of probe lists each).
const MERGED_ROWS: usize = 1 << 16;

/// Rows checked by the one-pass search (for tests).
pub static BATCHED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// What the rows of one (table, trigger) share.
#[derive(Clone)]
struct Group {
    relid: pg_sys::Oid,
    tgoid: pg_sys::Oid,
    setup: Setup,
    ext_schema: String,
}

thread_local! {
    /// How many `ExecutorFinish` calls are running: rows noted meanwhile wait for the innermost.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    static PENDING: RefCell<Vec<Pending>> = const { RefCell::new(Vec::new()) };
    static GROUPS: RefCell<Vec<Group>> = const { RefCell::new(Vec::new()) };
    /// Per open subtransaction: (its id, DEPTH and PENDING's length when it started).
    static SAVED: RefCell<Vec<(pg_sys::SubTransactionId, u32, usize)>> = const { RefCell::new(Vec::new()) };
    static PREVIOUS_FINISH: Cell<pg_sys::ExecutorFinish_hook_type> = const { Cell::new(None) };
}

/// Installs the hook and the transaction callbacks (from `_PG_init`).
pub fn register() {
    unsafe {
        PREVIOUS_FINISH.with(|p| p.set(pg_sys::ExecutorFinish_hook));
        pg_sys::ExecutorFinish_hook = Some(executor_finish);
        pg_sys::RegisterXactCallback(Some(xact_callback), std::ptr::null_mut());
        pg_sys::RegisterSubXactCallback(Some(subxact_callback), std::ptr::null_mut());
    }
}

unsafe extern "C-unwind" fn executor_finish(query: *mut pg_sys::QueryDesc) {
    crate::errors::guard(|| {
        let start = PENDING.with(|p| p.borrow().len());
        DEPTH.with(|d| d.set(d.get() + 1));
        match PREVIOUS_FINISH.with(Cell::get) {
            Some(previous) => pg_sys::ffi::pg_guard_ffi_boundary(|| previous(query)),
            None => pg_sys::standard_ExecutorFinish(query),
        }
        DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
        check_from(start);
        // Every row the statement wrote is in the table and checked: the keys its rows took go.
        // Not for a query that writes nothing (a function of a CHECK constraint, the check's own).
        if (*query).operation != pg_sys::CmdType::CMD_SELECT || (*(*query).plannedstmt).hasModifyingCTE {
            crate::check::locks::release_statement();
        }
        pg_sys::Datum::from(0)
    });
}

#[pg_guard]
unsafe extern "C-unwind" fn xact_callback(event: pg_sys::XactEvent::Type, _arg: *mut std::ffi::c_void) {
    use pg_sys::XactEvent::*;
    match event {
        XACT_EVENT_PRE_COMMIT | XACT_EVENT_PRE_PREPARE if PENDING.with(|p| !p.borrow().is_empty()) => {
            crate::errors::guard(|| {
                check_from(0);
                pg_sys::Datum::from(0)
            });
        }
        XACT_EVENT_ABORT | XACT_EVENT_PARALLEL_ABORT | XACT_EVENT_COMMIT | XACT_EVENT_PREPARE => {
            DEPTH.with(|d| d.set(0));
            PENDING.with(|p| p.borrow_mut().clear());
            GROUPS.with(|g| g.borrow_mut().clear());
            SAVED.with(|s| s.borrow_mut().clear());
            crate::partitions::forget_attaching();
            crate::write::notes::forget();
        }
        _ => {}
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn subxact_callback(
    event: pg_sys::SubXactEvent::Type,
    subid: pg_sys::SubTransactionId,
    _parent: pg_sys::SubTransactionId,
    _arg: *mut std::ffi::c_void,
) {
    use pg_sys::SubXactEvent::*;
    match event {
        SUBXACT_EVENT_START_SUB => {
            let state = (subid, DEPTH.with(Cell::get), PENDING.with(|p| p.borrow().len()));
            SAVED.with(|s| s.borrow_mut().push(state));
        }
        SUBXACT_EVENT_COMMIT_SUB | SUBXACT_EVENT_ABORT_SUB => {
            let saved = SAVED.with(|s| {
                let mut s = s.borrow_mut();
                let at = s.iter().rposition(|&(id, ..)| id == subid)?;
                let state = s[at];
                s.truncate(at);
                Some(state)
            });
            if let (SUBXACT_EVENT_ABORT_SUB, Some((_, depth, len))) = (event, saved) {
                // The rows the subtransaction wrote are gone, and so are the statements it ran.
                DEPTH.with(|d| d.set(depth));
                PENDING.with(|p| p.borrow_mut().truncate(len));
            }
            if event == SUBXACT_EVENT_ABORT_SUB {
                // So are the notes of its rows and of its row moves.
                crate::write::notes::forget_from(subid);
                crate::partitions::forget_updates_from(subid);
            }
        }
        _ => {}
    }
}

/// Whether a row noted now is checked at the end of a statement: only within one.
pub fn in_statement() -> bool {
    DEPTH.with(Cell::get) > 0
}

/// Notes a row the current statement wrote, for the check at its end.
///
/// # Safety
/// `rel` must be the open table `trigger` fired on.
pub unsafe fn note(
    rel: pg_sys::Relation,
    trigger: &pg_sys::Trigger,
    setup: &Setup,
    ext_schema: impl FnOnce() -> String,
    fp: Option<u64>,
    tid: pg_sys::ItemPointerData,
    check: bool,
) {
    let (relid, tgoid) = ((*rel).rd_id, trigger.tgoid);
    let group = GROUPS.with(|g| {
        let mut g = g.borrow_mut();
        match g.iter().position(|x| x.relid == relid && x.tgoid == tgoid) {
            Some(at) => at,
            None => {
                g.push(Group {
                    relid,
                    tgoid,
                    setup: setup.clone(),
                    ext_schema: ext_schema(),
                });
                g.len() - 1
            }
        }
    });
    PENDING.with(|p| {
        p.borrow_mut().push(Pending {
            group,
            fp,
            tid,
            check,
        })
    });
}

/// Checks the rows noted from position `start` on, raising the error of the first near-duplicate.
unsafe fn check_from(start: usize) {
    let rows: Vec<Pending> = PENDING.with(|p| {
        let mut p = p.borrow_mut();
        if p.len() > start {
            p.split_off(start)
        } else {
            Vec::new()
        }
    });
    if rows.is_empty() {
        return;
    }
    let groups = GROUPS.with(|g| {
        let groups = g.borrow().clone();
        if PENDING.with(|p| p.borrow().is_empty()) {
            g.borrow_mut().clear();
        }
        groups
    });
    // Each row's place in the statement, across its tables (the partitions of one attached table
    // are groups of their own): a row is checked against the rows written before it, wherever they
    // went, and never against those written after it (they report the pair).
    // Made on the first group checked row by row: a bulk INSERT checked in one pass never needs it.
    let order = std::cell::OnceCell::new();
    let order = || {
        order.get_or_init(|| {
            let mut order: HashMap<(u32, (u16, u16, u16)), usize> = HashMap::with_capacity(rows.len());
            for (i, r) in rows.iter().enumerate() {
                order
                    .entry((groups[r.group].relid.to_u32(), tid_key(&r.tid)))
                    .or_insert(i);
            }
            order
        })
    };
    for (at, group) in groups.iter().enumerate() {
        let mine: Vec<(Option<u64>, pg_sys::ItemPointerData, bool)> = rows
            .iter()
            .filter(|r| r.group == at)
            .map(|r| (r.fp, r.tid, r.check))
            .collect();
        if !mine.iter().any(|r| r.2) {
            continue;
        }
        let rel = pg_sys::table_open(group.relid, pg_sys::RowExclusiveLock as pg_sys::LOCKMODE);
        // SimHash rows of an ordinary table without a scope: one pass over the band indexes.
        let simhash: Option<Vec<(u64, pg_sys::ItemPointerData)>> =
            mine.iter().map(|&(fp, tid, _)| fp.map(|fp| (fp, tid))).collect();
        match simhash {
            Some(rows)
                if group.setup.scope.is_none()
                    && group.setup.attached_table == group.relid
                    && mine.iter().all(|r| r.2) =>
            {
                check_group(rel, group, &rows)
            }
            _ => check_rows(rel, group, &mine, order()),
        }
        pg_sys::table_close(rel, pg_sys::NoLock as pg_sys::LOCKMODE);
    }
}

/// Checks the rows `mine` of one group one by one, in the order written (a partition's, a scoped
/// attachment's, MinHash's): each against every row of the attached table but itself and the
/// statement's rows written after it, in any table (`order`: each row's place in the statement;
/// `crate::write::written::check_written_row`).
unsafe fn check_rows(
    rel: pg_sys::Relation,
    group: &Group,
    mine: &[(Option<u64>, pg_sys::ItemPointerData, bool)],
    order: &HashMap<(u32, (u16, u16, u16)), usize>,
) {
    let relid = (*rel).rd_id.to_u32();
    let slot = pg_sys::table_slot_create(rel, std::ptr::null_mut());
    let ext_schema = || group.ext_schema.clone();
    for &(_, tid, check) in mine {
        if !check {
            continue;
        }
        let i = order.get(&(relid, tid_key(&tid))).copied().unwrap_or(usize::MAX);
        let mut tid = tid;
        // The row is this transaction's own, written by this statement.
        if !pg_sys::table_tuple_fetch_row_version(
            rel,
            &mut tid,
            std::ptr::addr_of_mut!(pg_sys::SnapshotAnyData),
            slot,
        ) {
            continue;
        }
        let mut should_free = false;
        let tuple = pg_sys::ExecFetchSlotHeapTuple(slot, true, &mut should_free);
        let later = |table: pg_sys::Oid, found: *mut pg_sys::TupleTableSlot| {
            order
                .get(&(table.to_u32(), tid_key(&(*found).tts_tid)))
                .is_some_and(|&j| j > i)
        };
        crate::write::written::check_written_row(rel, &group.setup, &ext_schema, tuple, &later);
        if should_free {
            pg_sys::heap_freetuple(tuple);
        }
    }
    pg_sys::ExecDropSingleTupleTableSlot(slot);
}

/// Checks the rows `mine` of one group, written into `rel`, raising the error of the first that has
/// a near-duplicate. The rows are in the table and its indexes: under a dirty snapshot (§8.3) the
/// search sees every row written before, committed or not; a row of a transaction in progress is
/// waited for, and then the rows are checked again.
unsafe fn check_group(rel: pg_sys::Relation, group: &Group, mine: &[(u64, pg_sys::ItemPointerData)]) {
    loop {
        let dirty = crate::check::dirty::Dirty::new();
        let found = first_duplicate(rel, &group.setup, mine, &dirty);
        let Some((distance, tid, similarity)) = found.nearest else {
            match found.pending {
                Some(pending) => {
                    // The statement's rows took their keys in triggers one level deeper.
                    crate::check::dirty::wait(pending, crate::check::locks::trigger_depth() + 1);
                    continue;
                }
                None => return,
            }
        };
        // As the per-row check: a new command id, then a snapshot that sees the row found.
        pg_sys::CommandCounterIncrement();
        let snapshot = pg_sys::RegisterSnapshot(pg_sys::GetLatestSnapshot());
        let att = &group.setup.att;
        let (key_columns, nearest) = crate::check::report::describe_row(
            &group.ext_schema,
            att,
            (group.relid, group.setup.attached_table),
            tid,
            // Verified, the similarity that decided goes into the DETAIL (issue 50, row 7).
            match similarity {
                Some(similarity) => crate::check::report::Measure::Verified {
                    distance: Some(distance),
                    similarity,
                },
                None => crate::check::report::Measure::Distance(distance),
            },
            None,
            snapshot,
        );
        pg_sys::UnregisterSnapshot(snapshot);
        // None: deleted and committed since the search; search again.
        if let Some(nearest) = nearest {
            let table = group.setup.reported_table(rel);
            match att.mode {
                crate::attachment::Mode::Error => {
                    crate::check::report::raise_duplicate(att, &table, &key_columns, &nearest)
                }
                _ => crate::check::report::raise_concurrent(att, &table),
            }
        }
    }
}

/// What [`first_duplicate`] found: the nearest certain near-duplicate (committed, or this
/// transaction's) of the first row that has one, as (distance, TID); else a row of a transaction in
/// progress that is within reach of one of the rows.
#[derive(Default)]
struct Found {
    /// (distance, TID, the exact similarity when verified).
    nearest: Option<(u32, pg_sys::ItemPointerData, Option<f64>)>,
    pending: Option<crate::check::dirty::Pending>,
}

/// The nearest near-duplicate of the first of `rows` (fingerprint, TID; in the order written) that
/// has one among the rows of `rel` other than itself and the rows after it, under `dirty`.
unsafe fn first_duplicate(
    rel: pg_sys::Relation,
    setup: &Setup,
    rows: &[(u64, pg_sys::ItemPointerData)],
    dirty: &crate::check::dirty::Dirty,
) -> Found {
    let snapshot = dirty.ptr();
    let att = &setup.att;
    let sim = att.simhash_only("the per-statement check");
    let fp_attnum = setup.fp_att as i16;
    // Verified (§8.11), each row against the candidates it finds: its text is read back from the
    // table, where it is written, on its first candidate.
    let verifiers: Vec<Option<Verifier>> = rows
        .iter()
        .map(|&(_, tid)| {
            let (text_att, relid) = (setup.text_att, (*rel).rd_id);
            Verifier::new(att, Asked::default(), move || written_text(relid, tid, text_att))
        })
        .collect();
    let order: HashMap<(u16, u16, u16), usize> = rows
        .iter()
        .enumerate()
        .map(|(i, (_, tid))| (tid_key(tid), i))
        .collect();
    // Row j of the statement counts against row i only if written before it.
    let counts = |i: usize, tid: &pg_sys::ItemPointerData| order.get(&tid_key(tid)).is_none_or(|&j| j < i);
    let indexes = BandIndexes::open(
        rel,
        att,
        sim.nbands,
        fp_attnum,
        pg_sys::NoLock as pg_sys::LOCKMODE,
    );
    // In slices, to bound the memory of the probe lists; the first slice with a match has the row.
    let mut all_served = true;
    for (at, slice) in rows.chunks(MERGED_ROWS).enumerate() {
        let mut best: Vec<Option<(u32, pg_sys::ItemPointerData, Option<f64>)>> = vec![None; slice.len()];
        let offset = at * MERGED_ROWS;
        let counts = |i: usize, tid: &pg_sys::ItemPointerData| counts(offset + i, tid);
        let slice_verifiers = &verifiers[offset..offset + slice.len()];
        if !merged(
            rel,
            &indexes,
            sim.max_distance,
            slice,
            slice_verifiers,
            dirty,
            &counts,
            &mut best,
        ) {
            all_served = false;
            break;
        }
        if let Some(found) = best.into_iter().flatten().next() {
            return Found {
                nearest: Some(found),
                pending: dirty.pending(),
            };
        }
    }
    if all_served {
        return Found {
            nearest: None,
            pending: dirty.pending(),
        };
    }
    // One search per row: the same results, for tables whose indexes leaf lists cannot serve.
    drop(indexes);
    for (i, &(fp, tid)) in rows.iter().enumerate() {
        let mut nearest: Option<(u32, pg_sys::ItemPointerData, Option<f64>)> = None;
        let search = TableSearch {
            rel,
            att,
            sim,
            fp_attnum,
            query: fp,
            k: sim.max_distance,
            snapshot,
            exclude: Some(tid),
            lockmode: pg_sys::NoLock as pg_sys::LOCKMODE,
        };
        search_table(&search, &mut |d, slot| {
            let found = (*slot).tts_tid;
            if !counts(i, &found) {
                return;
            }
            let judged = judge_found(dirty, verifiers[i].as_ref(), rel, (*rel).rd_id, slot);
            if let Some((similarity, true)) = judged {
                if nearest.is_none_or(|(nd, _, _)| d < nd) {
                    nearest = Some((d, found, similarity));
                }
            }
        });
        if nearest.is_some() {
            return Found {
                nearest,
                pending: dirty.pending(),
            };
        }
    }
    Found {
        nearest: None,
        pending: dirty.pending(),
    }
}

/// Finds every row's nearest near-duplicate (as [`first_duplicate`] counts them) in one ascending
/// pass over each band index for all rows. False, with `best` undefined, where the band indexes
/// cannot be read that way or the distance is beyond what probing serves.
#[allow(clippy::too_many_arguments)]
unsafe fn merged(
    rel: pg_sys::Relation,
    indexes: &BandIndexes,
    k: i32,
    rows: &[(u64, pg_sys::ItemPointerData)],
    verifiers: &[Option<Verifier>],
    dirty: &crate::check::dirty::Dirty,
    counts: &dyn Fn(usize, &pg_sys::ItemPointerData) -> bool,
    best: &mut [Option<(u32, pg_sys::ItemPointerData, Option<f64>)>],
) -> bool {
    let snapshot = dirty.ptr();
    let Some(bands) = indexes.leaf_readable_bands() else {
        return false;
    };
    let nbands = bands.len() as i32;
    let plans: Vec<ProbePlan> = rows
        .iter()
        .map(|&(fp, _)| ProbePlan::new(fp, k, nbands).or_raise())
        .collect();
    if plans.iter().any(|p| p.probes.is_none()) {
        return false;
    }
    let fetch = HeapFetch::begin(rel);
    let slot = pg_sys::table_slot_create(rel, std::ptr::null_mut());
    let (mut pairs, mut values, mut entries) = (Vec::new(), Vec::new(), Vec::new());
    let mut served = true;
    for (b, &index) in bands.iter().enumerate() {
        // (probe value, row): the rows that probe each value, values ascending.
        pairs.clear();
        for (i, plan) in plans.iter().enumerate() {
            let probe = &plan.probes.as_ref().expect("probes")[b];
            pairs.extend(probe.values.iter().map(|&v| (v, i as u32)));
        }
        pairs.sort_unstable();
        values.clear();
        values.extend(pairs.iter().map(|p| p.0));
        values.dedup();
        entries.clear();
        // A backend reads an index's leaf list after its first probes: a second call reads it.
        if !crate::storage::leafmap::equal_entries(index, &values, usize::MAX, &mut entries) {
            entries.clear();
            if !crate::storage::leafmap::equal_entries(index, &values, usize::MAX, &mut entries) {
                served = false;
                break;
            }
        }
        let (start, end) = simhash_core::bands::band_bits(b as u32, nbands as u32);
        let mask = (1u64 << (end - start)) - 1;
        for &(fp, tid) in &entries {
            pg_sys::check_for_interrupts!();
            let key = ((fp >> start) & mask) as i32;
            let from = pairs.partition_point(|p| p.0 < key);
            for &(_, i) in pairs[from..].iter().take_while(|p| p.0 == key) {
                let i = i as usize;
                if tid_key(&tid) == tid_key(&rows[i].1) {
                    continue;
                }
                let Some(d) = plans[i].accepts(b as u32, fp) else {
                    continue;
                };
                if best[i].is_some_and(|(bd, _, _)| bd <= d) {
                    continue;
                }
                let best = &mut best[i];
                fetch.fetch_each(tid, snapshot, slot, &mut |slot| {
                    if !counts(i, &(*slot).tts_tid) || best.is_some_and(|(bd, _, _)| bd <= d) {
                        return;
                    }
                    let judged = judge_found(dirty, verifiers[i].as_ref(), rel, (*rel).rd_id, slot);
                    if let Some((similarity, true)) = judged {
                        *best = Some((d, (*slot).tts_tid, similarity));
                    }
                });
            }
        }
    }
    pg_sys::ExecDropSingleTupleTableSlot(slot);
    drop(fetch);
    if served {
        BATCHED.fetch_add(rows.len() as u64, std::sync::atomic::Ordering::Relaxed);
    }
    served
}

/// The text (column `text_att`) of the row this statement wrote at `tid` of table `relid`, as
/// UTF-8; None when it is NULL or gone. The row is this transaction's own: any snapshot that
/// shows its writes finds it, and no other transaction can have changed it.
///
/// # Safety
/// Inside the statement-end check, with `relid` open.
unsafe fn written_text(relid: pg_sys::Oid, tid: pg_sys::ItemPointerData, text_att: i32) -> Option<String> {
    let rel = pg_sys::RelationIdGetRelation(relid);
    let slot = pg_sys::table_slot_create(rel, std::ptr::null_mut());
    let mut tid = tid;
    let found = pg_sys::table_tuple_fetch_row_version(
        rel,
        &mut tid,
        std::ptr::addr_of_mut!(pg_sys::SnapshotAnyData),
        slot,
    );
    let text = found
        .then(|| {
            let mut isnull = false;
            let datum = pg_sys::slot_getattr(slot, text_att, &mut isnull);
            (!isnull).then(|| text_of(datum))
        })
        .flatten();
    pg_sys::ExecDropSingleTupleTableSlot(slot);
    pg_sys::RelationClose(rel);
    text
}
