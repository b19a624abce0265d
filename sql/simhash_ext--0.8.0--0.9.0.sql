-- simhash_ext 0.8.0 -> 0.9.0 (docs/ARCHITECTURE.md section 14): the online attach. simhash_attach_concurrently()
-- and its steps (sql/src/online.sql, whole), the table and view of its progress; simhash_attachments()
-- gains the column state ('attaching' until an online attach has finished); simhash_attach()'s checks
-- move into simhash_internal.attach_checks(), which both attaches use; simhash_near_duplicates_sql()
-- refuses a column still being attached; simhash_internal.prepare_partition() gives a partition attached to such a table its bands and constraint, and simhash_internal.rename_column() renames the constraint with the column. The rest (the trigger keeps plain band columns, lookups
-- refuse an unfinished attach) is in the library. simhash_attach(), simhash_detach(), online_begin(),
-- prepare_partition(), rename_column(), simhash_near_duplicates_sql() and the registry's
-- registry_insert() run their steps as functions of simhash_internal (attach_fingerprint_column,
-- attach_bands, attach_indexes, detach_registry, online_resume, online_add_columns,
-- prepare_partition_*, rename_column_*, near_duplicates_probe_sql, registry_search_shards,
-- registry_probe_sql, registry_nearest, registry_write; registry_view() calls registry_view_sync and
-- registry_view_defaults), each created before its caller.
\echo Use "ALTER EXTENSION simhash_ext UPDATE TO '0.9.0'" to load this file. \quit

ALTER TYPE simhash_attachment ADD ATTRIBUTE state text;

-- sql/src/attachment.sql
CREATE OR REPLACE FUNCTION simhash_internal.attachment(table_name regclass, trigger_name name, tgargs bytea)
RETURNS SETOF @extschema@.simhash_attachment
LANGUAGE sql STABLE STRICT PARALLEL SAFE ROWS 1
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT table_name, d.text_column::name, d.fingerprint_column::name, d.band_columns::name[], d.max_distance,
         d.on_duplicate, d.flag_column::name, d.tokenizer, d.shingle, d.weighting, d.stopwords, trigger_name, d.fold,
         d.scope_column::name, d.registry, d.min_length, d.method, d.threshold,
         -- 'attaching' until an online attach has finished: its bands constraint (named as
         -- Attachment::bands_constraint_name in src/attachment.rs says) is NOT VALID until then.
         -- A partition made during the attach has its own constraint, valid: its ancestors' count.
         CASE WHEN EXISTS (SELECT FROM pg_constraint k
                           WHERE (k.conrelid = table_name
                                  OR k.conrelid IN (SELECT a.relid FROM pg_partition_ancestors(table_name) a))
                             AND NOT k.convalidated AND k.conname = trigger_name || '$bands')
              THEN 'attaching' ELSE 'attached' END
  FROM simhash_internal.decode_attachment(tgargs) d
$$;
COMMENT ON FUNCTION simhash_internal.attachment(regclass, name, bytea) IS
  'The attachment that a trigger of a table records (none when its arguments are not a simhash_trigger()''s)';

-- sql/src/attach.sql
CREATE FUNCTION simhash_internal.band_expressions(att @extschema@.simhash_attachment)
RETURNS TABLE (band_column name, expression text)
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
  -- Each band column of an attachment with the expression of its value: generated from it by
  -- simhash_attach(), kept by the trigger and tied to it by a constraint after an online attach.
  SELECT b.name, CASE WHEN att.method = 'minhash' THEN format('@extschema@.minhash_bands(%I)', att.fingerprint_column)
                      ELSE format('@extschema@.simhash_band(%I, %s, %s)', att.fingerprint_column, b.i - 1,
                                  cardinality(att.band_columns)) END
  FROM unnest(att.band_columns) WITH ORDINALITY b(name, i)
  ORDER BY b.i
$$;
COMMENT ON FUNCTION simhash_internal.band_expressions(simhash_attachment) IS
  'The band columns of an attachment, each with the SQL expression of its value';

-- sql/src/attach.sql
CREATE FUNCTION simhash_internal.attach_checks(table_name regclass, text_column name, args bytea,
                                               OUT kind "char", OUT dist_method "char", OUT dist_column name,
                                               OUT key_type text)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  names record;
  att @extschema@.simhash_attachment;
  fp name;
  minhash boolean;
  scope name;
  registry boolean;
  on_duplicate text;
  is_partition boolean;
  rel_schema name;
  rel_name name;
  scope_type regtype;
  column_type regtype;
  existing @extschema@.simhash_attachment;
  missing text;
  wanted name[];
  taken name;
  taken_in regclass;
BEGIN
  -- Everything that refuses an attach of column text_column of table_name with the settings that
  -- trigger arguments args record (simhash_attach() and simhash_attach_concurrently() made them
  -- with simhash_internal.encode_attachment()): the table's kind, Citus, the column, an attachment
  -- already there, and every name the attach would create.
  SELECT * INTO names FROM simhash_internal.object_names(table_name, text_column);
  SELECT * INTO STRICT att FROM simhash_internal.attachment(table_name, names.trigger_name, args);
  fp := att.fingerprint_column;
  minhash := att.method = 'minhash';
  scope := att.scope_column;
  registry := att.registry;
  on_duplicate := att.on_duplicate;
  key_type := 'text';
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
  WHERE s.table_name = attach_checks.table_name AND s.text_column = attach_checks.text_column;
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
  WHERE t.tgrelid IN (SELECT attach_checks.table_name UNION ALL SELECT p.relid FROM pg_partition_tree(table_name) p)
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
    IF octet_length(names.checked_view) > 63 THEN
      RAISE EXCEPTION 'simhash_attach: table and column names "%", "%" are too long to derive the registry''s view name from',
        rel_name, text_column USING ERRCODE = '42622';
    END IF;
    IF NOT EXISTS (SELECT FROM simhash_internal.primary_key(table_name)) THEN
      RAISE EXCEPTION 'simhash_attach: registry => true needs a primary key on "%"', table_name
        USING ERRCODE = '0A000', HINT = 'A rejection names the near-duplicate it found by its key.';
    END IF;
    IF to_regclass(format('%I.%I', rel_schema, names.shards_table)) IS NOT NULL THEN
      RAISE EXCEPTION 'simhash_attach: relation "%" already exists', names.shards_table
        USING ERRCODE = '42P07', HINT = 'registry => true makes a table of that name: rename or drop that one.';
    END IF;
  END IF;

END
$$;
COMMENT ON FUNCTION simhash_internal.attach_checks(regclass, name, bytea) IS
  'Refuses an attach that cannot be made (the table, its Citus distribution, the column, names taken); returns what the attach needs to know of the table';

-- sql/src/attach.sql
CREATE FUNCTION simhash_internal.create_triggers(table_name regclass, args bytea, kind "char", dist_method "char")
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  d record;
  names record;
  arg_list text := (SELECT string_agg(quote_literal(a), ', ') FROM unnest(simhash_internal.trigger_args(args)) a);
  unsafe_triggers text;
BEGIN
  -- The triggers of the attachment that trigger arguments args record, on table_name of relkind
  -- kind and Citus distribution method dist_method (simhash_attach() and simhash_attach_concurrently()):
  -- simhash_trigger() before each row write, and in 'error' mode on an ordinary table (no scope,
  -- registry, Citus or MinHash) simhash_check_trigger(), which checks an INSERT's rows once per
  -- statement (src/write/deferred.rs).
  SELECT * INTO STRICT d FROM simhash_internal.decode_attachment(args);
  SELECT * INTO names FROM simhash_internal.object_names(table_name, d.text_column);
  IF dist_method IS NOT NULL THEN
    -- Citus creates a trigger on a distributed table (and on each shard) only with this setting;
    -- this trigger reads nothing but its own shard.
    unsafe_triggers := current_setting('citus.enable_unsafe_triggers');
    PERFORM set_config('citus.enable_unsafe_triggers', 'on', true);
  END IF;
  EXECUTE format('CREATE TRIGGER %I BEFORE INSERT OR UPDATE ON %s FOR EACH ROW EXECUTE FUNCTION @extschema@.simhash_trigger(%s)',
                 names.trigger_name, table_name, arg_list);
  IF d.on_duplicate = 'error' AND kind = 'r' AND dist_method IS NULL AND d.scope_column IS NULL AND NOT d.registry
     AND d.method <> 'minhash' THEN
    EXECUTE format('CREATE TRIGGER %I AFTER INSERT ON %s FOR EACH ROW EXECUTE FUNCTION @extschema@.simhash_check_trigger(%s)',
                   names.check_trigger_name, table_name, arg_list);
  END IF;
  IF dist_method IS NOT NULL THEN
    PERFORM set_config('citus.enable_unsafe_triggers', unsafe_triggers, true);
  END IF;
END
$$;
COMMENT ON FUNCTION simhash_internal.create_triggers(regclass, bytea, "char", "char") IS
  'Creates the triggers of an attachment (simhash_trigger(), and simhash_check_trigger() where it applies)';

-- sql/src/attach.sql
CREATE FUNCTION simhash_internal.attach_fingerprint_column(att @extschema@.simhash_attachment, dist_method "char")
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  table_name regclass := att.table_name;
  fp name := att.fingerprint_column;
  names record;
BEGIN
  -- The first change of simhash_attach(): the fingerprint (or signature) column, and a registry's
  -- column of the fingerprint it checked. On an ordinary table the rewrite of the next step fills
  -- it (simhash_internal.attach_bands()); on a Citus table an UPDATE fills it here.
  SELECT * INTO names FROM simhash_internal.object_names(table_name, att.text_column);
  EXECUTE format('ALTER TABLE %s ADD COLUMN %I %s%s', table_name, fp, CASE WHEN att.method = 'minhash' THEN 'bytea' ELSE 'bigint' END,
                 CASE WHEN att.registry THEN format(', ADD COLUMN %I bigint', names.registered_column) ELSE '' END);
  IF dist_method IS NOT NULL THEN
    -- A Citus table: an UPDATE on every shard, then the band columns.
    PERFORM simhash_internal.fill(table_name, att.text_column, fp, att.tokenizer, att.shingle, att.weighting, att.stopwords,
                                  att.fold, att.method);
  END IF;
  IF att.registry THEN
    -- The rows already there count as registered (their near-duplicates stay). Before the band
    -- columns, whose rewrite of the table leaves out the row versions these UPDATEs left behind.
    PERFORM simhash_internal.execute_as_owner(table_name, format('UPDATE %s t SET %I = t.%I', table_name,
                                                                 names.registered_column, fp));
  END IF;
END
$$;
COMMENT ON FUNCTION simhash_internal.attach_fingerprint_column(@extschema@.simhash_attachment, "char") IS
  'Adds the fingerprint column of an attachment (filled on a Citus table) and a registry''s registered column';

-- sql/src/attach.sql
CREATE FUNCTION simhash_internal.attach_bands(att @extschema@.simhash_attachment, dist_method "char", key_type text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  table_name regclass := att.table_name;
  text_column name := att.text_column;
  fp name := att.fingerprint_column;
  minhash boolean := att.method = 'minhash';
  bands text;
  compute text;
BEGIN
  -- The band columns of simhash_attach(), generated from the fingerprint, and the flag column (of
  -- type key_type), added in one ALTER TABLE that on an ordinary table also writes every row's
  -- fingerprint: the fingerprint is computed once per row, here for the rows already there, then by
  -- the trigger.
  -- MinHash: one array of the signature's LSH band keys, for one GIN index (docs/ARCHITECTURE.md section 6.11).
  SELECT string_agg(format('ADD COLUMN %I %s GENERATED ALWAYS AS (%s) STORED', b.band_column,
                           CASE WHEN minhash THEN 'bigint[]' ELSE 'int' END, b.expression), ', ')
  INTO bands FROM simhash_internal.band_expressions(att) b;
  IF att.flag_column IS NOT NULL THEN
    bands := bands || format(', ADD COLUMN %I %s', att.flag_column, key_type);
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
    -- scan, and the rewrite takes each row's (simhash_fill_value, src/api/fill.rs).
    RAISE DEBUG 'simhash_attach: fingerprinting';
    PERFORM simhash_internal.fill_collect(table_name, text_column, att.tokenizer, att.shingle, att.weighting,
                                          att.stopwords, att.fold);
    bands := format('ALTER COLUMN %I TYPE bigint USING simhash_internal.fill_value(tableoid, ctid, %I, %L, %s, %L, %L, %L), ',
                    fp, text_column, att.tokenizer, att.shingle, att.weighting, att.stopwords, att.fold) || bands;
  END IF;
  RAISE DEBUG 'simhash_attach: writing fingerprints and bands';
  IF dist_method IS NULL THEN
    -- As the table's owner (docs/ARCHITECTURE.md section 13.3): a generated column or constraint of the
    -- owner's that the rewrite evaluates never runs with the rights of whoever attaches the table.
    PERFORM simhash_internal.execute_as_owner(table_name, format('ALTER TABLE %s %s', table_name, bands));
  ELSE
    EXECUTE format('ALTER TABLE %s %s', table_name, bands);
  END IF;
  PERFORM simhash_internal.fill_reset();
END
$$;
COMMENT ON FUNCTION simhash_internal.attach_bands(@extschema@.simhash_attachment, "char", text) IS
  'Adds the band and flag columns of an attachment, writing every row''s fingerprint and bands in one rewrite of the table';

-- sql/src/attach.sql
CREATE FUNCTION simhash_internal.attach_indexes(att @extschema@.simhash_attachment, dist_column name)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  table_name regclass := att.table_name;
  build_memory text;
BEGIN
  -- The band indexes of simhash_attach() (partitioned indexes on a partitioned table).
  RAISE DEBUG 'simhash_attach: building band indexes';
  IF att.method = 'minhash' THEN
    -- Candidates are the rows sharing a band key with the query (`&&`); the signature, read from
    -- the heap, decides. Without a pending list (fastupdate off) every write and lookup costs the
    -- same: with one, lookups read all of it until the next vacuum (bench/results/minhash_cost.md).
    -- The build sorts the keys in a tree of up to maintenance_work_mem before writing them: one larger
    -- than 64MB (PostgreSQL's default) outgrows the processor's caches and is slower (docs/performance.md).
    build_memory := current_setting('maintenance_work_mem');
    PERFORM set_config('maintenance_work_mem', '64MB', true) WHERE pg_size_bytes(build_memory) > pg_size_bytes('64MB');
    EXECUTE format('CREATE INDEX ON %s USING gin (%I) WITH (fastupdate = off)', table_name, att.band_columns[1]);
    PERFORM set_config('maintenance_work_mem', build_memory, true) WHERE pg_size_bytes(build_memory) > pg_size_bytes('64MB');
  ELSE
    -- Four 16-bit bands serve every distance: a lookup probes each band at the values within a
    -- radius of the query's (generalized pigeonhole, src/method/simhash/search.rs).
    FOR i IN 1 .. cardinality(att.band_columns) LOOP
      -- The fingerprint rides in the index entries: candidates are checked without visiting the heap.
      -- A registry's check also reads the distribution column from them (sql/src/registry.sql).
      EXECUTE format('CREATE INDEX ON %s (%I) INCLUDE (%I%s)', table_name, att.band_columns[i], att.fingerprint_column,
                     CASE WHEN att.registry THEN format(', %I', dist_column) ELSE '' END);
    END LOOP;
  END IF;
END
$$;
COMMENT ON FUNCTION simhash_internal.attach_indexes(@extschema@.simhash_attachment, name) IS
  'Builds the band indexes of an attachment';

-- sql/src/attach.sql
CREATE OR REPLACE FUNCTION simhash_attach(table_name regclass, text_column name, max_distance int DEFAULT NULL,
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
  args bytea;
  names record;
  att @extschema@.simhash_attachment;
  checked record;
BEGIN
  -- An attach, in steps that are functions of schema simhash_internal:
  --   attach_checks              everything that can refuse the attach, before anything changes;
  --   attach_fingerprint_column  the fingerprint column (filled there on a Citus table);
  --   attach_bands               the band and flag columns, in one rewrite of the table that writes
  --                              every row's fingerprint and bands;
  --   attach_indexes             the band indexes;
  --   create_triggers            the triggers;
  --   registry_view, registry_shards  with registry => true, the view that writes go through.
  -- On a partitioned table each step reaches every partition: the columns are inherited, the
  -- indexes partitioned, the trigger cloned.
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

  -- Everything that can refuse the attach, before anything changes. (Its errors, and those of the
  -- lines above, keep the CONTEXT line numbers they had when this function did every step itself:
  -- tests/pg_regress/expected/drop_column.out, minhash_attach.out.)
  SELECT * INTO checked FROM simhash_internal.attach_checks(table_name, text_column, args);
  PERFORM simhash_internal.attach_fingerprint_column(att::@extschema@.simhash_attachment, checked.dist_method::"char");
  PERFORM simhash_internal.attach_bands(att::@extschema@.simhash_attachment, checked.dist_method::"char",
                                        checked.key_type::text);
  PERFORM simhash_internal.attach_indexes(att::@extschema@.simhash_attachment, checked.dist_column::name);
  PERFORM simhash_internal.create_triggers(table_name::regclass, args::bytea, checked.kind::"char",
                                           checked.dist_method::"char");
  IF registry THEN
    -- Writes go through a view of the table's own columns, whose trigger checks the registry on the
    -- coordinator, in the writer's distributed transaction (sql/src/registry.sql).
    PERFORM simhash_internal.registry_view(table_name, text_column);
    PERFORM simhash_internal.registry_shards(table_name, text_column);
  END IF;
END
$$;
COMMENT ON FUNCTION simhash_attach(regclass, name, int, text, text, int, text, boolean, text, name, boolean, int, text, float8) IS
  'Adds a fingerprint column (SimHash) or signature column (MinHash), indexed band columns and the simhash trigger to a table (and its partitions)';

-- sql/src/attach.sql
CREATE FUNCTION simhash_internal.detach_registry(att @extschema@.simhash_attachment)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  names record;
  rel_schema name;
  ddl_propagation text;
  shards_table regclass;
  derived regclass;
  table_owner oid;
BEGIN
  -- What simhash_detach() removes of an attachment with registry => true: the view that writes go
  -- through, named after the table and column, the registry tables of an attachment made before
  -- 0.6.0 whose update left them, and the table of shards.
  SELECT * INTO names FROM simhash_internal.object_names(att.table_name, att.text_column);
  SELECT n.nspname INTO rel_schema
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = att.table_name;
  ddl_propagation := current_setting('citus.enable_ddl_propagation');
  PERFORM set_config('citus.enable_ddl_propagation', 'off', true);
  -- Each only when it is the attachment's, never by its name alone (docs/ARCHITECTURE.md section 13.5):
  -- the view reads the table; the tables belong to the table's owner.
  SELECT c.relowner INTO table_owner FROM pg_class c WHERE c.oid = att.table_name;
  derived := to_regclass(format('%I.%I', rel_schema, names.checked_view));
  IF derived IS NOT NULL AND EXISTS (
       SELECT FROM pg_rewrite r JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = r.oid
       WHERE r.ev_class = derived AND d.refclassid = 'pg_class'::regclass AND d.refobjid = att.table_name) THEN
    EXECUTE format('DROP VIEW %s', derived);
  END IF;
  PERFORM set_config('citus.enable_ddl_propagation', ddl_propagation, true);
  FOREACH derived IN ARRAY ARRAY[to_regclass(format('%I.%I', rel_schema, names.lock_table)),
                                 to_regclass(format('%I.%I', rel_schema, names.registry_table))] LOOP
    CONTINUE WHEN derived IS NULL;
    IF (SELECT c.relowner FROM pg_class c WHERE c.oid = derived) = table_owner THEN
      EXECUTE format('DROP TABLE %s', derived);
    ELSE
      RAISE NOTICE 'simhash_detach: table % is left: its owner is not the owner of %', derived, att.table_name;
    END IF;
  END LOOP;
  shards_table := to_regclass(format('%I.%I', rel_schema, names.shards_table));
  IF obj_description(shards_table, 'pg_class') LIKE 'simhash_ext: one row per shard of %'
     AND (SELECT c.relowner FROM pg_class c WHERE c.oid = shards_table) = table_owner THEN
    EXECUTE format('DROP TABLE %s', shards_table);
  END IF;
END
$$;
COMMENT ON FUNCTION simhash_internal.detach_registry(@extschema@.simhash_attachment) IS
  'Drops the view, the table of shards and any older registry tables of an attachment with registry => true, when they are its own';

-- sql/src/attach.sql
CREATE OR REPLACE FUNCTION simhash_detach(table_name regclass, text_column name DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  att @extschema@.simhash_attachment := simhash_internal.find_attachment(table_name, text_column);
  names record;
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
    PERFORM simhash_internal.detach_registry(att::@extschema@.simhash_attachment);
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

-- sql/src/near_duplicates_sql.sql
CREATE FUNCTION simhash_internal.near_duplicates_probe_sql(att @extschema@.simhash_attachment, fingerprint bigint,
                                                          k int, condition text)
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  nbands int := cardinality(att.band_columns);
  branches text[] := '{}';
  earlier text := '';
  rel text;
  p record;
BEGIN
  -- The query of simhash_near_duplicates_sql() on a table that is not a Citus table: the probes of
  -- fingerprint within k, each row also meeting condition (SQL text, '' for none).
  -- A partitioned table holds no rows itself: its partitions are read, and a filter on the
  -- partition key lets PostgreSQL skip the others (partition pruning) in every branch.
  SELECT CASE WHEN c.relkind = 'p' THEN '' ELSE 'ONLY ' END || att.table_name::text INTO rel
  FROM pg_class c WHERE c.oid = att.table_name;
  -- The probe plan of simhash_near_duplicates(): band i at the values within radius t_i of the
  -- query's, checked on the fingerprint the index entries hold (index-only scans); a fingerprint is
  -- taken from the first band within its radius only. The rows are then fetched by band and value.
  FOR p IN SELECT * FROM @extschema@.simhash_probes(fingerprint, k, nbands) ORDER BY band LOOP
    branches := branches || format('SELECT t.%1$I AS fp FROM %2$s t WHERE t.%3$I = ANY (%4$L::int[]) '
                                   'AND @extschema@.hamming(t.%1$I, (%5$s)::bigint) <= %6$s%7$s%8$s',
      att.fingerprint_column, rel, att.band_columns[p.band + 1], p.probe_values, fingerprint, k, earlier, condition);
    earlier := earlier || format(' AND @extschema@.hamming(@extschema@.simhash_band(t.%I, %s, %s)::bigint, (%s)::bigint) > %s',
      att.fingerprint_column, p.band, nbands, @extschema@.simhash_band(fingerprint, p.band, nbands), p.radius);
  END LOOP;
  IF cardinality(branches) = 0 THEN
    -- Too far for the bands to pay: a scan.
    RETURN format('SELECT t AS item, @extschema@.hamming(t.%1$I, (%2$s)::bigint) AS distance FROM %3$s t '
                  'WHERE @extschema@.hamming(t.%1$I, (%2$s)::bigint) <= %4$s%5$s ORDER BY distance',
                  att.fingerprint_column, fingerprint, rel, k, condition);
  END IF;
  RETURN format(E'SELECT t AS item, @extschema@.hamming(m.fp, (%1$s)::bigint) AS distance\nFROM (SELECT DISTINCT fp FROM (\n%2$s\n) c) m\n'
                 'JOIN %3$s t ON t.%4$I = @extschema@.simhash_band(m.fp, 0, %5$s) AND t.%6$I = m.fp%7$s\nORDER BY distance',
                fingerprint, array_to_string(branches, E'\nUNION ALL\n'), rel, att.band_columns[1], nbands,
                att.fingerprint_column, condition);
END
$$;
COMMENT ON FUNCTION simhash_internal.near_duplicates_probe_sql(@extschema@.simhash_attachment, bigint, int, text) IS
  'The probe plan of simhash_near_duplicates_sql() as an SQL query, for a table that is not a Citus table';

-- sql/src/near_duplicates_sql.sql
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
  rel text;
  condition text := CASE WHEN filter IS NULL THEN '' ELSE format(' AND (%s)', filter) END;
BEGIN
  -- (The lines above the first RAISE keep their count: the CONTEXT line number of its error is in
  -- tests/pg_regress/expected/minhash_attach.out. The probe plan of a table that is not a Citus
  -- table is made by simhash_internal.near_duplicates_probe_sql().)
  IF att.method = 'minhash' THEN
    RAISE EXCEPTION 'column "%" of "%" is attached with method ''minhash'': it has no probe plan of bands',
      att.text_column, att.table_name
      USING ERRCODE = '22023',
            HINT = format('Look it up with simhash_near_duplicates(NULL::%s, doc), or query column %I with the && operator.',
                          att.table_name, att.band_columns[1]);
  END IF;
  IF att.state = 'attaching' THEN
    -- As a lookup refuses (src/attachment.rs, find): rows without a fingerprint would be missed.
    RAISE EXCEPTION 'column "%" of "%" is still being attached', att.text_column, att.table_name
      USING ERRCODE = '55000',
            DETAIL = 'simhash_attach_concurrently() has not finished: some rows have no fingerprint or band index yet.',
            HINT = 'Call simhash_attach_concurrently() again to resume it, or simhash_detach() to remove it.';
  END IF;
  -- Every fingerprint in the SQL below is cast to bigint: hamming() of another role's in the
  -- extension's schema with a closer signature (hamming(bigint, int) for a small literal) is never
  -- chosen (docs/ARCHITECTURE.md section 13.2). Checks k as lookups do (22023), even when there is no
  -- fingerprint to look up.
  PERFORM @extschema@.simhash_probes(0::bigint, k, nbands);
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
    RETURN format('SELECT t AS item, @extschema@.hamming(t.%1$I, (%2$s)::bigint) AS distance FROM %3$s t '
                  'WHERE @extschema@.hamming(t.%1$I, (%2$s)::bigint) <= %4$s%5$s%6$s ORDER BY distance',
                  att.fingerprint_column, fingerprint, att.table_name, k,
                  CASE WHEN rel IS NULL THEN '' ELSE format(' AND (%s)', rel) END, condition);
  END IF;
  RETURN simhash_internal.near_duplicates_probe_sql(att::@extschema@.simhash_attachment, fingerprint::bigint, k::int,
                                                    condition::text);
END
$$;
COMMENT ON FUNCTION simhash_near_duplicates_sql(regclass, bigint, int, name, text) IS
  'The probe plan of simhash_near_duplicates() for a fingerprint, as an SQL query (for EXPLAIN), with an optional condition on the rows';

-- sql/src/ddl.sql
CREATE FUNCTION simhash_internal.prepare_partition_columns(parent regclass, partition regclass,
                                                           att @extschema@.simhash_attachment)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  fp_type regtype;
  fp_wanted regtype;
  added text[];
  b name;
BEGIN
  -- The columns of attachment att that a table about to become a partition of parent lacks
  -- (simhash_internal.prepare_partition()).
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
END
$$;
COMMENT ON FUNCTION simhash_internal.prepare_partition_columns(regclass, regclass, @extschema@.simhash_attachment) IS
  'Adds to a table about to become a partition of an attached table the columns of the attachment it lacks';

-- sql/src/ddl.sql
CREATE FUNCTION simhash_internal.prepare_partition_bands(parent regclass, partition regclass,
                                                         att @extschema@.simhash_attachment)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  bands_constraint oid;
BEGIN
  -- Attached online, the partitioned table keeps its bands in plain columns tied to the fingerprint
  -- by a constraint (sql/src/online.sql), which PostgreSQL wants the partition to have too.
  SELECT k.oid INTO bands_constraint FROM pg_constraint k
  WHERE k.conrelid = parent AND k.conname = att.trigger_name || '$bands';
  IF bands_constraint IS NOT NULL THEN
    PERFORM simhash_internal.execute_as_owner(partition, format('UPDATE ONLY %s SET %s', partition,
      (SELECT string_agg(format('%I = %s', b.band_column, b.expression), ', ')
       FROM simhash_internal.band_expressions(att) b)));
    IF NOT EXISTS (SELECT FROM pg_constraint k WHERE k.conrelid = partition AND k.conname = att.trigger_name || '$bands') THEN
      -- As the partition's owner: adding it evaluates the constraint for every row, and its definition
      -- is the partitioned table's owner's to change.
      PERFORM simhash_internal.execute_as_owner(partition, format('ALTER TABLE %s ADD CONSTRAINT %I %s', partition,
                                                                  att.trigger_name || '$bands',
                                                                  pg_get_constraintdef(bands_constraint)));
    END IF;
  END IF;
END
$$;
COMMENT ON FUNCTION simhash_internal.prepare_partition_bands(regclass, regclass, @extschema@.simhash_attachment) IS
  'Gives a table about to become a partition of a table attached online its bands and bands constraint';

-- sql/src/ddl.sql
CREATE OR REPLACE FUNCTION simhash_internal.prepare_partition(parent regclass, partition regclass)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  att @extschema@.simhash_attachment;
  kind "char";
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
    PERFORM simhash_internal.prepare_partition_columns(parent::regclass, partition::regclass,
                                                       att::@extschema@.simhash_attachment);
    -- Its rows get the fingerprints the trigger would have given them (rows written while it was
    -- not a partition included).
    PERFORM simhash_internal.fill(partition, att.text_column, att.fingerprint_column, att.tokenizer, att.shingle,
                                  att.weighting, att.stopwords, att.fold, att.method);
    PERFORM simhash_internal.prepare_partition_bands(parent::regclass, partition::regclass,
                                                     att::@extschema@.simhash_attachment);
  END LOOP;
END
$$;
COMMENT ON FUNCTION simhash_internal.prepare_partition(regclass, regclass) IS
  'Gives a table about to become a partition of an attached table the columns and fingerprints it needs';

-- sql/src/ddl.sql
CREATE FUNCTION simhash_internal.rename_column_check(table_name regclass, old_name name, new_name name,
                                                     renamed name[], args text[])
RETURNS text[]
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  wanted text[];
  new_names record;
  taken name;
BEGIN
  -- The new names of the columns renamed (those added for column old_name), derived from the
  -- trigger arguments args that name the new text column, once none of them, nor the new
  -- trigger's name, is taken (simhash_internal.rename_column()).
  SELECT array_remove(ARRAY[d.fingerprint_column] || d.band_columns || d.flag_column, NULL) INTO wanted
  FROM simhash_internal.decode_attachment(
         (SELECT string_agg(convert_to(a, getdatabaseencoding()) || '\x00'::bytea, ''::bytea ORDER BY n)
          FROM unnest(args) WITH ORDINALITY u(a, n))) d;
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
  RETURN wanted;
END
$$;
COMMENT ON FUNCTION simhash_internal.rename_column_check(regclass, name, name, name[], text[]) IS
  'The new names of the columns that follow a renamed attached column; refuses the rename when they or its trigger''s are too long or taken';

-- sql/src/ddl.sql
CREATE FUNCTION simhash_internal.rename_column_triggers(table_name regclass, trigger_name name, old_name name,
                                                        new_name name, args text[])
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  old_names record;
  new_names record;
  enabled "char";
BEGIN
  -- The trigger's arguments name the text column: trigger trigger_name is made again with the new
  -- name (simhash_internal.rename_column()), enabled or disabled as it was, and so is the check trigger.
  SELECT * INTO old_names FROM simhash_internal.object_names(table_name, old_name);
  SELECT * INTO new_names FROM simhash_internal.object_names(table_name, new_name);
  SELECT t.tgenabled INTO enabled FROM pg_trigger t WHERE t.tgrelid = table_name AND t.tgname = rename_column_triggers.trigger_name;
  EXECUTE format('DROP TRIGGER %I ON %s', trigger_name, table_name);
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
  -- After an online attach, its bands constraint is named after the trigger (sql/src/online.sql).
  IF EXISTS (SELECT FROM pg_constraint k WHERE k.conrelid = table_name AND k.conname = trigger_name || '$bands') THEN
    EXECUTE format('ALTER TABLE %s RENAME CONSTRAINT %I TO %I', table_name, trigger_name || '$bands',
                   new_names.trigger_name || '$bands');
  END IF;
END
$$;
COMMENT ON FUNCTION simhash_internal.rename_column_triggers(regclass, name, name, name, text[]) IS
  'Remakes the triggers of an attached column being renamed with trigger arguments that name the new column, and renames its bands constraint';

-- sql/src/ddl.sql
CREATE OR REPLACE FUNCTION simhash_internal.rename_column(table_name regclass, old_name name, new_name name)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  att @extschema@.simhash_attachment;
  trig record;
  renamed name[];
  args text[];
  wanted text[];
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
    wanted := simhash_internal.rename_column_check(table_name::regclass, old_name::name, new_name::name,
                                                   renamed::name[], args::text[]);
    FOR i IN 1 .. cardinality(wanted) LOOP
      EXECUTE format('ALTER TABLE %s RENAME COLUMN %I TO %I', table_name, renamed[i], wanted[i]);
    END LOOP;
    PERFORM simhash_internal.rename_column_triggers(table_name::regclass, att.trigger_name::name, old_name::name,
                                                    new_name::name, args::text[]);
  END LOOP;
END
$$;
COMMENT ON FUNCTION simhash_internal.rename_column(regclass, name, name) IS
  'Before an attached text column is renamed, renames the columns derived from it and remakes its trigger';

-- sql/src/registry.sql
CREATE FUNCTION simhash_internal.registry_search_shards(base regclass, text_column name, shards_table_name name,
  fp bigint, k int, OUT searched boolean, OUT distance int)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  shards_table regclass;
  shard_ids bigint[];
  searched_ids bigint[] := '{}';
  shard record;
BEGIN
  searched := false;
  shards_table := to_regclass(format('%I.%I', (SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                                                WHERE c.oid = base), shards_table_name));
  IF shards_table IS NULL THEN
    RETURN;
  END IF;
  EXECUTE format('SELECT array_agg(s.shardid) FROM pg_dist_shard s WHERE s.logicalrelid = %s', base::oid)
    INTO shard_ids;
  FOR shard IN EXECUTE format('SELECT a.shard, simhash_internal.probe_shard(a.shard, %L::regclass, %L, %s, %s) AS distance FROM %s a',
                              base, text_column, fp, k, shards_table) LOOP
    CONTINUE WHEN shard.distance IS NULL OR NOT shard.shard = ANY (shard_ids) OR shard.shard = ANY (searched_ids);
    searched_ids := searched_ids || shard.shard;
    IF shard.distance <= k AND shard.distance < coalesce(distance, k + 1) THEN
      distance := shard.distance;
    END IF;
  END LOOP;
  -- (No shards known for the table, as after undistribute_table: the caller searches.)
  searched := coalesce(cardinality(searched_ids) = cardinality(shard_ids), false);
END
$$;
COMMENT ON FUNCTION simhash_internal.registry_search_shards(regclass, name, name, bigint, int) IS
  'The registry check''s search of every shard of a Citus table through its table of shards';

-- sql/src/registry.sql
CREATE FUNCTION simhash_internal.registry_probe_sql(base regclass, att @extschema@.simhash_attachment,
  dist_column name, fp bigint, k int)
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  probe text;
BEGIN
  SELECT string_agg(format('SELECT s.%1$I AS d, s.%2$I AS fp FROM %3$s s WHERE s.%4$I = ANY (%5$L::int[]) '
                           'AND @extschema@.hamming(s.%2$I, (%6$s)::bigint) <= %7$s',
                           dist_column, att.fingerprint_column, base, att.band_columns[p.band + 1], p.probe_values, fp, k),
                    ' UNION ALL ' ORDER BY p.band)
  INTO probe FROM @extschema@.simhash_probes(fp, k, cardinality(att.band_columns)) p;
  IF probe IS NULL THEN
    -- Too far for the bands to pay (simhash_probes plans a scan): every fingerprint is compared.
    probe := format('SELECT s.%1$I AS d, s.%2$I AS fp FROM %3$s s WHERE @extschema@.hamming(s.%2$I, (%4$s)::bigint) <= %5$s',
                    dist_column, att.fingerprint_column, base, fp, k);
  END IF;
  RETURN probe;
END
$$;
COMMENT ON FUNCTION simhash_internal.registry_probe_sql(regclass, @extschema@.simhash_attachment, name, bigint, int) IS
  'The probes of a registry check on every shard, as one query';

-- sql/src/registry.sql
CREATE FUNCTION simhash_internal.registry_nearest(base regclass, att @extschema@.simhash_attachment,
  checked_view name, shards_table name, fp bigint, OUT key text, OUT distance int)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  k int := att.max_distance;
  searched boolean;
  dist_column name;
  probe text;
  pool_size text;
BEGIN
  -- Each statement on a worker must see what committed before it: the wait below orders the
  -- writers, and a snapshot kept from before a wait would miss the writer waited for.
  IF current_setting('transaction_isolation') <> 'read committed' THEN
    RAISE EXCEPTION 'writes through % need the READ COMMITTED isolation level',
      format('%I.%I', (SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                       WHERE c.oid = base), checked_view)
      USING ERRCODE = '0A000',
            DETAIL = format('The near-duplicate check of column %I searches every shard, and Citus has no snapshot '
                            'across nodes that a %s transaction could keep.', att.text_column,
                            upper(current_setting('transaction_isolation'))),
            HINT = 'Write through the view in a READ COMMITTED transaction (SET TRANSACTION ISOLATION LEVEL READ COMMITTED).';
  END IF;
  -- The locks one node's trigger takes, here on the coordinator that every write through the view
  -- passes: a near-duplicate writer holding one of them has finished on every worker (Citus
  -- commits the workers before the coordinator releases its locks) when this one is granted.
  PERFORM simhash_internal.lock_near_duplicates(base, fp, k);
  -- One connection per worker: the shards' tasks are short, and a connection opened for this
  -- statement alone would cost more than they do (a Citus setting, put back right after).
  pool_size := current_setting('citus.max_adaptive_executor_pool_size');
  PERFORM set_config('citus.max_adaptive_executor_pool_size', '1', true);
  SELECT s.searched, s.distance INTO searched, distance
  FROM simhash_internal.registry_search_shards(base, att.text_column, shards_table, fp, k) s;
  IF NOT searched OR distance IS NOT NULL THEN
    SELECT d.distribution_column INTO dist_column FROM simhash_internal.distribution(base) d;
    probe := simhash_internal.registry_probe_sql(base, att, dist_column, fp, k);
  END IF;
  IF NOT searched THEN
    EXECUTE format('SELECT @extschema@.hamming(m.fp, (%s)::bigint) AS distance FROM (%s) m ORDER BY distance LIMIT 1', fp, probe)
      INTO distance;
  END IF;
  PERFORM set_config('citus.max_adaptive_executor_pool_size', pool_size, true);
  IF distance IS NOT NULL THEN
    -- The nearest rows' keys (in key order on ties), read only when there is one.
    EXECUTE format('SELECT %1$s FROM (%2$s) m JOIN %3$s t ON t.%4$I = m.d AND t.%5$I = m.fp '
                   'AND t.%6$I = @extschema@.simhash_band(m.fp, 0, %7$s) '
                   'WHERE @extschema@.hamming(m.fp, (%8$s)::bigint) = %9$s ORDER BY 1 LIMIT 1',
                   simhash_internal.row_key_sql(base, 't'), probe, base, dist_column, att.fingerprint_column,
                   att.band_columns[1], cardinality(att.band_columns), fp, distance)
      INTO key;
  END IF;
END
$$;
COMMENT ON FUNCTION simhash_internal.registry_nearest(regclass, @extschema@.simhash_attachment, name, name, bigint) IS
  'The registry check of a fingerprint written through the view of a registry attachment';

-- sql/src/registry.sql
CREATE FUNCTION simhash_internal.registry_write(base regclass, view_oid oid, att @extschema@.simhash_attachment,
  registered_column name, fp bigint, found_key text, new_row anyelement)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  columns text;
  row_values text;
  flag_type text;
BEGIN
  SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum),
         format('SELECT concat_ws('', '', %s)', string_agg(format('quote_nullable(($1).%I) || ''::%s''', a.attname,
                                                                   format_type(a.atttypid, a.atttypmod)), ', ' ORDER BY a.attnum))
  INTO columns, row_values
  FROM pg_attribute a WHERE a.attrelid = view_oid AND a.attnum > 0 AND NOT a.attisdropped;
  EXECUTE row_values INTO row_values USING new_row;
  SELECT format_type(a.atttypid, a.atttypmod) INTO flag_type FROM pg_attribute a
  WHERE a.attrelid = base AND a.attname = att.flag_column AND NOT a.attisdropped;
  EXECUTE format('INSERT INTO %s (%s, %I%s) VALUES (%s, %s%s)', base, columns, registered_column,
                 CASE WHEN att.on_duplicate = 'flag' THEN format(', %I', att.flag_column) ELSE '' END,
                 row_values, quote_nullable(fp),
                 CASE WHEN att.on_duplicate = 'flag' THEN format(', CAST(%s AS %s)', quote_nullable(found_key), flag_type) ELSE '' END);
END
$$;
COMMENT ON FUNCTION simhash_internal.registry_write(regclass, oid, @extschema@.simhash_attachment, name, bigint, text, anyelement) IS
  'Writes a row checked by the registry into its distributed table';

-- sql/src/registry.sql
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
  names record;
  fp bigint;
  short boolean;
  found_key text;
  found_distance int;
BEGIN
  SELECT * INTO names FROM simhash_internal.object_names(base, att.text_column);
  EXECUTE format('SELECT %s', simhash_internal.fingerprint_sql(format('($1).%I', att.text_column), 'simhash', att.tokenizer,
                 att.shingle, att.weighting, att.stopwords, att.fold))
    INTO fp USING NEW;
  IF fp IS NOT NULL THEN
    -- A text shorter than min_length is written (and found by later checks) but never checked.
    EXECUTE format('SELECT char_length(($1).%I) < $2', att.text_column) INTO short USING NEW, att.min_length;
  END IF;
  IF fp IS NOT NULL AND NOT short THEN
    SELECT n.key, n.distance INTO found_key, found_distance
    FROM simhash_internal.registry_nearest(base, att, names.checked_view, names.shards_table, fp) n;
    IF found_key IS NOT NULL AND att.on_duplicate = 'error' THEN
      RAISE EXCEPTION 'near-duplicate text in column "%" of relation "%"', att.text_column,
        (SELECT c.relname FROM pg_class c WHERE c.oid = base)
        USING ERRCODE = '23505',
              DETAIL = format('Key (%s)=(%s) is at Hamming distance %s (max_distance %s).',
                              (SELECT string_agg(quote_ident(p.attname), ', ' ORDER BY p.ord)
                               FROM simhash_internal.primary_key(base) p),
                              found_key, found_distance, att.max_distance);
    ELSIF found_key IS NOT NULL AND att.on_duplicate = 'skip' THEN
      RETURN NULL;
    END IF;
  END IF;
  PERFORM simhash_internal.registry_write(base, TG_RELID, att, names.registered_column, fp, found_key, NEW);
  RETURN NEW;
END
$$;
COMMENT ON FUNCTION simhash_internal.registry_insert() IS
  'The INSTEAD OF INSERT trigger of the view of a distributed table attached with registry => true';

-- sql/src/registry.sql
CREATE FUNCTION simhash_internal.registry_view_sync(table_name regclass, view_oid oid, checked_view text, derived name[])
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  col record;
  columns text;
BEGIN
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
END
$$;
COMMENT ON FUNCTION simhash_internal.registry_view_sync(regclass, oid, text, name[]) IS
  'Brings the columns of the view of a registry attachment in step with the table';

-- sql/src/registry.sql
CREATE FUNCTION simhash_internal.registry_view_defaults(table_name regclass, checked_view text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  col record;
BEGIN
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
END
$$;
COMMENT ON FUNCTION simhash_internal.registry_view_defaults(regclass, text) IS
  'Gives the columns of the view of a registry attachment the table''s defaults';

-- sql/src/registry.sql
CREATE OR REPLACE FUNCTION simhash_internal.registry_view(table_name regclass, text_column name)
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
  view_oid oid;
  coordinator boolean;
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
  -- The view is named after the table and its trigger names the table: a table renamed (or moved
  -- to another schema) would leave behind a view under the old name, writing to a name that is gone.
  IF EXISTS (SELECT FROM pg_trigger t JOIN pg_class v ON v.oid = t.tgrelid
             WHERE t.tgfoid = 'simhash_internal.registry_insert()'::regprocedure
               AND (simhash_internal.trigger_args(t.tgargs))[2] = text_column::text
               AND v.oid IS DISTINCT FROM to_regclass(checked_view)
               AND EXISTS (SELECT FROM pg_depend d JOIN pg_rewrite r ON r.oid = d.objid
                           WHERE d.classid = 'pg_rewrite'::regclass AND r.ev_class = v.oid AND d.refobjid = table_name)) THEN
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
    PERFORM simhash_internal.registry_view_sync(table_name, view_oid, checked_view, derived);
  END IF;
  PERFORM simhash_internal.registry_view_defaults(table_name, checked_view);
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

-- sql/src/online.sql
-- simhash_attach_concurrently() (src/online.rs): the steps of an online attach that are SQL, and
-- the progress a DBA can watch. docs/ARCHITECTURE.md section 14 is the design.

CREATE FUNCTION simhash_internal.online_resume(table_name regclass, text_column name, args bytea)
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  existing @extschema@.simhash_attachment;
BEGIN
  -- An online attach of the column that has not finished (running elsewhere, cancelled, crashed)
  -- is resumed when its settings are these: 'resumed'. NULL when there is none to resume or finish.
  SELECT s.* INTO existing FROM @extschema@.simhash_attachments() s
  WHERE s.table_name = online_resume.table_name AND s.text_column = online_resume.text_column;
  -- A finished one too, while its bands constraint says it was made online: a call cancelled while
  -- it waited for the last writers then gets that wait (and returns once they are done): 'finished'.
  IF FOUND AND existing.state = 'attached'
     AND EXISTS (SELECT FROM pg_constraint k WHERE k.conrelid = table_name AND k.conname = existing.trigger_name || '$bands')
     AND (SELECT t.tgargs FROM pg_trigger t WHERE t.tgrelid = table_name AND t.tgname = existing.trigger_name) = args THEN
    RETURN 'finished';
  END IF;
  IF FOUND AND existing.state = 'attaching' THEN
    IF (SELECT t.tgargs FROM pg_trigger t WHERE t.tgrelid = table_name AND t.tgname = existing.trigger_name)
       IS DISTINCT FROM args THEN
      RAISE EXCEPTION 'simhash_attach_concurrently: column "%" of "%" is being attached with other settings',
        text_column, table_name
        USING ERRCODE = '42710',
              HINT = 'Call it with the settings of simhash_attachments() to resume that attach, or remove it with simhash_detach().';
    END IF;
    RETURN 'resumed';
  END IF;
  RETURN NULL;
END
$$;
COMMENT ON FUNCTION simhash_internal.online_resume(regclass, name, bytea) IS
  'Whether an online attach with these trigger arguments is to be resumed (''resumed'') or only waited for (''finished''); NULL when there is none';

CREATE FUNCTION simhash_internal.online_add_columns(att @extschema@.simhash_attachment, args bytea, key_type text,
                                                    kind "char", dist_method "char", lock_timeout_ms int)
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  minhash boolean := att.method = 'minhash';
  columns text;
  bands_check text;
BEGIN
  -- Plain columns, added without a rewrite: the trigger keeps the bands, and the constraint (NOT VALID
  -- until the attach has finished; enforced on every write from now on) ties them to the fingerprint
  -- as generated columns would. 'begun', or 'locked' when the lock was not had in time.
  SELECT format('ADD COLUMN %I %s, ', att.fingerprint_column, CASE WHEN minhash THEN 'bytea' ELSE 'bigint' END)
         || string_agg(format('ADD COLUMN %I %s', b.band_column, CASE WHEN minhash THEN 'bigint[]' ELSE 'int' END), ', '),
         string_agg(format('%I IS NOT DISTINCT FROM %s', b.band_column, b.expression), ' AND ')
  INTO columns, bands_check
  FROM simhash_internal.band_expressions(att) b;
  IF att.flag_column IS NOT NULL THEN
    columns := columns || format(', ADD COLUMN %I %s', att.flag_column, key_type);
  END IF;
  -- The one step that takes a lock the application's reads and writes wait for: bounded by
  -- lock_timeout, and tried again by the caller when it expires.
  PERFORM set_config('lock_timeout', lock_timeout_ms || 'ms', true);
  BEGIN
    EXECUTE format('ALTER TABLE %s %s, ADD CONSTRAINT %I CHECK (%s) NOT VALID', att.table_name, columns,
                   att.trigger_name || '$bands', bands_check);
    PERFORM simhash_internal.create_triggers(att.table_name::regclass, args::bytea, kind::"char", dist_method::"char");
  EXCEPTION WHEN lock_not_available THEN
    RETURN 'locked';
  END;
  RETURN 'begun';
END
$$;
COMMENT ON FUNCTION simhash_internal.online_add_columns(@extschema@.simhash_attachment, bytea, text, "char", "char", int) IS
  'The columns, bands constraint (NOT VALID) and triggers of an online attach, under a lock_timeout: ''begun'', or ''locked'' when the lock was not had in time';

CREATE FUNCTION simhash_internal.online_begin(table_name regclass, text_column name, max_distance int, on_duplicate text,
                                              tokenizer text, shingle int, weighting text, stopwords boolean,
                                              fold text, scope name, registry boolean, min_length int,
                                              method text, threshold float8, lock_timeout_ms int)
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  args bytea;
  names record;
  att @extschema@.simhash_attachment;
  resume text;
  checked record;
BEGIN
  IF table_name IS NULL OR text_column IS NULL THEN
    RAISE EXCEPTION 'simhash_attach_concurrently: table_name and text_column must not be NULL' USING ERRCODE = '22004';
  END IF;
  args := simhash_internal.encode_attachment(text_column, method, max_distance, threshold, on_duplicate, tokenizer,
                                             shingle, weighting, stopwords, fold, scope, registry, min_length);
  SELECT * INTO names FROM simhash_internal.object_names(table_name, text_column);
  SELECT * INTO STRICT att FROM simhash_internal.attachment(table_name, names.trigger_name, args);
  -- An online attach of the column to resume, or to wait for.
  resume := simhash_internal.online_resume(table_name::regclass, text_column::name, args::bytea);
  IF resume IS NOT NULL THEN
    RETURN resume;
  END IF;
  -- Everything simhash_attach() refuses (an attachment already there included).
  SELECT * INTO checked FROM simhash_internal.attach_checks(table_name::regclass, text_column::name, args::bytea);
  IF checked.dist_method IS NOT NULL THEN
    RAISE EXCEPTION 'simhash_attach_concurrently: "%" is a Citus table', table_name
      USING ERRCODE = '0A000', HINT = 'Attach it with simhash_attach(): Citus tables keep the offline attach.';
  END IF;
  -- Attachment::bands_constraint_name (src/attachment.rs)
  IF octet_length(att.trigger_name || '$bands') > 63 THEN
    RAISE EXCEPTION 'simhash_attach_concurrently: column name "%" is too long for the name of constraint "%"',
      text_column, att.trigger_name || '$bands' USING ERRCODE = '42622', HINT = 'Attach it with simhash_attach(), or rename the column.';
  END IF;
  RETURN simhash_internal.online_add_columns(att::@extschema@.simhash_attachment, args::bytea, checked.key_type::text,
                                             checked.kind::"char", checked.dist_method::"char", lock_timeout_ms::int);
END
$$;
COMMENT ON FUNCTION simhash_internal.online_begin(regclass, name, int, text, text, int, text, boolean, text, name, boolean, int, text, float8, int) IS
  'The first step of simhash_attach_concurrently(): checks, then the columns, the bands constraint (NOT VALID) and the triggers under a lock_timeout; ''resumed'' for an attach to resume, ''finished'' for one that only has its last wait left, ''locked'' when the lock was not had in time';

CREATE FUNCTION simhash_internal.relation_tree(table_name regclass)
RETURNS TABLE (relid regclass, parentrelid regclass, isleaf boolean, level int)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
  -- pg_partition_tree(), and for a table outside any partition tree (for which it has no row) the table.
  SELECT p.relid, p.parentrelid, p.isleaf, p.level FROM pg_partition_tree(table_name) p
  UNION ALL
  SELECT table_name, NULL, true, 0 WHERE NOT EXISTS (SELECT FROM pg_partition_tree(table_name))
$$;
COMMENT ON FUNCTION simhash_internal.relation_tree(regclass) IS
  'The partition tree of a table as pg_partition_tree() gives it, or the table alone when it is in none';

CREATE FUNCTION simhash_internal.qualified(relid oid)
RETURNS text
LANGUAGE sql STABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT format('%I.%I', n.nspname, c.relname) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE c.oid = relid
$$;
COMMENT ON FUNCTION simhash_internal.qualified(oid) IS 'A relation''s name with its schema, quoted, whatever the search path';

CREATE FUNCTION simhash_internal.band_index(relid regclass, band_column name, OUT index_oid oid, OUT valid boolean)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
  -- An index of relid whose first key is the band column (a valid one first).
  SELECT i.indexrelid, i.indisvalid
  FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
  WHERE i.indrelid = relid AND a.attname = band_column
  ORDER BY i.indisvalid DESC, i.indexrelid
  LIMIT 1
$$;
COMMENT ON FUNCTION simhash_internal.band_index(regclass, name) IS 'The index of a band column of a table, if it has one';

CREATE FUNCTION simhash_internal.online_next_index_step(table_name regclass, text_column name,
                                                        OUT statement text, OUT top_level boolean)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  att @extschema@.simhash_attachment := simhash_internal.find_attachment(table_name, text_column);
  b name;
  definition text;
  rel record;
  idx record;
  parent_idx record;
BEGIN
  -- The next statement that builds the band indexes, read from the catalog each time (so an attach
  -- resumes where it stopped): for each band, an index ON ONLY each partitioned table, then one built
  -- concurrently on each table that holds rows (an INVALID one left by a cancelled build dropped
  -- first), then each attached to its parent's, deepest first. NULL when every index is there and valid.
  -- Relations are named with their schema (a temporary table's too): the statements run top-level,
  -- under the caller's search path.
  FOREACH b IN ARRAY att.band_columns LOOP
    definition := CASE WHEN att.method = 'minhash' THEN format('USING gin (%I) WITH (fastupdate = off)', b)
                       ELSE format('(%I) INCLUDE (%I)', b, att.fingerprint_column) END;
    FOR rel IN SELECT p.relid, c.relkind FROM simhash_internal.relation_tree(table_name) p JOIN pg_class c ON c.oid = p.relid
               ORDER BY p.level, p.relid LOOP
      SELECT * INTO idx FROM simhash_internal.band_index(rel.relid, b);
      IF rel.relkind = 'p' AND idx.index_oid IS NULL THEN
        statement := format('CREATE INDEX ON ONLY %s %s', simhash_internal.qualified(rel.relid), definition);
        top_level := false;
        RETURN;
      ELSIF rel.relkind = 'r' AND idx.index_oid IS NOT NULL AND NOT idx.valid THEN
        statement := format('DROP INDEX CONCURRENTLY %s', simhash_internal.qualified(idx.index_oid));
        top_level := true;
        RETURN;
      ELSIF rel.relkind = 'r' AND idx.index_oid IS NULL THEN
        statement := format('CREATE INDEX CONCURRENTLY ON %s %s', simhash_internal.qualified(rel.relid), definition);
        top_level := true;
        RETURN;
      END IF;
    END LOOP;
    FOR rel IN SELECT p.relid, p.parentrelid FROM simhash_internal.relation_tree(table_name) p
               WHERE p.level > 0 ORDER BY p.level DESC, p.relid LOOP
      SELECT * INTO idx FROM simhash_internal.band_index(rel.relid, b);
      SELECT * INTO parent_idx FROM simhash_internal.band_index(rel.parentrelid, b);
      IF idx.valid AND NOT EXISTS (SELECT FROM pg_inherits h WHERE h.inhrelid = idx.index_oid
                                                               AND h.inhparent = parent_idx.index_oid) THEN
        statement := format('ALTER INDEX %s ATTACH PARTITION %s', simhash_internal.qualified(parent_idx.index_oid),
                            simhash_internal.qualified(idx.index_oid));
        top_level := false;
        RETURN;
      END IF;
    END LOOP;
  END LOOP;
END
$$;
COMMENT ON FUNCTION simhash_internal.online_next_index_step(regclass, name) IS
  'The next statement that builds the band indexes of an online attach (NULL when they are all there and valid)';

CREATE FUNCTION simhash_internal.run_locked(table_name regclass, statement text, lock_timeout_ms int)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  -- A catalog change of an online attach under a lock_timeout: false when the lock was not had in time.
  PERFORM set_config('lock_timeout', lock_timeout_ms || 'ms', true);
  BEGIN
    EXECUTE statement;
  EXCEPTION WHEN lock_not_available THEN
    RETURN false;
  END;
  RETURN true;
END
$$;
COMMENT ON FUNCTION simhash_internal.run_locked(regclass, text, int) IS
  'Runs a catalog change of simhash_attach_concurrently() under a lock_timeout (false when the lock was not had)';

CREATE FUNCTION simhash_internal.online_fill_targets(table_name regclass, text_column name)
RETURNS TABLE (leaf regclass, statement text, sweep text, blocks bigint, tuples float8)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  att @extschema@.simhash_attachment := simhash_internal.find_attachment(table_name, text_column);
  placeholder text := CASE WHEN att.method = 'minhash' THEN '''\x''::pg_catalog.bytea' ELSE '0::pg_catalog.int8' END;
BEGIN
  -- Each table that holds rows, with the UPDATEs that fingerprint its rows: they write a placeholder
  -- into the fingerprint column of the rows that lack one, and the trigger, seeing the column
  -- changed, computes the true value and the bands (src/write/trigger.rs): each row fingerprinted once, by
  -- the same code as every write. statement does one range of blocks ($1 to $2, block numbers) and
  -- passes over the rows the application has locked (never waiting on it, it never deadlocks with
  -- it); sweep does the rows left, waiting for their locks.
  RETURN QUERY
  SELECT p.relid::regclass,
         format('UPDATE ONLY %1$s t SET %2$I = %3$s WHERE t.ctid OPERATOR(pg_catalog.=) ANY (ARRAY('
                'SELECT r.ctid FROM ONLY %1$s r WHERE r.ctid OPERATOR(pg_catalog.>=) '
                'pg_catalog.format(''(%%s,0)'', $1)::pg_catalog.tid AND r.ctid OPERATOR(pg_catalog.<) '
                'pg_catalog.format(''(%%s,0)'', $2)::pg_catalog.tid AND r.%2$I IS NULL AND r.%4$I IS NOT NULL '
                'FOR UPDATE SKIP LOCKED))',
                p.relid::regclass, att.fingerprint_column, placeholder, att.text_column),
         format('UPDATE ONLY %1$s t SET %2$I = %3$s WHERE t.%2$I IS NULL AND t.%4$I IS NOT NULL',
                p.relid::regclass, att.fingerprint_column, placeholder, att.text_column),
         pg_relation_size(p.relid) / current_setting('block_size')::int,
         c.reltuples::float8
  FROM simhash_internal.relation_tree(table_name) p JOIN pg_class c ON c.oid = p.relid
  WHERE c.relkind = 'r'
  ORDER BY p.level, p.relid;
END
$$;
COMMENT ON FUNCTION simhash_internal.online_fill_targets(regclass, name) IS
  'The tables of an online attach that hold rows, with the UPDATEs that fingerprint a range of blocks of each and the rows left';

CREATE FUNCTION simhash_internal.online_validate(table_name regclass, text_column name)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  att @extschema@.simhash_attachment := simhash_internal.find_attachment(table_name, text_column);
BEGIN
  -- The last step of an online attach: every row's bands agree with its fingerprint (a scan that takes
  -- SHARE UPDATE EXCLUSIVE, which no read or write waits for), and the trigger checks from its commit on.
  -- As the table's owner in a security-restricted operation (docs/ARCHITECTURE.md section 13.3): validating a
  -- CHECK constraint evaluates it for every row as the current user, and between the steps of the
  -- attach the owner could have put an expression of its own under that name.
  PERFORM simhash_internal.execute_as_owner(table_name, format('ALTER TABLE %s VALIDATE CONSTRAINT %I', table_name,
                                                               att.trigger_name || '$bands'));
END
$$;
COMMENT ON FUNCTION simhash_internal.online_validate(regclass, name) IS
  'Validates the bands constraint of an online attach: the attach is finished from its commit on';

CREATE TABLE simhash_internal.attach_progress (
  table_name oid NOT NULL,
  text_column name NOT NULL,
  pid int NOT NULL,
  phase text NOT NULL,
  detail text,
  rows_done bigint,
  rows_total bigint,
  started timestamptz NOT NULL,
  updated timestamptz NOT NULL,
  PRIMARY KEY (table_name, text_column)
);
REVOKE ALL ON simhash_internal.attach_progress FROM PUBLIC;
COMMENT ON TABLE simhash_internal.attach_progress IS
  'simhash_ext: where each online attach is (written by simhash_attach_concurrently(); read through simhash_attach_progress)';

CREATE VIEW simhash_attach_progress WITH (security_barrier) AS
  SELECT p.table_name::regclass AS table_name, p.text_column, p.pid, p.running,
         p.phase, p.detail, p.rows_done, p.rows_total,
         pg_catalog.round(100.0 OPERATOR(pg_catalog.*) p.rows_done OPERATOR(pg_catalog./)
                          NULLIF(p.rows_total, 0), 1) AS percent,
         p.started, p.updated
  FROM (SELECT q.*,
               -- The call holds its session lock (src/online.rs, Job: advisory, field4 0x5349) while it
               -- runs, and lets go of it when it returns or fails.
               EXISTS (SELECT FROM pg_catalog.pg_locks l
                       WHERE l.locktype OPERATOR(pg_catalog.=) 'advisory' AND l.pid OPERATOR(pg_catalog.=) q.pid
                         AND l.objsubid OPERATOR(pg_catalog.=) 21321
                         AND l.classid OPERATOR(pg_catalog.=) q.table_name AND l.granted) AS running
        FROM simhash_internal.attach_progress q) p
  JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) p.table_name
  -- Only the attaches of tables the reader may read or owns (a security barrier: no condition of the
  -- reader's is evaluated on the other rows), and only those running or not finished:
  -- the row of an attach removed by simhash_detach() is left here and never shown (the next attach
  -- replaces it).
  WHERE (pg_catalog.pg_has_role(c.relowner, 'USAGE') OR pg_catalog.has_table_privilege(c.oid, 'SELECT'))
    AND (p.running
         OR EXISTS (SELECT FROM pg_catalog.pg_constraint k
                    WHERE k.conrelid OPERATOR(pg_catalog.=) p.table_name AND NOT k.convalidated
                      -- Attachment::bands_constraint_name (src/attachment.rs)
                      AND k.conname OPERATOR(pg_catalog.=) ('simhash_' OPERATOR(pg_catalog.||) p.text_column
                                                           OPERATOR(pg_catalog.||) '$bands')));
GRANT SELECT ON simhash_attach_progress TO PUBLIC;
COMMENT ON VIEW simhash_attach_progress IS
  'The online attaches (simhash_attach_concurrently()) that have not finished: phase, rows done of total, and whether the call still runs';

CREATE PROCEDURE simhash_attach_concurrently(table_name regclass, text_column name, max_distance int DEFAULT NULL,
                                             on_duplicate text DEFAULT 'none', tokenizer text DEFAULT NULL,
                                             shingle int DEFAULT NULL, weighting text DEFAULT NULL,
                                             stopwords boolean DEFAULT NULL, fold text DEFAULT NULL,
                                             scope name DEFAULT NULL, registry boolean DEFAULT false,
                                             min_length int DEFAULT 0, method text DEFAULT 'simhash',
                                             threshold float8 DEFAULT NULL)
LANGUAGE c AS 'MODULE_PATHNAME', 'simhash_attach_concurrently';
COMMENT ON PROCEDURE simhash_attach_concurrently(regclass, name, int, text, text, int, text, boolean, text, name, boolean, int, text, float8) IS
  'simhash_attach() without an outage: brief locks, fingerprints written in committed batches, band indexes built concurrently; call it again to resume';
