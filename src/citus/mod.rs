//! Citus (issue 12): which tables are distributed, and which relation a trigger fires on is a shard
//! of. The extension does not link to Citus: it reads Citus's catalog with SQL, and only where the
//! `citus` extension exists. A distributed table's lookups run as SQL that Citus sends to every
//! shard; its trigger runs on each shard and sees that shard's rows only, so near-duplicates can be
//! rejected there only among rows of one value of the distribution column (the attachment's scope).

pub mod dedup;

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
    let found = crate::spi::connected(|| crate::spi::one_utf8(sql, &[crate::spi::Arg::Oid(relid)]))?;
    // Separated by pg_catalog.chr(1), which no sensible name holds.
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
    static DISTRIBUTIONS: crate::catalog::CatalogCache<pg_sys::Oid, Option<Distribution>> =
        crate::catalog::CatalogCache::default();
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
        "SELECT pg_catalog.convert_to(p.partmethod::pg_catalog.text OPERATOR(pg_catalog.||) pg_catalog.chr(1) OPERATOR(pg_catalog.||) coalesce(\
           pg_catalog.column_to_column_name(p.logicalrelid, p.partkey), '') OPERATOR(pg_catalog.||) pg_catalog.chr(1) OPERATOR(pg_catalog.||) p.logicalrelid::pg_catalog.text, 'UTF8') \
         FROM pg_catalog.pg_dist_partition p WHERE p.logicalrelid OPERATOR(pg_catalog.=) $1",
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
    let name = crate::catalog::cstr_utf8(name);
    let shard_id = shard_id_of(&name)?;
    // relation_is_a_known_shard() checks the name against the shard's table and schema.
    read_distribution(
        &format!(
            "SELECT pg_catalog.convert_to(p.partmethod::pg_catalog.text OPERATOR(pg_catalog.||) pg_catalog.chr(1) OPERATOR(pg_catalog.||) coalesce(\
               pg_catalog.column_to_column_name(p.logicalrelid, p.partkey), '') OPERATOR(pg_catalog.||) pg_catalog.chr(1) OPERATOR(pg_catalog.||) p.logicalrelid::pg_catalog.text, 'UTF8') \
             FROM pg_catalog.pg_dist_shard s JOIN pg_catalog.pg_dist_partition p ON p.logicalrelid OPERATOR(pg_catalog.=) s.logicalrelid \
             WHERE s.shardid OPERATOR(pg_catalog.=) {shard_id} AND pg_catalog.relation_is_a_known_shard($1)"
        ),
        relid,
    )
}

thread_local! {
    static LOCAL_SHARDS: crate::catalog::CatalogCache<(pg_sys::Oid, i64), pg_sys::Oid> =
        crate::catalog::CatalogCache::default();
}

/// The relation on this node of shard `shard_id` of the distributed table `relid`: Citus names it
/// after the table and the shard id, in the table's schema. None when that shard is not the table's
/// or its active placement is on another node (a placement a move left behind until Citus drops
/// it holds rows of the past). Found relations are kept until a relcache invalidation, which Citus
/// sends when a table's placements change.
///
/// # Safety
/// Runs SPI: call where a query may run.
pub unsafe fn local_shard(relid: pg_sys::Oid, shard_id: i64) -> Option<pg_sys::Oid> {
    if !citus_installed() {
        return None;
    }
    LOCAL_SHARDS.with(|cache| cache.get_or_find((relid, shard_id), || read_local_shard(relid, shard_id)))
}

unsafe fn read_local_shard(relid: pg_sys::Oid, shard_id: i64) -> Option<pg_sys::Oid> {
    // shard_name() qualifies the name except in schema public.
    let sql = format!(
        "SELECT pg_catalog.convert_to(pg_catalog.to_regclass(\
           CASE WHEN n.nspname OPERATOR(pg_catalog.=) 'public' THEN 'public.' ELSE '' END OPERATOR(pg_catalog.||) pg_catalog.shard_name(c.oid, {shard_id}))::pg_catalog.oid::pg_catalog.text, 'UTF8') \
         FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace \
         WHERE c.oid OPERATOR(pg_catalog.=) $1 \
           AND EXISTS (SELECT FROM pg_catalog.pg_dist_shard s JOIN pg_catalog.pg_dist_placement p ON p.shardid OPERATOR(pg_catalog.=) s.shardid \
                       WHERE s.shardid OPERATOR(pg_catalog.=) {shard_id} AND s.logicalrelid OPERATOR(pg_catalog.=) c.oid \
                         AND p.groupid OPERATOR(pg_catalog.=) (SELECT g.groupid FROM pg_catalog.pg_dist_local_group g))"
    );
    crate::spi::connected(|| crate::spi::one_utf8(&sql, &[crate::spi::Arg::Oid(relid)]))
        .and_then(|oid| oid.parse::<u32>().ok())
        .map(pg_sys::Oid::from)
}
