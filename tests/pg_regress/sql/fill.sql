-- Rows written while the trigger did not fire (issue 50, row 6): they have a text and no
-- fingerprint, so lookups, dedup and the check miss them. simhash_fill() computes what is missing
-- and says how many rows of the table have a near-duplicate; an UPDATE of such a row fills it too.
\pset null '(null)'
CREATE TABLE posts (id int PRIMARY KEY, body text);
SELECT simhash_attach('posts', 'body', on_duplicate => 'error');
INSERT INTO posts VALUES (1, 'The city council approved the budget for protected bike lanes on Monday.');
-- A user trigger on UPDATE OF body: simhash_fill() does not fire it (it assigns the fingerprint).
CREATE FUNCTION pg_temp.said() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE NOTICE 'UPDATE OF body fired for %', NEW.id; RETURN NEW; END $$;
CREATE TRIGGER said BEFORE UPDATE OF body ON posts FOR EACH ROW EXECUTE FUNCTION pg_temp.said();
-- With the trigger disabled: a repost, a new text and a text without a letter or digit.
ALTER TABLE posts DISABLE TRIGGER simhash_body;
INSERT INTO posts VALUES (2, 'The city council approved the budget for protected bike lanes on Monday!'),
                         (3, 'The museum reopens on Saturday with a new wing for modern art.'),
                         (4, '!!! ???');
ALTER TABLE posts ENABLE TRIGGER simhash_body;
SELECT id, body_simhash IS NULL AS missing FROM posts ORDER BY id;
SELECT (n.item).id FROM simhash_near_duplicates(NULL::posts, 'The museum reopens on Saturday with a new wing for modern art.') n;
-- Filled: rows 2 and 3 get their fingerprints (row 4 has none to get); the NOTICE counts the pair
-- of rows 1 and 2, which stay, as after an attach.
SELECT simhash_fill('posts');
SELECT id, body_simhash IS NULL AS missing, body_simhash = simhash(body) AS right_value FROM posts ORDER BY id;
SELECT (n.item).id FROM simhash_near_duplicates(NULL::posts, 'The museum reopens on Saturday with a new wing for modern art.') n;
-- Once filled, the rows are checked as any other.
INSERT INTO posts VALUES (5, 'The museum reopens on Saturday with a new wing for modern art!');
SELECT simhash_fill('posts');
-- A replica's apply (session_replication_role = replica) does not fire the trigger either; in such
-- a session simhash_fill() cannot fill, and says why.
SET session_replication_role = replica;
INSERT INTO posts VALUES (6, 'Heavy rain is expected in the north of the province from Tuesday night.');
SELECT simhash_fill('posts');
RESET session_replication_role;
-- Any UPDATE of such a row fills it (here one of another column).
ALTER TABLE posts ADD COLUMN seen boolean DEFAULT false;
UPDATE posts SET seen = true WHERE id = 6;
SELECT body_simhash = simhash(body) AS filled FROM posts WHERE id = 6;
-- An UPDATE that assigns the fingerprint itself gets it computed again, and leaves the check
-- trigger no note: a later row of the same fingerprint (row 3's text in capitals) is checked as
-- itself, a near-duplicate of row 3 (23505, not 27000).
BEGIN;
UPDATE posts SET body_simhash = 0 WHERE id = 3;
SELECT body_simhash = simhash(body) AS computed FROM posts WHERE id = 3;
INSERT INTO posts SELECT 7, upper(body) FROM posts WHERE id = 3;
ROLLBACK;
-- The trigger disabled: an error with the way out.
ALTER TABLE posts DISABLE TRIGGER simhash_body;
SELECT simhash_fill('posts');
ALTER TABLE posts ENABLE TRIGGER simhash_body;
-- It runs with the caller's rights: without UPDATE on the table it is refused.
CREATE ROLE regress_fill_reader;
GRANT SELECT ON posts TO regress_fill_reader;
SET ROLE regress_fill_reader;
SELECT simhash_fill('posts');
RESET ROLE;
DROP OWNED BY regress_fill_reader;
DROP ROLE regress_fill_reader;
-- MinHash, and a partitioned table.
CREATE TABLE notes (id int PRIMARY KEY, body text);
SELECT simhash_attach('notes', 'body', method => 'minhash', on_duplicate => 'skip');
ALTER TABLE notes DISABLE TRIGGER simhash_body;
INSERT INTO notes VALUES (1, 'Heavy rain is expected in the north of the province from Tuesday night onwards.');
ALTER TABLE notes ENABLE TRIGGER simhash_body;
SELECT simhash_fill('notes');
SELECT body_minhash = minhash(body) AS filled, body_lsh IS NOT NULL AS banded FROM notes;
CREATE TABLE news (id int, day date, body text, PRIMARY KEY (id, day)) PARTITION BY RANGE (day);
CREATE TABLE news_1 PARTITION OF news FOR VALUES FROM ('2024-01-01') TO ('2024-02-01');
CREATE TABLE news_2 PARTITION OF news FOR VALUES FROM ('2024-02-01') TO ('2024-03-01');
SELECT simhash_attach('news', 'body', on_duplicate => 'error');
SET session_replication_role = replica;
INSERT INTO news VALUES (1, '2024-01-05', 'The library extends its opening hours during the exam period.'),
                        (2, '2024-02-05', 'The library extends its opening hours during the exam period!');
RESET session_replication_role;
SELECT simhash_fill('news');
SELECT count(*) FROM news WHERE body_simhash IS NULL;
-- Errors: no attachment, a NULL table.
CREATE TABLE plain (id int PRIMARY KEY, body text);
SELECT simhash_fill('plain');
SELECT simhash_fill(NULL);
DROP TABLE posts, notes, news, plain;
