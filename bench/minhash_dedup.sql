-- Run by bench/minhash_dedup.sh: simhash_pairs and simhash_clusters of one 1,000,000-row table (:rows)
-- attached with MinHash and, beside it, the same rows attached with SimHash; one table of timings.
\pset footer off
CREATE EXTENSION simhash_ext;
CREATE TABLE results (step text, method text, rows bigint, seconds numeric, peak_rss_mb numeric, detail text);
SELECT pg_backend_pid() AS pid \gset
\setenv BACKEND_PID :pid

-- The corpus of bench/dedup.sql: 60 words a document drawn from the words of the repository's real
-- documents, 2 % of the rows reposts of an earlier row with their first two words changed.
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
CREATE FUNCTION pg_temp.docs(seed int, first bigint, last bigint, words int) RETURNS TABLE (id bigint, body text)
LANGUAGE sql AS $$
  SELECT i, string_agg(v.w, ' ' ORDER BY j)
  FROM generate_series(first, last) i, generate_series(1, words) j, vocab v
  WHERE v.id = (hashint8(i * 1000 + j + seed::bigint * 1000000000000) & 2147483647) % (SELECT count(*) FROM vocab)
  GROUP BY i
$$;
CREATE TABLE mh (id bigint PRIMARY KEY, body text);
INSERT INTO mh SELECT * FROM pg_temp.docs(1, 1, :rows, 60);
UPDATE mh u SET body = regexp_replace(o.body, '^\S+ \S+', 'reposted article')
FROM mh o WHERE u.id % 50 = 0 AND o.id = u.id - 25;
CREATE TABLE sh AS SELECT * FROM mh;
ALTER TABLE sh ADD PRIMARY KEY (id);
VACUUM ANALYZE mh;
VACUUM ANALYZE sh;

SELECT clock_timestamp() AS t0 \gset
SELECT simhash_attach('mh', 'body', method => 'minhash');
INSERT INTO results SELECT 'attach', 'minhash', :rows, round(extract(epoch FROM clock_timestamp() - :'t0')::numeric, 1), NULL, NULL;
SELECT clock_timestamp() AS t0 \gset
SELECT simhash_attach('sh', 'body');
INSERT INTO results SELECT 'attach', 'simhash', :rows, round(extract(epoch FROM clock_timestamp() - :'t0')::numeric, 1), NULL, NULL;

-- Pairs and clusters, the methods alternating.
\! bash bench/peak_rss.sh start $BACKEND_PID
SELECT clock_timestamp() AS t0 \gset
SELECT count(*) AS pairs, count(*) FILTER (WHERE similarity < 0.6) AS below FROM simhash_pairs('mh') \gset
\set peak `bash bench/peak_rss.sh stop`
INSERT INTO results SELECT 'simhash_pairs', 'minhash', :rows, round(extract(epoch FROM clock_timestamp() - :'t0')::numeric, 1), :peak,
  :pairs || ' pairs (' || :below || ' below 0.6)';
\! bash bench/peak_rss.sh start $BACKEND_PID
SELECT clock_timestamp() AS t0 \gset
SELECT count(*) AS pairs FROM simhash_pairs('sh') \gset
\set peak `bash bench/peak_rss.sh stop`
INSERT INTO results SELECT 'simhash_pairs', 'simhash', :rows, round(extract(epoch FROM clock_timestamp() - :'t0')::numeric, 1), :peak, :pairs || ' pairs';
\! bash bench/peak_rss.sh start $BACKEND_PID
SELECT clock_timestamp() AS t0 \gset
SELECT count(DISTINCT representative) AS clusters, count(*) FILTER (WHERE key <> representative) AS duplicates FROM simhash_clusters('mh') \gset
\set peak `bash bench/peak_rss.sh stop`
INSERT INTO results SELECT 'simhash_clusters', 'minhash', :rows, round(extract(epoch FROM clock_timestamp() - :'t0')::numeric, 1), :peak,
  :clusters || ' clusters, ' || :duplicates || ' rows to delete';
\! bash bench/peak_rss.sh start $BACKEND_PID
SELECT clock_timestamp() AS t0 \gset
SELECT count(DISTINCT representative) AS clusters, count(*) FILTER (WHERE key <> representative) AS duplicates FROM simhash_clusters('sh') \gset
\set peak `bash bench/peak_rss.sh stop`
INSERT INTO results SELECT 'simhash_clusters', 'simhash', :rows, round(extract(epoch FROM clock_timestamp() - :'t0')::numeric, 1), :peak,
  :clusters || ' clusters, ' || :duplicates || ' rows to delete';

SELECT step, method, rows, seconds, peak_rss_mb, detail FROM results ORDER BY step, method;
SELECT round(sum(seconds) FILTER (WHERE method = 'minhash' AND step <> 'attach'), 1) AS minhash_pairs_and_clusters_s,
       round(sum(seconds) FILTER (WHERE method = 'simhash' AND step <> 'attach'), 1) AS simhash_pairs_and_clusters_s
FROM results;
