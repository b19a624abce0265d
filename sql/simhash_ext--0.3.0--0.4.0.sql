-- simhash_ext 0.3.0 -> 0.4.0. Nothing stored changes: fingerprints, band columns, indexes and the
-- arguments of existing triggers stay as they are. The internal helpers move from the extension's
-- schema to schema simhash_internal (renamed without their simhash_ prefix), the PL/pgSQL reads and
-- writes trigger arguments through one decoder and encoder in Rust, and detach removes what is
-- left of an attachment whose derived columns were dropped by hand.
\echo Use "ALTER EXTENSION simhash_ext UPDATE TO '0.4.0'" to load this file. \quit

CREATE SCHEMA simhash_internal;

-- Attachments record min_length (0 for the ones made before: every text is checked).
ALTER TYPE simhash_attachment ADD ATTRIBUTE min_length int;
-- simhash_attach() takes min_length: a new signature.
DROP FUNCTION simhash_attach(regclass, name, int, text, text, int, text, boolean, text, name, boolean);

-- Replaced by the functions of simhash_internal below; nothing depends on them (function bodies
-- name them, and those are replaced too).
DROP FUNCTION simhash_find_attachment(regclass, name);
DROP FUNCTION simhash_trigger_attachment(pg_trigger);
DROP FUNCTION simhash_trigger_args(bytea);
DROP FUNCTION simhash_primary_key(regclass);
DROP FUNCTION simhash_distribution(regclass);
DROP FUNCTION simhash_fill(regclass, name, name, text, int, text, boolean, text);
DROP FUNCTION simhash_fill_collect(regclass, name, text, int, text, boolean, text);
DROP FUNCTION simhash_fill_reset();
DROP FUNCTION simhash_fill_stash(oid, tid, bigint);
DROP FUNCTION simhash_fill_value(oid, tid, text, text, int, text, boolean, text);
DROP FUNCTION simhash_prepare_partition(regclass, regclass);
DROP FUNCTION simhash_rename_column(regclass, name, name);
-- The INSTEAD OF trigger of every registry view calls this one: moved, not dropped.
ALTER FUNCTION simhash_registry_insert() SET SCHEMA simhash_internal;
ALTER FUNCTION simhash_internal.simhash_registry_insert() RENAME TO registry_insert;

-- The functions in Rust.
-- simhash_ext::internal::simhash_internal::decode_attachment
CREATE  FUNCTION simhash_internal."decode_attachment"(
	"tgargs" bytea /* & [u8] */
) RETURNS TABLE (
	"text_column" TEXT,  /* ServerText */
	"fingerprint_column" TEXT,  /* ServerText */
	"band_columns" TEXT[],  /* Vec < ServerText > */
	"max_distance" INT,  /* i32 */
	"on_duplicate" TEXT,  /* String */
	"flag_column" TEXT,  /* Option < ServerText > */
	"tokenizer" TEXT,  /* String */
	"shingle" INT,  /* i32 */
	"weighting" TEXT,  /* String */
	"stopwords" bool,  /* bool */
	"fold" TEXT,  /* String */
	"scope_column" TEXT,  /* Option < ServerText > */
	"registry" bool,  /* bool */
	"min_length" INT  /* i32 */
)
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'decode_attachment_wrapper';

-- simhash_ext::internal::simhash_internal::encode_attachment
CREATE  FUNCTION simhash_internal."encode_attachment"(
	"text_column" text, /* Option < Text > */
	"max_distance" INT, /* Option < i32 > */
	"on_duplicate" text, /* Option < Text > */
	"tokenizer" text, /* Option < Text > */
	"shingle" INT, /* Option < i32 > */
	"weighting" text, /* Option < Text > */
	"stopwords" bool, /* Option < bool > */
	"fold" text, /* Option < Text > */
	"scope" text, /* Option < Text > */
	"registry" bool, /* Option < bool > */
	"min_length" INT /* Option < i32 > */
) RETURNS bytea /* Vec < u8 > */
IMMUTABLE PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'encode_attachment_wrapper';

-- simhash_ext::fill::fill_reset
CREATE  FUNCTION simhash_internal."fill_reset"() RETURNS void
STRICT PARALLEL UNSAFE  
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'simhash_fill_reset_wrapper';

-- simhash_ext::fill::fill_stash
CREATE  FUNCTION simhash_internal."fill_stash"(
	"tableoid" oid, /* pg_sys :: Oid */
	"row" tid, /* pg_sys :: ItemPointerData */
	"fingerprint" bigint /* Option < i64 > */
) RETURNS bool /* bool */
PARALLEL RESTRICTED  
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'simhash_fill_stash_wrapper';

-- simhash_ext::fill::fill_value
CREATE  FUNCTION simhash_internal."fill_value"(
	"tableoid" oid, /* pg_sys :: Oid */
	"row" tid, /* pg_sys :: ItemPointerData */
	"doc" text, /* Option < Text > */
	"tokenizer" text, /* Text */
	"shingle" INT, /* i32 */
	"weighting" text, /* Text */
	"stopwords" bool, /* bool */
	"fold" text /* Text */
) RETURNS bigint /* Option < i64 > */
PARALLEL UNSAFE  
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'simhash_fill_value_wrapper';

-- simhash_ext::internal::simhash_internal::object_names
CREATE  FUNCTION simhash_internal."object_names"(
	"table_name" regclass, /* RegClass */
	"text_column" text /* Text */
) RETURNS TABLE (
	"trigger_name" TEXT,  /* ServerText */
	"check_trigger_name" TEXT,  /* ServerText */
	"registered_column" TEXT,  /* ServerText */
	"registry_table" TEXT,  /* ServerText */
	"lock_table" TEXT,  /* ServerText */
	"checked_view" TEXT  /* ServerText */
)
STRICT STABLE PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'object_names_wrapper';

-- simhash_ext::internal::simhash_internal::row_key_sql
CREATE  FUNCTION simhash_internal."row_key_sql"(
	"table_name" regclass, /* RegClass */
	"alias" text /* Text */
) RETURNS TEXT /* ServerText */
STRICT STABLE PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'row_key_sql_wrapper';

-- simhash_ext::internal::simhash_internal::trigger_args
CREATE  FUNCTION simhash_internal."trigger_args"(
	"tgargs" bytea /* & [u8] */
) RETURNS TEXT[] /* Vec < ServerBytes > */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'simhash_trigger_args_wrapper';

-- MinHash signatures (new in 0.4.0).
-- simhash_ext::minhash::minhash
CREATE  FUNCTION "minhash"(
	"doc" text, /* Text */
	"tokenizer" text DEFAULT 'word', /* Text */
	"shingle" INT DEFAULT 0, /* i32 */
	"stopwords" bool DEFAULT false, /* bool */
	"fold" text DEFAULT 'auto', /* Text */
	"k" INT DEFAULT 128 /* i32 */
) RETURNS bytea /* :: std :: option :: Option < Vec < u8 > > */
IMMUTABLE STRICT PARALLEL SAFE COST 100
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'minhash_wrapper';

-- simhash_ext::minhash::minhash_bands
CREATE  FUNCTION "minhash_bands"(
	"signature" bytea, /* & [u8] */
	"bands" INT DEFAULT 32, /* i32 */
	"rows" INT DEFAULT 4 /* i32 */
) RETURNS bigint[] /* Vec < i64 > */
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'minhash_bands_wrapper';

-- simhash_ext::minhash::minhash_similarity
CREATE  FUNCTION "minhash_similarity"(
	"a" bytea, /* & [u8] */
	"b" bytea /* & [u8] */
) RETURNS double precision /* f64 */
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'minhash_similarity_wrapper';

-- sql/src/attachment.sql of 0.4.0 (the type simhash_attachment is unchanged).
-- The attachment as SQL sees it: its row type, its decoding from a simhash_trigger() trigger's
-- arguments (src/attachment.rs, through simhash_internal.decode_attachment), and the catalog reads
-- the other functions share.
COMMENT ON SCHEMA simhash_internal IS
  'simhash_ext: internal helpers of simhash_attach(), simhash_detach() and the triggers; not an API';
GRANT USAGE ON SCHEMA simhash_internal TO PUBLIC;
COMMENT ON FUNCTION simhash_internal.trigger_args(bytea) IS 'The arguments of a trigger (pg_trigger.tgargs), as text';
COMMENT ON FUNCTION simhash_internal.encode_attachment(text, int, text, text, int, text, boolean, text, text, boolean, int) IS
  'The trigger arguments (as pg_trigger.tgargs holds them) that record a new attachment; checks its settings';
COMMENT ON FUNCTION simhash_internal.decode_attachment(bytea) IS
  'The attachment that trigger arguments record, with its derived column names; no row when they are not a simhash_trigger()''s';
COMMENT ON FUNCTION simhash_internal.object_names(regclass, text) IS
  'The triggers, registered column and registry objects an attachment of a column makes (unqualified)';
COMMENT ON FUNCTION simhash_internal.row_key_sql(regclass, text) IS
  'The SQL expression of a row''s key as errors, flag columns and the registry show it (the values of its primary key)';

CREATE FUNCTION simhash_internal.primary_key(table_name regclass)
RETURNS TABLE (attname name, atttype text, ord int)
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT a.attname, format_type(a.atttypid, a.atttypmod), k.ord::int
  FROM pg_index i
  CROSS JOIN LATERAL unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord)
  JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
  WHERE i.indrelid = table_name AND i.indisprimary
  ORDER BY k.ord
$$;
COMMENT ON FUNCTION simhash_internal.primary_key(regclass) IS 'The primary key columns of a table, in key order';

CREATE FUNCTION simhash_internal.attachment(table_name regclass, trigger_name name, tgargs bytea)
RETURNS SETOF @extschema@.simhash_attachment
LANGUAGE sql STABLE STRICT PARALLEL SAFE ROWS 1
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT table_name, d.text_column::name, d.fingerprint_column::name, d.band_columns::name[], d.max_distance,
         d.on_duplicate, d.flag_column::name, d.tokenizer, d.shingle, d.weighting, d.stopwords, trigger_name, d.fold,
         d.scope_column::name, d.registry, d.min_length
  FROM simhash_internal.decode_attachment(tgargs) d
$$;
COMMENT ON FUNCTION simhash_internal.attachment(regclass, name, bytea) IS
  'The attachment that a trigger of a table records (none when its arguments are not a simhash_trigger()''s)';

CREATE OR REPLACE FUNCTION simhash_attachments()
RETURNS SETOF simhash_attachment
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT s.* FROM pg_trigger t CROSS JOIN LATERAL simhash_internal.attachment(t.tgrelid, t.tgname, t.tgargs) s
  WHERE t.tgfoid = '@extschema@.simhash_trigger()'::regprocedure
    -- The partitions of an attached partitioned table carry clones of its trigger: not attachments of their own.
    AND t.tgparentid = 0
$$;
COMMENT ON FUNCTION simhash_attachments() IS 'Every text column attached with simhash_attach(), with its settings';

CREATE FUNCTION simhash_internal.distribution(table_name regclass, OUT method "char", OUT distribution_column name)
LANGUAGE plpgsql STABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  -- Citus's catalog exists only where Citus is installed, and the extension does not depend on
  -- Citus: read it through EXECUTE, and only then.
  IF EXISTS (SELECT FROM pg_extension e WHERE e.extname = 'citus') THEN
    EXECUTE 'SELECT p.partmethod, CASE WHEN p.partkey IS NOT NULL '
            '  THEN pg_catalog.column_to_column_name(p.logicalrelid, p.partkey)::name END '
            'FROM pg_catalog.pg_dist_partition p WHERE p.logicalrelid = $1'
      INTO method, distribution_column USING table_name;
  END IF;
END
$$;
COMMENT ON FUNCTION simhash_internal.distribution(regclass) IS
  'The Citus distribution method (''h'': hash-distributed) and column of a table; NULL for a table Citus does not manage';

-- sql/src/fill.sql of 0.4.0.
-- Fingerprinting the rows already in a table when it is attached or becomes a partition (src/fill.rs).
CREATE FUNCTION simhash_internal.fill(table_name regclass, text_column name, fingerprint_column name, tokenizer text,
                             shingle int, weighting text, stopwords boolean, fold text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
-- Let the fingerprinting scan below use parallel workers (max_parallel_workers_per_gather of them).
SET parallel_setup_cost = 0
SET parallel_tuple_cost = 0
SET min_parallel_table_scan_size = 0
AS $$
DECLARE
  leaf regclass;
BEGIN
  IF (SELECT d.method FROM simhash_internal.distribution(table_name) d) IS NOT NULL THEN
    -- A Citus table: one UPDATE that Citus runs on every shard (the fingerprint is computed there).
    EXECUTE format('UPDATE %s t SET %I = @extschema@.simhash(t.%I, %L, %s, %L, %L, %L)',
                   table_name, fingerprint_column, text_column, tokenizer, shingle, weighting, stopwords, fold);
    RETURN;
  END IF;
  -- Every table that holds rows: the table itself, or the leaf partitions of a partitioned one.
  FOR leaf IN SELECT c.oid FROM pg_class c WHERE c.oid = table_name AND c.relkind = 'r'
              UNION ALL
              SELECT p.relid FROM pg_partition_tree(table_name) p JOIN pg_class c ON c.oid = p.relid
              WHERE p.isleaf AND c.relkind = 'r' AND p.relid <> table_name LOOP
    -- A read-only scan can run in parallel where an UPDATE cannot; the table is locked (the caller
    -- altered it), so the row ctids stay valid.
    EXECUTE format('CREATE TEMP TABLE simhash_attach_fill AS '
                   'SELECT ctid AS row_id, @extschema@.simhash(%I, %L, %s, %L, %L, %L) AS fp FROM ONLY %s',
                   text_column, tokenizer, shingle, weighting, stopwords, fold, leaf);
    EXECUTE format('UPDATE ONLY %s t SET %2$I = f.fp FROM simhash_attach_fill f '
                   'WHERE t.ctid = f.row_id AND t.%2$I IS DISTINCT FROM f.fp', leaf, fingerprint_column);
    DROP TABLE simhash_attach_fill;
  END LOOP;
END
$$;
COMMENT ON FUNCTION simhash_internal.fill(regclass, name, name, text, int, text, boolean, text) IS
  'Sets the fingerprint column of every row of a table (or of its partitions) that lacks the right one';

CREATE FUNCTION simhash_internal.fill_collect(table_name regclass, text_column name, tokenizer text, shingle int,
                                     weighting text, stopwords boolean, fold text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
-- Let the fingerprinting scans below use parallel workers (max_parallel_workers_per_gather of them).
SET parallel_setup_cost = 0
SET parallel_tuple_cost = 0
SET min_parallel_table_scan_size = 0
SET jit = off
AS $$
DECLARE
  leaf regclass;
  estimate float8;
  budget float8;
BEGIN
  PERFORM simhash_internal.fill_reset();
  -- Without parallel workers the rewrite is as fast: it fingerprints every row itself.
  IF current_setting('max_parallel_workers_per_gather')::int = 0 THEN
    RETURN;
  END IF;
  -- Up to 32 bytes of the backend's memory per row (16, and room to grow), within maintenance_work_mem:
  -- the rows of the tables beyond it are fingerprinted by the rewrite.
  budget := pg_size_bytes(current_setting('maintenance_work_mem')) / 32;
  FOR leaf, estimate IN
      SELECT c.oid, CASE WHEN c.reltuples >= 0 THEN c.reltuples ELSE pg_relation_size(c.oid) / 32 END
      FROM pg_class c
      WHERE c.relkind = 'r' AND (c.oid = table_name OR c.oid IN (SELECT p.relid FROM pg_partition_tree(table_name) p
                                                                 WHERE p.isleaf))
      ORDER BY 2 DESC LOOP
    CONTINUE WHEN estimate > budget;
    budget := budget - estimate;
    -- simhash() in the workers, fill_stash() (parallel restricted) in the leader above them.
    EXECUTE format('SELECT count(simhash_internal.fill_stash(s.tableoid, s.ctid, s.fp)) '
                   'FROM (SELECT tableoid, ctid, @extschema@.simhash(%I, %L, %s, %L, %L, %L) AS fp FROM ONLY %s OFFSET 0) s',
                   text_column, tokenizer, shingle, weighting, stopwords, fold, leaf);
  END LOOP;
END
$$;
COMMENT ON FUNCTION simhash_internal.fill_collect(regclass, name, text, int, text, boolean, text) IS
  'Fingerprints the rows of a table (or of its partitions) with a parallel scan, for fill_value()';
COMMENT ON FUNCTION simhash_internal.fill_reset() IS 'Forgets the fingerprints collected by fill_stash()';
COMMENT ON FUNCTION simhash_internal.fill_stash(oid, tid, bigint) IS
  'Collects the fingerprint of a row for fill_value() (until the end of the transaction)';
COMMENT ON FUNCTION simhash_internal.fill_value(oid, tid, text, text, int, text, boolean, text) IS
  'The fingerprint of a row, as collected by fill_stash() or else computed like simhash()';

-- sql/src/attach.sql of 0.4.0.
-- simhash_attach(), simhash_internal.find_attachment() and simhash_detach().
CREATE FUNCTION simhash_attach(table_name regclass, text_column name, max_distance int DEFAULT 7,
                               on_duplicate text DEFAULT 'none', tokenizer text DEFAULT 'bigram',
                               shingle int DEFAULT 1, weighting text DEFAULT 'logtf',
                               stopwords boolean DEFAULT true, fold text DEFAULT 'auto', scope name DEFAULT NULL,
                               registry boolean DEFAULT false, min_length int DEFAULT 0)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  nbands int;
  rel_schema name;
  rel_name name;
  registry_table text;
  lock_table text;
  dist_method "char";
  dist_column name;
  unsafe_triggers text;
  scope_type regtype;
  args bytea;
  att @extschema@.simhash_attachment;
  existing @extschema@.simhash_attachment;
  missing text;
  names record;
  fp name;
  kind "char";
  is_partition boolean;
  column_type regtype;
  key_type text := 'text';
  bands text;
  wanted name[];
  taken name;
  taken_in regclass;
BEGIN
  IF table_name IS NULL OR text_column IS NULL THEN
    RAISE EXCEPTION 'simhash_attach: table_name and text_column must not be NULL' USING ERRCODE = '22004';
  END IF;
  -- The trigger's arguments, which record the attachment (src/attachment.rs): made first, as they
  -- check max_distance, on_duplicate, the fingerprint options (22023, 22004 when NULL), min_length,
  -- and the length of the names derived from the column (42622). The names come from them.
  args := simhash_internal.encode_attachment(text_column, max_distance, on_duplicate, tokenizer, shingle, weighting,
                                             stopwords, fold, scope, registry, min_length);
  SELECT * INTO names FROM simhash_internal.object_names(table_name, text_column);
  SELECT * INTO STRICT att FROM simhash_internal.attachment(table_name, names.trigger_name, args);
  fp := att.fingerprint_column;

  SELECT c.relkind, c.relispartition INTO kind, is_partition FROM pg_class c WHERE c.oid = table_name;
  IF kind NOT IN ('r', 'p') THEN
    RAISE EXCEPTION 'simhash_attach: "%" is not a table', table_name
      USING ERRCODE = '42809', HINT = 'Views, materialized views and foreign tables cannot be attached.';
  END IF;
  IF is_partition THEN
    RAISE EXCEPTION 'simhash_attach: "%" is a partition of "%"', table_name, pg_partition_root(table_name)
      USING ERRCODE = '42809',
            HINT = format('Attach the partitioned table %s: its partitions get the columns, indexes and trigger.',
                          pg_partition_root(table_name));
  END IF;
  IF kind = 'p' AND EXISTS (SELECT FROM pg_partition_tree(table_name) p JOIN pg_class c ON c.oid = p.relid
                            WHERE c.relkind = 'f') THEN
    RAISE EXCEPTION 'simhash_attach: partitioned table "%" has a foreign table as a partition', table_name
      USING ERRCODE = '42809', HINT = 'Band indexes cannot be built on a foreign table.';
  END IF;
  SELECT d.method, d.distribution_column INTO dist_method, dist_column
  FROM simhash_internal.distribution(table_name) d;
  IF dist_method IS NOT NULL AND dist_method <> 'h' THEN
    RAISE EXCEPTION 'simhash_attach: "%" is a Citus reference table or Citus local table', table_name
      USING ERRCODE = '0A000', HINT = 'Attach an ordinary table or a hash-distributed one (create_distributed_table).';
  END IF;
  IF dist_method IS NOT NULL AND kind = 'p' THEN
    RAISE EXCEPTION 'simhash_attach: "%" is a distributed partitioned table', table_name
      USING ERRCODE = '0A000', HINT = 'Attach a distributed table that is not partitioned, or a partitioned table that is not distributed.';
  END IF;
  IF scope IS NOT NULL THEN
    SELECT a.atttypid::regtype INTO scope_type FROM pg_attribute a
    WHERE a.attrelid = table_name AND a.attname = scope AND a.attnum > 0 AND NOT a.attisdropped;
    IF scope_type IS NULL THEN
      RAISE EXCEPTION 'column "%" of relation "%" does not exist', scope, table_name USING ERRCODE = '42703';
    END IF;
    -- Rows are in one scope when their values are equal by the type's default equality.
    BEGIN
      EXECUTE format('SELECT NULL::%s = NULL::%s', scope_type, scope_type);
    EXCEPTION WHEN undefined_function THEN
      RAISE EXCEPTION 'simhash_attach: column "%" has type %, which has no equality operator', scope, scope_type
        USING ERRCODE = '42883', HINT = 'Scope duplicate checks by a column of a type with a default equality.';
    END;
  END IF;
  IF registry AND (dist_method IS DISTINCT FROM 'h' OR scope IS NOT NULL OR on_duplicate = 'none') THEN
    RAISE EXCEPTION 'simhash_attach: registry => true is for near-duplicate checks across a hash-distributed table'
      USING ERRCODE = '22023',
            HINT = 'Use it on a table distributed with create_distributed_table(), with on_duplicate ''error'', ''skip'' or ''flag'' and without scope.';
  END IF;
  IF dist_method = 'h' AND NOT registry AND scope IS DISTINCT FROM dist_column AND (scope IS NOT NULL OR on_duplicate <> 'none') THEN
    RAISE EXCEPTION 'simhash_attach: on distributed table "%", near-duplicates can be rejected only among rows with the same "%"',
      table_name, dist_column
      USING ERRCODE = '0A000',
            DETAIL = format('The trigger runs on each shard and sees that shard''s rows only; the rows with one value of '
                            'the distribution column %I are on one shard, other rows are not.', dist_column),
            HINT = format('Attach with scope => %L (near-duplicates per %s), with registry => true (near-duplicates '
                          'across the table, written through a view), or with on_duplicate => ''none''.',
                          dist_column, dist_column);
  END IF;
  SELECT CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE t.oid END::regtype INTO column_type
  FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
  WHERE a.attrelid = table_name AND a.attname = text_column AND a.attnum > 0 AND NOT a.attisdropped;
  IF column_type IS NULL THEN
    RAISE EXCEPTION 'column "%" of relation "%" does not exist', text_column, table_name USING ERRCODE = '42703';
  END IF;
  IF column_type NOT IN ('text'::regtype, 'character varying'::regtype, 'character'::regtype) THEN
    RAISE EXCEPTION 'simhash_attach: column "%" has type %, not text', text_column, column_type
      USING ERRCODE = '42804', HINT = 'Attach a text, varchar or char column.';
  END IF;
  SELECT s.* INTO existing FROM @extschema@.simhash_attachments() s
  WHERE s.table_name = simhash_attach.table_name AND s.text_column = simhash_attach.text_column;
  IF FOUND THEN
    -- Columns of the attachment dropped by hand (while the event trigger was disabled, or before
    -- 0.4.0 refused it) break it: detach removes what is left.
    SELECT string_agg(quote_ident(c), ', ') INTO missing
    FROM unnest(existing.fingerprint_column || existing.band_columns || existing.flag_column) c
    WHERE c IS NOT NULL AND NOT EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = table_name AND a.attname = c
                                                                     AND a.attnum > 0 AND NOT a.attisdropped);
    IF missing IS NOT NULL THEN
      RAISE EXCEPTION 'column "%" of "%" is already attached, but columns it added are gone: %', text_column, table_name, missing
        USING ERRCODE = '42710', HINT = 'Detach it with simhash_detach(), which removes what is left, and attach it again.';
    END IF;
    RAISE EXCEPTION 'column "%" of "%" is already attached', text_column, table_name
      USING ERRCODE = '42710', HINT = 'Detach it first with simhash_detach().';
  END IF;

  -- Four 16-bit bands serve every distance: a lookup probes each band at the values within a
  -- radius of the query's (generalized pigeonhole, src/search.rs).
  nbands := cardinality(att.band_columns);
  -- Every name the attach would create is checked before anything changes (a partition has the
  -- columns of its partitioned table, but triggers of its own).
  wanted := ARRAY[fp] || att.band_columns
            || CASE WHEN att.flag_column IS NOT NULL THEN ARRAY[att.flag_column] ELSE '{}' END
            || CASE WHEN registry THEN ARRAY[names.registered_column::name] ELSE '{}' END;
  SELECT a.attname INTO taken FROM pg_attribute a
  WHERE a.attrelid = table_name AND a.attname = ANY (wanted) AND a.attnum > 0 AND NOT a.attisdropped
  ORDER BY a.attnum LIMIT 1;
  IF taken IS NOT NULL THEN
    RAISE EXCEPTION 'simhash_attach: column "%" of relation "%" already exists', taken, table_name
      USING ERRCODE = '42701',
            HINT = format('Attaching column %I adds the columns %s: rename or drop column %I first.',
                          text_column, array_to_string(wanted, ', '), taken);
  END IF;
  SELECT t.tgrelid INTO taken_in FROM pg_trigger t
  WHERE t.tgrelid IN (SELECT simhash_attach.table_name UNION ALL SELECT p.relid FROM pg_partition_tree(table_name) p)
    AND t.tgname = names.trigger_name
  LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'simhash_attach: trigger "%" for relation "%" already exists', names.trigger_name, taken_in
      USING ERRCODE = '42710', HINT = 'Rename or drop that trigger first.';
  END IF;
  IF EXISTS (SELECT FROM pg_trigger t WHERE t.tgrelid = table_name AND t.tgname = names.check_trigger_name) THEN
    RAISE EXCEPTION 'simhash_attach: trigger "%" for relation "%" already exists', names.check_trigger_name,
      table_name USING ERRCODE = '42710', HINT = 'Rename or drop that trigger first.';
  END IF;
  IF on_duplicate = 'flag' AND (SELECT count(*) FROM simhash_internal.primary_key(table_name)) = 1 THEN
    SELECT p.atttype INTO key_type FROM simhash_internal.primary_key(table_name) p;
  END IF;
  IF registry THEN
    SELECT n.nspname, c.relname INTO rel_schema, rel_name
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = table_name;
    IF octet_length(names.lock_table) > 63 THEN
      RAISE EXCEPTION 'simhash_attach: table and column names "%", "%" are too long to derive the registry''s names from',
        rel_name, text_column USING ERRCODE = '42622';
    END IF;
    IF NOT EXISTS (SELECT FROM simhash_internal.primary_key(table_name)) THEN
      RAISE EXCEPTION 'simhash_attach: registry => true needs a primary key on "%"', table_name
        USING ERRCODE = '0A000', HINT = 'The registry names the rows it holds by their key.';
    END IF;
    registry_table := format('%I.%I', rel_schema, names.registry_table);
    lock_table := format('%I.%I', rel_schema, names.lock_table);
    -- The registry files each fingerprint under its k + 1 buckets (simhash_registry_buckets), one
    -- lock row per bucket beside it: both distributed by the bucket's lock key, so a bucket's rows
    -- and its lock row are on one shard. Made before this transaction writes to distributed tables.
    EXECUTE format('CREATE TABLE %s (lock_key int NOT NULL, part_value bigint NOT NULL, fingerprint bigint NOT NULL, '
                   'row_key text NOT NULL)', registry_table);
    EXECUTE 'SELECT pg_catalog.create_distributed_table($1, ''lock_key'')' USING registry_table::regclass;
    EXECUTE format('CREATE INDEX ON %s (lock_key, part_value) INCLUDE (fingerprint)', registry_table);
    EXECUTE format('CREATE TABLE %s (lock_key int PRIMARY KEY, writes bigint NOT NULL)', lock_table);
    EXECUTE 'SELECT pg_catalog.create_distributed_table($1, ''lock_key'', colocate_with => $2)'
      USING lock_table::regclass, registry_table;
  END IF;

  -- The fingerprint is computed once per row: here for the rows already there, then by the trigger;
  -- the band columns are generated from it. On a partitioned table each statement below reaches
  -- every partition: the columns are inherited, the indexes partitioned, the trigger cloned.
  EXECUTE format('ALTER TABLE %s ADD COLUMN %I bigint', table_name, fp);
  IF dist_method IS NOT NULL THEN
    -- A Citus table: an UPDATE on every shard, then the band columns.
    PERFORM simhash_internal.fill(table_name, text_column, fp, tokenizer, shingle, weighting, stopwords, fold);
  END IF;
  SELECT string_agg(format('ADD COLUMN %I int GENERATED ALWAYS AS (@extschema@.simhash_band(%I, %s, %s)) STORED',
                           b.name, fp, b.i - 1, nbands), ', ' ORDER BY b.i)
  INTO bands FROM unnest(att.band_columns) WITH ORDINALITY b(name, i);
  IF att.flag_column IS NOT NULL THEN
    bands := bands || format(', ADD COLUMN %I %s', att.flag_column, key_type);
  END IF;
  IF registry THEN
    bands := bands || format(', ADD COLUMN %I bigint', names.registered_column);
  END IF;
  IF dist_method IS NULL THEN
    -- One rewrite of the table (of each partition) writes every row once with its fingerprint and
    -- bands: ALTER COLUMN ... TYPE ... USING, run before the ADD COLUMNs of the same statement,
    -- fills the new column, and the generated band columns are computed from the new row. (Filling
    -- the column with an UPDATE first would write a second version of every row, then rewrite both.)
    -- The rewrite runs in this process alone: the fingerprints are computed before it by a parallel
    -- scan, and the rewrite takes each row's (simhash_fill_value, src/fill.rs).
    RAISE DEBUG 'simhash_attach: fingerprinting';
    PERFORM simhash_internal.fill_collect(table_name, text_column, tokenizer, shingle, weighting, stopwords, fold);
    bands := format('ALTER COLUMN %I TYPE bigint USING simhash_internal.fill_value(tableoid, ctid, %I, %L, %s, %L, %L, %L), ',
                    fp, text_column, tokenizer, shingle, weighting, stopwords, fold) || bands;
  END IF;
  RAISE DEBUG 'simhash_attach: writing fingerprints and bands';
  EXECUTE format('ALTER TABLE %s %s', table_name, bands);
  PERFORM simhash_internal.fill_reset();
  RAISE DEBUG 'simhash_attach: building band indexes';
  FOR i IN 1 .. nbands LOOP
    -- The fingerprint rides in the index entries: candidates are checked without visiting the heap.
    EXECUTE format('CREATE INDEX ON %s (%I) INCLUDE (%I)', table_name, att.band_columns[i], fp);
  END LOOP;
  IF dist_method IS NOT NULL THEN
    -- Citus creates a trigger on a distributed table (and on each shard) only with this setting;
    -- this trigger reads nothing but its own shard.
    unsafe_triggers := current_setting('citus.enable_unsafe_triggers');
    PERFORM set_config('citus.enable_unsafe_triggers', 'on', true);
  END IF;
  EXECUTE format('CREATE TRIGGER %I BEFORE INSERT OR UPDATE ON %s FOR EACH ROW EXECUTE FUNCTION @extschema@.simhash_trigger(%s)',
                 names.trigger_name, table_name,
                 (SELECT string_agg(quote_literal(a), ', ') FROM unnest(simhash_internal.trigger_args(args)) a));
  IF dist_method IS NOT NULL THEN
    PERFORM set_config('citus.enable_unsafe_triggers', unsafe_triggers, true);
  END IF;
  IF registry THEN
    -- The rows already there: registered, and filed in the registry (their near-duplicates stay).
    EXECUTE format('UPDATE %s t SET %I = t.%I', table_name, names.registered_column, fp);
    EXECUTE format('INSERT INTO %s (lock_key, part_value, fingerprint, row_key) '
                   'SELECT b.lock_key, b.part_value, t.%I, %s FROM %s t '
                   'CROSS JOIN LATERAL @extschema@.simhash_registry_buckets(t.%I, %s) b WHERE t.%I IS NOT NULL',
                   registry_table, fp, simhash_internal.row_key_sql(table_name, 't'),
                   table_name, fp, max_distance, fp);
    -- Writes go through a view of the table's own columns, whose trigger checks the registry on the
    -- coordinator, in the writer's distributed transaction (sql/src/registry.sql).
    PERFORM simhash_internal.registry_view(table_name, text_column);
  END IF;
  IF on_duplicate = 'error' AND kind = 'r' AND NOT is_partition AND dist_method IS NULL AND scope IS NULL
     AND NOT registry THEN
    -- The duplicate check of INSERTs, once per statement for all its rows (src/deferred.rs).
    EXECUTE format('CREATE TRIGGER %I AFTER INSERT ON %s FOR EACH ROW EXECUTE FUNCTION @extschema@.simhash_check_trigger(%s)',
                   names.check_trigger_name, table_name,
                   (SELECT string_agg(quote_literal(a), ', ') FROM unnest(simhash_internal.trigger_args(args)) a));
  END IF;
END
$$;
COMMENT ON FUNCTION simhash_attach(regclass, name, int, text, text, int, text, boolean, text, name, boolean, int) IS
  'Adds a fingerprint column, band columns with B-tree indexes and the simhash trigger to a table (and its partitions)';

CREATE FUNCTION simhash_internal.find_attachment(table_name regclass, text_column name)
RETURNS @extschema@.simhash_attachment
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  found @extschema@.simhash_attachment[];
  matches int;
BEGIN
  -- One read of the catalog: every lookup goes through here. A partition of an attached table is
  -- found through its clone of the trigger, so a lookup can name one partition.
  SELECT array_agg(s) INTO found
  FROM pg_trigger t CROSS JOIN LATERAL simhash_internal.attachment(t.tgrelid, t.tgname, t.tgargs) s
  WHERE t.tgrelid = find_attachment.table_name
    AND t.tgfoid = '@extschema@.simhash_trigger()'::regprocedure
    AND (find_attachment.text_column IS NULL OR s.text_column = find_attachment.text_column);
  matches := coalesce(cardinality(found), 0);
  IF matches = 0 THEN
    RAISE EXCEPTION '% is not attached', CASE WHEN text_column IS NULL THEN format('table "%s"', table_name)
                                              ELSE format('column "%s" of "%s"', text_column, table_name) END
      USING ERRCODE = '42704', HINT = 'Attach it first with simhash_attach().';
  ELSIF matches > 1 THEN
    RAISE EXCEPTION 'table "%" has % attached columns: name one with text_column', table_name, matches
      USING ERRCODE = '42725';
  END IF;
  RETURN found[1];
END
$$;
COMMENT ON FUNCTION simhash_internal.find_attachment(regclass, name) IS
  'The attachment of a table (and column, when it has several), or an error';

CREATE OR REPLACE FUNCTION simhash_detach(table_name regclass, text_column name DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  att @extschema@.simhash_attachment := simhash_internal.find_attachment(table_name, text_column);
  names record;
  rel_schema name;
  ddl_propagation text;
  dropped text;
BEGIN
  IF EXISTS (SELECT FROM pg_trigger t WHERE t.tgrelid = att.table_name AND t.tgname = att.trigger_name
                                        AND t.tgparentid <> 0) THEN
    RAISE EXCEPTION 'simhash_detach: "%" is a partition of attached table "%"', table_name, pg_partition_root(table_name)
      USING ERRCODE = '42809', HINT = format('Detach %s: that removes everything from its partitions too.',
                                             pg_partition_root(table_name));
  END IF;
  SELECT * INTO names FROM simhash_internal.object_names(att.table_name, att.text_column);
  IF (SELECT d.method FROM simhash_internal.distribution(att.table_name) d) IS NOT NULL THEN
    PERFORM set_config('citus.enable_unsafe_triggers', 'on', true);
  END IF;
  IF att.registry THEN
    -- The view that writes go through and the registry's tables, named after the table and column.
    SELECT n.nspname INTO rel_schema
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = att.table_name;
    ddl_propagation := current_setting('citus.enable_ddl_propagation');
    PERFORM set_config('citus.enable_ddl_propagation', 'off', true);
    EXECUTE format('DROP VIEW IF EXISTS %I.%I', rel_schema, names.checked_view);
    PERFORM set_config('citus.enable_ddl_propagation', ddl_propagation, true);
    EXECUTE format('DROP TABLE IF EXISTS %I.%I, %I.%I', rel_schema, names.lock_table, rel_schema, names.registry_table);
  END IF;
  -- On a partitioned table the trigger's clones and the partitions' columns and indexes go too.
  EXECUTE format('DROP TRIGGER %I ON %s', att.trigger_name, att.table_name);
  IF EXISTS (SELECT FROM pg_trigger t WHERE t.tgrelid = att.table_name AND t.tgname = names.check_trigger_name) THEN
    EXECUTE format('DROP TRIGGER %I ON %s', names.check_trigger_name, att.table_name);
  END IF;
  -- Whatever is left of the columns the attach added: one of them may have been dropped by hand
  -- (while the event trigger was disabled, or before 0.4.0 refused it).
  SELECT string_agg(format('DROP COLUMN %I', a.attname), ', ' ORDER BY a.attname = att.fingerprint_column, a.attnum)
  INTO dropped
  FROM pg_attribute a
  WHERE a.attrelid = att.table_name AND a.attnum > 0 AND NOT a.attisdropped
    AND a.attname = ANY (att.fingerprint_column || att.band_columns || att.flag_column
                         || CASE WHEN att.registry THEN names.registered_column::name END);
  IF dropped IS NOT NULL THEN
    EXECUTE format('ALTER TABLE %s %s', att.table_name, dropped);
  END IF;
END
$$;
COMMENT ON FUNCTION simhash_detach(regclass, name) IS
  'Removes the trigger, fingerprint, band and flag columns (and so the band indexes) that simhash_attach() added';

-- sql/src/registry.sql of 0.4.0.
-- The INSTEAD OF INSERT trigger of the view of a Citus table attached with registry => true.
CREATE OR REPLACE FUNCTION simhash_internal.registry_insert()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  -- The view's trigger names the table and its attached column; the settings are the attachment's
  -- (the views made by 0.3.0 also pass them, as further arguments that are not read).
  base regclass := TG_ARGV[0]::regclass;
  att @extschema@.simhash_attachment := simhash_internal.find_attachment(TG_ARGV[0]::regclass, TG_ARGV[1]::name);
  text_column name := att.text_column;
  k int := att.max_distance;
  mode text := att.on_duplicate;
  names record;
  rel_schema name;
  registry_table text;
  lock_table text;
  fp bigint;
  lock_keys int[];
  part_values bigint[];
  lock_key int;
  row_key text;
  key_columns text;
  found_key text;
  found_distance int;
  columns text;
  flag_type text;
  short boolean;
BEGIN
  SELECT * INTO names FROM simhash_internal.object_names(base, text_column);
  SELECT n.nspname INTO rel_schema FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = base;
  registry_table := format('%I.%I', rel_schema, names.registry_table);
  lock_table := format('%I.%I', rel_schema, names.lock_table);
  EXECUTE format('SELECT @extschema@.simhash(($1).%I, %L, %s, %L, %L, %L)', text_column, att.tokenizer, att.shingle,
                 att.weighting, att.stopwords, att.fold)
    INTO fp USING NEW;
  SELECT string_agg(quote_ident(p.attname), ', ' ORDER BY p.ord) INTO key_columns FROM simhash_internal.primary_key(base) p;
  EXECUTE 'SELECT ' || simhash_internal.row_key_sql(base, '($1)') INTO row_key USING NEW;
  IF fp IS NOT NULL THEN
    SELECT array_agg(b.lock_key ORDER BY b.lock_key), array_agg(b.part_value ORDER BY b.lock_key)
    INTO lock_keys, part_values FROM @extschema@.simhash_registry_buckets(fp, k) b;
    -- A text shorter than min_length is filed but never checked.
    EXECUTE format('SELECT char_length(($1).%I) < $2', text_column) INTO short USING NEW, att.min_length;
  END IF;
  IF fp IS NOT NULL AND NOT short THEN
    -- The lock rows of the fingerprint's buckets, one statement each, in one global order (sorted
    -- keys): two near-duplicate writers share a bucket, and the second waits on its lock row until
    -- the first commits, and then sees the first's registry row, which is on the same shard.
    FOREACH lock_key IN ARRAY lock_keys LOOP
      EXECUTE format('INSERT INTO %s AS l (lock_key, writes) VALUES ($1, 1) '
                     'ON CONFLICT (lock_key) DO UPDATE SET writes = l.writes + 1', lock_table) USING lock_key;
    END LOOP;
    EXECUTE format('SELECT r.row_key, @extschema@.hamming(r.fingerprint, $1) AS distance FROM %s r '
                   'WHERE r.lock_key = ANY ($2) AND r.part_value = ANY ($3) AND @extschema@.hamming(r.fingerprint, $1) <= $4 '
                   'ORDER BY distance, r.row_key LIMIT 1', registry_table)
      INTO found_key, found_distance USING fp, lock_keys, part_values, k;
    IF found_key IS NOT NULL AND mode = 'error' THEN
      RAISE EXCEPTION 'near-duplicate text in column "%" of relation "%"', text_column,
        (SELECT c.relname FROM pg_class c WHERE c.oid = base)
        USING ERRCODE = '23505',
              DETAIL = format('Key (%s)=(%s) is at Hamming distance %s (max_distance %s).', key_columns, found_key,
                              found_distance, k);
    ELSIF found_key IS NOT NULL AND mode = 'skip' THEN
      RETURN NULL;
    END IF;
  END IF;
  IF fp IS NOT NULL THEN
    EXECUTE format('INSERT INTO %s (lock_key, part_value, fingerprint, row_key) VALUES %s', registry_table,
                   (SELECT string_agg(format('(%s, %s, %s, %L)', lock_keys[i], part_values[i], fp, row_key), ', ')
                    FROM generate_subscripts(lock_keys, 1) i));
  END IF;
  -- The row's values as literals: Citus sends a statement's parameters to the workers, where the
  -- view's row type does not exist.
  SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum),
         format('SELECT concat_ws('', '', %s)', string_agg(format('quote_nullable(($1).%I) || ''::%s''', a.attname,
                                                                   format_type(a.atttypid, a.atttypmod)), ', ' ORDER BY a.attnum))
  INTO columns, key_columns
  FROM pg_attribute a WHERE a.attrelid = TG_RELID AND a.attnum > 0 AND NOT a.attisdropped;
  EXECUTE key_columns INTO key_columns USING NEW;
  SELECT format_type(a.atttypid, a.atttypmod) INTO flag_type FROM pg_attribute a
  WHERE a.attrelid = base AND a.attname = att.flag_column AND NOT a.attisdropped;
  -- The row, with the fingerprint the registry checked (the trigger on its shard requires it).
  EXECUTE format('INSERT INTO %s (%s, %I%s) VALUES (%s, %s%s)', base, columns, names.registered_column,
                 CASE WHEN mode = 'flag' THEN format(', %I', att.flag_column) ELSE '' END,
                 key_columns, quote_nullable(fp),
                 CASE WHEN mode = 'flag' THEN format(', CAST(%s AS %s)', quote_nullable(found_key), flag_type) ELSE '' END);
  RETURN NEW;
END
$$;
COMMENT ON FUNCTION simhash_internal.registry_insert() IS
  'The INSTEAD OF INSERT trigger of the view of a distributed table attached with registry => true';

-- The default of <col>_registered on a table attached with registry => true. A write to the table
-- itself that gives that column no value (an INSERT, or a COPY with a column list) gets this
-- error on the coordinator, before Citus sends the row to a shard: the shard's trigger would refuse
-- it too, but Citus reports an error raised on a shard during COPY as XX000, without its SQLSTATE
-- and hint.
CREATE FUNCTION simhash_internal.registry_unchecked(table_name text, text_column text, checked_view text)
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  RAISE EXCEPTION 'writes of column "%" of % are checked by its near-duplicate registry', text_column, table_name
    USING ERRCODE = '0A000',
          DETAIL = format('This write did not go through the registry (it gives no value for %I).',
                          (SELECT n.registered_column FROM simhash_internal.object_names(table_name::regclass, text_column) n)),
          HINT = format('INSERT or COPY through the view %s, which checks the registry on the coordinator.',
                        checked_view);
END
$$;
COMMENT ON FUNCTION simhash_internal.registry_unchecked(text, text, text) IS
  'The default of the registered-fingerprint column of a registry attachment, which refuses the write';

-- Makes the view <table>_<column>_checked of a registry attachment, or brings it in step with the
-- table: simhash_attach() calls it once, and the event trigger below after every ALTER TABLE of
-- the table on the coordinator. The view keeps its columns, privileges and trigger: a column
-- renamed in the table is renamed in the view, a column added to the table is added at its end,
-- its defaults are the table's. A view dropped with a column (DROP COLUMN ... CASCADE) is made
-- again. Generated columns are left out (an INSERT cannot give them a value), and so are the
-- columns simhash_attach() added.
CREATE FUNCTION simhash_internal.registry_view(table_name regclass, text_column name)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  att @extschema@.simhash_attachment := simhash_internal.find_attachment(table_name, text_column);
  names record;
  registered name;
  derived name[];
  rel_schema name;
  rel_name name;
  checked_view text;
  registry_table text;
  view_oid oid;
  coordinator boolean;
  col record;
  columns text;
  ddl_propagation text;
BEGIN
  -- Only on the coordinator, for the distributed table itself: the view is the coordinator's alone.
  IF NOT EXISTS (SELECT FROM pg_extension e WHERE e.extname = 'citus')
     OR (SELECT d.method FROM simhash_internal.distribution(table_name) d) IS DISTINCT FROM 'h' THEN
    RETURN;
  END IF;
  EXECUTE 'SELECT pg_catalog.citus_is_coordinator()' INTO coordinator;
  IF NOT coordinator THEN
    RETURN;
  END IF;
  SELECT n.nspname, c.relname INTO rel_schema, rel_name
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = table_name;
  SELECT * INTO names FROM simhash_internal.object_names(table_name, text_column);
  registered := names.registered_column;
  derived := array_remove(att.fingerprint_column || att.band_columns || att.flag_column || registered, NULL);
  checked_view := format('%I.%I', rel_schema, names.checked_view);
  registry_table := format('%I.%I', rel_schema, names.registry_table);
  IF to_regclass(registry_table) IS NULL THEN
    -- The registry, its lock rows and the view are named after the table: a renamed table (or one
    -- moved to another schema) would leave its view writing to a name that is gone.
    RAISE EXCEPTION 'cannot rename table "%" or move it to another schema: its column "%" is attached with registry => true',
      rel_name, text_column
      USING ERRCODE = '0A000',
            HINT = 'Detach it with simhash_detach(), rename or move the table, and attach it again.';
  END IF;
  SELECT c.oid INTO view_oid FROM pg_class c
  WHERE c.oid = to_regclass(checked_view) AND c.relkind = 'v';
  ddl_propagation := current_setting('citus.enable_ddl_propagation');
  -- The view stays on the coordinator: Citus would copy it to the workers, which do not need it,
  -- and refuses its column defaults.
  PERFORM set_config('citus.enable_ddl_propagation', 'off', true);
  IF view_oid IS NULL THEN
    SELECT string_agg(format('t.%I', a.attname), ', ' ORDER BY a.attnum) INTO columns
    FROM pg_attribute a WHERE a.attrelid = table_name AND a.attnum > 0 AND NOT a.attisdropped
      AND a.attgenerated = '' AND NOT (a.attname = ANY (derived));
    EXECUTE format('CREATE VIEW %s AS SELECT %s FROM %s t', checked_view, columns, table_name);
    EXECUTE format('CREATE TRIGGER %I INSTEAD OF INSERT ON %s FOR EACH ROW '
                   'EXECUTE FUNCTION simhash_internal.registry_insert(%L, %L)',
                   att.trigger_name, checked_view, table_name::text, text_column);
  ELSE
    -- The view's columns are the table's columns its rule reads, in the same order (ascending
    -- attribute numbers): a column renamed in the table still has its old name in the view.
    FOR col IN SELECT v.attname AS old_name, b.attname AS new_name
               FROM (SELECT a.attname, row_number() OVER (ORDER BY a.attnum) AS n FROM pg_attribute a
                     WHERE a.attrelid = view_oid AND a.attnum > 0 AND NOT a.attisdropped) v
               JOIN (SELECT k.attnum, row_number() OVER (ORDER BY k.attnum) AS n
                     FROM (SELECT DISTINCT d.refobjsubid FROM pg_depend d JOIN pg_rewrite r ON r.oid = d.objid
                           WHERE d.classid = 'pg_rewrite'::regclass AND r.ev_class = view_oid
                             AND d.refobjid = table_name AND d.refobjsubid > 0) k(attnum)) k USING (n)
               JOIN pg_attribute b ON b.attrelid = table_name AND b.attnum = k.attnum
               WHERE v.attname <> b.attname LOOP
      EXECUTE format('ALTER VIEW %s RENAME COLUMN %I TO %I', checked_view, col.old_name, col.new_name);
    END LOOP;
    -- The table's new columns, at the end of the view.
    SELECT string_agg(format('t.%I', a.attname), ', ' ORDER BY a.attnum) INTO columns
    FROM pg_attribute a WHERE a.attrelid = table_name AND a.attnum > 0 AND NOT a.attisdropped
      AND a.attgenerated = '' AND NOT (a.attname = ANY (derived))
      AND a.attnum > (SELECT max(d.refobjsubid) FROM pg_depend d JOIN pg_rewrite r ON r.oid = d.objid
                      WHERE d.classid = 'pg_rewrite'::regclass AND r.ev_class = view_oid AND d.refobjid = table_name);
    IF columns IS NOT NULL THEN
      EXECUTE format('CREATE OR REPLACE VIEW %s AS SELECT %s, %s FROM %s t', checked_view,
                     (SELECT string_agg(format('t.%I', a.attname), ', ' ORDER BY a.attnum) FROM pg_attribute a
                      WHERE a.attrelid = view_oid AND a.attnum > 0 AND NOT a.attisdropped),
                     columns, table_name);
    END IF;
  END IF;
  -- The view's defaults are the table's (an INSERT through it that leaves a column out gets the
  -- table's default, not NULL).
  FOR col IN SELECT v.attname, pg_get_expr(td.adbin, td.adrelid) AS want, pg_get_expr(vd.adbin, vd.adrelid) AS have
             FROM pg_attribute v
             JOIN pg_attribute a ON a.attrelid = table_name AND a.attname = v.attname AND NOT a.attisdropped
                                    AND a.attgenerated = ''
             LEFT JOIN pg_attrdef td ON td.adrelid = a.attrelid AND td.adnum = a.attnum
             LEFT JOIN pg_attrdef vd ON vd.adrelid = v.attrelid AND vd.adnum = v.attnum
             WHERE v.attrelid = to_regclass(checked_view) AND v.attnum > 0 AND NOT v.attisdropped LOOP
    CONTINUE WHEN col.want IS NOT DISTINCT FROM col.have;
    EXECUTE format('ALTER VIEW %s ALTER COLUMN %I %s', checked_view, col.attname,
                   CASE WHEN col.want IS NULL THEN 'DROP DEFAULT' ELSE 'SET DEFAULT ' || col.want END);
  END LOOP;
  PERFORM set_config('citus.enable_ddl_propagation', ddl_propagation, true);
  -- A write to the table itself that gives no registered fingerprint is refused on the coordinator.
  IF NOT EXISTS (SELECT FROM pg_attribute a JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
                 JOIN pg_depend p ON p.classid = 'pg_attrdef'::regclass AND p.objid = d.oid
                   AND p.refclassid = 'pg_proc'::regclass
                   AND p.refobjid = 'simhash_internal.registry_unchecked(text, text, text)'::regprocedure
                 WHERE a.attrelid = table_name AND a.attname = registered) THEN
    EXECUTE format('ALTER TABLE %s ALTER COLUMN %I SET DEFAULT simhash_internal.registry_unchecked(%L, %L, %L)',
                   table_name, registered, table_name::text, text_column, checked_view);
  END IF;
END
$$;
COMMENT ON FUNCTION simhash_internal.registry_view(regclass, name) IS
  'Makes the view of a registry attachment, or brings its columns and defaults in step with the table';

CREATE FUNCTION simhash_internal.registry_ddl_command_end()
RETURNS event_trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  att record;
BEGIN
  FOR att IN SELECT DISTINCT s.table_name, s.text_column
             FROM pg_event_trigger_ddl_commands() c
             JOIN pg_trigger t ON t.tgrelid = c.objid AND t.tgfoid = '@extschema@.simhash_trigger()'::regprocedure
             CROSS JOIN LATERAL simhash_internal.attachment(t.tgrelid, t.tgname, t.tgargs) s
             WHERE c.classid = 'pg_class'::regclass AND s.registry LOOP
    PERFORM simhash_internal.registry_view(att.table_name, att.text_column);
  END LOOP;
END
$$;
COMMENT ON FUNCTION simhash_internal.registry_ddl_command_end() IS
  'After ALTER TABLE of a table attached with registry => true, brings its view in step with it';
CREATE EVENT TRIGGER simhash_registry_ddl_command_end ON ddl_command_end WHEN TAG IN ('ALTER TABLE')
  EXECUTE FUNCTION simhash_internal.registry_ddl_command_end();

-- sql/src/near_duplicates_sql.sql of 0.4.0.
-- simhash_near_duplicates_sql(): a lookup's probe plan as one SQL query, for EXPLAIN.
CREATE OR REPLACE FUNCTION simhash_near_duplicates_sql(table_name regclass, fingerprint bigint,
                                            max_distance int DEFAULT NULL, text_column name DEFAULT NULL,
                                            filter text DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  att @extschema@.simhash_attachment := simhash_internal.find_attachment(table_name, text_column);
  k int := coalesce(max_distance, att.max_distance);
  nbands int := cardinality(att.band_columns);
  branches text[] := '{}';
  earlier text := '';
  rel text;
  condition text := CASE WHEN filter IS NULL THEN '' ELSE format(' AND (%s)', filter) END;
  p record;
BEGIN
  -- Checks k as lookups do (22023), even when there is no fingerprint to look up.
  PERFORM @extschema@.simhash_probes(0, k, nbands);
  IF fingerprint IS NULL THEN
    RETURN NULL;
  END IF;
  IF (SELECT d.method FROM simhash_internal.distribution(att.table_name) d) IS NOT NULL THEN
    -- A Citus table: one query on the table that Citus runs on every shard as it is, where the
    -- probes of all bands are one OR of band conditions (a BitmapOr of the band indexes). Every row
    -- within k has a band within its radius, so the OR misses none, and each row comes once.
    SELECT string_agg(format('t.%I = ANY (%L::int[])', att.band_columns[b.band + 1], b.probe_values), ' OR '
                      ORDER BY b.band)
    INTO rel FROM @extschema@.simhash_probes(fingerprint, k, nbands) b;
    RETURN format('SELECT t AS item, @extschema@.hamming(t.%1$I, %2$s) AS distance FROM %3$s t '
                  'WHERE @extschema@.hamming(t.%1$I, %2$s) <= %4$s%5$s%6$s ORDER BY distance',
                  att.fingerprint_column, fingerprint, att.table_name, k,
                  CASE WHEN rel IS NULL THEN '' ELSE format(' AND (%s)', rel) END, condition);
  END IF;
  -- A partitioned table holds no rows itself: its partitions are read, and a filter on the
  -- partition key lets PostgreSQL skip the others (partition pruning) in every branch.
  SELECT CASE WHEN c.relkind = 'p' THEN '' ELSE 'ONLY ' END || att.table_name::text INTO rel
  FROM pg_class c WHERE c.oid = att.table_name;
  -- The probe plan of simhash_near_duplicates(): band i at the values within radius t_i of the
  -- query's, checked on the fingerprint the index entries hold (index-only scans); a fingerprint is
  -- taken from the first band within its radius only. The rows are then fetched by band and value.
  FOR p IN SELECT * FROM @extschema@.simhash_probes(fingerprint, k, nbands) ORDER BY band LOOP
    branches := branches || format('SELECT t.%1$I AS fp FROM %2$s t WHERE t.%3$I = ANY (%4$L::int[]) '
                                   'AND @extschema@.hamming(t.%1$I, %5$s) <= %6$s%7$s%8$s',
      att.fingerprint_column, rel, att.band_columns[p.band + 1], p.probe_values, fingerprint, k, earlier, condition);
    earlier := earlier || format(' AND @extschema@.hamming(@extschema@.simhash_band(t.%I, %s, %s), %s) > %s',
      att.fingerprint_column, p.band, nbands, @extschema@.simhash_band(fingerprint, p.band, nbands), p.radius);
  END LOOP;
  IF cardinality(branches) = 0 THEN
    -- Too far for the bands to pay: a scan.
    RETURN format('SELECT t AS item, @extschema@.hamming(t.%1$I, %2$s) AS distance FROM %3$s t '
                  'WHERE @extschema@.hamming(t.%1$I, %2$s) <= %4$s%5$s ORDER BY distance',
                  att.fingerprint_column, fingerprint, rel, k, condition);
  END IF;
  RETURN format(E'SELECT t AS item, @extschema@.hamming(m.fp, %1$s) AS distance\nFROM (SELECT DISTINCT fp FROM (\n%2$s\n) c) m\n'
                 'JOIN %3$s t ON t.%4$I = @extschema@.simhash_band(m.fp, 0, %5$s) AND t.%6$I = m.fp%7$s\nORDER BY distance',
                fingerprint, array_to_string(branches, E'\nUNION ALL\n'), rel, att.band_columns[1], nbands,
                att.fingerprint_column, condition);
END
$$;
COMMENT ON FUNCTION simhash_near_duplicates_sql(regclass, bigint, int, name, text) IS
  'The probe plan of simhash_near_duplicates() for a fingerprint, as an SQL query (for EXPLAIN), with an optional condition on the rows';

-- sql/src/ddl.sql of 0.4.0 (the event trigger and its function are unchanged).
-- What keeps an attachment working through ALTER TABLE ... ATTACH PARTITION and RENAME COLUMN
-- (src/partitions.rs).
CREATE FUNCTION simhash_internal.prepare_partition(parent regclass, partition regclass)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  att @extschema@.simhash_attachment;
  kind "char";
  fp_type regtype;
  added text[];
  b name;
BEGIN
  SELECT c.relkind INTO kind FROM pg_class c WHERE c.oid = partition;
  FOR att IN SELECT s.* FROM pg_trigger t CROSS JOIN LATERAL simhash_internal.attachment(t.tgrelid, t.tgname, t.tgargs) s
             WHERE t.tgrelid = parent AND t.tgfoid = '@extschema@.simhash_trigger()'::regprocedure LOOP
    IF kind NOT IN ('r', 'p') THEN
      RAISE EXCEPTION 'simhash_ext: cannot attach "%" as a partition of "%", whose column "%" is attached',
        partition, parent, att.text_column
        USING ERRCODE = '42809', HINT = 'Band indexes cannot be built on a foreign table.';
    END IF;
    IF NOT EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = partition AND a.attname = att.text_column
                                                AND a.attnum > 0 AND NOT a.attisdropped) THEN
      CONTINUE;  -- PostgreSQL refuses the partition for its missing column.
    END IF;
    IF EXISTS (SELECT FROM pg_trigger t WHERE t.tgrelid = partition AND t.tgname = att.trigger_name) THEN
      RAISE EXCEPTION 'cannot attach "%" as a partition of "%": it has a trigger "%" of its own',
        partition, parent, att.trigger_name
        USING ERRCODE = '42710',
              HINT = format('If column %I of %s is attached on its own, detach it first with simhash_detach(%L).',
                            att.text_column, partition, partition::text);
    END IF;
    SELECT a.atttypid::regtype INTO fp_type FROM pg_attribute a
    WHERE a.attrelid = partition AND a.attname = att.fingerprint_column AND a.attnum > 0 AND NOT a.attisdropped;
    IF fp_type IS NOT NULL AND fp_type <> 'bigint'::regtype THEN
      RAISE EXCEPTION 'cannot attach "%" as a partition of "%": its column "%" has type %, not bigint',
        partition, parent, att.fingerprint_column, fp_type
        USING ERRCODE = '42804', HINT = format('Rename or drop column %I of %s first.', att.fingerprint_column, partition);
    END IF;
    -- The columns the partition lacks, as the partitioned table has them (the same generation
    -- expressions, or PostgreSQL refuses the partition).
    added := '{}';
    IF fp_type IS NULL THEN
      added := added || format('ADD COLUMN %I bigint', att.fingerprint_column);
    END IF;
    FOREACH b IN ARRAY att.band_columns || att.flag_column LOOP
      CONTINUE WHEN b IS NULL OR EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = partition AND a.attname = b
                                                                      AND a.attnum > 0 AND NOT a.attisdropped);
      SELECT added || format('ADD COLUMN %I %s%s', b, format_type(a.atttypid, a.atttypmod),
                             CASE WHEN a.attgenerated = 's'
                                  THEN format(' GENERATED ALWAYS AS (%s) STORED', pg_get_expr(d.adbin, d.adrelid)) ELSE '' END)
      INTO added
      FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
      WHERE a.attrelid = parent AND a.attname = b AND a.attnum > 0 AND NOT a.attisdropped;
    END LOOP;
    IF cardinality(added) > 0 THEN
      EXECUTE format('ALTER TABLE %s %s', partition, array_to_string(added, ', '));
    END IF;
    -- Its rows get the fingerprints the trigger would have given them (rows written while it was
    -- not a partition included).
    PERFORM simhash_internal.fill(partition, att.text_column, att.fingerprint_column, att.tokenizer, att.shingle,
                                  att.weighting, att.stopwords, att.fold);
  END LOOP;
END
$$;
COMMENT ON FUNCTION simhash_internal.prepare_partition(regclass, regclass) IS
  'Gives a table about to become a partition of an attached table the columns and fingerprints it needs';

CREATE FUNCTION simhash_internal.rename_column(table_name regclass, old_name name, new_name name)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  att @extschema@.simhash_attachment;
  trig record;
  enabled "char";
  renamed name[];
  args text[];
  wanted text[];
  old_names record;
  new_names record;
  taken name;
  i int;
BEGIN
  FOR trig IN SELECT s AS att, t.tgparentid <> 0 AS clone, t.tgargs
              FROM pg_trigger t CROSS JOIN LATERAL simhash_internal.attachment(t.tgrelid, t.tgname, t.tgargs) s
              WHERE t.tgrelid = rename_column.table_name
                AND t.tgfoid = '@extschema@.simhash_trigger()'::regprocedure LOOP
    att := trig.att;
    renamed := att.fingerprint_column || att.band_columns || att.flag_column;
    IF old_name = ANY (renamed) THEN
      RAISE EXCEPTION 'cannot rename column "%" of "%": simhash_attach() added it for column "%"',
        old_name, table_name, att.text_column
        USING ERRCODE = '55000',
              HINT = format('Rename column %I instead: its fingerprint, band and flag columns follow it.', att.text_column);
    END IF;
    -- A partition's columns are inherited: PostgreSQL refuses to rename them there.
    CONTINUE WHEN old_name <> att.text_column OR trig.clone OR new_name = old_name;
    IF (SELECT d.method FROM simhash_internal.distribution(table_name) d) IS NOT NULL THEN
      RAISE EXCEPTION 'cannot rename attached column "%" of distributed table "%"', old_name, table_name
        USING ERRCODE = '0A000',
              HINT = 'Detach it with simhash_detach(), rename it, and attach it again.';
    END IF;
    -- The same arguments with the new text column: the names derived from them are the new names.
    args := simhash_internal.trigger_args(trig.tgargs);
    args[1] := new_name;
    SELECT array_remove(ARRAY[d.fingerprint_column] || d.band_columns || d.flag_column, NULL) INTO wanted
    FROM simhash_internal.decode_attachment(
           (SELECT string_agg(convert_to(a, getdatabaseencoding()) || '\x00'::bytea, ''::bytea ORDER BY n)
            FROM unnest(args) WITH ORDINALITY u(a, n))) d;
    SELECT * INTO old_names FROM simhash_internal.object_names(table_name, old_name);
    SELECT * INTO new_names FROM simhash_internal.object_names(table_name, new_name);
    IF EXISTS (SELECT FROM unnest(wanted) w WHERE octet_length(w) > 63) THEN
      RAISE EXCEPTION 'cannot rename attached column "%" to "%": the name is too long to derive column names from',
        old_name, new_name USING ERRCODE = '42622';
    END IF;
    SELECT a.attname INTO taken FROM pg_attribute a
    WHERE a.attrelid = table_name AND a.attname = ANY (wanted) AND a.attnum > 0 AND NOT a.attisdropped
    ORDER BY a.attnum LIMIT 1;
    IF taken IS NOT NULL THEN
      RAISE EXCEPTION 'cannot rename attached column "%" to "%": column "%" of relation "%" already exists',
        old_name, new_name, taken, table_name
        USING ERRCODE = '42701',
              HINT = format('The columns %s follow column %I; rename or drop column %I first, or pick another name.',
                            array_to_string(renamed, ', '), old_name, taken);
    END IF;
    IF EXISTS (SELECT FROM pg_trigger t WHERE t.tgrelid = table_name AND t.tgname = new_names.trigger_name) THEN
      RAISE EXCEPTION 'cannot rename attached column "%" to "%": trigger "%" for relation "%" already exists',
        old_name, new_name, new_names.trigger_name, table_name
        USING ERRCODE = '42710', HINT = 'Rename or drop that trigger first.';
    END IF;
    FOR i IN 1 .. cardinality(wanted) LOOP
      EXECUTE format('ALTER TABLE %s RENAME COLUMN %I TO %I', table_name, renamed[i], wanted[i]);
    END LOOP;
    -- The trigger's arguments name the text column: it is made again with the new name.
    SELECT t.tgenabled INTO enabled FROM pg_trigger t WHERE t.tgrelid = table_name AND t.tgname = att.trigger_name;
    EXECUTE format('DROP TRIGGER %I ON %s', att.trigger_name, table_name);
    EXECUTE format('CREATE TRIGGER %I BEFORE INSERT OR UPDATE ON %s FOR EACH ROW EXECUTE FUNCTION @extschema@.simhash_trigger(%s)',
                   new_names.trigger_name, table_name, (SELECT string_agg(quote_literal(a), ', ') FROM unnest(args) a));
    IF enabled = 'D' THEN
      EXECUTE format('ALTER TABLE %s DISABLE TRIGGER %I', table_name, new_names.trigger_name);
    END IF;
    SELECT t.tgenabled INTO enabled FROM pg_trigger t
    WHERE t.tgrelid = table_name AND t.tgname = old_names.check_trigger_name;
    IF FOUND THEN
      EXECUTE format('DROP TRIGGER %I ON %s', old_names.check_trigger_name, table_name);
      EXECUTE format('CREATE TRIGGER %I AFTER INSERT ON %s FOR EACH ROW EXECUTE FUNCTION @extschema@.simhash_check_trigger(%s)',
                     new_names.check_trigger_name, table_name,
                     (SELECT string_agg(quote_literal(a), ', ') FROM unnest(args) a));
      IF enabled = 'D' THEN
        EXECUTE format('ALTER TABLE %s DISABLE TRIGGER %I', table_name, new_names.check_trigger_name);
      END IF;
    END IF;
  END LOOP;
END
$$;
COMMENT ON FUNCTION simhash_internal.rename_column(regclass, name, name) IS
  'Before an attached text column is renamed, renames the columns derived from it and remakes its trigger';


-- Registry attachments made by 0.3.0 (Citus): their view gets the columns and defaults of the table,
-- and <col>_registered the default that refuses writes bypassing the view, as simhash_attach() of
-- 0.4.0 leaves them. Their view triggers keep their arguments: registry_insert reads the first two.
-- Citus runs ALTER EXTENSION ... UPDATE on the coordinator first and then on each worker, in one
-- distributed transaction: while this script runs on the coordinator, the workers have no
-- simhash_internal yet, and an ALTER TABLE propagated to them that names registry_unchecked()
-- fails. So nothing here propagates DDL: each node sets the default on its own copy of the table
-- (on the coordinator the table itself, on a worker its shell table) and on the shards of the table
-- that it holds, and the coordinator makes or updates the view (registry_view does nothing elsewhere).
DO $$
DECLARE
  att record;
  rel pg_catalog.text;
  ddl_propagation pg_catalog.text := pg_catalog.current_setting('citus.enable_ddl_propagation', true);
BEGIN
  IF ddl_propagation IS NOT NULL THEN
    PERFORM pg_catalog.set_config('citus.enable_ddl_propagation', 'off', true);
  END IF;
  FOR att IN SELECT a.table_name, a.text_column, n.nspname, c.relname, o.registered_column, o.checked_view
             FROM @extschema@.simhash_attachments() a
             JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) a.table_name
             JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
             CROSS JOIN LATERAL simhash_internal.object_names(a.table_name, a.text_column) o
             WHERE a.registry AND (SELECT d.method FROM simhash_internal.distribution(a.table_name) d) OPERATOR(pg_catalog.=) 'h' LOOP
    -- This node's copy of the table and its shards here (shard_name() leaves the schema out for public).
    FOR rel IN EXECUTE
        'SELECT pg_catalog.format(''%I.%I'', $2, $3) '
        'UNION ALL SELECT CASE WHEN $2 OPERATOR(pg_catalog.=) ''public'' THEN ''public.'' ELSE '''' END OPERATOR(pg_catalog.||) pg_catalog.shard_name($1, s.shardid) '
        'FROM pg_catalog.pg_dist_shard s JOIN pg_catalog.pg_dist_placement p ON p.shardid OPERATOR(pg_catalog.=) s.shardid '
        'WHERE s.logicalrelid OPERATOR(pg_catalog.=) $1 AND p.groupid OPERATOR(pg_catalog.=) (SELECT l.groupid FROM pg_catalog.pg_dist_local_group l)'
        USING att.table_name, att.nspname, att.relname LOOP
      EXECUTE pg_catalog.format('ALTER TABLE %s ALTER COLUMN %I SET DEFAULT simhash_internal.registry_unchecked(%L, %L, %L)',
                     rel, att.registered_column, pg_catalog.format('%I.%I', att.nspname, att.relname), att.text_column,
                     pg_catalog.format('%I.%I', att.nspname, att.checked_view));
    END LOOP;
    PERFORM simhash_internal.registry_view(att.table_name, att.text_column);
  END LOOP;
  IF ddl_propagation IS NOT NULL THEN
    PERFORM pg_catalog.set_config('citus.enable_ddl_propagation', ddl_propagation, true);
  END IF;
END
$$;
