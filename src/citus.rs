//! Citus (issue 12): which tables are distributed, and which relation a trigger fires on is a shard
//! of. The extension does not link to Citus: it reads Citus's catalog with SQL, and only where the
//! `citus` extension exists. A distributed table's lookups run as SQL that Citus sends to every
//! shard; its trigger runs on each shard and sees that shard's rows only, so near-duplicates can be
//! rejected there only among rows of one value of the distribution column (the attachment's scope).

use std::ffi::CString;

use pgrx::prelude::*;

/// How Citus places the rows of a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Distribution {
    /// `pg_dist_partition.partmethod`: `h` hash-distributed, `n` reference or Citus local table.
    pub method: u8,
    /// The distribution column, for a distributed table.
    pub column: Option<String>,
    /// The distributed table's name (a shard's own name ends with its shard id).
    pub table: String,
}

impl Distribution {
    pub fn hash_distributed(&self) -> bool {
        self.method == b'h'
    }
}

/// Whether the `citus` extension exists in this database (a catalog lookup, no query).
pub fn citus_installed() -> bool {
    unsafe { pg_sys::get_extension_oid(c"citus".as_ptr(), true) != pg_sys::InvalidOid }
}

/// `method`, `column` and `table` read by `sql` (one OID parameter) as a [`Distribution`].
unsafe fn read_distribution(sql: &str, relid: pg_sys::Oid) -> Option<Distribution> {
    pg_sys::SPI_connect();
    let found = crate::trigger::query_utf8(sql, relid);
    pg_sys::SPI_finish();
    let found = found?;
    // Separated by chr(1), which no sensible name holds.
    let mut parts = found.splitn(3, '\u{1}');
    let (method, column, table) = (
        parts.next().unwrap_or(""),
        parts.next().unwrap_or(""),
        parts.next().unwrap_or(""),
    );
    Some(Distribution {
        method: method.bytes().next().unwrap_or(b'?'),
        column: (!column.is_empty()).then(|| column.to_string()),
        table: table.to_string(),
    })
}

thread_local! {
    static DISTRIBUTIONS: crate::leafmap::CatalogCache<pg_sys::Oid, Option<Distribution>> =
        crate::leafmap::CatalogCache::default();
}

/// The distribution of a table that Citus manages (on the coordinator, or its copy of the metadata
/// on a worker); None for any other table, or without Citus. Kept until a relcache invalidation:
/// Citus sends one for a table whose distribution changes.
///
/// # Safety
/// Runs SPI: call where a query may run.
pub unsafe fn distribution(relid: pg_sys::Oid) -> Option<Distribution> {
    DISTRIBUTIONS.with(|cache| cache.get_or_compute(relid, || unsafe { read_table_distribution(relid) }))
}

unsafe fn read_table_distribution(relid: pg_sys::Oid) -> Option<Distribution> {
    if !citus_installed() {
        return None;
    }
    read_distribution(
        "SELECT pg_catalog.convert_to(p.partmethod::text || chr(1) || coalesce(\
           pg_catalog.column_to_column_name(p.logicalrelid, p.partkey), '') || chr(1) || p.logicalrelid::text, 'UTF8') \
         FROM pg_catalog.pg_dist_partition p WHERE p.logicalrelid = $1",
        relid,
    )
}

/// The shard id a relation name ends with (`articles_102008`), as Citus names shards.
fn shard_id_of(name: &str) -> Option<u64> {
    let (_, digits) = name.rsplit_once('_')?;
    (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

/// The distribution of the distributed table whose shard `relid` is; None when `relid` is not a
/// shard Citus knows on this node (or there is no Citus). The trigger of a distributed table fires
/// on its shards, on the workers.
///
/// # Safety
/// Runs SPI: call where a query may run.
pub unsafe fn shard_distribution(relid: pg_sys::Oid) -> Option<Distribution> {
    if !citus_installed() {
        return None;
    }
    let name = pg_sys::get_rel_name(relid);
    if name.is_null() {
        return None;
    }
    let name = crate::text::server_to_utf8_lossy(std::ffi::CStr::from_ptr(name).to_bytes());
    let shard_id = shard_id_of(&name)?;
    // relation_is_a_known_shard() checks the name against the shard's table and schema.
    read_distribution(
        &format!(
            "SELECT pg_catalog.convert_to(p.partmethod::text || chr(1) || coalesce(\
               pg_catalog.column_to_column_name(p.logicalrelid, p.partkey), '') || chr(1) || p.logicalrelid::text, 'UTF8') \
             FROM pg_catalog.pg_dist_shard s JOIN pg_catalog.pg_dist_partition p ON p.logicalrelid = s.logicalrelid \
             WHERE s.shardid = {shard_id} AND pg_catalog.relation_is_a_known_shard($1)"
        ),
        relid,
    )
}

/// Runs `sql` with SPI and returns its rows through `on_row` (called with SPI connected).
///
/// # Safety
/// `on_row` must copy what it keeps out of SPI's memory.
pub unsafe fn for_each_row(sql: &str, on_row: &mut dyn FnMut(pg_sys::HeapTuple, pg_sys::TupleDesc)) {
    let csql = CString::new(crate::text::utf8_to_server(sql).into_owned()).unwrap_or_default();
    pg_sys::SPI_connect();
    let status = pg_sys::SPI_execute(csql.as_ptr(), true, 0);
    if status != pg_sys::SPI_OK_SELECT as i32 {
        crate::errors::raise(crate::errors::EncodedError {
            code: PgSqlErrorCode::ERRCODE_INTERNAL_ERROR,
            message: format!("simhash_ext: the distributed lookup failed (SPI status {status})"),
            detail: None,
            hint: None,
        });
    }
    let table = &*pg_sys::SPI_tuptable;
    for i in 0..pg_sys::SPI_processed as usize {
        on_row(*table.vals.add(i), table.tupdesc);
    }
    pg_sys::SPI_finish();
}

/// `simhash_registry_buckets(fingerprint, max_distance)`: the registry buckets of a fingerprint
/// (`simhash_core::probe::registry_buckets`), by which the registry of a distributed table that
/// rejects near-duplicates across all its shards is distributed and locked.
#[pg_extern(immutable, strict, parallel_safe)]
fn simhash_registry_buckets(
    fingerprint: i64,
    max_distance: i32,
) -> TableIterator<'static, (name!(lock_key, i32), name!(part_value, i64))> {
    if !(0..=16).contains(&max_distance) {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            format!(
                "invalid value for option \"max_distance\": {max_distance}; allowed: an integer from 0 to 16"
            )
        );
    }
    TableIterator::new(
        simhash_core::probe::registry_buckets(fingerprint as u64, max_distance as u32)
            .into_iter()
            .map(|(key, value)| (key as i32, value as i64)),
    )
}
