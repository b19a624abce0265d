-- The attachment as SQL sees it: its row type, its decoding from a simhash_trigger() trigger's
-- arguments (encoded by src/attachment.rs), and the catalog reads the other functions share.
COMMENT ON FUNCTION simhash_trigger_args(bytea) IS 'Internal: the arguments of a simhash_trigger() trigger';

CREATE FUNCTION simhash_primary_key(table_name regclass)
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
COMMENT ON FUNCTION simhash_primary_key(regclass) IS 'The primary key columns of a table, in key order';

CREATE TYPE simhash_attachment AS (
  table_name regclass, text_column name, fingerprint_column name, band_columns name[], max_distance int,
  on_duplicate text, flag_column name, tokenizer text, shingle int, weighting text, stopwords boolean,
  trigger_name name, fold text, scope_column name, registry boolean);

CREATE FUNCTION simhash_trigger_attachment(t pg_catalog.pg_trigger)
RETURNS simhash_attachment
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT t.tgrelid::regclass, a[1]::name, (a[1] || '_simhash')::name,
         ARRAY(SELECT (a[1] || '_band' || i)::name FROM generate_series(0, a[2]::int - 1) i),
         a[3]::int, a[4], CASE WHEN a[4] = 'flag' THEN (a[1] || '_duplicate_of')::name END,
         a[5], a[6]::int, a[7], a[8]::boolean, t.tgname,
         -- Triggers made before 0.3.0 have no fold argument: 'auto', which folds none of their weightings.
         coalesce(a[9], 'auto'),
         -- Only a scoped or registry attachment has a tenth argument: the column whose value scopes
         -- duplicate checks (or ''), and only a registry attachment an eleventh: 'registry'.
         nullif(a[10], '')::name, coalesce(a[11] = 'registry', false)
  FROM (SELECT @extschema@.simhash_trigger_args(t.tgargs) AS a) x
$$;
COMMENT ON FUNCTION simhash_trigger_attachment(pg_trigger) IS 'Internal: the attachment a simhash_trigger() trigger records';

CREATE FUNCTION simhash_attachments()
RETURNS SETOF simhash_attachment
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT s.* FROM pg_trigger t CROSS JOIN LATERAL @extschema@.simhash_trigger_attachment(t) s
  WHERE t.tgfoid = '@extschema@.simhash_trigger()'::regprocedure
    -- The partitions of an attached partitioned table carry clones of its trigger: not attachments of their own.
    AND t.tgparentid = 0
$$;
COMMENT ON FUNCTION simhash_attachments() IS 'Every text column attached with simhash_attach(), with its settings';

CREATE FUNCTION simhash_distribution(table_name regclass, OUT method "char", OUT distribution_column name)
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
COMMENT ON FUNCTION simhash_distribution(regclass) IS
  'The Citus distribution method (''h'': hash-distributed) and column of a table; NULL for a table Citus does not manage';
