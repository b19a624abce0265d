//! The methods of finding near-duplicates (docs/ARCHITECTURE.md §15). Each method is a module
//! with its own settings (`crate::attachment::Method`) and engine: how a text becomes the value
//! stored (`simhash::fingerprint`, `minhash::lsh`), how a written row is checked (`check`), how a
//! lookup finds rows (`lookup`), how a table is deduplicated (`dedup`).
//! Here is the one interface the trigger, the lookups and dedup call, one `match` on the method
//! per operation: a new method is a new module and one new arm in each.

pub mod common;
pub mod minhash;
pub mod simhash;

pub use common::{open_table, Found, Given, Lookup, WrittenRow};

use pgrx::prelude::*;

use crate::attachment::{Attachment, Method};
use crate::check::report::Nearest;
use crate::errors::OrRaise;
use crate::text::Text;

/// The rows of the lookup's table that are near-duplicates of what it was given, nearest first,
/// each passed to `on_row` as a row of the table's type with its distance or similarity.
///
/// # Safety
/// `lookup.heap` must be an open table that `lookup.att` is attached to.
pub unsafe fn near_duplicates(lookup: &Lookup, on_row: &mut dyn FnMut(pg_sys::Datum, Found)) {
    common::verify_columns(lookup.heap, lookup.att);
    match &lookup.att.method {
        Method::SimHash(settings) => simhash::lookup::near_duplicates(lookup, settings, on_row),
        Method::MinHash(settings) => minhash::lookup::near_duplicates(lookup, settings, on_row),
    }
}

/// What a method stores for a text: a SimHash fingerprint or a MinHash signature (None: a NULL
/// text, or one without tokens).
pub enum Value {
    SimHash(Option<u64>),
    MinHash(Option<simhash_core::minhash::Signature>),
}

impl Value {
    /// The column's value.
    pub unsafe fn datum(&self) -> Option<pg_sys::Datum> {
        match self {
            Value::SimHash(fp) => fp.map(|fp| pg_sys::Datum::from(fp as i64)),
            Value::MinHash(sig) => sig
                .as_ref()
                .map(|sig| pg_sys::Datum::from(pgrx::rust_byte_slice_to_bytea(&sig.encode()).into_pg())),
        }
    }

    /// The values of the band columns the trigger keeps (`Setup::kept_bands`): the bands an
    /// offline attach generates from the fingerprint, computed here from the same value.
    pub fn band_values(&self, kept: &[(i32, i32)], method: &Method) -> Vec<(i32, Option<pg_sys::Datum>)> {
        kept.iter()
            .map(|&(band, column)| {
                let value = match (self, method) {
                    (Value::SimHash(fp), Method::SimHash(s)) => {
                        fp.map(|fp| pg_sys::Datum::from(simhash_core::band(fp, band, s.nbands).or_raise()))
                    }
                    (Value::MinHash(sig), Method::MinHash(m)) => sig
                        .as_ref()
                        .and_then(|sig| minhash::lsh::band_keys(sig, m).into_datum()),
                    _ => unreachable!("a value is computed with its attachment's method"),
                };
                (column, value)
            })
            .collect()
    }

    /// Whether the stored column value `stored` (the attachment's type) is this value.
    ///
    /// # Safety
    /// `stored` must be a datum of the attachment's stored type.
    pub unsafe fn is_stored(&self, stored: pg_sys::Datum) -> bool {
        match self {
            Value::SimHash(fp) => *fp == Some(stored.value() as i64 as u64),
            Value::MinHash(sig) => sig
                .as_ref()
                .is_some_and(|sig| sig.encode() == minhash::lsh::bytea_bytes(stored)),
        }
    }

    /// The value a row stores (None: NULL), as the check after the write reads it.
    ///
    /// # Safety
    /// `stored` must be a datum of the attachment's stored type.
    pub unsafe fn from_stored(att: &Attachment, stored: Option<pg_sys::Datum>) -> Option<Value> {
        let stored = stored?;
        Some(match &att.method {
            Method::SimHash(_) => Value::SimHash(Some(stored.value() as i64 as u64)),
            Method::MinHash(_) => Value::MinHash(Some(
                simhash_core::minhash::Signature::decode(minhash::lsh::bytea_bytes(stored))
                    .unwrap_or_else(|e| minhash::lsh::corrupt(&e.to_string())),
            )),
        })
    }

    /// A 64-bit token of the value, for the notes of row moves between partitions.
    pub fn token(&self) -> Option<u64> {
        match self {
            Value::SimHash(fp) => *fp,
            Value::MinHash(sig) => sig.as_ref().map(|s| simhash_core::hash::fnv1a64(&s.encode())),
        }
    }

    /// The value of `text` (None: NULL) with the attachment's method and options.
    pub fn of(att: &Attachment, text: Option<Text>) -> Value {
        match &att.method {
            Method::SimHash(sim) => {
                Value::SimHash(text.and_then(|doc| simhash::fingerprint::of(&doc.to_utf8(), sim)))
            }
            Method::MinHash(settings) => {
                Value::MinHash(text.and_then(|doc| minhash::lsh::signature_of(&doc.to_utf8(), settings)))
            }
        }
    }

    /// When an UPDATE left the stored value as it was (`before` and `after`, as stored), the
    /// value's token ([`Value::token`]); None when it changed.
    ///
    /// # Safety
    /// The datums must be the attachment's stored values.
    pub unsafe fn unchanged(
        att: &Attachment,
        before: Option<pg_sys::Datum>,
        after: Option<pg_sys::Datum>,
    ) -> Option<Option<u64>> {
        match &att.method {
            Method::SimHash(_) => {
                let (before, after) = (before.map(|d| d.value() as i64), after.map(|d| d.value() as i64));
                (before == after).then(|| after.map(|fp| fp as u64))
            }
            Method::MinHash(_) => same_stored_bytes(before, after)
                .then(|| after.map(|d| simhash_core::hash::fnv1a64(minhash::lsh::bytea_bytes(d)))),
        }
    }
}

/// Whether two varlena datums hold the same bytes as stored (an unchanged toasted value keeps its
/// toast pointer, so a 100 MB text left alone by an UPDATE is not read).
pub unsafe fn same_stored_bytes(a: Option<pg_sys::Datum>, b: Option<pg_sys::Datum>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => {
            let (pa, pb) = (
                a.cast_mut_ptr::<pg_sys::varlena>(),
                b.cast_mut_ptr::<pg_sys::varlena>(),
            );
            let (la, lb) = (pgrx::varsize_any(pa), pgrx::varsize_any(pb));
            la == lb
                && std::slice::from_raw_parts(pa as *const u8, la)
                    == std::slice::from_raw_parts(pb as *const u8, lb)
        }
        _ => false,
    }
}

/// Takes the locks of the written row's value, then finds its nearest near-duplicate among the
/// rows of the attached table (under a fresh snapshot, as the owner), with the key columns of the
/// table it is in; None when there is none, or when the check is left to the statement's end.
///
/// # Safety
/// In a trigger on `row.heap`, where `att` is attached.
pub unsafe fn nearest(att: &Attachment, value: &Value, row: &WrittenRow) -> Option<(String, Nearest)> {
    match (value, &att.method) {
        (Value::SimHash(Some(fp)), Method::SimHash(sim)) => simhash::check::check_written(att, sim, *fp, row),
        (Value::MinHash(Some(sig)), Method::MinHash(settings)) => {
            minhash::check::most_similar(att, settings, sig, row)
        }
        _ => None,
    }
}
