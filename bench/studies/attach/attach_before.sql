-- simhash_attach() and simhash_fill() as of commit 11d0355 (before the one-rewrite attach), verbatim
-- but for their schema: created in schema attach_before, calling attach_before.simhash_fill() and the
-- extension's other functions in public. bench/studies/attach/attach.py times attach_before.simhash_attach() against
-- the extension's own simhash_attach() on the same table, in the same run.
CREATE SCHEMA attach_before;

CREATE FUNCTION attach_before.simhash_fill(table_name regclass, text_column name, fingerprint_column name, tokenizer text,
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
  IF (SELECT d.method FROM public.simhash_distribution(table_name) d) IS NOT NULL THEN
    -- A Citus table: one UPDATE that Citus runs on every shard (the fingerprint is computed there).
    EXECUTE format('UPDATE %s t SET %I = public.simhash(t.%I, %L, %s, %L, %L, %L)',
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
                   'SELECT ctid AS row_id, public.simhash(%I, %L, %s, %L, %L, %L) AS fp FROM ONLY %s',
                   text_column, tokenizer, shingle, weighting, stopwords, fold, leaf);
    EXECUTE format('UPDATE ONLY %s t SET %2$I = f.fp FROM simhash_attach_fill f '
                   'WHERE t.ctid = f.row_id AND t.%2$I IS DISTINCT FROM f.fp', leaf, fingerprint_column);
    DROP TABLE simhash_attach_fill;
  END LOOP;
END
$$;

CREATE FUNCTION attach_before.simhash_attach(table_name regclass, text_column name, max_distance int DEFAULT 7,
                               on_duplicate text DEFAULT 'none', tokenizer text DEFAULT 'bigram',
                               shingle int DEFAULT 1, weighting text DEFAULT 'logtf',
                               stopwords boolean DEFAULT true, fold text DEFAULT 'auto', scope name DEFAULT NULL,
                               registry boolean DEFAULT false)
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
  checked_view text;
  view_columns text;
  default_value record;
  ddl_propagation text;
  dist_method "char";
  dist_column name;
  unsafe_triggers text;
  scope_type regtype;
  fp name := text_column || '_simhash';
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
  IF max_distance IS NULL OR max_distance < 0 OR max_distance > 16 THEN
    RAISE EXCEPTION 'invalid value for option "max_distance": %; allowed: an integer from 0 to 16',
      coalesce(max_distance::text, 'NULL') USING ERRCODE = '22023';
  END IF;
  IF on_duplicate IS NULL OR on_duplicate NOT IN ('none', 'error', 'skip', 'flag') THEN
    RAISE EXCEPTION 'invalid value for option "on_duplicate": %; allowed: ''none'', ''error'', ''skip'', ''flag''',
      coalesce(quote_literal(on_duplicate), 'NULL') USING ERRCODE = '22023';
  END IF;
  IF tokenizer IS NULL OR shingle IS NULL OR weighting IS NULL OR stopwords IS NULL OR fold IS NULL THEN
    RAISE EXCEPTION 'simhash_attach: fingerprint options must not be NULL' USING ERRCODE = '22004';
  END IF;
  -- Checks the fingerprint options (raises 22023 naming a bad one).
  PERFORM public.simhash('', tokenizer, shingle, weighting, stopwords, fold);

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
  FROM public.simhash_distribution(table_name) d;
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
  IF EXISTS (SELECT FROM public.simhash_attachments() s
             WHERE s.table_name = simhash_attach.table_name AND s.text_column = simhash_attach.text_column) THEN
    RAISE EXCEPTION 'column "%" of "%" is already attached', text_column, table_name
      USING ERRCODE = '42710', HINT = 'Detach it first with simhash_detach().';
  END IF;
  IF octet_length(text_column) > 63 - length('_duplicate_of') THEN
    RAISE EXCEPTION 'simhash_attach: column name "%" is too long to derive column names from', text_column
      USING ERRCODE = '42622';
  END IF;

  -- Four 16-bit bands serve every distance: a lookup probes each band at the values within a
  -- radius of the query's (generalized pigeonhole, src/search.rs).
  nbands := 4;
  -- Every name the attach would create is checked before anything changes (a partition has the
  -- columns of its partitioned table, but triggers of its own).
  wanted := ARRAY[fp] || ARRAY(SELECT (text_column || '_band' || i)::name FROM generate_series(0, nbands - 1) i)
            || CASE WHEN on_duplicate = 'flag' THEN ARRAY[(text_column || '_duplicate_of')::name] ELSE '{}' END
            || CASE WHEN registry THEN ARRAY[(text_column || '_registered')::name] ELSE '{}' END;
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
    AND t.tgname = 'simhash_' || text_column
  LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'simhash_attach: trigger "%" for relation "%" already exists', 'simhash_' || text_column, taken_in
      USING ERRCODE = '42710', HINT = 'Rename or drop that trigger first.';
  END IF;
  IF EXISTS (SELECT FROM pg_trigger t WHERE t.tgrelid = table_name AND t.tgname = 'simhash_' || text_column || '$chk') THEN
    RAISE EXCEPTION 'simhash_attach: trigger "%" for relation "%" already exists', 'simhash_' || text_column || '$chk',
      table_name USING ERRCODE = '42710', HINT = 'Rename or drop that trigger first.';
  END IF;
  IF on_duplicate = 'flag' AND (SELECT count(*) FROM public.simhash_primary_key(table_name)) = 1 THEN
    SELECT p.atttype INTO key_type FROM public.simhash_primary_key(table_name) p;
  END IF;
  IF registry THEN
    SELECT n.nspname, c.relname INTO rel_schema, rel_name
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = table_name;
    IF octet_length(rel_name || '_' || text_column || '_registry_locks') > 63 THEN
      RAISE EXCEPTION 'simhash_attach: table and column names "%", "%" are too long to derive the registry''s names from',
        rel_name, text_column USING ERRCODE = '42622';
    END IF;
    IF NOT EXISTS (SELECT FROM public.simhash_primary_key(table_name)) THEN
      RAISE EXCEPTION 'simhash_attach: registry => true needs a primary key on "%"', table_name
        USING ERRCODE = '0A000', HINT = 'The registry names the rows it holds by their key.';
    END IF;
    registry_table := format('%I.%I', rel_schema, rel_name || '_' || text_column || '_registry');
    lock_table := format('%I.%I', rel_schema, rel_name || '_' || text_column || '_registry_locks');
    checked_view := format('%I.%I', rel_schema, rel_name || '_' || text_column || '_checked');
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
  PERFORM attach_before.simhash_fill(table_name, text_column, fp, tokenizer, shingle, weighting, stopwords, fold);
  SELECT string_agg(format('ADD COLUMN %I int GENERATED ALWAYS AS (public.simhash_band(%I, %s, %s)) STORED',
                           text_column || '_band' || i, fp, i, nbands), ', ' ORDER BY i)
  INTO bands FROM generate_series(0, nbands - 1) i;
  IF on_duplicate = 'flag' THEN
    bands := bands || format(', ADD COLUMN %I %s', text_column || '_duplicate_of', key_type);
  END IF;
  IF registry THEN
    bands := bands || format(', ADD COLUMN %I bigint', text_column || '_registered');
  END IF;
  EXECUTE format('ALTER TABLE %s %s', table_name, bands);
  FOR i IN 0 .. nbands - 1 LOOP
    -- The fingerprint rides in the index entries: candidates are checked without visiting the heap.
    EXECUTE format('CREATE INDEX ON %s (%I) INCLUDE (%I)', table_name, text_column || '_band' || i, fp);
  END LOOP;
  IF dist_method IS NOT NULL THEN
    -- Citus creates a trigger on a distributed table (and on each shard) only with this setting;
    -- this trigger reads nothing but its own shard.
    unsafe_triggers := current_setting('citus.enable_unsafe_triggers');
    PERFORM set_config('citus.enable_unsafe_triggers', 'on', true);
  END IF;
  EXECUTE format('CREATE TRIGGER %I BEFORE INSERT OR UPDATE ON %s FOR EACH ROW '
                 'EXECUTE FUNCTION public.simhash_trigger(%L, %L, %L, %L, %L, %L, %L, %L, %L%s)',
                 'simhash_' || text_column, table_name, text_column, nbands, max_distance, on_duplicate,
                 tokenizer, shingle, weighting, CASE WHEN stopwords THEN 'true' ELSE 'false' END, fold,
                 CASE WHEN registry THEN ', '''', ''registry''' WHEN scope IS NOT NULL THEN format(', %L', scope)
                      ELSE '' END);
  IF dist_method IS NOT NULL THEN
    PERFORM set_config('citus.enable_unsafe_triggers', unsafe_triggers, true);
  END IF;
  IF registry THEN
    -- The rows already there: registered, and filed in the registry (their near-duplicates stay).
    EXECUTE format('UPDATE %s t SET %I = t.%I', table_name, text_column || '_registered', fp);
    EXECUTE format('INSERT INTO %s (lock_key, part_value, fingerprint, row_key) '
                   'SELECT b.lock_key, b.part_value, t.%I, concat_ws('', '', %s) FROM %s t '
                   'CROSS JOIN LATERAL public.simhash_registry_buckets(t.%I, %s) b WHERE t.%I IS NOT NULL',
                   registry_table, fp,
                   (SELECT string_agg(format('t.%I::text', k.attname), ', ' ORDER BY k.ord)
                    FROM public.simhash_primary_key(table_name) k),
                   table_name, fp, max_distance, fp);
    -- Writes go through a view of the table's own columns, whose trigger checks the registry on the
    -- coordinator, in the writer's distributed transaction. The view stays on the coordinator: Citus
    -- would copy it to the workers, which do not need it, and refuses its column defaults.
    ddl_propagation := current_setting('citus.enable_ddl_propagation');
    PERFORM set_config('citus.enable_ddl_propagation', 'off', true);
    SELECT string_agg(format('t.%I', a.attname), ', ' ORDER BY a.attnum) INTO view_columns
    FROM pg_attribute a WHERE a.attrelid = table_name AND a.attnum > 0 AND NOT a.attisdropped
      AND NOT (a.attname = ANY (wanted));
    EXECUTE format('CREATE VIEW %s AS SELECT %s FROM %s t', checked_view, view_columns, table_name);
    FOR default_value IN SELECT a.attname, pg_get_expr(ad.adbin, ad.adrelid) AS expr
             FROM pg_attribute a JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
             WHERE a.attrelid = table_name AND a.attgenerated = '' AND NOT (a.attname = ANY (wanted)) LOOP
      EXECUTE format('ALTER VIEW %s ALTER COLUMN %I SET DEFAULT %s', checked_view, default_value.attname,
                     default_value.expr);
    END LOOP;
    EXECUTE format('CREATE TRIGGER %I INSTEAD OF INSERT ON %s FOR EACH ROW '
                   'EXECUTE FUNCTION public.simhash_registry_insert(%L, %L, %L, %L, %L, %L, %L, %L, %L, %L, %L)',
                   'simhash_' || text_column, checked_view, table_name::text, text_column, max_distance, on_duplicate,
                   tokenizer, shingle, weighting, CASE WHEN stopwords THEN 'true' ELSE 'false' END, fold,
                   registry_table, lock_table);
    PERFORM set_config('citus.enable_ddl_propagation', ddl_propagation, true);
  END IF;
  IF on_duplicate = 'error' AND kind = 'r' AND NOT is_partition AND dist_method IS NULL AND scope IS NULL
     AND NOT registry THEN
    -- The duplicate check of INSERTs, once per statement for all its rows (src/deferred.rs).
    EXECUTE format('CREATE TRIGGER %I AFTER INSERT ON %s FOR EACH ROW '
                   'EXECUTE FUNCTION public.simhash_check_trigger(%L, %L, %L, %L, %L, %L, %L, %L, %L)',
                   'simhash_' || text_column || '$chk', table_name, text_column, nbands, max_distance, on_duplicate,
                   tokenizer, shingle, weighting, CASE WHEN stopwords THEN 'true' ELSE 'false' END, fold);
  END IF;
END
$$;
