-- simhash_ext 0.7.0 -> 0.8.0 (docs/ARCHITECTURE.md §12.1, §13): the extension's SQL runs nothing of
-- another role's. simhash_internal.execute_as_owner() runs an UPDATE or ALTER TABLE for a table as its
-- owner in a security-restricted operation: simhash_attach() (its rewrite of the table) and
-- simhash_internal.fill() (a new partition, a Citus table; without a temporary table, which such an
-- operation may not create) use it. The SQL they and the lookups build casts every argument of the
-- extension's own functions to its declared type, so that no function of the same name another role
-- made in the extension's schema is chosen. simhash_detach() drops a registry's view and tables only
-- when they belong to the attachment. The rest of 0.8.0 (the checks of lookups, the owner's rights in
-- the duplicate check, the lock tag) is in the library.
\echo Use "ALTER EXTENSION simhash_ext UPDATE TO '0.8.0'" to load this file. \quit

-- src/internal.rs
CREATE  FUNCTION simhash_internal."execute_as_owner"(
	"table_name" regclass, /* RegClass */
	"statement" text /* Text */
) RETURNS void
STRICT VOLATILE PARALLEL UNSAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'execute_as_owner_wrapper';

-- sql/src/fill.sql
CREATE OR REPLACE FUNCTION simhash_internal.fingerprint_sql(text_expr text, method text, tokenizer text, shingle int,
                                                 weighting text, stopwords boolean, fold text)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
  -- What the trigger stores for a text: its SimHash fingerprint or its MinHash signature. Every
  -- argument is cast to the declared type: a function of the same name that another role made in
  -- the extension's schema with a closer signature is never chosen (docs/ARCHITECTURE.md §13.2).
  SELECT CASE method
    WHEN 'minhash' THEN format('@extschema@.minhash((%s)::pg_catalog.text, %L::pg_catalog.text, %s::pg_catalog.int4, '
                                '%L::pg_catalog.bool, %L::pg_catalog.text, 128)', text_expr, tokenizer, shingle, stopwords, fold)
    ELSE format('@extschema@.simhash((%s)::pg_catalog.text, %L::pg_catalog.text, %s::pg_catalog.int4, %L::pg_catalog.text, '
                '%L::pg_catalog.bool, %L::pg_catalog.text)', text_expr, tokenizer, shingle, weighting, stopwords, fold)
  END
$$;

-- sql/src/fill.sql
CREATE OR REPLACE FUNCTION simhash_internal.fill(table_name regclass, text_column name, fingerprint_column name, tokenizer text,
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
  -- Each UPDATE runs as the table's owner (execute_as_owner): a trigger of the owner's that it fires
  -- never runs with the rights of whoever attached the table or partition.
  IF (SELECT d.method FROM simhash_internal.distribution(table_name) d) IS NOT NULL THEN
    -- A Citus table: one UPDATE that Citus runs on every shard (the fingerprint is computed there).
    PERFORM simhash_internal.execute_as_owner(table_name, format('UPDATE %s t SET %I = %s', table_name,
                                                                 fingerprint_column, compute));
    RETURN;
  END IF;
  -- Every table that holds rows: the table itself, or the leaf partitions of a partitioned one.
  FOR leaf IN SELECT c.oid FROM pg_class c WHERE c.oid = table_name AND c.relkind = 'r'
              UNION ALL
              SELECT p.relid FROM pg_partition_tree(table_name) p JOIN pg_class c ON c.oid = p.relid
              WHERE p.isleaf AND c.relkind = 'r' AND p.relid <> table_name LOOP
    -- Only the rows that lack the right value are written (the fingerprint computed once per row);
    -- the table is locked (the caller altered it), so the row ctids stay valid.
    PERFORM simhash_internal.execute_as_owner(leaf, format(
      'UPDATE ONLY %1$s t SET %2$I = f.fp FROM (SELECT t.ctid AS row_id, %3$s AS fp FROM ONLY %1$s t) f '
      'WHERE t.ctid OPERATOR(pg_catalog.=) f.row_id AND t.%2$I IS DISTINCT FROM f.fp', leaf, fingerprint_column, compute));
  END LOOP;
END
$$;

-- sql/src/fill.sql
CREATE OR REPLACE FUNCTION simhash_internal.fill_collect(table_name regclass, text_column name, tokenizer text, shingle int,
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
                   'FROM (SELECT tableoid, ctid, %s AS fp FROM ONLY %s OFFSET 0) s',
                   simhash_internal.fingerprint_sql(quote_ident(text_column), 'simhash', tokenizer, shingle, weighting,
                                                    stopwords, fold), leaf);
  END LOOP;
END
$$;

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
  nbands int;
  rel_schema name;
  rel_name name;
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

  -- The fingerprint is computed once per row: here for the rows already there, then by the trigger;
  -- the band columns are generated from it. On a partitioned table each statement below reaches
  -- every partition: the columns are inherited, the indexes partitioned, the trigger cloned.
  EXECUTE format('ALTER TABLE %s ADD COLUMN %I %s%s', table_name, fp, CASE WHEN minhash THEN 'bytea' ELSE 'bigint' END,
                 CASE WHEN registry THEN format(', ADD COLUMN %I bigint', names.registered_column) ELSE '' END);
  IF dist_method IS NOT NULL THEN
    -- A Citus table: an UPDATE on every shard, then the band columns.
    PERFORM simhash_internal.fill(table_name, text_column, fp, att.tokenizer, att.shingle, att.weighting, att.stopwords,
                                  att.fold, att.method);
  END IF;
  IF registry THEN
    -- The rows already there count as registered (their near-duplicates stay). Before the band
    -- columns, whose rewrite of the table leaves out the row versions these UPDATEs left behind.
    PERFORM simhash_internal.execute_as_owner(table_name, format('UPDATE %s t SET %I = t.%I', table_name,
                                                                 names.registered_column, fp));
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
  IF dist_method IS NULL THEN
    -- As the table's owner (docs/ARCHITECTURE.md §13.3): a generated column or constraint of the
    -- owner's that the rewrite evaluates never runs with the rights of whoever attaches the table.
    PERFORM simhash_internal.execute_as_owner(table_name, format('ALTER TABLE %s %s', table_name, bands));
  ELSE
    EXECUTE format('ALTER TABLE %s %s', table_name, bands);
  END IF;
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
      -- A registry's check also reads the distribution column from them (sql/src/registry.sql).
      EXECUTE format('CREATE INDEX ON %s (%I) INCLUDE (%I%s)', table_name, att.band_columns[i], fp,
                     CASE WHEN registry THEN format(', %I', dist_column) ELSE '' END);
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
    -- Writes go through a view of the table's own columns, whose trigger checks the registry on the
    -- coordinator, in the writer's distributed transaction (sql/src/registry.sql).
    PERFORM simhash_internal.registry_view(table_name, text_column);
    PERFORM simhash_internal.registry_shards(table_name, text_column);
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

-- sql/src/attach.sql
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
  shards_table regclass;
  derived regclass;
  table_owner oid;
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
    -- The view that writes go through, named after the table and column, the registry tables
    -- of an attachment made before 0.6.0 whose update left them, and the table of shards.
    SELECT n.nspname INTO rel_schema
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = att.table_name;
    ddl_propagation := current_setting('citus.enable_ddl_propagation');
    PERFORM set_config('citus.enable_ddl_propagation', 'off', true);
    -- Each only when it is the attachment's, never by its name alone (docs/ARCHITECTURE.md §13.5): the
    -- view reads the table; the tables belong to the table's owner.
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
  -- Every fingerprint in the SQL below is cast to bigint: hamming() of another role's in the
  -- extension's schema with a closer signature (hamming(bigint, int) for a small literal) is never
  -- chosen (docs/ARCHITECTURE.md §13.2). Checks k as lookups do (22023), even when there is no
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
  text_column name := att.text_column;
  k int := att.max_distance;
  mode text := att.on_duplicate;
  nbands int := cardinality(att.band_columns);
  names record;
  dist_column name;
  fp bigint;
  probe text;
  key_columns text;
  found_key text;
  found_distance int;
  columns text;
  flag_type text;
  short boolean;
  pool_size text;
  shards_table regclass;
  shard_ids bigint[];
  searched_ids bigint[];
  searched boolean := false;
  shard record;
BEGIN
  SELECT * INTO names FROM simhash_internal.object_names(base, text_column);
  EXECUTE format('SELECT %s', simhash_internal.fingerprint_sql(format('($1).%I', text_column), 'simhash', att.tokenizer, att.shingle,
                 att.weighting, att.stopwords, att.fold))
    INTO fp USING NEW;
  IF fp IS NOT NULL THEN
    -- A text shorter than min_length is written (and found by later checks) but never checked.
    EXECUTE format('SELECT char_length(($1).%I) < $2', text_column) INTO short USING NEW, att.min_length;
  END IF;
  IF fp IS NOT NULL AND NOT short THEN
    -- Each statement on a worker must see what committed before it: the wait below orders the
    -- writers, and a snapshot kept from before a wait would miss the writer waited for.
    IF current_setting('transaction_isolation') <> 'read committed' THEN
      RAISE EXCEPTION 'writes through % need the READ COMMITTED isolation level',
        format('%I.%I', (SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                         WHERE c.oid = base), names.checked_view)
        USING ERRCODE = '0A000',
              DETAIL = format('The near-duplicate check of column %I searches every shard, and Citus has no snapshot '
                              'across nodes that a %s transaction could keep.', text_column,
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
    -- Each shard searched by simhash_internal.probe_shard() on its node, as a lookup searches one
    -- table: one call per row of <table>_<column>_shards, which is colocated with the table, so
    -- Citus runs each call in the connection that wrote that shard in this transaction. It counts
    -- only if every shard of the table answered (after a split, or with that table gone, the
    -- query below searches instead).
    shards_table := to_regclass(format('%I.%I', (SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                                                  WHERE c.oid = base), names.shards_table));
    IF shards_table IS NOT NULL THEN
      EXECUTE format('SELECT array_agg(s.shardid) FROM pg_dist_shard s WHERE s.logicalrelid = %s', base::oid)
        INTO shard_ids;
      searched_ids := '{}';
      FOR shard IN EXECUTE format('SELECT a.shard, simhash_internal.probe_shard(a.shard, %L::regclass, %L, %s, %s) AS distance FROM %s a',
                                  base, text_column, fp, k, shards_table) LOOP
        CONTINUE WHEN shard.distance IS NULL OR NOT shard.shard = ANY (shard_ids) OR shard.shard = ANY (searched_ids);
        searched_ids := searched_ids || shard.shard;
        IF shard.distance <= k AND shard.distance < coalesce(found_distance, k + 1) THEN
          found_distance := shard.distance;
        END IF;
      END LOOP;
      -- (No shards known for the table, as after undistribute_table: the query below searches.)
      searched := coalesce(cardinality(searched_ids) = cardinality(shard_ids), false);
    END IF;
    IF NOT searched OR found_distance IS NOT NULL THEN
      -- The probes of a lookup, one index-only scan of a band index per band, on every shard in one
      -- round (with the distribution column in each branch, Citus runs the UNION on each shard).
      SELECT d.distribution_column INTO dist_column FROM simhash_internal.distribution(base) d;
      SELECT string_agg(format('SELECT s.%1$I AS d, s.%2$I AS fp FROM %3$s s WHERE s.%4$I = ANY (%5$L::int[]) '
                               'AND @extschema@.hamming(s.%2$I, (%6$s)::bigint) <= %7$s',
                               dist_column, att.fingerprint_column, base, att.band_columns[p.band + 1], p.probe_values, fp, k),
                        ' UNION ALL ' ORDER BY p.band)
      INTO probe FROM @extschema@.simhash_probes(fp, k, nbands) p;
      IF probe IS NULL THEN
        -- Too far for the bands to pay (simhash_probes plans a scan): every fingerprint is compared.
        probe := format('SELECT s.%1$I AS d, s.%2$I AS fp FROM %3$s s WHERE @extschema@.hamming(s.%2$I, (%4$s)::bigint) <= %5$s',
                        dist_column, att.fingerprint_column, base, fp, k);
      END IF;
    END IF;
    IF NOT searched THEN
      EXECUTE format('SELECT @extschema@.hamming(m.fp, (%s)::bigint) AS distance FROM (%s) m ORDER BY distance LIMIT 1', fp, probe)
        INTO found_distance;
    END IF;
    PERFORM set_config('citus.max_adaptive_executor_pool_size', pool_size, true);
    IF found_distance IS NOT NULL THEN
      -- The nearest rows' keys (in key order on ties), read only when there is one.
      EXECUTE format('SELECT %1$s FROM (%2$s) m JOIN %3$s t ON t.%4$I = m.d AND t.%5$I = m.fp '
                     'AND t.%6$I = @extschema@.simhash_band(m.fp, 0, %7$s) '
                     'WHERE @extschema@.hamming(m.fp, (%8$s)::bigint) = %9$s ORDER BY 1 LIMIT 1',
                     simhash_internal.row_key_sql(base, 't'), probe, base, dist_column, att.fingerprint_column,
                     att.band_columns[1], nbands, fp, found_distance)
        INTO found_key;
    END IF;
    IF found_key IS NOT NULL AND mode = 'error' THEN
      SELECT string_agg(quote_ident(p.attname), ', ' ORDER BY p.ord) INTO key_columns FROM simhash_internal.primary_key(base) p;
      RAISE EXCEPTION 'near-duplicate text in column "%" of relation "%"', text_column,
        (SELECT c.relname FROM pg_class c WHERE c.oid = base)
        USING ERRCODE = '23505',
              DETAIL = format('Key (%s)=(%s) is at Hamming distance %s (max_distance %s).', key_columns, found_key,
                              found_distance, k);
    ELSIF found_key IS NOT NULL AND mode = 'skip' THEN
      RETURN NULL;
    END IF;
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
