-- Candidates verified against their texts (issue 43): a row the sketch finds (a fingerprint within
-- max_distance, a signature sharing a band) is a near-duplicate only when the exact similarity of the
-- two texts (shingle_similarity(): the Jaccard similarity of their shingle sets) reaches the threshold.

CREATE TABLE docs (id int PRIMARY KEY, body text);
INSERT INTO docs VALUES
  (1, 'The city council approved a budget for protected bike lanes on three main streets after a long public hearing on Tuesday night.'),
  (2, 'Researchers found that the migrating birds used the earth''s magnetic field to navigate across the open ocean during the autumn.'),
  (3, 'The new database release adds parallel index builds, faster sorting of large tables and a simpler way to monitor replication lag.'),
  (4, 'Heavy rain flooded the valley overnight, closing two schools and the highway while volunteers filled sandbags near the river bank.'),
  (5, 'The museum opened an exhibition of early photographs showing how the harbour and its fishing fleet looked a century ago.'),
  (6, 'A local bakery started delivering bread by cargo bike, and its owner says the orders doubled within the first month of trying.'),
  (7, 'The orchestra will perform the symphony in the restored concert hall, whose acoustics were tuned with help from an engineering team.'),
  (8, 'Farmers in the north are testing drought resistant wheat that needs a third less water and still gives a comparable harvest.'),
  (9, '今天上午，市政府宣布将在老城区新建三座公园，并改造周边的道路和排水系统，预计明年年底完工。'),
  (10, '研究人员发现，这种深海鱼类能够在极低的温度下保持活跃，其体内的特殊蛋白质起到了关键作用。');

-- A text's words in reverse order: the same bag of words, so the same SimHash fingerprint (words,
-- one per feature), but no shingle of two words in common.
CREATE FUNCTION pg_temp.reversed(t text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT array_to_string(array(SELECT w FROM unnest(string_to_array(t, ' ')) WITH ORDINALITY u(w, n) ORDER BY n DESC), ' ')
$$;

-- The exact similarity: 1 for the same text, high for a small edit, low for unrelated texts; folding
-- makes traditional characters the simplified ones.
SELECT round(shingle_similarity(a.body, a.body)::numeric, 3) AS same,
       round(shingle_similarity(a.body, replace(a.body, 'Tuesday', 'Wednesday'))::numeric, 3) AS one_word,
       round(shingle_similarity(a.body, b.body)::numeric, 3) AS unrelated
FROM docs a, docs b WHERE a.id = 1 AND b.id = 2;
SELECT shingle_similarity('今天天气很好，我们去公园散步吧。', '今天天氣很好，我們去公園散步吧。') AS folded,
       shingle_similarity('今天天气很好，我们去公园散步吧。', '今天天氣很好，我們去公園散步吧。', fold => 'none') < 1 AS unfolded_differs;
SELECT shingle_similarity('', '') AS empty, shingle_similarity('a b', 'a b', shingle => 99);

-- 1. SimHash, 'error', the widest max_distance (16) and 0.2.0's options (words, plain term
-- frequency, stop words kept): a candidate whose text has nothing in common with the row's is let
-- in; a near-duplicate is still rejected (by INSERT, in one statement, by COPY).
CREATE TABLE wide (id int PRIMARY KEY, body text);
SELECT simhash_attach('wide', 'body', max_distance => 16, tokenizer => 'word', weighting => 'tf', stopwords => false, on_duplicate => 'error');
SELECT text_column, max_distance, threshold, verify FROM simhash_attachments() WHERE table_name = 'wide'::regclass;
INSERT INTO wide SELECT id, body FROM docs;
-- A text with the same fingerprint and nothing of the texts in common is written.
INSERT INTO wide VALUES (20, pg_temp.reversed((SELECT body FROM docs WHERE id = 4)));
-- Also when the statement's rows are checked together at its end (several rows), and by COPY.
INSERT INTO wide SELECT 30 + id, pg_temp.reversed(body) FROM docs WHERE id IN (6, 7);
COPY wide (id, body) FROM stdin;
48	harvest. comparable a gives still and water less third a needs that wheat resistant drought testing are north the in Farmers
\.
SELECT p.a, p.b, hamming(x.body_simhash, y.body_simhash) AS distance, shingle_similarity(x.body, y.body) AS similarity
FROM (VALUES (6, 36), (7, 37), (8, 48)) p(a, b) JOIN wide x ON x.id = p.a JOIN wide y ON y.id = p.b
ORDER BY 1;
SELECT hamming(a.body_simhash, b.body_simhash) AS distance, shingle_similarity(a.body, b.body) AS similarity
FROM wide a, wide b WHERE a.id = 4 AND b.id = 20;
INSERT INTO wide VALUES (11, replace((SELECT body FROM docs WHERE id = 1), 'Tuesday', 'Wednesday'));
-- Also when the near-duplicate comes in the same statement as its original.
INSERT INTO wide VALUES
  (12, 'Volunteers planted two hundred trees along the canal path on Saturday, with help from pupils of the nearby primary school.'),
  (13, 'Volunteers planted two hundred trees along the canal path on Sunday, with help from pupils of the nearby primary school.');
COPY wide (id, body) FROM stdin;
14	A small startup built a robot that sorts recycling by material, and the city plans to test it at two of its collection centres.
15	A small startup built a robot that sorts recycling by material, and the city plans to try it at two of its collection centres.
\.
SELECT count(*) AS rows FROM wide;

-- The same table without verification (an attachment made before 0.11.0 behaves so): unrelated
-- texts within max_distance are rejected.
SELECT simhash_detach('wide');
SELECT simhash_attach('wide', 'body', max_distance => 16, tokenizer => 'word', weighting => 'tf', stopwords => false, on_duplicate => 'error', verify => false);
SELECT text_column, max_distance, threshold, verify FROM simhash_attachments() WHERE table_name = 'wide'::regclass;
INSERT INTO wide VALUES (21, pg_temp.reversed((SELECT body FROM docs WHERE id = 5)));
SELECT tgname FROM pg_trigger WHERE tgrelid = 'wide'::regclass AND NOT tgisinternal ORDER BY 1;

-- simhash_set_verify() turns verification on (or off) in place, with a threshold: only the triggers
-- are made again.
SELECT simhash_set_verify('wide', true);
SELECT text_column, max_distance, threshold, verify FROM simhash_attachments() WHERE table_name = 'wide'::regclass;
SELECT tgname FROM pg_trigger WHERE tgrelid = 'wide'::regclass AND NOT tgisinternal ORDER BY 1;
INSERT INTO wide VALUES (21, pg_temp.reversed((SELECT body FROM docs WHERE id = 5)));
SELECT simhash_set_verify('wide', true, threshold => 0.9);
INSERT INTO wide VALUES (22, replace((SELECT body FROM docs WHERE id = 6), 'bread', 'cakes'));
SELECT simhash_set_verify('wide', false, threshold => 0.5);
SELECT simhash_set_verify('wide', NULL);
SELECT simhash_set_verify('wide', true, threshold => -1);
SELECT simhash_set_verify('docs', true);
CREATE ROLE regress_verify_other;
GRANT SELECT ON wide TO regress_verify_other;
SET ROLE regress_verify_other;
SELECT simhash_set_verify('wide', false);
RESET ROLE;
DROP OWNED BY regress_verify_other;
DROP ROLE regress_verify_other;
SELECT simhash_set_verify('wide', false);
SELECT text_column, max_distance, threshold, verify FROM simhash_attachments() WHERE table_name = 'wide'::regclass;
SELECT tgname FROM pg_trigger WHERE tgrelid = 'wide'::regclass AND NOT tgisinternal ORDER BY 1;
INSERT INTO wide VALUES (23, pg_temp.reversed((SELECT body FROM docs WHERE id = 7)));
DELETE FROM wide WHERE id > 20;

-- Settings: threshold is the least verified similarity of SimHash (0 to 1), refused without
-- verification; a registry cannot verify.
SELECT simhash_detach('wide');
SELECT simhash_attach('wide', 'body', threshold => 0.3, verify => false);
SELECT simhash_attach('wide', 'body', threshold => 1.5);
SELECT simhash_attach('wide', 'body', registry => true, verify => true);
SELECT simhash_attach('wide', 'body', max_distance => 16, tokenizer => 'word', weighting => 'tf', stopwords => false, threshold => 0.5, on_duplicate => 'error');
SELECT text_column, max_distance, threshold, verify FROM simhash_attachments() WHERE table_name = 'wide'::regclass;
INSERT INTO wide VALUES (16, (SELECT body FROM docs WHERE id = 1) || ' The mayor said work starts in spring.');

-- 2. Lookups by text return the exact similarity of each row; verify => false returns what the
-- fingerprints find, without it; threshold => per call. A lookup by fingerprint has no text.
SELECT (l.item).id, l.distance, round(l.similarity::numeric, 3) AS similarity,
       l.similarity = shingle_similarity((l.item).body, d.body) AS exact
FROM docs d, simhash_near_duplicates(NULL::wide, d.body) l
WHERE d.id = 1 ORDER BY 1;
SELECT (l.item).id, l.distance, l.similarity FROM docs d, simhash_near_duplicates(NULL::wide, d.body) l
WHERE d.id = 4 ORDER BY 1;
SELECT (l.item).id, l.distance, l.similarity FROM docs d, simhash_near_duplicates(NULL::wide, d.body, verify => false) l
WHERE d.id = 4 ORDER BY 1;
SELECT t.threshold, (l.item).id, round(l.similarity::numeric, 3) AS similarity
FROM docs d, (VALUES (0.7), (0.8)) t(threshold),
     simhash_near_duplicates(NULL::wide, d.body || ' The mayor said work starts in spring.', threshold => t.threshold) l
WHERE d.id = 1 ORDER BY 1, 2;
SELECT (l.item).id FROM docs d, simhash_near_duplicates(NULL::wide, d.body, threshold => 0.9, verify => false) l
WHERE d.id = 1;
SELECT (l.item).id, l.distance, l.similarity FROM simhash_near_duplicates(NULL::wide, (SELECT body_simhash FROM wide WHERE id = 4)) l
ORDER BY 1;
SELECT (l.item).id FROM simhash_near_duplicates(NULL::wide, 'nothing like any row'::text) l;

-- 3. 'skip' and 'flag' verify as 'error' does.
CREATE TABLE skipped (id int PRIMARY KEY, body text);
SELECT simhash_attach('skipped', 'body', max_distance => 16, tokenizer => 'word', weighting => 'tf', stopwords => false, on_duplicate => 'skip');
INSERT INTO skipped SELECT id, body FROM docs;
INSERT INTO skipped VALUES (11, replace((SELECT body FROM docs WHERE id = 2), 'autumn', 'spring'));
INSERT INTO skipped VALUES (12, pg_temp.reversed((SELECT body FROM docs WHERE id = 2)));
SELECT count(*) AS rows FROM skipped;
CREATE TABLE flagged (id int PRIMARY KEY, body text);
SELECT simhash_attach('flagged', 'body', max_distance => 16, tokenizer => 'word', weighting => 'tf', stopwords => false, on_duplicate => 'flag');
INSERT INTO flagged SELECT id, body FROM docs;
INSERT INTO flagged VALUES (11, replace((SELECT body FROM docs WHERE id = 3), 'simpler', 'easier'));
INSERT INTO flagged VALUES (12, pg_temp.reversed((SELECT body FROM docs WHERE id = 3)));
SELECT id, body_duplicate_of FROM flagged WHERE id > 10 ORDER BY id;

-- 4. MinHash: the threshold applies to the exact similarity; the error shows it.
CREATE TABLE mh (id int PRIMARY KEY, body text);
SELECT simhash_attach('mh', 'body', method => 'minhash', threshold => 0.6, on_duplicate => 'error');
SELECT method, threshold, verify FROM simhash_attachments() WHERE table_name = 'mh'::regclass;
INSERT INTO mh SELECT id, body FROM docs;
INSERT INTO mh VALUES (11, replace((SELECT body FROM docs WHERE id = 4), 'overnight', 'on Monday'));
SELECT round(shingle_similarity((SELECT body FROM docs WHERE id = 4),
                                replace((SELECT body FROM docs WHERE id = 4), 'overnight', 'on Monday'))::numeric, 3) AS exact;
-- A heavier edit, below the threshold by its texts: written.
INSERT INTO mh VALUES (12, 'Heavy rain flooded the valley on Monday, closing three schools and the bridge while neighbours filled sandbags near the old mill.');
SELECT shingle_similarity(body, (SELECT body FROM docs WHERE id = 4)) < 0.6 AS below FROM mh WHERE id = 12;
SELECT (l.item).id, round(l.similarity::numeric, 3) AS similarity,
       l.similarity = shingle_similarity((l.item).body, d.body) AS exact
FROM docs d, simhash_near_duplicates(NULL::mh, d.body, threshold => 0.2) l WHERE d.id = 4 ORDER BY 1;
SELECT count(*) AS estimated FROM docs d, simhash_near_duplicates(NULL::mh, d.body, verify => false) l
WHERE d.id = 4 AND l.similarity <> shingle_similarity((l.item).body, d.body);
SELECT count(*) AS by_signature FROM simhash_near_duplicates(NULL::mh, minhash((SELECT body FROM docs WHERE id = 4)));

-- 5. A partitioned table whose partition numbers its columns otherwise.
CREATE TABLE parted (id int, note text, body text, PRIMARY KEY (id)) PARTITION BY RANGE (id);
CREATE TABLE parted_low (junk int, id int NOT NULL, note text, body text);
ALTER TABLE parted_low DROP COLUMN junk;
ALTER TABLE parted ATTACH PARTITION parted_low FOR VALUES FROM (0) TO (100);
CREATE TABLE parted_high PARTITION OF parted FOR VALUES FROM (100) TO (1000);
SELECT simhash_attach('parted', 'body', max_distance => 16, tokenizer => 'word', weighting => 'tf', stopwords => false, on_duplicate => 'error');
INSERT INTO parted (id, body) SELECT id, body FROM docs;
INSERT INTO parted (id, body) SELECT 100 + id, body || ' Again.' FROM docs WHERE id = 5;
INSERT INTO parted (id, body) SELECT 200 + id, body FROM docs WHERE id IN (2, 3);
INSERT INTO parted (id, body) SELECT 300 + id, pg_temp.reversed(body) FROM docs WHERE id IN (2, 3);
SELECT count(*) FROM parted;
-- Named by a partition, simhash_set_verify() refuses; by the partitioned table, every partition follows.
SELECT simhash_set_verify('parted_low', false);
SELECT simhash_set_verify('parted', false);
SELECT c.relname, count(*) FILTER (WHERE t.tgname IS NOT NULL) AS triggers
FROM pg_class c LEFT JOIN pg_trigger t ON t.tgrelid = c.oid AND t.tgfoid = 'simhash_trigger'::regproc
WHERE c.relname LIKE 'parted%' AND c.relkind IN ('r', 'p') GROUP BY 1 ORDER BY 1;
INSERT INTO parted (id, body) SELECT 400 + id, pg_temp.reversed(body) FROM docs WHERE id = 6;

-- 6. The trigger arguments of 0.10.0 (no 'verify') decode as an attachment that does not verify.
SELECT method, threshold, verify
FROM simhash_internal.decode_attachment(
  convert_to('body', 'UTF8') || '\x00'::bytea || convert_to('4', 'UTF8') || '\x00'::bytea ||
  convert_to('7', 'UTF8') || '\x00'::bytea || convert_to('error', 'UTF8') || '\x00'::bytea ||
  convert_to('bigram', 'UTF8') || '\x00'::bytea || convert_to('1', 'UTF8') || '\x00'::bytea ||
  convert_to('logtf', 'UTF8') || '\x00'::bytea || convert_to('true', 'UTF8') || '\x00'::bytea ||
  convert_to('auto', 'UTF8') || '\x00'::bytea);

DROP TABLE docs, wide, skipped, flagged, mh, parted;
