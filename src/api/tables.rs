//! Table helpers: attach and detach near-duplicate detection, list attachments, and look up a
//! table's near-duplicates of a text or fingerprint. The DDL is PL/pgSQL in `sql/src/*.sql`, loaded
//! below in install order; the per-row work lives in the trigger (`crate::write::trigger`).

use pgrx::prelude::*;

// The SQL and PL/pgSQL of attach, detach, the catalog views and the DDL hooks, in install order:
// each file requires the one before it, and the last is `ddl_command_start`, which others require.
// Each is named as its file.
extension_sql_file!(
    "../../sql/src/attachment.sql",
    name = "attachment",
    requires = [
        "trigger",
        simhash_internal::trigger_args,
        // The Rust names of SQL's encode_attachment and decode_attachment (pgrx resolves a path by
        // the Rust name; the functions named encode_attachment and decode_attachment in Rust are
        // 0.4.0's entry points, without SQL, in crate::api::old_symbols:
        // scripts/check_sql_requires.py).
        simhash_internal::encode_verifying,
        simhash_internal::decode_verifying,
        object_names,
        row_key_sql
    ]
);
extension_sql_file!(
    "../../sql/src/fill.sql",
    name = "fill",
    requires = [
        "attachment",
        simhash_with_fold,
        fill_reset,
        fill_stash,
        fill_value,
        simhash_internal::execute_as_owner
    ]
);
extension_sql_file!(
    "../../sql/src/attach.sql",
    name = "attach",
    requires = ["fill", simhash_band, simhash_internal::reencode_attachment]
);
extension_sql_file!(
    "../../sql/src/registry.sql",
    name = "registry",
    requires = ["attach", hamming, simhash_internal::check_attached_partitions]
);
// simhash_near_duplicates_sql(): the lookup as one SQL query, for EXPLAIN.
extension_sql_file!(
    "../../sql/src/near_duplicates_query.sql",
    name = "near_duplicates_query",
    requires = ["registry", simhash_band, hamming, simhash_probes]
);
// simhash_ddl_command_start(), its event trigger and what it calls: ATTACH PARTITION, RENAME COLUMN.
extension_sql_file!(
    "../../sql/src/ddl_command_start.sql",
    name = "ddl_command_start",
    requires = ["near_duplicates_query"]
);
// The warning about who may create objects in the extension's schema, given as the script ends:
// after every other file but the comments.
extension_sql_file!(
    "../../sql/src/schema_grants.sql",
    name = "schema_grants",
    requires = ["ddl_command_start", "near_duplicates", "online"]
);
// The descriptions of the public functions that have none where they are defined: last.
extension_sql_file!("../../sql/src/comments.sql", name = "comments", finalize);
