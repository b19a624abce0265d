//! What every method's engine is given and gives back: a lookup and its results, a written row
//! to check (docs/ARCHITECTURE.md §15).

use pgrx::prelude::*;

use crate::attachment::Attachment;
use crate::catalog::relation_name;
use crate::check::row::ScopeFilter;
use crate::errors::{raise, EncodedError};

/// What a lookup is given to look for (None: SQL NULL).
#[derive(Clone, Copy)]
pub enum Given {
    Fingerprint(Option<u64>),
    /// A `text` datum.
    Text(Option<pg_sys::Datum>),
    /// A `bytea` datum: a MinHash signature.
    Signature(Option<pg_sys::Datum>),
}

/// How near a row a lookup found is to what it was given.
#[derive(Clone, Copy, Default)]
pub struct Found {
    /// The Hamming distance of its fingerprint (SimHash).
    pub distance: Option<u32>,
    /// The similarity: verified, the exact similarity of the two texts (both methods); else the
    /// estimated similarity of its signature (MinHash).
    pub similarity: Option<f64>,
}

/// One lookup of `simhash_near_duplicates()`: the table (open), its attachment, what to look for
/// and the limits the call gave (None: the attachment's).
pub struct Lookup<'a> {
    pub heap: pg_sys::Relation,
    pub att: &'a Attachment,
    pub given: Given,
    pub max_distance: Option<i32>,
    pub threshold: Option<f64>,
    /// Whether to verify the rows found against the text given (None: as the attachment does).
    pub verify: Option<bool>,
    /// The extension's schema, quoted: where the SQL form of a lookup is called (asked for only
    /// then: it is a catalog read).
    pub ext_schema: &'a dyn Fn() -> String,
}

/// Opens table `relid` for a lookup, or raises 42809 for a relation that is no table.
pub unsafe fn open_table(relid: pg_sys::Oid) -> pg_sys::Relation {
    let heap = pg_sys::relation_open(relid, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
    let kind = (*(*heap).rd_rel).relkind as u8;
    if kind != pg_sys::RELKIND_RELATION && kind != pg_sys::RELKIND_PARTITIONED_TABLE {
        let table = relation_name(heap);
        raise(EncodedError {
            code: PgSqlErrorCode::ERRCODE_WRONG_OBJECT_TYPE,
            message: format!("simhash_near_duplicates: \"{table}\" is not a table"),
            detail: None,
            hint: None,
        });
    }
    heap
}

/// A row being written that its attachment's method checks for a near-duplicate.
pub struct WrittenRow<'a> {
    /// The table the row goes to (open), and the table the trigger was attached to: that one, or
    /// the partitioned table it is a partition of.
    pub heap: pg_sys::Relation,
    pub attached_table: pg_sys::Oid,
    /// The column of the stored value in `heap`.
    pub value_attnum: i16,
    /// The old version of an UPDATE's row, never its own near-duplicate.
    pub old_tid: Option<pg_sys::ItemPointerData>,
    /// With a scope, only rows of its value count.
    pub scope: Option<&'a ScopeFilter<'a>>,
    /// The flag column in `'flag'` mode, to read the near-duplicate's key as it stores it.
    pub flag_attr: Option<&'a pg_sys::FormData_pg_attribute>,
    /// The extension's schema (quoted), asked for only when a row is found.
    pub ext_schema: &'a dyn Fn() -> String,
    /// An INSERT that the statement-end check takes over when the method has one (SimHash).
    pub checked_after: bool,
    /// Whether the attachment has its INSERTs checked after they are written (§8.8): a check made
    /// before the write then also takes the key that keeps those writes out of its window.
    pub table_checks_after: bool,
    /// The verification of candidates against the row's text, when the attachment verifies.
    pub verifier: Option<&'a crate::check::verify::Verifier>,
    /// Whether the check takes no keys: every row of the table is checked again after its write
    /// (the AFTER trigger, §8.2), so a check made before it decides only what becomes of the row.
    pub keyless: bool,
    /// Rows found that do not count (in their table, given its OID): rows of the statement
    /// written after the row checked (statement order), or a COPY's rows not checked yet.
    pub ignore: Option<&'a crate::check::row::Ignore<'a>>,
}

/// Raises 42804, with a HINT to detach and attach again, unless each column of `att` that `rel`
/// has is still of the type the attach gave it: the fingerprint or signature column (`bigint`,
/// `bytea`) and the band columns (`integer`, `bigint[]`), domains over them included. The
/// extension reads and writes their values as those types (a band index's keys, the values the
/// trigger keeps), and a column of another type, retyped where the event trigger could not refuse
/// it, would otherwise be read as one (docs/ARCHITECTURE.md §13.6). A missing column is left to
/// whoever reads it (42703).
///
/// # Safety
/// `rel` must be an open relation.
pub unsafe fn verify_columns(rel: pg_sys::Relation, att: &Attachment) {
    let tupdesc = (*rel).rd_att;
    let (value_type, value_name) = att.method.stored_type();
    let (band_type, band_name) = match att.method {
        crate::attachment::Method::SimHash(_) => (pg_sys::INT4OID, "integer"),
        crate::attachment::Method::MinHash(_) => (pg_sys::INT8ARRAYOID, "bigint[]"),
    };
    let wanted = std::iter::once((att.fingerprint_column(), value_type, value_name))
        .chain(att.band_columns().into_iter().map(|b| (b, band_type, band_name)));
    for (column, want, want_name) in wanted {
        let Some(n) = crate::catalog::attnum_of(tupdesc, &column) else {
            continue;
        };
        let attr = crate::catalog::attribute(tupdesc, n.into());
        if pg_sys::getBaseType(attr.atttypid) != want {
            let table = relation_name(rel);
            let has = crate::catalog::cstr_utf8(pg_sys::format_type_be(attr.atttypid));
            raise(EncodedError {
                code: PgSqlErrorCode::ERRCODE_DATATYPE_MISMATCH,
                message: format!("column \"{column}\" of table \"{table}\" has type {has}, not {want_name}"),
                detail: Some(format!(
                    "simhash_attach() made it for the attachment of column \"{}\".",
                    att.text_column
                )),
                hint: Some(
                    "The column was altered after simhash_attach(); detach the table and attach it again."
                        .into(),
                ),
            });
        }
    }
}
