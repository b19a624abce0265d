-- simhash_ext 0.12.0 -> 0.13.0: a warning when the extension's schema lets other roles create
-- objects in it (issue 49, docs/ARCHITECTURE.md section 13). Every update script from this one on
-- ends with SELECT simhash_internal.warn_on_schema_grants(), so that ALTER EXTENSION ... UPDATE warns
-- as CREATE EXTENSION does. The functions whose comments named a file of the repository are
-- re-created with comments that say what the code does; only their comments change. simhash_detach
-- refuses while a partition is still being detached. Citus tables scoped by their distribution
-- column get the check trigger, so their shards check each write after it, with no keys (issue 48).
-- Five C functions of simhash_internal call the symbols of their SQL names (issue 51).
\echo Use "ALTER EXTENSION simhash_ext UPDATE TO '0.13.0'" to load this file. \quit

CREATE FUNCTION simhash_internal.warn_on_schema_grants()
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  schema_name name;
  grantees text;
BEGIN
  SELECT n.nspname,
         string_agg(CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(r.rolname) END, ', '
                    ORDER BY a.grantee <> 0, r.rolname)
  INTO schema_name, grantees
  FROM pg_extension e
  JOIN pg_namespace n ON n.oid = e.extnamespace
  CROSS JOIN LATERAL aclexplode(n.nspacl) a
  LEFT JOIN pg_roles r ON r.oid = a.grantee
  WHERE e.extname = 'simhash_ext' AND a.privilege_type = 'CREATE'
    AND a.grantee <> n.nspowner AND NOT coalesce(r.rolsuper, false)
  GROUP BY n.nspname;
  IF grantees IS NOT NULL THEN
    RAISE WARNING 'schema % of extension simhash_ext grants CREATE to %', quote_ident(schema_name), grantees
      USING DETAIL = 'A role that may create objects in the schema can capture an unqualified call of the '
                     'extension''s functions with an untyped argument, such as SELECT * FROM simhash_pairs(''t''), '
                     'and run its own code with the caller''s rights.',
            HINT = format('REVOKE CREATE ON SCHEMA %I FROM %s; or install the extension in a schema of its own: '
                          'CREATE SCHEMA simhash; CREATE EXTENSION simhash_ext SCHEMA simhash;', schema_name, grantees);
  END IF;
END
$$;

-- The C functions named in Rust as in SQL (issue 51): each now calls the symbol of its SQL name,
-- as pgrx gives it; the library keeps the old symbols for the SQL of older versions. Only the
-- symbol changes.
CREATE OR REPLACE FUNCTION simhash_internal."trigger_args"(
	"tgargs" bytea /* & [u8] */
) RETURNS TEXT[] /* Vec < ServerBytes > */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'trigger_args_wrapper';

CREATE OR REPLACE FUNCTION simhash_internal."fill_reset"() RETURNS void
STRICT PARALLEL UNSAFE  
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'fill_reset_wrapper';

CREATE OR REPLACE FUNCTION simhash_internal."fill_stash"(
	"tableoid" oid, /* pg_sys :: Oid */
	"row" tid, /* pg_sys :: ItemPointerData */
	"fingerprint" bigint /* Option < i64 > */
) RETURNS bool /* bool */
PARALLEL RESTRICTED  
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'fill_stash_wrapper';

CREATE OR REPLACE FUNCTION simhash_internal."fill_value"(
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
AS 'MODULE_PATHNAME', 'fill_value_wrapper';

CREATE OR REPLACE FUNCTION simhash_internal."reencode_attachment"(
	"tgargs" bytea, /* & [u8] */
	"verify" bool, /* Option < bool > */
	"threshold" double precision /* Option < f64 > */
) RETURNS bytea /* Vec < u8 > */
IMMUTABLE PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'reencode_attachment_wrapper';

-- Comments without file paths: the functions of sql/src/*.sql whose comments named a file of the
-- repository (a Rust source, a document, a test output) and now say what the code does instead,
-- each as sql/src gives it. Only comments changed; the block is one piece and moves as one.

CREATE OR REPLACE FUNCTION simhash_internal.attachment(table_name regclass, trigger_name name, tgargs bytea)
RETURNS SETOF @extschema@.simhash_attachment
LANGUAGE sql STABLE STRICT PARALLEL SAFE ROWS 1
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT table_name, d.text_column::name, d.fingerprint_column::name, d.band_columns::name[], d.max_distance,
         d.on_duplicate, d.flag_column::name, d.tokenizer, d.shingle, d.weighting, d.stopwords, trigger_name, d.fold,
         d.scope_column::name, d.registry, d.min_length, d.method, d.threshold,
         -- 'attaching' until an online attach has finished: its bands constraint (named after the
         -- trigger, with '$bands' appended) is NOT VALID until then.
         -- A partition made during the attach has its own constraint, valid: its ancestors' count.
         CASE WHEN EXISTS (SELECT FROM pg_constraint k
                           WHERE (k.conrelid = table_name
                                  OR k.conrelid IN (SELECT a.relid FROM pg_partition_ancestors(table_name) a))
                             AND NOT k.convalidated AND k.conname = trigger_name || '$bands')
              THEN 'attaching' ELSE 'attached' END,
         d.verify
  FROM simhash_internal.decode_attachment(tgargs) d
$$;

CREATE OR REPLACE FUNCTION simhash_internal.fingerprint_sql(text_expr text, method text, tokenizer text, shingle int,
                                                 weighting text, stopwords boolean, fold text)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
  -- What the trigger stores for a text: its SimHash fingerprint or its MinHash signature. Every
  -- argument is cast to the declared type: a function of the same name that another role made in
  -- the extension's schema with a closer signature is never chosen.
  SELECT CASE method
    WHEN 'minhash' THEN format('@extschema@.minhash((%s)::pg_catalog.text, %L::pg_catalog.text, %s::pg_catalog.int4, '
                                '%L::pg_catalog.bool, %L::pg_catalog.text, 128)', text_expr, tokenizer, shingle, stopwords, fold)
    ELSE format('@extschema@.simhash((%s)::pg_catalog.text, %L::pg_catalog.text, %s::pg_catalog.int4, %L::pg_catalog.text, '
                '%L::pg_catalog.bool, %L::pg_catalog.text)', text_expr, tokenizer, shingle, weighting, stopwords, fold)
  END
$$;

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
    -- table's owner, in a security-restricted operation: a policy of the owner's (FORCE ROW LEVEL
    -- SECURITY) that the scan evaluates never runs with the rights of whoever attaches the table.
    PERFORM simhash_internal.execute_as_owner(leaf, format(
      'SELECT pg_catalog.count(simhash_internal.fill_stash(s.tableoid, s.ctid, s.fp)) '
      'FROM (SELECT tableoid, ctid, %s AS fp FROM ONLY %s OFFSET 0) s',
      simhash_internal.fingerprint_sql(quote_ident(text_column), 'simhash', tokenizer, shingle, weighting,
                                       stopwords, fold), leaf));
  END LOOP;
END
$$;

CREATE OR REPLACE FUNCTION simhash_internal.band_expressions(att @extschema@.simhash_attachment)
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

CREATE OR REPLACE FUNCTION simhash_internal.attach_bands(att @extschema@.simhash_attachment, dist_method "char", key_type text)
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

CREATE OR REPLACE FUNCTION simhash_internal.attach_indexes(att @extschema@.simhash_attachment, dist_column name)
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

CREATE OR REPLACE FUNCTION simhash_internal.report_existing(table_name regclass, text_column name, max_rows bigint)
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

CREATE OR REPLACE FUNCTION simhash_attach(table_name regclass, text_column name, max_distance int DEFAULT NULL,
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

CREATE OR REPLACE FUNCTION simhash_internal.detach_registry(att @extschema@.simhash_attachment)
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

CREATE OR REPLACE FUNCTION simhash_set_verify(table_name regclass, verify boolean, threshold float8 DEFAULT NULL,
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

CREATE OR REPLACE FUNCTION simhash_fill(table_name regclass, text_column name DEFAULT NULL)
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
  -- the expected output of a regression test. The probe plan of a table that is not a Citus
  -- table is made by simhash_internal.near_duplicates_probe_sql().)
  IF att.method = 'minhash' THEN
    RAISE EXCEPTION 'column "%" of "%" is attached with method ''minhash'': it has no probe plan of bands',
      att.text_column, att.table_name
      USING ERRCODE = '22023',
            HINT = format('Look it up with simhash_near_duplicates(NULL::%s, doc), or query column %I with the && operator.',
                          att.table_name, att.band_columns[1]);
  END IF;
  IF att.state = 'attaching' THEN
    -- As a lookup refuses: rows without a fingerprint would be missed.
    RAISE EXCEPTION 'column "%" of "%" is still being attached', att.text_column, att.table_name
      USING ERRCODE = '55000',
            DETAIL = 'simhash_attach_concurrently() has not finished: some rows have no fingerprint or band index yet.',
            HINT = 'Call simhash_attach_concurrently() again to resume it, or simhash_detach() to remove it.';
  END IF;
  -- Every fingerprint in the SQL below is cast to bigint: hamming() of another role's in the
  -- extension's schema with a closer signature (hamming(bigint, int) for a small literal) is never
  -- chosen. Checks k as lookups do (22023), even when there is no
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

CREATE OR REPLACE FUNCTION simhash_internal.prepare_partition_bands(parent regclass, partition regclass,
                                                         att @extschema@.simhash_attachment)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  bands_constraint oid;
BEGIN
  -- Attached online, the partitioned table keeps its bands in plain columns tied to the fingerprint
  -- by a constraint (simhash_attach_concurrently()), which PostgreSQL wants the partition to have too.
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

CREATE OR REPLACE FUNCTION simhash_internal.rename_column_triggers(table_name regclass, trigger_name name, old_name name,
                                                        new_name name, args text[])
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  old_names record;
  new_names record;
  enabled "char";
  check_type int2;
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
  SELECT t.tgenabled, t.tgtype INTO enabled, check_type FROM pg_trigger t
  WHERE t.tgrelid = table_name AND t.tgname = old_names.check_trigger_name;
  IF FOUND THEN
    EXECUTE format('DROP TRIGGER %I ON %s', old_names.check_trigger_name, table_name);
    -- AFTER INSERT OR UPDATE since 0.12.0 (tgtype bit 16: UPDATE), AFTER INSERT before.
    EXECUTE format('CREATE TRIGGER %I AFTER %s ON %s FOR EACH ROW EXECUTE FUNCTION @extschema@.simhash_check_trigger(%s)',
                   new_names.check_trigger_name,
                   CASE WHEN check_type & 16 <> 0 THEN 'INSERT OR UPDATE' ELSE 'INSERT' END, table_name,
                   (SELECT string_agg(quote_literal(a), ', ') FROM unnest(args) a));
    IF enabled = 'D' THEN
      EXECUTE format('ALTER TABLE %s DISABLE TRIGGER %I', table_name, new_names.check_trigger_name);
    END IF;
  END IF;
  -- After an online attach, its bands constraint is named after the trigger (<trigger>$bands).
  IF new_names.trigger_name <> trigger_name
     AND EXISTS (SELECT FROM pg_constraint k WHERE k.conrelid = table_name AND k.conname = trigger_name || '$bands') THEN
    EXECUTE format('ALTER TABLE %s RENAME CONSTRAINT %I TO %I', table_name, trigger_name || '$bands',
                   new_names.trigger_name || '$bands');
  END IF;
END
$$;

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
    -- likewise: the flag column has the primary key's type, which may be
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

CREATE OR REPLACE FUNCTION simhash_internal.online_begin(table_name regclass, text_column name, max_distance int, on_duplicate text,
                                              tokenizer text, shingle int, weighting text, stopwords boolean,
                                              fold text, scope name, registry boolean, min_length int,
                                              method text, threshold float8, verify boolean, lock_timeout_ms int)
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
                                             shingle, weighting, stopwords, fold, scope, registry, min_length,
                                             verify);
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
  -- The bands constraint is named after the trigger (<trigger>$bands).
  IF octet_length(att.trigger_name || '$bands') > 63 THEN
    RAISE EXCEPTION 'simhash_attach_concurrently: column name "%" is too long for the name of constraint "%"',
      text_column, att.trigger_name || '$bands' USING ERRCODE = '42622', HINT = 'Attach it with simhash_attach(), or rename the column.';
  END IF;
  RETURN simhash_internal.online_add_columns(att::@extschema@.simhash_attachment, args::bytea, checked.key_type::text,
                                             checked.kind::"char", checked.dist_method::"char", lock_timeout_ms::int);
END
$$;

CREATE OR REPLACE FUNCTION simhash_internal.online_fill_targets(table_name regclass, text_column name)
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
  -- changed, computes the true value and the bands: each row fingerprinted once, by
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

CREATE OR REPLACE FUNCTION simhash_internal.online_validate(table_name regclass, text_column name)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  att @extschema@.simhash_attachment := simhash_internal.find_attachment(table_name, text_column);
BEGIN
  -- The last step of an online attach: every row's bands agree with its fingerprint (a scan that takes
  -- SHARE UPDATE EXCLUSIVE, which no read or write waits for), and the trigger checks from its commit on.
  -- As the table's owner in a security-restricted operation: validating a
  -- CHECK constraint evaluates it for every row as the current user, and between the steps of the
  -- attach the owner could have put an expression of its own under that name.
  PERFORM simhash_internal.execute_as_owner(table_name, format('ALTER TABLE %s VALIDATE CONSTRAINT %I', table_name,
                                                               att.trigger_name || '$bands'));
END
$$;
-- End of the comments without file paths.

-- simhash_detach refuses (55000) while a partition is left pending by a cancelled DETACH PARTITION
-- ... CONCURRENTLY: the parent's DROP COLUMN does not reach it.
CREATE OR REPLACE FUNCTION simhash_detach(table_name regclass, text_column name DEFAULT NULL)
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

-- A Citus table attached with scope => its distribution column has the check trigger too: its
-- shards' writes are checked after they are written, with no keys (issue 48). create_triggers()
-- makes it on the distributed table, and Citus makes it on every shard.
CREATE OR REPLACE FUNCTION simhash_internal.create_triggers(table_name regclass, args bytea, kind "char", dist_method "char")
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

-- The attachments of Citus tables made before get it, on the coordinator (Citus sends it to every
-- shard), enabled as the attachment's trigger is; a worker's shards get theirs from there.
DO $upgrade$
DECLARE
  t record;
  d record;
  names record;
  arg_list text;
  unsafe_triggers text := pg_catalog.current_setting('citus.enable_unsafe_triggers', true);
BEGIN
  IF pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NULL
     OR pg_catalog.to_regclass('pg_catalog.pg_dist_local_group') IS NULL THEN
    RETURN;
  END IF;
  FOR t IN EXECUTE
    'SELECT g.tgrelid::pg_catalog.regclass AS table_name, g.tgargs, g.tgenabled
     FROM pg_catalog.pg_trigger g JOIN pg_catalog.pg_dist_partition p ON p.logicalrelid = g.tgrelid
     WHERE g.tgfoid = ''@extschema@.simhash_trigger()''::pg_catalog.regprocedure AND g.tgparentid = 0
       AND p.partmethod = ''h''
       AND (SELECT l.groupid FROM pg_catalog.pg_dist_local_group l) = 0'
  LOOP
    SELECT * INTO d FROM simhash_internal.decode_attachment(t.tgargs);
    CONTINUE WHEN d.on_duplicate = 'none' OR d.registry;
    SELECT * INTO names FROM simhash_internal.object_names(t.table_name, d.text_column);
    CONTINUE WHEN EXISTS (SELECT FROM pg_catalog.pg_trigger g
                          WHERE g.tgrelid = t.table_name AND g.tgname = names.check_trigger_name);
    arg_list := (SELECT pg_catalog.string_agg(pg_catalog.quote_literal(a), ', ')
                 FROM pg_catalog.unnest(simhash_internal.trigger_args(t.tgargs)) a);
    PERFORM pg_catalog.set_config('citus.enable_unsafe_triggers', 'on', true);
    EXECUTE pg_catalog.format('CREATE TRIGGER %I AFTER INSERT OR UPDATE ON %s FOR EACH ROW EXECUTE FUNCTION @extschema@.simhash_check_trigger(%s)',
                              names.check_trigger_name, t.table_name, arg_list);
    IF t.tgenabled <> 'O' THEN
      EXECUTE pg_catalog.format('ALTER TABLE %s %s TRIGGER %I', t.table_name,
                                CASE t.tgenabled WHEN 'D' THEN 'DISABLE' WHEN 'R' THEN 'ENABLE REPLICA'
                                                 ELSE 'ENABLE ALWAYS' END,
                                names.check_trigger_name);
    END IF;
    PERFORM pg_catalog.set_config('citus.enable_unsafe_triggers', unsafe_triggers, true);
  END LOOP;
END
$upgrade$;

SELECT simhash_internal.warn_on_schema_grants();
