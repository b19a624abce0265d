//! Equal-key reads of a band index without a descent from its root per probed value.
//!
//! A lookup at distance 7 probes 68 band values, and the duplicate trigger does one per written
//! row: through `index_rescan` each probe descends the B-tree from its root (three pages at a
//! million rows, a binary search on each), which made the trigger cost three times a write without
//! it. Here a backend keeps, per band index, the list of its leaf pages with the lowest key each
//! may hold (read from the level above the leaves), and a probe locks and reads only its leaf.
//! This module reads the lists and the entries; pages are read through [`super::btree_page`], the
//! first entry of a value on a page is found by [`super::item_search`], and the lists are kept in
//! [`super::leaf_cache`].
//!
//! Why a list read earlier stays right (PostgreSQL's B-tree follows Lehman and Yao; docs/ARCHITECTURE.md
//! §5.2–§5.4 describe the reader, this argument and when index scans are used instead):
//! - A split moves the upper half of a page to a new page on its right, linked from it, so keys
//!   never move left: starting from the listed page and following right-links while the key is
//!   above the page's high key reaches every entry, as `_bt_moveright` does for a stale parent.
//! - A page is deleted only when empty, and its key range goes to its right sibling; a deleted or
//!   half-dead page is skipped to the right, as a scan does.
//! - A deleted page is reused only after every transaction that could still hold a pointer to it
//!   has ended (its `safexid` has passed the global xmin horizon). While this backend advertises
//!   the xmin it advertised when the list was read, that horizon stays at or below it, so no page
//!   deleted since can have been reused. Under a later xmin (the next transactions: a single-row
//!   write or lookup each) the list is kept but stale: a page taken from it is trusted only if it is
//!   a live leaf from which no entry of the value can lie to the left (nothing left of it, or its
//!   high key or its first item below the value), which holds wherever in the index a reused page
//!   ended up, since the leaves are one chain in key order; otherwise the list is read again.
//!   Pages reached by right-links from a page read now are as safe as a scan's.
//! - An index rebuilt (REINDEX, TRUNCATE, VACUUM FULL) sends a relcache invalidation, which drops
//!   the list; a new relfilenode drops it too.
//!
//! Anything unexpected (a page that is not a B-tree leaf where one must be, a layout other than
//! `(integer) INCLUDE (bigint, ...)`, an old B-tree version, posting lists) makes the caller use the
//! index scan instead, for the rest of the list's life. So do serializable transactions (their
//! index reads must take predicate locks), hot standbys (their xmin does not hold back the
//! primary's recycling), temporary tables, and `simhash.leaf_map = off`, which tests use to
//! compare both paths.

use std::cell::Cell;
use std::collections::HashMap;

use pgrx::guc::{GucContext, GucFlags, GucRegistry, GucSetting};
use pgrx::prelude::*;

use super::btree_page::{
    first_data_key, Page, UnlockedPage, BTP_DELETED, BTP_HALF_DEAD, BTP_LEAF, BTREE_METAPAGE, BTREE_SPECIAL,
    BTREE_VERSION, MINUS_INFINITY, NULL_KEY, P_FIRSTKEY, P_HIKEY, P_NONE,
};
use super::item_search::{first_not_below, prefetch_line, round_pivots};
use super::leaf_cache::{self, LeafList, Listed, Seen};
use crate::compat;

/// Probe batches served from leaf lists in this backend (tests show the lists are used).
pub static SERVED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
/// Lists read again because a leaf of a list kept from an older xmin was not where it said (tests).
pub static STALE_REREADS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// See [`leaf_cache::scramble`] (tests only).
#[cfg(any(test, feature = "pg_test"))]
pub fn scramble_list(relid: pg_sys::Oid, shift: usize) -> usize {
    leaf_cache::scramble(relid, shift)
}

/// `simhash.leaf_map`: read band indexes through the backend's leaf-page lists.
pub static LEAF_MAP: GucSetting<bool> = GucSetting::<bool>::new(true);

pub fn register_settings() {
    GucRegistry::define_bool_guc(
        c"simhash.leaf_map",
        c"Reads band indexes from a per-backend list of their leaf pages instead of descending from the root per probe.",
        c"Results never depend on it; off uses plain index scans (for comparison).",
        &LEAF_MAP,
        GucContext::Userset,
        GucFlags::default(),
    );
}

/// Probes of one band index through plain index scans before its list is read: a single-row
/// write or lookup does not pay for reading the level above the leaves.
const PROBES_BEFORE_MAP: u32 = 96;

/// The largest band index whose list [`eager`] reads at once: a list holds an entry per leaf, read
/// from about one page per 400 leaves, so its cost grows with the index while a search's 70
/// descents do not. Measured: on band indexes of 830 blocks (a shard of 125,000 rows), inserts
/// through a registry view took 0.8-0.9 times as long with lists read at once; on 6,190 blocks
/// (1,250,000 rows), a lookup in a transaction of its own took 0.65 times as long.
const EAGER_MAX_BLOCKS: u32 = 8192;
/// Right-moves in the probes of one band (pages the list does not know yet, or knows under a lower
/// key) after which the list is read again: the index has grown since it was read.
const MOVES_BEFORE_REREAD: u32 = 2;

/// One index entry with the probed key: the fingerprint it includes and the heap row it points to.
pub type Entry = (u64, pg_sys::ItemPointerData);

thread_local! {
    /// Set while a search that probes every band of an index at once runs ([`eager`]).
    static EAGER: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with leaf lists read at the first probe of an index of at most [`EAGER_MAX_BLOCKS`]
/// blocks, without the warm-up of plain probes: for a search that probes every band with many
/// values in a transaction of its own (the registry's search of a Citus shard,
/// `simhash_internal.probe_shard`), where reading the level above the leaves of a small index costs
/// less than the descents it saves. Results are the same either way.
pub fn eager<T>(f: impl FnOnce() -> T) -> T {
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            EAGER.with(|e| e.set(self.0));
        }
    }
    let _reset = Reset(EAGER.with(|e| e.replace(true)));
    f()
}

/// Whether the index has the layout the band indexes of `simhash_attach()` have: one ascending
/// integer key (integer_ops, nulls last) and an included bigint fingerprint, in a B-tree of
/// version 4 without deduplication, in shared buffers (not temporary). Columns included after the
/// fingerprint (a registry attachment's distribution column) are not read: they come after it in
/// an entry, and a null among them leaves the key and fingerprint where they are (the null bitmap
/// of an index entry has room for every column).
///
/// # Safety
/// `index` must be an open and locked index relation.
unsafe fn layout_ok(index: pg_sys::Relation) -> bool {
    let form = &*(*index).rd_index;
    let desc = (*index).rd_att;
    if (*(*index).rd_rel).relam != pg_sys::BTREE_AM_OID
        || (*(*index).rd_rel).relpersistence as u8 == pg_sys::RELPERSISTENCE_TEMP
        || form.indnkeyatts != 1
        || form.indnatts < 2
        || (*desc).natts != i32::from(form.indnatts)
        || *(*index).rd_opfamily != pg_sys::INTEGER_BTREE_FAM_OID
        || *(*index).rd_indoption != 0
    {
        return false;
    }
    let attr = |i| compat::tuple_desc_attr(desc, i).atttypid;
    if attr(0) != pg_sys::INT4OID || attr(1) != pg_sys::INT8OID {
        return false;
    }
    Page::read(index, BTREE_METAPAGE)
        .meta()
        .is_some_and(|meta| meta.btm_version == BTREE_VERSION && !meta.btm_allequalimage)
}

/// Whether changes to the index are WAL-logged, so that each sets the LSN of the page it changes
/// (PostgreSQL's `RelationNeedsWAL`).
///
/// # Safety
/// `index` must be an open relation.
unsafe fn needs_wal(index: pg_sys::Relation) -> bool {
    (*(*index).rd_rel).relpersistence as u8 == pg_sys::RELPERSISTENCE_PERMANENT
        && (pg_sys::wal_level >= pg_sys::WalLevel::WAL_LEVEL_REPLICA as i32
            // Created or given a new file in an earlier transaction.
            || !compat::new_in_this_transaction(index))
}

/// Reads the leaf list from the level above the leaves; None if the index is empty or a page is
/// not what it must be.
///
/// # Safety
/// `index` must be an open and locked index for which [`layout_ok`] held.
unsafe fn read_leaves(index: pg_sys::Relation) -> Option<Vec<Listed>> {
    let meta = Page::read(index, BTREE_METAPAGE).meta()?;
    if meta.btm_root == P_NONE {
        return None;
    }
    if meta.btm_level == 0 {
        return Some(vec![Listed::new(MINUS_INFINITY, meta.btm_root)]);
    }
    // Down the leftmost downlinks to level 1 (a root split since the metapage was read leaves the
    // old root leftmost on its level, so this still reaches the leftmost page).
    let mut block = meta.btm_root;
    let mut level = meta.btm_level;
    while level > 1 {
        let page = Page::read(index, block);
        let opaque = page.opaque()?;
        if opaque.btpo_level != level || opaque.btpo_flags & (BTP_LEAF | BTP_DELETED | BTP_HALF_DEAD) != 0 {
            return None;
        }
        block = page.tuple(first_data_key(&opaque))?.downlink();
        level -= 1;
    }
    // Along level 1 by right-links: each item's key is the lowest key of its child; the first
    // item's (minus infinity) is the page's own lowest key, its left sibling's high key.
    let mut leaves = Vec::new();
    let mut low = MINUS_INFINITY;
    loop {
        pg_sys::check_for_interrupts!();
        let page = Page::read(index, block);
        let opaque = page.opaque()?;
        if opaque.btpo_level != 1 || opaque.btpo_flags & BTP_LEAF != 0 {
            return None;
        }
        let rightmost = opaque.btpo_next == P_NONE;
        if opaque.btpo_flags & (BTP_DELETED | BTP_HALF_DEAD) == 0 {
            let first = first_data_key(&opaque);
            for offset in first..=page.max_offset() {
                let tuple = page.tuple(offset)?;
                let key = if offset == first { low } else { tuple.key(true)? };
                leaves.push(Listed::new(key, tuple.downlink()));
            }
            if !rightmost {
                low = page.tuple(P_HIKEY)?.key(true)?;
            }
        }
        if rightmost {
            break;
        }
        block = opaque.btpo_next;
    }
    (!leaves.is_empty()).then_some(leaves)
}

/// A locked leaf page with the bounds of the keys it can hold: above `low`, at most `high` (None
/// on the rightmost page).
struct Leaf {
    page: Page,
    low: i64,
    high: Option<i64>,
    next: u32,
    /// Where the search for a larger value can start: every item before it has a key at most
    /// `searched` (which is below any value still to come).
    start: u16,
    searched: i64,
    /// The upper bound on keys that the interpolation uses: the high key, or the list's bound for
    /// a leaf reached straight from the list (what [`prefetch`] assumed).
    bound: i64,
}

impl Leaf {
    fn holds(&self, value: i64) -> bool {
        self.low < value && self.high.is_none_or(|high| value <= high)
    }
}

/// The leaf that holds the first entries of `value`: from `block`, whose keys are above `low`,
/// right while a page is deleted or its high key is below the value. `listed` is the list's entry
/// when `block` comes straight from the list: its buffer is tried first, and what the page said
/// when last read stands while its LSN is the same (`logged` indexes only). None if a page is not
/// what it must be; also counts the pages moved over. With `walk.stale` (a list read under an older
/// xmin), `block` is first shown to be a leaf where the value's entries cannot start further left
/// ([`starts_before`]); if it is not, `walk.stale` says so and None is returned.
///
/// # Safety
/// `index` must be an open and locked index for which [`layout_ok`] held, read under an MVCC
/// snapshot; `block` one of its pages, from a list read while this backend advertised the xmin it
/// advertises now (the module's argument) or checked (`walk.stale`); `listed`, if given, the
/// list's entry for `block`.
unsafe fn find_leaf(
    index: pg_sys::Relation,
    mut block: pg_sys::BlockNumber,
    mut listed: Option<&mut Listed>,
    logged: bool,
    mut low: i64,
    value: i64,
    walk: &mut Walk,
) -> Option<Leaf> {
    loop {
        let page = match listed.as_deref_mut() {
            Some(entry) => Page::read_recent(index, block, &mut entry.recent),
            None => Page::read(index, block),
        };
        if listed.is_some() && walk.stale == Some(false) && !starts_before(&page, value) {
            walk.stale = Some(true);
            return None;
        }
        match links(&page, listed.as_deref_mut(), logged)? {
            Links::Deleted { next } => block = next,
            Links::Leaf {
                next,
                high: Some(high),
            } if high < value => {
                low = high;
                block = next;
            }
            Links::Leaf { next, high } => {
                let start = if high.is_none() { P_HIKEY } else { P_FIRSTKEY };
                return Some(Leaf {
                    page,
                    low,
                    high,
                    next,
                    start,
                    searched: low,
                    bound: high.unwrap_or(NULL_KEY),
                });
            }
        }
        walk.moves += 1;
        listed = None;
        drop(page); // one page locked at a time, as a scan moving right
    }
}

/// Whether the entries of `value` start on `page` or to its right, whatever happened to the page
/// since a list named it (split, emptied, deleted, reused anywhere in the index): it is a live leaf
/// and either nothing lies left of it, or its high key is below the value, or its first item's key
/// is. The leaves form one chain in key order, so no entry of the value lies left of such a page.
fn starts_before(page: &Page, value: i64) -> bool {
    let Some(opaque) = page.opaque() else { return false };
    if opaque.btpo_flags & (BTP_DELETED | BTP_HALF_DEAD) != 0
        || opaque.btpo_flags & BTP_LEAF == 0
        || opaque.btpo_level != 0
    {
        return false;
    }
    if opaque.btpo_prev == P_NONE {
        return true;
    }
    if opaque.btpo_next != P_NONE
        && page
            .tuple(P_HIKEY)
            .and_then(|t| t.key(true))
            .is_some_and(|high| high < value)
    {
        return true;
    }
    let first = first_data_key(&opaque);
    first <= page.max_offset()
        && page
            .tuple(first)
            .and_then(|t| t.key(false))
            .is_some_and(|key| key < value)
}

/// What a [`find_leaf`] did: the pages it moved right over, and, for a list read under an older
/// xmin (`Some`), whether the page it started from was not shown to hold the value's first entries
/// (`Some(true)`: the list must be read again).
#[derive(Default)]
struct Walk {
    moves: u32,
    stale: Option<bool>,
}

/// What [`find_leaf`] needs of a page to know whether to move right.
enum Links {
    /// A deleted or half-dead page that is not rightmost: skipped to its right sibling, which took
    /// over its key range.
    Deleted { next: pg_sys::BlockNumber },
    /// A leaf page: its right-link and high key (None on the rightmost page).
    Leaf {
        next: pg_sys::BlockNumber,
        high: Option<i64>,
    },
}

/// The [`Links`] of `page`, a page of an index that is WAL-logged if `logged`: what the list's
/// entry `listed` (given when the page comes straight from the list) saw of it at the same LSN,
/// else read from the page, and then noted in `listed`. None if the page is not a leaf, or is a
/// deleted or half-dead rightmost page.
fn links(page: &Page, listed: Option<&mut Listed>, logged: bool) -> Option<Links> {
    // The LSN only matters for a page straight from the list of a WAL-logged index.
    let lsn = (logged && listed.is_some()).then(|| page.lsn());
    let known = listed
        .as_deref()
        .and_then(|entry| entry.seen)
        .filter(|seen| Some(seen.lsn) == lsn);
    if let Some(seen) = known {
        return Some(Links::Leaf {
            next: seen.next,
            high: seen.high,
        });
    }
    let opaque = page.opaque()?;
    let rightmost = opaque.btpo_next == P_NONE;
    if opaque.btpo_flags & (BTP_DELETED | BTP_HALF_DEAD) != 0 {
        if rightmost {
            return None;
        }
        return Some(Links::Deleted {
            next: opaque.btpo_next,
        });
    }
    if opaque.btpo_flags & BTP_LEAF == 0 || opaque.btpo_level != 0 {
        return None;
    }
    let high = match rightmost {
        true => None,
        false => Some(page.tuple(P_HIKEY)?.key(true)?),
    };
    if let (Some(entry), Some(lsn)) = (listed, lsn) {
        entry.seen = Some(Seen {
            lsn,
            next: opaque.btpo_next,
            high,
        });
    }
    Some(Links::Leaf {
        next: opaque.btpo_next,
        high,
    })
}

/// Asks the CPU to bring in what the probes of `values` will read first, for all of them at once:
/// each probe reads a random page of shared buffers, and its reads depend on each other (the
/// buffer header, the page header with the first line pointers, the page trailer, the high key,
/// the line pointer and the tuple where the search starts), so one probe after the other waits for
/// memory at every step; requested together, the waits overlap. Only the buffer each leaf was last
/// read from is known here, and pages are read without their lock, so what is read may be stale or
/// torn: it only chooses addresses to prefetch inside those pages, and the probe itself reads the
/// page under its lock.
///
/// # Safety
/// Every nonzero `recent` in `leaves` must be a buffer number [`Page::read_recent`] returned in
/// this backend, so a shared buffer (see [`UnlockedPage::of`]).
unsafe fn prefetch(leaves: &[Listed], values: &[i32], at: &mut [usize; PREFETCHED]) {
    // (page, value, the bounds of its list entry, the right-link if known)
    let mut pages = [(UnlockedPage(std::ptr::null()), 0i64, 0i64, 0i64, None); PREFETCHED];
    let mut n = 0;
    for (&value, at) in values.iter().zip(at.iter_mut()) {
        let value = i64::from(value);
        *at = listed_leaf(leaves, value);
        let entry = &leaves[*at];
        if entry.recent <= 0 {
            continue;
        }
        let page = UnlockedPage::of(entry.recent);
        prefetch_line(pg_sys::BufferDescriptors.add(entry.recent as usize - 1).cast());
        prefetch_line(page.0);
        if entry.seen.is_none() {
            prefetch_line(page.0.add(BTREE_SPECIAL));
        }
        pages[n] = (
            page,
            value,
            entry.low,
            list_high(leaves, *at),
            entry.seen.map(|s| s.next),
        );
        n += 1;
    }
    // The page header (and trailer) say where the items are: the first round's pivots follow.
    let mut pivots = [[0i64; 3]; PREFETCHED];
    for (&(page, value, low, high, next), pivots) in pages[..n].iter().zip(pivots.iter_mut()) {
        let next = next.unwrap_or_else(|| page.next());
        let first = i64::from(if next == P_NONE { P_HIKEY } else { P_FIRSTKEY });
        let last = page.max_offset();
        if last < first {
            continue;
        }
        *pivots = round_pivots(first - 1, last + 1, low, high, value);
        if first == i64::from(P_FIRSTKEY) {
            prefetch_line(page.item_address(i64::from(P_HIKEY)));
        }
        for &p in pivots.iter() {
            prefetch_line(page.line_pointer_address(p));
        }
    }
    for (&(page, ..), pivots) in pages[..n].iter().zip(&pivots) {
        for &p in pivots {
            if p > 0 {
                prefetch_line(page.item_address(p));
            }
        }
    }
}

/// Appends the entries whose key is one of `values` (ascending, distinct), at most `limit` in all,
/// each value's search starting from its listed leaf unless the page read for the previous value
/// holds it too (neighbouring probes often share a leaf). None if a page is not what it must be;
/// otherwise how many pages it moved right over to reach the values.
///
/// # Safety
/// As [`find_leaf`], for `index` and the list `leaves` read from it under this backend's xmin.
unsafe fn read_equal(
    index: pg_sys::Relation,
    leaves: &mut [Listed],
    logged: bool,
    values: &[i32],
    limit: usize,
    out: &mut Vec<Entry>,
    stale: &mut Option<bool>,
) -> Option<u32> {
    let mut listed = [0usize; PREFETCHED];
    prefetch(leaves, values, &mut listed);
    let mut all_moves = 0;
    let mut current: Option<Leaf> = None;
    for (i, &value) in values.iter().enumerate() {
        let value = i64::from(value);
        if out.len() >= limit {
            break;
        }
        let leaf = match current.take() {
            Some(leaf) if leaf.holds(value) => leaf,
            held => {
                drop(held);
                let at = match listed.get(i) {
                    Some(&at) => at,
                    None => listed_leaf(leaves, value),
                };
                let (low, block) = (leaves[at].low, leaves[at].block);
                let mut walk = Walk {
                    moves: 0,
                    stale: stale.map(|_| false),
                };
                let found = find_leaf(index, block, Some(&mut leaves[at]), logged, low, value, &mut walk);
                if walk.stale == Some(true) {
                    *stale = Some(true);
                }
                let mut leaf = found?;
                all_moves += walk.moves;
                if walk.moves == 0 {
                    leaf.bound = list_high(leaves, at);
                }
                leaf
            }
        };
        current = Some(read_value(index, leaf, logged, value, limit, out)?);
    }
    Some(all_moves)
}

/// Appends the entries whose key is `value` until `out` holds `limit`, from `leaf` (which holds
/// the value) on, into its right siblings while their high key is the value, and returns the
/// leaf it ended on, where the search for a larger value can go on. None if a page is not what it
/// must be.
///
/// # Safety
/// As [`find_leaf`], for `index` and `leaf`, a page of it.
unsafe fn read_value(
    index: pg_sys::Relation,
    mut leaf: Leaf,
    logged: bool,
    value: i64,
    limit: usize,
    out: &mut Vec<Entry>,
) -> Option<Leaf> {
    loop {
        let last = leaf.page.max_offset();
        let mut offset = first_not_below(&leaf.page, leaf.start, last, value, leaf.searched, leaf.bound)?;
        let mut ended = false;
        while offset <= last && out.len() < limit {
            // Equal keys often run on: ask for the next entries while this one is read.
            for ahead in offset + 1..=(offset + 2).min(last) {
                prefetch_line(leaf.page.tuple(ahead)?.address());
            }
            let tuple = leaf.page.tuple(offset)?;
            if tuple.is_posting() {
                return None; // deduplication is off for INCLUDE indexes (layout_ok checks it)
            }
            if tuple.key(false)? != value {
                ended = true;
                break;
            }
            if let Some(fingerprint) = tuple.fingerprint()? {
                out.push((fingerprint, tuple.heap_tid()));
            }
            offset += 1;
        }
        leaf.start = offset;
        leaf.searched = value;
        // Entries equal to the value go on in the right sibling only if the high key equals it.
        if ended || out.len() >= limit || leaf.high != Some(value) {
            return Some(leaf);
        }
        let next = leaf.next;
        drop(leaf);
        leaf = find_leaf(index, next, None, logged, value - 1, value, &mut Walk::default())?;
    }
}

/// How many of a band's values [`prefetch`] looks ahead for.
const PREFETCHED: usize = 64;

/// The list entry where entries equal to `value` start: the last leaf whose lowest key is below the
/// value. They cannot lie further left, since a page's lowest key is at most what the list says.
fn listed_leaf(leaves: &[Listed], value: i64) -> usize {
    leaves.partition_point(|l| l.low < value).saturating_sub(1)
}

/// The upper bound a list gives for the keys of its entry `at`: the next entry's lowest key.
fn list_high(leaves: &[Listed], at: usize) -> i64 {
    leaves.get(at + 1).map_or(NULL_KEY, |l| l.low)
}

/// Appends to `out` the entries of `index` whose key is one of `values` (ascending, distinct; at
/// most `limit` entries), and returns
/// true; or returns false without touching `out` when the caller must use an index scan.
///
/// # Safety
/// `index` must be open and locked; an MVCC snapshot must be active or registered.
pub unsafe fn equal_entries(
    index: pg_sys::Relation,
    values: &[i32],
    limit: usize,
    out: &mut Vec<Entry>,
) -> bool {
    if !LEAF_MAP.get()
        || pg_sys::XactIsoLevel == pg_sys::XACT_SERIALIZABLE as i32
        || pg_sys::RecoveryInProgress()
        || (*pg_sys::MyProc).xmin == pg_sys::InvalidTransactionId
    {
        return false;
    }
    let mut taken = leaf_cache::take(index);
    let list = &mut taken.list;
    let usable = *list.usable.get_or_insert_with(|| layout_ok(index));
    let logged = needs_wal(index);
    if list.logged != logged {
        // Pages changed without WAL (a relation created in this transaction at wal_level
        // minimal) keep their LSN: what was seen of them then cannot be trusted.
        list.logged = logged;
        list.leaves.iter_mut().for_each(|l| l.seen = None);
    }
    let mut served = false;
    if usable {
        let warming_up = list.leaves.is_empty()
            && list.plain_probes < PROBES_BEFORE_MAP
            && !(EAGER.with(Cell::get)
                && pg_sys::RelationGetNumberOfBlocksInFork(index, pg_sys::ForkNumber::MAIN_FORKNUM)
                    <= EAGER_MAX_BLOCKS);
        if warming_up {
            list.plain_probes += values.len() as u32;
        } else {
            if list.leaves.is_empty() || list.reread {
                list.reread = false;
                reread_leaves(index, list);
            }
            if !list.leaves.is_empty() {
                served = read_listed(index, list, values, limit, out);
            }
        }
    }
    taken.put_back();
    served
}

/// Reads the leaf list of `index` again into `list` (empty if it cannot be read). Leaves already
/// listed keep the buffer they were last read from and what was seen of them (the list is read
/// again as the index grows, and most of its leaves are the same).
///
/// # Safety
/// As [`read_leaves`].
unsafe fn reread_leaves(index: pg_sys::Relation, list: &mut LeafList) {
    let mut leaves = read_leaves(index).unwrap_or_default();
    list.xmin = (*pg_sys::MyProc).xmin;
    let known: HashMap<u32, Listed> = list
        .leaves
        .iter()
        .filter(|l| l.recent != 0)
        .map(|l| (l.block, *l))
        .collect();
    for leaf in &mut leaves {
        if let Some(old) = known.get(&leaf.block) {
            (leaf.recent, leaf.seen) = (old.recent, old.seen);
        }
    }
    list.leaves = leaves;
}

/// Appends to `out` the entries of `values` (at most `limit`) read through the leaves of `list`,
/// and returns true, noting whether the list must be read again; or, when a page was not what it
/// must be, returns false with `out` as it was, and marks the index as not readable here for the
/// rest of the list's life.
///
/// # Safety
/// As [`read_equal`], for `index` and `list`, its list.
unsafe fn read_listed(
    index: pg_sys::Relation,
    list: &mut LeafList,
    values: &[i32],
    limit: usize,
    out: &mut Vec<Entry>,
) -> bool {
    let start = out.len();
    let mut stale = list.stale().then_some(false);
    let read = loop {
        let read = read_equal(
            index,
            &mut list.leaves,
            list.logged,
            values,
            limit.saturating_add(start),
            out,
            &mut stale,
        );
        if stale != Some(true) {
            break read;
        }
        // A leaf of a list read under an older xmin is not where the list put it: read the list
        // again, under this xmin, and the values through it.
        out.truncate(start);
        reread_leaves(index, list);
        STALE_REREADS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if list.leaves.is_empty() {
            return false;
        }
        stale = None;
    };
    match read {
        Some(moves) => {
            list.reread = moves >= MOVES_BEFORE_REREAD;
            SERVED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            true
        }
        None => {
            out.truncate(start);
            list.usable = Some(false);
            list.leaves = Vec::new();
            false
        }
    }
}
