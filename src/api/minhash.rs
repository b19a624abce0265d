//! `minhash()`, `minhash_similarity()` and `minhash_bands()` in SQL: thin wrappers of
//! `simhash_core::minhash` (docs/ARCHITECTURE.md §2.10, §4.5). A signature travels as `bytea`, in the
//! core's encoding (a 4-byte header, then `k` little-endian 32-bit values).

use pgrx::prelude::*;
use simhash_core::minhash::{self, Lsh, MinHashError, MinHashOptions, Signature};
use simhash_core::Chunking;

use crate::errors::OrRaise;
use crate::text::{message, Text};

/// Raises a MinHash error with its SQLSTATE: 22023 for an option, 22P03 for bytes that are not a
/// signature, 22000 for signatures that cannot be compared (or bands that do not fit).
fn raise(e: MinHashError) -> ! {
    let code = match &e {
        MinHashError::Option(option) => crate::errors::option_error(option.clone()),
        MinHashError::Malformed(_) => PgSqlErrorCode::ERRCODE_INVALID_BINARY_REPRESENTATION,
        MinHashError::Mismatch(_) => PgSqlErrorCode::ERRCODE_DATA_EXCEPTION,
    };
    ereport!(ERROR, code, message(&e.to_string()).into_owned());
}

fn decode(signature: &[u8]) -> Signature {
    Signature::decode(signature).unwrap_or_else(|e| raise(e))
}

/// The MinHash signature of `doc`, or NULL when the text has no tokens.
#[pg_extern(immutable, strict, parallel_safe, cost = 100)]
fn minhash(
    doc: Text,
    tokenizer: default!(Text, "'word'"),
    shingle: default!(i32, 0),
    stopwords: default!(bool, false),
    fold: default!(Text, "'auto'"),
    k: default!(i32, 128),
) -> Option<Vec<u8>> {
    crate::errors::arm_allocator();
    let options =
        MinHashOptions::parse(&tokenizer.to_utf8(), shingle, stopwords, &fold.to_utf8(), k).or_raise();
    minhash::try_minhash_with(
        &doc.to_utf8(),
        &options,
        Chunking::default(),
        &mut crate::errors::check_interrupts,
    )
    .or_raise()
    .map(|signature| signature.encode())
}

/// The estimated Jaccard similarity of the shingle sets of two signatures: the share of their
/// values that agree.
#[pg_extern(immutable, strict, parallel_safe)]
fn minhash_similarity(a: &[u8], b: &[u8]) -> f64 {
    minhash::similarity(&decode(a), &decode(b)).unwrap_or_else(|e| raise(e))
}

/// The exact similarity of two texts (issue 43): the Jaccard similarity of their shingle sets, the
/// shingles `minhash()` hashes with the same options. What a verified check, lookup or dedup
/// compares with the threshold (`simhash_core::verify`): for a SimHash attachment with the defaults
/// here, for a MinHash attachment with its own options.
#[pg_extern(immutable, strict, parallel_safe, cost = 100)]
fn shingle_similarity(
    a: Text,
    b: Text,
    tokenizer: default!(Text, "'word'"),
    shingle: default!(i32, 0),
    stopwords: default!(bool, false),
    fold: default!(Text, "'auto'"),
) -> f64 {
    crate::errors::arm_allocator();
    let options = MinHashOptions::parse(
        &tokenizer.to_utf8(),
        shingle,
        stopwords,
        &fold.to_utf8(),
        minhash::DEFAULT_K as i32,
    )
    .or_raise();
    let set = |t: &Text| {
        simhash_core::verify::Shingles::of(
            &t.to_utf8(),
            &options,
            simhash_core::Chunking::default(),
            &mut crate::errors::check_interrupts,
        )
        .or_raise()
    };
    set(&a).jaccard(&set(&b))
}

/// The LSH band keys of a signature: `bands` keys, each hashing `rows` consecutive values with its
/// band number. Two signatures that share a key at the same position share that band.
#[pg_extern(immutable, strict, parallel_safe)]
fn minhash_bands(signature: &[u8], bands: default!(i32, 32), rows: default!(i32, 4)) -> Vec<i64> {
    band_keys(&decode(signature), bands, rows)
}

/// The band keys `minhash_bands(signature, bands, rows)` returns; an attachment's band-keys column
/// holds those of the defaults (32 bands of 4 rows).
pub fn band_keys(signature: &minhash::Signature, bands: i32, rows: i32) -> Vec<i64> {
    let lsh = Lsh::parse(bands, rows, signature.k()).or_raise();
    minhash::band_keys(signature, &lsh).unwrap_or_else(|e| raise(e))
}
