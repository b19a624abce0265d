-- simhash_near_duplicates_sql(): a lookup's probe plan as one SQL query, for EXPLAIN.
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

CREATE FUNCTION simhash_near_duplicates_sql(table_name regclass, fingerprint bigint,
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
COMMENT ON FUNCTION simhash_near_duplicates_sql(regclass, bigint, int, name, text) IS
  'The probe plan of simhash_near_duplicates() for a fingerprint, as an SQL query (for EXPLAIN), with an optional condition on the rows';
