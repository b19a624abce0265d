//! Hamming distance and bands in SQL (docs/ARCHITECTURE.md §4.1).

use pgrx::prelude::*;

use crate::errors::OrRaise;

/// Number of differing bits between two fingerprints, 0..64.
#[pg_extern(immutable, strict, parallel_safe)]
fn hamming(a: i64, b: i64) -> i32 {
    simhash_core::hamming(a as u64, b as u64) as i32
}

/// The fingerprint cut into `nbands` unsigned bands, band 0 holding the least significant bits.
#[pg_extern(immutable, strict, parallel_safe)]
fn simhash_bands(fp: i64, nbands: default!(i32, 4)) -> Vec<i32> {
    simhash_core::bands(fp as u64, nbands).or_raise()
}

/// One band of the fingerprint, for generated columns and expression indexes.
#[pg_extern(immutable, strict, parallel_safe)]
fn simhash_band(fp: i64, band: i32, nbands: default!(i32, 4)) -> i32 {
    simhash_core::band(fp as u64, band, nbands).or_raise()
}

/// `simhash_registry_buckets(fingerprint, max_distance)`: the registry buckets of a fingerprint
/// (`simhash_core::probe::registry_buckets`), by which the registry of a distributed table that
/// rejects near-duplicates across all its shards is distributed and locked.
#[pg_extern(immutable, strict, parallel_safe)]
fn simhash_registry_buckets(
    fingerprint: i64,
    max_distance: i32,
) -> TableIterator<'static, (name!(lock_key, i32), name!(part_value, i64))> {
    let max_distance = crate::attachment::check_max_distance(max_distance);
    TableIterator::new(
        simhash_core::probe::registry_buckets(fingerprint as u64, max_distance)
            .into_iter()
            .map(|(key, value)| (key as i32, value as i64)),
    )
}
