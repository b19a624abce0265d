//! Equal-key reads of a band index without a descent from its root per probed value.
//!
//! A lookup at distance 7 probes 68 band values, and the duplicate trigger does one per written
//! row: through `index_rescan` each probe descends the B-tree from its root (three pages at a
//! million rows, a binary search on each), which made the trigger cost three times a write without
//! it. Here a backend keeps, per band index, the list of its leaf pages with the lowest key each
//! may hold (read from the level above the leaves), and a probe locks and reads only its leaf.
//!
//! Why a list read earlier stays right (PostgreSQL's B-tree follows Lehman and Yao; docs/ARCHITECTURE.md
//! §5.2–§5.4 describe the reader, this argument and when index scans are used instead):
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
//! `(integer) INCLUDE (bigint, ...)`, an old B-tree version, posting lists) makes the caller use the
//! index scan instead, for the rest of the list's life. So do serializable transactions (their
//! index reads must take predicate locks), hot standbys (their xmin does not hold back the
//! primary's recycling), temporary tables, and `simhash.leaf_map = off`, which tests use to
//! compare both paths.
//!
//! # What is read of a page
//!
//! Every page is read through [`Page`], which exists only while its buffer is pinned and
//! share-locked, and through the structs PostgreSQL declares (pgrx's bindings for the page header,
//! line pointers and index tuples; nbtree.h's `BTPageOpaqueData` and `BTMetaPageData` repeated
//! here, since the bindings leave that header out). Byte by byte, with `BLCKSZ` 8192 and
//! `MAXALIGN` 8:
//! - **Page header** (`PageHeaderData`, 24 bytes at offset 0): `pd_lsn`, `pd_lower` (the end of
//!   the line pointer array, so `(pd_lower - 24) / 4` items), `pd_upper` (0 on a new page),
//!   `pd_special`, `pd_pagesize_version` (`BLCKSZ | 4`). Line pointers (`ItemIdData`, 4 bytes:
//!   `lp_off` 15 bits, `lp_flags` 2, `lp_len` 15) follow from offset 24; item `n` is the `n`-th.
//! - **B-tree special space** (`BTPageOpaqueData`, 16 bytes at `pd_special` = `BLCKSZ - 16`):
//!   `btpo_prev`, `btpo_next` (`P_NONE` = 0 on the rightmost page), `btpo_level` (0 for leaves),
//!   `btpo_flags` (`BTP_LEAF`, `BTP_DELETED`, `BTP_META`, `BTP_HALF_DEAD` among others),
//!   `btpo_cycleid`. A page is taken as a B-tree page only with that `pd_special`, that
//!   `pd_pagesize_version` and a nonzero `pd_upper`, and as what the caller needs only with the
//!   expected level and flags.
//! - **Items**: in key order. A page with a right sibling starts with its high key (`P_HIKEY`, 1),
//!   the upper bound of its keys, and its data from `P_FIRSTKEY` (2); the rightmost page has no
//!   high key. The first data item of an internal page has its key truncated away (minus infinity).
//! - **Metapage** (block 0, flagged `BTP_META`): `BTMetaPageData` at `MAXALIGN(24)`: `btm_magic`
//!   `0x053162`, `btm_version` (only 4 is read: heap TIDs in the key space, pivots that count their
//!   attributes), `btm_root`, `btm_level`, ..., `btm_allequalimage` (must be false: no
//!   deduplication; PostgreSQL never sets it for an index with INCLUDE columns).
//! - **Index tuples**, as described at [`Tuple`]: an 8-byte `IndexTupleData`, a null bitmap padded
//!   to 8 bytes when `INDEX_NULL_MASK` is set, then the int4 band value and, 8 bytes later, the int8
//!   fingerprint. Pivots (high keys, internal items) carry `INDEX_ALT_TID_MASK` and count their
//!   attributes in `t_tid`'s offset number (`BT_OFFSET_MASK`); their downlink is `t_tid`'s block.
//!
//! What is checked before it is followed: the special space's place and the page's version and
//! size, levels and flags, that an item number is at most the page's item count, that a line
//! pointer places a `MAXALIGN`ed tuple of at least 8 bytes inside the block, and that every
//! attribute read lies inside the tuple's `lp_len`; a failed check is "a page not what it must be"
//! (index scans from then on). What is trusted as PostgreSQL trusts it: the key order of the items,
//! and that `lp_len` is the tuple's size. A share lock keeps all of this still: other share-lock
//! holders may only set an item's `LP_DEAD` bits and `BTP_HAS_GARBAGE` (never read here) and,
//! with data checksums or `wal_log_hints`, the LSN, which is therefore read with
//! `BufferGetLSNAtomic`. [`prefetch`] alone reads pages without a lock, for cache hints only
//! ([`UnlockedPage`]).
//!
//! # Layouts on each PostgreSQL major
//!
//! Checked in the server headers of 14.23, 15.19, 16.15, 17.11 and 18.6 (access/nbtree.h,
//! access/itup.h, storage/bufpage.h, storage/itemid.h, storage/itemptr.h, storage/block.h,
//! pg_config.h): the text of `PageHeaderData`, `PageXLogRecPtr`, `ItemIdData`, `IndexTupleData`,
//! `IndexAttributeBitMapData`, `BTPageOpaqueData` and `BTMetaPageData` and every constant used
//! here (`BTP_*`, `BTREE_MAGIC`, `BTREE_VERSION` 4, `P_NONE`, `P_HIKEY`, `P_FIRSTKEY`,
//! `INDEX_NULL_MASK`, `INDEX_AM_RESERVED_BIT`, `BT_OFFSET_MASK`, `BT_IS_POSTING`,
//! `PG_PAGE_LAYOUT_VERSION` 4, `BLCKSZ` 8192, `MAXIMUM_ALIGNOF` 8, `INDEX_MAX_KEYS` 32) is the same
//! in all five, and so are `BTreeTupleIsPivot`, `BTreeTupleIsPosting`, `BTreeTupleGetNAtts`,
//! `BTreeTupleGetDownLink` and `P_FIRSTDATAKEY`. What changed between them is not layout: 15 added
//! the `BTPageGetOpaque` macro, 16 turned bufpage.h's and itemptr.h's macros into inline functions
//! and gave the nbtree functions a heap relation argument, 18's `initdb` turns data checksums on
//! by default (hence the atomic LSN read). The relation fields this module reads were renamed:
//! `rd_node` / `rd_firstRelfilenodeSubid` (14, 15) became `rd_locator` /
//! `rd_firstRelfilelocatorSubid` (16 on), and 18 put compact attributes before `TupleDescData`'s
//! `attrs`; they are read through `crate::compat` (src/compat.rs).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use pgrx::guc::{GucContext, GucFlags, GucRegistry, GucSetting};
use pgrx::prelude::*;

use crate::compat;

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

/// The largest band index whose list [`eager`] reads at once: a list holds an entry per leaf, read
/// from about one page per 400 leaves, so its cost grows with the index while a search's 70
/// descents do not. Measured: on band indexes of 830 blocks (a shard of 125,000 rows), inserts
/// through a registry view took 0.8-0.9 times as long with lists read at once; on 6,190 blocks
/// (1,250,000 rows), a lookup in a transaction of its own took 0.65 times as long.
const EAGER_MAX_BLOCKS: u32 = 8192;
/// Right-moves in the probes of one band (pages the list does not know yet, or knows under a lower
/// key) after which the list is read again: the index has grown since it was read.
const MOVES_BEFORE_REREAD: u32 = 2;

// What the reader reads of a page, as PostgreSQL declares it. The page header (`PageHeaderData`,
// storage/bufpage.h), its line pointers (`ItemIdData`, storage/itemid.h) and index tuples
// (`IndexTupleData`, access/itup.h) come from pgrx's bindings. Those bindings leave out
// access/nbtree.h, so the B-tree's own declarations are repeated here with nbtree.h's names, sizes
// and values: `BTPageOpaqueData`, `BTMetaPageData` and the constants below (checked identical in
// PostgreSQL 14 to 18, see "Layouts" in the module documentation).

/// `BTPageOpaqueData`: the special space at the end of every B-tree page.
#[repr(C)]
#[derive(Clone, Copy)]
struct BTPageOpaqueData {
    /// Left sibling, or `P_NONE` on the leftmost page of a level.
    btpo_prev: pg_sys::BlockNumber,
    /// Right sibling, or `P_NONE` on the rightmost page of a level.
    btpo_next: pg_sys::BlockNumber,
    /// 0 for leaves.
    btpo_level: u32,
    btpo_flags: u16,
    btpo_cycleid: u16,
}

/// `BTMetaPageData`: the contents of block 0 (`BTREE_METAPAGE`), after its page header.
#[repr(C)]
#[derive(Clone, Copy)]
struct BTMetaPageData {
    btm_magic: u32,
    btm_version: u32,
    btm_root: pg_sys::BlockNumber,
    btm_level: u32,
    btm_fastroot: pg_sys::BlockNumber,
    btm_fastlevel: u32,
    btm_last_cleanup_num_delpages: u32,
    btm_last_cleanup_num_heap_tuples: f64,
    /// Whether deduplication (posting lists) may be used: never for an index with INCLUDE columns.
    btm_allequalimage: bool,
}

// The sizes nbtree.h's declarations have on the 64-bit platforms pgrx supports.
const _: () = assert!(std::mem::size_of::<BTPageOpaqueData>() == 16);
const _: () = assert!(std::mem::size_of::<BTMetaPageData>() == 48);
const _: () = assert!(std::mem::size_of::<pg_sys::IndexTupleData>() == 8);
const _: () = assert!(std::mem::size_of::<pg_sys::ItemIdData>() == 4);
const _: () = assert!(SIZE_OF_PAGE_HEADER_DATA == 24);

const BTREE_METAPAGE: pg_sys::BlockNumber = 0;
const BTREE_MAGIC: u32 = 0x053162;
/// The only version read: heap TIDs are a key attribute and pivots say how many attributes they
/// kept (PostgreSQL 12 and later; indexes built before 12 and carried over by pg_upgrade keep 2 or
/// 3 until rebuilt, and are left to index scans).
const BTREE_VERSION: u32 = 4;
const BTP_LEAF: u16 = 1 << 0;
const BTP_DELETED: u16 = 1 << 2;
const BTP_META: u16 = 1 << 3;
const BTP_HALF_DEAD: u16 = 1 << 4;
const P_NONE: pg_sys::BlockNumber = 0;
/// The high key of a page that is not rightmost; its first item otherwise.
const P_HIKEY: pg_sys::OffsetNumber = 1;
/// The first item after the high key.
const P_FIRSTKEY: pg_sys::OffsetNumber = 2;
/// On a leaf item, that it is a posting list; on a pivot, that its TID's offset number holds its
/// number of key attributes (`BT_OFFSET_MASK`) and status bits (`BT_IS_POSTING` among them).
const INDEX_ALT_TID_MASK: u16 = pg_sys::INDEX_AM_RESERVED_BIT as u16;
const BT_OFFSET_MASK: u16 = 0x0FFF;
const BT_IS_POSTING: u16 = 0x2000;
const INDEX_NULL_MASK: u16 = pg_sys::INDEX_NULL_MASK as u16;

const BLOCK_SIZE: usize = pg_sys::BLCKSZ as usize;
/// `SizeOfPageHeaderData`: where the line pointers start.
const SIZE_OF_PAGE_HEADER_DATA: usize = std::mem::offset_of!(pg_sys::PageHeaderData, pd_linp);
const LINE_POINTER_SIZE: usize = std::mem::size_of::<pg_sys::ItemIdData>();
/// What `pd_pagesize_version` holds on a page of this build: the block size and layout version 4.
const PAGE_SIZE_VERSION: u16 = (pg_sys::BLCKSZ | pg_sys::PG_PAGE_LAYOUT_VERSION) as u16;
/// `pd_special` of a B-tree page: the opaque data fills the end of the block.
const BTREE_SPECIAL: usize = BLOCK_SIZE - maxalign(std::mem::size_of::<BTPageOpaqueData>());
/// `IndexInfoFindDataOffset`: where an index tuple's attributes start, without and with a null
/// bitmap (`IndexAttributeBitMapData`, after the header, padded to `MAXALIGN`).
const DATA_OFFSET: usize = maxalign(std::mem::size_of::<pg_sys::IndexTupleData>());
const DATA_OFFSET_NULLS: usize = maxalign(
    std::mem::size_of::<pg_sys::IndexTupleData>() + std::mem::size_of::<pg_sys::IndexAttributeBitMapData>(),
);
/// Where the second attribute (the bigint fingerprint, `typalign` 'd') starts after the first
/// (the int4 band value): the tuple starts `MAXALIGN`ed, so alignment within it is alignment in
/// memory.
const FINGERPRINT_AFTER_KEY: usize = 8;

const fn maxalign(len: usize) -> usize {
    let align = pg_sys::MAXIMUM_ALIGNOF as usize;
    (len + align - 1) & !(align - 1)
}

/// Keys as the B-tree orders them: a pivot's minus infinity, the integers, then NULL (the band
/// indexes are ascending, nulls last).
const MINUS_INFINITY: i64 = i64::MIN;
const NULL_KEY: i64 = i64::MAX;

/// One index entry with the probed key: the fingerprint it includes and the heap row it points to.
pub type Entry = (u64, pg_sys::ItemPointerData);

/// A pinned and share-locked page of a band index: the only way this module reads a page's
/// contents under a lock (the lock-free hints of [`prefetch`] aside).
///
/// It can only be built by [`Page::read`] and [`Page::read_recent`], which pin the buffer and take
/// its share lock; [`Drop`] releases both. While it lives no other backend can change the bytes it
/// reads (page changes take the exclusive lock; what a share-lock holder may set, an item's
/// `LP_DEAD` hint and `BTP_HAS_GARBAGE`, is nothing read here), so its accessors are safe: each reads
/// inside the page's `BLCKSZ` bytes and checks what it takes from the page (a line pointer's
/// offset and length, a tuple's attribute offsets) before following it. Whether the page is the
/// B-tree page the caller expects is the caller's to check, through [`Page::opaque`] and
/// [`Page::meta`].
struct Page {
    buffer: pg_sys::Buffer,
    header: *const pg_sys::PageHeaderData,
    /// Items on the page (`PageGetMaxOffsetNumber`), bounded so that their line pointers lie in it.
    max_offset: pg_sys::OffsetNumber,
}

impl Page {
    /// # Safety
    /// As [`Page::read_recent`].
    unsafe fn read(index: pg_sys::Relation, block: pg_sys::BlockNumber) -> Page {
        Page::read_recent(index, block, &mut 0)
    }

    /// Pins and share-locks `block` of `index`, first trying the buffer it was in when last read
    /// (`recent`, 0 if none): a pin without the lookup in the shared buffer mapping table when it is
    /// still there. `recent` is set to the buffer read.
    ///
    /// # Safety
    /// `index` must be an open and locked index of a permanent or unlogged relation (its pages are
    /// in shared buffers, never local ones); `block` must exist (else PostgreSQL raises an error);
    /// `recent` must be 0 or a buffer number this function set for the same relation.
    unsafe fn read_recent(
        index: pg_sys::Relation,
        block: pg_sys::BlockNumber,
        recent: &mut pg_sys::Buffer,
    ) -> Page {
        let buffer = if *recent != 0 && compat::read_recent_buffer(index, block, *recent) {
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
        let header = pg_sys::BufferGetPage(buffer) as *const pg_sys::PageHeaderData;
        let lower = usize::from(std::ptr::read(&raw const (*header).pd_lower)).min(BLOCK_SIZE);
        let max_offset = (lower.saturating_sub(SIZE_OF_PAGE_HEADER_DATA) / LINE_POINTER_SIZE) as u16;
        Page {
            buffer,
            header,
            max_offset,
        }
    }

    /// `pd_upper`, `pd_special` and `pd_pagesize_version`: fields no share-lock holder changes.
    fn bounds(&self) -> (u16, u16, u16) {
        // SAFETY: the header lies at the start of the pinned, share-locked block.
        unsafe {
            (
                std::ptr::read(&raw const (*self.header).pd_upper),
                std::ptr::read(&raw const (*self.header).pd_special),
                std::ptr::read(&raw const (*self.header).pd_pagesize_version),
            )
        }
    }

    /// The page's LSN. A backend setting a hint under a share lock sets the LSN too when hints
    /// are WAL-logged (data checksums, on by default from PostgreSQL 18, or `wal_log_hints`), so
    /// then it is read through `BufferGetLSNAtomic` as nbtree's `_bt_killitems` does to tell
    /// whether a page changed; otherwise nothing changes it under the share lock and it is read
    /// from the header (`PageGetLSN`), the fast path of `BufferGetLSNAtomic` without the call.
    fn lsn(&self) -> u64 {
        if hints_logged() {
            // SAFETY: the buffer is pinned.
            return unsafe { buffer_get_lsn_atomic(self.buffer) };
        }
        // SAFETY: the header lies at the start of the pinned, share-locked block.
        let lsn = unsafe { std::ptr::read(&raw const (*self.header).pd_lsn) };
        (u64::from(lsn.xlogid) << 32) | u64::from(lsn.xrecoff)
    }

    /// The page's B-tree special space (`BTPageGetOpaque`), or None for a page that is new, of
    /// another layout version or block size, or whose special space is not a `BTPageOpaqueData`.
    fn opaque(&self) -> Option<BTPageOpaqueData> {
        let (upper, special, size_version) = self.bounds();
        (upper != 0 && size_version == PAGE_SIZE_VERSION && usize::from(special) == BTREE_SPECIAL).then(
            || {
                // SAFETY: the special space checked above is the block's last 16 bytes, at an
                // offset aligned for the struct.
                unsafe {
                    std::ptr::read(
                        self.header
                            .cast::<u8>()
                            .add(BTREE_SPECIAL)
                            .cast::<BTPageOpaqueData>(),
                    )
                }
            },
        )
    }

    /// The metapage's contents (`BTPageGetMeta`), or None if this is not a B-tree metapage.
    fn meta(&self) -> Option<BTMetaPageData> {
        let opaque = self.opaque()?;
        if opaque.btpo_flags & BTP_META == 0 {
            return None;
        }
        // SAFETY: `PageGetContents`, MAXALIGNed after the header, holds the metadata on a page
        // flagged BTP_META; the 48 bytes lie well inside the block.
        let meta = unsafe {
            std::ptr::read(
                self.header
                    .cast::<u8>()
                    .add(maxalign(SIZE_OF_PAGE_HEADER_DATA))
                    .cast::<BTMetaPageData>(),
            )
        };
        (meta.btm_magic == BTREE_MAGIC).then_some(meta)
    }

    fn max_offset(&self) -> pg_sys::OffsetNumber {
        self.max_offset
    }

    /// Where the line pointer of item `offset` lies (`PageGetItemId`), if `1 <= offset <=
    /// max_offset`.
    fn line_pointer(&self, offset: pg_sys::OffsetNumber) -> Option<*const pg_sys::ItemIdData> {
        (offset.wrapping_sub(1) < self.max_offset).then(|| {
            // SAFETY: inside the line pointer array, which `max_offset` keeps inside the block.
            unsafe { (*self.header).pd_linp.as_ptr().add(usize::from(offset) - 1) }
        })
    }

    /// The index tuple at `offset` (`PageGetItem`), or None if `offset` is not an item of the
    /// page, or its line pointer does not place a whole `MAXALIGN`ed tuple of at least a header's
    /// size inside the page.
    fn tuple(&self, offset: pg_sys::OffsetNumber) -> Option<Tuple<'_>> {
        // SAFETY: an aligned line pointer inside the block.
        let (at, len) = item_id_offset_length(unsafe { std::ptr::read(self.line_pointer(offset)?) });
        (at.is_multiple_of(pg_sys::MAXIMUM_ALIGNOF as usize)
            && len >= std::mem::size_of::<pg_sys::IndexTupleData>()
            && at + len <= BLOCK_SIZE)
            .then(|| Tuple {
                // SAFETY: `at < BLOCK_SIZE` from the check above.
                data: unsafe { self.header.cast::<u8>().add(at).cast() },
                len,
                _page: std::marker::PhantomData,
            })
    }
}

/// `lp_off` and `lp_len` of a line pointer (`ItemIdGetOffset`, `ItemIdGetLength`). Taken from its
/// 32 bits by shifts rather than through the bindings' bitfield getters, which assemble each field
/// bit by bit (a dozen instructions per field, for every tuple a probe reads): C lays the
/// bitfields out from the least significant bit on the little-endian targets pgrx builds for, so
/// `lp_off` is bits 0 to 14, `lp_flags` 15 and 16, `lp_len` 17 to 31 (a test compares with the
/// getters).
#[inline(always)]
fn item_id_offset_length(id: pg_sys::ItemIdData) -> (usize, usize) {
    // SAFETY: `ItemIdData` is 4 bytes of plain bits.
    let bits: u32 = unsafe { std::mem::transmute(id) };
    ((bits & 0x7FFF) as usize, (bits >> 17) as usize)
}

const _: () = assert!(cfg!(target_endian = "little"));

/// `P_FIRSTDATAKEY`: the first item that is not the high key (a rightmost page has none).
fn first_data_key(opaque: &BTPageOpaqueData) -> pg_sys::OffsetNumber {
    if opaque.btpo_next == P_NONE {
        P_HIKEY
    } else {
        P_FIRSTKEY
    }
}

/// `XLogHintBitIsNeeded()`: whether setting a hint may WAL-log the page and set its LSN. Neither
/// data checksums nor `wal_log_hints` (a postmaster setting) change while a server runs, so it is
/// asked once per backend.
fn hints_logged() -> bool {
    thread_local! {
        static HINTS_LOGGED: Cell<Option<bool>> = const { Cell::new(None) };
    }
    HINTS_LOGGED.with(|known| {
        *known.get().get_or_insert_with(|| {
            // SAFETY: reads of the control file's checksum version and a GUC, in a backend.
            let logged = unsafe { pg_sys::DataChecksumsEnabled() || pg_sys::wal_log_hints };
            known.set(Some(logged));
            logged
        })
    })
}

unsafe extern "C" {
    /// `BufferGetLSNAtomic` (storage/bufmgr.h), declared here without the guard pgrx puts around
    /// the functions of its bindings (a `sigsetjmp` per call, once per probe here): it raises no
    /// error to catch, taking at most the buffer header's spinlock.
    #[link_name = "BufferGetLSNAtomic"]
    fn buffer_get_lsn_atomic(buffer: pg_sys::Buffer) -> pg_sys::XLogRecPtr;
}

impl Drop for Page {
    fn drop(&mut self) {
        // SAFETY: the buffer was pinned and share-locked when this was built, once.
        unsafe { pg_sys::UnlockReleaseBuffer(self.buffer) };
    }
}

/// An index tuple on a [`Page`], borrowed from it: `len` bytes from `data`, which is `MAXALIGN`ed,
/// lie inside the page, `len` at least `size_of::<IndexTupleData>()`. Its accessors read only
/// those bytes.
///
/// Layout (access/itup.h, nbtree.h): an `IndexTupleData` header (`t_tid`, then `t_info` holding the
/// size, `INDEX_NULL_MASK` and `INDEX_ALT_TID_MASK`); with nulls, a 4-byte bitmap padded to 8
/// bytes; then the attributes, each at its type's alignment. In a band index (int4 key INCLUDE
/// int8 fingerprint) a leaf item is the key at the data offset and the fingerprint 8 bytes later,
/// `t_tid` pointing to the heap row. A pivot (an internal page's item, or any page's high key) has
/// `INDEX_ALT_TID_MASK` with the number of attributes it kept in `t_tid`'s offset number (0 for the
/// minus infinity of an internal page's first item; included columns are always truncated away)
/// and its child's block in `t_tid`'s block number; a leaf item with `INDEX_ALT_TID_MASK` is a
/// posting list, which an index with INCLUDE columns never has.
#[derive(Clone, Copy)]
struct Tuple<'p> {
    data: *const pg_sys::IndexTupleData,
    len: usize,
    _page: std::marker::PhantomData<&'p Page>,
}

impl Tuple<'_> {
    fn header(self) -> pg_sys::IndexTupleData {
        // SAFETY: the header is within `len` bytes, aligned (see the struct).
        unsafe { std::ptr::read(self.data) }
    }

    fn info(self) -> u16 {
        self.header().t_info
    }

    fn address(self) -> *const u8 {
        self.data.cast()
    }

    /// The `T` at byte `at` of the tuple, if it lies inside the tuple and is aligned.
    fn read_at<T: Copy>(self, at: usize) -> Option<T> {
        (at + std::mem::size_of::<T>() <= self.len && at.is_multiple_of(std::mem::align_of::<T>())).then(
            || {
                // SAFETY: inside the tuple's bytes, aligned since the tuple is MAXALIGNed.
                unsafe { std::ptr::read(self.address().add(at).cast::<T>()) }
            },
        )
    }

    /// The heap row a leaf item points to.
    fn heap_tid(self) -> pg_sys::ItemPointerData {
        self.header().t_tid
    }

    /// A pivot's child (`BTreeTupleGetDownLink`).
    fn downlink(self) -> pg_sys::BlockNumber {
        let block = self.header().t_tid.ip_blkid;
        (u32::from(block.bi_hi) << 16) | u32::from(block.bi_lo)
    }

    /// A leaf item that is a posting list (`BTreeTupleIsPosting`).
    fn is_posting(self) -> bool {
        let header = self.header();
        header.t_info & INDEX_ALT_TID_MASK != 0 && header.t_tid.ip_posid & BT_IS_POSTING != 0
    }

    /// Whether attribute `attno` (1-based) is null (`att_isnull` on the bitmap after the header).
    fn is_null(self, attno: usize) -> Option<bool> {
        if self.info() & INDEX_NULL_MASK == 0 {
            return Some(false);
        }
        let at = std::mem::size_of::<pg_sys::IndexTupleData>() + (attno - 1) / 8;
        let bits: u8 = self.read_at(at)?;
        Some(bits & (1 << ((attno - 1) % 8)) == 0)
    }

    fn data_offset(self) -> usize {
        if self.info() & INDEX_NULL_MASK != 0 {
            DATA_OFFSET_NULLS
        } else {
            DATA_OFFSET
        }
    }

    /// The key of a leaf item, or of a pivot (`pivot`: an internal page's item or a high key),
    /// whose key may be truncated away (minus infinity). None if the tuple is too short for it.
    fn key(self, pivot: bool) -> Option<i64> {
        let header = self.header();
        if pivot && header.t_info & INDEX_ALT_TID_MASK != 0 && header.t_tid.ip_posid & BT_OFFSET_MASK == 0 {
            return Some(MINUS_INFINITY); // BTreeTupleGetNAtts() == 0
        }
        if self.is_null(1)? {
            return Some(NULL_KEY);
        }
        self.read_at::<i32>(self.data_offset()).map(i64::from)
    }

    /// The fingerprint a leaf item includes, None inside if it is null; None if the tuple is too
    /// short for it.
    fn fingerprint(self) -> Option<Option<u64>> {
        if self.is_null(2)? {
            return Some(None);
        }
        let fingerprint: i64 = self.read_at(self.data_offset() + FINGERPRINT_AFTER_KEY)?;
        Some(Some(fingerprint as u64))
    }
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

/// # Safety
/// Called by PostgreSQL's relcache invalidation machinery only (registered in
/// [`register_invalidation_callback`]).
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
/// what it must be; also counts the pages moved over.
///
/// # Safety
/// `index` must be an open and locked index for which [`layout_ok`] held, read under an MVCC
/// snapshot while this backend's xmin is the one its list was read under (the module's argument);
/// `block` one of its pages; `listed`, if given, the list's entry for `block`.
unsafe fn find_leaf(
    index: pg_sys::Relation,
    mut block: pg_sys::BlockNumber,
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
        // The LSN only matters for a page straight from the list of a WAL-logged index.
        let lsn = (logged && listed.is_some()).then(|| page.lsn());
        let known = listed
            .as_deref()
            .and_then(|entry| entry.seen)
            .filter(|seen| Some(seen.lsn) == lsn);
        let (next, high) = match known {
            Some(seen) => (seen.next, seen.high),
            None => {
                let opaque = page.opaque()?;
                let rightmost = opaque.btpo_next == P_NONE;
                if opaque.btpo_flags & (BTP_DELETED | BTP_HALF_DEAD) != 0 {
                    if rightmost {
                        return None;
                    }
                    block = opaque.btpo_next;
                    *moves += 1;
                    listed = None;
                    drop(page); // one page locked at a time, as a scan moving right
                    continue;
                }
                if opaque.btpo_flags & BTP_LEAF == 0 || opaque.btpo_level != 0 {
                    return None;
                }
                let high = match rightmost {
                    true => None,
                    false => Some(page.tuple(P_HIKEY)?.key(true)?),
                };
                if let (Some(entry), Some(lsn)) = (listed.as_deref_mut(), lsn) {
                    entry.seen = Some(Seen {
                        lsn,
                        next: opaque.btpo_next,
                        high,
                    });
                }
                (opaque.btpo_next, high)
            }
        };
        match high {
            Some(high) if high < value => low = high,
            _ => {
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

/// A page in shared buffers read without pin or lock, for [`prefetch`]'s hints alone: the buffer
/// may hold another page by now and writers may be changing it, so what its accessors return may
/// be stale or torn. They read with volatile loads, only inside the block (every offset taken from
/// the page is clamped into it), and what they return only chooses addresses to prefetch.
#[derive(Clone, Copy)]
struct UnlockedPage(*const u8);

/// Line pointers that fit between the page header and a B-tree page's special space.
const MAX_LINE_POINTERS: i64 = ((BTREE_SPECIAL - SIZE_OF_PAGE_HEADER_DATA) / LINE_POINTER_SIZE) as i64;

impl UnlockedPage {
    /// # Safety
    /// `buffer` must be a shared buffer (1 to `NBuffers`): its block is mapped for the life of the
    /// backend.
    unsafe fn of(buffer: pg_sys::Buffer) -> UnlockedPage {
        UnlockedPage(pg_sys::BufferGetPage(buffer) as *const u8)
    }

    fn read<T: Copy>(self, at: usize) -> T {
        assert!(at + std::mem::size_of::<T>() <= BLOCK_SIZE && at.is_multiple_of(std::mem::align_of::<T>()));
        // SAFETY: inside the mapped block (see `of`), aligned.
        unsafe { std::ptr::read_volatile(self.0.add(at).cast::<T>()) }
    }

    /// `PageGetMaxOffsetNumber`, at most [`MAX_LINE_POINTERS`].
    fn max_offset(self) -> i64 {
        let lower: u16 = self.read(std::mem::offset_of!(pg_sys::PageHeaderData, pd_lower));
        let count = usize::from(lower).saturating_sub(SIZE_OF_PAGE_HEADER_DATA) / LINE_POINTER_SIZE;
        (count as i64).min(MAX_LINE_POINTERS)
    }

    /// The right-link, if this is a B-tree page.
    fn next(self) -> pg_sys::BlockNumber {
        self.read(BTREE_SPECIAL + std::mem::offset_of!(BTPageOpaqueData, btpo_next))
    }

    fn line_pointer_offset(offset: i64) -> usize {
        SIZE_OF_PAGE_HEADER_DATA + (offset.clamp(1, MAX_LINE_POINTERS) as usize - 1) * LINE_POINTER_SIZE
    }

    fn line_pointer_address(self, offset: i64) -> *const u8 {
        self.0.wrapping_add(Self::line_pointer_offset(offset))
    }

    /// Where the line pointer of item `offset` says its tuple is, inside the block.
    fn item_address(self, offset: i64) -> *const u8 {
        let id: pg_sys::ItemIdData = self.read(Self::line_pointer_offset(offset));
        self.0.wrapping_add(item_id_offset_length(id).0 % BLOCK_SIZE)
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
/// binary search has steps. None if an item read is not a whole leaf item.
fn first_not_below(
    page: &Page,
    first: pg_sys::OffsetNumber,
    last: pg_sys::OffsetNumber,
    value: i64,
    low: i64,
    high: i64,
) -> Option<pg_sys::OffsetNumber> {
    // Invariant: the key at `lo` is below `value`, the key at `hi` is not; `first - 1` and
    // `last + 1` stand for the page's bounds.
    let (mut lo, mut hi) = (i64::from(first) - 1, i64::from(last) + 1);
    let (mut klo, mut khi) = (low, high);
    while hi - lo > 1 {
        if hi - lo <= SCAN_WIDTH {
            // A few items left: read all their keys at once (the misses overlap) rather than in
            // two or three rounds that each wait for the last.
            let mut scan = [None; SCAN_WIDTH as usize];
            for (slot, p) in scan.iter_mut().zip(lo + 1..hi) {
                let tuple = page.tuple(p as u16)?;
                prefetch_line(tuple.address());
                *slot = Some(tuple);
            }
            for (slot, p) in scan.iter().zip(lo + 1..hi) {
                if (*slot)?.key(false)? >= value {
                    return Some(p as u16);
                }
            }
            return Some(hi as u16);
        }
        let pivots = round_pivots(lo, hi, klo, khi, value);
        for &p in &pivots {
            prefetch_line(page.line_pointer(p as u16)?.cast());
        }
        let mut tuples = [None; 3];
        for (t, &p) in tuples.iter_mut().zip(&pivots) {
            let tuple = page.tuple(p as u16)?;
            prefetch_line(tuple.address());
            *t = Some(tuple);
        }
        for (&t, &p) in tuples.iter().zip(&pivots) {
            if p <= lo {
                continue;
            }
            let key = t?.key(false)?;
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
    Some(hi as u16)
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
    let relfilenode = compat::relfilenumber(index);
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

#[cfg(test)]
mod unit_tests {
    use pgrx::pg_sys;

    #[test]
    fn line_pointer_fields_by_shifts_match_the_bindings() {
        for (off, flags, len) in [
            (0, 0, 0),
            (8168, 1, 24),
            (0x7FFF, 3, 0x7FFF),
            (24, 2, 1),
            (4096, 0, 8),
        ] {
            let mut id = pg_sys::ItemIdData::default();
            id.set_lp_off(off);
            id.set_lp_flags(flags);
            id.set_lp_len(len);
            assert_eq!(super::item_id_offset_length(id), (off as usize, len as usize));
            assert_eq!((id.lp_off(), id.lp_flags(), id.lp_len()), (off, flags, len));
        }
    }
}
