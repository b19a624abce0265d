-- The attachment as SQL sees it: its row type, its decoding from a simhash_trigger() trigger's
-- arguments (src/attachment/, through simhash_internal.decode_attachment), and the catalog reads
-- the other functions share.
COMMENT ON SCHEMA simhash_internal IS
  'simhash_ext: internal helpers of simhash_attach(), simhash_detach() and the triggers; not an API';
GRANT USAGE ON SCHEMA simhash_internal TO PUBLIC;
COMMENT ON FUNCTION simhash_internal.trigger_args(bytea) IS 'The arguments of a trigger (pg_trigger.tgargs), as text';
COMMENT ON FUNCTION simhash_internal.encode_attachment(text, text, int, double precision, text, text, int, text, boolean, text, text, boolean, int, boolean) IS
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

CREATE TYPE simhash_attachment AS (
  table_name regclass, text_column name, fingerprint_column name, band_columns name[], max_distance int,
  on_duplicate text, flag_column name, tokenizer text, shingle int, weighting text, stopwords boolean,
  trigger_name name, fold text, scope_column name, registry boolean, min_length int, method text, threshold float8,
  state text, verify boolean);

CREATE FUNCTION simhash_internal.attachment(table_name regclass, trigger_name name, tgargs bytea)
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
COMMENT ON FUNCTION simhash_internal.attachment(regclass, name, bytea) IS
  'The attachment that a trigger of a table records (none when its arguments are not a simhash_trigger()''s)';

CREATE FUNCTION simhash_attachments()
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
