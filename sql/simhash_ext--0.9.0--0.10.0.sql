-- simhash_ext 0.9.0 -> 0.10.0 (issue 40, docs/ARCHITECTURE.md section 13): no code of a table's owner runs
-- with the rights of whoever attaches it, and no DDL of the owner's crashes the server. The scope check of
-- an attach asks for the equality of a domain's base type instead of casting NULL to the domain
-- (attach_checks); the online attach adds its columns as the table's owner (online_add_columns), as the
-- offline attach does; the attach's parallel fingerprinting scan runs as the owner (fill_collect); new
-- attachments' MinHash band expressions pass every argument (band_expressions); the event triggers also
-- fire for ALTER VIEW, ALTER MATERIALIZED VIEW and ALTER FOREIGN TABLE, which rename a table's columns too.
-- The rest (type checks of derived columns and band indexes before use, the event trigger's refusals,
-- the online fill's check of each partition's owner, lock_near_duplicates' check of the caller) is in
-- the library.
\echo Use "ALTER EXTENSION simhash_ext UPDATE TO '0.10.0'" to load this file. \quit

-- sql/src/attach.sql
CREATE OR REPLACE FUNCTION simhash_internal.band_expressions(att @extschema@.simhash_attachment)
RETURNS TABLE (band_column name, expression text)
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
  -- Each band column of an attachment with the expression of its value: generated from it by
  -- simhash_attach(), kept by the trigger and tied to it by a constraint after an online attach.
  -- Every argument is given (and typed): ATTACH PARTITION parses the expression again as
  -- pg_get_expr() prints it, and a function another role added to the extension's schema with one
  -- argument fewer must not make that call ambiguous (docs/ARCHITECTURE.md section 13.2).
  SELECT b.name, CASE WHEN att.method = 'minhash'
                      THEN format('@extschema@.minhash_bands(%I, 32, 4)', att.fingerprint_column)
                      ELSE format('@extschema@.simhash_band(%I, %s, %s)', att.fingerprint_column, b.i - 1,
                                  cardinality(att.band_columns)) END
  FROM unnest(att.band_columns) WITH ORDINALITY b(name, i)
  ORDER BY b.i
$$;

-- sql/src/attach.sql
CREATE OR REPLACE FUNCTION simhash_internal.attach_checks(table_name regclass, text_column name, args bytea,
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
    -- Rows are in one scope when their values are equal by the type's default equality: a domain's base type's, asked of that type (casting NULL to the table owner's domain would run its CHECK as the caller, docs/ARCHITECTURE.md section 13.3).
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
    -- simhash() in the workers, fill_stash() (parallel restricted) in the leader above them. As the
    -- table's owner (docs/ARCHITECTURE.md section 13.3): a policy of the owner's (FORCE ROW LEVEL
    -- SECURITY) that the scan evaluates never runs with the rights of whoever attaches the table.
    PERFORM simhash_internal.execute_as_owner(leaf, format(
      'SELECT pg_catalog.count(simhash_internal.fill_stash(s.tableoid, s.ctid, s.fp)) '
      'FROM (SELECT tableoid, ctid, %s AS fp FROM ONLY %s OFFSET 0) s',
      simhash_internal.fingerprint_sql(quote_ident(text_column), 'simhash', tokenizer, shingle, weighting,
                                       stopwords, fold), leaf));
  END LOOP;
END
$$;

-- sql/src/online.sql
CREATE OR REPLACE FUNCTION simhash_internal.online_add_columns(att @extschema@.simhash_attachment, args bytea, key_type text,
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
    -- As the table's owner in a security-restricted operation, as simhash_attach() adds its columns
    -- (docs/ARCHITECTURE.md section 13.3): the flag column has the primary key's type, which may be
    -- a domain of the owner's whose DEFAULT and CHECK constraints adding it evaluates.
    PERFORM simhash_internal.execute_as_owner(att.table_name,
      format('ALTER TABLE %s %s, ADD CONSTRAINT %I CHECK (%s) NOT VALID', att.table_name, columns,
             att.trigger_name || '$bands', bands_check));
    PERFORM simhash_internal.create_triggers(att.table_name::regclass, args::bytea, kind::"char", dist_method::"char");
  EXCEPTION WHEN lock_not_available THEN
    RETURN 'locked';
  END;
  RETURN 'begun';
END
$$;

-- sql/src/ddl.sql
DROP EVENT TRIGGER simhash_ddl_command_start;
-- ALTER VIEW, ALTER MATERIALIZED VIEW and ALTER FOREIGN TABLE rename the columns of a table too.
CREATE EVENT TRIGGER simhash_ddl_command_start ON ddl_command_start
  WHEN TAG IN ('ALTER TABLE', 'ALTER VIEW', 'ALTER MATERIALIZED VIEW', 'ALTER FOREIGN TABLE')
  EXECUTE FUNCTION @extschema@.simhash_ddl_command_start();

-- sql/src/registry.sql
DROP EVENT TRIGGER simhash_registry_ddl_command_end;
CREATE EVENT TRIGGER simhash_registry_ddl_command_end ON ddl_command_end
  WHEN TAG IN ('ALTER TABLE', 'ALTER VIEW', 'ALTER MATERIALIZED VIEW', 'ALTER FOREIGN TABLE')
  EXECUTE FUNCTION simhash_internal.registry_ddl_command_end();
