//! SimHash's lookups: the rows within `k` of a fingerprint, read through the band indexes
//! (`super::search`), or through the query of `simhash_near_duplicates_sql()` where the executor
//! must run it (a Citus table, row-level security); and the probe of one Citus shard.

use pgrx::prelude::*;
use simhash_core::probe::ProbePlan;

use crate::attachment::{Attachment, RowKey, SimHashSettings};
use crate::catalog::{qualified_name_of, relation_name};
use crate::check::verify::{Asked, Verifier};
use crate::errors::{raise, EncodedError, OrRaise};
use crate::method::common::{open_table, Found, Given, Lookup};

use super::search::{fingerprint_attnum, search_table, Counts, TableSearch};

/// The rows within `max_distance` (the attachment's when not given) of the fingerprint given or of
/// the text's, nearest first.
///
/// # Safety
/// As [`crate::method::near_duplicates`].
pub unsafe fn near_duplicates(
    lookup: &Lookup,
    sim: &SimHashSettings,
    on_row: &mut dyn FnMut(pg_sys::Datum, Found),
) {
    let (heap, att) = (lookup.heap, lookup.att);
    let relid = (*heap).rd_id;
    if matches!(lookup.given, Given::Signature(_)) {
        refuse_minhash_lookup(att, relid);
    }
    let verifier = verifier_of(lookup);
    let k = lookup.max_distance.unwrap_or(sim.max_distance);
    let query = match lookup.given {
        Given::Fingerprint(fp) => fp,
        Given::Text(doc) => doc.and_then(|doc| text_fingerprint(doc, sim)),
        Given::Signature(_) => None,
    };
    let Some(query) = query else {
        // Checks k (22023) even when there is no fingerprint to look up; plan_for checks it otherwise.
        drop(ProbePlan::new(0, k, sim.nbands).or_raise());
        return;
    };
    match crate::citus::distribution(relid) {
        Some(dist) => {
            refuse_unless_hash_distributed(heap, &dist);
            sql_near_duplicates(
                &(lookup.ext_schema)(),
                heap,
                att,
                sim,
                query,
                k,
                verifier.as_ref(),
                on_row,
            )
        }
        // The band indexes are read directly, where no policy applies: under row-level security
        // the lookup runs as the query of simhash_near_duplicates_sql(), which the executor
        // filters with the caller's policies.
        None if crate::privileges::row_security_applies(relid) => sql_near_duplicates(
            &(lookup.ext_schema)(),
            heap,
            att,
            sim,
            query,
            k,
            verifier.as_ref(),
            on_row,
        ),
        None => {
            for (found, item) in local_near_duplicates(heap, att, sim, query, k, verifier.as_ref()) {
                on_row(item, found);
            }
        }
    }
}

/// The verification of a lookup by text, when the call or the attachment verifies; a threshold
/// (the least verified similarity) is refused elsewhere: a lookup by fingerprint, or one that does
/// not verify, has nothing to compare it with (22023).
unsafe fn verifier_of(lookup: &Lookup) -> Option<Verifier> {
    let asked = Asked {
        verify: lookup.verify,
        threshold: lookup
            .threshold
            .map(|t| crate::attachment::valid_threshold(t).unwrap_or_else(|e| raise(e))),
    };
    let verifier = match lookup.given {
        Given::Text(Some(doc)) => Verifier::of_datum(lookup.att, asked, move || Some(doc)),
        _ => None,
    };
    if verifier.is_none() && lookup.threshold.is_some() {
        raise(EncodedError {
            code: PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            message: format!(
                "column \"{}\" of {} is attached with method 'simhash': threshold needs a lookup by text that verifies",
                lookup.att.text_column,
                qualified_name_of((*lookup.heap).rd_id)
            ),
            detail: None,
            hint: Some("Pass the text with verify => true, or leave threshold out and set max_distance.".into()),
        });
    }
    verifier
}

/// The fingerprint of the `text` datum `doc` with the attachment's options; None without features.
unsafe fn text_fingerprint(doc: pg_sys::Datum, sim: &SimHashSettings) -> Option<u64> {
    super::fingerprint::of(&crate::text::Text::from_raw_datum(doc).to_utf8(), sim)
}

/// The refusal of a MinHash lookup (a signature or a threshold) on a SimHash attachment.
unsafe fn refuse_minhash_lookup(att: &Attachment, relid: pg_sys::Oid) -> ! {
    raise(EncodedError {
        code: PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
        message: format!(
            "column \"{}\" of {} is attached with method 'simhash': look it up by text or fingerprint, with max_distance",
            att.text_column,
            qualified_name_of(relid)
        ),
        detail: None,
        hint: None,
    })
}

/// The rows of `heap` (of each of its partitions) within `k` of `query` (and verified, with a
/// verifier), as rows of `heap`'s type with their distances: nearest first, then partition by
/// partition in physical order.
unsafe fn local_near_duplicates(
    heap: pg_sys::Relation,
    att: &Attachment,
    sim: &SimHashSettings,
    query: u64,
    k: i32,
    verifier: Option<&Verifier>,
) -> Vec<(Found, pg_sys::Datum)> {
    let snapshot = pg_sys::GetActiveSnapshot();
    let mut found: Vec<(u32, usize, pg_sys::ItemPointerData, pg_sys::Datum, Option<f64>)> = Vec::new();
    let tupdesc = (*heap).rd_att;
    // A partitioned table is searched partition by partition; a partition, on its own.
    let tables = crate::partitions::leaf_tables(heap);
    if tables.is_empty() {
        ProbePlan::new(query, k, sim.nbands).or_raise();
    }
    for (order, &table) in tables.iter().enumerate() {
        let open = crate::partitions::OpenTable::open(heap, table);
        let rel = open.rel;
        // A partition's rows, in the row type of the table asked about (its columns may be in
        // another order); NULL when they already are.
        let map = if rel == heap {
            std::ptr::null_mut()
        } else {
            pg_sys::convert_tuples_by_name((*rel).rd_att, tupdesc)
        };
        let search = TableSearch {
            rel,
            att,
            sim,
            fp_attnum: fingerprint_attnum(rel, att),
            query,
            k,
            snapshot,
            exclude: None,
            lockmode: pg_sys::AccessShareLock as pg_sys::LOCKMODE,
        };
        search_table(&search, &mut |distance, slot| {
            let similarity = match verifier {
                Some(v) => match v.passes(rel, slot) {
                    Some(s) => Some(s),
                    None => return,
                },
                None => None,
            };
            let mut should_free = false;
            let tuple = pg_sys::ExecFetchSlotHeapTuple(slot, false, &mut should_free);
            let row = if map.is_null() {
                tuple
            } else {
                pg_sys::execute_attr_map_tuple(tuple, map)
            };
            let item = pg_sys::heap_copy_tuple_as_datum(row, tupdesc);
            if !map.is_null() {
                pg_sys::heap_freetuple(row);
            }
            if should_free {
                pg_sys::heap_freetuple(tuple);
            }
            found.push((distance, order, (*slot).tts_tid, item, similarity));
        });
        if !map.is_null() {
            pg_sys::free_conversion_map(map);
        }
    }
    found.sort_by_key(|(d, order, tid, _, _)| {
        (
            *d,
            *order,
            (u32::from(tid.ip_blkid.bi_hi) << 16) | u32::from(tid.ip_blkid.bi_lo),
            tid.ip_posid,
        )
    });
    found
        .into_iter()
        .map(|(d, _, _, item, similarity)| {
            let found = Found {
                distance: Some(d),
                similarity,
            };
            (found, item)
        })
        .collect()
}

/// What the registry check of a Citus table found in one shard (`simhash_internal.probe_shard`).
pub enum ShardProbe {
    /// The shard was searched: the distance of its nearest row within k, if any.
    Searched(Option<u32>),
    /// Not searched here (row-level security applies to the caller, or the column has a MinHash
    /// attachment): the coordinator searches the shards with a query.
    Declined,
}

/// Searches shard `relid` of a Citus table (its own attachment of `text_column`) for the row
/// nearest to `query` within `k`, as a lookup on one node does, with the statement's snapshot and
/// the caller's privileges.
///
/// # Safety
/// Call where a query may run.
pub unsafe fn probe_shard(relid: pg_sys::Oid, text_column: &str, query: u64, k: i32) -> ShardProbe {
    let heap = open_table(relid);
    crate::privileges::require(relid, pg_sys::ACL_SELECT);
    if crate::privileges::row_security_applies(relid) {
        pg_sys::relation_close(heap, pg_sys::NoLock as pg_sys::LOCKMODE);
        return ShardProbe::Declined;
    }
    let att = crate::attachment::find(heap, Some(text_column), crate::catalog::extension_namespace());
    let crate::attachment::Method::SimHash(sim) = &att.method else {
        // A registry is SimHash's alone (attach refuses MinHash): nothing to say about a signature.
        pg_sys::relation_close(heap, pg_sys::NoLock as pg_sys::LOCKMODE);
        return ShardProbe::Declined;
    };
    // Four bands of many probe values each, in a transaction of its own: the leaf lists at once.
    // Nearest first.
    let nearest = crate::storage::leafmap::eager(|| local_near_duplicates(heap, &att, sim, query, k, None))
        .first()
        .and_then(|(found, _)| found.distance);
    pg_sys::relation_close(heap, pg_sys::NoLock as pg_sys::LOCKMODE);
    ShardProbe::Searched(nearest)
}

/// Refuses a lookup of a Citus reference or local table (0A000).
unsafe fn refuse_unless_hash_distributed(heap: pg_sys::Relation, dist: &crate::citus::Distribution) {
    if !dist.hash_distributed() {
        raise(EncodedError {
            code: PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
            message: format!(
                "simhash_near_duplicates: \"{}\" is a Citus reference or local table",
                relation_name(heap)
            ),
            detail: None,
            hint: Some("simhash_attach() supports hash-distributed tables.".into()),
        });
    }
}

/// The near-duplicates of `query` found by the query of `simhash_near_duplicates_sql()`, run as the
/// caller: for a Citus table, whose rows are on the shards (Citus runs it on every shard, where the
/// band indexes serve the probes), and for a table under row-level security, whose policies the
/// executor applies. Nearest first and then in key order.
#[allow(clippy::too_many_arguments)]
unsafe fn sql_near_duplicates(
    schema: &str,
    heap: pg_sys::Relation,
    att: &Attachment,
    sim: &SimHashSettings,
    query: u64,
    k: i32,
    verifier: Option<&Verifier>,
    on_row: &mut dyn FnMut(pg_sys::Datum, Found),
) {
    ProbePlan::new(query, k, sim.nbands).or_raise();
    let relid = (*heap).rd_id;
    let (key, lookup) = crate::spi::connected(|| {
        let key = RowKey::of(relid, false);
        let lookup = crate::spi::one_utf8(
            &format!(
                // Every argument as its declared type, the default one too: a function of that name
                // another role made in the extension's schema with a closer signature never runs.
                "SELECT pg_catalog.convert_to({schema}.simhash_near_duplicates_sql($1::pg_catalog.regclass, \
                 ({})::pg_catalog.int8, {k}::pg_catalog.int4, {}::pg_catalog.name, NULL::pg_catalog.text), 'UTF8')",
                query as i64,
                pgrx::spi::quote_literal(&att.text_column)
            ),
            &[crate::spi::Arg::Oid(relid)],
        );
        (key, lookup.unwrap_or_default())
    });
    // Ties in key order (a table without a key has no order among its shards).
    let order: String = match key {
        RowKey::Columns(columns) => columns.iter().map(|c| format!(", (x.item).{c}")).collect(),
        RowKey::Ctid { .. } => String::new(),
    };
    // Verified, each row's text as well (text, varchar or char: cast to text).
    let text = match verifier {
        Some(_) => format!(
            ", (x.item).{}::pg_catalog.text",
            pgrx::spi::quote_identifier(&att.text_column)
        ),
        None => String::new(),
    };
    let sql = format!("SELECT x.item, x.distance{text} FROM ({lookup}) x ORDER BY x.distance{order}");
    // The query names operators without their schema: it runs where nothing but pg_catalog's are found.
    crate::privileges::with_safe_search_path(|| {
        crate::spi::for_each_row(&sql, &[], "the lookup by query", &mut |row, desc| {
            let (mut item_null, mut distance_null) = (false, false);
            let item = pg_sys::SPI_getbinval(row, desc, 1, &mut item_null);
            let distance = pg_sys::SPI_getbinval(row, desc, 2, &mut distance_null);
            // Both are never NULL: a row and its Hamming distance.
            if item_null || distance_null {
                return;
            }
            let similarity = match verifier {
                Some(v) => {
                    let mut text_null = false;
                    let text = pg_sys::SPI_getbinval(row, desc, 3, &mut text_null);
                    match v.passes_datum((!text_null).then_some(text)) {
                        Some(s) => Some(s),
                        None => return,
                    }
                }
                None => None,
            };
            on_row(
                item,
                Found {
                    distance: Some(distance.value() as i32 as u32),
                    similarity,
                },
            );
        })
    });
}

/// What the lookup of `query` within `k` costs on `heap` (every partition of a partitioned table:
/// the costs add up), and the rows it finds (`simhash_lookup_cost()`).
///
/// # Safety
/// `heap` must be an open table that `att` is attached to.
pub unsafe fn cost(
    heap: pg_sys::Relation,
    att: &Attachment,
    sim: &SimHashSettings,
    query: u64,
    k: i32,
) -> (Counts, u64) {
    let snapshot = pg_sys::GetActiveSnapshot();
    let mut matches = 0u64;
    let mut counts = Counts::default();
    let tables = crate::partitions::leaf_tables(heap);
    if tables.is_empty() {
        ProbePlan::new(query, k, sim.nbands).or_raise();
    }
    // Every partition of a partitioned table is searched: the costs add up.
    for table in tables {
        let open = crate::partitions::OpenTable::open(heap, table);
        let fp_attnum = fingerprint_attnum(open.rel, att);
        let search = TableSearch {
            rel: open.rel,
            att,
            sim,
            fp_attnum,
            query,
            k,
            snapshot,
            exclude: None,
            lockmode: pg_sys::AccessShareLock as pg_sys::LOCKMODE,
        };
        let c = search_table(&search, &mut |_, _| matches += 1);
        counts.probes += c.probes;
        counts.candidates += c.candidates;
        counts.heap_fetches += c.heap_fetches;
    }
    (counts, matches)
}
