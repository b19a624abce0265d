//! `simhash()` and `simhash_features()` in SQL (docs/ARCHITECTURE.md §2).

use pgrx::prelude::*;
use simhash_core::Options;

use crate::errors::OrRaise;
use crate::text::{ServerText, Text};

/// Parses the options; first puts the allocator's emergency reserve in place (see `errors`).
pub(crate) fn options(
    tokenizer: &Text,
    shingle: i32,
    weighting: &Text,
    stopwords: bool,
    fold: &str,
) -> Options {
    crate::errors::arm_allocator();
    Options::parse_with_fold(
        &tokenizer.to_utf8(),
        shingle,
        &weighting.to_utf8(),
        stopwords,
        fold,
    )
    .or_raise()
}

/// The fingerprint of `doc` as SQL's `bigint`.
pub(crate) fn fingerprint(doc: &Text, options: &Options) -> Option<i64> {
    crate::method::simhash::fingerprint::with_options(&doc.to_utf8(), options).map(|fp| fp as i64)
}

type FeatureRows = TableIterator<'static, (name!(feature, ServerText), name!(weight, f64), name!(hash, i64))>;

pub(crate) fn feature_rows(doc: &Text, options: &Options) -> FeatureRows {
    let features =
        simhash_core::try_features(&doc.to_utf8(), options, &mut crate::errors::check_interrupts).or_raise();
    // Feature strings are UTF-8: they go back into the server encoding as they are returned.
    TableIterator::new(
        features
            .into_iter()
            .map(|f| (ServerText(f.text), f.weight, f.hash as i64)),
    )
}

/// The 64-bit SimHash fingerprint of `doc`, or NULL when the text has no features.
// Not `simhash` in Rust: that symbol is 0.1.0 and 0.2.0's (`crate::api::old_symbols`).
#[pg_extern(immutable, strict, parallel_safe, cost = 100, name = "simhash")]
fn simhash_with_fold(
    doc: Text,
    tokenizer: default!(Text, "'bigram'"),
    shingle: default!(i32, 1),
    weighting: default!(Text, "'logtf'"),
    stopwords: default!(bool, true),
    fold: default!(Text, "'auto'"),
) -> Option<i64> {
    fingerprint(
        &doc,
        &options(&tokenizer, shingle, &weighting, stopwords, &fold.to_utf8()),
    )
}

/// The features behind a fingerprint, in order of first occurrence, with their weights and hashes.
// Not `simhash_features` in Rust: that symbol is 0.1.0 and 0.2.0's (`crate::api::old_symbols`).
#[pg_extern(immutable, strict, parallel_safe, cost = 100, name = "simhash_features")]
fn simhash_features_with_fold(
    doc: Text,
    tokenizer: default!(Text, "'bigram'"),
    shingle: default!(i32, 1),
    weighting: default!(Text, "'logtf'"),
    stopwords: default!(bool, true),
    fold: default!(Text, "'auto'"),
) -> TableIterator<'static, (name!(feature, ServerText), name!(weight, f64), name!(hash, i64))> {
    feature_rows(
        &doc,
        &options(&tokenizer, shingle, &weighting, stopwords, &fold.to_utf8()),
    )
}

/// Why `a` and `b` are or are not near-duplicates under the options of `simhash()`: a `distance` row
/// (the summary), one `bit` row per differing bit (each side's per-bit sum and strongest features),
/// then one row per feature (`shared`, `only_a`, `only_b`) with its weight on each side.
// The row type is spelled out: pgrx's SQL generation reads the columns from the signature itself (a
// type alias does not resolve), which clippy finds complex.
#[allow(clippy::type_complexity)]
#[pg_extern(immutable, strict, parallel_safe, cost = 100)]
fn simhash_explain(
    a: Text,
    b: Text,
    tokenizer: default!(Text, "'bigram'"),
    shingle: default!(i32, 1),
    weighting: default!(Text, "'logtf'"),
    stopwords: default!(bool, true),
    fold: default!(Text, "'auto'"),
) -> TableIterator<
    'static,
    (
        name!(section, ServerText),
        name!(feature, Option<ServerText>),
        name!(bit, Option<i32>),
        name!(weight_a, Option<f64>),
        name!(weight_b, Option<f64>),
        name!(detail, Option<ServerText>),
    ),
> {
    let options = options(&tokenizer, shingle, &weighting, stopwords, &fold.to_utf8());
    let e = simhash_core::explain(
        &a.to_utf8(),
        &b.to_utf8(),
        &options,
        &mut crate::errors::check_interrupts,
    )
    .or_raise();
    let mut rows = Vec::with_capacity(1 + e.bits.len() + e.features.len());
    rows.push((
        ServerText("distance".into()),
        None,
        None,
        None,
        None,
        Some(ServerText(e.summary())),
    ));
    for bit in &e.bits {
        rows.push((
            ServerText("bit".into()),
            None,
            Some(bit.bit as i32),
            Some(bit.sum_a),
            Some(bit.sum_b),
            Some(ServerText(e.bit_detail(bit))),
        ));
    }
    for f in &e.features {
        rows.push((
            ServerText(f.presence().name().into()),
            Some(ServerText(f.text.clone())),
            None,
            f.weight_a,
            f.weight_b,
            e.feature_detail(f).map(ServerText),
        ));
    }
    TableIterator::new(rows)
}
