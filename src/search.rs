//! Finding the rows of an attached table within distance k of a fingerprint, through its band
//! indexes (issue 14). The probe plan (`simhash_core::probe`) says which values of which band to
//! look up; each band index is read for those values through the backend's list of its leaf pages
//! (`crate::storage::leafmap`), or with an index scan per value (an equality scan key) where that
//! list cannot serve. The fingerprint is read from the index entry (the band indexes `INCLUDE` it), and
//! only entries within k that are reached through their first band within radius go on to the
//! heap, where the snapshot decides visibility. So a candidate that fails the check costs no heap
//! visit, and no SQL is planned.
//!
//! Used by `simhash_near_duplicates()` and by the duplicate trigger; `simhash_near_duplicates_sql()`
//! writes the same plan as SQL, for EXPLAIN.

use std::ffi::CStr;

use pgrx::prelude::*;
use simhash_core::probe::ProbePlan;

use crate::attachment::{Attachment, RowKey};
use crate::catalog::{attnum_of, own_namespace, relation_name};
use crate::errors::{raise, EncodedError, OrRaise};

/// The B-tree index on one band column, as the lookup uses it.
pub struct BandIndex {
    index: pg_sys::Relation,
    /// Position of the fingerprint in the index entries (1-based), when the index holds it.
    fp_attno: Option<usize>,
}

impl BandIndex {
    /// Whether the leaf lists of `crate::storage::leafmap` can read it: the fingerprint is the
    /// included column right after the band (`leafmap` checks the rest of the layout itself).
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
        fp_attnum: i16,
        lockmode: pg_sys::LOCKMODE,
    ) -> BandIndexes {
        let key: ChosenKey = ((*heap).rd_id, att.text_column.clone(), att.nbands, fp_attnum);
        let mut found = None;
        let chosen = CHOSEN.with(|chosen| {
            chosen.get_or_compute(key, || {
                let indexes = Self::find(heap, att, fp_attnum);
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

    unsafe fn find(heap: pg_sys::Relation, att: &Attachment, fp_attnum: i16) -> BandIndexes {
        let tupdesc = (*heap).rd_att;
        let band_attnums: Vec<Option<i16>> = (0..att.nbands)
            .map(|i| attnum_of(tupdesc, &att.band_column(i)))
            .collect();
        let mut found: Vec<Option<BandIndex>> = (0..att.nbands).map(|_| None).collect();
        let list = pg_sys::RelationGetIndexList(heap);
        if !list.is_null() {
            let oids = std::slice::from_raw_parts((*list).elements, (*list).length as usize);
            for cell in oids {
                let index_oid = cell.oid_value;
                let index = pg_sys::index_open(index_oid, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
                let form = &*(*index).rd_index;
                let keys = form.indkey.values.as_slice(form.indnatts as usize);
                let usable = (*(*index).rd_rel).relam == pg_sys::BTREE_AM_OID
                    && form.indisvalid
                    && form.indnkeyatts == 1
                    && pg_sys::heap_attisnull(
                        (*index).rd_indextuple,
                        pg_sys::Anum_pg_index_indpred as i32,
                        std::ptr::null_mut(),
                    );
                let band = usable
                    .then(|| band_attnums.iter().position(|&a| a == Some(keys[0])))
                    .flatten();
                match band {
                    Some(b) => {
                        let fp_attno = keys.iter().position(|&a| a == fp_attnum).map(|p| p + 1);
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

impl Drop for BandIndexes {
    fn drop(&mut self) {
        for b in self.0.take().into_iter().flatten() {
            unsafe { pg_sys::index_close(b.index, pg_sys::NoLock as pg_sys::LOCKMODE) };
        }
    }
}

/// The attribute number of the attachment's fingerprint column, or SQLSTATE 42703 naming it.
///
/// # Safety
/// `heap` must be an open relation.
pub unsafe fn fingerprint_attnum(heap: pg_sys::Relation, att: &Attachment) -> i16 {
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

    /// Stores in `slot` the version of the row at `tid` that `snapshot` sees, if any.
    pub unsafe fn fetch(
        &self,
        mut tid: pg_sys::ItemPointerData,
        snapshot: pg_sys::Snapshot,
        slot: *mut pg_sys::TupleTableSlot,
    ) -> bool {
        let fetch = (*(*self.1).rd_tableam)
            .index_fetch_tuple
            .expect("table AM fetches by TID");
        let (mut call_again, mut all_dead) = (false, false);
        // An MVCC snapshot sees at most one version of a HOT chain: one call suffices.
        fetch(self.0, &mut tid, snapshot, slot, &mut call_again, &mut all_dead)
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
    let mut counts = Counts::default();
    // Made on the first heap fetch: a lookup that finds nothing (most duplicate checks) needs none.
    let mut made_slot: *mut pg_sys::TupleTableSlot = std::ptr::null_mut();
    let mut slot = || {
        if made_slot.is_null() {
            made_slot = pg_sys::table_slot_create(heap, std::ptr::null_mut());
        }
        made_slot
    };
    let excluded = |slot: *mut pg_sys::TupleTableSlot| {
        exclude.is_some_and(|mut tid| pg_sys::ItemPointerEquals(&mut tid, &mut (*slot).tts_tid))
    };
    match (&plan.probes, &indexes.0) {
        (Some(probes), Some(bands)) => {
            let mut fetch: Option<HeapFetch> = None;
            let mut entries = Vec::new();
            for probe in probes.iter().filter(|p| !p.values.is_empty()) {
                let band = &bands[probe.band as usize];
                let mut scan: Option<pg_sys::IndexScanDesc> = None;
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
                    counts.probes += probe.values.len() as u64;
                    for &(fp, tid) in &entries {
                        pg_sys::check_for_interrupts!();
                        counts.candidates += 1;
                        let Some(d) = plan.accepts(probe.band, fp) else {
                            continue;
                        };
                        counts.heap_fetches += 1;
                        let fetch = fetch.get_or_insert_with(|| HeapFetch::begin(heap));
                        let slot = slot();
                        if fetch.fetch(tid, snapshot, slot) && !excluded(slot) {
                            on_match(d, slot);
                        }
                    }
                    continue;
                }
                for &value in &probe.values {
                    counts.probes += 1;
                    let scan = *scan.get_or_insert_with(|| {
                        let scan = crate::compat::index_beginscan(heap, band.index, snapshot, 1, 0);
                        (*scan).xs_want_itup = band.fp_attno.is_some();
                        scan
                    });
                    rescan_equal(scan, value);
                    loop {
                        pg_sys::check_for_interrupts!();
                        let tid =
                            pg_sys::index_getnext_tid(scan, pg_sys::ScanDirection::ForwardScanDirection);
                        if tid.is_null() {
                            break;
                        }
                        counts.candidates += 1;
                        let distance = match band.fp_attno {
                            Some(attno) => {
                                let Some(fp) = index_entry_fp(scan, attno) else {
                                    continue;
                                };
                                let Some(d) = plan.accepts(probe.band, fp) else {
                                    continue;
                                };
                                counts.heap_fetches += 1;
                                if !pg_sys::index_fetch_heap(scan, slot()) {
                                    continue;
                                }
                                d
                            }
                            None => {
                                counts.heap_fetches += 1;
                                if !pg_sys::index_fetch_heap(scan, slot()) {
                                    continue;
                                }
                                let Some(fp) = slot_fp(slot(), fp_attnum) else {
                                    continue;
                                };
                                let Some(d) = plan.accepts(probe.band, fp) else {
                                    continue;
                                };
                                d
                            }
                        };
                        let slot = slot();
                        if !excluded(slot) {
                            on_match(distance, slot);
                        }
                    }
                }
                if let Some(scan) = scan {
                    pg_sys::index_endscan(scan);
                }
            }
            drop(fetch);
        }
        _ => {
            // Too far for the bands to pay, or a band without an index: a scan is exact.
            let flags = pg_sys::ScanOptions::SO_TYPE_SEQSCAN
                | pg_sys::ScanOptions::SO_ALLOW_STRAT
                | pg_sys::ScanOptions::SO_ALLOW_SYNC
                | pg_sys::ScanOptions::SO_ALLOW_PAGEMODE;
            let scan = pg_sys::heap_beginscan(
                heap,
                snapshot,
                0,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                flags,
            );
            let slot = slot();
            while pg_sys::heap_getnextslot(scan, pg_sys::ScanDirection::ForwardScanDirection, slot) {
                pg_sys::check_for_interrupts!();
                counts.candidates += 1;
                let Some(fp) = slot_fp(slot, fp_attnum) else {
                    continue;
                };
                let d = simhash_core::hamming(fp, plan.query);
                if d <= plan.k && !excluded(slot) {
                    on_match(d, slot);
                }
            }
            pg_sys::heap_endscan(scan);
        }
    }
    if !made_slot.is_null() {
        pg_sys::ExecDropSingleTupleTableSlot(made_slot);
    }
    counts
}

/// One table's lookup: the table, the attachment whose band indexes serve it, and the query.
pub struct TableSearch<'a> {
    pub rel: pg_sys::Relation,
    pub att: &'a Attachment,
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
    let indexes = BandIndexes::open(s.rel, s.att, s.fp_attnum, s.lockmode);
    let plan = plan_for(s.rel, &indexes, s.query, s.k, s.att.nbands, s.snapshot);
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

fn arg_null(fcinfo: pg_sys::FunctionCallInfo, i: usize) -> bool {
    unsafe { (*(*fcinfo).args.as_ptr().add(i)).isnull }
}

fn arg(fcinfo: pg_sys::FunctionCallInfo, i: usize) -> pg_sys::Datum {
    unsafe { (*(*fcinfo).args.as_ptr().add(i)).value }
}

/// The table whose row type the first argument of `simhash_near_duplicates()` has, or 42809.
unsafe fn row_table(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Oid {
    let row_type = pg_sys::get_fn_expr_argtype((*fcinfo).flinfo, 0);
    let relid = if row_type == pg_sys::InvalidOid {
        pg_sys::InvalidOid
    } else {
        pg_sys::get_typ_typrelid(row_type)
    };
    if relid == pg_sys::InvalidOid {
        raise(EncodedError {
            code: PgSqlErrorCode::ERRCODE_WRONG_OBJECT_TYPE,
            message:
                "simhash_near_duplicates: the first argument must be a row of the table, as in NULL::my_table"
                    .into(),
            detail: None,
            hint: None,
        });
    }
    relid
}

/// Opens table `relid` for a lookup, or raises 42809 for a relation that is no table.
unsafe fn open_table(relid: pg_sys::Oid) -> pg_sys::Relation {
    let heap = pg_sys::relation_open(relid, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
    let kind = (*(*heap).rd_rel).relkind as u8;
    if kind != pg_sys::RELKIND_RELATION && kind != pg_sys::RELKIND_PARTITIONED_TABLE {
        let table = relation_name(heap);
        raise(EncodedError {
            code: PgSqlErrorCode::ERRCODE_WRONG_OBJECT_TYPE,
            message: format!("simhash_near_duplicates: \"{table}\" is not a table"),
            detail: None,
            hint: None,
        });
    }
    heap
}

/// The fingerprint to look up: the second argument, or the fingerprint of that text with the
/// attachment's options; None for NULL.
unsafe fn query_fingerprint(
    fcinfo: pg_sys::FunctionCallInfo,
    att: &Attachment,
    by_text: bool,
) -> Option<u64> {
    if arg_null(fcinfo, 1) {
        None
    } else if by_text {
        let doc = crate::text::Text::from_raw_datum(arg(fcinfo, 1));
        simhash_core::try_fingerprint_with(
            &doc.to_utf8(),
            &att.options,
            simhash_core::Chunking::default(),
            &mut crate::fingerprint::check_interrupts,
        )
        .or_raise()
    } else {
        Some(arg(fcinfo, 1).value() as i64 as u64)
    }
}

/// Adds a row (`item`, `distance`, `similarity`) to the result of a set-returning call; a
/// declaration of 0.4.0 or older returns (`item`, `distance`) only (`ALTER EXTENSION ... UPDATE`
/// not run yet).
unsafe fn put_row(rsinfo: *mut pg_sys::ReturnSetInfo, mut values: [pg_sys::Datum; 3], mut nulls: [bool; 3]) {
    // The tuplestore copies the row into its own memory.
    if (*(*rsinfo).setDesc).natts < 3 {
        values[2] = pg_sys::Datum::from(0);
        nulls[2] = true;
    }
    pg_sys::tuplestore_putvalues(
        (*rsinfo).setResult,
        (*rsinfo).setDesc,
        values.as_mut_ptr(),
        nulls.as_mut_ptr(),
    );
}

/// What a lookup is given to look for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Query {
    /// `(rel, fingerprint bigint, max_distance, text_column)`.
    Fingerprint,
    /// `(rel, doc text, max_distance, text_column, threshold)`.
    Text,
    /// `(rel, signature bytea, threshold, text_column)`.
    Signature,
}

/// `simhash_near_duplicates(rel anyelement, fingerprint bigint | doc text | signature bytea, ...)`:
/// the rows of the table within max_distance, nearest first, or (MinHash) sharing a band with at
/// least the threshold's similarity, most similar first.
unsafe fn near_duplicates(fcinfo: pg_sys::FunctionCallInfo, query: Query) -> pg_sys::Datum {
    crate::errors::arm_allocator();
    let relid = row_table(fcinfo);
    // A lookup returns whole rows: as `SELECT t FROM table t` would, it needs SELECT on every column.
    crate::privileges::require_select(relid, crate::privileges::Columns::All);
    let text_column = (!arg_null(fcinfo, 3)).then(|| {
        let name = arg(fcinfo, 3).cast_mut_ptr::<std::ffi::c_char>();
        crate::text::server_to_utf8_lossy(CStr::from_ptr(name).to_bytes())
    });
    crate::compat::init_materialized_srf(fcinfo);
    let rsinfo = (*fcinfo).resultinfo as *mut pg_sys::ReturnSetInfo;
    let heap = open_table(relid);
    let att = crate::attachment::find(heap, text_column.as_deref(), own_namespace(fcinfo));
    let nargs = (*fcinfo).nargs as usize;
    let threshold_arg = match query {
        Query::Signature => Some(2),
        Query::Text if nargs > 4 => Some(4),
        _ => None,
    }
    .filter(|&i| !arg_null(fcinfo, i))
    .map(|i| f64::from_bits(arg(fcinfo, i).value() as u64));
    if let Some(settings) = att.minhash() {
        let distance_given = query != Query::Signature && !arg_null(fcinfo, 2);
        let value = (!arg_null(fcinfo, 1)).then(|| arg(fcinfo, 1));
        let given = match query {
            Query::Fingerprint => crate::lsh::Given::Fingerprint,
            Query::Text => crate::lsh::Given::Text(value),
            Query::Signature => crate::lsh::Given::Signature(value),
        };
        crate::lsh::near_duplicates(heap, &att, settings, given, distance_given, threshold_arg)
            .into_iter()
            .for_each(|(item, similarity)| {
                put_row(
                    rsinfo,
                    [
                        item,
                        pg_sys::Datum::from(0),
                        pg_sys::Datum::from(similarity.to_bits()),
                    ],
                    [false, true, false],
                )
            });
        pg_sys::relation_close(heap, pg_sys::NoLock as pg_sys::LOCKMODE);
        return pg_sys::Datum::from(0);
    }
    if query == Query::Signature || threshold_arg.is_some() {
        crate::lsh::refuse_for_simhash(&att, relid);
    }
    let by_text = query == Query::Text;
    let k = if arg_null(fcinfo, 2) {
        att.max_distance
    } else {
        arg(fcinfo, 2).value() as i32
    };
    match query_fingerprint(fcinfo, &att, by_text) {
        // Checks k (22023) even when there is no fingerprint to look up; plan_for checks it otherwise.
        None => drop(ProbePlan::new(0, k, att.nbands).or_raise()),
        Some(query) => match crate::citus::distribution(relid) {
            Some(dist) => {
                refuse_unless_hash_distributed(heap, &dist);
                sql_near_duplicates(fcinfo, rsinfo, heap, &att, query, k)
            }
            // The band indexes are read directly, where no policy applies: under row-level security
            // the lookup runs as the query of simhash_near_duplicates_sql(), which the executor
            // filters with the caller's policies.
            None if crate::privileges::row_security_applies(relid) => {
                sql_near_duplicates(fcinfo, rsinfo, heap, &att, query, k)
            }
            None => {
                for (distance, item) in local_near_duplicates(heap, &att, query, k) {
                    put_row(
                        rsinfo,
                        [item, pg_sys::Datum::from(distance as i32), pg_sys::Datum::from(0)],
                        [false, false, true],
                    );
                }
            }
        },
    }
    pg_sys::relation_close(heap, pg_sys::NoLock as pg_sys::LOCKMODE);
    pg_sys::Datum::from(0)
}

/// The rows of `heap` (of each of its partitions) within `k` of `query`, as rows of `heap`'s type
/// with their distances: nearest first, then partition by partition in physical order.
unsafe fn local_near_duplicates(
    heap: pg_sys::Relation,
    att: &Attachment,
    query: u64,
    k: i32,
) -> Vec<(u32, pg_sys::Datum)> {
    let snapshot = pg_sys::GetActiveSnapshot();
    let mut found: Vec<(u32, usize, pg_sys::ItemPointerData, pg_sys::Datum)> = Vec::new();
    let tupdesc = (*heap).rd_att;
    // A partitioned table is searched partition by partition; a partition, on its own.
    let tables = crate::partitions::leaf_tables(heap);
    if tables.is_empty() {
        ProbePlan::new(query, k, att.nbands).or_raise();
    }
    for (order, &table) in tables.iter().enumerate() {
        let open = crate::partitions::OpenTable::open(heap, table);
        let rel = open.rel;
        // A partition's rows, in the row type of the table asked about (its columns may be in
        // another order); NULL when they already are.
        let map = if rel == heap {
            std::ptr::null_mut()
        } else {
            pg_sys::convert_tuples_by_name((*rel).rd_att, tupdesc)
        };
        let search = TableSearch {
            rel,
            att,
            fp_attnum: fingerprint_attnum(rel, att),
            query,
            k,
            snapshot,
            exclude: None,
            lockmode: pg_sys::AccessShareLock as pg_sys::LOCKMODE,
        };
        search_table(&search, &mut |distance, slot| {
            let mut should_free = false;
            let tuple = pg_sys::ExecFetchSlotHeapTuple(slot, false, &mut should_free);
            let row = if map.is_null() {
                tuple
            } else {
                pg_sys::execute_attr_map_tuple(tuple, map)
            };
            let item = pg_sys::heap_copy_tuple_as_datum(row, tupdesc);
            if !map.is_null() {
                pg_sys::heap_freetuple(row);
            }
            if should_free {
                pg_sys::heap_freetuple(tuple);
            }
            found.push((distance, order, (*slot).tts_tid, item));
        });
        if !map.is_null() {
            pg_sys::free_conversion_map(map);
        }
    }
    found.sort_by_key(|(d, order, tid, _)| {
        (
            *d,
            *order,
            (u32::from(tid.ip_blkid.bi_hi) << 16) | u32::from(tid.ip_blkid.bi_lo),
            tid.ip_posid,
        )
    });
    found.into_iter().map(|(d, _, _, item)| (d, item)).collect()
}

/// What the registry check of a Citus table found in one shard (`simhash_internal.probe_shard`).
pub enum ShardProbe {
    /// The shard was searched: the distance of its nearest row within k, if any.
    Searched(Option<u32>),
    /// Not searched here (row-level security applies to the caller, or the column has a MinHash
    /// attachment): the coordinator searches the shards with a query.
    Declined,
}

/// Searches shard `relid` of a Citus table (its own attachment of `text_column`) for the row
/// nearest to `query` within `k`, as a lookup on one node does, with the statement's snapshot and
/// the caller's privileges.
///
/// # Safety
/// Call where a query may run.
pub unsafe fn probe_shard(relid: pg_sys::Oid, text_column: &str, query: u64, k: i32) -> ShardProbe {
    let heap = open_table(relid);
    crate::privileges::require(relid, pg_sys::ACL_SELECT);
    if crate::privileges::row_security_applies(relid) {
        pg_sys::relation_close(heap, pg_sys::NoLock as pg_sys::LOCKMODE);
        return ShardProbe::Declined;
    }
    let att = crate::attachment::find(heap, Some(text_column), crate::catalog::extension_namespace());
    if att.minhash().is_some() {
        // A registry is SimHash's alone (attach refuses MinHash): nothing to say about a signature.
        pg_sys::relation_close(heap, pg_sys::NoLock as pg_sys::LOCKMODE);
        return ShardProbe::Declined;
    }
    // Four bands of many probe values each, in a transaction of its own: the leaf lists at once.
    // Nearest first.
    let nearest = crate::storage::leafmap::eager(|| local_near_duplicates(heap, &att, query, k))
        .first()
        .map(|(d, _)| *d);
    pg_sys::relation_close(heap, pg_sys::NoLock as pg_sys::LOCKMODE);
    ShardProbe::Searched(nearest)
}

/// Refuses a lookup of a Citus reference or local table (0A000).
unsafe fn refuse_unless_hash_distributed(heap: pg_sys::Relation, dist: &crate::citus::Distribution) {
    if !dist.hash_distributed() {
        raise(EncodedError {
            code: PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
            message: format!(
                "simhash_near_duplicates: \"{}\" is a Citus reference or local table",
                relation_name(heap)
            ),
            detail: None,
            hint: Some("simhash_attach() supports hash-distributed tables.".into()),
        });
    }
}

/// The near-duplicates of `query` found by the query of `simhash_near_duplicates_sql()`, run as the
/// caller: for a Citus table, whose rows are on the shards (Citus runs it on every shard, where the
/// band indexes serve the probes), and for a table under row-level security, whose policies the
/// executor applies. Nearest first and then in key order.
unsafe fn sql_near_duplicates(
    fcinfo: pg_sys::FunctionCallInfo,
    rsinfo: *mut pg_sys::ReturnSetInfo,
    heap: pg_sys::Relation,
    att: &Attachment,
    query: u64,
    k: i32,
) {
    ProbePlan::new(query, k, att.nbands).or_raise();
    let schema = crate::catalog::extension_schema(fcinfo);
    let relid = (*heap).rd_id;
    let (key, lookup) = crate::spi::connected(|| {
        let key = RowKey::of(relid, false);
        let lookup = crate::spi::one_utf8(
            &format!(
                // Every argument as its declared type, the default one too: a function of that name
                // another role made in the extension's schema with a closer signature never runs.
                "SELECT pg_catalog.convert_to({schema}.simhash_near_duplicates_sql($1::pg_catalog.regclass, \
                 ({})::pg_catalog.int8, {k}::pg_catalog.int4, {}::pg_catalog.name, NULL::pg_catalog.text), 'UTF8')",
                query as i64,
                pgrx::spi::quote_literal(&att.text_column)
            ),
            &[crate::spi::Arg::Oid(relid)],
        );
        (key, lookup.unwrap_or_default())
    });
    // Ties in key order (a table without a key has no order among its shards).
    let order: String = match key {
        RowKey::Columns(columns) => columns.iter().map(|c| format!(", (x.item).{c}")).collect(),
        RowKey::Ctid { .. } => String::new(),
    };
    let sql = format!("SELECT x.item, x.distance FROM ({lookup}) x ORDER BY x.distance{order}");
    // The query names operators without their schema: it runs where nothing but pg_catalog's are found.
    crate::privileges::with_safe_search_path(|| {
        crate::spi::for_each_row(&sql, &[], "the lookup by query", &mut |row, desc| {
            let mut values = [pg_sys::Datum::from(0); 3];
            let mut nulls = [false, false, true];
            for (i, (value, null)) in values.iter_mut().zip(nulls.iter_mut()).take(2).enumerate() {
                *value = pg_sys::SPI_getbinval(row, desc, i as i32 + 1, null);
            }
            put_row(rsinfo, values, nulls);
        })
    });
}

crate::errors::c_function!(
    /// `simhash_near_duplicates(anyelement, bigint, int, name)`.
    pg_finfo_simhash_near_duplicates_fingerprint, simhash_near_duplicates_fingerprint => near_duplicates_by_fingerprint
);

crate::errors::c_function!(
    /// `simhash_near_duplicates(anyelement, text, int, name)`.
    pg_finfo_simhash_near_duplicates_text, simhash_near_duplicates_text => near_duplicates_by_text
);

crate::errors::c_function!(
    /// `simhash_near_duplicates(anyelement, bytea, float8, name)`.
    pg_finfo_simhash_near_duplicates_signature, simhash_near_duplicates_signature => near_duplicates_by_signature
);

unsafe fn near_duplicates_by_fingerprint(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    near_duplicates(fcinfo, Query::Fingerprint)
}

unsafe fn near_duplicates_by_text(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    near_duplicates(fcinfo, Query::Text)
}

unsafe fn near_duplicates_by_signature(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    near_duplicates(fcinfo, Query::Signature)
}

/// The probe plan of a lookup, as rows: which values of which band `simhash_near_duplicates` looks
/// up for `fingerprint` within `max_distance` on `nbands` bands (no rows: it scans the table).
#[pg_extern(immutable, strict, parallel_safe)]
fn simhash_probes(
    fingerprint: i64,
    max_distance: i32,
    nbands: default!(i32, 4),
) -> TableIterator<
    'static,
    (
        name!(band, i32),
        name!(radius, i32),
        name!(probe_values, Vec<i32>),
    ),
> {
    let plan = ProbePlan::new(fingerprint as u64, max_distance, nbands).or_raise();
    TableIterator::new(
        plan.probes
            .unwrap_or_default()
            .into_iter()
            .filter(|p| p.radius >= 0)
            .map(|p| (p.band as i32, p.radius, p.values)),
    )
}

extension_sql_file!(
    "../sql/src/near_duplicates.sql",
    name = "simhash_near_duplicates",
    requires = ["simhash_tables"]
);

/// What one lookup costs: band values probed, index entries read, heap tuples fetched, rows found.
/// For tuning `max_distance` and for the benchmarks; the rows are those `simhash_near_duplicates()`
/// returns.
#[pg_extern(stable, parallel_safe)]
fn simhash_lookup_cost(
    table_name: Option<crate::catalog::RegClass>,
    fingerprint: i64,
    max_distance: default!(Option<i32>, "NULL"),
    text_column: default!(Option<&str>, "NULL"),
    fcinfo: pg_sys::FunctionCallInfo,
) -> TableIterator<
    'static,
    (
        name!(probes, i64),
        name!(candidates, i64),
        name!(heap_fetches, i64),
        name!(matches, i64),
    ),
> {
    // A NULL table has no lookup to cost (as a strict function, no row).
    let Some(table_name) = table_name else {
        return TableIterator::new(Vec::new());
    };
    unsafe {
        let heap = pg_sys::relation_open(table_name.0, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
        let att =
            crate::errors::in_extern(|| crate::attachment::find(heap, text_column, own_namespace(fcinfo)));
        if att.minhash().is_some() {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
                format!(
                    "simhash_lookup_cost: column \"{}\" of \"{}\" is attached with method 'minhash'",
                    att.text_column,
                    relation_name(heap)
                ),
                "A MinHash lookup is one query over the GIN index of its band keys: see it with EXPLAIN ANALYZE."
            );
        }
        // As `SELECT count(*) FROM table WHERE <fingerprint within k>`: SELECT on the fingerprint
        // column. Counted from the band indexes, where no policy applies: refused under row-level
        // security, whose policies could hide some of the rows counted.
        let fp_attnum = crate::errors::in_extern(|| fingerprint_attnum(heap, &att));
        crate::privileges::require_select(table_name.0, crate::privileges::Columns::Some(&[fp_attnum]));
        if crate::privileges::row_security_applies(table_name.0) {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
                format!(
                    "simhash_lookup_cost: row-level security applies to \"{}\", and the cost is counted from its band indexes",
                    relation_name(heap)
                ),
                "Run EXPLAIN ANALYZE on the query of simhash_near_duplicates_sql(), which applies the policies."
            );
        }
        if crate::citus::distribution(table_name.0).is_some() {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
                format!(
                    "simhash_lookup_cost: \"{}\" is a Citus table, whose rows are on its shards",
                    relation_name(heap)
                ),
                "Run EXPLAIN ANALYZE on the query of simhash_near_duplicates_sql() to see the cost on each shard."
            );
        }

        let snapshot = pg_sys::GetActiveSnapshot();
        let k = max_distance.unwrap_or(att.max_distance);
        let mut matches = 0i64;
        let mut counts = Counts::default();
        let tables = crate::partitions::leaf_tables(heap);
        if tables.is_empty() {
            ProbePlan::new(fingerprint as u64, k, att.nbands).or_raise();
        }
        // Every partition of a partitioned table is searched: the costs add up.
        for table in tables {
            let open = crate::partitions::OpenTable::open(heap, table);
            let fp_attnum = fingerprint_attnum(open.rel, &att);
            let search = TableSearch {
                rel: open.rel,
                att: &att,
                fp_attnum,
                query: fingerprint as u64,
                k,
                snapshot,
                exclude: None,
                lockmode: pg_sys::AccessShareLock as pg_sys::LOCKMODE,
            };
            let c = search_table(&search, &mut |_, _| matches += 1);
            counts.probes += c.probes;
            counts.candidates += c.candidates;
            counts.heap_fetches += c.heap_fetches;
        }
        pg_sys::relation_close(heap, pg_sys::NoLock as pg_sys::LOCKMODE);
        TableIterator::once((
            counts.probes as i64,
            counts.candidates as i64,
            counts.heap_fetches as i64,
            matches,
        ))
    }
}
