//! The C entry points that only older versions' SQL names (docs/ARCHITECTURE.md §12.1): a database
//! still on such a version, or in the middle of `ALTER EXTENSION simhash_ext UPDATE` through the
//! chain of update scripts, calls them through this library, so each symbol stays here, with the
//! arguments and result columns of the versions that name it, and forwards to the live function.
//! None has SQL of its own (`sql = false`): the current SQL never names them.
//!
//! | C symbol | named by the SQL of | live function (SQL; Rust when the name differs) |
//! | --- | --- | --- |
//! | `simhash_wrapper` | 0.1.0 – 0.2.0 | `simhash` (`simhash_with_fold`), fold `'auto'` |
//! | `simhash_features_wrapper` | 0.1.0 – 0.2.0 | `simhash_features` (`simhash_features_with_fold`), fold `'auto'` |
//! | `simhash_trigger_args_wrapper` | 0.1.0 – 0.12.0 | `simhash_internal.trigger_args` |
//! | `simhash_pairs_wrapper` | 0.2.0 – 0.4.0 | `simhash_pairs` (`dedup_pairs`), three columns |
//! | `simhash_clusters_wrapper` | 0.2.0 – 0.4.0 | `simhash_clusters` (`dedup_clusters`) |
//! | `simhash_fill_reset_wrapper` | 0.3.0 – 0.12.0 | `simhash_internal.fill_reset` |
//! | `simhash_fill_stash_wrapper` | 0.3.0 – 0.12.0 | `simhash_internal.fill_stash` |
//! | `simhash_fill_value_wrapper` | 0.3.0 – 0.12.0 | `simhash_internal.fill_value` |
//! | `encode_attachment_wrapper` | 0.4.0 | `simhash_internal.encode_attachment` (`encode_verifying`), SimHash |
//! | `decode_attachment_wrapper` | 0.4.0 | `simhash_internal.decode_attachment` (`decode_verifying`), 14 columns |
//! | `pairs_wrapper` | 0.5.0 – 0.10.0 | `simhash_pairs` (`dedup_pairs`), without `verify` |
//! | `clusters_wrapper` | 0.5.0 – 0.10.0 | `simhash_clusters` (`dedup_clusters`), without `verify` |
//! | `encode_wrapper` | 0.5.0 – 0.10.0 | `simhash_internal.encode_attachment` (`encode_verifying`), not verifying |
//! | `decode_wrapper` | 0.5.0 – 0.10.0 | `simhash_internal.decode_attachment` (`decode_verifying`), 16 columns |
//! | `reencode_wrapper` | 0.11.0 – 0.12.0 | `simhash_internal.reencode_attachment` |
//!
//! pgrx names a function's symbol after its Rust name (`<name>_wrapper`), so a live function is
//! named as its SQL function unless an older version's symbol of that name is here with other
//! arguments or columns: `simhash`, `simhash_features`, `simhash_pairs`, `simhash_clusters`,
//! `encode_attachment` and `decode_attachment` keep the Rust names of the table's last column. When a
//! live function is renamed, its old symbol moves here, and the next update script points the SQL
//! function at the new one (`CREATE OR REPLACE FUNCTION`). The hand-written C functions
//! (`crate::errors::c_function!`: the triggers, the event trigger, the lookups, the online attach)
//! keep their symbols and read older declarations' arguments themselves.

use pgrx::prelude::*;

use crate::api::dedup::{dedup_clusters, dedup_pairs};
use crate::api::fingerprint::{feature_rows, fingerprint, options};
use crate::api::internal::simhash_internal::{
    decode_verifying, encode_verifying, reencode_attachment, trigger_args,
};
use crate::catalog::RegClass;
use crate::text::{ServerBytes, ServerText, Text};

// 0.1.0 and 0.2.0: `simhash(doc, tokenizer, shingle, weighting, stopwords)` and `simhash_features(...)`
// with five arguments, before `fold`: fold 'auto' is those versions' result for their options.

/// 0.1.0 and 0.2.0's `simhash(text, text, int, text, boolean)`.
#[pg_extern(immutable, strict, parallel_safe, sql = false)]
fn simhash(doc: Text, tokenizer: Text, shingle: i32, weighting: Text, stopwords: bool) -> Option<i64> {
    fingerprint(&doc, &options(&tokenizer, shingle, &weighting, stopwords, "auto"))
}

/// 0.1.0 and 0.2.0's `simhash_features(text, text, int, text, boolean)`.
// pgrx reads the result columns from the signature: the type cannot be an alias.
#[pg_extern(immutable, strict, parallel_safe, sql = false)]
fn simhash_features(
    doc: Text,
    tokenizer: Text,
    shingle: i32,
    weighting: Text,
    stopwords: bool,
) -> TableIterator<'static, (name!(feature, ServerText), name!(weight, f64), name!(hash, i64))> {
    feature_rows(&doc, &options(&tokenizer, shingle, &weighting, stopwords, "auto"))
}

/// 0.1.0 to 0.12.0's `trigger_args(bytea)` (0.1.0 to 0.3.0's `simhash_trigger_args`).
#[pg_extern(immutable, strict, parallel_safe, sql = false)]
fn simhash_trigger_args(tgargs: &[u8]) -> Vec<ServerBytes> {
    trigger_args(tgargs)
}

// 0.2.0 to 0.4.0, when only SimHash attachments existed: `simhash_pairs` and `simhash_clusters` with
// three arguments, pairs with three columns.

/// The `simhash_pairs(regclass, int, text)` of 0.2.0 to 0.4.0.
#[pg_extern(stable, parallel_unsafe, sql = false)]
fn simhash_pairs(
    table_name: Option<RegClass>,
    max_distance: default!(Option<i32>, "NULL"),
    text_column: default!(Option<Text>, "NULL"),
) -> TableIterator<
    'static,
    (
        name!(key_a, ServerText),
        name!(key_b, ServerText),
        name!(distance, Option<i32>),
    ),
> {
    TableIterator::new(pairs(table_name, max_distance, text_column, None).map(|(a, b, d, _)| (a, b, d)))
}

/// The `simhash_clusters(regclass, int, text)` of 0.2.0 to 0.4.0.
#[pg_extern(stable, parallel_unsafe, sql = false)]
fn simhash_clusters(
    table_name: Option<RegClass>,
    max_distance: default!(Option<i32>, "NULL"),
    text_column: default!(Option<Text>, "NULL"),
) -> TableIterator<
    'static,
    (
        name!(key, ServerText),
        name!(representative, ServerText),
        name!(cluster_size, i64),
    ),
> {
    clusters(table_name, max_distance, text_column, None)
}

// 0.3.0 to 0.12.0: the fill's helpers (0.3.0's `simhash_fill_reset`, `simhash_fill_stash` and
// `simhash_fill_value`, in `simhash_internal` as `fill_*` from 0.4.0).

/// 0.3.0's `simhash_fill_reset()`, 0.4.0 to 0.12.0's `simhash_internal.fill_reset()`.
#[pg_extern(parallel_unsafe, sql = false)]
fn simhash_fill_reset() {
    crate::api::fill::fill_reset()
}

/// 0.3.0 to 0.12.0's `fill_stash(oid, tid, bigint)` (0.3.0's `simhash_fill_stash`).
#[pg_extern(parallel_restricted, sql = false)]
fn simhash_fill_stash(tableoid: pg_sys::Oid, row: pg_sys::ItemPointerData, fingerprint: Option<i64>) -> bool {
    crate::api::fill::fill_stash(tableoid, row, fingerprint)
}

/// 0.3.0 to 0.12.0's `fill_value(oid, tid, text, text, int, text, boolean, text)` (0.3.0's
/// `simhash_fill_value`).
#[allow(clippy::too_many_arguments)]
#[pg_extern(parallel_unsafe, sql = false)]
fn simhash_fill_value(
    tableoid: pg_sys::Oid,
    row: pg_sys::ItemPointerData,
    doc: Option<Text>,
    tokenizer: Text,
    shingle: i32,
    weighting: Text,
    stopwords: bool,
    fold: Text,
) -> Option<i64> {
    crate::api::fill::fill_value(tableoid, row, doc, tokenizer, shingle, weighting, stopwords, fold)
}

// 0.4.0's `encode_attachment` and `decode_attachment`, with 0.4.0's arguments and columns: its SQL
// attaches with SimHash only.

/// 0.4.0's `encode_attachment`: a SimHash attachment.
#[allow(clippy::too_many_arguments)]
#[pg_extern(immutable, parallel_safe, sql = false)]
fn encode_attachment(
    text_column: Option<Text>,
    max_distance: Option<i32>,
    on_duplicate: Option<Text>,
    tokenizer: Option<Text>,
    shingle: Option<i32>,
    weighting: Option<Text>,
    stopwords: Option<bool>,
    fold: Option<Text>,
    scope: Option<Text>,
    registry: Option<bool>,
    min_length: Option<i32>,
) -> Vec<u8> {
    encode(
        text_column,
        None,
        max_distance,
        None,
        on_duplicate,
        tokenizer,
        shingle,
        weighting,
        stopwords,
        fold,
        scope,
        registry,
        min_length,
    )
}

/// 0.4.0's `decode_attachment`: its 14 columns, without the method and threshold.
#[allow(clippy::type_complexity)]
#[pg_extern(immutable, strict, parallel_safe, sql = false)]
fn decode_attachment(
    tgargs: &[u8],
) -> TableIterator<
    'static,
    (
        name!(text_column, ServerText),
        name!(fingerprint_column, ServerText),
        name!(band_columns, Vec<ServerText>),
        name!(max_distance, Option<i32>),
        name!(on_duplicate, String),
        name!(flag_column, Option<ServerText>),
        name!(tokenizer, String),
        name!(shingle, i32),
        name!(weighting, Option<String>),
        name!(stopwords, bool),
        name!(fold, String),
        name!(scope_column, Option<ServerText>),
        name!(registry, bool),
        name!(min_length, i32),
    ),
> {
    TableIterator::new(
        decode(tgargs).map(|(a, b, c, d, e, f, g, h, i, j, k, l, m, n, _, _)| {
            (a, b, c, d, e, f, g, h, i, j, k, l, m, n)
        }),
    )
}

// 0.5.0 to 0.10.0, before verification: `simhash_pairs` and `simhash_clusters` with four arguments
// (verifying as the attachment does), `encode_attachment` without `verify`, `decode_attachment`
// without its column.

/// The `simhash_pairs(regclass, int, text, float8)` of 0.5.0 to 0.10.0.
#[pg_extern(volatile, parallel_unsafe, sql = false)]
fn pairs(
    table_name: Option<RegClass>,
    max_distance: default!(Option<i32>, "NULL"),
    text_column: default!(Option<Text>, "NULL"),
    threshold: default!(Option<f64>, "NULL"),
) -> TableIterator<
    'static,
    (
        name!(key_a, ServerText),
        name!(key_b, ServerText),
        name!(distance, Option<i32>),
        name!(similarity, Option<f64>),
    ),
> {
    dedup_pairs(table_name, max_distance, text_column, threshold, None)
}

/// The `simhash_clusters(regclass, int, text, float8)` of 0.5.0 to 0.10.0.
#[pg_extern(volatile, parallel_unsafe, sql = false)]
fn clusters(
    table_name: Option<RegClass>,
    max_distance: default!(Option<i32>, "NULL"),
    text_column: default!(Option<Text>, "NULL"),
    threshold: default!(Option<f64>, "NULL"),
) -> TableIterator<
    'static,
    (
        name!(key, ServerText),
        name!(representative, ServerText),
        name!(cluster_size, i64),
    ),
> {
    dedup_clusters(table_name, max_distance, text_column, threshold, None)
}

/// 0.5.0 to 0.10.0's `encode_attachment` (without `verify`): an attachment that does not verify, as
/// those versions made them.
#[allow(clippy::too_many_arguments)]
#[pg_extern(immutable, parallel_safe, sql = false)]
fn encode(
    text_column: Option<Text>,
    method: Option<Text>,
    max_distance: Option<i32>,
    threshold: Option<f64>,
    on_duplicate: Option<Text>,
    tokenizer: Option<Text>,
    shingle: Option<i32>,
    weighting: Option<Text>,
    stopwords: Option<bool>,
    fold: Option<Text>,
    scope: Option<Text>,
    registry: Option<bool>,
    min_length: Option<i32>,
) -> Vec<u8> {
    encode_verifying(
        text_column,
        method,
        max_distance,
        threshold,
        on_duplicate,
        tokenizer,
        shingle,
        weighting,
        stopwords,
        fold,
        scope,
        registry,
        min_length,
        Some(false),
    )
}

/// 0.5.0 to 0.10.0's `decode_attachment`: its 16 columns, without `verify`.
#[allow(clippy::type_complexity)]
#[pg_extern(immutable, strict, parallel_safe, sql = false)]
fn decode(
    tgargs: &[u8],
) -> TableIterator<
    'static,
    (
        name!(text_column, ServerText),
        name!(fingerprint_column, ServerText),
        name!(band_columns, Vec<ServerText>),
        name!(max_distance, Option<i32>),
        name!(on_duplicate, String),
        name!(flag_column, Option<ServerText>),
        name!(tokenizer, String),
        name!(shingle, i32),
        name!(weighting, Option<String>),
        name!(stopwords, bool),
        name!(fold, String),
        name!(scope_column, Option<ServerText>),
        name!(registry, bool),
        name!(min_length, i32),
        name!(method, String),
        name!(threshold, Option<f64>),
    ),
> {
    TableIterator::new(decode_verifying(tgargs).map(|r| {
        (
            r.0, r.1, r.2, r.3, r.4, r.5, r.6, r.7, r.8, r.9, r.10, r.11, r.12, r.13, r.14, r.15,
        )
    }))
}

// 0.11.0 and 0.12.0: `simhash_internal.reencode_attachment`.

/// 0.11.0 and 0.12.0's `reencode_attachment(bytea, boolean, float8)`.
#[pg_extern(immutable, parallel_safe, sql = false)]
fn reencode(tgargs: &[u8], verify: Option<bool>, threshold: Option<f64>) -> Vec<u8> {
    reencode_attachment(tgargs, verify, threshold)
}
