//! How the rows of a table are named: [`RowKey`].

use pgrx::prelude::*;

use super::names::split_quoted;

/// How the rows of a table are named in messages, the flag column and dedup results: by the
/// primary key, or without one by the ctid (and the partition, where the rows are in partitions).
pub enum RowKey {
    /// The primary key columns, quoted, in key order.
    Columns(Vec<String>),
    Ctid {
        partitioned: bool,
    },
}

impl RowKey {
    /// The key of the rows of `relid`: its primary key's columns, read from the catalog as
    /// `simhash_internal.primary_key` reads them (the trigger calls no SQL helper: it must work with
    /// an older version's SQL until `ALTER EXTENSION ... UPDATE`).
    ///
    /// # Safety
    /// SPI must be connected.
    pub unsafe fn of(relid: pg_sys::Oid, partitioned: bool) -> RowKey {
        let columns = crate::spi::one_utf8(
            "SELECT pg_catalog.convert_to(pg_catalog.string_agg(pg_catalog.quote_ident(a.attname), ', ' ORDER BY k.ord), 'UTF8') \
             FROM pg_catalog.pg_index i \
             CROSS JOIN LATERAL pg_catalog.unnest(i.indkey::pg_catalog.int2[]) WITH ORDINALITY AS k(attnum, ord) \
             JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) i.indrelid \
                                            AND a.attnum OPERATOR(pg_catalog.=) k.attnum \
             WHERE i.indrelid OPERATOR(pg_catalog.=) $1 AND i.indisprimary",
            &[crate::spi::Arg::Oid(relid)],
        );
        match columns {
            // Quoted names hold no ", " unless quoted names do: split on the quoting.
            Some(columns) => RowKey::Columns(split_quoted(&columns)),
            None => RowKey::Ctid { partitioned },
        }
    }

    /// The key columns as `Key (...)=(...)` names them.
    pub fn names(&self) -> String {
        match self {
            RowKey::Columns(columns) => columns.join(", "),
            RowKey::Ctid { partitioned: true } => "tableoid, ctid".into(),
            RowKey::Ctid { partitioned: false } => "ctid".into(),
        }
    }

    /// The columns of row `alias` in key order, for ORDER BY.
    pub fn order_by(&self, alias: &str) -> String {
        match self {
            RowKey::Columns(columns) => columns
                .iter()
                .map(|c| format!("{alias}.{c}"))
                .collect::<Vec<_>>()
                .join(", "),
            RowKey::Ctid { partitioned: true } => format!("{alias}.tableoid, {alias}.ctid"),
            RowKey::Ctid { partitioned: false } => format!("{alias}.ctid"),
        }
    }

    /// The key of row `alias` as the DETAIL of a near-duplicate error shows it: the values
    /// separated by ", " (as PostgreSQL's unique violations do). Each value is written by its type's
    /// output function (`concat_ws` of the values themselves), never by a cast to `text`: the owner
    /// of a table can create a cast from a type of its own to `text`, and dedup renders keys as its
    /// caller (docs/ARCHITECTURE.md §13.3).
    pub fn message_sql(&self, alias: &str) -> String {
        match self {
            RowKey::Columns(columns) => {
                let values: Vec<String> = columns.iter().map(|c| format!("{alias}.{c}")).collect();
                format!("pg_catalog.concat_ws(', ', {})", values.join(", "))
            }
            RowKey::Ctid { partitioned: true } => format!(
                "pg_catalog.concat_ws(', ', {alias}.tableoid::pg_catalog.regclass::pg_catalog.text, {alias}.ctid::pg_catalog.text)"
            ),
            RowKey::Ctid { partitioned: false } => format!("{alias}.ctid::pg_catalog.text"),
        }
    }

    /// The key of row `alias` as dedup results show it: one column's text, or a row's (`(1,2)`),
    /// by output functions as [`RowKey::message_sql`] (a row's text is `record_out`'s).
    pub fn value_sql(&self, alias: &str) -> String {
        match self {
            RowKey::Columns(columns) if columns.len() == 1 => {
                format!("pg_catalog.format('%s', {alias}.{})", columns[0])
            }
            RowKey::Columns(_) => format!("ROW({})::pg_catalog.text", self.order_by(alias)),
            RowKey::Ctid { partitioned: true } => {
                format!("ROW({alias}.tableoid::pg_catalog.regclass, {alias}.ctid)::pg_catalog.text")
            }
            RowKey::Ctid { partitioned: false } => format!("{alias}.ctid::pg_catalog.text"),
        }
    }
}
