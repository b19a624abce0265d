-- The lookup against a brute-force scan on thousands of rows of real text, with planted fingerprints at
-- distances 0..k+1; and on 100k rows, EXPLAIN shows the band indexes (a BitmapOr of index scans).
\getenv abs_srcdir PG_ABS_SRCDIR
\set include :abs_srcdir '/include/sentences.sql'
\i :include
SELECT count(*) > 300 AS enough_sentences, count(*) FILTER (WHERE s ~ '[一-龥]') > 100 AS chinese_too FROM sentences;
-- 5,000 documents of three sentences each, some of them near-duplicates of others by construction.
CREATE TABLE docs (id int PRIMARY KEY, body text);
INSERT INTO docs
SELECT i, (SELECT string_agg(s, ' ' ORDER BY k)
           FROM (VALUES (1, (i * 7) % m + 1), (2, (i * 13 + 5) % m + 1), (3, (i / 3) % m + 1)) p(k, n)
           JOIN sentences USING (n))
FROM generate_series(1, 5000) i, (SELECT count(*) AS m FROM sentences) c;
SELECT simhash_attach('docs', 'body');
-- Planted queries: 400 rows' fingerprints with 0..4 distinct bits flipped (k = 3, so 4 is k+1).
CREATE TEMP TABLE queries AS
SELECT d.id AS src, flips, d.body_simhash # coalesce((SELECT bit_or(1::bigint << ((d.id * 7 + j * 13) % 64))
                                                      FROM generate_series(1, flips) j), 0) AS fp
FROM docs d, generate_series(0, 4) flips
WHERE d.id % 12 = 0 AND d.body_simhash IS NOT NULL;
SELECT flips, count(*) AS queries, bool_and(hamming(fp, (SELECT body_simhash FROM docs WHERE id = src)) = flips) AS planted
FROM queries GROUP BY flips ORDER BY flips;
CREATE TEMP TABLE found AS
SELECT q.src, q.flips, (n.item).id, n.distance FROM queries q, simhash_near_duplicates(NULL::docs, q.fp) n;
CREATE TEMP TABLE brute AS
SELECT q.src, q.flips, d.id, hamming(d.body_simhash, q.fp) AS distance
FROM queries q JOIN docs d ON hamming(d.body_simhash, q.fp) <= 3;
SELECT (SELECT count(*) FROM found) = (SELECT count(*) FROM brute) AS same_count,
       (SELECT count(*) FROM (TABLE found EXCEPT TABLE brute) x) AS only_in_lookup,
       (SELECT count(*) FROM (TABLE brute EXCEPT TABLE found) x) AS missed_by_lookup;
-- Each planted query finds its source row exactly when the planted distance is within k.
SELECT flips, count(*) FILTER (WHERE EXISTS (SELECT FROM found f WHERE f.src = q.src AND f.flips = q.flips AND f.id = q.src)) AS source_found,
       count(*) AS queries
FROM queries q GROUP BY flips ORDER BY flips;
-- Near-duplicates among the documents themselves (pairs of rows within 3 bits) agree too.
SELECT count(*) AS pairs_by_lookup FROM docs a, simhash_near_duplicates(NULL::docs, a.body_simhash) n WHERE (n.item).id > a.id;
SELECT count(*) AS pairs_by_scan FROM docs a JOIN docs b ON b.id > a.id AND hamming(a.body_simhash, b.body_simhash) <= 3;
-- max_distance above the attached 3 (4 bands) falls back to an exact full scan.
SELECT (SELECT count(*) FROM queries q, simhash_near_duplicates(NULL::docs, q.fp, max_distance => 5) n WHERE q.flips = 4)
     = (SELECT count(*) FROM queries q JOIN docs d ON hamming(d.body_simhash, q.fp) <= 5 WHERE q.flips = 4) AS wide_lookup_exact;
DROP TABLE docs;

-- 100k rows: the lookup's query uses the four band indexes.
CREATE TABLE big (id int PRIMARY KEY, body text);
INSERT INTO big
SELECT i, (SELECT string_agg(s, ' ' ORDER BY k)
           FROM (VALUES (1, (i * 7) % m + 1), (2, (i * 13 + 5) % m + 1), (3, (i / 97) % m + 1)) p(k, n)
           JOIN sentences USING (n)) || ' #' || i
FROM generate_series(1, 100000) i, (SELECT count(*) AS m FROM sentences) c;
SELECT simhash_attach('big', 'body');
ANALYZE big;
CREATE FUNCTION pg_temp.plan(query text) RETURNS SETOF text LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY EXECUTE 'EXPLAIN (COSTS OFF) ' || query;
END $$;
SELECT regexp_replace(regexp_replace(line, '= -?\d+', '= N', 'g'), '''-?\d+''::bigint', 'FP', 'g') AS plan
FROM pg_temp.plan(simhash_near_duplicates_sql('big', (SELECT body_simhash FROM big WHERE id = 4242))) line;
SELECT count(*) >= 1 AS finds_itself
FROM simhash_near_duplicates(NULL::big, (SELECT body_simhash FROM big WHERE id = 4242)) n WHERE (n.item).id = 4242;
DROP TABLE big;
