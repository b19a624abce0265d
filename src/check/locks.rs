//! The advisory locks that make concurrent near-duplicate writes meet (docs/ARCHITECTURE.md §8.2,
//! §8.10): SimHash locks k + 1 parts of a fingerprint, MinHash the keys of a signature's LSH bands,
//! both in one set of held keys per (sub)transaction and table.

use std::cell::RefCell;

use pgrx::prelude::*;

/// The fourth field of the tags of the extension's locks. `pg_advisory_lock(bigint)` makes tags with 1
/// there and `pg_advisory_lock(int, int)` with 2: no SQL call can take, or wait for, a lock of
/// this tag, so no role can block checked writes and no application's locks collide with them
/// (docs/ARCHITECTURE.md §8.2). In `pg_locks` they show as advisory locks with `objsubid` 21320.
pub const LOCK_TAG_FIELD4: u16 = 0x5348;

/// Takes the transaction-level locks `(relid, key)` (§8.2) for the keys of
/// `simhash_core::probe::lock_keys`: k+1 parts of the fingerprint, so that two writes within
/// distance k always wait for each other, whatever bands the lookup probes.
pub fn lock_parts(relid: pg_sys::Oid, fp: u64, max_distance: u32) {
    // Keys are (part << 8) | value with fewer than 32 parts: a slot each below MINHASH_SLOTS.
    lock_keys(
        relid,
        simhash_core::probe::lock_keys(fp, max_distance)
            .into_iter()
            .map(|key| (key, key as usize)),
    );
}

/// Takes the locks `(relid, key)` of `keys` (tag [`LOCK_TAG_FIELD4`]), each given with its slot in the set of held
/// locks (`slot` ≥ [`HELD_SLOTS`]: not remembered).
///
/// A lock this (sub)transaction already took is not asked for again: transaction-level advisory
/// locks stay held until the (sub)transaction that took them ends, so while the same one is
/// current the lock manager would only count one more hold. A bulk insert comes to hold every key
/// of a table after a few thousand rows, and then takes no lock at all per row.
pub fn lock_keys(relid: pg_sys::Oid, keys: impl IntoIterator<Item = (u32, usize)>) {
    let owner = unsafe {
        (
            crate::compat::local_transaction_id(),
            pg_sys::GetCurrentSubTransactionId(),
            relid,
        )
    };
    for (key, slot) in keys {
        let (word, bit) = (slot / 64 % HELD_WORDS, 1u64 << (slot % 64));
        let known = HELD_LOCKS.with(|h| {
            let mut h = h.borrow_mut();
            if h.0 != owner {
                *h = (owner, [0; HELD_WORDS]);
            }
            slot < HELD_SLOTS && h.1[word] & bit != 0
        });
        if known {
            continue;
        }
        let tag = pg_sys::LOCKTAG {
            locktag_field1: unsafe { pg_sys::MyDatabaseId }.to_u32(),
            locktag_field2: relid.to_u32(),
            locktag_field3: key,
            locktag_field4: LOCK_TAG_FIELD4,
            locktag_type: pg_sys::LockTagType::LOCKTAG_ADVISORY as u8,
            locktag_lockmethodid: pg_sys::USER_LOCKMETHOD as u8,
        };
        unsafe { pg_sys::LockAcquire(&tag, pg_sys::ExclusiveLock as pg_sys::LOCKMODE, false, false) };
        // Recorded only once granted: an error (a deadlock, a cancel) leaves the set without it.
        if slot < HELD_SLOTS {
            HELD_LOCKS.with(|h| h.borrow_mut().1[word] |= bit);
        }
    }
}

/// Slots of the set of held lock keys: 32 parts of 8 bits (SimHash), then from `MINHASH_SLOTS`
/// the `MINHASH_LOCK_SLOTS` of MinHash band keys (`crate::method::minhash::lsh`).
pub const MINHASH_SLOTS: usize = 32 * 256;
pub const MINHASH_LOCK_SLOTS: usize = 32 * 128;
const HELD_SLOTS: usize = MINHASH_SLOTS + MINHASH_LOCK_SLOTS;
const HELD_WORDS: usize = HELD_SLOTS.div_ceil(64);

thread_local! {
    /// The advisory lock keys known to be held on one table, with the (local transaction,
    /// subtransaction, table) they are held for: the set is emptied as soon as another one is
    /// current.
    static HELD_LOCKS: RefCell<((u32, pg_sys::SubTransactionId, pg_sys::Oid), [u64; HELD_WORDS])> =
        const { RefCell::new(((0, 0, pg_sys::Oid::INVALID), [0; HELD_WORDS])) };
}

/// Lock values per LSH band: a band key takes the lock of (band, key mod 128). The set of held
/// locks has room for the default 32 bands (keys of later bands are locked without being
/// remembered).
const LOCKS_PER_BAND: usize = 128;
const _: () = assert!(MINHASH_LOCK_SLOTS == 32 * LOCKS_PER_BAND);
/// MinHash lock keys start above every SimHash lock key (fewer than 32 parts of 256 values).
const LOCK_BASE: u32 = 1 << 16;

/// Takes the advisory locks of a signature's band keys on `relid`, in ascending order. Two
/// signatures that share a band have that band's key, hence its lock, in common (§8.10); at most
/// 128 locks per band, 4,096 per table at the default 32 bands, whatever the number of rows.
pub fn lock_band_keys(relid: pg_sys::Oid, keys: &[i64]) {
    lock_keys(
        relid,
        keys.iter().enumerate().map(|(band, &key)| {
            let slot = band * LOCKS_PER_BAND + (key as u64 % LOCKS_PER_BAND as u64) as usize;
            (LOCK_BASE + slot as u32, MINHASH_SLOTS + slot)
        }),
    );
}
