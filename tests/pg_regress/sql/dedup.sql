-- simhash_pairs() and simhash_clusters() against brute force on thousands of rows of real text with
-- planted near-duplicates; the README's one-statement cleanup; cancellation; errors.
\getenv abs_srcdir PG_ABS_SRCDIR
\set include :abs_srcdir '/include/sentences.sql'
\i :include
-- 4,000 distinct documents of four sentences, then 600 planted near-duplicates: copies with an edit.
CREATE TABLE crawl (id int PRIMARY KEY, body text);
INSERT INTO crawl
SELECT i, (SELECT string_agg(s, ' ' ORDER BY k)
           FROM (VALUES (1, (i * 7) % m + 1), (2, (i * 13 + 5) % m + 1), (3, (i * 31 + 11) % m + 1),
                        (4, (i / 405) % m + 1)) p(k, n)
           JOIN sentences USING (n))
FROM generate_series(1, 4000) i, (SELECT count(*) AS m FROM sentences) c;
INSERT INTO crawl
SELECT 4000 + i, CASE i % 3 WHEN 0 THEN body || ' 来源：本地新闻网'
                            WHEN 1 THEN upper(body)
                            ELSE replace(body, '。', '！') END
FROM crawl WHERE id % 6 = 0
ORDER BY id LIMIT 600;
INSERT INTO crawl VALUES (9001, NULL), (9002, '。。。');
SELECT simhash_attach('crawl', 'body', max_distance => 3);
SELECT count(*) AS rows, count(body_simhash) AS fingerprinted FROM crawl;

-- Pairs equal the brute-force scan exactly.
-- The search itself (verify => false): every candidate, unverified.
CREATE TEMP TABLE pairs AS SELECT key_a, key_b, distance FROM simhash_pairs('crawl', verify => false);
CREATE TEMP TABLE brute AS
SELECT a.id::text AS key_a, b.id::text AS key_b, hamming(a.body_simhash, b.body_simhash) AS distance
FROM crawl a JOIN crawl b ON a.id < b.id AND hamming(a.body_simhash, b.body_simhash) <= 3;
SELECT (SELECT count(*) FROM pairs) AS pairs, (SELECT count(*) FROM brute) AS brute_force,
       (SELECT count(*) FROM (TABLE pairs EXCEPT TABLE brute) x) AS extra,
       (SELECT count(*) FROM (TABLE brute EXCEPT TABLE pairs) x) AS missed,
       (SELECT count(*) FROM (SELECT key_a, key_b FROM pairs GROUP BY 1, 2 HAVING count(*) > 1) x) AS repeated;
SELECT distance, count(*) FROM pairs GROUP BY distance ORDER BY distance;
-- Another distance, and exact duplicates only.
SELECT (SELECT count(*) FROM simhash_pairs('crawl', max_distance => 6, verify => false))
     = (SELECT count(*) FROM crawl a JOIN crawl b ON a.id < b.id AND hamming(a.body_simhash, b.body_simhash) <= 6)
       AS distance_6_exact,
       (SELECT count(*) FROM (SELECT key_a, key_b, distance FROM simhash_pairs('crawl', max_distance => 8, verify => false)
                              EXCEPT SELECT a.id::text, b.id::text, hamming(a.body_simhash, b.body_simhash)
                                     FROM crawl a JOIN crawl b ON a.id < b.id AND hamming(a.body_simhash, b.body_simhash) <= 8) x)
     + (SELECT count(*) FROM (SELECT a.id::text, b.id::text, hamming(a.body_simhash, b.body_simhash)
                              FROM crawl a JOIN crawl b ON a.id < b.id AND hamming(a.body_simhash, b.body_simhash) <= 8
                              EXCEPT SELECT key_a, key_b, distance FROM simhash_pairs('crawl', max_distance => 8, verify => false)) x)
       AS distance_8_differences,
       (SELECT count(*) FROM simhash_pairs('crawl', 0, verify => false))
     = (SELECT count(*) FROM crawl a JOIN crawl b ON a.id < b.id AND a.body_simhash = b.body_simhash)
       AS distance_0_exact;
-- Verified (the attachment's default): the candidates whose texts' exact similarity reaches 0.3.
SELECT (SELECT count(*) FROM simhash_pairs('crawl', max_distance => 8, verify => false)) AS candidates,
       (SELECT count(*) FROM simhash_pairs('crawl', max_distance => 8)) AS verified,
       (SELECT count(*) FROM (SELECT key_a, key_b, distance FROM simhash_pairs('crawl', max_distance => 8)
                              EXCEPT SELECT key_a, key_b, distance
                                     FROM simhash_pairs('crawl', max_distance => 8, verify => false)) x) AS not_candidates,
       (SELECT min(similarity) >= 0.3 AND max(similarity) <= 1 FROM simhash_pairs('crawl', max_distance => 8)) AS reach;

-- Clusters equal the connected components of the pairs (label propagation here), and each cluster's
-- representative is its smallest key.
CREATE TEMP TABLE clusters AS SELECT * FROM simhash_clusters('crawl', verify => false);
CREATE TEMP TABLE label AS SELECT id, id AS label FROM crawl;
DO $$
DECLARE changed bigint;
BEGIN
  LOOP
    UPDATE label l SET label = m.label
    FROM (SELECT x.id, min(least(lx.label, ly.label)) AS label
          FROM pairs p
          JOIN label lx ON lx.id = p.key_a::int JOIN label ly ON ly.id = p.key_b::int
          CROSS JOIN LATERAL (VALUES (p.key_a::int), (p.key_b::int)) x(id)
          GROUP BY x.id) m
    WHERE l.id = m.id AND m.label < l.label;
    GET DIAGNOSTICS changed = ROW_COUNT;
    EXIT WHEN changed = 0;
  END LOOP;
END $$;
SELECT count(*) AS rows, count(DISTINCT representative) AS clusters,
       count(*) FILTER (WHERE c.representative::int <> l.label) AS wrong_cluster,
       (SELECT count(*) FROM (SELECT representative, min(key::int) m FROM clusters GROUP BY 1) x
        WHERE m <> representative::int) AS wrong_representative,
       bool_and(c.cluster_size = (SELECT count(*) FROM clusters c2 WHERE c2.representative = c.representative)) AS sizes
FROM clusters c JOIN label l ON l.id = c.key::int;
SELECT key, representative, cluster_size FROM clusters WHERE key IN ('9001', '9002') ORDER BY key;

-- The README's cleanup: keep one row per cluster, delete the rest, in one statement.
DELETE FROM crawl t USING simhash_clusters('crawl') c
WHERE t.id::text = c.key AND c.key <> c.representative;
SELECT count(*) AS rows_left, (SELECT count(DISTINCT representative) FROM clusters) AS clusters FROM crawl;
SELECT count(*) AS pairs_left FROM simhash_pairs('crawl');
SELECT simhash_detach('crawl');
DROP TABLE crawl;

-- Keys of other types: composite keys come out as row literals.
CREATE TABLE pages (site int, path text, body text, PRIMARY KEY (site, path));
SELECT simhash_attach('pages', 'body', max_distance => 3);
INSERT INTO pages VALUES (1, '/a', 'Museum opens exhibit of hand-drawn harbor maps.'),
  (2, '/b', 'MUSEUM OPENS EXHIBIT OF HAND-DRAWN HARBOR MAPS!'), (1, '/c', 'Cranes return to the wetlands.');
SELECT * FROM simhash_pairs('pages');
SELECT * FROM simhash_clusters('pages') ORDER BY key;
-- Progress notices: every step with a zero interval (the default is every 5 seconds).
SET simhash.progress_interval = 0;
SELECT count(*) FROM simhash_clusters('pages');
RESET simhash.progress_interval;
SHOW simhash.progress_interval;
DROP TABLE pages;

-- statement_timeout stops a long run promptly (SQLSTATE 57014).
CREATE TABLE many (id int PRIMARY KEY, body text);
INSERT INTO many SELECT i, md5(i::text) || ' ' || md5((i * 7)::text) FROM generate_series(1, 200000) i;
SELECT simhash_attach('many', 'body', max_distance => 3);
SELECT clock_timestamp() AS started \gset
SET statement_timeout = '20ms';
SELECT count(*) FROM simhash_clusters('many');
RESET statement_timeout;
SELECT clock_timestamp() - :'started'::timestamptz < interval '1 s' AS stopped_within_a_second;
DROP TABLE many;

-- Errors.
CREATE TABLE plain (id int PRIMARY KEY, body text);
\set include :abs_srcdir '/include/try.sql'
\i :include
SELECT pg_temp.try($$SELECT * FROM simhash_pairs('plain')$$) AS not_attached;
SELECT simhash_attach('plain', 'body', max_distance => 3);
SELECT pg_temp.try($$SELECT * FROM simhash_pairs('plain', max_distance => 17)$$) AS too_far,
       pg_temp.try($$SELECT * FROM simhash_clusters('plain', max_distance => -1)$$) AS negative,
       pg_temp.try($$SELECT * FROM simhash_pairs('no_such_table')$$) AS no_table;
DROP TABLE plain;
