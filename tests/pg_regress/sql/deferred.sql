-- on_duplicate => 'error' checks the rows of an INSERT together at the end of the statement
-- (simhash_check_trigger() beside the BEFORE trigger): the outcome is the per-row check's, whatever
-- the path (multi-row VALUES, INSERT ... SELECT, functions, subtransactions, COPY, renames).
-- Here without verification (verify => false), as 0.10.0 attached; verify.sql checks it verified.
\getenv abs_srcdir PG_ABS_SRCDIR
\set include :abs_srcdir '/include/try.sql'
\i :include
\set include :abs_srcdir '/include/sentences.sql'
\i :include
-- pg_temp.outcome(query): 'ok', or the DETAIL of its near-duplicate error (the key and distance).
CREATE FUNCTION pg_temp.outcome(query text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE detail text;
BEGIN
  EXECUTE query;
  RETURN 'ok';
EXCEPTION WHEN unique_violation THEN
  GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL;
  RETURN detail;
END $$;

CREATE TABLE posts (id int PRIMARY KEY, body text);
SELECT simhash_attach('posts', 'body', on_duplicate => 'error', verify => false);
SELECT tgname, tgtype, tgfoid::regproc FROM pg_trigger WHERE tgrelid = 'posts'::regclass ORDER BY tgname;
INSERT INTO posts VALUES (1, 'The ferry to the island runs every hour in summer and twice a day in winter.');
-- Against a row written before: named in the error.
SELECT pg_temp.outcome($$INSERT INTO posts VALUES (2, 'A new bakery opened on the corner of Elm Street this week.'),
                                                  (3, 'The ferry to the island runs every hour in summer, and twice a day in winter!')$$);
-- Within one statement the later row reports the earlier one, wherever they stand.
SELECT pg_temp.outcome($$INSERT INTO posts VALUES (4, 'Snow closed the mountain pass for the third time this month.'),
  (5, 'Researchers found a new species of frog in the cloud forest.'), (6, 'The museum will stay open late on Fridays.'),
  (7, 'Snow closed the mountain pass for the third time this month!')$$);
-- The first row (in the order written) with a near-duplicate fails the statement, with its nearest.
SELECT pg_temp.outcome($$INSERT INTO posts VALUES (8, 'Researchers found a new species of frog in the cloud forest'),
  (9, 'The ferry to the island runs every hour in summer and twice a day in the cold winter.'),
  (10, 'The ferry to the island runs every hour in summer and twice a day in winter')$$);
SELECT count(*) AS rows FROM posts;
-- Inside a function and a subtransaction: the statement inside is checked; a rolled-back row is gone.
CREATE FUNCTION pg_temp.add(i int, t text) RETURNS int LANGUAGE plpgsql AS $$
BEGIN INSERT INTO posts VALUES (i, t); RETURN i; END $$;
SELECT pg_temp.outcome($$SELECT pg_temp.add(10, 'The ferry to the island runs every hour in summer and twice a day in winter.')$$);
DO $$
BEGIN
  BEGIN
    INSERT INTO posts VALUES (11, 'Volunteers planted four hundred trees along the river on Saturday.');
    RAISE EXCEPTION 'roll back';
  EXCEPTION WHEN raise_exception THEN NULL;
  END;
  INSERT INTO posts VALUES (12, 'Volunteers planted four hundred trees along the river on Saturday.');
END $$;
BEGIN;
INSERT INTO posts VALUES (13, 'The orchestra announced its programme for the autumn season.');
SAVEPOINT s;
SELECT pg_temp.outcome($$INSERT INTO posts VALUES (14, 'The orchestra announced its programme for the autumn season!')$$);
ROLLBACK TO s;
INSERT INTO posts VALUES (15, 'Night trains return to the northern line after a ten-year pause.');
COMMIT;
-- COPY writes outside a statement's executor: its rows are checked one by one.
COPY posts (id, body) FROM STDIN;
16	The bridge repairs will finish two weeks ahead of schedule.
\.
SELECT pg_temp.outcome($$COPY posts (id, body) FROM PROGRAM 'printf ''17\tNight trains return to the northern line after a ten-year pause!\n'''$$);
SELECT id FROM posts ORDER BY id;
-- A renamed text column keeps its check trigger; disabling the check trigger alone leaves the check
-- to the BEFORE trigger (per row); detach removes both.
ALTER TABLE posts RENAME COLUMN body TO content;
SELECT tgname, pg_get_triggerdef(oid) ~ 'simhash_check_trigger\(''content''' AS renamed_args
FROM pg_trigger WHERE tgrelid = 'posts'::regclass AND tgname LIKE '%$chk';
SELECT pg_temp.outcome($$INSERT INTO posts VALUES (18, 'The bridge repairs will finish two weeks ahead of schedule!')$$);
ALTER TABLE posts DISABLE TRIGGER "simhash_content$chk";
SELECT pg_temp.outcome($$INSERT INTO posts VALUES (19, 'The bridge repairs will finish two weeks ahead of schedule!')$$);
ALTER TABLE posts ENABLE TRIGGER "simhash_content$chk";
SELECT simhash_detach('posts');
SELECT count(*) AS triggers_left FROM pg_trigger WHERE tgrelid = 'posts'::regclass;
-- Every mode that checks gets the check trigger (AFTER INSERT OR UPDATE since 0.12.0).
CREATE TABLE skipped (id int PRIMARY KEY, body text);
SELECT simhash_attach('skipped', 'body', on_duplicate => 'skip', verify => false);
SELECT count(*) AS triggers FROM pg_trigger WHERE tgrelid = 'skipped'::regclass;
-- The check trigger's name is taken: attach says so.
CREATE TABLE taken (id int PRIMARY KEY, body text);
CREATE FUNCTION pg_temp.noop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
CREATE TRIGGER "simhash_body$chk" AFTER INSERT ON taken FOR EACH ROW EXECUTE FUNCTION pg_temp.noop();
SELECT pg_temp.try($$SELECT simhash_attach('taken', 'body', on_duplicate => 'error', verify => false)$$);
DROP TABLE posts, skipped, taken;

-- Bulk statements of real text, checked together (err_batch) and per row (err_rows: check trigger
-- disabled): the same statements fail, naming the same row at the same distance, and the same rows stay.
-- Each statement writes new keys: a row that is also a key violation fails on the key first here.
CREATE TABLE docs (id int PRIMARY KEY, body text);
INSERT INTO docs
SELECT i, (SELECT string_agg(s, ' ' ORDER BY k)
           FROM (VALUES (1, (i * 7) % m + 1), (2, (i * 13 + 5) % m + 1), (3, (i / 97) % m + 1)) p(k, n)
           JOIN sentences USING (n))
FROM generate_series(1, 30000) i, (SELECT count(*) AS m FROM sentences) c;
CREATE TABLE err_batch (id int PRIMARY KEY, body text);
CREATE TABLE err_rows (id int PRIMARY KEY, body text);
SELECT simhash_attach('err_batch', 'body', on_duplicate => 'error', verify => false);
SELECT simhash_attach('err_rows', 'body', on_duplicate => 'error', verify => false);
ALTER TABLE err_rows DISABLE TRIGGER "simhash_body$chk";
CREATE TEMP TABLE outcomes AS
SELECT s, pg_temp.outcome(format('INSERT INTO err_batch SELECT id + %s, body FROM docs WHERE id %% %s = %s ORDER BY id LIMIT %s',
                                 s * 100000, step, s % step, n)) AS batch,
          pg_temp.outcome(format('INSERT INTO err_rows SELECT id + %s, body FROM docs WHERE id %% %s = %s ORDER BY id LIMIT %s',
                                 s * 100000, step, s % step, n)) AS by_row
FROM generate_series(1, 60) s,
     LATERAL (SELECT (ARRAY[97, 193, 389, 1009, 2003])[s % 5 + 1] AS step, 20 + (s * 37) % 400 AS n) p;
SELECT count(*) AS statements, count(*) FILTER (WHERE batch = 'ok') AS succeeded,
       count(*) FILTER (WHERE batch LIKE 'Key (id)=(%) is at Hamming distance %') AS rejected,
       count(DISTINCT substring(batch FROM 'distance (\d+)')) > 3 AS several_distances,
       count(*) FILTER (WHERE batch IS DISTINCT FROM by_row) AS differ
FROM outcomes;
SELECT count(*) AS rows, (SELECT count(*) FROM err_rows) AS rows_by_row,
       count(*) FILTER (WHERE r.id IS NULL) AS differ
FROM err_batch b LEFT JOIN err_rows r USING (id, body);
-- The same with index scans instead of leaf lists.
SET simhash.leaf_map = off;
SELECT count(*) FILTER (WHERE pg_temp.outcome(format('INSERT INTO err_batch SELECT id + %s, body FROM docs WHERE id %% 389 = %s ORDER BY id LIMIT 50', 10000000 + s * 100000, s))
                        IS DISTINCT FROM
                        pg_temp.outcome(format('INSERT INTO err_rows SELECT id + %s, body FROM docs WHERE id %% 389 = %s ORDER BY id LIMIT 50', 10000000 + s * 100000, s))) AS differ
FROM generate_series(1, 20) s;
RESET simhash.leaf_map;
DROP TABLE docs, err_batch, err_rows;
