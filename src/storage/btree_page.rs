//! The B-tree page reader: a band index's pages read directly, through typed views of the layout
//! PostgreSQL declares for them. [`Page`] is a page pinned and share-locked for as long as it lives,
//! [`Tuple`] an index tuple on it, [`UnlockedPage`] the lock-free view that only chooses addresses
//! for cache hints; nbtree.h's `BTPageOpaqueData` and `BTMetaPageData` and the constants the reader
//! needs are declared here, once. What is read of each page and why that is safe is below; what
//! the pages are read for, in [`super::leafmap`] (docs/ARCHITECTURE.md §5.2).
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
//! `BufferGetLSNAtomic`. The leaf map's [`prefetch`](super::leafmap::prefetch) alone reads pages
//! without a lock, for cache hints only ([`UnlockedPage`]).
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
//! by default (hence the atomic LSN read). The relation fields [`super::leafmap`] reads were renamed:
//! `rd_node` / `rd_firstRelfilenodeSubid` (14, 15) became `rd_locator` /
//! `rd_firstRelfilelocatorSubid` (16 on), and 18 put compact attributes before `TupleDescData`'s
//! `attrs`; they are read through `crate::compat` (src/compat.rs).

use std::cell::Cell;

use pgrx::prelude::*;

use crate::compat;

// What the reader reads of a page, as PostgreSQL declares it. The page header (`PageHeaderData`,
// storage/bufpage.h), its line pointers (`ItemIdData`, storage/itemid.h) and index tuples
// (`IndexTupleData`, access/itup.h) come from pgrx's bindings. Those bindings leave out
// access/nbtree.h, so the B-tree's own declarations are repeated here with nbtree.h's names, sizes
// and values: `BTPageOpaqueData`, `BTMetaPageData` and the constants below (checked identical in
// PostgreSQL 14 to 18, see "Layouts" in the module documentation).

/// `BTPageOpaqueData`: the special space at the end of every B-tree page.
#[repr(C)]
#[derive(Clone, Copy)]
pub(super) struct BTPageOpaqueData {
    /// Left sibling, or `P_NONE` on the leftmost page of a level.
    pub(super) btpo_prev: pg_sys::BlockNumber,
    /// Right sibling, or `P_NONE` on the rightmost page of a level.
    pub(super) btpo_next: pg_sys::BlockNumber,
    /// 0 for leaves.
    pub(super) btpo_level: u32,
    pub(super) btpo_flags: u16,
    pub(super) btpo_cycleid: u16,
}

/// `BTMetaPageData`: the contents of block 0 (`BTREE_METAPAGE`), after its page header.
#[repr(C)]
#[derive(Clone, Copy)]
pub(super) struct BTMetaPageData {
    pub(super) btm_magic: u32,
    pub(super) btm_version: u32,
    pub(super) btm_root: pg_sys::BlockNumber,
    pub(super) btm_level: u32,
    pub(super) btm_fastroot: pg_sys::BlockNumber,
    pub(super) btm_fastlevel: u32,
    pub(super) btm_last_cleanup_num_delpages: u32,
    pub(super) btm_last_cleanup_num_heap_tuples: f64,
    /// Whether deduplication (posting lists) may be used: never for an index with INCLUDE columns.
    pub(super) btm_allequalimage: bool,
}

// The sizes nbtree.h's declarations have on the 64-bit platforms pgrx supports.
const _: () = assert!(std::mem::size_of::<BTPageOpaqueData>() == 16);
const _: () = assert!(std::mem::size_of::<BTMetaPageData>() == 48);
const _: () = assert!(std::mem::size_of::<pg_sys::IndexTupleData>() == 8);
const _: () = assert!(std::mem::size_of::<pg_sys::ItemIdData>() == 4);
const _: () = assert!(SIZE_OF_PAGE_HEADER_DATA == 24);

pub(super) const BTREE_METAPAGE: pg_sys::BlockNumber = 0;
const BTREE_MAGIC: u32 = 0x053162;
/// The only version read: heap TIDs are a key attribute and pivots say how many attributes they
/// kept (PostgreSQL 12 and later; indexes built before 12 and carried over by pg_upgrade keep 2 or
/// 3 until rebuilt, and are left to index scans).
pub(super) const BTREE_VERSION: u32 = 4;
pub(super) const BTP_LEAF: u16 = 1 << 0;
pub(super) const BTP_DELETED: u16 = 1 << 2;
const BTP_META: u16 = 1 << 3;
pub(super) const BTP_HALF_DEAD: u16 = 1 << 4;
pub(super) const P_NONE: pg_sys::BlockNumber = 0;
/// The high key of a page that is not rightmost; its first item otherwise.
pub(super) const P_HIKEY: pg_sys::OffsetNumber = 1;
/// The first item after the high key.
pub(super) const P_FIRSTKEY: pg_sys::OffsetNumber = 2;
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
pub(super) const BTREE_SPECIAL: usize = BLOCK_SIZE - maxalign(std::mem::size_of::<BTPageOpaqueData>());
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
pub(super) const MINUS_INFINITY: i64 = i64::MIN;
pub(super) const NULL_KEY: i64 = i64::MAX;

/// A pinned and share-locked page of a band index: the only way the storage modules read a page's
/// contents under a lock (the lock-free hints of [`UnlockedPage`] aside).
///
/// It can only be built by [`Page::read`] and [`Page::read_recent`], which pin the buffer and take
/// its share lock; [`Drop`] releases both. While it lives no other backend can change the bytes it
/// reads (page changes take the exclusive lock; what a share-lock holder may set, an item's
/// `LP_DEAD` hint and `BTP_HAS_GARBAGE`, is nothing read here), so its accessors are safe: each reads
/// inside the page's `BLCKSZ` bytes and checks what it takes from the page (a line pointer's
/// offset and length, a tuple's attribute offsets) before following it. Whether the page is the
/// B-tree page the caller expects is the caller's to check, through [`Page::opaque`] and
/// [`Page::meta`].
pub(super) struct Page {
    buffer: pg_sys::Buffer,
    header: *const pg_sys::PageHeaderData,
    /// Items on the page (`PageGetMaxOffsetNumber`), bounded so that their line pointers lie in it.
    max_offset: pg_sys::OffsetNumber,
}

impl Page {
    /// # Safety
    /// As [`Page::read_recent`].
    pub(super) unsafe fn read(index: pg_sys::Relation, block: pg_sys::BlockNumber) -> Page {
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
    pub(super) unsafe fn read_recent(
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
    pub(super) fn lsn(&self) -> u64 {
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
    pub(super) fn opaque(&self) -> Option<BTPageOpaqueData> {
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
    pub(super) fn meta(&self) -> Option<BTMetaPageData> {
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

    pub(super) fn max_offset(&self) -> pg_sys::OffsetNumber {
        self.max_offset
    }

    /// Where the line pointer of item `offset` lies (`PageGetItemId`), if `1 <= offset <=
    /// max_offset`.
    pub(super) fn line_pointer(&self, offset: pg_sys::OffsetNumber) -> Option<*const pg_sys::ItemIdData> {
        (offset.wrapping_sub(1) < self.max_offset).then(|| {
            // SAFETY: inside the line pointer array, which `max_offset` keeps inside the block.
            unsafe { (*self.header).pd_linp.as_ptr().add(usize::from(offset) - 1) }
        })
    }

    /// The index tuple at `offset` (`PageGetItem`), or None if `offset` is not an item of the
    /// page, or its line pointer does not place a whole `MAXALIGN`ed tuple of at least a header's
    /// size inside the page.
    pub(super) fn tuple(&self, offset: pg_sys::OffsetNumber) -> Option<Tuple<'_>> {
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
pub(super) fn first_data_key(opaque: &BTPageOpaqueData) -> pg_sys::OffsetNumber {
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
pub(super) struct Tuple<'p> {
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

    pub(super) fn address(self) -> *const u8 {
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
    pub(super) fn heap_tid(self) -> pg_sys::ItemPointerData {
        self.header().t_tid
    }

    /// A pivot's child (`BTreeTupleGetDownLink`).
    pub(super) fn downlink(self) -> pg_sys::BlockNumber {
        let block = self.header().t_tid.ip_blkid;
        (u32::from(block.bi_hi) << 16) | u32::from(block.bi_lo)
    }

    /// A leaf item that is a posting list (`BTreeTupleIsPosting`).
    pub(super) fn is_posting(self) -> bool {
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
    pub(super) fn key(self, pivot: bool) -> Option<i64> {
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
    pub(super) fn fingerprint(self) -> Option<Option<u64>> {
        if self.is_null(2)? {
            return Some(None);
        }
        let fingerprint: i64 = self.read_at(self.data_offset() + FINGERPRINT_AFTER_KEY)?;
        Some(Some(fingerprint as u64))
    }
}

/// A page in shared buffers read without pin or lock, for the hints of
/// [`prefetch`](super::leafmap::prefetch) alone: the buffer may hold another page by now and
/// writers may be changing it, so what its accessors return may be stale or torn. They read with
/// volatile loads, only inside the block (every offset taken from the page is clamped into it),
/// and what they return only chooses addresses to prefetch.
#[derive(Clone, Copy)]
pub(super) struct UnlockedPage(pub(super) *const u8);

/// Line pointers that fit between the page header and a B-tree page's special space.
const MAX_LINE_POINTERS: i64 = ((BTREE_SPECIAL - SIZE_OF_PAGE_HEADER_DATA) / LINE_POINTER_SIZE) as i64;

impl UnlockedPage {
    /// # Safety
    /// `buffer` must be a shared buffer (1 to `NBuffers`): its block is mapped for the life of the
    /// backend.
    pub(super) unsafe fn of(buffer: pg_sys::Buffer) -> UnlockedPage {
        UnlockedPage(pg_sys::BufferGetPage(buffer) as *const u8)
    }

    fn read<T: Copy>(self, at: usize) -> T {
        assert!(at + std::mem::size_of::<T>() <= BLOCK_SIZE && at.is_multiple_of(std::mem::align_of::<T>()));
        // SAFETY: inside the mapped block (see `of`), aligned.
        unsafe { std::ptr::read_volatile(self.0.add(at).cast::<T>()) }
    }

    /// `PageGetMaxOffsetNumber`, at most [`MAX_LINE_POINTERS`].
    pub(super) fn max_offset(self) -> i64 {
        let lower: u16 = self.read(std::mem::offset_of!(pg_sys::PageHeaderData, pd_lower));
        let count = usize::from(lower).saturating_sub(SIZE_OF_PAGE_HEADER_DATA) / LINE_POINTER_SIZE;
        (count as i64).min(MAX_LINE_POINTERS)
    }

    /// The right-link, if this is a B-tree page.
    pub(super) fn next(self) -> pg_sys::BlockNumber {
        self.read(BTREE_SPECIAL + std::mem::offset_of!(BTPageOpaqueData, btpo_next))
    }

    fn line_pointer_offset(offset: i64) -> usize {
        SIZE_OF_PAGE_HEADER_DATA + (offset.clamp(1, MAX_LINE_POINTERS) as usize - 1) * LINE_POINTER_SIZE
    }

    pub(super) fn line_pointer_address(self, offset: i64) -> *const u8 {
        self.0.wrapping_add(Self::line_pointer_offset(offset))
    }

    /// Where the line pointer of item `offset` says its tuple is, inside the block.
    pub(super) fn item_address(self, offset: i64) -> *const u8 {
        let id: pg_sys::ItemIdData = self.read(Self::line_pointer_offset(offset));
        self.0.wrapping_add(item_id_offset_length(id).0 % BLOCK_SIZE)
    }
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
