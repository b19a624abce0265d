-- What verification reads of a text, whatever its size (issue 49): the first MiB of each text, and of
-- a candidate only what can be a near-duplicate of the text checked; a MinHash lookup makes the row
-- it returns only for a row verification accepts.
SET client_min_messages = warning;
-- Two texts of 1.5 MB that differ only after their first MiB are the same to verification; two that
-- differ inside it are not.
CREATE TEMP TABLE long_texts AS
SELECT string_agg('w' || g, ' ' ORDER BY g) AS base FROM generate_series(1, 200000) g;
SELECT octet_length(base) > 1048576 AS longer_than_a_mib FROM long_texts;
SELECT shingle_similarity(base || ' one ending', base || ' quite another ending of it') AS differ_after,
       shingle_similarity('changed ' || base, base) < 1 AS differ_inside
FROM long_texts;

-- A MinHash table with a dropped column; a planted row of 20 MB, written with the trigger off, has
-- the signature of the text looked up and none of its words.
CREATE TABLE notes (id int PRIMARY KEY, gone text, body text, tag text);
ALTER TABLE notes DROP COLUMN gone;
SELECT simhash_attach('notes', 'body', method => 'minhash', on_duplicate => 'error');
INSERT INTO notes VALUES (1, 'The harbour ferry to the island now leaves every forty minutes, from seven in the morning.', 'ferry'),
                         (2, 'Tickets for the autumn concert series go on sale at the town hall on Monday.', 'concert');
SET session_replication_role = replica;
INSERT INTO notes (id, body, tag, body_minhash)
SELECT 3, repeat('quartz lantern meadow copper violin ', 600000), 'planted', n.body_minhash
FROM notes n WHERE n.id = 1;
RESET session_replication_role;
SELECT id, octet_length(body) AS bytes, tag FROM notes ORDER BY id;
-- The lookup returns the true near-duplicate with its columns as they are, not the planted row.
SELECT (item).id, (item).tag, left((item).body, 30) AS body, similarity
FROM simhash_near_duplicates(NULL::notes, 'The harbour ferry to the island now leaves every forty minutes, from seven in the morning!');
-- Unverified, the planted row is a match by its signature, returned whole.
SELECT (item).id, (item).tag, octet_length((item).body) AS bytes
FROM simhash_near_duplicates(NULL::notes, 'The harbour ferry to the island now leaves every forty minutes, from seven in the morning!', verify => false)
ORDER BY 1;
-- A write of the text is refused for row 1, not for the planted row.
INSERT INTO notes VALUES (4, 'The harbour ferry to the island now leaves every forty minutes, from seven in the morning!', 'again');
-- Two planted rows of 20 MB that are the same text but for their ends: simhash_pairs verifies them
-- on their first MiB, a pair of similarity 1.
SET session_replication_role = replica;
INSERT INTO notes (id, body, tag, body_minhash)
SELECT 5, body || ' and an ending of its own', 'planted twin', body_minhash FROM notes WHERE id = 3;
RESET session_replication_role;
SELECT * FROM simhash_pairs('notes');

-- A partitioned MinHash table whose partitions order their columns otherwise: a lookup returns rows
-- of the parent's type. One INSERT writes two near-duplicates into two partitions: the second is
-- flagged, and the first is not taken for a row written concurrently (0.13.0 gave 40001).
CREATE TABLE posts (site int NOT NULL, id int NOT NULL, body text, PRIMARY KEY (site, id)) PARTITION BY LIST (site);
CREATE TABLE posts_1 PARTITION OF posts FOR VALUES IN (1);
CREATE TABLE posts_2 (body text, id int NOT NULL, extra int, site int NOT NULL);
ALTER TABLE posts_2 DROP COLUMN extra;
ALTER TABLE posts ATTACH PARTITION posts_2 FOR VALUES IN (2);
SELECT simhash_attach('posts', 'body', method => 'minhash', on_duplicate => 'flag');
INSERT INTO posts (site, id, body) VALUES
  (1, 1, 'The harbour ferry to the island now leaves every forty minutes, from seven in the morning.'),
  (2, 2, 'The harbour ferry to the island now leaves every forty minutes, from seven in the morning'),
  (2, 3, 'Tickets for the autumn concert series go on sale at the town hall on Monday.');
SELECT site, id, body_duplicate_of FROM posts ORDER BY 1, 2;
SELECT (item).site, (item).id, left((item).body, 25) AS body, similarity
FROM simhash_near_duplicates(NULL::posts, 'The harbour ferry to the island now leaves every forty minutes, from seven in the morning!')
ORDER BY 1, 2;
DROP TABLE notes, posts;
