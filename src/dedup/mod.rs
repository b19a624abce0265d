//! Deduplicating an attached table (docs/ARCHITECTURE.md §9): every near-duplicate pair, and
//! clusters by union-find over them. This module reads the rows' keys and stored values and hands
//! them to the method's dedup (`crate::method::*::dedup`), one `match` per entry point; a Citus
//! table is paired on its workers where it can be (`crate::citus::dedup`).

pub mod table;
pub mod verify;

use pgrx::prelude::*;

use crate::attachment::{Method, RowKey};
use crate::check::verify::Verifier;
use crate::citus::dedup::distributed_search;
use crate::method::minhash::dedup::Signed;
use crate::method::simhash::dedup::Fingerprints;
use crate::progress::Reporter;
use table::{check_method_options, for_each_batch, utf8_key, Asked, Locator, Table};
use verify::{verified_clusters, verified_pairs, Candidates, ShingleSets};

/// The stored values of a table's rows, in key order, as the attachment's method compares them.
enum Values {
    SimHash(Fingerprints),
    MinHash(Signed),
}

/// What a dedup read of a table: every row's key and stored value, in key order, and when the
/// call verifies, the verifier and where each row is.
struct Rows {
    keys: Vec<String>,
    values: Values,
    verify: Option<(Verifier, Vec<Locator>)>,
}

/// Reads the keys of an attached table's rows, in primary key order, and their stored values, then
/// hands them to `then` with the table and the SPI connection (for the texts of a verification).
fn read_rows<R>(
    relid: pg_sys::Oid,
    asked: &Asked,
    reporter: &mut Reporter,
    then: impl FnOnce(&pgrx::spi::SpiClient<'_>, &Table, Rows, &mut Reporter) -> R,
) -> R {
    let namespace = unsafe { crate::catalog::extension_namespace() };
    Spi::connect(|client| {
        // Raises the errors of a table (or column) that is not attached, or has several attached.
        let table = Table::read(relid, asked.text_column, namespace);
        if table.distributed && matches!(table.key, RowKey::Ctid { .. }) {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
                format!("{}: distributed table {} has no primary key", reporter.what, table.qualified),
                "Rows of a Citus table are named by their primary key: a ctid names a row only within its shard."
            );
        }
        check_method_options(reporter.what, &table, asked);
        let verifier = asked.verifier(&table);
        let mut values = match &table.att.method {
            Method::SimHash(sim) => {
                let k = crate::attachment::check_max_distance(asked.max_distance.unwrap_or(sim.max_distance));
                Values::SimHash(Fingerprints::new(sim, k))
            }
            // Verified, the candidates are the pairs whose estimate reaches the prefilter: a pair
            // that reaches the threshold is among them but for a chance below 10⁻⁵.
            Method::MinHash(settings) => Values::MinHash(Signed::new(
                settings,
                match &verifier {
                    Some(v) => Some(crate::method::minhash::check::prefilter(v.threshold)),
                    None => asked.threshold,
                },
            )),
        };
        // Verified, a local table's rows are read again by ctid (a Citus table's by key).
        let locate = verifier.is_some() && !table.distributed;
        // Keys travel as UTF-8 bytes: pgrx reads `text` as UTF-8 only.
        let query = format!(
            "SELECT pg_catalog.convert_to({}, 'UTF8'), t.{}{} FROM {}{} t ORDER BY {}",
            table.key.value_sql("t"),
            pgrx::spi::quote_identifier(table.att.fingerprint_column()),
            if locate { ", t.tableoid, t.ctid" } else { "" },
            // A partitioned table holds no rows itself: its partitions are read; Citus reads the
            // shards of a distributed table (the keys and fingerprints come to this node, not the texts).
            if table.partitioned || table.distributed {
                ""
            } else {
                "ONLY "
            },
            table.qualified,
            table.key.order_by("t"),
        );
        let mut keys = Vec::new();
        let mut locators = Vec::new();
        for_each_batch(client, &query, "the table", |batch| {
            for row in batch {
                keys.push(utf8_key(row.get::<Vec<u8>>(1).ok().flatten().unwrap_or_default()));
                match &mut values {
                    Values::SimHash(fps) => fps.push(row.get::<i64>(2).ok().flatten()),
                    Values::MinHash(signed) => {
                        signed.push(keys.len() as u32 - 1, row.get::<&[u8]>(2).ok().flatten())
                    }
                }
                if locate {
                    locators.push(Locator::read(&row, 3, 4));
                }
            }
            let read = keys.len();
            reporter.report(|| format!("read {read} rows"));
        });
        let rows = Rows {
            keys,
            values,
            verify: verifier.map(|v| (v, locators)),
        };
        then(client, &table, rows, reporter)
    })
}

/// The shingle sets of `candidates`' rows, their texts read from `table` by ctid (a local table) or
/// by key (a Citus table).
fn shingle_sets(
    client: &pgrx::spi::SpiClient<'_>,
    table: &Table,
    keys: &[String],
    locators: &[Locator],
    verifier: &Verifier,
    candidates: &Candidates,
    reporter: &mut Reporter,
) -> ShingleSets {
    let rows = candidates.rows();
    let mut fetch = |batch: &[u32], found: &mut dyn FnMut(u32, &str)| {
        if table.distributed {
            table::texts_by_key(client, table, keys, batch, found)
        } else {
            table::texts_by_ctid(client, table, locators, batch, found)
        }
    };
    let batch = if table.distributed {
        verify::KEY_BATCH
    } else {
        verify::TEXT_BATCH
    };
    ShingleSets::read(keys.len(), &rows, verifier, batch, &mut fetch, reporter)
}

/// The candidates of the method's search over `values`.
fn candidates(values: Values, reporter: &mut Reporter) -> Candidates {
    match values {
        Values::SimHash(fps) => {
            let (groups, pairs) = fps.candidates(reporter);
            Candidates {
                groups,
                identical: Some(Some(0)),
                pairs: pairs
                    .into_iter()
                    .map(|(a, b, d)| (a, b, Some(d as i32)))
                    .collect(),
            }
        }
        Values::MinHash(signed) => {
            let (groups, identical, pairs) = signed.candidates(reporter);
            Candidates {
                groups,
                identical: identical.then_some(None),
                pairs: pairs.into_iter().map(|(a, b)| (a, b, None)).collect(),
            }
        }
    }
}

/// A pair of rows' keys (the first in key order) with their distance (SimHash) and similarity
/// (MinHash's estimate; verified, both methods' exact similarity).
pub type Pair = (String, String, Option<i32>, Option<f64>);

/// Every near-duplicate pair of an attached table within `max_distance` (default: the attached
/// one), or for a MinHash attachment every pair that shares an LSH band with at least `threshold`
/// (default: the attached one); pairs of identical fingerprints are expanded as they are read.
/// Verified, only the pairs whose texts' exact similarity reaches the threshold.
pub fn pairs(relid: pg_sys::Oid, asked: &Asked) -> Box<dyn Iterator<Item = Pair>> {
    let mut reporter = Reporter::new("simhash_pairs");
    if let Some(found) = distributed_search(relid, asked, false, &mut reporter) {
        return Box::new(found.pairs.into_iter().map(|(a, b, d, s)| (a, b, Some(d), s)));
    }
    read_rows(relid, asked, &mut reporter, |client, table, rows, reporter| {
        let Rows { keys, values, verify } = rows;
        if let Some((verifier, locators)) = verify {
            let candidates = candidates(values, reporter);
            let sets = shingle_sets(client, table, &keys, &locators, &verifier, &candidates, reporter);
            let found = verified_pairs(candidates, sets, verifier.threshold, Reporter::new(reporter.what));
            return Box::new(
                found.map(move |(a, b, d, s)| {
                    (keys[a as usize].clone(), keys[b as usize].clone(), d, Some(s))
                }),
            ) as Box<dyn Iterator<Item = Pair>>;
        }
        let key = move |i: u32| keys[i as usize].clone();
        match values {
            Values::SimHash(fps) => Box::new(
                fps.pairs(reporter)
                    .map(move |(a, b, d)| (key(a), key(b), Some(d as i32), None)),
            ),
            Values::MinHash(signed) => Box::new(
                signed
                    .pairs(reporter)
                    .into_iter()
                    .map(move |(a, b, similarity)| (key(a), key(b), None, Some(similarity))),
            ),
        }
    })
}

/// Every row's key and the index of its cluster's representative (the cluster's first row in key
/// order) among them: the connected components of [`pairs`]'s pairs.
pub fn clusters(relid: pg_sys::Oid, asked: &Asked) -> (Vec<String>, Vec<u32>) {
    let mut reporter = Reporter::new("simhash_clusters");
    if let Some(found) = distributed_search(relid, asked, true, &mut reporter) {
        let representative = clusters_of_pairs(&found.keys, &found.pairs);
        return (found.keys, representative);
    }
    read_rows(relid, asked, &mut reporter, |client, table, rows, reporter| {
        let Rows { keys, values, verify } = rows;
        let representative = match (values, verify) {
            (values, Some((verifier, locators))) => {
                let candidates = candidates(values, reporter);
                let sets = shingle_sets(client, table, &keys, &locators, &verifier, &candidates, reporter);
                verified_clusters(keys.len(), &candidates, &sets, verifier.threshold, reporter)
            }
            (Values::SimHash(fps), None) => fps.clusters(reporter),
            (Values::MinHash(signed), None) => signed.clusters(keys.len(), reporter),
        };
        (keys, representative)
    })
}

/// The representative of each of `keys` in the clusters of `pairs` (of keys).
fn clusters_of_pairs(keys: &[String], pairs: &[(String, String, i32, Option<f64>)]) -> Vec<u32> {
    let index: std::collections::HashMap<&str, u32> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| (k.as_str(), i as u32))
        .collect();
    let mut clusters = simhash_core::pairs::Clusters::new(keys.len());
    for (a, b, _, _) in pairs {
        if let (Some(&a), Some(&b)) = (index.get(a.as_str()), index.get(b.as_str())) {
            clusters.union(a, b);
        }
    }
    (0..keys.len() as u32).map(|i| clusters.find(i)).collect()
}
