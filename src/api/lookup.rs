//! The SQL surface of lookups: `simhash_near_duplicates()` (three C functions, by fingerprint,
//! text or signature, over `crate::method::near_duplicates`), `simhash_probes()` and
//! `simhash_lookup_cost()` (docs/ARCHITECTURE.md §5).

use std::ffi::CStr;

use pgrx::prelude::*;
use simhash_core::probe::ProbePlan;

use crate::attachment::Method;
use crate::catalog::{own_namespace, relation_name};
use crate::errors::{raise, EncodedError, OrRaise};
use crate::method::simhash::search::fingerprint_attnum;
use crate::method::{open_table, Found, Given, Lookup};

fn arg_null(fcinfo: pg_sys::FunctionCallInfo, i: usize) -> bool {
    unsafe { (*(*fcinfo).args.as_ptr().add(i)).isnull }
}

fn arg(fcinfo: pg_sys::FunctionCallInfo, i: usize) -> pg_sys::Datum {
    unsafe { (*(*fcinfo).args.as_ptr().add(i)).value }
}

/// The table whose row type the first argument of `simhash_near_duplicates()` has, or 42809.
unsafe fn row_table(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Oid {
    let row_type = pg_sys::get_fn_expr_argtype((*fcinfo).flinfo, 0);
    let relid = if row_type == pg_sys::InvalidOid {
        pg_sys::InvalidOid
    } else {
        pg_sys::get_typ_typrelid(row_type)
    };
    if relid == pg_sys::InvalidOid {
        raise(EncodedError {
            code: PgSqlErrorCode::ERRCODE_WRONG_OBJECT_TYPE,
            message:
                "simhash_near_duplicates: the first argument must be a row of the table, as in NULL::my_table"
                    .into(),
            detail: None,
            hint: None,
        });
    }
    relid
}

/// Adds a row (`item`, `distance`, `similarity`) to the result of a set-returning call; a
/// declaration of 0.4.0 or older returns (`item`, `distance`) only (`ALTER EXTENSION ... UPDATE`
/// not run yet).
unsafe fn put_row(rsinfo: *mut pg_sys::ReturnSetInfo, item: pg_sys::Datum, found: Found) {
    let mut values = [
        item,
        pg_sys::Datum::from(found.distance.unwrap_or_default() as i32),
        pg_sys::Datum::from(found.similarity.unwrap_or_default().to_bits()),
    ];
    let mut nulls = [false, found.distance.is_none(), found.similarity.is_none()];
    if (*(*rsinfo).setDesc).natts < 3 {
        values[2] = pg_sys::Datum::from(0);
        nulls[2] = true;
    }
    // The tuplestore copies the row into its own memory.
    pg_sys::tuplestore_putvalues(
        (*rsinfo).setResult,
        (*rsinfo).setDesc,
        values.as_mut_ptr(),
        nulls.as_mut_ptr(),
    );
}

/// What a lookup is given to look for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Query {
    /// `(rel, fingerprint bigint, max_distance, text_column)`.
    Fingerprint,
    /// `(rel, doc text, max_distance, text_column, threshold, verify)`.
    Text,
    /// `(rel, signature bytea, threshold, text_column)`.
    Signature,
}

/// `simhash_near_duplicates(rel anyelement, fingerprint bigint | doc text | signature bytea, ...)`:
/// the rows of the table within max_distance, nearest first, or (MinHash) sharing a band with at
/// least the threshold's similarity, most similar first.
unsafe fn near_duplicates(fcinfo: pg_sys::FunctionCallInfo, query: Query) -> pg_sys::Datum {
    crate::errors::arm_allocator();
    let relid = row_table(fcinfo);
    // A lookup returns whole rows: as `SELECT t FROM table t` would, it needs SELECT on every column.
    crate::privileges::require_select(relid, crate::privileges::Columns::All);
    let text_column = (!arg_null(fcinfo, 3)).then(|| {
        let name = arg(fcinfo, 3).cast_mut_ptr::<std::ffi::c_char>();
        crate::text::server_to_utf8_lossy(CStr::from_ptr(name).to_bytes())
    });
    crate::compat::init_materialized_srf(fcinfo);
    let rsinfo = (*fcinfo).resultinfo as *mut pg_sys::ReturnSetInfo;
    let heap = open_table(relid);
    let att = crate::attachment::find(heap, text_column.as_deref(), own_namespace(fcinfo));
    let optional = |i: usize| ((*fcinfo).nargs as usize > i && !arg_null(fcinfo, i)).then(|| arg(fcinfo, i));
    let given = optional(1);
    let (given, max_distance, threshold, verify) = match query {
        Query::Fingerprint => (
            Given::Fingerprint(given.map(|d| d.value() as i64 as u64)),
            optional(2),
            None,
            None,
        ),
        // 0.10.0's declaration (before `ALTER EXTENSION ... UPDATE`) has no `verify`.
        Query::Text => (Given::Text(given), optional(2), optional(4), optional(5)),
        Query::Signature => (Given::Signature(given), None, optional(2), None),
    };
    let lookup = Lookup {
        heap,
        att: &att,
        given,
        max_distance: max_distance.map(|d| d.value() as i32),
        threshold: threshold.map(|d| f64::from_bits(d.value() as u64)),
        verify: verify.map(|d| d.value() != 0),
        ext_schema: &|| crate::catalog::extension_schema(fcinfo),
    };
    crate::method::near_duplicates(&lookup, &mut |item, found| put_row(rsinfo, item, found));
    pg_sys::relation_close(heap, pg_sys::NoLock as pg_sys::LOCKMODE);
    pg_sys::Datum::from(0)
}

crate::errors::c_function!(
    /// `simhash_near_duplicates(anyelement, bigint, int, name)`.
    pg_finfo_simhash_near_duplicates_fingerprint, simhash_near_duplicates_fingerprint => near_duplicates_by_fingerprint
);

crate::errors::c_function!(
    /// `simhash_near_duplicates(anyelement, text, int, name)`.
    pg_finfo_simhash_near_duplicates_text, simhash_near_duplicates_text => near_duplicates_by_text
);

crate::errors::c_function!(
    /// `simhash_near_duplicates(anyelement, bytea, float8, name)`.
    pg_finfo_simhash_near_duplicates_signature, simhash_near_duplicates_signature => near_duplicates_by_signature
);

unsafe fn near_duplicates_by_fingerprint(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    near_duplicates(fcinfo, Query::Fingerprint)
}

unsafe fn near_duplicates_by_text(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    near_duplicates(fcinfo, Query::Text)
}

unsafe fn near_duplicates_by_signature(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    near_duplicates(fcinfo, Query::Signature)
}

/// The probe plan of a lookup, as rows: which values of which band `simhash_near_duplicates` looks
/// up for `fingerprint` within `max_distance` on `nbands` bands (no rows: it scans the table).
#[pg_extern(immutable, strict, parallel_safe)]
fn simhash_probes(
    fingerprint: i64,
    max_distance: i32,
    nbands: default!(i32, 4),
) -> TableIterator<
    'static,
    (
        name!(band, i32),
        name!(radius, i32),
        name!(probe_values, Vec<i32>),
    ),
> {
    let plan = ProbePlan::new(fingerprint as u64, max_distance, nbands).or_raise();
    TableIterator::new(
        plan.probes
            .unwrap_or_default()
            .into_iter()
            .filter(|p| p.radius >= 0)
            .map(|p| (p.band as i32, p.radius, p.values)),
    )
}

extension_sql_file!(
    "../../sql/src/near_duplicates.sql",
    name = "near_duplicates",
    requires = ["ddl_command_start"]
);

/// What one lookup costs: band values probed, index entries read, heap tuples fetched, rows found.
/// For tuning `max_distance` and for the benchmarks; the rows are those `simhash_near_duplicates()`
/// returns.
#[pg_extern(stable, parallel_safe)]
fn simhash_lookup_cost(
    table_name: Option<crate::catalog::RegClass>,
    fingerprint: i64,
    max_distance: default!(Option<i32>, "NULL"),
    text_column: default!(Option<crate::text::Text>, "NULL"),
    fcinfo: pg_sys::FunctionCallInfo,
) -> TableIterator<
    'static,
    (
        name!(probes, i64),
        name!(candidates, i64),
        name!(heap_fetches, i64),
        name!(matches, i64),
    ),
> {
    // A NULL table has no lookup to cost (as a strict function, no row).
    let Some(table_name) = table_name else {
        return TableIterator::new(Vec::new());
    };
    unsafe {
        let heap = pg_sys::relation_open(table_name.0, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
        let att = crate::errors::in_extern(|| {
            let column = text_column.as_ref().map(crate::text::Text::to_utf8);
            crate::attachment::find(heap, column.as_deref(), own_namespace(fcinfo))
        });
        let Method::SimHash(sim) = &att.method else {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
                format!(
                    "simhash_lookup_cost: column \"{}\" of \"{}\" is attached with method 'minhash'",
                    att.text_column,
                    relation_name(heap)
                ),
                "A MinHash lookup is one query over the GIN index of its band keys: see it with EXPLAIN ANALYZE."
            );
        };
        refuse_uncountable(heap, &att);
        let k = max_distance.unwrap_or(sim.max_distance);
        let (counts, matches) = crate::method::simhash::lookup::cost(heap, &att, sim, fingerprint as u64, k);
        pg_sys::relation_close(heap, pg_sys::NoLock as pg_sys::LOCKMODE);
        TableIterator::once((
            counts.probes as i64,
            counts.candidates as i64,
            counts.heap_fetches as i64,
            matches as i64,
        ))
    }
}

/// Refuses to count a lookup a caller may not read (SELECT on the fingerprint column), or whose
/// rows the band indexes cannot count: under row-level security, on a Citus table.
unsafe fn refuse_uncountable(heap: pg_sys::Relation, att: &crate::attachment::Attachment) {
    // As `SELECT count(*) FROM table WHERE <fingerprint within k>`: SELECT on the fingerprint
    // column. Counted from the band indexes, where no policy applies: refused under row-level
    // security, whose policies could hide some of the rows counted.
    let fp_attnum = crate::errors::in_extern(|| fingerprint_attnum(heap, att));
    crate::privileges::require_select((*heap).rd_id, crate::privileges::Columns::Some(&[fp_attnum]));
    if crate::privileges::row_security_applies((*heap).rd_id) {
        ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
                format!(
                    "simhash_lookup_cost: row-level security applies to \"{}\", and the cost is counted from its band indexes",
                    relation_name(heap)
                ),
                "Run EXPLAIN ANALYZE on the query of simhash_near_duplicates_sql(), which applies the policies."
            );
    }
    if crate::citus::distribution((*heap).rd_id).is_some() {
        ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
                format!(
                    "simhash_lookup_cost: \"{}\" is a Citus table, whose rows are on its shards",
                    relation_name(heap)
                ),
                "Run EXPLAIN ANALYZE on the query of simhash_near_duplicates_sql() to see the cost on each shard."
            );
    }
}
