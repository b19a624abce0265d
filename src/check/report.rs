//! What the error and the flag column say of a near-duplicate found: the key of the row (read as
//! its table's owner, shown only when the writer may see it), the distance or similarity, and the
//! refusal of checks a Citus shard cannot make exactly.

use std::cell::RefCell;
use std::collections::HashMap;

use pgrx::prelude::*;

use crate::attachment::{Attachment, Method, RowKey};
use crate::catalog::{attnum_of, cstr_utf8, qualified_name_of, relation_name};
use crate::errors::{raise, EncodedError};

/// The prepared lookup of one trigger, kept for the life of the backend.
struct Lookup {
    plan: pg_sys::SPIPlanPtr,
    key_columns: String,
    /// The names of the key columns; None for a key of system columns (ctid).
    key_names: Option<Vec<String>>,
}

thread_local! {
    static LOOKUPS: RefCell<HashMap<(u32, String, String), Lookup>> = RefCell::new(HashMap::new());
}

/// How near an existing row is: its Hamming distance (SimHash) or estimated similarity (MinHash).
#[derive(Clone, Copy)]
pub enum Measure {
    Distance(u32),
    /// Estimated (MinHash without verification).
    Similarity(f64),
    /// Verified against the texts: the exact similarity, and the distance of a SimHash row.
    Verified {
        distance: Option<u32>,
        similarity: f64,
    },
}

/// The nearest existing row within `max_distance` (the most similar one at least as similar as the
/// threshold).
pub struct Nearest {
    /// The row's key as messages show it; None when the writer may not see it
    /// (`crate::privileges::may_see_key`).
    pub key: Option<String>,
    pub measure: Measure,
    /// The row's key as the flag column stores it, copied out of SPI's memory.
    pub flag_value: Option<pg_sys::Datum>,
}

/// Builds and prepares the query that reads the key of the row found (and the flag column's value).
/// It names only `pg_catalog`'s functions, operators and types, with their schema.
unsafe fn prepare_lookup(relid: pg_sys::Oid) -> Lookup {
    let key = RowKey::of(relid, pg_sys::get_rel_relispartition(relid));
    // Always schema-qualified: the cached plan must not depend on the caller's search_path. Read
    // from the syscache: Citus hides its shards from queries on pg_class in some sessions.
    let qualified = qualified_name_of(relid);
    let key_text = key.message_sql("t");
    // The flag column holds a one-column key as itself, any other as the message's text.
    let flag_expr = match &key {
        RowKey::Columns(columns) if columns.len() == 1 => format!("t.{}", columns[0]),
        _ => key_text.clone(),
    };
    // The row was found through the band indexes (`crate::method::simhash::search`); this reads its key by ctid.
    let sql = format!(
        "SELECT {key_text}, {flag_expr} FROM ONLY {qualified} t WHERE t.ctid OPERATOR(pg_catalog.=) $1"
    );
    let plan = crate::spi::prepare_kept(&sql, &mut [pg_sys::TIDOID], "the trigger's key lookup");
    let key_names = match &key {
        RowKey::Columns(columns) => Some(columns.iter().map(|c| crate::attachment::unquote(c)).collect()),
        RowKey::Ctid { .. } => None,
    };
    Lookup {
        plan,
        key_columns: key.names(),
        key_names,
    }
}

/// The key columns of table `relid` and the key (and flag column value) of its row at `tid`, as
/// `snapshot` sees it: what the messages and the flag column say of a near-duplicate found in
/// `relid`, a table or partition of the attached table `attached`. Read as the owner of `relid`,
/// whatever the writer may SELECT, as a unique index finds any row; the key is kept for the
/// messages only when the writer may see it (`crate::privileges::may_see_key` on `attached`).
pub unsafe fn describe_row(
    ext_schema: &str,
    att: &Attachment,
    (relid, attached): (pg_sys::Oid, pg_sys::Oid),
    tid: pg_sys::ItemPointerData,
    measure: Measure,
    flag_attr: Option<&pg_sys::FormData_pg_attribute>,
    snapshot: pg_sys::Snapshot,
) -> (String, Option<Nearest>) {
    let ext_schema = ext_schema.to_string();
    pg_sys::SPI_connect();
    // The name is part of the key: the prepared query names the table, and a renamed table (or
    // schema) must not reach a stale plan.
    let cache_key = (relid.to_u32(), ext_schema.clone(), qualified_name_of(relid));
    let (plan, key_columns, key_names) = LOOKUPS.with(|lookups| {
        let mut lookups = lookups.borrow_mut();
        let lookup = lookups.entry(cache_key).or_insert_with(|| prepare_lookup(relid));
        (lookup.plan, lookup.key_columns.clone(), lookup.key_names.clone())
    });
    let visible = key_visible(attached, key_names.as_deref(), &att.text_column);
    let mut tid = tid;
    let mut values = [pg_sys::Datum::from(&mut tid as *mut pg_sys::ItemPointerData)];
    let nulls = [b' ' as std::ffi::c_char];
    let status = crate::privileges::as_owner(relid, true, || {
        pg_sys::SPI_execute_snapshot(
            plan,
            values.as_mut_ptr(),
            nulls.as_ptr(),
            snapshot,
            std::ptr::null_mut(),
            false,
            false,
            1,
        )
    });
    // A row found committed by the search (§8.4) that a transaction deleted and committed since:
    // the caller searches again.
    if status == pg_sys::SPI_OK_SELECT as i32 && pg_sys::SPI_processed == 0 {
        pg_sys::SPI_finish();
        return (key_columns, None);
    }
    if status != pg_sys::SPI_OK_SELECT as i32 {
        raise(EncodedError {
            code: PgSqlErrorCode::ERRCODE_INTERNAL_ERROR,
            message: format!("simhash_trigger could not read the key of the row found (SPI status {status})"),
            detail: None,
            hint: None,
        });
    }
    let table = &*pg_sys::SPI_tuptable;
    let row = *table.vals;
    let key = visible.then(|| cstr_utf8(pg_sys::SPI_getvalue(row, table.tupdesc, 1)));
    let flag_value = flag_attr.and_then(|attr| {
        if pg_sys::SPI_gettypeid(table.tupdesc, 2) != attr.atttypid {
            raise(EncodedError {
                code: PgSqlErrorCode::ERRCODE_DATATYPE_MISMATCH,
                message: format!(
                    "simhash_trigger: column \"{}\" does not have the type of the table's key",
                    att.flag_column()
                ),
                detail: None,
                hint: Some(
                    "The key or the flag column was altered after simhash_attach(); detach the table and attach it again."
                        .into(),
                ),
            });
        }
        let mut isnull = false;
        let value = pg_sys::SPI_getbinval(row, table.tupdesc, 2, &mut isnull);
        (!isnull).then(|| pg_sys::SPI_datumTransfer(value, attr.attbyval, attr.attlen as i32))
    });
    pg_sys::SPI_finish();
    (
        key_columns,
        Some(Nearest {
            key,
            measure,
            flag_value,
        }),
    )
}

/// Whether the writer may be told the key (columns `names`, None for ctid) of a row of the attached
/// table `attached`, and its measure: only when it may SELECT the key columns and the text column
/// `text_column` (a distance or similarity is read from the text; issue 49), as PostgreSQL shows a
/// unique violation's key only to a role that may SELECT every column of the index; not when a
/// column is missing from it.
unsafe fn key_visible(attached: pg_sys::Oid, names: Option<&[String]>, text_column: &str) -> bool {
    use crate::privileges::{may_see_key, Columns};
    let rel = pg_sys::RelationIdGetRelation(attached);
    if rel.is_null() {
        return false;
    }
    let text = attnum_of((*rel).rd_att, text_column);
    let attnums: Option<Option<Vec<i16>>> =
        names.map(|names| names.iter().map(|n| attnum_of((*rel).rd_att, n)).collect());
    pg_sys::RelationClose(rel);
    let Some(text) = text else { return false };
    match attnums {
        None => may_see_key(attached, Columns::Table) && may_see_key(attached, Columns::Some(&[text])),
        Some(None) => false,
        Some(Some(mut attnums)) => {
            attnums.push(text);
            may_see_key(attached, Columns::Some(&attnums))
        }
    }
}

/// A similarity as messages show it: three decimals.
pub fn similarity_text(similarity: f64) -> String {
    format!("{similarity:.3}")
}

/// The error of a write to `table` that comes within `max_distance` of its row `n`: SQLSTATE 23505
/// with the attachment's trigger as its constraint name, so that an application tells it from a
/// unique violation (`PG_DIAG_CONSTRAINT_NAME`). The DETAIL names the row's key only when the writer
/// may see it, as PostgreSQL's unique violations do.
pub fn raise_duplicate(att: &Attachment, table: &str, key_columns: &str, n: &Nearest) -> ! {
    let limit = match &att.method {
        Method::MinHash(m) => format!("threshold {}", m.threshold),
        Method::SimHash(s) => format!("max_distance {}", s.max_distance),
    };
    // Without the key, no measure either: a distance or similarity to a row the writer may not read
    // would let it guess the row's text edit by edit.
    let detail = match (&n.key, n.measure) {
        (Some(key), Measure::Similarity(similarity)) => format!(
            "Key ({key_columns})=({key}) has estimated similarity {} ({limit}).",
            similarity_text(similarity)
        ),
        (Some(key), Measure::Distance(distance)) => {
            format!("Key ({key_columns})=({key}) is at Hamming distance {distance} ({limit}).")
        }
        // Verified, the similarity decided (issue 50, row 7): the DETAIL begins as the unverified
        // one does, for applications that match its start, and goes on with the deciding measure.
        (
            Some(key),
            Measure::Verified {
                distance: Some(distance),
                similarity,
            },
        ) => format!(
            "Key ({key_columns})=({key}) is at Hamming distance {distance} ({limit}) and has similarity {} (threshold {}).",
            similarity_text(similarity),
            att.method.threshold()
        ),
        (
            Some(key),
            Measure::Verified {
                distance: None,
                similarity,
            },
        ) => format!(
            "Key ({key_columns})=({key}) has similarity {} ({limit}).",
            similarity_text(similarity)
        ),
        (None, _) => format!("A row you may not read is a near-duplicate ({limit})."),
    };
    crate::errors::raise_violation(
        EncodedError {
            code: PgSqlErrorCode::ERRCODE_UNIQUE_VIOLATION,
            message: format!(
                "near-duplicate text in column \"{}\" of relation \"{table}\"",
                att.text_column
            ),
            detail: Some(detail),
            hint: None,
        },
        att.trigger_name(),
    )
}

/// On a shard of a Citus table, the trigger sees that shard's rows only: it checks a write only
/// where that is exact, among rows with the write's value of the distribution column, and refuses
/// otherwise (a check of one shard would let near-duplicates on other shards through unseen).
pub unsafe fn check_shard_scope(att: &Attachment, shard: &crate::citus::Distribution, rel: pg_sys::Relation) {
    if shard.hash_distributed() && shard.column.is_some() && att.scope_column == shard.column {
        return;
    }
    let column = shard.column.as_deref().unwrap_or("");
    raise(EncodedError {
        code: PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
        message: format!(
            "simhash_trigger: near-duplicate checks on shard \"{}\" of Citus table {} would miss the rows of other shards",
            relation_name(rel),
            shard.table
        ),
        detail: Some(if shard.hash_distributed() {
            format!(
                "on_duplicate => '{}' is scoped to {}, but the table is distributed by column \"{column}\".",
                att.mode.name(),
                att.scope_column
                    .as_deref()
                    .map_or("the whole table".to_string(), |c| format!("column \"{c}\""))
            )
        } else {
            "The table is a Citus reference or local table.".to_string()
        }),
        hint: Some(if shard.hash_distributed() {
            format!(
                "On the coordinator: SELECT simhash_detach(table); then simhash_attach(table, ..., scope => '{column}') \
                 to reject near-duplicates among rows with the same {column}, or on_duplicate => 'none'."
            )
        } else {
            "Detach it: simhash_attach() supports hash-distributed tables.".to_string()
        }),
    });
}

/// The error of a row of `'skip'` or `'flag'` mode whose check after its write (§8.3) finds a
/// near-duplicate that its check before the write did not: another transaction wrote it in between.
/// The row is written and cannot be skipped or flagged any more; a retry of the transaction can.
/// It says nothing of the row found (no key, no measure).
pub fn raise_concurrent(att: &Attachment, table: &str) -> ! {
    raise(EncodedError {
        code: PgSqlErrorCode::ERRCODE_T_R_SERIALIZATION_FAILURE,
        message: format!(
            "could not {} a near-duplicate row of table \"{table}\": another transaction wrote its near-duplicate concurrently",
            if att.mode == crate::attachment::Mode::Flag { "flag" } else { "skip" }
        ),
        detail: None,
        hint: Some("Retry the transaction.".into()),
    });
}
