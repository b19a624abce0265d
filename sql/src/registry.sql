-- The registry check's search of every shard of a Citus table through
-- <table>_<column>_shards (docs/ARCHITECTURE.md section 7.5): each shard searched by
-- simhash_internal.probe_shard() on its node, as a lookup searches one table: one call per row of
-- that table, which is colocated with the table, so Citus runs each call in the connection that
-- wrote that shard in this transaction. It counts (searched) only if every shard of the table
-- answered (after a split, or with that table gone, the caller searches with a query instead);
-- distance is the nearest row's within k.
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

-- The probes of a lookup of fp within k as one query, one index-only scan of a band index per
-- band, on every shard in one round (with the distribution column in each branch, Citus runs the
-- UNION on each shard); a scan of every fingerprint when the bands do not pay.
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

-- The registry check of fingerprint fp written through the view checked_view: under the locks one
-- node's trigger takes, taken on the coordinator, the nearest row within max_distance on any
-- shard, its key (in key order on ties) and distance (docs/ARCHITECTURE.md sections 7.5, 8.7).
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

-- Writes the row new_row of the view view_oid into the table base, with the fingerprint fp the
-- registry checked (the trigger on its shard requires it) and, in 'flag' mode, the key found.
-- The row's values go as literals: Citus sends a statement's parameters to the workers, where the
-- view's row type does not exist.
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

-- The INSTEAD OF INSERT trigger of the view of a Citus table attached with registry => true: the
-- check of one row across all shards, made on the coordinator in the writer's distributed
-- transaction (docs/ARCHITECTURE.md sections 7.5, 8.7). The table itself is the registry: the band
-- indexes on every shard are searched as a lookup searches them.
CREATE FUNCTION simhash_internal.registry_insert()
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

-- Makes the table <table>_<column>_shards of a registry attachment, or fills it again: one row per
-- shard of the table, colocated with it, holding the shard's id and a value of the distribution
-- column that Citus places in that shard. The check of a write through the view calls
-- simhash_internal.probe_shard() once per row, in one query that Citus sends to each shard of this
-- table: each call searches the table's shard on the node that holds it, in the connection that
-- wrote to it in this transaction (docs/ARCHITECTURE.md §7.5). simhash_attach() calls it. After a
-- shard split or a new shard count, and for attachments made before 0.7.0, the check searches
-- the shards with a query of its own (as exact, slower) until this is called again. Returns
-- whether the table covers every shard.
CREATE FUNCTION simhash_internal.registry_shards(table_name regclass, text_column name)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  att @extschema@.simhash_attachment := simhash_internal.find_attachment(table_name, text_column);
  names record;
  dist_column name;
  dist_type text;
  shards_table text;
  existing regclass;
  shard_count int;
  anchor_values text[];
  anchor_shards bigint[];
BEGIN
  IF NOT att.registry THEN
    RAISE EXCEPTION 'column "%" of "%" is not attached with registry => true', text_column, table_name
      USING ERRCODE = '0A000';
  END IF;
  SELECT * INTO names FROM simhash_internal.object_names(table_name, text_column);
  SELECT d.distribution_column INTO dist_column FROM simhash_internal.distribution(table_name) d;
  SELECT format_type(a.atttypid, a.atttypmod) INTO dist_type FROM pg_attribute a
  WHERE a.attrelid = table_name AND a.attname = dist_column AND NOT a.attisdropped;
  shards_table := format('%I.%I', (SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                                   WHERE c.oid = table_name), names.shards_table);
  EXECUTE format('SELECT count(*) FROM pg_dist_shard s WHERE s.logicalrelid = %s', table_name::oid) INTO shard_count;
  -- A value of each shard, from the first integers (as text for other types; uuids from their md5):
  -- Citus hashes them uniformly, so a hundred per shard reach every shard.
  BEGIN
    EXECUTE format('SELECT array_agg(v::text ORDER BY s), array_agg(s ORDER BY s) '
                   'FROM (SELECT DISTINCT ON (s) v, s FROM (SELECT v, pg_catalog.get_shard_id_for_distribution_column(%L, v) AS s '
                   'FROM (SELECT %s AS v FROM generate_series(0, %s) g) x) y ORDER BY s, v) z',
                   table_name, CASE WHEN dist_type = 'uuid' THEN 'md5(g::text)::uuid' ELSE format('g::text::%s', dist_type) END,
                   greatest(10000, 100 * shard_count))
      INTO anchor_values, anchor_shards;
  EXCEPTION WHEN data_exception OR cannot_coerce THEN
    anchor_values := NULL;
  END;
  existing := to_regclass(shards_table);
  IF existing IS NOT NULL THEN
    IF obj_description(existing, 'pg_class') NOT LIKE 'simhash_ext: one row per shard of %' THEN
      RAISE EXCEPTION 'relation "%" already exists', names.shards_table
        USING ERRCODE = '42P07', HINT = 'A registry attachment of this column makes a table of that name: rename or drop that one.';
    END IF;
    EXECUTE format('DROP TABLE %s', existing);
  END IF;
  IF cardinality(anchor_values) IS DISTINCT FROM shard_count THEN
    RETURN false;
  END IF;
  EXECUTE format('CREATE TABLE %s (%I %s NOT NULL, shard bigint NOT NULL)', shards_table, dist_column, dist_type);
  EXECUTE format('COMMENT ON TABLE %s IS %L', shards_table,
                 format('simhash_ext: one row per shard of %s, for the near-duplicate check of column %I '
                        '(simhash_attach makes it, simhash_detach drops it)', table_name, text_column));
  EXECUTE format('SELECT pg_catalog.create_distributed_table(%L, %L, colocate_with => %L)',
                 shards_table, dist_column, table_name);
  EXECUTE format('INSERT INTO %s SELECT v::%s, s FROM unnest(%L::text[], %L::bigint[]) u(v, s)',
                 shards_table, dist_type, anchor_values, anchor_shards);
  -- Every writer through the view reads it; it holds nothing but shard ids.
  EXECUTE format('GRANT SELECT ON %s TO PUBLIC', shards_table);
  RETURN true;
END
$$;
COMMENT ON FUNCTION simhash_internal.registry_shards(regclass, name) IS
  'Makes the table of one row per shard that the check of a registry attachment searches the shards through';

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

-- Renames the columns of the view view_oid of a registry attachment of table_name after the
-- table's columns its rule reads, and adds the table's new columns at its end (the table's
-- columns but the generated ones and the derived ones).
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

-- Gives the columns of the view checked_view of a registry attachment of table_name the table's
-- defaults (an INSERT through it that leaves a column out gets the table's default, not NULL).
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

CREATE FUNCTION simhash_internal.registry_ddl_command_end()
RETURNS event_trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  att record;
BEGIN
  -- The rows of a table just attached as a partition of an attached table are checked.
  PERFORM simhash_internal.check_attached_partitions();
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
  'After ALTER TABLE: checks the rows of a table attached as a partition of an attached table; brings the view of a table attached with registry => true in step with it';
CREATE EVENT TRIGGER simhash_registry_ddl_command_end ON ddl_command_end
  WHEN TAG IN ('ALTER TABLE', 'ALTER VIEW', 'ALTER MATERIALIZED VIEW', 'ALTER FOREIGN TABLE')
  EXECUTE FUNCTION simhash_internal.registry_ddl_command_end();
