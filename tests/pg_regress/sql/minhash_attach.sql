-- simhash_attach(..., method => 'minhash'): the signature and band-key columns and their GIN index,
-- the trigger's modes on real reposts with a header and footer, lookups with their similarity, the
-- errors of settings that do not apply, scope, min_length, partitions, rename and detach; and the
-- contract: lookups and dedup equal a brute-force scan for "shares an LSH band and estimated
-- similarity >= threshold" on documents of real sentences.
\getenv abs_srcdir PG_ABS_SRCDIR
\set include :abs_srcdir '/include/sentences.sql'
\i :include
CREATE TABLE news (id int PRIMARY KEY, body text);
INSERT INTO news VALUES
  (1, '市图书馆改造完成，下个月一日起重新对读者开放，新增自习座位两百个，并延长周末开放时间。馆方表示，改造期间借出的图书可以在任意分馆归还，逾期费用全部免除。'),
  (2, 'The city council approved a budget for protected bike lanes on three main streets. Construction starts in spring and the lanes should open before the end of the year, the mayor said.'),
  -- Already there: a repost of row 2 stays when the table is attached.
  (3, 'Local news | The city council approved a budget for protected bike lanes on three main streets. Construction starts in spring and the lanes should open before the end of the year, the mayor said. Share this story.');
-- Settings that do not apply to the method, and bad values (22023); a registry is SimHash's (0A000).
SELECT simhash_attach('news', 'body', method => 'lsh');
SELECT simhash_attach('news', 'body', method => 'minhash', max_distance => 3);
SELECT simhash_attach('news', 'body', method => 'minhash', weighting => 'tf');
SELECT simhash_attach('news', 'body', threshold => 0.8, verify => false);
SELECT simhash_attach('news', 'body', method => 'minhash', threshold => 1.5);
SELECT simhash_attach('news', 'body', method => 'minhash', tokenizer => 'jieba', shingle => 99);
SELECT simhash_attach('news', 'body', method => 'minhash', on_duplicate => 'error', registry => true);
SELECT count(*) AS attachments FROM simhash_attachments();
SELECT simhash_attach('news', 'body', method => 'minhash', on_duplicate => 'error');
SELECT text_column, fingerprint_column, band_columns, max_distance, on_duplicate, tokenizer, shingle, weighting,
       stopwords, fold, method, threshold
FROM simhash_attachments();
SELECT attname, format_type(atttypid, atttypmod), pg_get_expr(d.adbin, d.adrelid) AS generated
FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE attrelid = 'news'::regclass AND attnum > 0 ORDER BY attnum;
SELECT pg_get_indexdef(indexrelid) FROM pg_index WHERE indrelid = 'news'::regclass AND NOT indisprimary;
-- The rows already there got the signature the trigger gives, and their band keys.
SELECT id, body_minhash = minhash(body) AS signed, body_lsh = minhash_bands(minhash(body)) AS banded FROM news ORDER BY id;
-- A repost with a header and footer is rejected, naming the row and the similarity.
INSERT INTO news VALUES (4, '【本地新闻】市图书馆改造完成，下个月一日起重新对读者开放，新增自习座位两百个，并延长周末开放时间。馆方表示，改造期间借出的图书可以在任意分馆归还，逾期费用全部免除。（来源：本地日报，转载请注明出处）');
INSERT INTO news VALUES (4, 'Breaking: The city council approved a budget for protected bike lanes on three main streets. Construction starts in spring and the lanes should open before the end of the year, the mayor said. Follow us for more.');
-- Unrelated texts, a NULL text and a text without tokens pass.
INSERT INTO news VALUES (5, 'Heavy snow is expected in the mountains this weekend; drivers should carry chains and check road reports.'),
                        (6, NULL), (7, '…!!!');
SELECT id, body_minhash IS NULL AS unsigned FROM news WHERE id IN (6, 7) ORDER BY id;
-- Two near-duplicates in one statement: the second is checked against the first.
INSERT INTO news VALUES (8, 'A new bakery opened downtown, selling sourdough bread and pastries every morning from seven until noon, the owners said.'),
                        (9, 'A new bakery opened downtown, selling sourdough bread and pastries every morning from seven until noon, the owners said on Friday.');
-- An UPDATE that makes a row a repost is rejected; a row is never its own near-duplicate.
UPDATE news SET body = (SELECT body FROM news WHERE id = 2) || ' Read more.' WHERE id = 5;
UPDATE news SET body = body || ' Updated.' WHERE id = 5;
-- COPY checks each row: this one is a near-duplicate of row 5.
COPY news (id, body) FROM STDIN;
10	Heavy snow is expected in the mountains this weekend; drivers should carry chains and check road reports. Updated again.
\.
SELECT id FROM news ORDER BY id;
-- Lookups: by text (the table's options), by signature, with another threshold; rows come with
-- their similarity, most similar first, and no distance.
SELECT (n.item).id, n.distance, round(n.similarity::numeric, 3) AS similarity
FROM simhash_near_duplicates(NULL::news, 'The city council approved a budget for protected bike lanes on three main streets. Construction starts in spring.') n;
SELECT (n.item).id, round(n.similarity::numeric, 3) AS similarity
FROM simhash_near_duplicates(NULL::news, 'The city council approved a budget for protected bike lanes on three main streets. Construction starts in spring.', threshold => 0.7) n;
SELECT (n.item).id, n.similarity FROM simhash_near_duplicates(NULL::news, (SELECT body_minhash FROM news WHERE id = 1)) n;
SELECT count(*) AS none_for_null FROM simhash_near_duplicates(NULL::news, NULL::text);
-- What a MinHash attachment has not: fingerprints, distances, a probe plan (22023); signatures
-- made with other options (22000) or malformed (22P03).
SELECT * FROM simhash_near_duplicates(NULL::news, 12345::bigint);
SELECT * FROM simhash_near_duplicates(NULL::news, 'some text', max_distance => 3);
SELECT * FROM simhash_near_duplicates(NULL::news, 'some text', threshold => 2);
SELECT * FROM simhash_near_duplicates(NULL::news, minhash('some text', shingle => 1));
SELECT * FROM simhash_near_duplicates(NULL::news, '\x0102'::bytea);
SELECT simhash_near_duplicates_sql('news', 1);
SELECT * FROM simhash_lookup_cost('news', 1);
-- And a SimHash attachment takes no signature or threshold.
CREATE TABLE plain_news (id int PRIMARY KEY, body text);
SELECT simhash_attach('plain_news', 'body');
SELECT * FROM simhash_near_duplicates(NULL::plain_news, minhash('some text'));
SELECT * FROM simhash_near_duplicates(NULL::plain_news, 'some text', threshold => 0.5);
SELECT count(*) AS simhash_rows_have_no_similarity FROM simhash_near_duplicates(NULL::plain_news, 'some text') n WHERE n.similarity IS NOT NULL;

-- Skip and flag.
CREATE TABLE skipped (id int PRIMARY KEY, body text);
SELECT simhash_attach('skipped', 'body', method => 'minhash', on_duplicate => 'skip');
INSERT INTO skipped SELECT id, body FROM news WHERE id IN (1, 2);
INSERT INTO skipped VALUES (3, 'Local news | ' || (SELECT body FROM news WHERE id = 2) || ' Share this story.');
INSERT INTO skipped VALUES (4, 'An unrelated text about a chess tournament held at the public library last Sunday afternoon.');
SELECT id FROM skipped ORDER BY id;
CREATE TABLE flagged (id int PRIMARY KEY, body text);
SELECT simhash_attach('flagged', 'body', method => 'minhash', on_duplicate => 'flag', threshold => 0.6);
INSERT INTO flagged SELECT id, body FROM news WHERE id IN (1, 2);
INSERT INTO flagged VALUES (3, 'Local news | ' || (SELECT body FROM news WHERE id = 2) || ' Share this story.'),
                           (4, 'An unrelated text about a chess tournament held at the public library last Sunday afternoon.');
SELECT id, body_duplicate_of FROM flagged ORDER BY id;

-- Scope: reposts count only within a site; min_length: short texts are never checked.
CREATE TABLE posts (id int PRIMARY KEY, site int, body text);
SELECT simhash_attach('posts', 'body', method => 'minhash', on_duplicate => 'error', scope => 'site', min_length => 40);
INSERT INTO posts VALUES (1, 1, (SELECT body FROM news WHERE id = 2)), (2, 2, (SELECT body FROM news WHERE id = 2) || ' Share.');
INSERT INTO posts VALUES (3, 1, (SELECT body FROM news WHERE id = 2) || ' Share.');
INSERT INTO posts VALUES (4, 1, 'Meeting moved to Friday.'), (5, 1, 'Meeting moved to Friday!');
SELECT id FROM posts ORDER BY id;

-- Partitions: reposts are found across partitions, and the partitions got the columns and index.
CREATE TABLE feed (id int, day date, body text, PRIMARY KEY (id, day)) PARTITION BY RANGE (day);
CREATE TABLE feed_1 PARTITION OF feed FOR VALUES FROM ('2026-01-01') TO ('2026-02-01');
CREATE TABLE feed_2 PARTITION OF feed FOR VALUES FROM ('2026-02-01') TO ('2026-03-01');
INSERT INTO feed VALUES (1, '2026-01-05', (SELECT body FROM news WHERE id = 1));
SELECT simhash_attach('feed', 'body', method => 'minhash', on_duplicate => 'error');
INSERT INTO feed VALUES (2, '2026-02-05', '【转载】' || (SELECT body FROM news WHERE id = 1) || '（来源：本地日报）');
CREATE TABLE feed_3 (id int, day date, body text, PRIMARY KEY (id, day));
INSERT INTO feed_3 VALUES (3, '2026-03-05', 'Heavy snow is expected in the mountains this weekend; drivers should carry chains.');
ALTER TABLE feed ATTACH PARTITION feed_3 FOR VALUES FROM ('2026-03-01') TO ('2026-04-01');
SELECT id, body_minhash = minhash(body) AS signed FROM feed ORDER BY id;
SELECT (n.item).id, round(n.similarity::numeric, 3) AS similarity FROM simhash_near_duplicates(NULL::feed, (SELECT body FROM news WHERE id = 1)) n;
SELECT c.relname, count(*) FILTER (WHERE pg_get_indexdef(i.indexrelid) ~ 'gin \(body_lsh\)') AS gin_indexes
FROM pg_class c JOIN pg_index i ON i.indrelid = c.oid WHERE c.relname LIKE 'feed%' GROUP BY 1 ORDER BY 1;

-- Rename follows; detach removes everything the attach added.
ALTER TABLE news RENAME COLUMN body TO content;
SELECT text_column, fingerprint_column, band_columns FROM simhash_attachments() WHERE table_name = 'news'::regclass;
INSERT INTO news VALUES (11, (SELECT content FROM news WHERE id = 1) || '（完）');
SELECT simhash_detach('news');
SELECT attname FROM pg_attribute WHERE attrelid = 'news'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum;

-- The contract, on 1,500 documents of three real sentences each (rows that share sentences are
-- near-duplicates of each other): lookups of 150 of them and simhash_pairs equal a brute-force
-- scan of every stored signature for "shares a band and similarity >= threshold" (the estimate:
-- attached with verify => false; verify.sql and verify_dedup.sql test the verified contract).
CREATE TABLE docs (id int PRIMARY KEY, body text);
INSERT INTO docs
SELECT i, (SELECT string_agg(s, ' ' ORDER BY k)
           FROM (VALUES (1, (i * 7) % m + 1), (2, (i * 13 + 5) % m + 1), (3, (i / 7) % m + 1)) p(k, n)
           JOIN sentences USING (n))
FROM generate_series(1, 1500) i, (SELECT count(*) AS m FROM sentences) c;
SELECT simhash_attach('docs', 'body', method => 'minhash', verify => false);
CREATE TEMP TABLE brute AS
SELECT a.id AS a, b.id AS b, minhash_similarity(a.body_minhash, b.body_minhash) AS similarity
FROM docs a JOIN docs b ON a.id <> b.id
WHERE minhash_similarity(a.body_minhash, b.body_minhash) >= 0.5
  AND EXISTS (SELECT FROM unnest(a.body_lsh, b.body_lsh) u(x, y) WHERE x = y);
SELECT count(*) > 100 AS enough_pairs, min(similarity) >= 0.5 AS above_threshold,
       count(*) FILTER (WHERE similarity < 0.6) > 0 AS some_near_threshold FROM brute;
-- Lookups of 150 rows' texts (each finds itself too).
CREATE TEMP TABLE looked AS
SELECT d.id AS a, (n.item).id AS b, n.similarity
FROM docs d CROSS JOIN LATERAL simhash_near_duplicates(NULL::docs, d.body) n WHERE d.id % 10 = 3;
SELECT (SELECT count(*) FROM looked WHERE a <> b) AS found,
       (SELECT count(*) FROM ((SELECT a, b, similarity FROM looked WHERE a <> b)
                              EXCEPT (SELECT a, b, similarity FROM brute WHERE a % 10 = 3)) x) AS extra,
       (SELECT count(*) FROM ((SELECT a, b, similarity FROM brute WHERE a % 10 = 3)
                              EXCEPT (SELECT a, b, similarity FROM looked)) x) AS missed,
       (SELECT count(*) FROM looked WHERE a = b AND similarity = 1) AS themselves;
-- A lookup returns the most similar first.
SELECT bool_and(ordered) AS most_similar_first FROM (
  SELECT similarity <= lag(similarity) OVER (PARTITION BY a ORDER BY ord) OR lag(similarity) OVER (PARTITION BY a ORDER BY ord) IS NULL AS ordered
  FROM (SELECT d.id AS a, n.similarity, row_number() OVER () AS ord
        FROM docs d CROSS JOIN LATERAL simhash_near_duplicates(NULL::docs, d.body) n WHERE d.id % 10 = 3) x) y;
-- simhash_pairs: the brute force's pairs, each once (key_a first), with their similarity and no
-- distance; with another threshold, the brute force's pairs at or above it.
CREATE TEMP TABLE paired AS SELECT key_a::int AS a, key_b::int AS b, distance, similarity FROM simhash_pairs('docs');
SELECT (SELECT count(*) FROM paired) AS pairs,
       (SELECT count(*) FROM paired WHERE a >= b OR distance IS NOT NULL) AS malformed,
       (SELECT count(*) FROM (SELECT a, b, similarity FROM paired EXCEPT SELECT a, b, similarity FROM brute WHERE a < b) x) AS extra,
       (SELECT count(*) FROM (SELECT a, b, similarity FROM brute WHERE a < b EXCEPT SELECT a, b, similarity FROM paired) x) AS missed;
SELECT (SELECT count(*) FROM simhash_pairs('docs', threshold => 0.75)) AS pairs_075,
       (SELECT count(*) FROM brute WHERE a < b AND similarity >= 0.75) AS brute_075;
-- simhash_clusters: the connected components of the brute force's pairs, named by their first row.
CREATE TEMP TABLE components AS
WITH RECURSIVE reach(id, r) AS (SELECT id, id FROM docs UNION SELECT b.b, reach.r FROM reach JOIN brute b ON b.a = reach.id)
SELECT id, min(r) AS representative FROM reach GROUP BY id;
SELECT count(*) AS rows, count(*) FILTER (WHERE c.representative::int <> k.representative) AS differ,
       count(DISTINCT c.representative) AS clusters, max(c.cluster_size) > 1 AS some_merged
FROM simhash_clusters('docs') c JOIN components k ON k.id = c.key::int;
-- The other method's setting is refused (22023).
SELECT * FROM simhash_pairs('docs', max_distance => 3);
SELECT * FROM simhash_clusters('plain_news', threshold => 0.5, verify => false);
SELECT * FROM simhash_pairs('docs', threshold => -1);
DROP TABLE news, plain_news, skipped, flagged, posts, feed, docs;
