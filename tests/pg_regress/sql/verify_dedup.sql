-- Verified dedup (issue 43): simhash_pairs() and simhash_clusters() keep a candidate pair only when
-- the exact Jaccard similarity of the two texts' shingles reaches the threshold, and return it.
-- The shingles of these texts (lowercase words, no punctuation) are their pairs of adjacent words:
-- word_pairs() computes them here, independently of the extension, for the expected similarities.
CREATE FUNCTION word_pairs(t text) RETURNS text[] LANGUAGE sql IMMUTABLE AS $$
  SELECT array_agg(DISTINCT w[i] || ' ' || w[i + 1])
  FROM (SELECT regexp_split_to_array(t, ' ') AS w) s, generate_series(1, array_length(w, 1) - 1) i
$$;
CREATE FUNCTION jaccard(a text, b text) RETURNS float8 LANGUAGE sql IMMUTABLE AS $$
  SELECT (SELECT count(*) FROM (SELECT unnest(word_pairs(a)) INTERSECT SELECT unnest(word_pairs(b))) i)::float8
       / (SELECT count(*) FROM (SELECT unnest(word_pairs(a)) UNION SELECT unnest(word_pairs(b))) u)
$$;
-- A SimHash attachment verifies without the stop words its fingerprint drops (since 0.12.0, issue
-- 49): its exact similarity is shingle_similarity(a, b, stopwords => true), whose shingles the core
-- tests hold to an independent oracle. jaccard() above stays the oracle of the MinHash attachment.
CREATE FUNCTION simhash_jaccard(a text, b text) RETURNS float8 LANGUAGE sql IMMUTABLE AS $$
  SELECT shingle_similarity(a, b, stopwords => true)
$$;
-- Reverses the order of a text's words: the same words and letters (a SimHash near-duplicate for
-- the 'bigram' tokenizer), hardly a pair of adjacent words in common (no verified near-duplicate).
CREATE FUNCTION reversed_words(t text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT string_agg(w, ' ' ORDER BY i DESC) FROM unnest(regexp_split_to_array(t, ' ')) WITH ORDINALITY u(w, i)
$$;
CREATE TABLE texts (id int PRIMARY KEY, body text);
INSERT INTO texts VALUES
  (1, 'the river rose quickly after three days of heavy rain and the villagers carried their furniture to the upper floors while the mayor asked the regional office for boats blankets and clean drinking water'),
  -- 1 with one word changed: the real near-duplicate.
  (2, 'the river rose quickly after three days of heavy rain and the villagers carried their furniture to the upper floors while the mayor asked the national office for boats blankets and clean drinking water'),
  (4, 'a small bakery on the corner of the market square sells bread made with flour from a mill that has been grinding grain by water power for more than two hundred years'),
  -- 4 with a sentence added.
  (5, 'a small bakery on the corner of the market square sells bread made with flour from a mill that has been grinding grain by water power for more than two hundred years and still opens at dawn'),
  -- 1 again: identical fingerprints, similarity 1.
  (6, 'the river rose quickly after three days of heavy rain and the villagers carried their furniture to the upper floors while the mayor asked the regional office for boats blankets and clean drinking water'),
  (7, NULL),
  (8, 'short');
INSERT INTO texts SELECT 3, reversed_words(body) FROM texts WHERE id = 1;
INSERT INTO texts SELECT 9, reversed_words(body) FROM texts WHERE id = 4;
SELECT simhash_attach('texts', 'body', max_distance => 16);
SELECT verify FROM simhash_attachments() WHERE table_name = 'texts'::regclass;

-- Unverified, the reversed texts are candidates at distance 16 (they share every word and letter).
SELECT key_a, key_b, distance, similarity FROM simhash_pairs('texts', verify => false) ORDER BY key_a, key_b;
-- Verified (the attachment's default): only the real near-duplicates, with their exact similarity,
-- which is the Jaccard similarity of their pairs of adjacent words.
SELECT p.key_a, p.key_b, p.distance, round(p.similarity::numeric, 4) AS similarity,
       p.similarity = simhash_jaccard(a.body, b.body) AS exact
FROM simhash_pairs('texts') p JOIN texts a ON a.id = p.key_a::int JOIN texts b ON b.id = p.key_b::int
ORDER BY key_a, key_b;
-- Every unverified pair that verification removed is below the threshold (0.3 by default).
SELECT u.key_a, u.key_b, round(simhash_jaccard(a.body, b.body)::numeric, 4) AS jaccard
FROM simhash_pairs('texts', verify => false) u
JOIN texts a ON a.id = u.key_a::int JOIN texts b ON b.id = u.key_b::int
WHERE (u.key_a, u.key_b) NOT IN (SELECT key_a, key_b FROM simhash_pairs('texts'))
ORDER BY 1, 2;
-- A threshold of the call: the least verified similarity.
SELECT key_a, key_b, round(similarity::numeric, 4) AS similarity FROM simhash_pairs('texts', threshold => 0.9) ORDER BY 1, 2;
SELECT count(*) AS at_zero FROM simhash_pairs('texts', threshold => 0) ;
SELECT count(*) = (SELECT count(*) FROM simhash_pairs('texts', verify => false)) AS zero_keeps_all
FROM simhash_pairs('texts', threshold => 0);
-- Clusters follow the verified pairs; unverified, the reversed texts join their originals.
SELECT key, representative, cluster_size FROM simhash_clusters('texts') ORDER BY key::int;
SELECT key, representative, cluster_size FROM simhash_clusters('texts', verify => false) ORDER BY key::int;
SELECT key, representative, cluster_size FROM simhash_clusters('texts', threshold => 0.9) ORDER BY key::int;
-- The threshold of a SimHash attachment is for verification only (22023), and 0 to 1.
SELECT * FROM simhash_pairs('texts', threshold => 0.5, verify => false);
SELECT * FROM simhash_clusters('texts', threshold => 1.5);

-- The same rows in a partitioned table without a primary key: rows named by partition and ctid,
-- their texts read again from each partition.
CREATE TABLE parted (id int, body text) PARTITION BY RANGE (id);
CREATE TABLE parted_low PARTITION OF parted FOR VALUES FROM (0) TO (5);
CREATE TABLE parted_high PARTITION OF parted FOR VALUES FROM (5) TO (100);
INSERT INTO parted SELECT id, body FROM texts;
SELECT simhash_attach('parted', 'body', max_distance => 16);
CREATE TEMP TABLE ids AS SELECT ROW(tableoid::regclass, ctid)::text AS key, id FROM parted;
SELECT a.id AS id_a, b.id AS id_b, p.distance, p.similarity = simhash_jaccard(ta.body, tb.body) AS exact
FROM simhash_pairs('parted') p JOIN ids a ON a.key = p.key_a JOIN ids b ON b.key = p.key_b
JOIN texts ta ON ta.id = a.id JOIN texts tb ON tb.id = b.id
ORDER BY 1, 2;
SELECT count(*) AS unverified FROM simhash_pairs('parted', verify => false);
SELECT i.id, r.id AS representative, c.cluster_size
FROM simhash_clusters('parted') c JOIN ids i ON i.key = c.key JOIN ids r ON r.key = c.representative
ORDER BY 1;

-- An attachment that does not verify (as those made before 0.11.0) keeps its behaviour: its pairs
-- are the candidates, and a call verifies when it asks.
CREATE TABLE old_texts AS SELECT id, body FROM texts;
ALTER TABLE old_texts ADD PRIMARY KEY (id);
SELECT simhash_attach('old_texts', 'body', max_distance => 16, verify => false);
SELECT key_a, key_b, distance, similarity FROM simhash_pairs('old_texts') ORDER BY 1, 2;
SELECT key_a, key_b, distance, round(similarity::numeric, 4) AS similarity
FROM simhash_pairs('old_texts', verify => true) ORDER BY 1, 2;
SELECT count(*) AS clusters FROM (SELECT DISTINCT representative FROM simhash_clusters('old_texts')) c;
SELECT * FROM simhash_pairs('old_texts', threshold => 0.5);
-- The declarations of 0.10.0 (four arguments) call the library's symbols of that arity until
-- ALTER EXTENSION ... UPDATE: they verify as the attachment does.
CREATE FUNCTION pairs_0_10(regclass, int DEFAULT NULL, text DEFAULT NULL, float8 DEFAULT NULL)
RETURNS TABLE (key_a text, key_b text, distance int, similarity float8)
AS '$libdir/simhash_ext', 'pairs_wrapper' LANGUAGE c;
CREATE FUNCTION clusters_0_10(regclass, int DEFAULT NULL, text DEFAULT NULL, float8 DEFAULT NULL)
RETURNS TABLE (key text, representative text, cluster_size bigint)
AS '$libdir/simhash_ext', 'clusters_wrapper' LANGUAGE c;
SELECT key_a, key_b, distance, round(similarity::numeric, 4) AS similarity FROM pairs_0_10('texts') ORDER BY 1, 2;
SELECT count(*) AS unverified FROM pairs_0_10('old_texts');
SELECT count(DISTINCT representative) AS clusters, count(DISTINCT representative) FILTER (WHERE cluster_size > 1) AS merged
FROM clusters_0_10('texts');
SELECT count(DISTINCT representative) AS clusters FROM clusters_0_10('old_texts');
DROP FUNCTION pairs_0_10, clusters_0_10;

-- MinHash: the candidates share a band with an estimate within 0.2 of the threshold, and the
-- similarity returned is the exact one.
CREATE TABLE mtexts AS SELECT id, body FROM texts;
ALTER TABLE mtexts ADD PRIMARY KEY (id);
SELECT simhash_attach('mtexts', 'body', method => 'minhash', threshold => 0.5);
SELECT p.key_a, p.key_b, p.distance, round(p.similarity::numeric, 4) AS similarity,
       p.similarity = jaccard(a.body, b.body) AS exact
FROM simhash_pairs('mtexts') p JOIN mtexts a ON a.id = p.key_a::int JOIN mtexts b ON b.id = p.key_b::int
ORDER BY 1, 2;
-- Unverified: the estimates of the signatures.
SELECT key_a, key_b, round(similarity::numeric, 4) AS estimate FROM simhash_pairs('mtexts', verify => false) ORDER BY 1, 2;
-- A threshold above the similarity of 4 and 5 keeps the identical pair only, verified.
SELECT key_a, key_b, similarity FROM simhash_pairs('mtexts', threshold => 0.95) ORDER BY 1, 2;
SELECT key, representative, cluster_size FROM simhash_clusters('mtexts', threshold => 0.95) ORDER BY key::int;
SELECT key, representative, cluster_size FROM simhash_clusters('mtexts') ORDER BY key::int;

-- Many rows: verified pairs are exactly the unverified candidates whose exact similarity reaches
-- the threshold, and clusters are their connected components.
CREATE TABLE many (id int PRIMARY KEY, body text);
INSERT INTO many
SELECT i, CASE WHEN i % 3 = 0 THEN reversed_words(t.body) ELSE replace(t.body, ' the ', ' the ' || (i % 5) || ' ') END
FROM generate_series(1, 60) i JOIN texts t ON t.id = CASE WHEN i % 2 = 0 THEN 1 ELSE 4 END;
SELECT simhash_attach('many', 'body', max_distance => 16);
CREATE TEMP TABLE candidates AS
SELECT p.key_a, p.key_b, simhash_jaccard(a.body, b.body) AS exact
FROM simhash_pairs('many', verify => false) p JOIN many a ON a.id = p.key_a::int JOIN many b ON b.id = p.key_b::int;
CREATE TEMP TABLE verified AS SELECT key_a, key_b, similarity FROM simhash_pairs('many');
SELECT (SELECT count(*) FROM candidates) > (SELECT count(*) FROM verified) AS some_removed,
       (SELECT count(*) FROM verified) AS verified,
       (SELECT count(*) FROM (SELECT key_a, key_b FROM candidates WHERE exact >= 0.3
                              EXCEPT SELECT key_a, key_b FROM verified) x) AS missed,
       (SELECT count(*) FROM (SELECT key_a, key_b FROM verified
                              EXCEPT SELECT key_a, key_b FROM candidates WHERE exact >= 0.3) x) AS extra,
       (SELECT count(*) FROM verified v JOIN candidates c USING (key_a, key_b) WHERE v.similarity <> c.exact) AS differ;
CREATE TEMP TABLE label AS SELECT id, id AS label FROM many;
DO $$
DECLARE changed bigint;
BEGIN
  LOOP
    UPDATE label l SET label = m.label
    FROM (SELECT x.id, min(least(lx.label, ly.label)) AS label
          FROM verified p
          JOIN label lx ON lx.id = p.key_a::int JOIN label ly ON ly.id = p.key_b::int
          CROSS JOIN LATERAL (VALUES (p.key_a::int), (p.key_b::int)) x(id)
          GROUP BY x.id) m
    WHERE l.id = m.id AND m.label < l.label;
    GET DIAGNOSTICS changed = ROW_COUNT;
    EXIT WHEN changed = 0;
  END LOOP;
END $$;
SELECT count(*) AS rows, count(*) FILTER (WHERE c.representative::int <> l.label) AS differ,
       count(DISTINCT c.representative) AS clusters
FROM simhash_clusters('many') c JOIN label l ON l.id = c.key::int;

DROP TABLE texts, parted, old_texts, mtexts, many;
DROP FUNCTION word_pairs, jaccard, simhash_jaccard, reversed_words;
