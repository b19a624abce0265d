//! The per-backend cache of leaf lists: for each band index (by OID) the [`LeafList`] that
//! [`super::leafmap`] read of it, kept while it stays right (docs/ARCHITECTURE.md §5.3). A relcache
//! invalidation of the index (or of every relation) drops its list; a new relfilenode replaces it
//! by an empty one. A list kept from an older xmin (the transactions before) is marked stale, its
//! leaves checked as they are used, and replaced by an empty one if long or if the backend keeps
//! many. A list is taken out of the cache for the length of one call ([`take`]) and put back after
//! it ([`Taken::put_back`]) unless an invalidation arrived meanwhile.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use pgrx::prelude::*;

use crate::compat;

/// A leaf page as a list knows it.
#[derive(Clone, Copy)]
pub(super) struct Listed {
    /// The lowest key the page may hold (at most its real lowest key).
    pub(super) low: i64,
    pub(super) block: u32,
    /// The buffer the page was last read from, 0 if none.
    pub(super) recent: pg_sys::Buffer,
    /// What the page said when last read, valid while its LSN is the same.
    pub(super) seen: Option<Seen>,
}

/// What a leaf page said when it was last read: every change to a page of a WAL-logged index sets
/// its LSN (a split changes the high key and the right-link, a deletion the flags), so while the
/// LSN stays the same these need not be read again; the lookups read the page's items anyway.
#[derive(Clone, Copy)]
pub(super) struct Seen {
    pub(super) lsn: u64,
    pub(super) next: u32,
    pub(super) high: Option<i64>,
}

impl Listed {
    pub(super) fn new(low: i64, block: u32) -> Listed {
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
pub(super) struct LeafList {
    pub(super) relfilenode: pg_sys::Oid,
    pub(super) xmin: pg_sys::TransactionId,
    /// None until checked; Some(false) when this index cannot be read here.
    pub(super) usable: Option<bool>,
    pub(super) leaves: Vec<Listed>,
    /// Whether the index is WAL-logged, so that its pages' LSNs tell changes ([`Seen`]).
    pub(super) logged: bool,
    pub(super) plain_probes: u32,
    pub(super) reread: bool,
}

impl LeafList {
    /// Whether the list was read under another xmin than this backend advertises now: pages listed
    /// may have been deleted and reused since, so each leaf taken from the list is checked before
    /// it is trusted (`super::leafmap`, docs/ARCHITECTURE.md §5.3).
    ///
    /// # Safety
    /// The backend must have a `MyProc`.
    pub(super) unsafe fn stale(&self) -> bool {
        self.xmin != (*pg_sys::MyProc).xmin
    }
}

/// The longest list kept from one xmin to the next (about 450 kB, the leaves of two million band
/// entries): a longer one is read again in each transaction that needs it, as memory a backend
/// keeps between transactions should stay small.
const KEPT_LEAVES: usize = 8192;
/// The leaves of all the lists a backend keeps from one xmin to the next (about 1.8 MB): past it,
/// a list is read again in each transaction.
const KEPT_TOTAL: usize = 32768;

thread_local! {
    static LISTS: RefCell<HashMap<pg_sys::Oid, LeafList>> = RefCell::new(HashMap::new());
    /// Counts relcache invalidations, so that a list taken out while one arrives is dropped.
    static INVALIDATIONS: Cell<u64> = const { Cell::new(0) };
    static CALLBACK_REGISTERED: Cell<bool> = const { Cell::new(false) };
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

/// Registers the relcache callback that counts invalidations and drops the lists of indexes.
fn register_invalidation_callback() {
    if !CALLBACK_REGISTERED.with(Cell::get) {
        unsafe { pg_sys::CacheRegisterRelcacheCallback(Some(relcache_invalidated), pg_sys::Datum::from(0)) };
        CALLBACK_REGISTERED.with(|r| r.set(true));
    }
}

/// A leaf list taken out of the cache while its index's pages are read, so that an invalidation
/// arriving meanwhile finds no borrow.
pub(super) struct Taken {
    relid: pg_sys::Oid,
    /// [`INVALIDATIONS`] when the list was taken out.
    invalidations: u64,
    pub(super) list: LeafList,
}

/// Takes the list of `index` out of the cache: the one kept for it if it was read from the same
/// relfilenode (stale if under another xmin than this backend advertises now, and dropped then
/// if longer than [`KEPT_LEAVES`] or past [`KEPT_TOTAL`] with the others), else an empty one
/// (which keeps only whether the same relfilenode is usable).
///
/// # Safety
/// `index` must be an open index relation; the backend must have a `MyProc`.
pub(super) unsafe fn take(index: pg_sys::Relation) -> Taken {
    register_invalidation_callback();
    let relid = (*index).rd_id;
    let relfilenode = compat::relfilenumber(index);
    let xmin = (*pg_sys::MyProc).xmin;
    // Taken out while pages are read, so that an invalidation arriving meanwhile finds no borrow.
    let mut list = LISTS
        .with(|lists| lists.borrow_mut().get_mut(&relid).map(std::mem::take))
        .unwrap_or_default();
    let invalidations = INVALIDATIONS.with(Cell::get);
    let too_many = || {
        let others: usize = LISTS.with(|lists| lists.borrow().values().map(|l| l.leaves.len()).sum());
        list.leaves.len() > KEPT_LEAVES || others + list.leaves.len() > KEPT_TOTAL
    };
    if list.relfilenode != relfilenode || (list.xmin != xmin && too_many()) {
        list = LeafList {
            relfilenode,
            xmin,
            usable: list.usable.filter(|_| list.relfilenode == relfilenode),
            ..LeafList::default()
        };
    }
    Taken {
        relid,
        invalidations,
        list,
    }
}

impl Taken {
    /// Puts the list back into the cache, unless a relcache invalidation arrived since it was
    /// taken out (it may be about this index: the list is dropped).
    pub(super) fn put_back(self) {
        if INVALIDATIONS.with(Cell::get) == self.invalidations {
            LISTS.with(|lists| *lists.borrow_mut().entry(self.relid).or_default() = self.list);
        }
    }
}

/// Makes the list of the index `relid` what it could be after its pages were deleted and reused
/// elsewhere in the index: every leaf's block is another leaf's (a rotation by `shift`), nothing is
/// known of them, and the list is stale (read under no xmin this backend advertises). Tests show that a stale list is checked as it is used.
#[cfg(any(test, feature = "pg_test"))]
pub fn scramble(relid: pg_sys::Oid, shift: usize) -> usize {
    LISTS.with(|lists| {
        let mut lists = lists.borrow_mut();
        let Some(list) = lists.get_mut(&relid) else {
            return 0;
        };
        let blocks: Vec<u32> = list.leaves.iter().map(|l| l.block).collect();
        let n = blocks.len();
        for (i, leaf) in list.leaves.iter_mut().enumerate() {
            (leaf.block, leaf.recent, leaf.seen) = (blocks[(i + shift) % n], 0, None);
        }
        list.xmin = pg_sys::InvalidTransactionId;
        n
    })
}
