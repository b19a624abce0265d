//! MinHash's duplicate check of one written row: the most similar row of the attached table that
//! shares a band and reaches the threshold, found under a dirty snapshot (§8.3, §8.10) through the
//! GIN index of the band keys, read here directly: rows of transactions in progress are found too,
//! and their transactions waited for.

use pgrx::prelude::*;
use simhash_core::minhash::{self, Signature};

use crate::attachment::{Attachment, MinHashSettings};
use crate::catalog::{attnum_of, relation_name};
use crate::check::dirty::{Dirty, Pending};
use crate::check::locks::{band_lock_keys, lock_row, trigger_depth};
use crate::check::report::{describe_row, Measure, Nearest};
use crate::check::row::{attnum, checked_tables, ScopeFilter};
use crate::check::verify::Verifier;
use crate::method::common::WrittenRow;
use crate::method::simhash::search::HeapFetch;

use super::lsh::{band_keys, bytea_bytes};

/// The strategy of `anyarray && anyarray` in GIN's `array_ops` (`GinOverlapStrategy`).
const GIN_OVERLAP_STRATEGY: u16 = 1;

/// A MinHash attachment's check of signature `sig`: the keys of its bands on the attached table,
/// then the most similar row that shares a band and reaches the threshold, certain (committed or
/// this transaction's own); a match of a transaction in progress is waited for (after the keys
/// go) and the row checked again.
///
/// # Safety
/// As [`crate::method::nearest`].
pub unsafe fn most_similar(
    att: &Attachment,
    settings: &MinHashSettings,
    sig: &Signature,
    row: &WrittenRow,
) -> Option<(String, Nearest)> {
    let keys = band_keys(sig, settings);
    let lock_keys = band_lock_keys(&keys);
    if row.checked_after && row.keyless {
        return None;
    }
    loop {
        if !row.keyless {
            lock_row(row.attached_table, &lock_keys, false);
        }
        let found = search(att, settings, sig, &keys, row);
        let Some((similarity, table, tid)) = found.best else {
            match found.pending {
                Some(pending) => {
                    crate::check::dirty::wait(pending, trigger_depth());
                    continue;
                }
                None => return None,
            }
        };
        pg_sys::CommandCounterIncrement();
        let snapshot = pg_sys::RegisterSnapshot(pg_sys::GetLatestSnapshot());
        let (key_columns, nearest) = describe_row(
            &(row.ext_schema)(),
            att,
            (table, row.attached_table),
            tid,
            if row.verifier.is_some() {
                Measure::Verified {
                    distance: None,
                    similarity,
                }
            } else {
                Measure::Similarity(similarity)
            },
            row.flag_attr,
            snapshot,
        );
        pg_sys::UnregisterSnapshot(snapshot);
        // None: deleted and committed since the search; search again.
        if let Some(n) = nearest {
            return Some((key_columns, n));
        }
    }
}

/// What the search found: the most similar certain match (then by table and TID), and a match of a
/// transaction in progress.
#[derive(Default)]
struct Found {
    best: Option<(f64, pg_sys::Oid, pg_sys::ItemPointerData)>,
    pending: Option<Pending>,
}

/// The matches of `sig` over every table of the attached table, under a dirty snapshot.
unsafe fn search(
    att: &Attachment,
    settings: &MinHashSettings,
    sig: &Signature,
    keys: &[i64],
    row: &WrittenRow,
) -> Found {
    let relid = (*row.heap).rd_id;
    let mut found = Found::default();
    let dirty = Dirty::new();
    for table in checked_tables(row.heap, row.attached_table) {
        let own = table == relid;
        let open = crate::partitions::OpenTable::open(row.heap, table);
        let rel = open.rel;
        let tupdesc = (*rel).rd_att;
        let column = |name: &str| {
            attnum_of(tupdesc, name).unwrap_or_else(|| attnum(tupdesc, name, &relation_name(rel)) as i16)
        };
        let signature_attnum = if own {
            row.value_attnum
        } else {
            column(&att.fingerprint_column())
        };
        let scope_attnum = row.scope.map(|s| column(s.column));
        let exclude = row.old_tid.filter(|_| own);
        let table_search = TableSearch {
            rel,
            settings,
            sig,
            signature_attnum,
            scope: row.scope.zip(scope_attnum),
            exclude,
            verifier: row.verifier,
            ignore: row.ignore.map(|f| (f, table)),
        };
        let lsh_attnum = column(&att.band_columns()[0]);
        let snapshot = dirty.ptr();
        let slot = pg_sys::table_slot_create(rel, std::ptr::null_mut());
        match band_index(rel, lsh_attnum, own) {
            Some(index) => {
                let fetch = HeapFetch::begin(rel);
                scan_band_index(index, keys, snapshot, &mut |tid| {
                    pg_sys::check_for_interrupts!();
                    fetch.fetch_each(tid, snapshot, slot, &mut |slot| {
                        table_search.consider(slot, &dirty, &mut found, table)
                    });
                });
                drop(fetch);
                pg_sys::index_close(index, pg_sys::NoLock as pg_sys::LOCKMODE);
            }
            // No usable index of the band keys: every row, exact but slow (as SimHash without one).
            None => scan_heap(rel, &dirty, slot, &table_search, &mut found, table),
        }
        pg_sys::ExecDropSingleTupleTableSlot(slot);
    }
    found.pending = dirty.pending();
    found
}

/// One table's part of the search.
struct TableSearch<'a> {
    rel: pg_sys::Relation,
    settings: &'a MinHashSettings,
    sig: &'a Signature,
    signature_attnum: i16,
    scope: Option<(&'a ScopeFilter<'a>, i16)>,
    exclude: Option<pg_sys::ItemPointerData>,
    verifier: Option<&'a Verifier>,
    ignore: Option<(&'a crate::check::row::Ignore<'a>, pg_sys::Oid)>,
}

impl TableSearch<'_> {
    /// Counts the row just found visible under `dirty`, in `slot`, when it matches: a certain one
    /// as the best so far if it is; `dirty` notes one of a transaction in progress.
    unsafe fn consider(
        &self,
        slot: *mut pg_sys::TupleTableSlot,
        dirty: &Dirty,
        found: &mut Found,
        table: pg_sys::Oid,
    ) {
        let tid = (*slot).tts_tid;
        if self
            .exclude
            .is_some_and(|mut x| pg_sys::ItemPointerEquals(&mut x, &mut (*slot).tts_tid))
        {
            return;
        }
        if self.ignore.is_some_and(|(f, table)| f(table, slot)) {
            return;
        }
        // Read before the verification, which may fetch a toasted text.
        let depends = dirty.in_progress();
        if let Some((scope, attnum)) = self.scope {
            if !scope.matches(slot, attnum) {
                return;
            }
        }
        let Some(similarity) = self.similarity(slot) else {
            return;
        };
        if !dirty.certain_given(depends, table, tid) {
            return;
        }
        let better = found.best.is_none_or(|(s, t, x)| {
            similarity
                .total_cmp(&s)
                .then(t.to_u32().cmp(&table.to_u32()))
                .then(crate::check::row::tid_order(&x).cmp(&crate::check::row::tid_order(&tid)))
                .is_gt()
        });
        if better {
            found.best = Some((similarity, table, tid));
        }
    }

    /// The similarity of the row in `slot` when it matches: it shares a band and reaches the
    /// threshold, verified (the exact similarity of the texts) or estimated.
    unsafe fn similarity(&self, slot: *mut pg_sys::TupleTableSlot) -> Option<f64> {
        let mut isnull = false;
        let datum = pg_sys::slot_getattr(slot, self.signature_attnum as i32, &mut isnull);
        if isnull {
            return None;
        }
        let stored =
            Signature::decode(bytea_bytes(datum)).unwrap_or_else(|e| super::lsh::corrupt(&e.to_string()));
        let threshold = match self.verifier {
            Some(v) => prefilter(v.threshold),
            None => self.settings.threshold,
        };
        let accepted = minhash::is_match(self.sig, &stored, &self.settings.lsh, threshold)
            .unwrap_or_else(|e| super::lsh::corrupt(&e.to_string()));
        if !accepted {
            return None;
        }
        match self.verifier {
            Some(v) => v.passes(self.rel, slot),
            None => Some(
                minhash::similarity(self.sig, &stored)
                    .unwrap_or_else(|e| super::lsh::corrupt(&e.to_string())),
            ),
        }
    }
}

/// The least estimated similarity of a candidate whose text is read to verify it against
/// `threshold`: [`simhash_core::verify::ESTIMATE_MARGIN`] below it.
pub fn prefilter(threshold: f64) -> f64 {
    (threshold - simhash_core::verify::ESTIMATE_MARGIN).max(0.0)
}

/// The index of `rel` that serves a search of the band keys (column `lsh_attnum`): valid, GIN with
/// the default operator class of `bigint[]`, on that column alone, without an expression or a
/// predicate, on a column still of type `bigint[]`. Opened; the executor holds the lock of the
/// indexes of the table written (`own`), others are locked here.
unsafe fn band_index(rel: pg_sys::Relation, lsh_attnum: i16, own: bool) -> Option<pg_sys::Relation> {
    if crate::catalog::attribute((*rel).rd_att, i32::from(lsh_attnum)).atttypid != pg_sys::INT8ARRAYOID {
        return None;
    }
    let opclass = pg_sys::GetDefaultOpClass(pg_sys::INT8ARRAYOID, pg_sys::GIN_AM_OID);
    if opclass == pg_sys::InvalidOid {
        return None;
    }
    let family = pg_sys::get_opclass_family(opclass);
    let lockmode = if own {
        pg_sys::NoLock
    } else {
        pg_sys::AccessShareLock
    } as pg_sys::LOCKMODE;
    let list = pg_sys::RelationGetIndexList(rel);
    let oids: Vec<pg_sys::Oid> = if list.is_null() {
        Vec::new()
    } else {
        std::slice::from_raw_parts((*list).elements, (*list).length as usize)
            .iter()
            .map(|cell| cell.oid_value)
            .collect()
    };
    for oid in oids {
        let index = pg_sys::index_open(oid, lockmode);
        let form = &*(*index).rd_index;
        let usable = (*(*index).rd_rel).relam == pg_sys::GIN_AM_OID
            && form.indisvalid
            && form.indnatts == 1
            && *form.indkey.values.as_ptr() == lsh_attnum
            && pg_sys::heap_attisnull(
                (*index).rd_indextuple,
                pg_sys::Anum_pg_index_indexprs as i32,
                std::ptr::null_mut(),
            )
            && pg_sys::heap_attisnull(
                (*index).rd_indextuple,
                pg_sys::Anum_pg_index_indpred as i32,
                std::ptr::null_mut(),
            )
            && *(*index).rd_opfamily == family;
        if usable {
            return Some(index);
        }
        pg_sys::index_close(index, pg_sys::NoLock as pg_sys::LOCKMODE);
    }
    None
}

/// Visits the TID of every entry of the GIN index `index` whose band keys overlap `keys`, whatever
/// its row's visibility (the fetch decides it).
unsafe fn scan_band_index(
    index: pg_sys::Relation,
    keys: &[i64],
    snapshot: pg_sys::Snapshot,
    visit: &mut dyn FnMut(pg_sys::ItemPointerData),
) {
    let array = super::lsh::int8_array(keys);
    let mut key: pg_sys::ScanKeyData = std::mem::zeroed();
    pg_sys::ScanKeyEntryInitialize(
        &mut key,
        0,
        1,
        GIN_OVERLAP_STRATEGY,
        pg_sys::INT8ARRAYOID,
        pg_sys::InvalidOid,
        pg_sys::Oid::from(pg_sys::F_ARRAYOVERLAP),
        array,
    );
    let scan = crate::compat::index_beginscan_bitmap(index, snapshot, 1);
    pg_sys::index_rescan(scan, &mut key, 1, std::ptr::null_mut(), 0);
    let tbm = crate::compat::tbm_create();
    pg_sys::index_getbitmap(scan, tbm);
    pg_sys::index_endscan(scan);
    crate::compat::for_each_tid(tbm, visit);
    pg_sys::tbm_free(tbm);
}

/// Every row of `rel`, considered one by one.
unsafe fn scan_heap(
    rel: pg_sys::Relation,
    dirty: &Dirty,
    slot: *mut pg_sys::TupleTableSlot,
    table_search: &TableSearch,
    found: &mut Found,
    table: pg_sys::Oid,
) {
    let flags = pg_sys::ScanOptions::SO_TYPE_SEQSCAN | pg_sys::ScanOptions::SO_ALLOW_STRAT;
    let scan = pg_sys::heap_beginscan(
        rel,
        dirty.ptr(),
        0,
        std::ptr::null_mut(),
        std::ptr::null_mut(),
        flags,
    );
    while pg_sys::heap_getnextslot(scan, pg_sys::ScanDirection::ForwardScanDirection, slot) {
        pg_sys::check_for_interrupts!();
        table_search.consider(slot, dirty, found, table);
    }
    pg_sys::heap_endscan(scan);
}
