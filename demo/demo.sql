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

\echo '== Fingerprints and bands of every article (4 bands of 16 bits)'
ALTER TABLE articles ADD COLUMN fp bigint;
UPDATE articles SET fp = simhash(body);
SELECT id, left(title, 28) AS title, fp, simhash_bands(fp) AS bands FROM articles ORDER BY id LIMIT 8;

\echo '== Near-duplicate pairs within Hamming distance 3: candidates share a band, hamming() verifies'
SELECT a.id AS a, b.id AS b, hamming(a.fp, b.fp) AS distance,
       left(a.title, 30) AS title_a, left(b.title, 44) AS title_b
FROM articles a
JOIN articles b ON a.id < b.id
 AND EXISTS (SELECT FROM generate_series(0, 3) i WHERE simhash_band(a.fp, i) = simhash_band(b.fp, i))
WHERE hamming(a.fp, b.fp) <= 3
ORDER BY distance, a.id, b.id;

\echo '== How far apart the other pairs are (unrelated texts sit near 32 bits)'
SELECT width_bucket(hamming(a.fp, b.fp), 0, 64, 8) * 8 - 8 AS "distance from", count(*) AS pairs
FROM articles a JOIN articles b ON a.id < b.id
GROUP BY 1 ORDER BY 1;

\echo '== Every reposted variant against its original: small edits stay within a few bits, rewrites do not'
SELECT v.id, o.id AS original, hamming(v.fp, o.fp) AS distance,
       substring(v.title FROM '\(variant: (.*)\)$') AS edit
FROM articles v JOIN articles o ON v.title LIKE o.title || ' (variant:%'
ORDER BY distance, v.id;
