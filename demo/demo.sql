-- The demo run by scripts/demo.sh: a small corpus of Chinese and English articles, some of them
-- reposted with small edits, and the near-duplicates that simhash_ext finds among them.
\pset footer off
\echo '== CREATE EXTENSION simhash_ext'
CREATE EXTENSION simhash_ext;

CREATE TABLE articles (id serial PRIMARY KEY, title text NOT NULL, body text NOT NULL);
\copy articles (title, body) FROM PROGRAM 'tail -n +2 demo/corpus.tsv'
SELECT count(*) AS articles_loaded FROM articles;

\echo '== One fingerprint, and the features behind it'
SELECT simhash('北京地铁19号线今天开通，全长22公里。') AS fingerprint;
SELECT feature, weight FROM simhash_features('北京地铁19号线今天开通，全长22公里。');

\echo '== Attach near-duplicate detection: a fingerprint column, 4 indexed band columns, a trigger'
\echo '   (max_distance 7, the default: exact through the four band indexes)'
SELECT simhash_attach('articles', 'body', on_duplicate => 'error');
SELECT id, left(title, 28) AS title, body_simhash, simhash_bands(body_simhash) AS bands
FROM articles ORDER BY id LIMIT 8;

\echo '== Near-duplicate pairs already in the corpus (distance <= 7), found through the band indexes'
\echo '   (the heavy rewrites and the two power outage notices from one template stay out of reach)'
SELECT a.id AS a, (n.item).id AS b, n.distance, left(a.title, 30) AS title_a, left((n.item).title, 44) AS title_b
FROM articles a, simhash_near_duplicates(NULL::articles, a.body_simhash) n
WHERE (n.item).id > a.id
ORDER BY n.distance, a.id, b;

\echo '== Look up the near-duplicates of a new text, nearest first'
SELECT (n.item).id, left((n.item).title, 40) AS title, n.distance
FROM simhash_near_duplicates(NULL::articles,
  (SELECT replace(body, '。', '！') FROM articles WHERE title LIKE '地铁五号线%' ORDER BY id LIMIT 1)) n;

\echo '== A reposted article is rejected (SQLSTATE 23505), a new one is accepted'
\set ON_ERROR_STOP 0
INSERT INTO articles (title, body)
SELECT 'repost of ' || title, replace(body, '。', '！') FROM articles WHERE title LIKE '地铁五号线%' ORDER BY id LIMIT 1;
\set ON_ERROR_STOP 1
INSERT INTO articles (title, body)
VALUES ('A new article', 'The harbor ferry will run an extra evening trip on weekends starting next month, the port authority said.');
SELECT count(*) AS articles_now FROM articles;

\echo '== skip mode drops a near-duplicate silently (INSERT 0 0)'
SELECT simhash_detach('articles');
SELECT simhash_attach('articles', 'body', on_duplicate => 'skip');
\set QUIET 0
INSERT INTO articles (title, body)
SELECT 'repost of ' || title, upper(body) FROM articles WHERE title LIKE 'Quillpad%' ORDER BY id LIMIT 1;
\set QUIET 1

\echo '== How far apart the other pairs are (unrelated texts sit near 32 bits)'
SELECT width_bucket(hamming(a.body_simhash, b.body_simhash), 0, 64, 8) * 8 - 8 AS "distance from", count(*) AS pairs
FROM articles a JOIN articles b ON a.id < b.id
GROUP BY 1 ORDER BY 1;

\echo '== Every reposted variant against its original: small edits stay within a few bits, rewrites do not'
SELECT v.id, o.id AS original, hamming(v.body_simhash, o.body_simhash) AS distance,
       substring(v.title FROM '\(variant: (.*)\)$') AS edit
FROM articles v JOIN articles o ON v.title LIKE o.title || ' (variant:%'
ORDER BY distance, v.id;
