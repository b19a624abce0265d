//! The key locks that make a checked write and a concurrent near-duplicate write meet
//! (docs/ARCHITECTURE.md §8.8): SimHash locks k + 1 parts of a fingerprint, MinHash the keys
//! of a signature's LSH bands.
//!
//! A writer holds its row's keys only while the row is not yet in the band indexes: from before
//! its search until the row is written (released when the next row of the same table starts, when
//! the statement finishes, or when its portal ends), never until the transaction ends. A writer
//! that finds a row of a transaction still in progress lets its keys go before it waits for that
//! transaction (`wait_for`): no key is ever held while waiting for a transaction, so an open
//! transaction holds up only the writers of near-duplicates of its own rows (§8.8).
//!
//! The Citus registry's coordinator keeps the older contract (`lock_parts_for_transaction`): its
//! keys are held to the end of the transaction (§8.7).

use std::cell::{Cell, RefCell};

use pgrx::prelude::*;

/// The fourth field of the tags of the extension's locks. `pg_advisory_lock(bigint)` makes tags with 1
/// there and `pg_advisory_lock(int, int)` with 2: no SQL call can take, or wait for, a lock of
/// this tag, so no role can block checked writes and no application's locks collide with them
/// (docs/ARCHITECTURE.md §13.4). In `pg_locks` they show as advisory locks with `objsubid` 21320.
pub const LOCK_TAG_FIELD4: u16 = 0x5348;

/// Lock values per LSH band: a band key takes the lock of (band, key mod 128).
const LOCKS_PER_BAND: u64 = 128;
/// MinHash lock keys start above every SimHash lock key (fewer than 32 parts of 256 values).
const LOCK_BASE: u32 = 1 << 16;

/// The lock keys of fingerprint `fp` at distance `max_distance`: `simhash_core::probe::lock_keys`,
/// k + 1 parts, so that two writes within distance k always share one, whatever bands a lookup
/// probes (§4.6). Ascending.
pub fn part_keys(fp: u64, max_distance: u32) -> Vec<u32> {
    simhash_core::probe::lock_keys(fp, max_distance)
}

/// The lock keys of a signature's band keys: two signatures that share a band have that band's
/// key, hence its lock key, in common (§8.8). Ascending (bands are in the high part).
pub fn band_lock_keys(keys: &[i64]) -> Vec<u32> {
    keys.iter()
        .enumerate()
        .map(|(band, &key)| LOCK_BASE + (band as u64 * LOCKS_PER_BAND + key as u64 % LOCKS_PER_BAND) as u32)
        .collect()
}

fn tag_of(relid: pg_sys::Oid, key: u32) -> pg_sys::LOCKTAG {
    pg_sys::LOCKTAG {
        locktag_field1: unsafe { pg_sys::MyDatabaseId }.to_u32(),
        locktag_field2: relid.to_u32(),
        locktag_field3: key,
        locktag_field4: LOCK_TAG_FIELD4,
        locktag_type: pg_sys::LockTagType::LOCKTAG_ADVISORY as u8,
        locktag_lockmethodid: pg_sys::USER_LOCKMETHOD as u8,
    }
}

const EXCLUSIVE: pg_sys::LOCKMODE = pg_sys::ExclusiveLock as pg_sys::LOCKMODE;

/// Takes the transaction-level locks `(relid, key)` of `keys`, held to the end of the transaction
/// (released at the end of a subtransaction that aborts): the Citus registry's check on the
/// coordinator (§7.5, §8.7), whose rows are written on workers where no search could see them in
/// progress.
pub fn lock_for_transaction(relid: pg_sys::Oid, keys: &[u32]) {
    for &key in keys {
        let tag = tag_of(relid, key);
        unsafe { pg_sys::LockAcquire(&tag, EXCLUSIVE, false, false) };
    }
}

/// A key held for a row not yet in the band indexes.
struct Held {
    relid: pg_sys::Oid,
    key: u32,
    mode: pg_sys::LOCKMODE,
    /// `pg_trigger_depth()` of the trigger that took it.
    depth: i32,
    /// The subtransaction it was taken in.
    subid: pg_sys::SubTransactionId,
}

thread_local! {
    static HELD: RefCell<Vec<Held>> = const { RefCell::new(Vec::new()) };
    /// The portal context a reset callback is registered on (see `release_at_portal_end`).
    static PORTAL_WATCHED: Cell<pg_sys::MemoryContext> = const { Cell::new(std::ptr::null_mut()) };
    /// The statement whose first row a check after the write saw last: (command id, trigger depth,
    /// attached table).
    static STATEMENT: Cell<(pg_sys::CommandId, i32, pg_sys::Oid)> =
        const { Cell::new((0, 0, pg_sys::Oid::INVALID)) };
}

/// The key of a table's rows checked after they are written (§8.8), above every part and band key.
const WRITTEN_KEY: u32 = u32::MAX;
/// The mode a row checked after its write takes [`WRITTEN_KEY`] in: such rows never wait for each
/// other on it.
const WRITTEN: pg_sys::LOCKMODE = pg_sys::RowExclusiveLock as pg_sys::LOCKMODE;
/// The mode a row checked before its write takes [`WRITTEN_KEY`] in: it conflicts with [`WRITTEN`]
/// only.
const CHECKING: pg_sys::LOCKMODE = pg_sys::ShareLock as pg_sys::LOCKMODE;

/// The nesting depth of triggers now (`pg_trigger_depth()`): 1 in a trigger of a top-level
/// statement, 0 outside triggers.
pub fn trigger_depth() -> i32 {
    unsafe { pgrx::direct_function_call::<i32>(pg_sys::pg_trigger_depth, &[]) }.unwrap_or(0)
}

/// Takes `(relid, key)` in `mode`, session-level, unless held already; to be let go by
/// [`release_row`], [`release_statement`], [`release_before_wait`], a portal's end or the
/// transaction's end.
unsafe fn take(relid: pg_sys::Oid, key: u32, mode: pg_sys::LOCKMODE, depth: i32) {
    if HELD.with(|h| {
        h.borrow()
            .iter()
            .any(|x| x.relid == relid && x.key == key && x.mode == mode)
    }) {
        return;
    }
    let tag = tag_of(relid, key);
    pg_sys::LockAcquire(&tag, mode, true, false);
    // Recorded only once granted: an error (a deadlock, a cancel) leaves the list without it.
    HELD.with(|h| {
        h.borrow_mut().push(Held {
            relid,
            key,
            mode,
            depth,
            subid: pg_sys::GetCurrentSubTransactionId(),
        })
    });
}

/// Takes the keys of a row about to be searched for and then written into attached table `relid`
/// (or one of its partitions): `keys` exclusively, in ascending order, after [`WRITTEN_KEY`] in
/// [`CHECKING`] mode when the table also has rows checked after they are written
/// (`checked_after`, §8.8).
///
/// # Safety
/// Call inside a transaction, from the row's BEFORE trigger.
pub unsafe fn lock_row(relid: pg_sys::Oid, keys: &[u32], checked_after: bool) {
    let depth = trigger_depth();
    release_at_portal_end();
    if checked_after {
        take(relid, WRITTEN_KEY, CHECKING, depth);
    }
    for &key in keys {
        take(relid, key, EXCLUSIVE, depth);
    }
}

/// Takes the keys of a row that is checked once written (§8.8), from its BEFORE trigger: so that it
/// is not written while a check made before a write holds them, [`WRITTEN_KEY`] in [`WRITTEN`]
/// mode, which rows checked after their writes never wait for each other on; and, for the first row
/// of a statement, its own `keys`, held through the statement's check, so that two single-row
/// statements writing near-duplicates at once meet in order (the second gets 23505) rather than each
/// finding the other's row and waiting for it (a deadlock).
///
/// # Safety
/// As [`lock_row`].
pub unsafe fn lock_written(relid: pg_sys::Oid, keys: &[u32]) {
    let depth = trigger_depth();
    release_at_portal_end();
    take(relid, WRITTEN_KEY, WRITTEN, depth);
    let statement = (pg_sys::GetCurrentCommandId(false), depth, relid);
    if STATEMENT.with(|s| s.replace(statement)) != statement {
        for &key in keys {
            take(relid, key, EXCLUSIVE, depth);
        }
    }
}

/// Lets go the keys `release` accepts.
fn release_where(release: impl Fn(&Held) -> bool) {
    let gone: Vec<Held> = HELD.with(|h| {
        let mut h = h.borrow_mut();
        let (gone, kept) = std::mem::take(&mut *h).into_iter().partition(|x| release(x));
        *h = kept;
        gone
    });
    for x in gone {
        let tag = tag_of(x.relid, x.key);
        unsafe { pg_sys::LockRelease(&tag, x.mode, true) };
    }
}

/// At the start of a row's BEFORE trigger on attached table `relid` (or a partition of it): the rows
/// its triggers fired for before, at this depth (the rows of a statement are written one after the
/// other, into whichever partition) or deeper, are written now, and their keys go.
pub fn release_row(relid: pg_sys::Oid) {
    if HELD.with(|h| h.borrow().is_empty()) {
        return;
    }
    let depth = trigger_depth();
    release_where(|x| x.depth > depth || (x.depth == depth && x.relid == relid));
}

/// When a statement that writes rows finishes (its rows are all written): the keys its rows' triggers
/// took, deeper than where the statement runs.
pub fn release_statement() {
    if HELD.with(|h| h.borrow().is_empty()) {
        return;
    }
    let depth = trigger_depth();
    release_where(|x| x.depth > depth);
}

/// Before waiting for another transaction: the keys of the rows being checked (taken at trigger
/// depth `rows_depth`) and of any row deeper; a row of an enclosing statement not written yet keeps
/// its own.
pub fn release_before_wait(rows_depth: i32) {
    release_where(|x| x.depth >= rows_depth);
}

/// Everything (the end of the transaction).
pub fn release_all() {
    STATEMENT.with(|s| s.set((0, 0, pg_sys::Oid::INVALID)));
    release_where(|_| true);
}

/// The keys taken in subtransaction `subid` or in those it started: it aborted.
pub fn release_subtransaction(subid: pg_sys::SubTransactionId) {
    release_where(|x| x.subid >= subid);
}

/// Lets the keys go when the current portal's memory goes: a COPY runs no executor of its own, so
/// its last row's keys would otherwise wait for the next statement or the transaction's end.
unsafe fn release_at_portal_end() {
    let portal = pg_sys::PortalContext;
    if portal.is_null() || PORTAL_WATCHED.with(Cell::get) == portal {
        return;
    }
    let callback =
        pg_sys::MemoryContextAllocZero(portal, std::mem::size_of::<pg_sys::MemoryContextCallback>())
            as *mut pg_sys::MemoryContextCallback;
    (*callback).func = Some(portal_gone);
    (*callback).arg = std::ptr::null_mut();
    pg_sys::MemoryContextRegisterResetCallback(portal, callback);
    PORTAL_WATCHED.with(|p| p.set(portal));
}

#[pg_guard]
unsafe extern "C-unwind" fn portal_gone(_arg: *mut std::ffi::c_void) {
    PORTAL_WATCHED.with(|p| p.set(std::ptr::null_mut()));
    release_statement();
}

/// Waits for transaction `xid`, which wrote or is deleting the row at `tid` of `rel` (null: not
/// named in the wait's context), to end, after letting go the keys of the rows being checked,
/// taken at trigger depth `rows_depth` (§8.8).
///
/// # Safety
/// `rel` must be open or null.
pub unsafe fn wait_for(
    xid: pg_sys::TransactionId,
    rel: pg_sys::Relation,
    tid: pg_sys::ItemPointerData,
    rows_depth: i32,
) {
    release_before_wait(rows_depth);
    let mut tid = tid;
    let oper = if rel.is_null() {
        pg_sys::XLTW_Oper::XLTW_None
    } else {
        pg_sys::XLTW_Oper::XLTW_InsertIndexUnique
    };
    pg_sys::XactLockTableWait(xid, rel, &mut tid, oper);
}

/// Installs the transaction callbacks that let every key go (from `_PG_init`).
pub fn register() {
    unsafe {
        pg_sys::RegisterXactCallback(Some(xact_callback), std::ptr::null_mut());
        pg_sys::RegisterSubXactCallback(Some(subxact_callback), std::ptr::null_mut());
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn xact_callback(event: pg_sys::XactEvent::Type, _arg: *mut std::ffi::c_void) {
    use pg_sys::XactEvent::*;
    // Session-level locks outlive the transaction unless let go: at its end, whatever the end.
    if matches!(
        event,
        XACT_EVENT_PRE_COMMIT
            | XACT_EVENT_PRE_PREPARE
            | XACT_EVENT_ABORT
            | XACT_EVENT_PARALLEL_ABORT
            | XACT_EVENT_COMMIT
            | XACT_EVENT_PREPARE
    ) {
        release_all();
        PORTAL_WATCHED.with(|p| p.set(std::ptr::null_mut()));
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn subxact_callback(
    event: pg_sys::SubXactEvent::Type,
    subid: pg_sys::SubTransactionId,
    _parent: pg_sys::SubTransactionId,
    _arg: *mut std::ffi::c_void,
) {
    if event == pg_sys::SubXactEvent::SUBXACT_EVENT_ABORT_SUB {
        release_subtransaction(subid);
    }
}
