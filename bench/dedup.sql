-- Run by bench/dedup.sh. Prints one table of timings at the end.
\pset footer off
CREATE EXTENSION simhash_ext;
CREATE TABLE results (step text, rows bigint, seconds numeric, peak_rss_mb numeric, detail text);
SELECT pg_backend_pid() AS pid \gset
\setenv BACKEND_PID :pid

-- Vocabulary: the words of the repository's real documents (English words, Chinese two-character runs).
CREATE TEMP TABLE source_text (doc text);
\copy source_text FROM 'tests/data/long_zh.txt'
\copy source_text FROM 'tests/data/long_en.txt'
\copy source_text FROM 'demo/corpus.tsv' WITH (DELIMITER E'\x1f')
CREATE TEMP TABLE vocab AS
SELECT row_number() OVER (ORDER BY w) - 1 AS id, w FROM (
  SELECT lower(w) AS w FROM source_text, regexp_split_to_table(doc, '[^[:alnum:]]+') w WHERE w ~ '^[a-zA-Z]{3,}$'
  UNION
  SELECT substr(w, i, 2) FROM source_text, regexp_split_to_table(doc, '[^一-龥]+') w, generate_series(1, 40) i
  WHERE length(w) >= i + 1
) x;
ALTER TABLE vocab ADD PRIMARY KEY (id);
SELECT count(*) AS vocabulary FROM vocab \gset
SELECT :vocabulary AS vocabulary;

-- A document: 60 words drawn at random (English and Chinese mixed). 2 % of the rows are reposts of an
-- earlier row with one or two words changed: the near-duplicates to find.
-- Word j of document i is a hash of (seed, i, j): deterministic, and a plain hash join.
CREATE FUNCTION pg_temp.docs(seed int, first bigint, last bigint, words int) RETURNS TABLE (id bigint, body text)
LANGUAGE sql AS $$
  SELECT i, string_agg(v.w, ' ' ORDER BY j)
  FROM generate_series(first, last) i, generate_series(1, words) j, vocab v
  WHERE v.id = (hashint8(i * 1000 + j + seed::bigint * 1000000000000) & 2147483647) % (SELECT count(*) FROM vocab)
  GROUP BY i
$$;
SELECT clock_timestamp() AS t0 \gset
CREATE TABLE uniform (id bigint PRIMARY KEY, body text);
INSERT INTO uniform SELECT * FROM pg_temp.docs(1, 1, :rows, 60);
UPDATE uniform u SET body = regexp_replace(o.body, '^\S+ \S+', 'reposted article')
FROM uniform o WHERE u.id % 50 = 0 AND o.id = u.id - 25;
INSERT INTO results SELECT 'generate uniform corpus', :rows, round(extract(epoch FROM clock_timestamp() - :'t0')::numeric, 1), NULL,
  pg_size_pretty(pg_table_size('uniform'));

-- Parallel query on the fingerprint function itself: a scan that fingerprints every row.
SET max_parallel_workers_per_gather = 0;
SELECT clock_timestamp() AS t0 \gset
SELECT count(simhash(body)) AS fingerprinted FROM uniform \gset
INSERT INTO results SELECT 'SELECT count(simhash(body)), 0 workers', :rows, round(extract(epoch FROM clock_timestamp() - :'t0')::numeric, 1), NULL,
  round(pg_table_size('uniform') / 1e6 / nullif(extract(epoch FROM clock_timestamp() - :'t0')::numeric, 0), 1) || ' MB/s of table';
SET max_parallel_workers_per_gather = 2;
SELECT clock_timestamp() AS t0 \gset
SELECT count(simhash(body)) AS fingerprinted FROM uniform \gset
INSERT INTO results SELECT 'SELECT count(simhash(body)), 2 workers', :rows, round(extract(epoch FROM clock_timestamp() - :'t0')::numeric, 1), NULL,
  'speed-up ' || round((SELECT seconds FROM results WHERE step = 'SELECT count(simhash(body)), 0 workers')
                       / nullif(extract(epoch FROM clock_timestamp() - :'t0')::numeric, 0), 2) || 'x';

-- Parallel speed-up of the fingerprinting in simhash_attach: the same 200,000 rows, 0 then 2 workers.
CREATE TABLE sample0 AS SELECT * FROM uniform WHERE id <= 200000;
CREATE TABLE sample2 AS SELECT * FROM uniform WHERE id <= 200000;
ALTER TABLE sample0 ADD PRIMARY KEY (id);
ALTER TABLE sample2 ADD PRIMARY KEY (id);
SET max_parallel_workers_per_gather = 0;
SELECT clock_timestamp() AS t0 \gset
SELECT simhash_attach('sample0', 'body');
INSERT INTO results SELECT 'attach, 0 parallel workers', (SELECT count(*) FROM sample0), round(extract(epoch FROM clock_timestamp() - :'t0')::numeric, 1), NULL, NULL;
SET max_parallel_workers_per_gather = 2;
SELECT clock_timestamp() AS t0 \gset
SELECT simhash_attach('sample2', 'body');
INSERT INTO results SELECT 'attach, 2 parallel workers', (SELECT count(*) FROM sample2), round(extract(epoch FROM clock_timestamp() - :'t0')::numeric, 1), NULL,
  'speed-up ' || round((SELECT seconds FROM results WHERE step = 'attach, 0 parallel workers')
                       / nullif(extract(epoch FROM clock_timestamp() - :'t0')::numeric, 0), 2) || 'x';
SELECT count(*) = (SELECT count(*) FROM sample0) AS same_fingerprints FROM sample0 a JOIN sample2 b USING (id) WHERE a.body_simhash IS NOT DISTINCT FROM b.body_simhash;
DROP TABLE sample0, sample2;

-- The whole table: attach, pairs, clusters, cleanup.
SELECT clock_timestamp() AS t0 \gset
SELECT simhash_attach('uniform', 'body');
INSERT INTO results SELECT 'attach (fingerprints, bands, indexes)', :rows, round(extract(epoch FROM clock_timestamp() - :'t0')::numeric, 1), NULL, NULL;

\! bash bench/peak_rss.sh start $BACKEND_PID
SELECT clock_timestamp() AS t0 \gset
SELECT count(*) AS pairs FROM simhash_pairs('uniform') \gset
\set peak `bash bench/peak_rss.sh stop`
INSERT INTO results SELECT 'simhash_pairs (distance <= 3)', :rows, round(extract(epoch FROM clock_timestamp() - :'t0')::numeric, 1), :peak, :pairs || ' pairs';
\! bash bench/peak_rss.sh start $BACKEND_PID
SELECT clock_timestamp() AS t0 \gset
SELECT count(DISTINCT representative) AS clusters, count(*) FILTER (WHERE key <> representative) AS duplicates
FROM simhash_clusters('uniform') \gset
\set peak `bash bench/peak_rss.sh stop`
INSERT INTO results SELECT 'simhash_clusters', :rows, round(extract(epoch FROM clock_timestamp() - :'t0')::numeric, 1), :peak,
  :clusters || ' clusters, ' || :duplicates || ' rows to delete';
SELECT clock_timestamp() AS t0 \gset
DELETE FROM uniform t USING simhash_clusters('uniform') c WHERE t.id::text = c.key AND c.key <> c.representative;
INSERT INTO results SELECT 'DELETE all but one row per cluster', :rows, round(extract(epoch FROM clock_timestamp() - :'t0')::numeric, 1), NULL,
  (SELECT count(*) FROM uniform) || ' rows left';
DROP TABLE uniform;

-- Skewed on purpose: 30 % of the rows are one long boilerplate page (150 words) with a tail of their own
-- (:tail characters, about :tail/6 words), so those fingerprints crowd into a few band buckets; with a long
-- tail they are not near-duplicates of each other, with a short one many are.
CREATE TEMP TABLE boilerplate AS SELECT body AS text FROM pg_temp.docs(2, 1, 1, 150);
SELECT clock_timestamp() AS t0 \gset
CREATE TABLE skewed (id bigint PRIMARY KEY, body text);
INSERT INTO skewed SELECT d.id, CASE WHEN d.id % 10 < 3 THEN b.text || ' ' || left(d.body, :tail) ELSE d.body END
FROM pg_temp.docs(3, 1, :rows, 60) d, boilerplate b;
SELECT simhash_attach('skewed', 'body');
INSERT INTO results SELECT 'generate and attach skewed corpus', :rows, round(extract(epoch FROM clock_timestamp() - :'t0')::numeric, 1), NULL, NULL;
INSERT INTO results
SELECT 'skew: largest band bucket', :rows, NULL, NULL,
       max(n) || ' rows share one band value (uniform expectation ' || round(:rows / 65536.0, 1) || ')'
FROM (SELECT count(*) AS n FROM skewed GROUP BY skewed.body_band0
      UNION ALL SELECT count(*) FROM skewed GROUP BY skewed.body_band1
      UNION ALL SELECT count(*) FROM skewed GROUP BY skewed.body_band2
      UNION ALL SELECT count(*) FROM skewed GROUP BY skewed.body_band3) b;
\! bash bench/peak_rss.sh start $BACKEND_PID
SELECT clock_timestamp() AS t0 \gset
SELECT count(*) AS pairs FROM simhash_pairs('skewed') \gset
\set peak `bash bench/peak_rss.sh stop`
INSERT INTO results SELECT 'skewed: simhash_pairs', :rows, round(extract(epoch FROM clock_timestamp() - :'t0')::numeric, 1), :peak, :pairs || ' pairs';
\! bash bench/peak_rss.sh start $BACKEND_PID
SELECT clock_timestamp() AS t0 \gset
SELECT count(DISTINCT representative) AS clusters FROM simhash_clusters('skewed') \gset
\set peak `bash bench/peak_rss.sh stop`
INSERT INTO results SELECT 'skewed: simhash_clusters', :rows, round(extract(epoch FROM clock_timestamp() - :'t0')::numeric, 1), :peak, :clusters || ' clusters';
DROP TABLE skewed;

SELECT step, rows, seconds, peak_rss_mb AS "peak private memory (MB)", detail FROM results;
