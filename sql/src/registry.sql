-- The INSTEAD OF INSERT trigger of the view of a Citus table attached with registry => true.
CREATE FUNCTION simhash_internal.registry_insert()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  -- The arguments simhash_attach(..., registry => true) gave the view's trigger.
  base regclass := TG_ARGV[0]::regclass;
  text_column name := TG_ARGV[1];
  k int := TG_ARGV[2]::int;
  mode text := TG_ARGV[3];
  registry_table text := TG_ARGV[9];
  lock_table text := TG_ARGV[10];
  fp bigint;
  lock_keys int[];
  part_values bigint[];
  lock_key int;
  row_key text;
  key_columns text;
  found_key text;
  found_distance int;
  columns text;
  flag_type text;
BEGIN
  EXECUTE format('SELECT @extschema@.simhash(($1).%I, %L, %s, %L, %L, %L)', text_column, TG_ARGV[4], TG_ARGV[5],
                 TG_ARGV[6], TG_ARGV[7], TG_ARGV[8])
    INTO fp USING NEW;
  SELECT string_agg(quote_ident(p.attname), ', ' ORDER BY p.ord), string_agg(format('($1).%I::text', p.attname), ', ' ORDER BY p.ord)
  INTO key_columns, columns FROM simhash_internal.primary_key(base) p;
  EXECUTE format('SELECT concat_ws('', '', %s)', columns) INTO row_key USING NEW;
  IF fp IS NOT NULL THEN
    SELECT array_agg(b.lock_key ORDER BY b.lock_key), array_agg(b.part_value ORDER BY b.lock_key)
    INTO lock_keys, part_values FROM @extschema@.simhash_registry_buckets(fp, k) b;
    -- The lock rows of the fingerprint's buckets, one statement each, in one global order (sorted
    -- keys): two near-duplicate writers share a bucket, and the second waits on its lock row until
    -- the first commits, and then sees the first's registry row, which is on the same shard.
    FOREACH lock_key IN ARRAY lock_keys LOOP
      EXECUTE format('INSERT INTO %s AS l (lock_key, writes) VALUES ($1, 1) '
                     'ON CONFLICT (lock_key) DO UPDATE SET writes = l.writes + 1', lock_table) USING lock_key;
    END LOOP;
    EXECUTE format('SELECT r.row_key, @extschema@.hamming(r.fingerprint, $1) AS distance FROM %s r '
                   'WHERE r.lock_key = ANY ($2) AND r.part_value = ANY ($3) AND @extschema@.hamming(r.fingerprint, $1) <= $4 '
                   'ORDER BY distance, r.row_key LIMIT 1', registry_table)
      INTO found_key, found_distance USING fp, lock_keys, part_values, k;
    IF found_key IS NOT NULL AND mode = 'error' THEN
      RAISE EXCEPTION 'near-duplicate text in column "%" of relation "%"', text_column,
        (SELECT c.relname FROM pg_class c WHERE c.oid = base)
        USING ERRCODE = '23505',
              DETAIL = format('Key (%s)=(%s) is at Hamming distance %s (max_distance %s).', key_columns, found_key,
                              found_distance, k);
    ELSIF found_key IS NOT NULL AND mode = 'skip' THEN
      RETURN NULL;
    END IF;
    EXECUTE format('INSERT INTO %s (lock_key, part_value, fingerprint, row_key) VALUES %s', registry_table,
                   (SELECT string_agg(format('(%s, %s, %s, %L)', lock_keys[i], part_values[i], fp, row_key), ', ')
                    FROM generate_subscripts(lock_keys, 1) i));
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
  WHERE a.attrelid = base AND a.attname = text_column || '_duplicate_of' AND NOT a.attisdropped;
  -- The row, with the fingerprint the registry checked (the trigger on its shard requires it).
  EXECUTE format('INSERT INTO %s (%s, %I%s) VALUES (%s, %s%s)', base, columns, text_column || '_registered',
                 CASE WHEN mode = 'flag' THEN format(', %I', text_column || '_duplicate_of') ELSE '' END,
                 key_columns, quote_nullable(fp),
                 CASE WHEN mode = 'flag' THEN format(', CAST(%s AS %s)', quote_nullable(found_key), flag_type) ELSE '' END);
  RETURN NEW;
END
$$;
COMMENT ON FUNCTION simhash_internal.registry_insert() IS
  'The INSTEAD OF INSERT trigger of the view of a distributed table attached with registry => true';
