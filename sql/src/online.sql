-- simhash_attach_concurrently() (src/online.rs): the steps of an online attach that are SQL, and
-- the progress a DBA can watch. docs/ARCHITECTURE.md section 14 is the design.

CREATE FUNCTION simhash_internal.online_resume(table_name regclass, text_column name, args bytea)
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  existing @extschema@.simhash_attachment;
BEGIN
  -- An online attach of the column that has not finished (running elsewhere, cancelled, crashed)
  -- is resumed when its settings are these: 'resumed'. NULL when there is none to resume or finish.
  SELECT s.* INTO existing FROM @extschema@.simhash_attachments() s
  WHERE s.table_name = online_resume.table_name AND s.text_column = online_resume.text_column;
  -- A finished one too, while its bands constraint says it was made online: a call cancelled while
  -- it waited for the last writers then gets that wait (and returns once they are done): 'finished'.
  IF FOUND AND existing.state = 'attached'
     AND EXISTS (SELECT FROM pg_constraint k WHERE k.conrelid = table_name AND k.conname = existing.trigger_name || '$bands')
     AND (SELECT t.tgargs FROM pg_trigger t WHERE t.tgrelid = table_name AND t.tgname = existing.trigger_name) = args THEN
    RETURN 'finished';
  END IF;
  IF FOUND AND existing.state = 'attaching' THEN
    IF (SELECT t.tgargs FROM pg_trigger t WHERE t.tgrelid = table_name AND t.tgname = existing.trigger_name)
       IS DISTINCT FROM args THEN
      RAISE EXCEPTION 'simhash_attach_concurrently: column "%" of "%" is being attached with other settings',
        text_column, table_name
        USING ERRCODE = '42710',
              HINT = 'Call it with the settings of simhash_attachments() to resume that attach, or remove it with simhash_detach().';
    END IF;
    RETURN 'resumed';
  END IF;
  RETURN NULL;
END
$$;
COMMENT ON FUNCTION simhash_internal.online_resume(regclass, name, bytea) IS
  'Whether an online attach with these trigger arguments is to be resumed (''resumed'') or only waited for (''finished''); NULL when there is none';

CREATE FUNCTION simhash_internal.online_add_columns(att @extschema@.simhash_attachment, args bytea, key_type text,
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
COMMENT ON FUNCTION simhash_internal.online_add_columns(@extschema@.simhash_attachment, bytea, text, "char", "char", int) IS
  'The columns, bands constraint (NOT VALID) and triggers of an online attach, under a lock_timeout: ''begun'', or ''locked'' when the lock was not had in time';

CREATE FUNCTION simhash_internal.online_begin(table_name regclass, text_column name, max_distance int, on_duplicate text,
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
COMMENT ON FUNCTION simhash_internal.online_begin(regclass, name, int, text, text, int, text, boolean, text, name, boolean, int, text, float8, boolean, int) IS
  'The first step of simhash_attach_concurrently(): checks, then the columns, the bands constraint (NOT VALID) and the triggers under a lock_timeout; ''resumed'' for an attach to resume, ''finished'' for one that only has its last wait left, ''locked'' when the lock was not had in time';

CREATE FUNCTION simhash_internal.relation_tree(table_name regclass)
RETURNS TABLE (relid regclass, parentrelid regclass, isleaf boolean, level int)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
  -- pg_partition_tree(), and for a table outside any partition tree (for which it has no row) the table.
  SELECT p.relid, p.parentrelid, p.isleaf, p.level FROM pg_partition_tree(table_name) p
  UNION ALL
  SELECT table_name, NULL, true, 0 WHERE NOT EXISTS (SELECT FROM pg_partition_tree(table_name))
$$;
COMMENT ON FUNCTION simhash_internal.relation_tree(regclass) IS
  'The partition tree of a table as pg_partition_tree() gives it, or the table alone when it is in none';

CREATE FUNCTION simhash_internal.qualified(relid oid)
RETURNS text
LANGUAGE sql STABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT format('%I.%I', n.nspname, c.relname) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE c.oid = relid
$$;
COMMENT ON FUNCTION simhash_internal.qualified(oid) IS 'A relation''s name with its schema, quoted, whatever the search path';

CREATE FUNCTION simhash_internal.band_index(relid regclass, band_column name, OUT index_oid oid, OUT valid boolean)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
  -- An index of relid whose first key is the band column (a valid one first).
  SELECT i.indexrelid, i.indisvalid
  FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
  WHERE i.indrelid = relid AND a.attname = band_column
  ORDER BY i.indisvalid DESC, i.indexrelid
  LIMIT 1
$$;
COMMENT ON FUNCTION simhash_internal.band_index(regclass, name) IS 'The index of a band column of a table, if it has one';

CREATE FUNCTION simhash_internal.online_next_index_step(table_name regclass, text_column name,
                                                        OUT statement text, OUT top_level boolean)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  att @extschema@.simhash_attachment := simhash_internal.find_attachment(table_name, text_column);
  b name;
  definition text;
  rel record;
  idx record;
  parent_idx record;
BEGIN
  -- The next statement that builds the band indexes, read from the catalog each time (so an attach
  -- resumes where it stopped): for each band, an index ON ONLY each partitioned table, then one built
  -- concurrently on each table that holds rows (an INVALID one left by a cancelled build dropped
  -- first), then each attached to its parent's, deepest first. NULL when every index is there and valid.
  -- Relations are named with their schema (a temporary table's too): the statements run top-level,
  -- under the caller's search path.
  FOREACH b IN ARRAY att.band_columns LOOP
    definition := CASE WHEN att.method = 'minhash' THEN format('USING gin (%I) WITH (fastupdate = off)', b)
                       ELSE format('(%I) INCLUDE (%I)', b, att.fingerprint_column) END;
    FOR rel IN SELECT p.relid, c.relkind FROM simhash_internal.relation_tree(table_name) p JOIN pg_class c ON c.oid = p.relid
               ORDER BY p.level, p.relid LOOP
      SELECT * INTO idx FROM simhash_internal.band_index(rel.relid, b);
      IF rel.relkind = 'p' AND idx.index_oid IS NULL THEN
        statement := format('CREATE INDEX ON ONLY %s %s', simhash_internal.qualified(rel.relid), definition);
        top_level := false;
        RETURN;
      ELSIF rel.relkind = 'r' AND idx.index_oid IS NOT NULL AND NOT idx.valid THEN
        statement := format('DROP INDEX CONCURRENTLY %s', simhash_internal.qualified(idx.index_oid));
        top_level := true;
        RETURN;
      ELSIF rel.relkind = 'r' AND idx.index_oid IS NULL THEN
        statement := format('CREATE INDEX CONCURRENTLY ON %s %s', simhash_internal.qualified(rel.relid), definition);
        top_level := true;
        RETURN;
      END IF;
    END LOOP;
    FOR rel IN SELECT p.relid, p.parentrelid FROM simhash_internal.relation_tree(table_name) p
               WHERE p.level > 0 ORDER BY p.level DESC, p.relid LOOP
      SELECT * INTO idx FROM simhash_internal.band_index(rel.relid, b);
      SELECT * INTO parent_idx FROM simhash_internal.band_index(rel.parentrelid, b);
      IF idx.valid AND NOT EXISTS (SELECT FROM pg_inherits h WHERE h.inhrelid = idx.index_oid
                                                               AND h.inhparent = parent_idx.index_oid) THEN
        statement := format('ALTER INDEX %s ATTACH PARTITION %s', simhash_internal.qualified(parent_idx.index_oid),
                            simhash_internal.qualified(idx.index_oid));
        top_level := false;
        RETURN;
      END IF;
    END LOOP;
  END LOOP;
END
$$;
COMMENT ON FUNCTION simhash_internal.online_next_index_step(regclass, name) IS
  'The next statement that builds the band indexes of an online attach (NULL when they are all there and valid)';

CREATE FUNCTION simhash_internal.run_locked(table_name regclass, statement text, lock_timeout_ms int)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  -- A catalog change of an online attach under a lock_timeout: false when the lock was not had in time.
  PERFORM set_config('lock_timeout', lock_timeout_ms || 'ms', true);
  BEGIN
    EXECUTE statement;
  EXCEPTION WHEN lock_not_available THEN
    RETURN false;
  END;
  RETURN true;
END
$$;
COMMENT ON FUNCTION simhash_internal.run_locked(regclass, text, int) IS
  'Runs a catalog change of simhash_attach_concurrently() under a lock_timeout (false when the lock was not had)';

CREATE FUNCTION simhash_internal.online_fill_targets(table_name regclass, text_column name)
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
COMMENT ON FUNCTION simhash_internal.online_fill_targets(regclass, name) IS
  'The tables of an online attach that hold rows, with the UPDATEs that fingerprint a range of blocks of each and the rows left';

CREATE FUNCTION simhash_internal.online_validate(table_name regclass, text_column name)
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
COMMENT ON FUNCTION simhash_internal.online_validate(regclass, name) IS
  'Validates the bands constraint of an online attach: the attach is finished from its commit on';

CREATE TABLE simhash_internal.attach_progress (
  table_name oid NOT NULL,
  text_column name NOT NULL,
  pid int NOT NULL,
  phase text NOT NULL,
  detail text,
  rows_done bigint,
  rows_total bigint,
  started timestamptz NOT NULL,
  updated timestamptz NOT NULL,
  PRIMARY KEY (table_name, text_column)
);
REVOKE ALL ON simhash_internal.attach_progress FROM PUBLIC;
COMMENT ON TABLE simhash_internal.attach_progress IS
  'simhash_ext: where each online attach is (written by simhash_attach_concurrently(); read through simhash_attach_progress)';

CREATE VIEW simhash_attach_progress WITH (security_barrier) AS
  SELECT p.table_name::regclass AS table_name, p.text_column, p.pid, p.running,
         p.phase, p.detail, p.rows_done, p.rows_total,
         pg_catalog.round(100.0 OPERATOR(pg_catalog.*) p.rows_done OPERATOR(pg_catalog./)
                          NULLIF(p.rows_total, 0), 1) AS percent,
         p.started, p.updated
  FROM (SELECT q.*,
               -- The call holds its session lock (advisory, objsubid 21321 = 0x5349) while it
               -- runs, and lets go of it when it returns or fails.
               EXISTS (SELECT FROM pg_catalog.pg_locks l
                       WHERE l.locktype OPERATOR(pg_catalog.=) 'advisory' AND l.pid OPERATOR(pg_catalog.=) q.pid
                         AND l.objsubid OPERATOR(pg_catalog.=) 21321
                         AND l.classid OPERATOR(pg_catalog.=) q.table_name AND l.granted) AS running
        FROM simhash_internal.attach_progress q) p
  JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) p.table_name
  -- Only the attaches of tables the reader may read or owns (a security barrier: no condition of the
  -- reader's is evaluated on the other rows), and only those running or not finished:
  -- the row of an attach removed by simhash_detach() is left here and never shown (the next attach
  -- replaces it).
  WHERE (pg_catalog.pg_has_role(c.relowner, 'USAGE') OR pg_catalog.has_table_privilege(c.oid, 'SELECT'))
    AND (p.running
         OR EXISTS (SELECT FROM pg_catalog.pg_constraint k
                    WHERE k.conrelid OPERATOR(pg_catalog.=) p.table_name AND NOT k.convalidated
                      -- The bands constraint is named after the trigger (<trigger>$bands).
                      AND k.conname OPERATOR(pg_catalog.=) ('simhash_' OPERATOR(pg_catalog.||) p.text_column
                                                           OPERATOR(pg_catalog.||) '$bands')));
GRANT SELECT ON simhash_attach_progress TO PUBLIC;
COMMENT ON VIEW simhash_attach_progress IS
  'The online attaches (simhash_attach_concurrently()) that have not finished: phase, rows done of total, and whether the call still runs';

CREATE PROCEDURE simhash_attach_concurrently(table_name regclass, text_column name, max_distance int DEFAULT NULL,
                                             on_duplicate text DEFAULT 'none', tokenizer text DEFAULT NULL,
                                             shingle int DEFAULT NULL, weighting text DEFAULT NULL,
                                             stopwords boolean DEFAULT NULL, fold text DEFAULT NULL,
                                             scope name DEFAULT NULL, registry boolean DEFAULT false,
                                             min_length int DEFAULT 0, method text DEFAULT 'simhash',
                                             threshold float8 DEFAULT NULL, verify boolean DEFAULT NULL)
LANGUAGE c AS 'MODULE_PATHNAME', 'simhash_attach_concurrently';
COMMENT ON PROCEDURE simhash_attach_concurrently(regclass, name, int, text, text, int, text, boolean, text, name, boolean, int, text, float8, boolean) IS
  'simhash_attach() without an outage: brief locks, fingerprints written in committed batches, band indexes built concurrently; call it again to resume';
