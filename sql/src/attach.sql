-- simhash_attach(), simhash_internal.find_attachment() and simhash_detach().
CREATE FUNCTION simhash_internal.band_expressions(att @extschema@.simhash_attachment)
RETURNS TABLE (band_column name, expression text)
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
  -- Each band column of an attachment with the expression of its value: generated from it by
  -- simhash_attach(), kept by the trigger and tied to it by a constraint after an online attach.
  -- Every argument is given (and typed): ATTACH PARTITION parses the expression again as
  -- pg_get_expr() prints it, and a function another role added to the extension's schema with one
  -- argument fewer must not make that call ambiguous.
  SELECT b.name, CASE WHEN att.method = 'minhash'
                      THEN format('@extschema@.minhash_bands(%I, 32, 4)', att.fingerprint_column)
                      ELSE format('@extschema@.simhash_band(%I, %s, %s)', att.fingerprint_column, b.i - 1,
                                  cardinality(att.band_columns)) END
  FROM unnest(att.band_columns) WITH ORDINALITY b(name, i)
  ORDER BY b.i
$$;
COMMENT ON FUNCTION simhash_internal.band_expressions(simhash_attachment) IS
  'The band columns of an attachment, each with the SQL expression of its value';

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
    -- Rows are in one scope when their values are equal by the type's default equality: a domain's base type's, asked of that type (casting NULL to the table owner's domain would run its CHECK as the caller).
    BEGIN
      EXECUTE format('SELECT NULL::%1$s = NULL::%1$s', (WITH RECURSIVE b(t) AS (SELECT scope_type::oid UNION ALL SELECT y.typbasetype FROM b JOIN pg_type y ON y.oid = b.t AND y.typtype = 'd') SELECT b.t::regtype FROM b JOIN pg_type y ON y.oid = b.t AND y.typtype <> 'd'));
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
  -- simhash_trigger() before each row write, and in every mode that checks (not on the registry,
  -- checked on the coordinator) simhash_check_trigger(), which checks each written row after its
  -- write, at the end of its statement; Citus makes both on every shard of a distributed table.
  SELECT * INTO STRICT d FROM simhash_internal.decode_attachment(args);
  SELECT * INTO names FROM simhash_internal.object_names(table_name, d.text_column);
  IF dist_method IS NOT NULL THEN
    -- Citus creates a trigger on a distributed table (and on each shard) only with this setting;
    -- these triggers read nothing but their own shard.
    unsafe_triggers := current_setting('citus.enable_unsafe_triggers');
    PERFORM set_config('citus.enable_unsafe_triggers', 'on', true);
  END IF;
  EXECUTE format('CREATE TRIGGER %I BEFORE INSERT OR UPDATE ON %s FOR EACH ROW EXECUTE FUNCTION @extschema@.simhash_trigger(%s)',
                 names.trigger_name, table_name, arg_list);
  IF d.on_duplicate <> 'none' AND kind IN ('r', 'p') AND NOT d.registry THEN
    EXECUTE format('CREATE TRIGGER %I AFTER INSERT OR UPDATE ON %s FOR EACH ROW EXECUTE FUNCTION @extschema@.simhash_check_trigger(%s)',
                   names.check_trigger_name, table_name, arg_list);
  END IF;
  IF dist_method IS NOT NULL THEN
    PERFORM set_config('citus.enable_unsafe_triggers', unsafe_triggers, true);
  END IF;
END
$$;
COMMENT ON FUNCTION simhash_internal.create_triggers(regclass, bytea, "char", "char") IS
  'Creates the triggers of an attachment (simhash_trigger(), and simhash_check_trigger() where it applies)';

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
  -- MinHash: one array of the signature's LSH band keys, for one GIN index.
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
    -- scan, and the rewrite takes each row's from them (simhash_internal.fill_value).
    RAISE DEBUG 'simhash_attach: fingerprinting';
    PERFORM simhash_internal.fill_collect(table_name, text_column, att.tokenizer, att.shingle, att.weighting,
                                          att.stopwords, att.fold);
    bands := format('ALTER COLUMN %I TYPE bigint USING simhash_internal.fill_value(tableoid, ctid, %I, %L, %s, %L, %L, %L), ',
                    fp, text_column, att.tokenizer, att.shingle, att.weighting, att.stopwords, att.fold) || bands;
  END IF;
  RAISE DEBUG 'simhash_attach: writing fingerprints and bands';
  IF dist_method IS NULL THEN
    -- As the table's owner, in a security-restricted operation: a generated column or constraint of the
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
    -- same: with one, every lookup reads all of that list until the next vacuum.
    -- The build sorts the keys in a tree of up to maintenance_work_mem before writing them: one larger
    -- than 64MB (PostgreSQL's default) outgrows the processor's caches and is slower: 64MB at most.
    build_memory := current_setting('maintenance_work_mem');
    PERFORM set_config('maintenance_work_mem', '64MB', true) WHERE pg_size_bytes(build_memory) > pg_size_bytes('64MB');
    EXECUTE format('CREATE INDEX ON %s USING gin (%I) WITH (fastupdate = off)', table_name, att.band_columns[1]);
    PERFORM set_config('maintenance_work_mem', build_memory, true) WHERE pg_size_bytes(build_memory) > pg_size_bytes('64MB');
  ELSE
    -- Four 16-bit bands serve every distance: a lookup probes each band at the values within a
    -- radius of the query's (generalized pigeonhole: k differing bits leave a band within its radius).
    FOR i IN 1 .. cardinality(att.band_columns) LOOP
      -- The fingerprint rides in the index entries: candidates are checked without visiting the heap.
      -- A registry's check also reads the distribution column from them.
      EXECUTE format('CREATE INDEX ON %s (%I) INCLUDE (%I%s)', table_name, att.band_columns[i], att.fingerprint_column,
                     CASE WHEN att.registry THEN format(', %I', dist_column) ELSE '' END);
    END LOOP;
  END IF;
END
$$;
COMMENT ON FUNCTION simhash_internal.attach_indexes(@extschema@.simhash_attachment, name) IS
  'Builds the band indexes of an attachment';

CREATE FUNCTION simhash_internal.report_existing(table_name regclass, text_column name, max_rows bigint)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  att @extschema@.simhash_attachment;
  pairs bigint;
  rows_in bigint;
BEGIN
  -- The near-duplicates a checking attachment finds already in its table (issue 50): a unique index
  -- refuses to build over duplicates; an attach keeps them, and says so. They stay until removed,
  -- and an UPDATE of the text of one of them is checked as any write. Counting them is a whole
  -- simhash_pairs(): with max_rows (simhash_attach(), whose lock the count would prolong) only a
  -- table of at most max_rows rows is counted.
  att := simhash_internal.find_attachment(table_name, text_column);
  IF att.on_duplicate = 'none' OR att.registry
     OR (SELECT d.method FROM simhash_internal.distribution(table_name) d) IS NOT NULL THEN
    RETURN;
  END IF;
  IF max_rows IS NOT NULL THEN
    EXECUTE format('SELECT count(*) FROM (SELECT FROM %s LIMIT %s) r', table_name, max_rows + 1) INTO rows_in;
    IF rows_in > max_rows THEN
      RAISE NOTICE '%', format('table %s has over %s rows: near-duplicates already among them, if any, were not counted', table_name, max_rows)
        USING DETAIL = 'They stay: the check applies to new writes, and to an UPDATE of their text.',
              HINT = format('List them with SELECT * FROM simhash_pairs(%L, text_column => %L).', table_name::text, text_column);
      RETURN;
    END IF;
  END IF;
  SELECT count(DISTINCT (p.key_a, p.key_b)), count(DISTINCT k.key) INTO pairs, rows_in
  FROM @extschema@.simhash_pairs(table_name, text_column => text_column::text) p
  CROSS JOIN LATERAL (VALUES (p.key_a), (p.key_b)) k(key);
  IF pairs > 0 THEN
    RAISE NOTICE '%', format('%s rows of table %s already have a near-duplicate in column %I: %s %s', rows_in,
                             table_name, text_column, pairs, CASE WHEN pairs = 1 THEN 'pair' ELSE 'pairs' END)
      USING DETAIL = 'They stay: the check applies to new writes, and to an UPDATE of their text.',
            HINT = format('List them with SELECT * FROM simhash_pairs(%L, text_column => %L); simhash_clusters() groups them to keep one row of each.',
                          table_name::text, text_column);
  END IF;
END
$$;
COMMENT ON FUNCTION simhash_internal.report_existing(regclass, name, bigint) IS
  'After a checking attach: a NOTICE of the rows already in the table that have a near-duplicate';

CREATE FUNCTION simhash_attach(table_name regclass, text_column name, max_distance int DEFAULT NULL,
                               on_duplicate text DEFAULT 'none', tokenizer text DEFAULT NULL,
                               shingle int DEFAULT NULL, weighting text DEFAULT NULL,
                               stopwords boolean DEFAULT NULL, fold text DEFAULT NULL, scope name DEFAULT NULL,
                               registry boolean DEFAULT false, min_length int DEFAULT 0,
                               method text DEFAULT 'simhash', threshold float8 DEFAULT NULL,
                               verify boolean DEFAULT NULL)
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
  -- The trigger's arguments, which record the attachment's settings: made first, as they
  -- check the method, max_distance or threshold, on_duplicate, the text options (NULL: the
  -- method's default), min_length, and the length of the names derived from the column (42622).
  -- The names, and the options with their defaults filled in, come from them.
  args := simhash_internal.encode_attachment(text_column, method, max_distance, threshold, on_duplicate, tokenizer,
                                             shingle, weighting, stopwords, fold, scope, registry, min_length,
                                             verify);
  SELECT * INTO names FROM simhash_internal.object_names(table_name, text_column);
  SELECT * INTO STRICT att FROM simhash_internal.attachment(table_name, names.trigger_name, args);

  -- Everything that can refuse the attach, before anything changes. (Its errors, and those of the
  -- lines above, keep the CONTEXT line numbers they had when this function did every step itself:
  -- the expected outputs of the regression tests show them.)
  SELECT * INTO checked FROM simhash_internal.attach_checks(table_name, text_column, args);
  PERFORM simhash_internal.attach_fingerprint_column(att::@extschema@.simhash_attachment, checked.dist_method::"char");
  PERFORM simhash_internal.attach_bands(att::@extschema@.simhash_attachment, checked.dist_method::"char",
                                        checked.key_type::text);
  PERFORM simhash_internal.attach_indexes(att::@extschema@.simhash_attachment, checked.dist_column::name);
  PERFORM simhash_internal.create_triggers(table_name::regclass, args::bytea, checked.kind::"char",
                                           checked.dist_method::"char");
  IF registry THEN
    -- Writes go through a view of the table's own columns, whose trigger checks the registry on the
    -- coordinator, in the writer's distributed transaction (simhash_internal.registry_insert()).
    PERFORM simhash_internal.registry_view(table_name, text_column);
    PERFORM simhash_internal.registry_shards(table_name, text_column);
  END IF;
  PERFORM simhash_internal.report_existing(table_name, text_column, 100000);
END
$$;
COMMENT ON FUNCTION simhash_attach(regclass, name, int, text, text, int, text, boolean, text, name, boolean, int, text, float8, boolean) IS
  'Adds a fingerprint column (SimHash) or signature column (MinHash), indexed band columns and the simhash trigger to a table (and its partitions)';

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
  -- Each only when it is the attachment's, never by its name alone (another object may have it):
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

CREATE FUNCTION simhash_detach(table_name regclass, text_column name DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  att @extschema@.simhash_attachment := simhash_internal.find_attachment(table_name, text_column);
  names record;
  dropped text;
  pending record;
BEGIN
  IF EXISTS (SELECT FROM pg_trigger t WHERE t.tgrelid = att.table_name AND t.tgname = att.trigger_name
                                        AND t.tgparentid <> 0) THEN
    RAISE EXCEPTION 'simhash_detach: "%" is a partition of attached table "%"', table_name, pg_partition_root(table_name)
      USING ERRCODE = '42809', HINT = format('Detach %s: that removes everything from its partitions too.',
                                             pg_partition_root(table_name));
  END IF;
  -- A partition left pending by a cancelled DETACH PARTITION ... CONCURRENTLY is not reached by the
  -- parent's DROP COLUMN: it would keep the columns. Refused until that detach is finished.
  WITH RECURSIVE tree(relid) AS (
    SELECT att.table_name::oid
    UNION ALL
    SELECT i.inhrelid FROM pg_inherits i JOIN tree t ON i.inhparent = t.relid
  )
  SELECT i.inhrelid::regclass AS partition, i.inhparent::regclass AS parent INTO pending
  FROM pg_inherits i JOIN tree t ON i.inhparent = t.relid
  WHERE i.inhdetachpending
  ORDER BY i.inhrelid
  LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'simhash_detach: partition "%" of "%" is still being detached', pending.partition, pending.parent
      USING ERRCODE = '55000',
            HINT = format('Finish that first: ALTER TABLE %s DETACH PARTITION %s FINALIZE;', pending.parent, pending.partition);
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
CREATE FUNCTION simhash_set_verify(table_name regclass, verify boolean, threshold float8 DEFAULT NULL,
                                   text_column name DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  att @extschema@.simhash_attachment;
  names record;
  args bytea;
  dist_method "char";
BEGIN
  att := simhash_internal.find_attachment(table_name, text_column);
  dist_method := (SELECT d.method FROM simhash_internal.distribution(att.table_name) d);
  -- Whether an attachment verifies its candidates against their texts (their exact similarity),
  -- and its threshold: recorded in its trigger's arguments, so the triggers are made
  -- again with the new ones, in this transaction (nothing else of the attachment changes).
  IF EXISTS (SELECT FROM pg_trigger t WHERE t.tgrelid = att.table_name AND t.tgname = att.trigger_name
                                        AND t.tgparentid <> 0) THEN
    RAISE EXCEPTION 'simhash_set_verify: "%" is a partition of attached table "%"', table_name, pg_partition_root(table_name)
      USING ERRCODE = '42809', HINT = format('Name %s: its partitions follow.', pg_partition_root(table_name));
  END IF;
  IF att.state = 'attaching' THEN
    RAISE EXCEPTION 'column "%" of "%" is still being attached', att.text_column, att.table_name
      USING ERRCODE = '55000', HINT = 'Let simhash_attach_concurrently() finish first.';
  END IF;
  SELECT t.tgargs INTO STRICT args FROM pg_trigger t WHERE t.tgrelid = att.table_name AND t.tgname = att.trigger_name;
  args := simhash_internal.reencode_attachment(args, verify, threshold);
  SELECT * INTO names FROM simhash_internal.object_names(att.table_name, att.text_column);
  IF dist_method IS NOT NULL THEN
    PERFORM set_config('citus.enable_unsafe_triggers', 'on', true);
  END IF;
  -- On a partitioned table the clones of the trigger go with it, and come back with the new one.
  EXECUTE format('DROP TRIGGER %I ON %s', att.trigger_name, att.table_name);
  IF EXISTS (SELECT FROM pg_trigger t WHERE t.tgrelid = att.table_name AND t.tgname = names.check_trigger_name) THEN
    EXECUTE format('DROP TRIGGER %I ON %s', names.check_trigger_name, att.table_name);
  END IF;
  PERFORM simhash_internal.create_triggers(att.table_name::regclass, args::bytea,
                                           (SELECT c.relkind FROM pg_class c WHERE c.oid = att.table_name)::"char",
                                           dist_method::"char");
END
$$;
COMMENT ON FUNCTION simhash_set_verify(regclass, boolean, float8, name) IS
  'Makes an attached column verify its candidates against their texts (or not), with a threshold: what an attachment made before 0.11.0 needs to verify its writes';

CREATE FUNCTION simhash_fill(table_name regclass, text_column name DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  att @extschema@.simhash_attachment;
  enabled "char";
  filled bigint;
BEGIN
  -- The rows written while the trigger did not fire (ALTER TABLE ... DISABLE TRIGGER,
  -- session_replication_role = replica, a logical replication subscriber's apply) have a text and
  -- no fingerprint or signature: lookups, dedup and the check miss them. An UPDATE that assigns the
  -- NULL column makes simhash_trigger() compute the value (a NULL value beside a text is never kept
  -- as unchanged), as the attach computes it, without a check.
  -- It runs as the caller, with its UPDATE privilege and row-level security, and fires the table's
  -- UPDATE triggers but those of other columns (UPDATE OF).
  IF table_name IS NULL THEN
    RAISE EXCEPTION 'table_name must not be NULL' USING ERRCODE = '22004';
  END IF;
  att := simhash_internal.find_attachment(table_name, text_column);
  IF att.state = 'attaching' THEN
    RAISE EXCEPTION 'column "%" of "%" is still being attached', att.text_column, att.table_name
      USING ERRCODE = '55000', HINT = 'simhash_attach_concurrently() fills the rows itself: let it finish.';
  END IF;
  IF (SELECT d.method FROM simhash_internal.distribution(att.table_name) d) IS NOT NULL THEN
    RAISE EXCEPTION 'simhash_fill: % is a Citus table', att.table_name
      USING ERRCODE = '0A000', HINT = 'Fill it on the shards, or detach and attach the column again.';
  END IF;
  SELECT t.tgenabled INTO enabled FROM pg_trigger t WHERE t.tgrelid = att.table_name AND t.tgname = att.trigger_name;
  IF enabled = 'D' OR (enabled = 'O' AND current_setting('session_replication_role') = 'replica')
     OR (enabled = 'R' AND current_setting('session_replication_role') <> 'replica') THEN
    RAISE EXCEPTION 'simhash_fill: trigger "%" of % does not fire in this session', att.trigger_name, att.table_name
      USING ERRCODE = '55000',
            HINT = format('ALTER TABLE %s ENABLE TRIGGER %I (or RESET session_replication_role) first.',
                          att.table_name, att.trigger_name);
  END IF;
  EXECUTE format('WITH u AS (UPDATE %s SET %I = NULL WHERE %I IS NULL AND %I IS NOT NULL RETURNING %I) '
                 'SELECT count(*) FROM u WHERE %I IS NOT NULL',
                 table_name, att.fingerprint_column, att.fingerprint_column, att.text_column,
                 att.fingerprint_column, att.fingerprint_column)
    INTO filled;
  -- The rows filled are checked by no trigger: as after an attach, say how many rows of the table
  -- have a near-duplicate.
  PERFORM simhash_internal.report_existing(att.table_name, att.text_column, NULL);
  RETURN filled;
END
$$;
COMMENT ON FUNCTION simhash_fill(regclass, name) IS
  'Computes the fingerprints (signatures) of the rows written while the trigger did not fire; returns how many, and reports near-duplicates';

