//! Finding the rows of an attached table within distance k of a fingerprint, through its band
//! indexes (issue 14). The probe plan (`simhash_core::probe`) says which values of which band to
//! look up; each band index is read for those values through the backend's list of its leaf pages
//! (`crate::storage::leafmap`), or with an index scan per value (an equality scan key) where that list
//! cannot serve. The fingerprint is read from the index entry (the band indexes `INCLUDE` it), and
//! only entries within k that are reached through their first band within radius go on to the
//! heap, where the snapshot decides visibility. So a candidate that fails the check costs no heap
//! visit, and no SQL is planned.
//!
//! Used by SimHash's lookups (`super::lookup`) and duplicate checks (`super::check`,
//! `crate::write::deferred`); `simhash_near_duplicates_sql()` writes the same plan as SQL, for EXPLAIN.

use pgrx::prelude::*;
use simhash_core::probe::ProbePlan;

use crate::attachment::{Attachment, SimHashSettings};
use crate::catalog::{attnum_of, relation_name};
use crate::errors::{raise, EncodedError, OrRaise};

/// The B-tree index on one band column, as the lookup uses it.
pub struct BandIndex {
    index: pg_sys::Relation,
    /// Position of the fingerprint in the index entries (1-based), when the index holds it.
    fp_attno: Option<usize>,
}

impl BandIndex {
    /// Whether the leaf lists of `crate::storage::leafmap` can read it: the fingerprint is the included
    /// column right after the band (`leafmap` checks the rest of the layout itself).
    fn leaf_readable(&self) -> bool {
        self.fp_attno == Some(2)
    }
}

/// A band index per band, in band order; None when some band has no usable index (then the lookup
/// scans the table, which stays exact).
pub struct BandIndexes(Option<Vec<BandIndex>>);

/// Which index serves each band, per (table, text column, band count, fingerprint column).
type ChosenKey = (pg_sys::Oid, String, i32, i16);
type Chosen = Option<Vec<(pg_sys::Oid, Option<usize>)>>;

thread_local! {
    static CHOSEN: crate::catalog::CatalogCache<ChosenKey, Chosen> = crate::catalog::CatalogCache::default();
}

impl BandIndexes {
    /// Opens the band indexes of `att` on `heap` (locks kept to the end of the transaction). Which
    /// indexes they are is remembered until the next relcache invalidation (creating or dropping
    /// an index sends one), so that a trigger does not list and open every index of its table
    /// for each row.
    ///
    /// `lockmode` is the lock taken on each index when it is known already: `AccessShareLock`, or
    /// `NoLock` for the table a trigger fires on, whose indexes the executor has locked.
    ///
    /// # Safety
    /// `heap` must be an open relation.
    pub unsafe fn open(
        heap: pg_sys::Relation,
        att: &Attachment,
        nbands: i32,
        fp_attnum: i16,
        lockmode: pg_sys::LOCKMODE,
    ) -> BandIndexes {
        let key: ChosenKey = ((*heap).rd_id, att.text_column.clone(), nbands, fp_attnum);
        let mut found = None;
        let chosen = CHOSEN.with(|chosen| {
            chosen.get_or_compute(key, || {
                let indexes = Self::find(heap, att, nbands, fp_attnum);
                let oids = indexes
                    .0
                    .as_ref()
                    .map(|bands| bands.iter().map(|b| ((*b.index).rd_id, b.fp_attno)).collect());
                found = Some(indexes);
                oids
            })
        });
        // Found just now: already open; else open the remembered ones.
        found.unwrap_or_else(|| {
            BandIndexes(chosen.map(|list| {
                list.into_iter()
                    .map(|(oid, fp_attno)| BandIndex {
                        index: pg_sys::index_open(oid, lockmode),
                        fp_attno,
                    })
                    .collect()
            }))
        })
    }

    /// Finds and opens the band indexes of `att` among the indexes of `heap`.
    /// The indexes of the bands, if there is one for each and the leaf lists can read them all.
    pub fn leaf_readable_bands(&self) -> Option<Vec<pg_sys::Relation>> {
        let bands = self.0.as_ref()?;
        bands
            .iter()
            .all(BandIndex::leaf_readable)
            .then(|| bands.iter().map(|b| b.index).collect())
    }

    unsafe fn find(heap: pg_sys::Relation, att: &Attachment, nbands: i32, fp_attnum: i16) -> BandIndexes {
        let tupdesc = (*heap).rd_att;
        let band_attnums: Vec<Option<i16>> = (0..nbands)
            .map(|i| attnum_of(tupdesc, &att.band_column(i)))
            .collect();
        let mut found: Vec<Option<BandIndex>> = (0..nbands).map(|_| None).collect();
        let list = pg_sys::RelationGetIndexList(heap);
        if !list.is_null() {
            let oids = std::slice::from_raw_parts((*list).elements, (*list).length as usize);
            for cell in oids {
                let index_oid = cell.oid_value;
                let index = pg_sys::index_open(index_oid, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
                let form = &*(*index).rd_index;
                let keys = form.indkey.values.as_slice(form.indnatts as usize);
                let band = is_band_index(index)
                    .then(|| band_attnums.iter().position(|&a| a == Some(keys[0])))
                    .flatten();
                match band {
                    Some(b) => {
                        // The fingerprint is read from an entry as a bigint: only where it is one.
                        let fp_attno = keys
                            .iter()
                            .position(|&a| a == fp_attnum)
                            .filter(|&p| {
                                crate::compat::tuple_desc_attr((*index).rd_att, p).atttypid == pg_sys::INT8OID
                            })
                            .map(|p| p + 1);
                        // Prefer an index that holds the fingerprint.
                        let better = match &found[b] {
                            None => true,
                            Some(old) => old.fp_attno.is_none() && fp_attno.is_some(),
                        };
                        if better {
                            if let Some(old) = found[b].take() {
                                pg_sys::index_close(old.index, pg_sys::NoLock as pg_sys::LOCKMODE);
                            }
                            found[b] = Some(BandIndex { index, fp_attno });
                        } else {
                            pg_sys::index_close(index, pg_sys::NoLock as pg_sys::LOCKMODE);
                        }
                    }
                    None => pg_sys::index_close(index, pg_sys::NoLock as pg_sys::LOCKMODE),
                }
            }
            pg_sys::list_free(list);
        }
        if found.iter().all(Option::is_some) {
            BandIndexes(Some(found.into_iter().flatten().collect()))
        } else {
            for b in found.into_iter().flatten() {
                pg_sys::index_close(b.index, pg_sys::NoLock as pg_sys::LOCKMODE);
            }
            BandIndexes(None)
        }
    }
}

/// Whether `index` can serve a band as the lookup reads one, with equality scans of an `int4`
/// key (`rescan_equal`): a valid B-tree whose one key column is a table column (no expression) of
/// type `integer` in the `integer_ops` operator family (int4's default), without a predicate.
/// The indexes `simhash_attach()` builds are; one the table's owner made or remade otherwise (an
/// operator class of `text` after the column was retyped, an expression, a partial index) is not
/// used, as if it were missing: the lookup then scans the table, which stays exact (§6.11,
/// docs/ARCHITECTURE.md §13.6). Included columns are not keys: the fingerprint is read from one
/// only where it is a `bigint`.
///
/// # Safety
/// `index` must be an open index relation.
unsafe fn is_band_index(index: pg_sys::Relation) -> bool {
    let form = &*(*index).rd_index;
    let no_field =
        |field: u32| pg_sys::heap_attisnull((*index).rd_indextuple, field as i32, std::ptr::null_mut());
    (*(*index).rd_rel).relam == pg_sys::BTREE_AM_OID
        && form.indisvalid
        && form.indnkeyatts == 1
        && form.indkey.values.as_slice(1)[0] != 0
        && no_field(pg_sys::Anum_pg_index_indpred)
        && no_field(pg_sys::Anum_pg_index_indexprs)
        && *(*index).rd_opfamily == pg_sys::INTEGER_BTREE_FAM_OID
        && *(*index).rd_opcintype == pg_sys::INT4OID
        && crate::compat::tuple_desc_attr((*index).rd_att, 0).atttypid == pg_sys::INT4OID
}

impl Drop for BandIndexes {
    fn drop(&mut self) {
        for b in self.0.take().into_iter().flatten() {
            unsafe { pg_sys::index_close(b.index, pg_sys::NoLock as pg_sys::LOCKMODE) };
        }
    }
}

/// The attribute number of the attachment's fingerprint column, or SQLSTATE 42703 naming it; 42804
/// when it or a band column has another type than the attach gave it
/// (`crate::method::common::verify_columns`).
///
/// # Safety
/// `heap` must be an open relation.
pub unsafe fn fingerprint_attnum(heap: pg_sys::Relation, att: &Attachment) -> i16 {
    crate::method::common::verify_columns(heap, att);
    attnum_of((*heap).rd_att, &att.fingerprint_column()).unwrap_or_else(|| {
        raise(EncodedError {
            code: PgSqlErrorCode::ERRCODE_UNDEFINED_COLUMN,
            message: format!(
                "column \"{}\" of table \"{}\" does not exist",
                att.fingerprint_column(),
                relation_name(heap)
            ),
            detail: None,
            hint: Some("The table was altered after simhash_attach(); detach it and attach it again.".into()),
        })
    })
}

/// An index descent, in index entries read: what one more probed value costs beyond its entries.
const PROBE_COST: f64 = 20.0;

/// The probe plan for `query` within `k`. On four indexed bands of a table big enough for skew to
/// matter, the radii are chosen from the sizes of the query's own band buckets (GPH): a band whose
/// value is crowded (boilerplate, a common pattern) takes radius -1 and the others a larger one.
/// Any such plan is exact; otherwise the radii are even.
///
/// # Safety
/// `heap` must be open and locked, `snapshot` registered or active.
pub unsafe fn plan_for(
    heap: pg_sys::Relation,
    indexes: &BandIndexes,
    query: u64,
    k: i32,
    nbands: i32,
    snapshot: pg_sys::Snapshot,
) -> ProbePlan {
    let even = ProbePlan::new(query, k, nbands).or_raise();
    let Some(bands) = &indexes.0 else { return even };
    if even.probes.is_none() || even.nbands > simhash_core::probe::MAX_CHOSEN_BANDS {
        return even;
    }
    let (start, end) = simhash_core::bands::band_bits(0, even.nbands);
    let average = f64::from((*(*heap).rd_rel).reltuples) / (1u64 << (end - start)) as f64;
    if average < 1.0 {
        return even;
    }
    // Counting stops once a bucket is clearly crowded: the choice needs no more.
    let cap = (average * 64.0) as u64 + 64;
    let centers: Vec<f64> = bands
        .iter()
        .enumerate()
        .map(|(i, band)| {
            let (start, end) = simhash_core::bands::band_bits(i as u32, even.nbands);
            let value = ((query >> start) & ((1u64 << (end - start)) - 1)) as i32;
            count_entries(heap, band, value, cap, snapshot) as f64
        })
        .collect();
    let radii = simhash_core::probe::choose_radii(even.k, even.nbands, &centers, average, PROBE_COST);
    if radii == even.radii {
        return even;
    }
    ProbePlan::with_radii(query, k, nbands, &radii).or_raise()
}

/// Restarts an index scan on the entries whose (int) key equals `value`.
unsafe fn rescan_equal(scan: pg_sys::IndexScanDesc, value: i32) {
    let mut key = pg_sys::ScanKeyData::default();
    pg_sys::ScanKeyInit(
        &mut key,
        1,
        pg_sys::BTEqualStrategyNumber as pg_sys::StrategyNumber,
        pg_sys::Oid::from(pg_sys::F_INT4EQ),
        pg_sys::Datum::from(value),
    );
    pg_sys::index_rescan(scan, &mut key, 1, std::ptr::null_mut(), 0);
}

/// Index entries equal to `value`, counted up to `cap`.
unsafe fn count_entries(
    heap: pg_sys::Relation,
    band: &BandIndex,
    value: i32,
    cap: u64,
    snapshot: pg_sys::Snapshot,
) -> u64 {
    if band.leaf_readable() {
        let mut entries = Vec::new();
        if crate::storage::leafmap::equal_entries(band.index, &[value], cap as usize, &mut entries) {
            return entries.len() as u64;
        }
    }
    let scan = crate::compat::index_beginscan(heap, band.index, snapshot, 1, 0);
    rescan_equal(scan, value);
    let mut n = 0;
    while n < cap && !pg_sys::index_getnext_tid(scan, pg_sys::ScanDirection::ForwardScanDirection).is_null() {
        n += 1;
    }
    pg_sys::index_endscan(scan);
    n
}

/// Fetches heap rows by TID with the table AM, for entries read without an index scan.
pub struct HeapFetch(*mut pg_sys::IndexFetchTableData, pg_sys::Relation);

impl HeapFetch {
    pub unsafe fn begin(heap: pg_sys::Relation) -> HeapFetch {
        let begin = (*(*heap).rd_tableam)
            .index_fetch_begin
            .expect("table AM fetches by TID");
        HeapFetch(begin(heap), heap)
    }

    /// Calls `visit` with each version of the row at `tid` that `snapshot` sees, in `slot`: one at
    /// most under an MVCC snapshot; under a dirty snapshot every visible member of the HOT chain
    /// (the old version of a row being updated and its new one, docs/ARCHITECTURE.md §8.2), as an
    /// index scan under a non-MVCC snapshot and PostgreSQL's exclusion check see them.
    pub unsafe fn fetch_each(
        &self,
        mut tid: pg_sys::ItemPointerData,
        snapshot: pg_sys::Snapshot,
        slot: *mut pg_sys::TupleTableSlot,
        visit: &mut dyn FnMut(*mut pg_sys::TupleTableSlot),
    ) {
        let fetch = (*(*self.1).rd_tableam)
            .index_fetch_tuple
            .expect("table AM fetches by TID");
        let (mut call_again, mut all_dead) = (false, false);
        loop {
            if !fetch(self.0, &mut tid, snapshot, slot, &mut call_again, &mut all_dead) {
                return;
            }
            visit(slot);
            if !call_again {
                return;
            }
        }
    }
}

impl Drop for HeapFetch {
    fn drop(&mut self) {
        unsafe {
            if let Some(end) = (*(*self.1).rd_tableam).index_fetch_end {
                end(self.0);
            }
        }
    }
}

/// What a search counts, for tests and benchmarks.
#[derive(Debug, Default, Clone, Copy)]
pub struct Counts {
    /// Band values looked up in the indexes.
    pub probes: u64,
    /// Index entries read.
    pub candidates: u64,
    /// Heap tuples fetched.
    pub heap_fetches: u64,
}

/// Calls `on_match(distance, slot)` for every row of `heap` visible to `snapshot` whose fingerprint
/// is within `plan.k` of `plan.query`, each once, skipping the row at `exclude`.
///
/// # Safety
/// `heap` must be open and locked, `snapshot` registered or active for the whole call.
pub unsafe fn search(
    heap: pg_sys::Relation,
    fp_attnum: i16,
    indexes: &BandIndexes,
    plan: &ProbePlan,
    snapshot: pg_sys::Snapshot,
    exclude: Option<pg_sys::ItemPointerData>,
    on_match: &mut dyn FnMut(u32, *mut pg_sys::TupleTableSlot),
) -> Counts {
    let mut s = Searcher {
        heap,
        fp_attnum,
        plan,
        snapshot,
        exclude,
        on_match,
        counts: Counts::default(),
        made_slot: std::ptr::null_mut(),
    };
    match (&plan.probes, &indexes.0) {
        (Some(probes), Some(bands)) => {
            let mut fetch: Option<HeapFetch> = None;
            let mut entries = Vec::new();
            for probe in probes.iter().filter(|p| !p.values.is_empty()) {
                let band = &bands[probe.band as usize];
                entries.clear();
                // The probe values are ascending and distinct (`neighbours`).
                if band.leaf_readable()
                    && crate::storage::leafmap::equal_entries(
                        band.index,
                        &probe.values,
                        usize::MAX,
                        &mut entries,
                    )
                {
                    s.counts.probes += probe.values.len() as u64;
                    s.check_entries(probe.band, &entries, &mut fetch);
                } else {
                    s.scan_index(band, probe.band, &probe.values);
                }
            }
            drop(fetch);
        }
        // Too far for the bands to pay, or a band without an index: a scan is exact.
        _ => s.scan_heap(),
    }
    if !s.made_slot.is_null() {
        pg_sys::ExecDropSingleTupleTableSlot(s.made_slot);
    }
    s.counts
}

/// One search in progress: what it looks in and for, and what it has counted.
struct Searcher<'a> {
    heap: pg_sys::Relation,
    fp_attnum: i16,
    plan: &'a ProbePlan,
    snapshot: pg_sys::Snapshot,
    exclude: Option<pg_sys::ItemPointerData>,
    on_match: &'a mut dyn FnMut(u32, *mut pg_sys::TupleTableSlot),
    counts: Counts,
    /// Made on the first heap fetch: a lookup that finds nothing (most duplicate checks) needs none.
    made_slot: *mut pg_sys::TupleTableSlot,
}

impl Searcher<'_> {
    unsafe fn slot(&mut self) -> *mut pg_sys::TupleTableSlot {
        if self.made_slot.is_null() {
            self.made_slot = pg_sys::table_slot_create(self.heap, std::ptr::null_mut());
        }
        self.made_slot
    }

    /// Passes the row in `slot` at `distance` on, unless it is the excluded one.
    unsafe fn found(&mut self, distance: u32, slot: *mut pg_sys::TupleTableSlot) {
        let excluded = self
            .exclude
            .is_some_and(|mut tid| pg_sys::ItemPointerEquals(&mut tid, &mut (*slot).tts_tid));
        if !excluded {
            (self.on_match)(distance, slot);
        }
    }

    /// The entries (fingerprint, TID) a leaf list read for a probe of `band`: those within reach
    /// go to the heap.
    unsafe fn check_entries(
        &mut self,
        band: u32,
        entries: &[(u64, pg_sys::ItemPointerData)],
        fetch: &mut Option<HeapFetch>,
    ) {
        for &(fp, tid) in entries {
            pg_sys::check_for_interrupts!();
            self.counts.candidates += 1;
            let Some(d) = self.plan.accepts(band, fp) else {
                continue;
            };
            self.counts.heap_fetches += 1;
            let fetch = fetch.get_or_insert_with(|| HeapFetch::begin(self.heap));
            let slot = self.slot();
            fetch.fetch_each(tid, self.snapshot, slot, &mut |slot| self.found(d, slot));
        }
    }

    /// The probe of `values` of `band` through index scans, one equality scan per value.
    unsafe fn scan_index(&mut self, index: &BandIndex, band: u32, values: &[i32]) {
        let mut scan: Option<pg_sys::IndexScanDesc> = None;
        for &value in values {
            self.counts.probes += 1;
            let scan = *scan.get_or_insert_with(|| {
                let scan = crate::compat::index_beginscan(self.heap, index.index, self.snapshot, 1, 0);
                (*scan).xs_want_itup = index.fp_attno.is_some();
                scan
            });
            rescan_equal(scan, value);
            loop {
                pg_sys::check_for_interrupts!();
                let tid = pg_sys::index_getnext_tid(scan, pg_sys::ScanDirection::ForwardScanDirection);
                if tid.is_null() {
                    break;
                }
                self.counts.candidates += 1;
                self.scanned_entry(scan, index, band);
            }
        }
        if let Some(scan) = scan {
            pg_sys::index_endscan(scan);
        }
    }

    /// Passes on each version of the row of the index entry `scan` is on that is within reach and
    /// visible (every member of its HOT chain a dirty snapshot sees, §8.2): checked from the entry's
    /// fingerprint before the heap where the index includes it, else from each version's.
    unsafe fn scanned_entry(&mut self, scan: pg_sys::IndexScanDesc, index: &BandIndex, band: u32) {
        let entry_distance = match index.fp_attno {
            Some(attno) => match index_entry_fp(scan, attno).and_then(|fp| self.plan.accepts(band, fp)) {
                Some(d) => Some(d),
                None => return,
            },
            None => None,
        };
        loop {
            self.counts.heap_fetches += 1;
            let slot = self.slot();
            if !pg_sys::index_fetch_heap(scan, slot) {
                return;
            }
            let distance = entry_distance.or_else(|| self.plan.accepts(band, slot_fp(slot, self.fp_attnum)?));
            if let Some(d) = distance {
                self.found(d, slot);
            }
            if !(*scan).xs_heap_continue {
                return;
            }
        }
    }

    /// Every row of the table, compared one by one: exact whatever the bands.
    unsafe fn scan_heap(&mut self) {
        let flags = pg_sys::ScanOptions::SO_TYPE_SEQSCAN
            | pg_sys::ScanOptions::SO_ALLOW_STRAT
            | pg_sys::ScanOptions::SO_ALLOW_SYNC
            | pg_sys::ScanOptions::SO_ALLOW_PAGEMODE;
        let scan = pg_sys::heap_beginscan(
            self.heap,
            self.snapshot,
            0,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            flags,
        );
        let slot = self.slot();
        while pg_sys::heap_getnextslot(scan, pg_sys::ScanDirection::ForwardScanDirection, slot) {
            pg_sys::check_for_interrupts!();
            self.counts.candidates += 1;
            let Some(fp) = slot_fp(slot, self.fp_attnum) else {
                continue;
            };
            let d = simhash_core::hamming(fp, self.plan.query);
            if d <= self.plan.k {
                self.found(d, slot);
            }
        }
        pg_sys::heap_endscan(scan);
    }
}

/// One table's lookup: the table, the attachment whose band indexes serve it, and the query.
pub struct TableSearch<'a> {
    pub rel: pg_sys::Relation,
    pub att: &'a Attachment,
    pub sim: &'a SimHashSettings,
    /// The fingerprint column of `rel`.
    pub fp_attnum: i16,
    pub query: u64,
    pub k: i32,
    pub snapshot: pg_sys::Snapshot,
    /// A row not to return (the row being checked).
    pub exclude: Option<pg_sys::ItemPointerData>,
    /// The lock taken on each band index.
    pub lockmode: pg_sys::LOCKMODE,
}

/// Opens the band indexes of `s.att` on `s.rel`, plans the probes of `s.query` within `s.k` for
/// them, and runs [`search`].
///
/// # Safety
/// As [`search`].
pub unsafe fn search_table(
    s: &TableSearch,
    on_match: &mut dyn FnMut(u32, *mut pg_sys::TupleTableSlot),
) -> Counts {
    let indexes = BandIndexes::open(s.rel, s.att, s.sim.nbands, s.fp_attnum, s.lockmode);
    let plan = plan_for(s.rel, &indexes, s.query, s.k, s.sim.nbands, s.snapshot);
    search(
        s.rel,
        s.fp_attnum,
        &indexes,
        &plan,
        s.snapshot,
        s.exclude,
        on_match,
    )
}

/// The fingerprint stored in the index entry the scan is on.
unsafe fn index_entry_fp(scan: pg_sys::IndexScanDesc, attno: usize) -> Option<u64> {
    let itup = (*scan).xs_itup;
    if itup.is_null() {
        return None;
    }
    let mut values = [pg_sys::Datum::from(0); pg_sys::INDEX_MAX_KEYS as usize];
    let mut nulls = [false; pg_sys::INDEX_MAX_KEYS as usize];
    pg_sys::index_deform_tuple(itup, (*scan).xs_itupdesc, values.as_mut_ptr(), nulls.as_mut_ptr());
    (!nulls[attno - 1]).then(|| values[attno - 1].value() as i64 as u64)
}

/// The fingerprint column of the tuple in `slot`.
unsafe fn slot_fp(slot: *mut pg_sys::TupleTableSlot, fp_attnum: i16) -> Option<u64> {
    let mut should_free = false;
    let tuple = pg_sys::ExecFetchSlotHeapTuple(slot, false, &mut should_free);
    let value = pgrx::heap_getattr_raw(
        tuple,
        std::num::NonZeroUsize::new(fp_attnum as usize)?,
        (*slot).tts_tupleDescriptor,
    );
    if should_free {
        pg_sys::heap_freetuple(tuple);
    }
    value.map(|d| d.value() as i64 as u64)
}
