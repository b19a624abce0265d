//! Table helpers: attach and detach near-duplicate detection, list attachments, and look up a
//! table's near-duplicates of a text or fingerprint. The DDL is PL/pgSQL in `sql/src/*.sql`, loaded
//! below in install order; the per-row work lives in the trigger (`crate::write::trigger`).

use pgrx::prelude::*;

// The SQL and PL/pgSQL of attach, detach, the catalog views and the DDL hooks, in install order:
// each file requires the one before it, and the last is `simhash_tables`, which others require.
extension_sql_file!(
    "../../sql/src/attachment.sql",
    name = "simhash_attachment_sql",
    requires = [
        "simhash_trigger",
        simhash_internal::simhash_trigger_args,
        // The Rust names of SQL's encode_attachment and decode_attachment (pgrx resolves a path by
        // the Rust name; the functions named encode and decode in Rust are 0.5.0 to 0.10.0's, and
        // encode_attachment and decode_attachment 0.4.0's, without SQL:
        // scripts/check_sql_requires.py).
        simhash_internal::encode_verifying,
        simhash_internal::decode_verifying,
        object_names,
        row_key_sql
    ]
);
extension_sql_file!(
    "../../sql/src/fill.sql",
    name = "simhash_fill_sql",
    requires = [
        "simhash_attachment_sql",
        simhash_with_fold,
        simhash_fill_reset,
        simhash_fill_stash,
        simhash_fill_value,
        simhash_internal::execute_as_owner
    ]
);
extension_sql_file!(
    "../../sql/src/attach.sql",
    name = "simhash_attach_sql",
    requires = ["simhash_fill_sql", simhash_band, simhash_internal::reencode]
);
extension_sql_file!(
    "../../sql/src/registry.sql",
    name = "simhash_registry_sql",
    requires = ["simhash_attach_sql", hamming]
);
extension_sql_file!(
    "../../sql/src/near_duplicates_sql.sql",
    name = "simhash_near_duplicates_sql",
    requires = ["simhash_registry_sql", simhash_band, hamming, simhash_probes]
);
extension_sql_file!(
    "../../sql/src/ddl.sql",
    name = "simhash_tables",
    requires = ["simhash_near_duplicates_sql"]
);
// The warning about who may create objects in the extension's schema, given as the script ends.
extension_sql_file!(
    "../../sql/src/schema_grants.sql",
    name = "simhash_schema_grants_sql",
    requires = ["simhash_tables"]
);
// The descriptions of the public functions that have none where they are defined: last.
extension_sql_file!("../../sql/src/comments.sql", name = "simhash_comments", finalize);
