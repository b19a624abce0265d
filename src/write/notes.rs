//! What a row's BEFORE trigger tells its check trigger (docs/ARCHITECTURE.md §8.5): the hash of the
//! text its value was computed from, so that the check trigger tests the stored value against the
//! stored text without computing it again, and, for the INSERT half of a row move, whether the
//! UPDATE changed the text or the scope. One note per row written, used up by the row's check
//! trigger (AFTER triggers fire in the order the rows were written, so a row's note is at the front
//! but for rows a later trigger dropped), forgotten at the end of the transaction.

use std::cell::RefCell;
use std::collections::VecDeque;

use pgrx::prelude::*;

use crate::text::Text;

/// A row's note.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Note {
    /// The hash of the text column's bytes the value was computed from ([`text_hash`]).
    pub text_hash: u64,
    /// The INSERT half of a row move: Some(whether the UPDATE changed the text or the scope).
    pub moved: Option<bool>,
}

/// (table, fingerprint column number of the attachment, value token).
type Key = (pg_sys::Oid, i32, Option<u64>);

/// A note with the subtransaction that wrote its row: a rolled-back subtransaction's rows are gone,
/// and their notes with them ([`forget_from`]).
type Entry = (Key, Note, pg_sys::SubTransactionId);

/// More notes than this (rows dropped by later BEFORE triggers pile up): start again; the check
/// trigger then computes the values again and checks a moved row as a new one.
const MAX: usize = 1 << 20;

thread_local! {
    static NOTES: RefCell<VecDeque<Entry>> = const { RefCell::new(VecDeque::new()) };
}

/// The hash of a text's bytes, as stored.
pub fn hash_bytes(bytes: &[u8]) -> u64 {
    simhash_core::hash::fnv1a64(bytes)
}

/// The hash of a text column value (None: NULL) as stored bytes ([`hash_bytes`]), its detoasted copy
/// freed at once (a text may be 1 GB).
///
/// # Safety
/// `text` must be a text datum.
pub unsafe fn text_hash(text: Option<pg_sys::Datum>) -> u64 {
    text.map_or(0, |d| Text::with_bytes(d, hash_bytes))
}

/// Notes `note` for the row of `table` the BEFORE trigger of the attachment whose fingerprint column
/// is `fp_att` passes on with value token `token`.
pub fn note(table: pg_sys::Oid, fp_att: i32, token: Option<u64>, note: Note) {
    NOTES.with(|n| {
        let mut n = n.borrow_mut();
        if n.len() >= MAX {
            n.clear();
        }
        let subtransaction = unsafe { pg_sys::GetCurrentSubTransactionId() };
        n.push_back(((table, fp_att, token), note, subtransaction));
    });
}

/// The note of the row the check trigger fires for, used up; None when there is none.
pub fn take(table: pg_sys::Oid, fp_att: i32, token: Option<u64>) -> Option<Note> {
    let key = (table, fp_att, token);
    NOTES.with(|n| {
        let mut n = n.borrow_mut();
        let at = n.iter().position(|(k, ..)| *k == key)?;
        n.remove(at).map(|(_, note, _)| note)
    })
}

/// Forgets the notes of the rows written in subtransaction `subid` and those it started (it is
/// rolled back): a later row with the same value must not be taken for one of them (issue 48).
pub fn forget_from(subid: pg_sys::SubTransactionId) {
    NOTES.with(|n| n.borrow_mut().retain(|&(_, _, s)| s < subid));
}

/// Forgets every note (the end of a transaction).
pub fn forget() {
    NOTES.with(|n| n.borrow_mut().clear());
}
