//! Deduplicating an attached table: every near-duplicate pair, and clusters by union-find over them.
//! The search itself is `simhash_core::pairs`; this module reads the fingerprints, reports progress
//! and streams the results.

use std::rc::Rc;
use std::time::{Duration, Instant};

use pgrx::guc::{GucContext, GucFlags, GucRegistry, GucSetting};
use pgrx::prelude::*;
use simhash_core::minhash::pairs as minhash_pairs;
use simhash_core::minhash::Signature;
use simhash_core::pairs::{cluster_rows, group_identical, near_pairs, Progress};

use crate::attachment::{RowKey, NBANDS};
use crate::catalog::RegClass;

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

/// The rows of an attached table, in primary key order: their keys as text and fingerprints (or,
/// for a MinHash attachment, signatures).
struct Rows {
    keys: Vec<String>,
    fps: Vec<Option<u64>>,
    nbands: u32,
    max_distance: u32,
    signed: Option<Signed>,
}

/// The signatures of a MinHash attachment's rows, and what decides a match (§9.4).
struct Signed {
    /// The rows that have a signature, and their values one after the other (`k` each).
    rows: Vec<u32>,
    values: Vec<u32>,
    k: usize,
    tag: u32,
    lsh: simhash_core::minhash::Lsh,
    threshold: f64,
}

impl Signed {
    fn sigs(&self) -> Vec<&[u32]> {
        self.values.chunks_exact(self.k.max(1)).collect()
    }

    /// Every matching pair of rows (`a < b` in key order) with its similarity.
    fn pairs(&self, reporter: &mut Reporter) -> Vec<(u32, u32, f64)> {
        let sigs = self.sigs();
        let keys = self.band_keys(&sigs);
        let mut tick = minhash_progress(self, reporter);
        minhash_pairs::match_pairs(&sigs, &keys, &self.lsh, self.threshold, &mut tick)
            .into_iter()
            .map(|(i, j, s)| (self.rows[i as usize], self.rows[j as usize], s))
            .collect()
    }

    /// The representative of each signed row's cluster, as row numbers.
    fn clusters(&self, reporter: &mut Reporter) -> Vec<(u32, u32)> {
        let sigs = self.sigs();
        let keys = self.band_keys(&sigs);
        let mut tick = minhash_progress(self, reporter);
        let representative =
            minhash_pairs::cluster_matches(&sigs, &keys, &self.lsh, self.threshold, &mut tick);
        representative
            .into_iter()
            .enumerate()
            .map(|(i, r)| (self.rows[i], self.rows[r as usize]))
            .collect()
    }

    fn band_keys(&self, sigs: &[&[u32]]) -> Vec<i64> {
        minhash_pairs::band_key_table(sigs, self.tag, &self.lsh)
            .unwrap_or_else(|e| corrupt(format!("a stored MinHash signature cannot be compared: {e}")))
    }
}

/// The error of a stored signature that cannot be what the attachment wrote (XX001).
fn corrupt(message: String) -> ! {
    ereport!(
        ERROR,
        PgSqlErrorCode::ERRCODE_DATA_CORRUPTED,
        message,
        "Detach the column with simhash_detach() and attach it again."
    );
}

/// A progress callback for the MinHash pair search.
fn minhash_progress<'a>(signed: &'a Signed, reporter: &'a mut Reporter) -> impl FnMut(&Progress) + 'a {
    move |p: &Progress| {
        reporter.report(|| {
            format!(
                "{} signatures: band {} of {} done, {} pairs with similarity {} or more",
                signed.rows.len(),
                p.parts_done,
                p.parts,
                p.pairs,
                signed.threshold
            )
        })
    }
}

/// `simhash.progress_interval`: milliseconds between two progress NOTICEs of a long run.
pub static PROGRESS_INTERVAL: GucSetting<i32> = GucSetting::<i32>::new(5000);

/// `simhash.dedup_on_workers`: whether dedup of a Citus table pairs on its workers.
pub static DEDUP_ON_WORKERS: GucSetting<bool> = GucSetting::<bool>::new(true);

pub fn register_settings() {
    GucRegistry::define_int_guc(
        c"simhash.progress_interval",
        c"Milliseconds between progress notices of simhash_pairs() and simhash_clusters().",
        c"0 reports every step; the results never depend on it.",
        &PROGRESS_INTERVAL,
        0,
        i32::MAX,
        GucContext::Userset,
        GucFlags::UNIT_MS,
    );
    GucRegistry::define_bool_guc(
        c"simhash.dedup_on_workers",
        c"Whether simhash_pairs() and simhash_clusters() of a Citus table pair the rows on its workers.",
        c"Off: the coordinator reads every key and fingerprint and pairs them itself. The results are the same.",
        &DEDUP_ON_WORKERS,
        GucContext::Userset,
        GucFlags::default(),
    );
}

/// Emits a NOTICE at most every `simhash.progress_interval` while a long run goes on.
pub(crate) struct Reporter {
    what: &'static str,
    last: Instant,
}

impl Reporter {
    pub(crate) fn new(what: &'static str) -> Self {
        Reporter {
            what,
            last: Instant::now(),
        }
    }

    pub(crate) fn report(&mut self, message: impl FnOnce() -> String) {
        pg_sys::check_for_interrupts!();
        // The allocator spent its reserve on a failed allocation: stop while memory is left.
        if simhash_core::error::memory_low() {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_OUT_OF_MEMORY,
                format!("{}: out of memory", self.what),
                "The table's fingerprints and keys did not fit in this backend's memory."
            );
        }
        if self.last.elapsed() >= Duration::from_millis(PROGRESS_INTERVAL.get().max(0) as u64) {
            self.last = Instant::now();
            notice!("{}: {}", self.what, message());
        }
    }
}

/// What a dedup needs to know of an attached table.
struct Table {
    att: crate::attachment::Attachment,
    key: RowKey,
    /// `schema.table`, quoted.
    qualified: String,
    /// A partitioned table or a partition: a ctid names a row only within its partition.
    partitioned: bool,
    /// A Citus table, whose rows are on its shards.
    distributed: bool,
}

impl Table {
    /// The attachment on `text_column` of `relid` and how its rows are named. SPI must be connected.
    fn read(relid: pg_sys::Oid, text_column: Option<&str>, namespace: pg_sys::Oid) -> Table {
        crate::errors::in_extern(|| unsafe {
            let heap = pg_sys::relation_open(relid, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
            let form = &*(*heap).rd_rel;
            let partitioned = form.relkind as u8 == pg_sys::RELKIND_PARTITIONED_TABLE || form.relispartition;
            let table = Table {
                att: crate::attachment::find(heap, text_column, namespace),
                key: RowKey::of(relid, partitioned),
                qualified: crate::catalog::qualified_name(heap),
                partitioned,
                distributed: crate::citus::distribution(relid).is_some(),
            };
            pg_sys::relation_close(heap, pg_sys::NoLock as pg_sys::LOCKMODE);
            table
        })
    }
}

/// A key read as UTF-8 bytes (`convert_to(..., 'UTF8')`: pgrx reads `text` as UTF-8 only).
fn utf8_key(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into())
}

fn read_rows(
    table: pg_sys::Oid,
    max_distance: Option<i32>,
    threshold: Option<f64>,
    text_column: Option<&str>,
    reporter: &mut Reporter,
) -> Rows {
    let namespace = unsafe { crate::catalog::extension_namespace() };
    Spi::connect(|client| {
        // Raises the errors of a table (or column) that is not attached, or has several attached.
        let table = Table::read(table, text_column, namespace);
        if table.distributed && matches!(table.key, RowKey::Ctid { .. }) {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
                format!("{}: distributed table {} has no primary key", reporter.what, table.qualified),
                "Rows of a Citus table are named by their primary key: a ctid names a row only within its shard."
            );
        }
        let settings = table.att.minhash().copied();
        check_method_options(reporter.what, &table, max_distance, threshold);
        let stored = table
            .att
            .simhash()
            .map_or((NBANDS, 0), |s| (s.nbands, s.max_distance));
        let k = crate::attachment::check_max_distance(max_distance.unwrap_or(stored.1));
        // Keys travel as UTF-8 bytes: pgrx reads `text` as UTF-8 only.
        let query = format!(
            "SELECT pg_catalog.convert_to({}, 'UTF8'), t.{} FROM {}{} t ORDER BY {}",
            table.key.value_sql("t"),
            pgrx::spi::quote_identifier(table.att.fingerprint_column()),
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
        let mut cursor = client.open_cursor(&query, &[]);
        let mut rows = Rows {
            keys: Vec::new(),
            fps: Vec::new(),
            nbands: stored.0 as u32,
            max_distance: k,
            signed: settings.map(|m| Signed {
                rows: Vec::new(),
                values: Vec::new(),
                k: m.options.k,
                tag: m.options.tag(),
                lsh: m.lsh,
                threshold: threshold.unwrap_or(m.threshold),
            }),
        };
        loop {
            let batch = cursor.fetch(10_000).expect("reading the table failed");
            if batch.is_empty() {
                break;
            }
            for row in batch {
                rows.keys
                    .push(utf8_key(row.get::<Vec<u8>>(1).ok().flatten().unwrap_or_default()));
                match &mut rows.signed {
                    Some(signed) => {
                        if let Some(bytes) = row.get::<&[u8]>(2).ok().flatten() {
                            let sig = Signature::decode(bytes)
                                .ok()
                                .filter(|s| s.k() == signed.k && s.tag() == signed.tag)
                                .unwrap_or_else(|| {
                                    corrupt("a stored MinHash signature does not fit its attachment".into())
                                });
                            signed.rows.push(rows.keys.len() as u32 - 1);
                            signed.values.extend_from_slice(sig.values());
                        }
                        rows.fps.push(None);
                    }
                    None => rows
                        .fps
                        .push(row.get::<i64>(2).ok().flatten().map(|fp| fp as u64)),
                }
            }
            let read = rows.keys.len();
            reporter.report(|| format!("read {read} rows"));
        }
        rows
    })
}

/// `Spi::connect_mut` with the search path `pg_catalog, pg_temp` (`crate::privileges`): no name in
/// the statements resolves to another role's function or operator.
fn connect_with_safe_search_path<R>(f: impl FnOnce(&mut pgrx::spi::SpiClient<'_>) -> R) -> R {
    unsafe { crate::privileges::with_safe_search_path(|| Spi::connect_mut(f)) }
}

/// The pairs of a SimHash attachment of a Citus table, searched on its workers (docs/ARCHITECTURE.md
/// §9.5): every row is filed, in a table distributed by bucket, under the k+1 buckets of its parts
/// (`simhash_registry_buckets`); each worker groups its buckets and pairs each one
/// (`simhash_internal.bucket_pairs`), keeping a pair in the bucket of the first part the two rows
/// share; the coordinator receives the pairs only. With `keys`, also every row's key (rows without
/// a fingerprint included), in key order, for clusters. None when the table is not such a table, the
/// transaction cannot write the bucket table, or `simhash.dedup_on_workers` is off.
struct Distributed {
    keys: Vec<String>,
    pairs: Vec<(String, String, i32)>,
}

fn distributed_search(
    relid: pg_sys::Oid,
    max_distance: Option<i32>,
    threshold: Option<f64>,
    text_column: Option<&str>,
    with_keys: bool,
    reporter: &mut Reporter,
) -> Option<Distributed> {
    // Known from a cached catalog read: any other table is left to read_rows without more work.
    let hash_distributed = unsafe { crate::citus::distribution(relid) }.is_some_and(|d| d.hash_distributed());
    if !hash_distributed || !DEDUP_ON_WORKERS.get() || unsafe { pg_sys::XactReadOnly } {
        return None;
    }
    let namespace = unsafe { crate::catalog::extension_namespace() };
    // Its statements name operators without their schema.
    connect_with_safe_search_path(|client| {
        let table = Table::read(relid, text_column, namespace);
        let RowKey::Columns(columns) = &table.key else {
            return None;
        };
        let sim = table.att.simhash()?;
        check_method_options(reporter.what, &table, max_distance, threshold);
        let what = reporter.what;
        let k = crate::attachment::check_max_distance(max_distance.unwrap_or(sim.max_distance));
        let schema = |oid: pg_sys::Oid| unsafe {
            pgrx::spi::quote_identifier(crate::catalog::cstr_utf8(pg_sys::get_namespace_name(oid)))
        };
        let ext = schema(namespace);
        let rel_namespace = unsafe { pg_sys::get_rel_namespace(relid) };
        let rel_schema = schema(rel_namespace);
        // The bucket table is made in the table's schema: without CREATE there, the coordinator pairs.
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
        // The bucket table lives beside the attached table for the length of this call.
        let buckets = format!("{rel_schema}.simhash_pairs_{}", unsafe { pg_sys::MyProcPid });
        let key_types: Vec<String> = client
            .select(
                "SELECT pg_catalog.format('%I %s', p.attname, p.atttype) FROM simhash_internal.primary_key($1) p ORDER BY p.ord",
                None,
                &[relid.into()],
            )
            .ok()?
            .map(|row| row.get::<String>(1).ok().flatten().unwrap_or_default())
            .collect();
        let fp = pgrx::spi::quote_identifier(table.att.fingerprint_column());
        let run = |client: &mut pgrx::spi::SpiClient<'_>, sql: &str| {
            client
                .update(sql, None, &[])
                .unwrap_or_else(|e| pgrx::error!("{what}: {e} (in {sql})"));
        };
        run(
            client,
            &format!(
                "CREATE UNLOGGED TABLE {buckets} (lock_key int NOT NULL, part_value bigint NOT NULL, \
                 fingerprint bigint NOT NULL, key text, {})",
                key_types.join(", ")
            ),
        );
        run(client, &format!("SELECT pg_catalog.create_distributed_table('{buckets}', 'lock_key', colocate_with => 'none')"));
        reporter.report(|| "filing every row under its buckets on the workers".into());
        run(
            client,
            &format!(
                "INSERT INTO {buckets} SELECT b.lock_key, b.part_value, t.{fp}, {}, {} FROM {} t \
                 CROSS JOIN LATERAL {ext}.simhash_registry_buckets(t.{fp}, {k}) b WHERE t.{fp} IS NOT NULL",
                table.key.value_sql("t"),
                table.key.order_by("t"),
                table.qualified
            ),
        );
        reporter.report(|| "pairing each bucket on its worker".into());
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
        let utf8 = |row: &pgrx::spi::SpiHeapTupleData, i: usize| {
            utf8_key(row.get::<Vec<u8>>(i).ok().flatten().unwrap_or_default())
        };
        let mut pairs = Vec::new();
        {
            let mut cursor = client.open_cursor(&query, &[]);
            loop {
                let batch = cursor.fetch(10_000).expect("reading the pairs failed");
                if batch.is_empty() {
                    break;
                }
                for row in batch {
                    pairs.push((
                        utf8(&row, 1),
                        utf8(&row, 2),
                        row.get::<i32>(3).ok().flatten().unwrap_or(0),
                    ));
                }
                let found = pairs.len();
                reporter.report(|| format!("{found} pairs within distance {k} received from the workers"));
            }
        }
        run(client, &format!("DROP TABLE {buckets}"));
        let mut keys = Vec::new();
        if with_keys {
            let query = format!(
                "SELECT pg_catalog.convert_to({}, 'UTF8') FROM {} t ORDER BY {}",
                table.key.value_sql("t"),
                table.qualified,
                table.key.order_by("t")
            );
            let mut cursor = client.open_cursor(&query, &[]);
            loop {
                let batch = cursor.fetch(10_000).expect("reading the keys failed");
                if batch.is_empty() {
                    break;
                }
                keys.extend(batch.map(|row| utf8(&row, 1)));
            }
        }
        Some(Distributed { keys, pairs })
    })
}

/// Refuses the setting of the other method: `max_distance` for MinHash, `threshold` for SimHash
/// (22023), and a threshold outside 0–1.
fn check_method_options(what: &str, table: &Table, max_distance: Option<i32>, threshold: Option<f64>) {
    let column = &table.att.text_column;
    // Raised inside `Spi::connect`, where pgrx re-raises a PostgreSQL error as it is.
    let refuse = |message: String| -> ! {
        ereport!(ERROR, PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE, message);
    };
    match (table.att.minhash(), max_distance, threshold) {
        (Some(_), Some(_), _) => refuse(format!(
            "{what}: column \"{column}\" of {} is attached with method 'minhash': give a threshold, not max_distance",
            table.qualified
        )),
        (None, _, Some(_)) => refuse(format!(
            "{what}: column \"{column}\" of {} is attached with method 'simhash': give max_distance, not a threshold",
            table.qualified
        )),
        (Some(_), None, Some(t)) => drop(crate::attachment::valid_threshold(t).unwrap_or_else(|e| refuse(e.message))),
        _ => {}
    }
}

/// The rows that have a fingerprint, grouped by identical fingerprint: `rows_of_group[g]` lists the
/// row indexes (in key order) whose fingerprint is `distinct[g]`.
struct Groups {
    rows_of_group: Vec<Vec<u32>>,
    distinct: Vec<u64>,
}

fn group_rows(rows: &Rows) -> Groups {
    let with_fp: Vec<u32> = (0..rows.fps.len() as u32)
        .filter(|&i| rows.fps[i as usize].is_some())
        .collect();
    let fps: Vec<u64> = with_fp
        .iter()
        .map(|&i| rows.fps[i as usize].unwrap_or(0))
        .collect();
    let groups = group_identical(&fps);
    Groups {
        rows_of_group: groups.members(&with_fp),
        distinct: groups.distinct,
    }
}

/// A progress callback for the pair search that reports through `reporter`.
fn progress<'a>(
    rows: &'a Rows,
    groups: &'a Groups,
    reporter: &'a mut Reporter,
) -> impl FnMut(&Progress) + 'a {
    move |p: &Progress| {
        reporter.report(|| {
            format!(
                "{} rows, {} distinct fingerprints: band {} of {} done, {} fingerprint pairs within distance {}",
                rows.keys.len(),
                groups.distinct.len(),
                p.parts_done,
                p.parts,
                p.pairs,
                rows.max_distance
            )
        })
    }
}

/// A pair of rows' keys (the first in key order) with their distance (SimHash) or estimated
/// similarity (MinHash).
pub type Pair = (String, String, Option<i32>, Option<f64>);

/// Every near-duplicate pair of an attached table within `max_distance` (default: the attached
/// one), or for a MinHash attachment every pair that shares an LSH band with at least `threshold`
/// (default: the attached one); pairs of identical fingerprints are expanded as they are read.
pub fn pairs(
    table_name: Option<RegClass>,
    max_distance: Option<i32>,
    text_column: Option<&str>,
    threshold: Option<f64>,
) -> Box<dyn Iterator<Item = Pair>> {
    let mut reporter = Reporter::new("simhash_pairs");
    let relid = required(table_name);
    if let Some(found) = distributed_search(relid, max_distance, threshold, text_column, false, &mut reporter)
    {
        return Box::new(found.pairs.into_iter().map(|(a, b, d)| (a, b, Some(d), None)));
    }
    let mut rows = read_rows(relid, max_distance, threshold, text_column, &mut reporter);
    if let Some(signed) = rows.signed.take() {
        let pairs = signed.pairs(&mut reporter);
        let keys = rows.keys;
        return Box::new(pairs.into_iter().map(move |(a, b, similarity)| {
            (
                keys[a as usize].clone(),
                keys[b as usize].clone(),
                None,
                Some(similarity),
            )
        }));
    }
    let groups = group_rows(&rows);
    let pairs = if rows.max_distance == 0 {
        Vec::new()
    } else {
        near_pairs(
            &groups.distinct,
            rows.max_distance,
            rows.nbands,
            &mut progress(&rows, &groups, &mut reporter),
        )
    };
    let rows_of_group = groups.rows_of_group;
    let keys = rows.keys;
    // Expanded lazily: a group of many identical rows yields its pairs one by one.
    let groups = Rc::new(rows_of_group);
    let g = groups.clone();
    let identical = (0..groups.len()).flat_map(move |grp| {
        let g = g.clone();
        let n = g[grp].len();
        (0..n).flat_map(move |x| {
            let g = g.clone();
            (x + 1..n).map(move |y| (g[grp][x], g[grp][y], 0))
        })
    });
    let near = pairs.into_iter().flat_map(move |(ga, gb, d)| {
        let g = groups.clone();
        let (ga, gb) = (ga as usize, gb as usize);
        (0..g[ga].len()).flat_map(move |x| {
            let g = g.clone();
            (0..g[gb].len()).map(move |y| {
                let (a, b) = (g[ga][x], g[gb][y]);
                (a.min(b), a.max(b), d)
            })
        })
    });
    Box::new(identical.into_iter().chain(near).map(move |(a, b, d)| {
        (
            keys[a as usize].clone(),
            keys[b as usize].clone(),
            Some(d as i32),
            None,
        )
    }))
}

/// Every row's key and the index of its cluster's representative (the cluster's first row in key
/// order) among them: the connected components of [`pairs`]'s pairs.
pub fn clusters(
    table_name: Option<RegClass>,
    max_distance: Option<i32>,
    text_column: Option<&str>,
    threshold: Option<f64>,
) -> (Vec<String>, Vec<u32>) {
    let mut reporter = Reporter::new("simhash_clusters");
    let relid = required(table_name);
    if let Some(found) = distributed_search(relid, max_distance, threshold, text_column, true, &mut reporter)
    {
        let keys = found.keys;
        let index: std::collections::HashMap<&str, u32> = keys
            .iter()
            .enumerate()
            .map(|(i, k)| (k.as_str(), i as u32))
            .collect();
        let mut clusters = simhash_core::pairs::Clusters::new(keys.len());
        for (a, b, _) in &found.pairs {
            if let (Some(&a), Some(&b)) = (index.get(a.as_str()), index.get(b.as_str())) {
                clusters.union(a, b);
            }
        }
        let representative: Vec<u32> = (0..keys.len() as u32).map(|i| clusters.find(i)).collect();
        drop(index);
        return (keys, representative);
    }
    let mut rows = read_rows(relid, max_distance, threshold, text_column, &mut reporter);
    let representative = match rows.signed.take() {
        Some(signed) => {
            // Rows without a signature are clusters of their own.
            let mut representative: Vec<u32> = (0..rows.keys.len() as u32).collect();
            for (row, r) in signed.clusters(&mut reporter) {
                representative[row as usize] = r;
            }
            representative
        }
        None => {
            let groups = group_rows(&rows);
            let mut tick = progress(&rows, &groups, &mut reporter);
            // Bound first: the progress callback borrows the groups until the search ends.
            #[allow(clippy::let_and_return)]
            let representative = cluster_rows(
                rows.keys.len(),
                &groups.rows_of_group,
                &groups.distinct,
                rows.max_distance,
                rows.nbands,
                &mut tick,
            );
            representative
        }
    };
    (rows.keys, representative)
}
