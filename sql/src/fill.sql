-- Fingerprinting the rows already in a table when it is attached or becomes a partition (src/api/fill.rs).
CREATE FUNCTION simhash_internal.fingerprint_sql(text_expr text, method text, tokenizer text, shingle int,
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
COMMENT ON FUNCTION simhash_internal.fingerprint_sql(text, text, text, int, text, boolean, text) IS
  'The SQL expression of the fingerprint (SimHash) or signature (MinHash) an attachment stores for a text';

CREATE FUNCTION simhash_internal.fill(table_name regclass, text_column name, fingerprint_column name, tokenizer text,
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
COMMENT ON FUNCTION simhash_internal.fill(regclass, name, name, text, int, text, boolean, text, text) IS
  'Sets the fingerprint column of every row of a table (or of its partitions) that lacks the right one';

CREATE FUNCTION simhash_internal.fill_collect(table_name regclass, text_column name, tokenizer text, shingle int,
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
COMMENT ON FUNCTION simhash_internal.fill_collect(regclass, name, text, int, text, boolean, text) IS
  'Fingerprints the rows of a table (or of its partitions) with a parallel scan, for fill_value()';
COMMENT ON FUNCTION simhash_internal.fill_reset() IS 'Forgets the fingerprints collected by fill_stash()';
COMMENT ON FUNCTION simhash_internal.fill_stash(oid, tid, bigint) IS
  'Collects the fingerprint of a row for fill_value() (until the end of the transaction)';
COMMENT ON FUNCTION simhash_internal.fill_value(oid, tid, text, text, int, text, boolean, text) IS
  'The fingerprint of a row, as collected by fill_stash() or else computed like simhash()';
