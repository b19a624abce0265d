-- simhash_ext 0.4.0 -> 0.5.0 (docs/ARCHITECTURE.md §12.1): the method of an attachment
-- (method => 'minhash', §6.11). The functions whose arguments or results change are dropped and
-- made again (a view that uses simhash_near_duplicates, simhash_pairs or simhash_clusters must be
-- dropped before the update and made again after it); the others are replaced in place.
\echo Use "ALTER EXTENSION simhash_ext UPDATE TO '0.5.0'" to load this file. \quit

DROP FUNCTION simhash_attach(regclass, name, int, text, text, int, text, boolean, text, name, boolean, int);
DROP FUNCTION simhash_internal.encode_attachment(text, int, text, text, int, text, boolean, text, text, boolean, int);
DROP FUNCTION simhash_internal.decode_attachment(bytea);
DROP FUNCTION simhash_internal.fill(regclass, name, name, text, int, text, boolean, text);
DROP FUNCTION simhash_near_duplicates(anyelement, bigint, int, name);
DROP FUNCTION simhash_near_duplicates(anyelement, text, int, name);
DROP FUNCTION simhash_pairs(regclass, int, text);
DROP FUNCTION simhash_clusters(regclass, int, text);

-- The attachment type gains the method and its threshold.
ALTER TYPE simhash_attachment ADD ATTRIBUTE method text, ADD ATTRIBUTE threshold float8;

-- The encoder and decoder of the attachment (src/internal.rs).
CREATE  FUNCTION simhash_internal."encode_attachment"(
	"text_column" text, /* Option < Text > */
	"method" text, /* Option < Text > */
	"max_distance" INT, /* Option < i32 > */
	"threshold" double precision, /* Option < f64 > */
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
AS 'MODULE_PATHNAME', 'encode_wrapper';

COMMENT ON FUNCTION simhash_internal.encode_attachment(text, text, int, double precision, text, text, int, text, boolean, text, text, boolean, int) IS
  'The trigger arguments (as pg_trigger.tgargs holds them) that record a new attachment; checks its settings';

CREATE  FUNCTION simhash_internal."decode_attachment"(
	"tgargs" bytea /* & [u8] */
) RETURNS TABLE (
	"text_column" TEXT,  /* ServerText */
	"fingerprint_column" TEXT,  /* ServerText */
	"band_columns" TEXT[],  /* Vec < ServerText > */
	"max_distance" INT,  /* Option < i32 > */
	"on_duplicate" TEXT,  /* String */
	"flag_column" TEXT,  /* Option < ServerText > */
	"tokenizer" TEXT,  /* String */
	"shingle" INT,  /* i32 */
	"weighting" TEXT,  /* Option < String > */
	"stopwords" bool,  /* bool */
	"fold" TEXT,  /* String */
	"scope_column" TEXT,  /* Option < ServerText > */
	"registry" bool,  /* bool */
	"min_length" INT,  /* i32 */
	"method" TEXT,  /* String */
	"threshold" double precision  /* Option < f64 > */
)
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'decode_wrapper';

COMMENT ON FUNCTION simhash_internal.decode_attachment(bytea) IS
  'The attachment that trigger arguments record, with its derived column names; no row when they are not a simhash_trigger()''s';

CREATE OR REPLACE FUNCTION simhash_internal.attachment(table_name regclass, trigger_name name, tgargs bytea)
RETURNS SETOF @extschema@.simhash_attachment
LANGUAGE sql STABLE STRICT PARALLEL SAFE ROWS 1
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT table_name, d.text_column::name, d.fingerprint_column::name, d.band_columns::name[], d.max_distance,
         d.on_duplicate, d.flag_column::name, d.tokenizer, d.shingle, d.weighting, d.stopwords, trigger_name, d.fold,
         d.scope_column::name, d.registry, d.min_length, d.method, d.threshold
  FROM simhash_internal.decode_attachment(tgargs) d
$$;

-- sql/src/fill.sql
CREATE FUNCTION simhash_internal.fingerprint_sql(text_expr text, method text, tokenizer text, shingle int,
                                                 weighting text, stopwords boolean, fold text)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
  -- What the trigger stores for a text: its SimHash fingerprint or its MinHash signature.
  SELECT CASE method
    WHEN 'minhash' THEN format('@extschema@.minhash(%s, %L, %s, %L, %L)', text_expr, tokenizer, shingle, stopwords, fold)
    ELSE format('@extschema@.simhash(%s, %L, %s, %L, %L, %L)', text_expr, tokenizer, shingle, weighting, stopwords, fold)
  END
$$;

COMMENT ON FUNCTION simhash_internal.fingerprint_sql(text, text, text, int, text, boolean, text) IS
  'The SQL expression of the fingerprint (SimHash) or signature (MinHash) an attachment stores for a text';

CREATE FUNCTION simhash_internal.fill(table_name regclass, text_column name, fingerprint_column name, tokenizer text,
                             shingle int, weighting text, stopwords boolean, fold text, method text DEFAULT 'simhash')
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
  compute text := simhash_internal.fingerprint_sql(format('t.%I', text_column), method, tokenizer, shingle, weighting,
                                                   stopwords, fold);
BEGIN
  IF (SELECT d.method FROM simhash_internal.distribution(table_name) d) IS NOT NULL THEN
    -- A Citus table: one UPDATE that Citus runs on every shard (the fingerprint is computed there).
    EXECUTE format('UPDATE %s t SET %I = %s', table_name, fingerprint_column, compute);
    RETURN;
  END IF;
  -- Every table that holds rows: the table itself, or the leaf partitions of a partitioned one.
  FOR leaf IN SELECT c.oid FROM pg_class c WHERE c.oid = table_name AND c.relkind = 'r'
              UNION ALL
              SELECT p.relid FROM pg_partition_tree(table_name) p JOIN pg_class c ON c.oid = p.relid
              WHERE p.isleaf AND c.relkind = 'r' AND p.relid <> table_name LOOP
    -- A read-only scan can run in parallel where an UPDATE cannot; the table is locked (the caller
    -- altered it), so the row ctids stay valid.
    EXECUTE format('CREATE TEMP TABLE simhash_attach_fill AS SELECT ctid AS row_id, %s AS fp FROM ONLY %s t',
                   compute, leaf);
    EXECUTE format('UPDATE ONLY %s t SET %2$I = f.fp FROM simhash_attach_fill f '
                   'WHERE t.ctid = f.row_id AND t.%2$I IS DISTINCT FROM f.fp', leaf, fingerprint_column);
    DROP TABLE simhash_attach_fill;
  END LOOP;
END
$$;

COMMENT ON FUNCTION simhash_internal.fill(regclass, name, name, text, int, text, boolean, text, text) IS
  'Sets the fingerprint column of every row of a table (or of its partitions) that lacks the right one';

-- sql/src/attach.sql
CREATE FUNCTION simhash_attach(table_name regclass, text_column name, max_distance int DEFAULT NULL,
                               on_duplicate text DEFAULT 'none', tokenizer text DEFAULT NULL,
                               shingle int DEFAULT NULL, weighting text DEFAULT NULL,
                               stopwords boolean DEFAULT NULL, fold text DEFAULT NULL, scope name DEFAULT NULL,
                               registry boolean DEFAULT false, min_length int DEFAULT 0,
                               method text DEFAULT 'simhash', threshold float8 DEFAULT NULL)
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
  minhash boolean;
  compute text;
BEGIN
  IF table_name IS NULL OR text_column IS NULL THEN
    RAISE EXCEPTION 'simhash_attach: table_name and text_column must not be NULL' USING ERRCODE = '22004';
  END IF;
  -- The trigger's arguments, which record the attachment (src/attachment.rs): made first, as they
  -- check the method, max_distance or threshold, on_duplicate, the text options (NULL: the
  -- method's default), min_length, and the length of the names derived from the column (42622).
  -- The names, and the options with their defaults filled in, come from them.
  args := simhash_internal.encode_attachment(text_column, method, max_distance, threshold, on_duplicate, tokenizer,
                                             shingle, weighting, stopwords, fold, scope, registry, min_length);
  SELECT * INTO names FROM simhash_internal.object_names(table_name, text_column);
  SELECT * INTO STRICT att FROM simhash_internal.attachment(table_name, names.trigger_name, args);
  fp := att.fingerprint_column;
  minhash := att.method = 'minhash';

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
            HINT = format('Attach with scope => %L (near-duplicates per %s), %sor with on_duplicate => ''none''.',
                          dist_column, dist_column, CASE WHEN minhash THEN '' -- MinHash has no registry (0A000)
                          ELSE 'with registry => true (near-duplicates across the table, written through a view), ' END);
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
  EXECUTE format('ALTER TABLE %s ADD COLUMN %I %s', table_name, fp, CASE WHEN minhash THEN 'bytea' ELSE 'bigint' END);
  IF dist_method IS NOT NULL THEN
    -- A Citus table: an UPDATE on every shard, then the band columns.
    PERFORM simhash_internal.fill(table_name, text_column, fp, att.tokenizer, att.shingle, att.weighting, att.stopwords,
                                  att.fold, att.method);
  END IF;
  IF minhash THEN
    -- One array of the signature's LSH band keys, for one GIN index (docs/ARCHITECTURE.md §6.11).
    bands := format('ADD COLUMN %I bigint[] GENERATED ALWAYS AS (@extschema@.minhash_bands(%I)) STORED',
                    att.band_columns[1], fp);
  ELSE
    SELECT string_agg(format('ADD COLUMN %I int GENERATED ALWAYS AS (@extschema@.simhash_band(%I, %s, %s)) STORED',
                             b.name, fp, b.i - 1, nbands), ', ' ORDER BY b.i)
    INTO bands FROM unnest(att.band_columns) WITH ORDINALITY b(name, i);
  END IF;
  IF att.flag_column IS NOT NULL THEN
    bands := bands || format(', ADD COLUMN %I %s', att.flag_column, key_type);
  END IF;
  IF registry THEN
    bands := bands || format(', ADD COLUMN %I bigint', names.registered_column);
  END IF;
  IF dist_method IS NULL AND minhash THEN
    -- One rewrite computes every row's signature (ALTER COLUMN ... TYPE ... USING runs before the
    -- ADD COLUMNs of the same statement, so the band keys are generated from the new signature).
    compute := simhash_internal.fingerprint_sql(quote_ident(text_column), att.method, att.tokenizer, att.shingle,
                                                att.weighting, att.stopwords, att.fold);
    bands := format('ALTER COLUMN %I TYPE bytea USING %s, ', fp, compute) || bands;
  ELSIF dist_method IS NULL THEN
    -- One rewrite of the table (of each partition) writes every row once with its fingerprint and
    -- bands: ALTER COLUMN ... TYPE ... USING, run before the ADD COLUMNs of the same statement,
    -- fills the new column, and the generated band columns are computed from the new row. (Filling
    -- the column with an UPDATE first would write a second version of every row, then rewrite both.)
    -- The rewrite runs in this process alone: the fingerprints are computed before it by a parallel
    -- scan, and the rewrite takes each row's (simhash_fill_value, src/fill.rs).
    RAISE DEBUG 'simhash_attach: fingerprinting';
    PERFORM simhash_internal.fill_collect(table_name, text_column, att.tokenizer, att.shingle, att.weighting,
                                          att.stopwords, att.fold);
    bands := format('ALTER COLUMN %I TYPE bigint USING simhash_internal.fill_value(tableoid, ctid, %I, %L, %s, %L, %L, %L), ',
                    fp, text_column, att.tokenizer, att.shingle, att.weighting, att.stopwords, att.fold) || bands;
  END IF;
  RAISE DEBUG 'simhash_attach: writing fingerprints and bands';
  EXECUTE format('ALTER TABLE %s %s', table_name, bands);
  PERFORM simhash_internal.fill_reset();
  RAISE DEBUG 'simhash_attach: building band indexes';
  IF minhash THEN
    -- Candidates are the rows sharing a band key with the query (`&&`); the signature, read from
    -- the heap, decides. Without a pending list (fastupdate off) every write and lookup costs the
    -- same: with one, lookups read all of it until the next vacuum (bench/results/minhash_cost.md).
    EXECUTE format('CREATE INDEX ON %s USING gin (%I) WITH (fastupdate = off)', table_name, att.band_columns[1]);
  ELSE
    FOR i IN 1 .. nbands LOOP
      -- The fingerprint rides in the index entries: candidates are checked without visiting the heap.
      EXECUTE format('CREATE INDEX ON %s (%I) INCLUDE (%I)', table_name, att.band_columns[i], fp);
    END LOOP;
  END IF;
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
                   table_name, fp, att.max_distance, fp);
    -- Writes go through a view of the table's own columns, whose trigger checks the registry on the
    -- coordinator, in the writer's distributed transaction (sql/src/registry.sql).
    PERFORM simhash_internal.registry_view(table_name, text_column);
  END IF;
  IF on_duplicate = 'error' AND kind = 'r' AND NOT is_partition AND dist_method IS NULL AND scope IS NULL
     AND NOT registry AND NOT minhash THEN
    -- The duplicate check of INSERTs, once per statement for all its rows (src/deferred.rs).
    EXECUTE format('CREATE TRIGGER %I AFTER INSERT ON %s FOR EACH ROW EXECUTE FUNCTION @extschema@.simhash_check_trigger(%s)',
                   names.check_trigger_name, table_name,
                   (SELECT string_agg(quote_literal(a), ', ') FROM unnest(simhash_internal.trigger_args(args)) a));
  END IF;
END
$$;

COMMENT ON FUNCTION simhash_attach(regclass, name, int, text, text, int, text, boolean, text, name, boolean, int, text, float8) IS
  'Adds a fingerprint column (SimHash) or signature column (MinHash), indexed band columns and the simhash trigger to a table (and its partitions)';

-- sql/src/ddl.sql
CREATE OR REPLACE FUNCTION simhash_internal.prepare_partition(parent regclass, partition regclass)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  att @extschema@.simhash_attachment;
  kind "char";
  fp_type regtype;
  fp_wanted regtype;
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
    -- A signature (MinHash) or a fingerprint (SimHash).
    fp_wanted := CASE att.method WHEN 'minhash' THEN 'bytea' ELSE 'bigint' END;
    IF fp_type IS NOT NULL AND fp_type <> fp_wanted THEN
      RAISE EXCEPTION 'cannot attach "%" as a partition of "%": its column "%" has type %, not %',
        partition, parent, att.fingerprint_column, fp_type, fp_wanted
        USING ERRCODE = '42804', HINT = format('Rename or drop column %I of %s first.', att.fingerprint_column, partition);
    END IF;
    -- The columns the partition lacks, as the partitioned table has them (the same generation
    -- expressions, or PostgreSQL refuses the partition).
    added := '{}';
    IF fp_type IS NULL THEN
      added := added || format('ADD COLUMN %I %s', att.fingerprint_column, fp_wanted);
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
                                  att.weighting, att.stopwords, att.fold, att.method);
  END LOOP;
END
$$;

-- sql/src/near_duplicates.sql and near_duplicates_sql.sql
CREATE FUNCTION simhash_near_duplicates(rel anyelement, fingerprint bigint, max_distance int DEFAULT NULL,
                                        text_column name DEFAULT NULL)
RETURNS TABLE (item anyelement, distance int, similarity float8)
LANGUAGE c STABLE ROWS 10
AS 'MODULE_PATHNAME', 'simhash_near_duplicates_fingerprint';

CREATE FUNCTION simhash_near_duplicates(rel anyelement, doc text, max_distance int DEFAULT NULL,
                                        text_column name DEFAULT NULL, threshold float8 DEFAULT NULL)
RETURNS TABLE (item anyelement, distance int, similarity float8)
LANGUAGE c STABLE ROWS 10 COST 100
AS 'MODULE_PATHNAME', 'simhash_near_duplicates_text';

CREATE FUNCTION simhash_near_duplicates(rel anyelement, signature bytea, threshold float8 DEFAULT NULL,
                                        text_column name DEFAULT NULL)
RETURNS TABLE (item anyelement, distance int, similarity float8)
LANGUAGE c STABLE ROWS 10
AS 'MODULE_PATHNAME', 'simhash_near_duplicates_signature';

COMMENT ON FUNCTION simhash_near_duplicates(anyelement, bigint, int, name) IS
  'Rows of an attached table within max_distance of a fingerprint, nearest first';

COMMENT ON FUNCTION simhash_near_duplicates(anyelement, text, int, name, float8) IS
  'Rows of an attached table near a text (fingerprinted with the table''s options): within max_distance (SimHash), nearest first, or sharing an LSH band with at least the threshold''s similarity (MinHash), most similar first';

COMMENT ON FUNCTION simhash_near_duplicates(anyelement, bytea, float8, name) IS
  'Rows of a table attached with method ''minhash'' that share an LSH band with a signature and reach the threshold, most similar first';

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
  IF att.method = 'minhash' THEN
    RAISE EXCEPTION 'column "%" of "%" is attached with method ''minhash'': it has no probe plan of bands',
      att.text_column, att.table_name
      USING ERRCODE = '22023',
            HINT = format('Look it up with simhash_near_duplicates(NULL::%s, doc), or query column %I with the && operator.',
                          att.table_name, att.band_columns[1]);
  END IF;
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

-- Deduplication (src/dedup.rs)
CREATE  FUNCTION "simhash_pairs"(
	"table_name" regclass, /* Option < RegClass > */
	"max_distance" INT DEFAULT NULL, /* Option < i32 > */
	"text_column" TEXT DEFAULT NULL, /* Option < & str > */
	"threshold" double precision DEFAULT NULL /* Option < f64 > */
) RETURNS TABLE (
	"key_a" TEXT,  /* ServerText */
	"key_b" TEXT,  /* ServerText */
	"distance" INT,  /* Option < i32 > */
	"similarity" double precision  /* Option < f64 > */
)
STABLE PARALLEL UNSAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'pairs_wrapper';

CREATE  FUNCTION "simhash_clusters"(
	"table_name" regclass, /* Option < RegClass > */
	"max_distance" INT DEFAULT NULL, /* Option < i32 > */
	"text_column" TEXT DEFAULT NULL, /* Option < & str > */
	"threshold" double precision DEFAULT NULL /* Option < f64 > */
) RETURNS TABLE (
	"key" TEXT,  /* ServerText */
	"representative" TEXT,  /* ServerText */
	"cluster_size" bigint  /* i64 */
)
STABLE PARALLEL UNSAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'clusters_wrapper';
