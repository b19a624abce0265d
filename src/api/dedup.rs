//! `simhash_pairs()` and `simhash_clusters()` in SQL (docs/ARCHITECTURE.md §9), over
//! `crate::dedup`.

use pgrx::prelude::*;

use crate::catalog::RegClass;
use crate::dedup::table::Asked;
use crate::text::{ServerText, Text};

/// Every near-duplicate pair of an attached table within `max_distance` (default: the attached one),
/// with the keys of both rows as text (`key_a` first in key order) and their distance; for a MinHash
/// attachment, every pair that shares an LSH band with at least `threshold` (default: the attached
/// one) similarity, with the similarity. Verified (`verify`, default: as the attachment), only the
/// pairs whose texts' exact similarity reaches `threshold` (for SimHash too), with that similarity.
// Not `simhash_pairs` in Rust: that symbol is 0.2.0 to 0.4.0's (`crate::api::old_symbols`).
#[pg_extern(volatile, parallel_unsafe, name = "simhash_pairs")]
pub(crate) fn dedup_pairs(
    table_name: Option<RegClass>,
    max_distance: default!(Option<i32>, "NULL"),
    text_column: default!(Option<Text>, "NULL"),
    threshold: default!(Option<f64>, "NULL"),
    verify: default!(Option<bool>, "NULL"),
) -> TableIterator<
    'static,
    (
        name!(key_a, ServerText),
        name!(key_b, ServerText),
        name!(distance, Option<i32>),
        name!(similarity, Option<f64>),
    ),
> {
    let column = text_column.as_ref().map(Text::to_utf8);
    TableIterator::new(
        crate::dedup::pairs(
            required(table_name),
            &asked(max_distance, column.as_deref(), threshold, verify),
        )
        .map(|(a, b, d, s)| (ServerText(a), ServerText(b), d, s)),
    )
}

/// Every row of an attached table with the representative of its cluster (the cluster's first row
/// in key order) and the cluster's size; rows without a fingerprint are clusters of their own.
/// The clusters are the connected components of `simhash_pairs()`'s pairs (verified or not).
// Not `simhash_clusters` in Rust: that symbol is 0.2.0 to 0.4.0's (`crate::api::old_symbols`).
#[pg_extern(volatile, parallel_unsafe, name = "simhash_clusters")]
pub(crate) fn dedup_clusters(
    table_name: Option<RegClass>,
    max_distance: default!(Option<i32>, "NULL"),
    text_column: default!(Option<Text>, "NULL"),
    threshold: default!(Option<f64>, "NULL"),
    verify: default!(Option<bool>, "NULL"),
) -> TableIterator<
    'static,
    (
        name!(key, ServerText),
        name!(representative, ServerText),
        name!(cluster_size, i64),
    ),
> {
    let column = text_column.as_ref().map(Text::to_utf8);
    let (keys, representative) = crate::dedup::clusters(
        required(table_name),
        &asked(max_distance, column.as_deref(), threshold, verify),
    );
    cluster_table(keys, representative)
}

/// The table argument, which must not be NULL (SQLSTATE 22004).
fn required(table: Option<RegClass>) -> pg_sys::Oid {
    crate::errors::arm_allocator();
    let Some(table) = table else {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_NULL_VALUE_NOT_ALLOWED,
            "table_name must not be NULL"
        );
    };
    table.0
}

/// What a call asked for.
fn asked<'a>(
    max_distance: Option<i32>,
    text_column: Option<&'a str>,
    threshold: Option<f64>,
    verify: Option<bool>,
) -> Asked<'a> {
    Asked {
        max_distance,
        threshold,
        text_column,
        verify,
    }
}

/// Every row's key with its cluster's representative and size.
fn cluster_table(
    keys: Vec<String>,
    representative: Vec<u32>,
) -> TableIterator<
    'static,
    (
        name!(key, ServerText),
        name!(representative, ServerText),
        name!(cluster_size, i64),
    ),
> {
    let mut size = vec![0i64; keys.len()];
    for &r in &representative {
        size[r as usize] += 1;
    }
    TableIterator::new((0..keys.len()).map(move |i| {
        let r = representative[i] as usize;
        (ServerText(keys[i].clone()), ServerText(keys[r].clone()), size[r])
    }))
}
