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
            let table = Table {
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
    pub threshold: Option<f64>,
    pub text_column: Option<&'a str>,
}

/// A key read as UTF-8 bytes (`convert_to(..., 'UTF8')`: pgrx reads `text` as UTF-8 only).
pub fn utf8_key(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into())
}

/// Runs `query` through a cursor, handing `on_batch` each batch of up to 10,000 rows: a table's
/// keys and values are read in bounded pieces (`what` names what is read, for a failed fetch).
pub fn for_each_batch(
    client: &pgrx::spi::SpiClient<'_>,
    query: &str,
    what: &str,
    mut on_batch: impl FnMut(pgrx::spi::SpiTupleTable<'_>),
) {
    let mut cursor = client.open_cursor(query, &[]);
    loop {
        let batch = cursor
            .fetch(10_000)
            .unwrap_or_else(|e| panic!("reading {what} failed: {e:?}"));
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
/// (22023), and a threshold outside 0–1.
pub fn check_method_options(what: &str, table: &Table, max_distance: Option<i32>, threshold: Option<f64>) {
    use crate::attachment::{ereport_now, invalid_value, valid_threshold};
    let column = &table.att.text_column;
    // Raised inside `Spi::connect`, where pgrx re-raises a PostgreSQL error as it is.
    let refuse = |message: String| -> ! { ereport_now(invalid_value(message)) };
    match (table.att.minhash(), max_distance, threshold) {
        (Some(_), Some(_), _) => refuse(format!(
            "{what}: column \"{column}\" of {} is attached with method 'minhash': give a threshold, not max_distance",
            table.qualified
        )),
        (None, _, Some(_)) => refuse(format!(
            "{what}: column \"{column}\" of {} is attached with method 'simhash': give max_distance, not a threshold",
            table.qualified
        )),
        (Some(_), None, Some(t)) => {
            if let Err(e) = valid_threshold(t) {
                ereport_now(e)
            }
        }
        _ => {}
    }
}
