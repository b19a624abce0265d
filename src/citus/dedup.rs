//! Dedup of a Citus table on its workers (docs/ARCHITECTURE.md §9.4): the rows are filed under the
//! buckets of their parts in a table distributed by bucket, each worker pairs its buckets, and the
//! coordinator receives the pairs only.

use pgrx::guc::{GucContext, GucFlags, GucRegistry, GucSetting};
use pgrx::prelude::*;
use pgrx::spi::SpiClient;

use crate::attachment::RowKey;
use crate::check::verify::Verifier;
use crate::dedup::table::{
    check_method_options, connect_with_safe_search_path, for_each_batch, texts_by_key, utf8_key, Asked, Table,
};
use crate::dedup::verify::{ShingleSets, KEY_BATCH};
use crate::progress::Reporter;

/// `simhash.dedup_on_workers`: whether dedup of a Citus table pairs on its workers.
pub static DEDUP_ON_WORKERS: GucSetting<bool> = GucSetting::<bool>::new(true);

pub fn register_settings() {
    GucRegistry::define_bool_guc(
        c"simhash.dedup_on_workers",
        c"Whether simhash_pairs() and simhash_clusters() of a Citus table pair the rows on its workers.",
        c"Off: the coordinator reads every key and fingerprint and pairs them itself. The results are the same.",
        &DEDUP_ON_WORKERS,
        GucContext::Userset,
        GucFlags::default(),
    );
}

/// The pairs of a SimHash attachment of a Citus table, searched on its workers: every row is filed,
/// in a table distributed by bucket, under the k+1 buckets of its parts
/// (`simhash_registry_buckets`); each worker groups its buckets and pairs each one
/// (`simhash_internal.bucket_pairs`), keeping a pair in the bucket of the first part the two rows
/// share.
pub struct Distributed {
    pub keys: Vec<String>,
    /// The pairs, with their distance and, verified, the exact similarity of their texts.
    pub pairs: Vec<(String, String, i32, Option<f64>)>,
}

/// The search on the workers of table `relid`, or None when it is not a hash-distributed table
/// with a SimHash attachment and a primary key, the transaction cannot write the bucket table (read
/// only, or no CREATE in the table's schema), or `simhash.dedup_on_workers` is off.
///
/// With `with_keys`, also every row's key (rows without a fingerprint included), in key order, for
/// clusters.
pub fn distributed_search(
    relid: pg_sys::Oid,
    asked: &Asked,
    with_keys: bool,
    reporter: &mut Reporter,
) -> Option<Distributed> {
    // Known from a cached catalog read: any other table is left to the coordinator without more work.
    let hash_distributed = unsafe { super::distribution(relid) }.is_some_and(|d| d.hash_distributed());
    if !hash_distributed || !DEDUP_ON_WORKERS.get() || unsafe { pg_sys::XactReadOnly } {
        return None;
    }
    let namespace = unsafe { crate::catalog::extension_namespace() };
    // Its statements name operators without their schema.
    connect_with_safe_search_path(|client| {
        let table = Table::read(relid, asked.text_column, namespace);
        let RowKey::Columns(columns) = &table.key else {
            return None;
        };
        let sim = table.att.simhash()?;
        check_method_options(reporter.what, &table, asked);
        let k = crate::attachment::check_max_distance(asked.max_distance.unwrap_or(sim.max_distance));
        let buckets = create_buckets(client, relid, reporter.what)?;
        reporter.report(|| "filing every row under its buckets on the workers".into());
        file_rows(client, &buckets, &table, namespace, k, reporter.what);
        reporter.report(|| "pairing each bucket on its worker".into());
        let pairs = worker_pairs(client, &buckets, columns, k, reporter);
        run(client, &format!("DROP TABLE {buckets}"), reporter.what);
        let pairs = match asked.verifier(&table) {
            Some(verifier) => verified(client, &table, &verifier, pairs, reporter),
            None => pairs.into_iter().map(|(a, b, d)| (a, b, d, None)).collect(),
        };
        let keys = if with_keys {
            all_keys(client, &table)
        } else {
            Vec::new()
        };
        Some(Distributed { keys, pairs })
    })
}

/// Runs the statement `sql`, raising its error with `what` and the statement.
fn run(client: &mut SpiClient<'_>, sql: &str, what: &str) {
    client
        .update(&crate::spi::server_cstring(sql), None, &[])
        .unwrap_or_else(|e| pgrx::error!("{what}: {e} (in {sql})"));
}

/// Creates the bucket table beside table `relid` (for the length of this call), distributed by
/// bucket, with the table's key columns; None without CREATE on the table's schema.
fn create_buckets(client: &mut SpiClient<'_>, relid: pg_sys::Oid, what: &str) -> Option<String> {
    let rel_namespace = unsafe { pg_sys::get_rel_namespace(relid) };
    let may_create = client
        .select(
            "SELECT pg_catalog.has_schema_privilege($1, 'CREATE')",
            None,
            &[rel_namespace.into()],
        )
        .and_then(|t| t.first().get_one::<bool>())
        .ok()
        .flatten();
    if may_create != Some(true) {
        return None;
    }
    let buckets = format!(
        "{}.simhash_pairs_{}",
        unsafe { crate::catalog::schema_name(rel_namespace) },
        unsafe { pg_sys::MyProcPid }
    );
    let key_types: Vec<String> = client
        .select(
            "SELECT pg_catalog.convert_to(pg_catalog.format('%I %s', p.attname, p.atttype), 'UTF8') \
             FROM simhash_internal.primary_key($1) p ORDER BY p.ord",
            None,
            &[relid.into()],
        )
        .ok()?
        .map(|row| utf8_key(row.get::<Vec<u8>>(1).ok().flatten().unwrap_or_default()))
        .collect();
    run(
        client,
        &format!(
            "CREATE UNLOGGED TABLE {buckets} (lock_key int NOT NULL, part_value bigint NOT NULL, \
             fingerprint bigint NOT NULL, key text, {})",
            key_types.join(", ")
        ),
        what,
    );
    run(
        client,
        &format!(
            "SELECT pg_catalog.create_distributed_table('{buckets}', 'lock_key', colocate_with => 'none')"
        ),
        what,
    );
    Some(buckets)
}

/// Files every row with a fingerprint under the k+1 buckets of its parts.
fn file_rows(
    client: &mut SpiClient<'_>,
    buckets: &str,
    table: &Table,
    namespace: pg_sys::Oid,
    k: u32,
    what: &str,
) {
    let ext = unsafe { crate::catalog::schema_name(namespace) };
    let fp = pgrx::spi::quote_identifier(table.att.fingerprint_column());
    run(
        client,
        &format!(
            "INSERT INTO {buckets} SELECT b.lock_key, b.part_value, t.{fp}, {}, {} FROM {} t \
             CROSS JOIN LATERAL {ext}.simhash_registry_buckets(t.{fp}, {k}) b WHERE t.{fp} IS NOT NULL",
            table.key.value_sql("t"),
            table.key.order_by("t"),
            table.qualified
        ),
        what,
    );
}

/// The key text in column `i` of a row read as UTF-8 bytes.
fn utf8(row: &pgrx::spi::SpiHeapTupleData, i: usize) -> String {
    utf8_key(row.get::<Vec<u8>>(i).ok().flatten().unwrap_or_default())
}

/// The pairs each worker finds in its buckets, as (key, key, distance).
fn worker_pairs(
    client: &mut SpiClient<'_>,
    buckets: &str,
    columns: &[String],
    k: u32,
    reporter: &mut Reporter,
) -> Vec<(String, String, i32)> {
    let order = columns
        .iter()
        .map(|c| format!("r.{c}"))
        .collect::<Vec<_>>()
        .join(", ");
    let query = format!(
        "SELECT pg_catalog.convert_to(g.keys[p.a], 'UTF8'), pg_catalog.convert_to(g.keys[p.b], 'UTF8'), p.distance \
         FROM (SELECT r.lock_key, pg_catalog.array_agg(r.fingerprint ORDER BY {order}) AS fps, pg_catalog.array_agg(r.key ORDER BY {order}) AS keys \
               FROM {buckets} r GROUP BY r.lock_key, r.part_value HAVING count(*) > 1) g \
         CROSS JOIN LATERAL simhash_internal.bucket_pairs(g.lock_key >> 8, g.fps, {k}) p"
    );
    let mut pairs = Vec::new();
    for_each_batch(client, &query, "the pairs", |batch| {
        for row in batch {
            pairs.push((
                utf8(&row, 1),
                utf8(&row, 2),
                row.get::<i32>(3).ok().flatten().unwrap_or(0),
            ));
        }
        let found = pairs.len();
        reporter.report(|| format!("{found} pairs within distance {k} received from the workers"));
    });
    pairs
}

/// Every row's key, in key order.
fn all_keys(client: &mut SpiClient<'_>, table: &Table) -> Vec<String> {
    let query = format!(
        "SELECT pg_catalog.convert_to({}, 'UTF8') FROM {} t ORDER BY {}",
        table.key.value_sql("t"),
        table.qualified,
        table.key.order_by("t")
    );
    let mut keys = Vec::new();
    for_each_batch(client, &query, "the keys", |batch| {
        keys.extend(batch.map(|row| utf8(&row, 1)))
    });
    keys
}

/// The pairs whose texts' exact similarity reaches the verifier's threshold, with it: the texts of
/// the rows in a pair are read from their shards by key, in batches, each row's once.
fn verified(
    client: &SpiClient<'_>,
    table: &Table,
    verifier: &Verifier,
    pairs: Vec<(String, String, i32)>,
    reporter: &mut Reporter,
) -> Vec<(String, String, i32, Option<f64>)> {
    let mut keys: Vec<String> = pairs
        .iter()
        .flat_map(|(a, b, _)| [a.clone(), b.clone()])
        .collect();
    keys.sort_unstable();
    keys.dedup();
    let index: std::collections::HashMap<&str, u32> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| (k.as_str(), i as u32))
        .collect();
    let rows: Vec<u32> = (0..keys.len() as u32).collect();
    let mut fetch =
        |batch: &[u32], found: &mut dyn FnMut(u32, &str)| texts_by_key(client, table, &keys, batch, found);
    let sets = ShingleSets::read(keys.len(), &rows, verifier, KEY_BATCH, &mut fetch, reporter);
    pairs
        .into_iter()
        .filter_map(|(a, b, d)| {
            let s = sets.similarity(index[a.as_str()], index[b.as_str()]);
            verifier.reaches(s).then_some((a, b, d, Some(s)))
        })
        .collect()
}
