-- Exact search at every distance 0..8 on four 16-bit bands: the lookup (and the trigger, and the SQL
-- of simhash_near_duplicates_sql) against a brute-force scan on 100,000 rows of real text with planted
-- fingerprints at distances 0..9; EXPLAIN of the k = 7 query shows index scans only.
\getenv abs_srcdir PG_ABS_SRCDIR
\set include :abs_srcdir '/include/sentences.sql'
\i :include
SELECT count(*) > 300 AS enough_sentences, count(*) FILTER (WHERE s ~ '[一-龥]') > 100 AS chinese_too FROM sentences;
-- 100,000 documents of three sentences each; rows that share sentences are near-duplicates of each other.
CREATE TABLE big (id int PRIMARY KEY, body text);
INSERT INTO big
SELECT i, (SELECT string_agg(s, ' ' ORDER BY k)
           FROM (VALUES (1, (i * 7) % m + 1), (2, (i * 13 + 5) % m + 1), (3, (i / 97) % m + 1)) p(k, n)
           JOIN sentences USING (n))
FROM generate_series(1, 100000) i, (SELECT count(*) AS m FROM sentences) c;
SELECT simhash_attach('big', 'body', max_distance => 8);
SELECT band_columns, max_distance FROM simhash_attachments() WHERE table_name = 'big'::regclass;
SELECT indexrelid::regclass::text LIKE 'big_body_band%' AS band_index, pg_get_indexdef(indexrelid) ~ 'INCLUDE \(body_simhash\)' AS covering
FROM pg_index WHERE indrelid = 'big'::regclass AND NOT indisprimary ORDER BY 1, 2;
VACUUM ANALYZE big;
-- Planted queries: 40 rows' fingerprints with 0..9 distinct bits flipped.
CREATE TEMP TABLE queries AS
SELECT d.id AS src, flips, d.body_simhash # coalesce((SELECT bit_or(1::bigint << ((d.id * 7 + j * 13) % 64))
                                                      FROM generate_series(1, flips) j), 0) AS fp
FROM big d, generate_series(0, 9) flips
WHERE d.id % 2500 = 7 AND d.body_simhash IS NOT NULL;
SELECT flips, count(*) AS queries, bool_and(hamming(fp, (SELECT body_simhash FROM big WHERE id = src)) = flips) AS planted
FROM queries GROUP BY flips ORDER BY flips;
-- Brute force once: every row within 9 bits of every query.
CREATE TEMP TABLE brute AS
SELECT q.src, q.flips, d.id, hamming(d.body_simhash, q.fp) AS distance
FROM queries q JOIN big d ON hamming(d.body_simhash, q.fp) <= 9;
SELECT count(*) > 400 AS brute_has_matches, count(DISTINCT distance) = 10 AS every_distance FROM brute;
CREATE TEMP TABLE found AS
SELECT k, q.src, q.flips, (n.item).id, n.distance
FROM generate_series(0, 8) k, queries q, simhash_near_duplicates(NULL::big, q.fp, max_distance => k) n;
SELECT k, (SELECT count(*) FROM brute b WHERE b.distance <= k) AS by_scan,
       count(*) AS by_lookup,
       (SELECT count(*) FROM (SELECT src, flips, id, distance FROM found f2 WHERE f2.k = f.k
                              EXCEPT SELECT src, flips, id, distance FROM brute WHERE distance <= f.k) x) AS only_in_lookup,
       (SELECT count(*) FROM (SELECT src, flips, id, distance FROM brute WHERE distance <= f.k
                              EXCEPT SELECT src, flips, id, distance FROM found f2 WHERE f2.k = f.k) x) AS missed
FROM found f GROUP BY k ORDER BY k;
-- Each planted query finds its source row exactly when the planted distance is within k.
SELECT k, count(*) FILTER (WHERE f.id = f.src) AS sources_found, count(*) FILTER (WHERE f.id = f.src AND f.flips > k) AS beyond_k
FROM found f GROUP BY k ORDER BY k;
-- Nearest first.
SELECT bool_and(ordered) AS nearest_first FROM (
  SELECT distance >= lag(distance, 1, 0) OVER (PARTITION BY q.src, q.flips ORDER BY ord) AS ordered
  FROM queries q, simhash_near_duplicates(NULL::big, q.fp, max_distance => 8) WITH ORDINALITY n(item, distance, similarity, ord)) x;
-- Far lookups scan the table, still exactly.
SELECT (SELECT count(*) FROM queries q, simhash_near_duplicates(NULL::big, q.fp, max_distance => 24) n WHERE q.flips = 0)
     = (SELECT count(*) FROM queries q JOIN big d ON hamming(d.body_simhash, q.fp) <= 24 WHERE q.flips = 0) AS far_lookup_exact;
-- The SQL form of the same plan finds the same rows.
CREATE FUNCTION pg_temp.by_sql(fp bigint, k int) RETURNS SETOF int LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY EXECUTE 'SELECT (item).id FROM (' || simhash_near_duplicates_sql('big', fp, k) || ') x';
END $$;
SELECT k, count(*) AS by_sql,
       (SELECT count(*) FROM brute b WHERE b.distance <= k AND b.flips % 3 = 0) AS by_scan
FROM generate_series(3, 8, 5) k, queries q, pg_temp.by_sql(q.fp, k) id
WHERE q.flips % 3 = 0 GROUP BY k ORDER BY k;
-- The k = 7 query reads the band indexes only: one index scan per band, no table scan.
CREATE FUNCTION pg_temp.plan(query text) RETURNS SETOF text LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY EXECUTE 'EXPLAIN (COSTS OFF) ' || query;
END $$;
SELECT regexp_replace(regexp_replace(line, '-?\d{5,}', 'N', 'g'), 't_\d+', 't_N', 'g') AS plan
FROM pg_temp.plan(simhash_near_duplicates_sql('big', (SELECT body_simhash FROM big WHERE id = 4242), 7)) line
WHERE line ~ 'Scan|Append|Sort';

-- The trigger uses the same search: for edited texts, flag mode records a row at the brute-force
-- nearest distance, or nothing when no row is within max_distance.
CREATE TABLE flagged (id int PRIMARY KEY, body text);
INSERT INTO flagged SELECT id, body FROM big WHERE id <= 30000;
SELECT simhash_attach('flagged', 'body', max_distance => 7, on_duplicate => 'flag');
CREATE TEMP TABLE edits AS
SELECT 100000 + id AS id, regexp_replace(body, '(\S+)\s+(\S+)', '\2 \1 ' || id) AS body
FROM big WHERE id % 1000 = 3;
ALTER TABLE edits ADD COLUMN fp bigint;
UPDATE edits SET fp = simhash(body);
CREATE TEMP TABLE edit_results AS
SELECT e.id, (SELECT min(hamming(f.body_simhash, e.fp)) FROM flagged f) AS brute FROM edits e;
CREATE TEMP TABLE flag_results (id int, dup_distance int);
DO $$
DECLARE e record; dup int;
BEGIN
  FOR e IN SELECT * FROM edits ORDER BY id LOOP
    INSERT INTO flagged (id, body) VALUES (e.id, e.body) RETURNING body_duplicate_of INTO dup;
    INSERT INTO flag_results SELECT e.id, (SELECT hamming(f.body_simhash, e.fp) FROM flagged f WHERE f.id = dup);
    DELETE FROM flagged WHERE id = e.id;
  END LOOP;
END $$;
SELECT count(*) AS edits, count(*) FILTER (WHERE r.brute <= 7) AS within_7,
       count(*) FILTER (WHERE f.dup_distance IS NOT DISTINCT FROM CASE WHEN r.brute <= 7 THEN r.brute END) AS trigger_agrees
FROM edit_results r JOIN flag_results f USING (id);
DROP TABLE flagged;

-- The band indexes are read through per-backend lists of their leaf pages (simhash.leaf_map, on by
-- default) or through plain index scans: the same rows at every k.
SET simhash.leaf_map = off;
CREATE TEMP TABLE found_scan AS
SELECT k, q.src, q.flips, (n.item).id, n.distance
FROM generate_series(0, 8) k, queries q, simhash_near_duplicates(NULL::big, q.fp, max_distance => k) n;
RESET simhash.leaf_map;
SELECT (SELECT count(*) FROM found) AS leaf_lists, (SELECT count(*) FROM found_scan) AS index_scans,
       (SELECT count(*) FROM (SELECT * FROM found EXCEPT SELECT * FROM found_scan) x) AS only_leaf_lists,
       (SELECT count(*) FROM (SELECT * FROM found_scan EXCEPT SELECT * FROM found) x) AS only_index_scans;
-- Also after the indexes grew and split their leaves under a list read earlier: one transaction
-- keeps the backend's xmin, hence its lists, while 55,000 rows go in.
BEGIN ISOLATION LEVEL REPEATABLE READ;
CREATE TABLE grow (id int PRIMARY KEY, body text);
SELECT simhash_attach('grow', 'body', max_distance => 8);
INSERT INTO grow SELECT id, body FROM big WHERE id <= 5000;
SELECT count(*) AS before_growth FROM queries q, simhash_near_duplicates(NULL::grow, q.fp, max_distance => 8) n;
INSERT INTO grow SELECT id, body FROM big WHERE id > 5000 AND id <= 60000;
CREATE TEMP TABLE found_grow AS
SELECT k, q.src, q.flips, (n.item).id, n.distance
FROM generate_series(3, 8) k, queries q, simhash_near_duplicates(NULL::grow, q.fp, max_distance => k) n;
SELECT k, count(*) AS by_lookup,
       (SELECT count(*) FROM brute b WHERE b.id <= 60000 AND b.distance <= g.k) AS by_scan,
       (SELECT count(*) FROM (SELECT src, flips, id, distance FROM found_grow f WHERE f.k = g.k
                              EXCEPT SELECT src, flips, id, distance FROM brute WHERE id <= 60000 AND distance <= g.k) x) AS only_in_lookup,
       (SELECT count(*) FROM (SELECT src, flips, id, distance FROM brute WHERE id <= 60000 AND distance <= g.k
                              EXCEPT SELECT src, flips, id, distance FROM found_grow f WHERE f.k = g.k) x) AS missed
FROM found_grow g GROUP BY k ORDER BY k;
COMMIT;
DROP TABLE grow;
-- The trigger of a bulk insert reads the same lists while the table fills: flag mode records the
-- same nearest earlier row with them as with index scans.
CREATE TABLE flag_lists (id int PRIMARY KEY, body text);
CREATE TABLE flag_scans (id int PRIMARY KEY, body text);
SELECT simhash_attach('flag_lists', 'body', max_distance => 7, on_duplicate => 'flag');
SELECT simhash_attach('flag_scans', 'body', max_distance => 7, on_duplicate => 'flag');
INSERT INTO flag_lists SELECT id, body FROM big WHERE id <= 40000 ORDER BY id;
SET simhash.leaf_map = off;
INSERT INTO flag_scans SELECT id, body FROM big WHERE id <= 40000 ORDER BY id;
RESET simhash.leaf_map;
SELECT count(*) AS rows, count(l.body_duplicate_of) AS flagged,
       count(*) FILTER (WHERE l.body_duplicate_of IS DISTINCT FROM s.body_duplicate_of) AS differ
FROM flag_lists l JOIN flag_scans s USING (id);
DROP TABLE flag_lists, flag_scans;
-- Band indexes that include a column after the fingerprint (a Citus registry attachment's include
-- the distribution column) are read through leaf lists too, nulls in that column included: the
-- same rows as index scans, in one transaction each (its xmin keeps its lists).
CREATE TABLE wide (id int PRIMARY KEY, body text, tag text);
INSERT INTO wide SELECT id, body, CASE WHEN id % 3 = 0 THEN NULL ELSE 'tag ' || id END FROM big WHERE id <= 40000;
SELECT simhash_attach('wide', 'body', max_distance => 8);
DO $$
DECLARE b int;
BEGIN
  FOR b IN 0 .. 3 LOOP
    EXECUTE format('DROP INDEX %I', (SELECT i.indexrelid::regclass::text FROM pg_index i JOIN pg_attribute a
                                     ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
                                     WHERE i.indrelid = 'wide'::regclass AND a.attname = 'body_band' || b));
    EXECUTE format('CREATE INDEX ON wide (body_band%s) INCLUDE (body_simhash, tag)', b);
  END LOOP;
END $$;
BEGIN ISOLATION LEVEL REPEATABLE READ;
CREATE TEMP TABLE found_wide AS
SELECT k, q.src, q.flips, (n.item).id, n.distance
FROM generate_series(0, 8) k, queries q, simhash_near_duplicates(NULL::wide, q.fp, max_distance => k) n;
COMMIT;
BEGIN ISOLATION LEVEL REPEATABLE READ;
SET LOCAL simhash.leaf_map = off;
CREATE TEMP TABLE found_wide_scan AS
SELECT k, q.src, q.flips, (n.item).id, n.distance
FROM generate_series(0, 8) k, queries q, simhash_near_duplicates(NULL::wide, q.fp, max_distance => k) n;
COMMIT;
SELECT (SELECT count(*) FROM found_wide) AS leaf_lists, (SELECT count(*) FROM found_wide_scan) AS index_scans,
       (SELECT count(*) FROM found_wide WHERE k = 8) = (SELECT count(*) FROM brute WHERE id <= 40000 AND distance <= 8) AS all_found_at_8,
       (SELECT count(*) FROM (SELECT * FROM found_wide EXCEPT SELECT * FROM found_wide_scan) x) AS only_leaf_lists,
       (SELECT count(*) FROM (SELECT * FROM found_wide_scan EXCEPT SELECT * FROM found_wide) x) AS only_index_scans;
DROP TABLE wide;
-- Lists are kept from one transaction to the next, stale: a page a list names may have been
-- emptied, deleted and reused elsewhere in the index since. Here the leaves of band 0 between
-- 8192 and 36863 are emptied and deleted by VACUUM, freed by a second one, and reused by rows
-- of higher band values, then the deleted rows come back: a lookup in a later transaction finds
-- what index scans find. (VACUUM's new statistics of the index usually drop the list, by a relcache
-- invalidation; the #[pg_test] stale_leaf_lists_are_checked_where_they_are_used makes a list that
-- names reused pages.)
CREATE TABLE reuse (id int PRIMARY KEY, body text);
SELECT simhash_attach('reuse', 'body', max_distance => 8);
INSERT INTO reuse SELECT id, body FROM big WHERE id <= 40000;
CREATE TEMP TABLE reuse_queries AS
SELECT id AS src, body_simhash AS fp FROM big WHERE id <= 40000 AND id % 20 = 0 AND body_band0 BETWEEN 8192 AND 36863;
SELECT count(*) > 200 AS enough FROM reuse_queries;
SELECT count(*) > 0 AS found FROM reuse_queries q, simhash_near_duplicates(NULL::reuse, q.fp, max_distance => 8) n;
-- Written with the lists out of use, so that this backend's list of band 0 stays as read above.
SET simhash.leaf_map = off;
DELETE FROM reuse WHERE body_band0 BETWEEN 8192 AND 36863;
VACUUM reuse;
SELECT txid_current() > 0 AS xid_used;
VACUUM reuse;
CREATE EXTENSION pgstattuple;
CREATE TEMP VIEW band0_deleted AS
SELECT (pgstatindex(i.indexrelid::regclass)).deleted_pages
FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
WHERE i.indrelid = 'reuse'::regclass AND a.attname = 'body_band0';
CREATE TEMP TABLE deleted_before AS SELECT deleted_pages FROM band0_deleted;
SELECT deleted_pages > 20 AS leaves_deleted FROM deleted_before;
INSERT INTO reuse SELECT id, body FROM big WHERE id > 40000 AND body_band0 >= 40000;
INSERT INTO reuse SELECT id, body FROM big WHERE id <= 40000 AND body_band0 BETWEEN 8192 AND 36863;
SELECT d.deleted_pages < b.deleted_pages / 2 AS leaves_reused FROM band0_deleted d, deleted_before b;
RESET simhash.leaf_map;
CREATE TEMP TABLE found_reuse AS
SELECT k, q.src, (n.item).id, n.distance
FROM (VALUES (0), (8)) v(k), reuse_queries q, simhash_near_duplicates(NULL::reuse, q.fp, max_distance => k) n;
SET simhash.leaf_map = off;
CREATE TEMP TABLE found_reuse_scan AS
SELECT k, q.src, (n.item).id, n.distance
FROM (VALUES (0), (8)) v(k), reuse_queries q, simhash_near_duplicates(NULL::reuse, q.fp, max_distance => k) n;
RESET simhash.leaf_map;
SELECT (SELECT count(*) FROM found_reuse) = (SELECT count(*) FROM found_reuse_scan) AS same_count,
       (SELECT count(*) FROM found_reuse WHERE k = 0) >= (SELECT count(*) FROM reuse_queries) AS each_finds_itself,
       (SELECT count(*) FROM (SELECT * FROM found_reuse EXCEPT SELECT * FROM found_reuse_scan) x) AS only_leaf_lists,
       (SELECT count(*) FROM (SELECT * FROM found_reuse_scan EXCEPT SELECT * FROM found_reuse) x) AS only_index_scans;
DROP VIEW band0_deleted;
DROP TABLE reuse;
DROP EXTENSION pgstattuple;
DROP TABLE big;
