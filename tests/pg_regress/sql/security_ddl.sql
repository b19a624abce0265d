-- No DDL of a table's owner crashes the server (issue 40). For both methods and both attach kinds,
-- mallory (who owns the tables) alters a column or index the attach made in each way ALTER allows;
-- then the superuser runs every function of the API on the table. Each case shows what the event
-- trigger says of the alteration ("refused": rolled back afterwards), what PostgreSQL did with it
-- once the event trigger is disabled ("applied", statement by statement), and what each call
-- returned: ok (the result of an unaltered table with the same rows, or no error for a write) or
-- a SQLSTATE. A crash would end the session here, and the rest of this output with it.
\getenv abs_srcdir PG_ABS_SRCDIR
\set SHOW_CONTEXT never
SET simhash.progress_interval = '1h';
SET client_min_messages = warning;

CREATE ROLE regress_sd_mallory;
CREATE SCHEMA sd AUTHORIZATION regress_sd_mallory;
GRANT USAGE ON SCHEMA sd TO PUBLIC;

-- The alterations: {t} is the table, {idx} the index of its first band column.
CREATE TABLE sd.changes (method text, change text, ddl text[]);
INSERT INTO sd.changes VALUES
  ('simhash', 'band TYPE text', ARRAY['ALTER TABLE {t} ALTER COLUMN body_band0 TYPE text']),
  ('simhash', 'band TYPE numeric', ARRAY['ALTER TABLE {t} ALTER COLUMN body_band0 TYPE numeric']),
  ('simhash', 'band TYPE bigint', ARRAY['ALTER TABLE {t} ALTER COLUMN body_band0 TYPE bigint']),
  ('simhash', 'band DROP EXPRESSION', ARRAY['ALTER TABLE {t} ALTER COLUMN body_band0 DROP EXPRESSION']),
  ('simhash', 'band DROP EXPRESSION, TYPE text', ARRAY['ALTER TABLE {t} ALTER COLUMN body_band0 DROP EXPRESSION',
                                                       'ALTER TABLE {t} ALTER COLUMN body_band0 TYPE text']),
  ('simhash', 'fingerprint TYPE text', ARRAY['ALTER TABLE {t} ALTER COLUMN body_simhash TYPE text']),
  ('simhash', 'fingerprint TYPE numeric', ARRAY['ALTER TABLE {t} ALTER COLUMN body_simhash TYPE numeric']),
  ('simhash', 'drop $bands, band TYPE numeric', ARRAY['ALTER TABLE {t} DROP CONSTRAINT "simhash_body$bands"',
                                                      'ALTER TABLE {t} ALTER COLUMN body_band0 TYPE numeric']),
  ('simhash', 'replace $bands', ARRAY['ALTER TABLE {t} DROP CONSTRAINT "simhash_body$bands"',
                                      'ALTER TABLE {t} ADD CONSTRAINT "simhash_body$bands" CHECK (true)']),
  ('simhash', 'replace $bands NOT VALID', ARRAY['ALTER TABLE {t} DROP CONSTRAINT "simhash_body$bands"',
                                                'ALTER TABLE {t} ADD CONSTRAINT "simhash_body$bands" CHECK (true) NOT VALID']),
  ('simhash', 'index dropped', ARRAY['DROP INDEX {idx}']),
  ('simhash', 'index USING hash', ARRAY['DROP INDEX {idx}', 'CREATE INDEX ON {t} USING hash (body_band0)']),
  ('simhash', 'index oid_ops', ARRAY['DROP INDEX {idx}', 'CREATE INDEX ON {t} (body_band0 oid_ops) INCLUDE (body_simhash)']),
  ('simhash', 'index on an expression', ARRAY['DROP INDEX {idx}', 'CREATE INDEX ON {t} ((body_band0 + 1)) INCLUDE (body_simhash)']),
  ('simhash', 'index partial', ARRAY['DROP INDEX {idx}', 'CREATE INDEX ON {t} (body_band0) INCLUDE (body_simhash) WHERE id < 3']),
  ('simhash', 'index DESC', ARRAY['DROP INDEX {idx}', 'CREATE INDEX ON {t} (body_band0 DESC) INCLUDE (body_simhash)']),
  ('simhash', 'index INCLUDE text', ARRAY['DROP INDEX {idx}', 'CREATE INDEX ON {t} (body_band0) INCLUDE (body)']),
  ('simhash', 'index of two keys', ARRAY['DROP INDEX {idx}', 'CREATE INDEX ON {t} (body_band0, body_simhash)']),
  ('simhash', 'band TYPE text, index text_ops', ARRAY['ALTER TABLE {t} ALTER COLUMN body_band0 DROP EXPRESSION',
                                                      'ALTER TABLE {t} ALTER COLUMN body_band0 TYPE text',
                                                      'DROP INDEX IF EXISTS {idx}',
                                                      'CREATE INDEX ON {t} (body_band0 text_pattern_ops) INCLUDE (body_simhash)']),
  ('simhash', 'band DROP COLUMN', ARRAY['ALTER TABLE {t} DROP COLUMN body_band0']),
  ('simhash', 'fingerprint DROP COLUMN CASCADE', ARRAY['ALTER TABLE {t} DROP COLUMN body_simhash CASCADE']),
  ('simhash', 'text TYPE bytea', ARRAY['ALTER TABLE {t} ALTER COLUMN body TYPE bytea USING convert_to(body, ''UTF8'')']),
  ('minhash', 'bands TYPE text', ARRAY['ALTER TABLE {t} ALTER COLUMN body_lsh TYPE text']),
  ('minhash', 'bands TYPE numeric[]', ARRAY['ALTER TABLE {t} ALTER COLUMN body_lsh TYPE numeric[]']),
  ('minhash', 'bands DROP EXPRESSION', ARRAY['ALTER TABLE {t} ALTER COLUMN body_lsh DROP EXPRESSION']),
  ('minhash', 'bands DROP EXPRESSION, TYPE text', ARRAY['ALTER TABLE {t} ALTER COLUMN body_lsh DROP EXPRESSION',
                                                        'ALTER TABLE {t} ALTER COLUMN body_lsh TYPE text']),
  ('minhash', 'signature TYPE text', ARRAY['ALTER TABLE {t} ALTER COLUMN body_lsh DROP EXPRESSION',
                                           'ALTER TABLE {t} ALTER COLUMN body_minhash TYPE text USING encode(body_minhash, ''hex'')']),
  ('minhash', 'signature TYPE bigint', ARRAY['ALTER TABLE {t} ALTER COLUMN body_lsh DROP EXPRESSION',
                                             'ALTER TABLE {t} ALTER COLUMN body_minhash TYPE bigint USING length(body_minhash)']),
  ('minhash', 'drop $bands, bands TYPE numeric[]', ARRAY['ALTER TABLE {t} DROP CONSTRAINT "simhash_body$bands"',
                                                         'ALTER TABLE {t} ALTER COLUMN body_lsh TYPE numeric[]']),
  ('minhash', 'replace $bands NOT VALID', ARRAY['ALTER TABLE {t} DROP CONSTRAINT "simhash_body$bands"',
                                                'ALTER TABLE {t} ADD CONSTRAINT "simhash_body$bands" CHECK (true) NOT VALID']),
  ('minhash', 'index dropped', ARRAY['DROP INDEX {idx}']),
  ('minhash', 'index btree', ARRAY['DROP INDEX {idx}', 'CREATE INDEX ON {t} (body_lsh)']),
  ('minhash', 'index on an expression', ARRAY['DROP INDEX {idx}', 'CREATE INDEX ON {t} USING gin ((body_lsh[1:4]))']),
  ('minhash', 'index partial', ARRAY['DROP INDEX {idx}', 'CREATE INDEX ON {t} USING gin (body_lsh) WHERE id < 3']),
  ('minhash', 'bands DROP COLUMN', ARRAY['ALTER TABLE {t} DROP COLUMN body_lsh']),
  ('minhash', 'signature DROP COLUMN CASCADE', ARRAY['ALTER TABLE {t} DROP COLUMN body_minhash CASCADE']),
  ('minhash', 'text TYPE bytea', ARRAY['ALTER TABLE {t} ALTER COLUMN body TYPE bytea USING convert_to(body, ''UTF8'')']);
CREATE TABLE sd.cases AS
SELECT row_number() OVER (ORDER BY c.method DESC, k.online, c.ctid) AS n, c.method, k.online, c.change, c.ddl
FROM sd.changes c CROSS JOIN (VALUES (false), (true)) k(online);
CREATE TABLE sd.results (n bigint PRIMARY KEY, refused text, applied text);
GRANT SELECT ON sd.cases TO PUBLIC;
GRANT INSERT, UPDATE, SELECT ON sd.results TO PUBLIC;

-- pg_temp.attempt(n, keep): runs the alteration of case n on its table, statement by statement
-- (the outcome of each, 'ok' or its SQLSTATE); unless keep, stops at the first error and rolls
-- everything back.
CREATE FUNCTION pg_temp.apply(c sd.cases, keep boolean) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  t text := 'sd.t' || c.n;
  idx text;
  s text;
  outcome text[] := '{}';
BEGIN
  SELECT i.indexrelid::regclass::text INTO idx FROM pg_index i
  JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
  WHERE i.indrelid = t::regclass AND a.attname = CASE c.method WHEN 'minhash' THEN 'body_lsh' ELSE 'body_band0' END;
  FOREACH s IN ARRAY c.ddl LOOP
    BEGIN
      EXECUTE replace(replace(s, '{t}', t), '{idx}', coalesce(idx, 'sd.no_index'));
      outcome := outcome || 'ok'::text;
    EXCEPTION WHEN OTHERS THEN
      outcome := outcome || SQLSTATE::text;
      EXIT WHEN NOT keep;
    END;
  END LOOP;
  IF NOT keep THEN
    RAISE EXCEPTION USING MESSAGE = array_to_string(outcome, ' '), ERRCODE = 'SDROL';
  END IF;
  RETURN array_to_string(outcome, ' ');
END $$;
CREATE FUNCTION pg_temp.attempt(c sd.cases) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  RETURN pg_temp.apply(c, false);
EXCEPTION WHEN SQLSTATE 'SDROL' THEN
  RETURN SQLERRM;
END $$;

-- pg_temp.code(query): the first column of its first row as text, 'ok' when it returns none, or the SQLSTATE.
CREATE FUNCTION pg_temp.code(query text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE result text;
BEGIN
  EXECUTE query INTO result;
  RETURN coalesce(result, 'ok');
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE;
END $$;

-- pg_temp.api(t, method): every function of the API on table t, the reads first: what each returned.
CREATE FUNCTION pg_temp.api(t text, method text, OUT by_text text, OUT by_value text, OUT cost text,
                            OUT pairs text, OUT clusters text, OUT "insert" text, OUT insert_dup text,
                            OUT "update" text, OUT detach text)
LANGUAGE plpgsql AS $$
DECLARE
  ref text := 'sd.ref_' || method;
  -- The attachment's options are the defaults of simhash() and minhash().
  value text := format('%s(''The city council approved the budget for protected bike lanes on Main Street.'')', method);
BEGIN
  by_text := pg_temp.code(format($q$SELECT string_agg((item).id::text, ',' ORDER BY (item).id)
    FROM simhash_near_duplicates(NULL::%s, 'The city council approved the budget for protected bike lanes on Main Street.')$q$, t));
  by_value := pg_temp.code(format('SELECT string_agg((item).id::text, '','' ORDER BY (item).id) FROM simhash_near_duplicates(NULL::%s, %s)',
                                  t, value));
  cost := CASE method WHEN 'simhash' THEN pg_temp.code(format('SELECT matches::text FROM simhash_lookup_cost(%L, %s)', t, value)) END;
  pairs := pg_temp.code(format($q$SELECT string_agg(key_a || '-' || key_b, ',' ORDER BY key_a, key_b) FROM simhash_pairs(%L)$q$, t));
  clusters := pg_temp.code(format($q$SELECT string_agg(key || ':' || representative, ',' ORDER BY key) FROM simhash_clusters(%L)$q$, t));
  "insert" := pg_temp.code(format($q$INSERT INTO %s VALUES (7, 'The harbour ferry runs every twenty minutes during the summer festival.') RETURNING 'ok'$q$, t));
  insert_dup := pg_temp.code(format($q$INSERT INTO %s VALUES (8, 'A new bakery opened on Elm Street next to the post office!') RETURNING 'ok'$q$, t));
  "update" := pg_temp.code(format($q$UPDATE %s SET body = 'The museum extends its opening hours on Thursdays through August.' WHERE id = 6 RETURNING 'ok'$q$, t));
  detach := pg_temp.code(format('SELECT ''ok'' FROM simhash_detach(%L)', t));
END $$;

CREATE FUNCTION pg_temp.same(got text, expected text) RETURNS text LANGUAGE sql AS $$
  SELECT CASE WHEN got IS NOT DISTINCT FROM expected THEN 'ok' ELSE coalesce(got, 'none') END
$$;

-- The tables, mallory's, with the same rows (two pairs of near-duplicates), and two references.
SET ROLE regress_sd_mallory;
DO $$
DECLARE t text;
BEGIN
  FOR t IN SELECT 'sd.t' || n FROM sd.cases UNION ALL VALUES ('sd.ref_simhash'), ('sd.ref_minhash') LOOP
    EXECUTE format('CREATE TABLE %s (id int PRIMARY KEY, body text)', t);
    EXECUTE format($q$INSERT INTO %s VALUES
      (1, 'The city council approved the budget for protected bike lanes on Main Street.'),
      (2, 'The city council approved the budget for protected bike lanes on Main Street!'),
      (3, 'Heavy snow closed the mountain pass on Tuesday, and crews expect to reopen it by Friday.'),
      (4, 'Heavy snow closed the mountain pass on Tuesday, and crews expect to reopen it by Friday!'),
      (5, 'A new bakery opened on Elm Street next to the post office.'),
      (6, 'Tickets for the autumn concert series go on sale at the box office on Monday.')$q$, t);
  END LOOP;
END $$;
RESET ROLE;

-- The superuser attaches them, offline or online, with on_duplicate 'error'.
SELECT count(simhash_attach('sd.ref_' || m, 'body', method => m, on_duplicate => 'error')) AS references
FROM unnest(ARRAY['simhash', 'minhash']) m;
SELECT count(simhash_attach('sd.t' || n, 'body', method => method, on_duplicate => 'error')) AS offline
FROM sd.cases WHERE NOT online;
SELECT format('CALL simhash_attach_concurrently(%L, ''body'', method => %L, on_duplicate => ''error'')', 'sd.t' || n, method)
FROM sd.cases WHERE online ORDER BY n
\gexec
SELECT count(*) FILTER (WHERE state = 'attached') AS attached, count(*) AS attachments FROM simhash_attachments()
WHERE table_name::text LIKE 'sd.%';

-- mallory alters them: first with the event trigger (rolled back), then without it.
SET ROLE regress_sd_mallory;
INSERT INTO sd.results SELECT c.n, pg_temp.attempt(c) FROM sd.cases c;
RESET ROLE;
ALTER EVENT TRIGGER simhash_ddl_command_start DISABLE;
SET ROLE regress_sd_mallory;
UPDATE sd.results r SET applied = pg_temp.apply(c, true) FROM sd.cases c WHERE c.n = r.n;
RESET ROLE;
ALTER EVENT TRIGGER simhash_ddl_command_start ENABLE;

-- The references: what an unaltered table returns.
CREATE TABLE sd.expected AS SELECT m AS method, a.* FROM unnest(ARRAY['simhash', 'minhash']) m, pg_temp.api('sd.ref_' || m, m) a;
SELECT * FROM sd.expected ORDER BY method DESC;

-- Every case: ok where a read returns what the reference did and a write succeeds (insert_dup:
-- 23505 is the right answer), else what it returned.
SELECT c.n, c.method, CASE WHEN c.online THEN 'online' ELSE 'offline' END AS attach, c.change, r.refused, r.applied,
       pg_temp.same(a.by_text, e.by_text) AS by_text, pg_temp.same(a.by_value, e.by_value) AS by_value,
       pg_temp.same(a.cost, e.cost) AS cost, pg_temp.same(a.pairs, e.pairs) AS pairs,
       pg_temp.same(a.clusters, e.clusters) AS clusters,
       a."insert", a.insert_dup, a."update", a.detach
FROM sd.cases c JOIN sd.results r USING (n) JOIN sd.expected e USING (method)
CROSS JOIN LATERAL pg_temp.api('sd.t' || c.n, c.method) a
ORDER BY c.n;
-- The server is up, and mallory is what she was.
SELECT 1 AS alive, (SELECT rolsuper FROM pg_roles WHERE rolname = 'regress_sd_mallory') AS mallory_is_superuser;

DROP SCHEMA sd CASCADE;
DROP ROLE regress_sd_mallory;
