-- A 100k-row COPY into a table with the duplicate trigger, at the default max_locks_per_transaction: a
-- row holds its keys only until it is written (docs/ARCHITECTURE.md §8.2), so the transaction holds none
-- once the COPY is done, whatever the number of rows.
SHOW max_locks_per_transaction;
CREATE TABLE feed (id bigserial PRIMARY KEY, body text);
-- max_distance 3: random hex words are short texts, whose fingerprints can fall within 7 bits.
SELECT simhash_attach('feed', 'body', max_distance => 3, on_duplicate => 'error');
-- A file of this server's own (tests of several majors may run at once).
SELECT '/tmp/simhash_ext_bulk_' || current_setting('port') || '.txt' AS bulk_file \gset
\setenv SIMHASH_BULK_FILE :bulk_file
COPY (SELECT string_agg(md5(i::text || ':' || j), ' ') FROM generate_series(1, 100000) i, generate_series(1, 8) j GROUP BY i)
  TO :'bulk_file';
BEGIN;
COPY feed (body) FROM :'bulk_file';
SELECT count(*) AS advisory_locks_held FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid();
COMMIT;
SELECT count(*) AS rows, count(body_simhash) AS fingerprinted FROM feed;
-- The same file again: every row is now a duplicate, and the first one stops the COPY.
\set VERBOSITY terse
COPY feed (body) FROM :'bulk_file';
\set VERBOSITY default
SELECT count(*) AS rows FROM feed;
DROP TABLE feed;
\! rm -f "$SIMHASH_BULK_FILE"
-- One transaction writing 3,000 rows into each of twelve attached tables, of both methods (until 0.10.0
-- each held up to 2,048 or 4,096 keys to its end: the seventh table ran out of shared memory).
DO $$
BEGIN
  FOR t IN 1..12 LOOP
    EXECUTE format('CREATE TABLE many_%s (id int PRIMARY KEY, body text)', t);
    IF t % 2 = 0 THEN
      PERFORM simhash_attach(format('many_%s', t)::regclass, 'body', max_distance => 3,
                             on_duplicate => CASE t % 3 WHEN 0 THEN 'error' WHEN 1 THEN 'skip' ELSE 'flag' END);
    ELSE
      PERFORM simhash_attach(format('many_%s', t)::regclass, 'body', method => 'minhash',
                             on_duplicate => CASE t % 3 WHEN 0 THEN 'error' WHEN 1 THEN 'skip' ELSE 'flag' END);
    END IF;
  END LOOP;
END $$;
BEGIN;
DO $$
BEGIN
  FOR t IN 1..12 LOOP
    EXECUTE format($q$INSERT INTO many_%s SELECT i, concat_ws(' ', md5(i || ':a'), md5(i || ':b'), md5(i || ':c'), md5(i || ':d'),
                                                md5(i || ':e'), md5(i || ':f'), md5(i || ':g'), md5(i || ':h'))
                      FROM generate_series(1, 3000) i$q$, t);
  END LOOP;
END $$;
SELECT count(*) AS advisory_locks_held FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid();
COMMIT;
SELECT sum((xpath('/row/c/text()', query_to_xml(format('SELECT count(*) AS c FROM many_%s', t), false, true, '')))[1]::text::int) AS rows
FROM generate_series(1, 12) t;
DO $$ BEGIN FOR t IN 1..12 LOOP EXECUTE format('DROP TABLE many_%s', t); END LOOP; END $$;
-- Keys go whatever ends a row's write: a COPY (no statement of the executor) into a 'skip' table, a
-- primary-key violation after the trigger took them, caught in a subtransaction, and a near-duplicate
-- error caught the same way. None is held afterwards, in the same transaction.
CREATE TABLE held (id int PRIMARY KEY, body text);
SELECT simhash_attach('held', 'body', on_duplicate => 'skip');
CREATE TABLE held_m (id int PRIMARY KEY, body text);
SELECT simhash_attach('held_m', 'body', method => 'minhash', on_duplicate => 'error');
BEGIN;
COPY held (id, body) FROM STDIN;
1	The harbour ferry timetable changes in the winter months, with fewer crossings after dark.
2	Volunteers planted two hundred trees along the river path on Saturday morning.
\.
SELECT count(*) AS keys_after_copy FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid();
DO $$
BEGIN
  INSERT INTO held VALUES (1, 'A bakery opened downtown and sells sourdough bread every morning from seven.');
EXCEPTION WHEN unique_violation THEN RAISE NOTICE 'primary key: %', SQLSTATE;
END $$;
INSERT INTO held_m VALUES (1, 'The harbour ferry timetable changes in the winter months, with fewer crossings after dark.');
DO $$
BEGIN
  INSERT INTO held_m VALUES (2, 'The harbour ferry timetable changes in the winter months, with fewer crossings after dark!');
EXCEPTION WHEN unique_violation THEN RAISE NOTICE 'near-duplicate: %', SQLSTATE;
END $$;
SELECT count(*) AS keys_after_errors FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid();
COMMIT;
SELECT (SELECT count(*) FROM held) AS held, (SELECT count(*) FROM held_m) AS held_m;
DROP TABLE held, held_m;
