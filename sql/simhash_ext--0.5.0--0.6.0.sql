-- simhash_ext 0.5.0 -> 0.6.0 (docs/ARCHITECTURE.md §12.1): the registry of a Citus table
-- (registry => true) is the table itself. Its check takes the coordinator's locks and searches the
-- band indexes of every shard (§7.5, §8.7), instead of filing fingerprints in <table>_<column>_registry
-- under lock rows in <table>_<column>_registry_locks. Functions are replaced in place; the tables
-- of existing registry attachments are no longer read or written and are left where they are (a
-- NOTICE names them; simhash_detach drops them).
\echo Use "ALTER EXTENSION simhash_ext UPDATE TO '0.6.0'" to load this file. \quit

-- The coordinator-side locks of the registry check (src/internal.rs).
CREATE  FUNCTION simhash_internal."lock_near_duplicates"(
	"table_name" regclass, /* RegClass */
	"fingerprint" bigint, /* i64 */
	"max_distance" INT /* i32 */
) RETURNS void
STRICT VOLATILE PARALLEL UNSAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'lock_near_duplicates_wrapper';

-- The buckets of simhash_pairs on a Citus table (src/internal.rs, src/dedup.rs).
CREATE  FUNCTION simhash_internal."bucket_pairs"(
	"part" INT, /* i32 */
	"fingerprints" bigint[], /* Vec < Option < i64 > > */
	"max_distance" INT /* i32 */
) RETURNS TABLE (
	"a" INT,  /* i32 */
	"b" INT,  /* i32 */
	"distance" INT  /* i32 */
)
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'bucket_pairs_wrapper';

-- simhash_pairs and simhash_clusters of a Citus table write a table of buckets on its workers.
ALTER FUNCTION simhash_pairs(regclass, int, text, float8) VOLATILE;
ALTER FUNCTION simhash_clusters(regclass, int, text, float8) VOLATILE;

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
BEGIN
  SELECT * INTO names FROM simhash_internal.object_names(base, text_column);
  EXECUTE format('SELECT @extschema@.simhash(($1).%I, %L, %s, %L, %L, %L)', text_column, att.tokenizer, att.shingle,
                 att.weighting, att.stopwords, att.fold)
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
    -- The probes of a lookup, one index-only scan of a band index per band, on every shard in one
    -- round (with the distribution column in each branch, Citus runs the UNION on each shard).
    SELECT d.distribution_column INTO dist_column FROM simhash_internal.distribution(base) d;
    SELECT string_agg(format('SELECT s.%1$I AS d, s.%2$I AS fp FROM %3$s s WHERE s.%4$I = ANY (%5$L::int[]) '
                             'AND @extschema@.hamming(s.%2$I, %6$s) <= %7$s',
                             dist_column, att.fingerprint_column, base, att.band_columns[p.band + 1], p.probe_values, fp, k),
                      ' UNION ALL ' ORDER BY p.band)
    INTO probe FROM @extschema@.simhash_probes(fp, k, nbands) p;
    IF probe IS NULL THEN
      -- Too far for the bands to pay (simhash_probes plans a scan): every fingerprint is compared.
      probe := format('SELECT s.%1$I AS d, s.%2$I AS fp FROM %3$s s WHERE @extschema@.hamming(s.%2$I, %4$s) <= %5$s',
                      dist_column, att.fingerprint_column, base, fp, k);
    END IF;
    -- One connection per worker: the shards' tasks are short, and a connection opened for this
    -- statement alone would cost more than they do (a Citus setting, put back right after).
    pool_size := current_setting('citus.max_adaptive_executor_pool_size');
    PERFORM set_config('citus.max_adaptive_executor_pool_size', '1', true);
    EXECUTE format('SELECT @extschema@.hamming(m.fp, %s) AS distance FROM (%s) m ORDER BY distance LIMIT 1', fp, probe)
      INTO found_distance;
    PERFORM set_config('citus.max_adaptive_executor_pool_size', pool_size, true);
    IF found_distance IS NOT NULL THEN
      -- The nearest rows' keys (in key order on ties), read only when there is one.
      EXECUTE format('SELECT %1$s FROM (%2$s) m JOIN %3$s t ON t.%4$I = m.d AND t.%5$I = m.fp '
                     'AND t.%6$I = @extschema@.simhash_band(m.fp, 0, %7$s) '
                     'WHERE @extschema@.hamming(m.fp, %8$s) = %9$s ORDER BY 1 LIMIT 1',
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

COMMENT ON FUNCTION simhash_internal.registry_insert() IS
  'The INSTEAD OF INSERT trigger of the view of a distributed table attached with registry => true';

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
    EXECUTE format('UPDATE %s t SET %I = t.%I', table_name, names.registered_column, fp);
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
    -- The view that writes go through, named after the table and column, and the registry tables
    -- of an attachment made before 0.6.0 whose update left them.
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

-- The registry tables that attachments made before 0.6.0 filed their fingerprints in.
DO $$
DECLARE
  t record;
BEGIN
  FOR t IN SELECT pg_catalog.format('%I.%I', n.nspname, c.relname) AS name FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
           JOIN pg_catalog.pg_trigger g ON g.tgfoid OPERATOR(pg_catalog.=) 'simhash_internal.registry_insert()'::pg_catalog.regprocedure
           JOIN pg_catalog.pg_class v ON v.oid OPERATOR(pg_catalog.=) g.tgrelid AND v.relnamespace OPERATOR(pg_catalog.=) c.relnamespace
           WHERE c.relkind OPERATOR(pg_catalog.=) ANY (ARRAY['r', 'p']::pg_catalog."char"[])
             AND c.relname OPERATOR(pg_catalog.=) ANY (ARRAY[pg_catalog.regexp_replace(v.relname, '_checked$', '_registry'), pg_catalog.regexp_replace(v.relname, '_checked$', '_registry_locks')])
           ORDER BY 1 LOOP
    RAISE WARNING 'simhash_ext 0.6.0 no longer reads or writes table %', t.name
      USING HINT = 'Drop it to free its space: the registry check now searches the table itself.';
  END LOOP;
END
$$;
