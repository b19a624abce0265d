//! Equal-key reads of a band index without a descent from its root per probed value.
//!
//! A lookup at distance 7 probes 68 band values, and the duplicate trigger does one per written
//! row: through `index_rescan` each probe descends the B-tree from its root (three pages at a
//! million rows, a binary search on each), which made the trigger cost three times a write without
//! it. Here a backend keeps, per band index, the list of its leaf pages with the lowest key each
//! may hold (read from the level above the leaves), and a probe locks and reads only its leaf.
//!
//! Why a list read earlier stays right (PostgreSQL's B-tree follows Lehman and Yao):
//! - A split moves the upper half of a page to a new page on its right, linked from it, so keys
//!   never move left: starting from the listed page and following right-links while the key is
//!   above the page's high key reaches every entry, as `_bt_moveright` does for a stale parent.
//! - A page is deleted only when empty, and its key range goes to its right sibling; a deleted or
//!   half-dead page is skipped to the right, as a scan does.
//! - A deleted page is reused only after every transaction that could still hold a pointer to it
//!   has ended (its `safexid` has passed the global xmin horizon). The list is used only while this
//!   backend advertises the same xmin it advertised when the list was read, which keeps that
//!   horizon at or below it, so no page deleted since can have been reused.
//! - An index rebuilt (REINDEX, TRUNCATE, VACUUM FULL) sends a relcache invalidation, which drops
//!   the list; a new relfilenode drops it too.
//!
//! Anything unexpected (a page that is not a B-tree leaf where one must be, a layout other than
//! `(integer) INCLUDE (bigint)`, an old B-tree version, posting lists) makes the caller use the
//! index scan instead, for the rest of the list's life. So do serializable transactions (their
//! index reads must take predicate locks), hot standbys (their xmin does not hold back the
//! primary's recycling), temporary tables, and `simhash.leaf_map = off`, which tests use to
//! compare both paths.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use pgrx::guc::{GucContext, GucFlags, GucRegistry, GucSetting};
use pgrx::prelude::*;

/// Probe batches served from leaf lists in this backend (tests show the lists are used).
pub static SERVED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

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
/// Right-moves in the probes of one band (pages the list does not know yet, or knows under a lower
/// key) after which the list is read again: the index has grown since it was read.
const MOVES_BEFORE_REREAD: u32 = 2;

const BTREE_MAGIC: u32 = 0x053162;
/// The first B-tree version with heap TIDs as key attribute (PostgreSQL 12).
const BTREE_HEAPKEYSPACE_VERSION: u32 = 4;
const BTP_LEAF: u16 = 1 << 0;
const BTP_DELETED: u16 = 1 << 2;
const BTP_HALF_DEAD: u16 = 1 << 4;
const P_NONE: u32 = 0;
const P_HIKEY: u16 = 1;
const INDEX_NULL_MASK: u16 = 0x8000;
const INDEX_ALT_TID_MASK: u16 = 0x2000;
const BT_OFFSET_MASK: u16 = 0x0FFF;
const PAGE_HEADER_SIZE: usize = 24;
const BLOCK_SIZE: usize = pg_sys::BLCKSZ as usize;

/// Keys as the B-tree orders them: a pivot's minus infinity, the integers, then NULL (the band
/// indexes are ascending, nulls last).
const MINUS_INFINITY: i64 = i64::MIN;
const NULL_KEY: i64 = i64::MAX;

/// `BTPageOpaqueData`, at the end of every B-tree page.
#[repr(C)]
#[derive(Clone, Copy)]
struct Opaque {
    prev: u32,
    next: u32,
    level: u32,
    flags: u16,
    cycle: u16,
}

/// The first fields of `BTMetaPageData`, after the page header of block 0.
#[repr(C)]
#[derive(Clone, Copy)]
struct Meta {
    magic: u32,
    version: u32,
    root: u32,
    level: u32,
}

/// One index entry with the probed key: the fingerprint it includes and the heap row it points to.
pub type Entry = (u64, pg_sys::ItemPointerData);

/// A pinned and share-locked index page.
struct Page {
    buffer: pg_sys::Buffer,
    data: *const u8,
}

impl Page {
    unsafe fn read(index: pg_sys::Relation, block: u32) -> Page {
        Page::read_recent(index, block, &mut 0)
    }

    /// Reads `block`, first trying the buffer it was in when last read (`recent`, 0 if none): a
    /// pin without the lookup in the shared buffer mapping table when it is still there.
    unsafe fn read_recent(index: pg_sys::Relation, block: u32, recent: &mut pg_sys::Buffer) -> Page {
        let buffer = if *recent != 0 && crate::compat::read_recent_buffer(index, block, *recent) {
            *recent
        } else {
            *recent = pg_sys::ReadBufferExtended(
                index,
                pg_sys::ForkNumber::MAIN_FORKNUM,
                block,
                pg_sys::ReadBufferMode::RBM_NORMAL,
                std::ptr::null_mut(),
            );
            *recent
        };
        pg_sys::LockBuffer(buffer, pg_sys::BUFFER_LOCK_SHARE as i32);
        // Shared buffers only: the callers refuse temporary relations (local buffers).
        let data = pg_sys::BufferBlocks.add((buffer as usize - 1) * BLOCK_SIZE) as *const u8;
        Page { buffer, data }
    }

    fn u16_at(&self, offset: usize) -> u16 {
        unsafe { std::ptr::read_unaligned(self.data.add(offset) as *const u16) }
    }

    /// The B-tree page trailer, or None for a page that is not a B-tree page of this layout.
    fn opaque(&self) -> Option<Opaque> {
        let special = self.u16_at(16) as usize;
        let upper = self.u16_at(14);
        (upper != 0 && special == BLOCK_SIZE - std::mem::size_of::<Opaque>())
            .then(|| unsafe { std::ptr::read_unaligned(self.data.add(special) as *const Opaque) })
    }

    /// The page's LSN (`pd_lsn`, two 32-bit halves).
    fn lsn(&self) -> u64 {
        let (hi, lo) = unsafe {
            (
                std::ptr::read_unaligned(self.data as *const u32),
                std::ptr::read_unaligned(self.data.add(4) as *const u32),
            )
        };
        (u64::from(hi) << 32) | u64::from(lo)
    }

    fn max_offset(&self) -> u16 {
        let lower = self.u16_at(12) as usize;
        (lower.saturating_sub(PAGE_HEADER_SIZE) / std::mem::size_of::<pg_sys::ItemIdData>()) as u16
    }

    /// Where the line pointer of the item at `offset` (1-based) is.
    fn line_pointer_address(&self, offset: u16) -> *const u8 {
        unsafe {
            self.data
                .add(PAGE_HEADER_SIZE + (offset as usize - 1) * std::mem::size_of::<pg_sys::ItemIdData>())
        }
    }

    /// The index tuple at `offset` (1-based).
    fn tuple(&self, offset: u16) -> *const u8 {
        unsafe {
            let id = std::ptr::read_unaligned(self.line_pointer_address(offset) as *const pg_sys::ItemIdData);
            self.data.add(id.lp_off() as usize)
        }
    }
}

impl Drop for Page {
    fn drop(&mut self) {
        unsafe { pg_sys::UnlockReleaseBuffer(self.buffer) };
    }
}

fn t_info(tuple: *const u8) -> u16 {
    unsafe { std::ptr::read_unaligned(tuple.add(6) as *const u16) }
}

/// Where the attributes of an index tuple start: after the 8-byte header, and its null bitmap
/// padded to 8 bytes when it has one.
fn data_offset(info: u16) -> usize {
    if info & INDEX_NULL_MASK != 0 {
        16
    } else {
        8
    }
}

/// Whether attribute `attno` (1-based) of a tuple with a null bitmap is null.
fn is_null(tuple: *const u8, attno: usize) -> bool {
    let bits = unsafe { *tuple.add(8 + (attno - 1) / 8) };
    bits & (1 << ((attno - 1) % 8)) == 0
}

/// The key of a leaf tuple, or of a pivot tuple (an internal page's item or a high key), whose
/// key may be truncated away (minus infinity).
fn tuple_key(tuple: *const u8, pivot: bool) -> i64 {
    let info = t_info(tuple);
    if pivot && info & INDEX_ALT_TID_MASK != 0 {
        // A pivot keeps its number of attributes in the offset number of its TID.
        let natts = unsafe { std::ptr::read_unaligned(tuple.add(4) as *const u16) } & BT_OFFSET_MASK;
        if natts == 0 {
            return MINUS_INFINITY;
        }
    }
    if info & INDEX_NULL_MASK != 0 && is_null(tuple, 1) {
        return NULL_KEY;
    }
    i64::from(unsafe { std::ptr::read_unaligned(tuple.add(data_offset(info)) as *const i32) })
}

/// The downlink of an internal page's item.
fn downlink(tuple: *const u8) -> u32 {
    let (hi, lo) = unsafe {
        (
            std::ptr::read_unaligned(tuple as *const u16),
            std::ptr::read_unaligned(tuple.add(2) as *const u16),
        )
    };
    (u32::from(hi) << 16) | u32::from(lo)
}

/// A leaf page as a list knows it.
#[derive(Clone, Copy)]
struct Listed {
    /// The lowest key the page may hold (at most its real lowest key).
    low: i64,
    block: u32,
    /// The buffer the page was last read from, 0 if none.
    recent: pg_sys::Buffer,
    /// What the page said when last read, valid while its LSN is the same.
    seen: Option<Seen>,
}

/// What a leaf page said when it was last read: every change to a page of a WAL-logged index sets
/// its LSN (a split changes the high key and the right-link, a deletion the flags), so while the
/// LSN stays the same these need not be read again; the lookups read the page's items anyway.
#[derive(Clone, Copy)]
struct Seen {
    lsn: u64,
    next: u32,
    high: Option<i64>,
}

impl Listed {
    fn new(low: i64, block: u32) -> Listed {
        Listed {
            low,
            block,
            recent: 0,
            seen: None,
        }
    }
}

/// The leaf pages of one band index with the lowest key each may hold, in key order.
#[derive(Default)]
struct LeafList {
    relfilenode: pg_sys::Oid,
    xmin: pg_sys::TransactionId,
    /// None until checked; Some(false) when this index cannot be read here.
    usable: Option<bool>,
    leaves: Vec<Listed>,
    /// Whether the index is WAL-logged, so that its pages' LSNs tell changes ([`Seen`]).
    logged: bool,
    plain_probes: u32,
    reread: bool,
}

thread_local! {
    static LISTS: RefCell<HashMap<pg_sys::Oid, LeafList>> = RefCell::new(HashMap::new());
    /// Counts relcache invalidations, so that a list taken out while one arrives is dropped.
    static INVALIDATIONS: Cell<u64> = const { Cell::new(0) };
    static CALLBACK_REGISTERED: Cell<bool> = const { Cell::new(false) };
}

#[pg_guard]
unsafe extern "C-unwind" fn relcache_invalidated(_arg: pg_sys::Datum, relid: pg_sys::Oid) {
    INVALIDATIONS.with(|n| n.set(n.get() + 1));
    LISTS.with(|lists| {
        if let Ok(mut lists) = lists.try_borrow_mut() {
            if relid == pg_sys::InvalidOid {
                lists.clear();
            } else {
                lists.remove(&relid);
            }
        }
    });
}

/// Whether the index has the layout the band indexes of `simhash_attach()` have: one ascending
/// integer key (integer_ops, nulls last) and an included bigint fingerprint, in a heap-TID B-tree.
unsafe fn layout_ok(index: pg_sys::Relation) -> bool {
    let form = &*(*index).rd_index;
    let desc = (*index).rd_att;
    if (*(*index).rd_rel).relam != pg_sys::BTREE_AM_OID
        || (*(*index).rd_rel).relpersistence as u8 == pg_sys::RELPERSISTENCE_TEMP
        || form.indnkeyatts != 1
        || form.indnatts != 2
        || (*desc).natts != 2
        || *(*index).rd_opfamily != pg_sys::INTEGER_BTREE_FAM_OID
        || *(*index).rd_indoption != 0
    {
        return false;
    }
    let attr = |i| crate::compat::tuple_desc_attr(desc, i).atttypid;
    if attr(0) != pg_sys::INT4OID || attr(1) != pg_sys::INT8OID {
        return false;
    }
    let meta_page = Page::read(index, 0);
    let meta = std::ptr::read_unaligned(meta_page.data.add(PAGE_HEADER_SIZE) as *const Meta);
    meta.magic == BTREE_MAGIC && meta.version >= BTREE_HEAPKEYSPACE_VERSION
}

/// Whether changes to the index are WAL-logged, so that each sets the LSN of the page it changes
/// (PostgreSQL's `RelationNeedsWAL`).
unsafe fn needs_wal(index: pg_sys::Relation) -> bool {
    (*(*index).rd_rel).relpersistence as u8 == pg_sys::RELPERSISTENCE_PERMANENT
        && (pg_sys::wal_level >= pg_sys::WalLevel::WAL_LEVEL_REPLICA as i32
            // Created or given a new file in an earlier transaction.
            || !crate::compat::new_in_this_transaction(index))
}

/// Reads the leaf list from the level above the leaves; None if the index is empty or a page is
/// not what it must be.
unsafe fn read_leaves(index: pg_sys::Relation) -> Option<Vec<Listed>> {
    let meta = {
        let page = Page::read(index, 0);
        std::ptr::read_unaligned(page.data.add(PAGE_HEADER_SIZE) as *const Meta)
    };
    if meta.magic != BTREE_MAGIC || meta.root == P_NONE {
        return None;
    }
    if meta.level == 0 {
        return Some(vec![Listed::new(MINUS_INFINITY, meta.root)]);
    }
    // Down the leftmost downlinks to level 1 (a root split since the metapage was read leaves the
    // old root leftmost on its level, so this still reaches the leftmost page).
    let mut block = meta.root;
    let mut level = meta.level;
    while level > 1 {
        let page = Page::read(index, block);
        let opaque = page.opaque()?;
        if opaque.level != level || opaque.flags & (BTP_LEAF | BTP_DELETED | BTP_HALF_DEAD) != 0 {
            return None;
        }
        let first = if opaque.next == P_NONE { 1 } else { 2 };
        if page.max_offset() < first {
            return None;
        }
        block = downlink(page.tuple(first));
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
        if opaque.level != 1 || opaque.flags & BTP_LEAF != 0 {
            return None;
        }
        let rightmost = opaque.next == P_NONE;
        if opaque.flags & (BTP_DELETED | BTP_HALF_DEAD) == 0 {
            let first = if rightmost { 1 } else { 2 };
            for offset in first..=page.max_offset() {
                let tuple = page.tuple(offset);
                let key = if offset == first {
                    low
                } else {
                    tuple_key(tuple, true)
                };
                leaves.push(Listed::new(key, downlink(tuple)));
            }
            if !rightmost {
                low = tuple_key(page.tuple(P_HIKEY), true);
            }
        }
        if rightmost {
            break;
        }
        block = opaque.next;
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
/// what it must be; also counts the pages moved over.
unsafe fn find_leaf(
    index: pg_sys::Relation,
    mut block: u32,
    mut listed: Option<&mut Listed>,
    logged: bool,
    mut low: i64,
    value: i64,
    moves: &mut u32,
) -> Option<Leaf> {
    loop {
        let page = match listed.as_deref_mut() {
            Some(entry) => Page::read_recent(index, block, &mut entry.recent),
            None => Page::read(index, block),
        };
        let known = listed
            .as_deref()
            .and_then(|entry| entry.seen)
            .filter(|seen| logged && seen.lsn == page.lsn());
        let (next, high) = match known {
            Some(seen) => (seen.next, seen.high),
            None => {
                let opaque = page.opaque()?;
                let rightmost = opaque.next == P_NONE;
                if opaque.flags & (BTP_DELETED | BTP_HALF_DEAD) != 0 {
                    if rightmost {
                        return None;
                    }
                    block = opaque.next;
                    *moves += 1;
                    listed = None;
                    drop(page); // one page locked at a time, as a scan moving right
                    continue;
                }
                if opaque.flags & BTP_LEAF == 0 || opaque.level != 0 {
                    return None;
                }
                let high = (!rightmost).then(|| tuple_key(page.tuple(P_HIKEY), true));
                if let Some(entry) = listed.as_deref_mut().filter(|_| logged) {
                    entry.seen = Some(Seen {
                        lsn: page.lsn(),
                        next: opaque.next,
                        high,
                    });
                }
                (opaque.next, high)
            }
        };
        match high {
            Some(high) if high < value => low = high,
            _ => {
                let start = if high.is_none() { 1 } else { 2 };
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
        block = next;
        *moves += 1;
        listed = None;
        drop(page); // one page locked at a time, as a scan moving right
    }
}

/// Asks the CPU to bring in what the probes of `values` will read first, for all of them at once:
/// each probe reads a random page of shared buffers, and its reads depend on each other (the
/// buffer header, the page header with the first line pointers, the page trailer, the high key,
/// the line pointer and the tuple where the search starts), so one probe after the other waits for
/// memory at every step; requested together, the waits overlap. Only the buffer each leaf was last
/// read from is known here, and pages are read without their lock, so what is read may be stale or
/// torn: it only chooses addresses to prefetch inside those pages, and the probe itself reads the
/// page under its lock.
unsafe fn prefetch(leaves: &[Listed], values: &[i32], at: &mut [usize; PREFETCHED]) {
    // (page, value, the bounds of its list entry, the right-link if known)
    let mut pages = [(std::ptr::null::<u8>(), 0i64, 0i64, 0i64, None); PREFETCHED];
    let mut n = 0;
    for (&value, at) in values.iter().zip(at.iter_mut()) {
        let value = i64::from(value);
        *at = listed_leaf(leaves, value);
        let entry = &leaves[*at];
        if entry.recent <= 0 {
            continue;
        }
        let page = pg_sys::BufferBlocks.add((entry.recent as usize - 1) * BLOCK_SIZE) as *const u8;
        prefetch_line(pg_sys::BufferDescriptors.add(entry.recent as usize - 1) as *const u8);
        prefetch_line(page);
        if entry.seen.is_none() {
            prefetch_line(page.add(BLOCK_SIZE - 64));
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
    let line_pointer = |page: *const u8, offset: i64| -> usize {
        let at = PAGE_HEADER_SIZE + 4 * (offset.clamp(1, 2000) as usize - 1);
        let raw = std::ptr::read_volatile(page.add(at) as *const u32);
        (raw & 0x7fff) as usize % BLOCK_SIZE
    };
    let mut pivots = [[0i64; 3]; PREFETCHED];
    for (&(page, value, low, high, next), pivots) in pages[..n].iter().zip(pivots.iter_mut()) {
        let lower = std::ptr::read_volatile(page.add(12) as *const u16) as usize;
        let next =
            next.unwrap_or_else(|| std::ptr::read_volatile(page.add(BLOCK_SIZE - 16 + 4) as *const u32));
        let first: i64 = if next == P_NONE { 1 } else { 2 };
        let last = (lower.saturating_sub(PAGE_HEADER_SIZE) / 4).min(2000) as i64;
        if last < first {
            continue;
        }
        *pivots = round_pivots(first - 1, last + 1, low, high, value);
        if first == 2 {
            prefetch_line(page.add(line_pointer(page, 1)));
        }
        for &p in pivots.iter() {
            prefetch_line(page.add(PAGE_HEADER_SIZE + 4 * (p.clamp(1, 2000) as usize - 1)));
        }
    }
    for (&(page, ..), pivots) in pages[..n].iter().zip(&pivots) {
        for &p in pivots {
            if p > 0 {
                prefetch_line(page.add(line_pointer(page, p)));
            }
        }
    }
}

/// Appends the entries whose key is one of `values` (ascending, distinct), at most `limit` in all,
/// each value's search starting from its listed leaf unless the page read for the previous value
/// holds it too (neighbouring probes often share a leaf). None if a page is not what it must be;
/// otherwise how many pages it moved right over to reach the values.
unsafe fn read_equal(
    index: pg_sys::Relation,
    leaves: &mut [Listed],
    logged: bool,
    values: &[i32],
    limit: usize,
    out: &mut Vec<Entry>,
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
        let mut leaf = match current.take() {
            Some(leaf) if leaf.holds(value) => leaf,
            held => {
                drop(held);
                let at = match listed.get(i) {
                    Some(&at) => at,
                    None => listed_leaf(leaves, value),
                };
                let (low, block) = (leaves[at].low, leaves[at].block);
                let mut moves = 0;
                let mut leaf = find_leaf(
                    index,
                    block,
                    Some(&mut leaves[at]),
                    logged,
                    low,
                    value,
                    &mut moves,
                )?;
                all_moves += moves;
                if moves == 0 {
                    leaf.bound = list_high(leaves, at);
                }
                leaf
            }
        };
        loop {
            let last = leaf.page.max_offset();
            let mut offset = first_not_below(&leaf.page, leaf.start, last, value, leaf.searched, leaf.bound);
            let mut ended = false;
            while offset <= last && out.len() < limit {
                // Equal keys often run on: ask for the next entries while this one is read.
                for ahead in offset + 1..=(offset + 2).min(last) {
                    prefetch_line(leaf.page.tuple(ahead));
                }
                let tuple = leaf.page.tuple(offset);
                let info = t_info(tuple);
                if info & INDEX_ALT_TID_MASK != 0 {
                    return None; // a posting list: deduplication is off for INCLUDE indexes
                }
                if tuple_key(tuple, false) != value {
                    ended = true;
                    break;
                }
                if info & INDEX_NULL_MASK == 0 || !is_null(tuple, 2) {
                    let fp = std::ptr::read_unaligned(tuple.add(data_offset(info) + 8) as *const i64) as u64;
                    out.push((
                        fp,
                        std::ptr::read_unaligned(tuple as *const pg_sys::ItemPointerData),
                    ));
                }
                offset += 1;
            }
            leaf.start = offset;
            leaf.searched = value;
            // Entries equal to the value go on in the right sibling only if the high key equals it.
            if ended || out.len() >= limit || leaf.high != Some(value) {
                break;
            }
            let next = leaf.next;
            drop(leaf);
            let mut moves = 0;
            leaf = find_leaf(index, next, None, logged, value - 1, value, &mut moves)?;
        }
        current = Some(leaf);
    }
    Some(all_moves)
}

/// How many of a band's values [`prefetch`] looks ahead for.
const PREFETCHED: usize = 64;

/// The list entry where entries equal to `value` start: the last leaf whose lowest key is below the
/// value. They cannot lie further left, since a page's lowest key is at most what the list says.
fn listed_leaf(leaves: &[Listed], value: i64) -> usize {
    leaves.partition_point(|l| l.low < value).saturating_sub(1)
}

/// The offset of the first item of a leaf page whose key is not below `value` (`last + 1` if none),
/// given bounds on the keys of the page: `low` below `value`, `high` at or above it.
///
/// The items are in key order but their tuples lie scattered over the page, so each key read is a
/// cache miss, and a plain binary search waits for memory eight or nine times in a row on a page
/// of 300 entries. Instead each round reads up to three keys at once (their line pointers, then
/// their tuples, requested together so the misses overlap): around the position that interpolation
/// between the known keys predicts (band values are close to uniform, so the true position is
/// within a few square roots of the range), or at the quartiles when it cannot predict. Two or
/// three rounds find the item on a uniform page; a skewed page costs at most as many rounds as a
/// binary search has steps.
fn first_not_below(page: &Page, first: u16, last: u16, value: i64, low: i64, high: i64) -> u16 {
    // Invariant: the key at `lo` is below `value`, the key at `hi` is not; `first - 1` and
    // `last + 1` stand for the page's bounds.
    let (mut lo, mut hi) = (i64::from(first) - 1, i64::from(last) + 1);
    let (mut klo, mut khi) = (low, high);
    while hi - lo > 1 {
        if hi - lo <= SCAN_WIDTH {
            // A few items left: read all their keys at once (the misses overlap) rather than in
            // two or three rounds that each wait for the last.
            for p in lo + 1..hi {
                prefetch_line(page.tuple(p as u16));
            }
            for p in lo + 1..hi {
                if tuple_key(page.tuple(p as u16), false) >= value {
                    return p as u16;
                }
            }
            return hi as u16;
        }
        let pivots = round_pivots(lo, hi, klo, khi, value);
        let mut tuples = [std::ptr::null(); 3];
        for &p in &pivots {
            prefetch_line(page.line_pointer_address(p as u16));
        }
        for (t, &p) in tuples.iter_mut().zip(&pivots) {
            *t = page.tuple(p as u16);
            prefetch_line(*t);
        }
        for (&t, &p) in tuples.iter().zip(&pivots) {
            if p <= lo {
                continue;
            }
            let key = tuple_key(t, false);
            if key < value {
                lo = p;
                klo = key;
            } else {
                hi = p;
                khi = key;
                break;
            }
        }
    }
    hi as u16
}

/// Ranges of at most this many positions (between two known ones) are read whole.
const SCAN_WIDTH: i64 = 17;

/// The keys one round of [`first_not_below`] reads, between positions `lo` and `hi` (exclusive)
/// whose keys are `klo` below the value and `khi` not below it: all of them when at most three,
/// else around the interpolated position (a spread of half the square root of the range, about the
/// error of interpolation on uniform keys), else at the quartiles. Always inside the range.
fn round_pivots(lo: i64, hi: i64, klo: i64, khi: i64, value: i64) -> [i64; 3] {
    let width = hi - lo;
    if width <= 4 {
        return [1, 2, 3].map(|i| (lo + i).min(hi - 1));
    }
    if let Some(guess) = interpolate(lo, hi, klo, khi, value) {
        // About half the square root of the width, without floating point.
        let spread = 1i64 << ((64 - width.leading_zeros()) / 2).saturating_sub(1);
        return [guess - spread, guess, guess + spread].map(|p| p.clamp(lo + 1, hi - 1));
    }
    [1, 2, 3].map(|q| lo + width * q / 4)
}

/// The position between `lo` and `hi` (exclusive) that linear interpolation between their keys
/// `klo` and `khi` predicts for `value`, when both keys are known.
#[inline]
fn interpolate(lo: i64, hi: i64, klo: i64, khi: i64, value: i64) -> Option<i64> {
    if klo == MINUS_INFINITY || khi == NULL_KEY || khi <= klo {
        return None;
    }
    let width = hi - lo;
    // Band values are below 2^16 and widths (item counts) below 2^11: a 32-bit division, cheaper
    // than a 64-bit one, when the bounds fit (they always do for band indexes).
    let step = match (
        u32::try_from(value - klo),
        u32::try_from(width),
        u32::try_from(khi - klo),
    ) {
        (Ok(a), Ok(w), Ok(d)) if a < 1 << 20 => i64::from(a * w / d),
        _ => (value - klo) * width / (khi - klo),
    };
    Some((lo + step).clamp(lo + 1, hi - 1))
}

/// The upper bound a list gives for the keys of its entry `at`: the next entry's lowest key.
fn list_high(leaves: &[Listed], at: usize) -> i64 {
    leaves.get(at + 1).map_or(NULL_KEY, |l| l.low)
}

/// Asks the CPU to bring in the cache line at `address` (a hint: no fault, no effect on results).
#[inline(always)]
fn prefetch_line(address: *const u8) {
    #[cfg(target_arch = "x86_64")]
    unsafe {
        std::arch::x86_64::_mm_prefetch(address as *const i8, std::arch::x86_64::_MM_HINT_T0);
    }
}

/// Registers the relcache callback that counts invalidations and drops the lists of indexes.
fn register_invalidation_callback() {
    if !CALLBACK_REGISTERED.with(Cell::get) {
        unsafe { pg_sys::CacheRegisterRelcacheCallback(Some(relcache_invalidated), pg_sys::Datum::from(0)) };
        CALLBACK_REGISTERED.with(|r| r.set(true));
    }
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
    register_invalidation_callback();
    let relid = (*index).rd_id;
    let relfilenode = crate::compat::relfilenumber(index);
    let xmin = (*pg_sys::MyProc).xmin;
    // Taken out while pages are read, so that an invalidation arriving meanwhile finds no borrow.
    let mut list = LISTS
        .with(|lists| lists.borrow_mut().get_mut(&relid).map(std::mem::take))
        .unwrap_or_default();
    let invalidations = INVALIDATIONS.with(Cell::get);
    if list.relfilenode != relfilenode || list.xmin != xmin {
        list = LeafList {
            relfilenode,
            xmin,
            usable: list.usable.filter(|_| list.relfilenode == relfilenode),
            ..LeafList::default()
        };
    }
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
        if list.leaves.is_empty() && list.plain_probes < PROBES_BEFORE_MAP {
            list.plain_probes += values.len() as u32;
        } else {
            if list.leaves.is_empty() || list.reread {
                list.reread = false;
                let mut leaves = read_leaves(index).unwrap_or_default();
                // Leaves already listed keep the buffer they were last read from (the list is read
                // again as the index grows, and most of its leaves are the same).
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
            if !list.leaves.is_empty() {
                let start = out.len();
                match read_equal(
                    index,
                    &mut list.leaves,
                    list.logged,
                    values,
                    limit.saturating_add(start),
                    out,
                ) {
                    Some(moves) => {
                        list.reread = moves >= MOVES_BEFORE_REREAD;
                        served = true;
                        SERVED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    None => {
                        out.truncate(start);
                        list.usable = Some(false);
                        list.leaves = Vec::new();
                    }
                }
            }
        }
    }
    if INVALIDATIONS.with(Cell::get) == invalidations {
        LISTS.with(|lists| *lists.borrow_mut().entry(relid).or_default() = list);
    }
    served
}
