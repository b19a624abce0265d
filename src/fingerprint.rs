//! `simhash()` and `simhash_features()` in SQL (SPEC §2–3).

use pgrx::prelude::*;
use simhash_core::{Chunking, Options};

use crate::errors::OrRaise;
use crate::text::{ServerText, Text};

/// Parses the options; first puts the allocator's emergency reserve in place (see `errors`).
fn options(tokenizer: &Text, shingle: i32, weighting: &Text, stopwords: bool, fold: &Text) -> Options {
    crate::errors::arm_allocator();
    Options::parse_with_fold(
        &tokenizer.to_utf8(),
        shingle,
        &weighting.to_utf8(),
        stopwords,
        &fold.to_utf8(),
    )
    .or_raise()
}

/// Lets `statement_timeout` and query cancel stop a long text between chunks.
pub(crate) fn check_interrupts() {
    pg_sys::check_for_interrupts!();
}

/// The 64-bit SimHash fingerprint of `doc`, or NULL when the text has no features.
#[pg_extern(immutable, strict, parallel_safe, cost = 100)]
fn simhash(
    doc: Text,
    tokenizer: default!(Text, "'bigram'"),
    shingle: default!(i32, 1),
    weighting: default!(Text, "'logtf'"),
    stopwords: default!(bool, true),
    fold: default!(Text, "'auto'"),
) -> Option<i64> {
    let options = options(&tokenizer, shingle, &weighting, stopwords, &fold);
    simhash_core::try_fingerprint_with(
        &doc.to_utf8(),
        &options,
        Chunking::default(),
        &mut check_interrupts,
    )
    .or_raise()
    .map(|fp| fp as i64)
}

/// The features behind a fingerprint, in order of first occurrence, with their weights and hashes.
#[pg_extern(immutable, strict, parallel_safe, cost = 100)]
fn simhash_features(
    doc: Text,
    tokenizer: default!(Text, "'bigram'"),
    shingle: default!(i32, 1),
    weighting: default!(Text, "'logtf'"),
    stopwords: default!(bool, true),
    fold: default!(Text, "'auto'"),
) -> TableIterator<'static, (name!(feature, ServerText), name!(weight, f64), name!(hash, i64))> {
    let options = options(&tokenizer, shingle, &weighting, stopwords, &fold);
    let features = simhash_core::try_features(&doc.to_utf8(), &options, &mut check_interrupts).or_raise();
    // Feature strings are UTF-8: they go back into the server encoding as they are returned.
    TableIterator::new(
        features
            .into_iter()
            .map(|f| (ServerText(f.text), f.weight, f.hash as i64)),
    )
}
