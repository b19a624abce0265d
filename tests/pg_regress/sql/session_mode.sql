-- A writer's own mode (issue 50, row 3): simhash.on_duplicate chooses, for the session's writes,
-- between 'error' and 'skip', the modes that keep the table free of near-duplicates. The importer
-- skips while the web application, writing the same table, gets 23505.
CREATE TABLE posts (id int PRIMARY KEY, body text);
SELECT simhash_attach('posts', 'body', on_duplicate => 'error');
INSERT INTO posts VALUES (1, 'The city council approved the budget for protected bike lanes on Monday.');
SHOW simhash.on_duplicate;
-- The web application: the attached mode.
INSERT INTO posts VALUES (2, 'The city council approved the budget for protected bike lanes on Monday!');
-- The importer: one batch, its near-duplicates skipped (of the table's rows and of each other).
SET simhash.on_duplicate = 'skip';
INSERT INTO posts VALUES
  (3, 'The city council approved the budget for protected bike lanes on Monday!'),
  (4, 'The museum reopens on Saturday with a new wing for modern art.'),
  (5, 'The museum reopens on Saturday with a new wing for modern art!'),
  (6, 'Heavy rain is expected in the north of the province from Tuesday night.');
SELECT id FROM posts ORDER BY id;
-- An UPDATE that makes a near-duplicate is skipped too (the row keeps its text).
UPDATE posts SET body = 'The museum reopens on Saturday with a new wing for modern art?' WHERE id = 6;
SELECT id, left(body, 20) AS body FROM posts WHERE id = 6;
-- COPY as INSERT.
COPY posts (id, body) FROM stdin;
7	Heavy rain is expected in the north of the province from Tuesday night!
8	The library extends its opening hours during the exam period.
\.
SELECT id FROM posts ORDER BY id;
-- Back to the attached mode: 23505.
RESET simhash.on_duplicate;
INSERT INTO posts VALUES (9, 'The library extends its opening hours during the exam period!');
-- For one transaction: SET LOCAL.
BEGIN;
SET LOCAL simhash.on_duplicate = 'skip';
INSERT INTO posts VALUES (9, 'The library extends its opening hours during the exam period!');
SELECT count(*) FROM posts WHERE id = 9;
COMMIT;
SHOW simhash.on_duplicate;
-- A table attached with 'skip': a session may ask for 'error' instead.
CREATE TABLE feed (id int PRIMARY KEY, body text);
SELECT simhash_attach('feed', 'body', on_duplicate => 'skip');
INSERT INTO feed VALUES (1, 'Heavy rain is expected in the north of the province from Tuesday night.');
INSERT INTO feed VALUES (2, 'Heavy rain is expected in the north of the province from Tuesday night!');
SET simhash.on_duplicate = 'error';
INSERT INTO feed VALUES (3, 'Heavy rain is expected in the north of the province from Tuesday night!');
SELECT id FROM feed ORDER BY id;
RESET simhash.on_duplicate;
-- A table attached with 'flag': either choice is stricter than the owner's and is taken.
CREATE TABLE flagged (id int PRIMARY KEY, body text);
SELECT simhash_attach('flagged', 'body', on_duplicate => 'flag');
INSERT INTO flagged VALUES (1, 'The museum reopens on Saturday with a new wing for modern art.');
INSERT INTO flagged VALUES (2, 'The museum reopens on Saturday with a new wing for modern art!');
SET simhash.on_duplicate = 'skip';
INSERT INTO flagged VALUES (3, 'The museum reopens on Saturday with a new wing for modern art?');
RESET simhash.on_duplicate;
INSERT INTO flagged VALUES (4, 'The museum reopens on Saturday with a new wing for modern art?');
SELECT id, body_duplicate_of FROM flagged ORDER BY id;
-- A table attached with 'none' is not checked: the setting changes nothing there.
CREATE TABLE plain (id int PRIMARY KEY, body text);
SELECT simhash_attach('plain', 'body');
SET simhash.on_duplicate = 'error';
INSERT INTO plain VALUES (1, 'The museum reopens on Saturday with a new wing for modern art.'),
                         (2, 'The museum reopens on Saturday with a new wing for modern art!');
SELECT count(*) FROM plain;
-- MinHash attachments take it as SimHash ones do.
CREATE TABLE notes (id int PRIMARY KEY, body text);
SELECT simhash_attach('notes', 'body', method => 'minhash', on_duplicate => 'error');
SET simhash.on_duplicate = 'skip';
INSERT INTO notes VALUES
  (1, 'Heavy rain is expected in the north of the province from Tuesday night onwards'),
  (2, 'Heavy rain is expected in the north of the province from Tuesday night onwards.');
SELECT id FROM notes ORDER BY id;
RESET simhash.on_duplicate;
INSERT INTO notes VALUES (3, 'Heavy rain is expected in the north of the province from Tuesday night onwards!');
-- Values other than 'attached', 'error' and 'skip' are refused: 'flag' and 'none' would let a
-- writer put near-duplicates into a table whose owner keeps it free of them.
SET simhash.on_duplicate = 'flag';
SET simhash.on_duplicate = 'none';
SET simhash.on_duplicate = 'skp';
SHOW simhash.on_duplicate;
DROP TABLE posts, feed, flagged, plain, notes;
