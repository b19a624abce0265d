//! Schema `simhash_internal`: what the PL/pgSQL of `sql/src/*.sql` calls and users do not (see
//! docs/ARCHITECTURE.md §6.2, §6.10). Here, the attachment's one encoder and decoder for SQL: attach writes
//! a trigger's arguments with `encode_attachment` (Rust [`simhash_internal::encode_verifying`]), every
//! SQL reader decodes them with `decode_attachment` (Rust [`simhash_internal::decode_verifying`]), and
//! both go through [`Attachment`], as the trigger, lookups and dedup do. The entry points that older
//! versions' SQL names are in `crate::api::old_symbols`.

// The schema is made by pgrx (`CREATE SCHEMA IF NOT EXISTS`, which fails in an extension script
// when a schema of that name exists and is not the extension's); sql/src/attachment.sql comments
// it and lets PUBLIC use it: its functions run as the caller of simhash_attach() and the others.
#[pgrx::pg_schema]
pub(crate) mod simhash_internal {
    use pgrx::prelude::*;

    use crate::attachment::{Attachment, GivenOptions, RowKey};
    use crate::catalog::{cstr_utf8, RegClass};
    use crate::text::{server_to_utf8_lossy, utf8_to_server, ServerBytes, ServerText, Text};

    /// The arguments stored in `pg_trigger.tgargs` (each NUL-terminated), in the server encoding.
    fn split_args(tgargs: &[u8]) -> Vec<&[u8]> {
        let mut args: Vec<&[u8]> = tgargs.split(|&b| b == 0).collect();
        if tgargs.last() == Some(&0) {
            args.pop();
        }
        args
    }

    /// Checks the rows of the tables the current ALTER TABLE attached as partitions of an attached
    /// table (`crate::write::partition_attach`): called by the ddl_command_end event trigger.
    #[pg_extern(name = "check_attached_partitions")]
    fn check_attached_partitions() {
        crate::errors::in_extern(|| unsafe { crate::write::partition_attach::check_attached() })
    }

    /// Splits `pg_trigger.tgargs` into its arguments, passed on untouched (in the server encoding, like
    /// every catalog name): what `CREATE TRIGGER` is given again when a trigger is remade.
    #[pg_extern(immutable, strict, parallel_safe, name = "trigger_args")]
    pub(crate) fn trigger_args(tgargs: &[u8]) -> Vec<ServerBytes> {
        split_args(tgargs)
            .into_iter()
            .map(|a| ServerBytes(a.to_vec()))
            .collect()
    }

    /// The trigger arguments (as `tgargs` holds them) of a new attachment with these settings (NULL:
    /// the method's default), or the error naming the first bad setting, in the order of
    /// [`Attachment::new`]. SQL's `encode_attachment`, not so named in Rust: that symbol is
    /// 0.4.0's (`crate::api::old_symbols`).
    #[allow(clippy::too_many_arguments)]
    #[pg_extern(immutable, parallel_safe, name = "encode_attachment")]
    pub(crate) fn encode_verifying(
        text_column: Option<Text>,
        method: Option<Text>,
        max_distance: Option<i32>,
        threshold: Option<f64>,
        on_duplicate: Option<Text>,
        tokenizer: Option<Text>,
        shingle: Option<i32>,
        weighting: Option<Text>,
        stopwords: Option<bool>,
        fold: Option<Text>,
        scope: Option<Text>,
        registry: Option<bool>,
        min_length: Option<i32>,
        verify: Option<bool>,
    ) -> Vec<u8> {
        // Names and option values arrive in the server encoding.
        let utf8 = |t: Option<Text>| t.map(|t| t.to_utf8().to_string());
        let given = GivenOptions {
            tokenizer: utf8(tokenizer),
            shingle,
            weighting: utf8(weighting),
            stopwords,
            fold: utf8(fold),
        };
        let Some(text_column) = text_column else {
            crate::errors::EncodedError {
                code: PgSqlErrorCode::ERRCODE_NULL_VALUE_NOT_ALLOWED,
                message: "simhash_attach: table_name and text_column must not be NULL".into(),
                detail: None,
                hint: None,
            }
            .report()
        };
        let (method, on_duplicate, scope) = (utf8(method), utf8(on_duplicate), utf8(scope));
        let att = Attachment::new(
            &text_column.to_utf8(),
            crate::attachment::Given {
                method: method.as_deref(),
                max_distance,
                threshold,
                on_duplicate: on_duplicate.as_deref(),
                options: given,
                scope_column: scope.as_deref(),
                registry: registry.unwrap_or(false),
                min_length,
                verify,
            },
        )
        .unwrap_or_else(|e| e.report());
        let mut tgargs = Vec::new();
        for arg in att.to_args() {
            tgargs.extend_from_slice(&utf8_to_server(&arg));
            tgargs.push(0);
        }
        tgargs
    }

    /// The attachment a `simhash_trigger()` trigger's arguments record, with the names of the columns
    /// derived from it; no row when they are not a simhash_trigger()'s. SQL's `decode_attachment`,
    /// not so named in Rust: that symbol is 0.4.0's (`crate::api::old_symbols`).
    // pgrx reads the output columns from the signature: the type cannot be an alias.
    #[allow(clippy::type_complexity)]
    #[pg_extern(immutable, strict, parallel_safe, name = "decode_attachment")]
    pub(crate) fn decode_verifying(
        tgargs: &[u8],
    ) -> TableIterator<
        'static,
        (
            name!(text_column, ServerText),
            name!(fingerprint_column, ServerText),
            name!(band_columns, Vec<ServerText>),
            name!(max_distance, Option<i32>),
            name!(on_duplicate, String),
            name!(flag_column, Option<ServerText>),
            name!(tokenizer, String),
            name!(shingle, i32),
            name!(weighting, Option<String>),
            name!(stopwords, bool),
            name!(fold, String),
            name!(scope_column, Option<ServerText>),
            name!(registry, bool),
            name!(min_length, i32),
            name!(method, String),
            name!(threshold, Option<f64>),
            name!(verify, bool),
        ),
    > {
        let args: Vec<String> = split_args(tgargs).into_iter().map(server_to_utf8_lossy).collect();
        let row = Attachment::from_args(&args).map(|att| {
            let o = att.option_names.clone();
            (
                ServerText(att.text_column.clone()),
                ServerText(att.fingerprint_column()),
                att.band_columns().into_iter().map(ServerText).collect(),
                att.simhash().map(|s| s.max_distance),
                att.mode.name().to_string(),
                (att.mode == crate::attachment::Mode::Flag).then(|| ServerText(att.flag_column())),
                o.tokenizer,
                o.shingle,
                att.simhash().map(|_| o.weighting),
                o.stopwords,
                o.fold,
                att.scope_column.clone().map(ServerText),
                att.registry,
                att.min_length,
                att.method_name().to_string(),
                (att.verify || att.minhash().is_some()).then(|| att.method.threshold()),
                att.verify,
            )
        });
        TableIterator::new(row)
    }

    /// The names of the objects an attachment of `text_column` of `table_name` makes besides its
    /// columns: its triggers, and for `registry => true` the registered-fingerprint column and the
    /// registry's tables and view (in the table's schema, unqualified, unquoted, maybe over 63 bytes).
    #[pg_extern(stable, strict, parallel_safe, name = "object_names")]
    fn object_names(
        table_name: RegClass,
        text_column: Text,
    ) -> TableIterator<
        'static,
        (
            name!(trigger_name, ServerText),
            name!(check_trigger_name, ServerText),
            name!(registered_column, ServerText),
            name!(registry_table, ServerText),
            name!(lock_table, ServerText),
            name!(checked_view, ServerText),
            name!(shards_table, ServerText),
        ),
    > {
        let relname = unsafe { pg_sys::get_rel_name(table_name.0) };
        let table = if relname.is_null() {
            String::new()
        } else {
            unsafe { cstr_utf8(relname) }
        };
        let att = Attachment::named(&text_column.to_utf8());
        TableIterator::once((
            ServerText(att.trigger_name()),
            ServerText(att.check_trigger_name()),
            ServerText(att.registered_column()),
            ServerText(att.registry_table(&table)),
            ServerText(att.lock_table(&table)),
            ServerText(att.checked_view(&table)),
            ServerText(att.shards_table(&table)),
        ))
    }

    /// The trigger arguments `tgargs` with verification set as `simhash_set_verify()` asks (the
    /// threshold: as it was when NULL), or the error of a setting the attachment does not take.
    #[pg_extern(immutable, parallel_safe, name = "reencode_attachment")]
    pub(crate) fn reencode_attachment(
        tgargs: &[u8],
        verify: Option<bool>,
        threshold: Option<f64>,
    ) -> Vec<u8> {
        let args: Vec<String> = split_args(tgargs).into_iter().map(server_to_utf8_lossy).collect();
        let Some(att) = Attachment::from_args(&args) else {
            crate::errors::EncodedError {
                code: PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
                message: "simhash_set_verify: not the arguments of a simhash_trigger()".into(),
                detail: None,
                hint: None,
            }
            .report()
        };
        let att = att.with_verify(verify, threshold).unwrap_or_else(|e| e.report());
        let mut out = Vec::new();
        for arg in att.to_args() {
            out.extend_from_slice(&utf8_to_server(&arg));
            out.push(0);
        }
        out
    }

    /// The SQL expression of the key of row `alias` of `table_name` as error DETAILs, one-column
    /// flag columns and the registry show it: the values of its primary key columns separated by
    /// ", " ([`RowKey::message_sql`], the one rendering the trigger uses too).
    #[pg_extern(stable, strict, parallel_safe, name = "row_key_sql")]
    fn row_key_sql(table_name: RegClass, alias: Text) -> ServerText {
        let key = unsafe { crate::spi::connected(|| RowKey::of(table_name.0, false)) };
        ServerText(key.message_sql(&alias.to_utf8()))
    }

    /// The pairs within `max_distance` of one bucket of `simhash_pairs` on a Citus table
    /// (`crate::dedup`, docs/ARCHITECTURE.md §9.4): `fingerprints` share the value of part `part`;
    /// returns the pairs whose first shared part is `part`, as 1-based positions `a < b` in the array.
    #[pg_extern(immutable, strict, parallel_safe, name = "bucket_pairs")]
    fn bucket_pairs(
        part: i32,
        fingerprints: Vec<Option<i64>>,
        max_distance: i32,
    ) -> TableIterator<'static, (name!(a, i32), name!(b, i32), name!(distance, i32))> {
        let k = crate::attachment::check_max_distance(max_distance);
        if fingerprints.iter().any(Option::is_none) || part < 0 || part as u32 > k {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
                "simhash_internal.bucket_pairs: a bucket holds fingerprints (no NULL) and part is one of the k + 1 parts"
            );
        }
        let fps: Vec<u64> = fingerprints.iter().map(|fp| fp.unwrap_or(0) as u64).collect();
        TableIterator::new(
            simhash_core::pairs::bucket_pairs(&fps, part as u32, k, 4)
                .into_iter()
                .map(|(a, b, d)| (a as i32 + 1, b as i32 + 1, d as i32)),
        )
    }

    /// The registry check of a Citus table in one of its shards, on the node that holds it:
    /// the distance of the shard's row nearest to `fingerprint` within `max_distance`,
    /// `max_distance` + 1 when none is that near, NULL when shard `shard` of `table_name` is not
    /// here or is left to the coordinator's query (row-level security, a MinHash attachment).
    /// The coordinator calls it once per shard, through the table `<table>_<column>_shards` that
    /// is colocated with `table_name` and holds one row per shard (docs/ARCHITECTURE.md §7.5).
    #[pg_extern(stable, strict, name = "probe_shard")]
    fn probe_shard(
        shard: i64,
        table_name: RegClass,
        text_column: Text,
        fingerprint: i64,
        max_distance: i32,
    ) -> Option<i32> {
        let k = crate::attachment::check_max_distance(max_distance) as i32;
        unsafe {
            let relid = crate::citus::local_shard(table_name.0, shard)?;
            match crate::method::simhash::lookup::probe_shard(
                relid,
                &text_column.to_utf8(),
                fingerprint as u64,
                k,
            ) {
                crate::method::simhash::lookup::ShardProbe::Searched(nearest) => {
                    Some(nearest.map_or(k + 1, |d| d as i32))
                }
                crate::method::simhash::lookup::ShardProbe::Declined => None,
            }
        }
    }

    /// Runs `statement` (an UPDATE that fills a table's fingerprints) as the owner of `table_name`, in a
    /// security-restricted operation with the search path `pg_catalog, pg_temp`, as PostgreSQL builds
    /// an index: a trigger or function of the owner's that it fires runs as the owner, never as the
    /// caller. Only for a caller that has the owner's privileges already (a superuser, the owner, a
    /// member of the owning role): it never lends rights, it only drops them.
    #[pg_extern(volatile, strict, parallel_unsafe, name = "execute_as_owner")]
    fn execute_as_owner(table_name: RegClass, statement: Text) {
        crate::errors::in_extern(|| unsafe {
            if !crate::privileges::acts_for_owner(table_name.0) {
                pg_sys::aclcheck_error(
                    pg_sys::AclResult::ACLCHECK_NOT_OWNER,
                    pg_sys::ObjectType::OBJECT_TABLE,
                    pg_sys::get_rel_name(table_name.0),
                );
            }
            let sql = statement.to_utf8().to_string();
            crate::privileges::as_owner(table_name.0, false, || {
                crate::privileges::with_safe_search_path(|| {
                    crate::spi::connected(|| crate::spi::run(&sql, "a fill of fingerprints"))
                })
            });
        })
    }

    /// Takes, on this node, the advisory locks of the k + 1 parts of `fingerprint` on `table_name`
    /// (`crate::check::locks::lock_for_transaction`: ascending, held to the end of the
    /// transaction): two writers of fingerprints within `max_distance` always share one. The
    /// registry's check on a Citus coordinator takes them before it searches the shards
    /// (docs/ARCHITECTURE.md §8.7).
    #[pg_extern(volatile, strict, parallel_unsafe, name = "lock_near_duplicates")]
    fn lock_near_duplicates(table_name: RegClass, fingerprint: i64, max_distance: i32) {
        // Only a role that may insert rows into the table takes them (the registry's writes are
        // INSERTs): these locks make checked writes wait. UPDATE alone, or INSERT with row-level
        // security that lets the caller insert no row, is refused (docs/ARCHITECTURE.md §13.4).
        unsafe { crate::privileges::require_insert(table_name.0) };
        let k = crate::attachment::check_max_distance(max_distance);
        crate::check::locks::lock_for_transaction(
            table_name.0,
            &crate::check::locks::part_keys(fingerprint as u64, k),
        );
    }
}
