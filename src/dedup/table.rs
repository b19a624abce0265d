//! What a dedup reads of an attached table: its attachment, how its rows are named, where they are;
//! the refusal of the other method's settings.

use pgrx::prelude::*;

use crate::attachment::RowKey;

/// What a dedup needs to know of an attached table.
pub struct Table {
    pub att: crate::attachment::Attachment,
    pub key: RowKey,
    /// `schema.table`, quoted.
    pub qualified: String,
    /// A partitioned table or a partition: a ctid names a row only within its partition.
    pub partitioned: bool,
    /// A Citus table, whose rows are on its shards.
    pub distributed: bool,
    /// The text column is of a text type (text, varchar, char or a domain over one): its texts can
    /// be verified.
    pub text_typed: bool,
}

impl Table {
    /// The attachment on `text_column` of `relid` and how its rows are named. SPI must be connected.
    pub fn read(relid: pg_sys::Oid, text_column: Option<&str>, namespace: pg_sys::Oid) -> Table {
        crate::errors::in_extern(|| unsafe {
            let heap = pg_sys::relation_open(relid, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
            let form = &*(*heap).rd_rel;
            let partitioned = form.relkind as u8 == pg_sys::RELKIND_PARTITIONED_TABLE || form.relispartition;
            let att = crate::attachment::find(heap, text_column, namespace);
            // Its stored values are read as their method's type (42804 for a column retyped since).
            crate::method::common::verify_columns(heap, &att);
            let tupdesc = (*heap).rd_att;
            let text_typed = crate::catalog::attnum_of(tupdesc, &att.text_column).is_some_and(|n| {
                crate::check::verify::is_text_type(crate::catalog::attribute(tupdesc, n.into()).atttypid)
            });
            let table = Table {
                text_typed,
                att,
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

/// What a dedup asked for.
pub struct Asked<'a> {
    pub max_distance: Option<i32>,
    /// MinHash: the least similarity (exact when verifying, else estimated); SimHash: the least
    /// verified similarity, only when verifying.
    pub threshold: Option<f64>,
    pub text_column: Option<&'a str>,
    /// Whether candidates are verified against their texts (None: as the attachment does).
    pub verify: Option<bool>,
}

impl Asked<'_> {
    /// Whether this call verifies `table`'s candidates.
    pub fn verifies(&self, table: &Table) -> bool {
        self.verify.unwrap_or(table.att.verify)
    }

    /// The verifier of this call on `table`, when it verifies: its options and threshold. A text
    /// column retyped since the attach to a type that is not text is an error (42804), as for the
    /// trigger's verification.
    pub fn verifier(&self, table: &Table) -> Option<crate::check::verify::Verifier> {
        if self.verifies(table) && !table.text_typed {
            crate::attachment::ereport_now(crate::errors::EncodedError {
                code: PgSqlErrorCode::ERRCODE_DATATYPE_MISMATCH,
                message: format!(
                    "column \"{}\" of table {} is not of a text type: its texts cannot be verified",
                    table.att.text_column, table.qualified
                ),
                detail: None,
                hint: None,
            });
        }
        crate::check::verify::Verifier::new(
            &table.att,
            crate::check::verify::Asked {
                verify: self.verify,
                threshold: self.threshold,
            },
            || None,
        )
    }
}

/// A key read as UTF-8 bytes (`convert_to(..., 'UTF8')`: pgrx reads `text` as UTF-8 only).
pub fn utf8_key(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into())
}

/// Raises the error of a failed read of dedup's statements (XX000; PostgreSQL raises its own errors
/// itself, so this is what pgrx reports otherwise).
pub fn read_failed(what: &str, e: pgrx::spi::SpiError) -> ! {
    crate::errors::raise(crate::errors::EncodedError {
        code: PgSqlErrorCode::ERRCODE_INTERNAL_ERROR,
        message: format!("simhash_ext: reading {what} failed: {e}"),
        detail: None,
        hint: None,
    })
}

/// Runs `query` through a cursor, handing `on_batch` each batch of up to 10,000 rows: a table's
/// keys and values are read in bounded pieces (`what` names what is read, for a failed fetch).
pub fn for_each_batch(
    client: &pgrx::spi::SpiClient<'_>,
    query: &str,
    what: &str,
    mut on_batch: impl FnMut(pgrx::spi::SpiTupleTable<'_>),
) {
    // pgrx passes a `&str` as it is: a name in the query is converted to the server encoding.
    let mut cursor = client.open_cursor(&crate::spi::server_cstring(query), &[]);
    loop {
        let batch = cursor.fetch(10_000).unwrap_or_else(|e| read_failed(what, e));
        if batch.is_empty() {
            break;
        }
        on_batch(batch);
    }
}

/// `Spi::connect_mut` with the search path `pg_catalog, pg_temp` (`crate::privileges`): no name in
/// the statements resolves to another role's function or operator.
pub fn connect_with_safe_search_path<R>(f: impl FnOnce(&mut pgrx::spi::SpiClient<'_>) -> R) -> R {
    unsafe { crate::privileges::with_safe_search_path(|| Spi::connect_mut(f)) }
}

/// Refuses the setting of the other method: `max_distance` for MinHash, `threshold` for SimHash
/// when not verifying (22023), and a threshold outside 0–1.
pub fn check_method_options(what: &str, table: &Table, asked: &Asked) {
    use crate::attachment::{ereport_now, invalid_value, valid_threshold};
    let (max_distance, threshold) = (asked.max_distance, asked.threshold);
    let verifies = asked.verifies(table);
    let column = &table.att.text_column;
    // Raised inside `Spi::connect`, where pgrx re-raises a PostgreSQL error as it is.
    let refuse = |message: String| -> ! { ereport_now(invalid_value(message)) };
    match (table.att.minhash(), max_distance, threshold) {
        (Some(_), Some(_), _) => refuse(format!(
            "{what}: column \"{column}\" of {} is attached with method 'minhash': give a threshold, not max_distance",
            table.qualified
        )),
        (None, _, Some(_)) if !verifies => refuse(format!(
            "{what}: column \"{column}\" of {} is attached with method 'simhash': give max_distance, not a threshold",
            table.qualified
        )),
        (_, _, Some(t)) => {
            if let Err(e) = valid_threshold(t) {
                ereport_now(e)
            }
        }
        _ => {}
    }
}

/// Where a row of a local table is, for reading its text again: its table (a partition of a
/// partitioned table) and its ctid.
#[derive(Clone, Copy, Default)]
pub struct Locator {
    pub table: pg_sys::Oid,
    pub block: u32,
    pub offset: u16,
}

impl Locator {
    /// The locator in columns `table` and `ctid` of `row`.
    pub fn read(row: &pgrx::spi::SpiHeapTupleData, table: usize, ctid: usize) -> Locator {
        let tid = row
            .get::<pg_sys::ItemPointerData>(ctid)
            .ok()
            .flatten()
            .unwrap_or_default();
        Locator {
            table: row.get::<pg_sys::Oid>(table).ok().flatten().unwrap_or_default(),
            block: (u32::from(tid.ip_blkid.bi_hi) << 16) | u32::from(tid.ip_blkid.bi_lo),
            offset: tid.ip_posid,
        }
    }
}

/// The part of the text column of `table` that verification reads, as UTF-8 bytes (any text type;
/// pgrx reads `text` as UTF-8 only): its first VERIFY_PREFIX_BYTES characters, which hold the first
/// VERIFY_PREFIX_BYTES bytes of UTF-8 that [`verified_text`] keeps. A toasted text is read only as
/// far as that (PostgreSQL decompresses a slice of a pglz value).
fn text_sql(table: &Table) -> String {
    format!(
        "pg_catalog.convert_to(pg_catalog.substr(t.{}::pg_catalog.text, 1, {}), 'UTF8')",
        pgrx::spi::quote_identifier(&table.att.text_column),
        simhash_core::verify::VERIFY_PREFIX_BYTES
    )
}

/// A candidate's text as verification reads it: its first VERIFY_PREFIX_BYTES bytes of UTF-8, no
/// character cut (as `Text::with_prefix` reads a datum), read leniently.
fn verified_text(mut bytes: Vec<u8>) -> String {
    let cap = simhash_core::verify::VERIFY_PREFIX_BYTES;
    if bytes.len() > cap {
        bytes.truncate(cap);
        bytes.truncate(crate::text::utf8_boundary(&bytes));
    }
    utf8_key(bytes)
}

/// Hands `found` the text of each of `rows` (indexes into `locators`) that is there and not NULL,
/// read by ctid, one statement per table (partition) of the batch. Read with the statement's
/// snapshot, as the rows were.
pub fn texts_by_ctid(
    client: &pgrx::spi::SpiClient<'_>,
    table: &Table,
    locators: &[Locator],
    rows: &[u32],
    found: &mut dyn FnMut(u32, &str),
) {
    let mut by_table: std::collections::BTreeMap<u32, Vec<u32>> = Default::default();
    for &r in rows {
        by_table
            .entry(locators[r as usize].table.to_u32())
            .or_default()
            .push(r);
    }
    let query = format!(
        "SELECT t.ctid, {} FROM {}{} t WHERE t.tableoid OPERATOR(pg_catalog.=) $1 \
         AND t.ctid OPERATOR(pg_catalog.=) ANY ($2::pg_catalog.text::pg_catalog.tid[])",
        text_sql(table),
        if table.partitioned { "" } else { "ONLY " },
        table.qualified
    );
    let query_sql = crate::spi::server_cstring(&query);
    for (oid, rows) in by_table {
        let mut index = std::collections::HashMap::with_capacity(rows.len());
        let mut tids = String::from("{");
        for &r in &rows {
            let l = locators[r as usize];
            index.insert((l.block, l.offset), r);
            if tids.len() > 1 {
                tids.push(',');
            }
            tids.push_str(&format!("\"({},{})\"", l.block, l.offset));
        }
        tids.push('}');
        let batch = client
            .select(&query_sql, None, &[pg_sys::Oid::from(oid).into(), tids.into()])
            .unwrap_or_else(|e| read_failed("the texts of candidates", e));
        for row in batch {
            let l = Locator::read(&row, 0, 1);
            let Some(&r) = index.get(&(l.block, l.offset)) else {
                continue;
            };
            if let Some(text) = row.get::<Vec<u8>>(2).ok().flatten() {
                found(r, &verified_text(text));
            }
        }
        // The tuple table would stay until SPI_finish: free each batch's texts.
        unsafe { pg_sys::SPI_freetuptable(pg_sys::SPI_tuptable) };
    }
}

/// Hands `found` the text of each row of `rows` (indexes into `keys`, the rows' keys as the
/// dedup renders them) that is there and not NULL, read by key: the rows of a Citus table, whose
/// ctids name rows only within their shards.
pub fn texts_by_key(
    client: &pgrx::spi::SpiClient<'_>,
    table: &Table,
    keys: &[String],
    rows: &[u32],
    found: &mut dyn FnMut(u32, &str),
) {
    let key = format!("pg_catalog.convert_to({}, 'UTF8')", table.key.value_sql("t"));
    let query = format!(
        "SELECT {key}, {} FROM {} t WHERE {key} OPERATOR(pg_catalog.=) ANY ($1)",
        text_sql(table),
        table.qualified
    );
    let index: std::collections::HashMap<&str, u32> =
        rows.iter().map(|&r| (keys[r as usize].as_str(), r)).collect();
    let wanted: Vec<Vec<u8>> = rows
        .iter()
        .map(|&r| keys[r as usize].as_bytes().to_vec())
        .collect();
    let batch = client
        .select(&crate::spi::server_cstring(&query), None, &[wanted.into()])
        .unwrap_or_else(|e| read_failed("the texts of candidates", e));
    for row in batch {
        let k = utf8_key(row.get::<Vec<u8>>(1).ok().flatten().unwrap_or_default());
        let Some(&r) = index.get(k.as_str()) else {
            continue;
        };
        if let Some(text) = row.get::<Vec<u8>>(2).ok().flatten() {
            found(r, &verified_text(text));
        }
    }
    unsafe { pg_sys::SPI_freetuptable(pg_sys::SPI_tuptable) };
}
