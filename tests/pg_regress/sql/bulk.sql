-- A 100k-row COPY into a table with the duplicate trigger, at the default max_locks_per_transaction: band
-- locks are hashed into 256 buckets per band, so one transaction holds at most 1,024 of them per table.
SHOW max_locks_per_transaction;
CREATE TABLE feed (id bigserial PRIMARY KEY, body text);
-- max_distance 3: random hex words are short texts, whose fingerprints can fall within 7 bits.
SELECT simhash_attach('feed', 'body', max_distance => 3, on_duplicate => 'error');
COPY (SELECT string_agg(md5(i::text || ':' || j), ' ') FROM generate_series(1, 100000) i, generate_series(1, 8) j GROUP BY i)
  TO '/tmp/simhash_ext_bulk.txt';
BEGIN;
COPY feed (body) FROM '/tmp/simhash_ext_bulk.txt';
SELECT count(*) AS advisory_locks_held, count(*) <= 4 * 256 AS bounded
FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid();
COMMIT;
SELECT count(*) AS rows, count(body_simhash) AS fingerprinted FROM feed;
-- The same file again: every row is now a duplicate, and the first one stops the COPY.
\set VERBOSITY terse
COPY feed (body) FROM '/tmp/simhash_ext_bulk.txt';
\set VERBOSITY default
SELECT count(*) AS rows FROM feed;
DROP TABLE feed;
\! rm -f /tmp/simhash_ext_bulk.txt
