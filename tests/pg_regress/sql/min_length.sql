-- min_length: texts of fewer characters are fingerprinted but never rejected, skipped or flagged;
-- longer texts are checked as before (against every row, short ones included).
CREATE TABLE posts (id int PRIMARY KEY, body text);
SELECT simhash_attach('posts', 'body', on_duplicate => 'error', min_length => 40);
SELECT min_length FROM simhash_attachments() WHERE table_name = 'posts'::regclass;
INSERT INTO posts VALUES (1, 'The city council approved a budget for protected bike lanes on three main streets.');
-- 29 characters: a near-duplicate of row 2 below, never checked.
INSERT INTO posts VALUES (2, 'Short note about the weather.');
INSERT INTO posts VALUES (3, 'Short note about the weather!');
-- Long texts are checked: one statement with several rows (the per-statement check) and one row.
INSERT INTO posts VALUES (4, 'The city council approved a budget for protected bike lanes on three main streets!');
INSERT INTO posts VALUES (5, 'Short note about the weather?'),
                         (6, 'The city council approved a budget for protected bike lanes on three main streets!!');
-- 40 characters exactly is checked (a near-duplicate of itself once it is in).
INSERT INTO posts VALUES (7, 'Council approves the protected bike lane');
INSERT INTO posts VALUES (8, 'Council approves the protected bike lane!');
-- An UPDATE that makes a long text a near-duplicate is rejected; to a short one it is not.
UPDATE posts SET body = 'The city council approved a budget for protected bike lanes on three main streets.' || ' ' WHERE id = 7;
UPDATE posts SET body = 'Short note about the weather.' WHERE id = 7;
-- COPY checks each row at once: the short one passes, the long near-duplicate does not.
COPY posts (id, body) FROM STDIN;
9	Short note about the weather...
\.
COPY posts (id, body) FROM STDIN;
10	The city council approved a budget for protected bike lanes on three main streets...
\.
SELECT id, body_simhash = simhash(body) AS fingerprinted FROM posts ORDER BY id;
-- Flag and skip modes leave short texts alone too.
CREATE TABLE flagged (id int PRIMARY KEY, body text);
SELECT simhash_attach('flagged', 'body', on_duplicate => 'flag', min_length => 40);
INSERT INTO flagged VALUES (1, 'Short note about the weather.'), (2, 'Short note about the weather!'),
  (3, 'The city council approved a budget for protected bike lanes on three main streets.'),
  (4, 'The city council approved a budget for protected bike lanes on three main streets!');
SELECT id, body_duplicate_of FROM flagged ORDER BY id;
CREATE TABLE skipped (id int PRIMARY KEY, body text);
SELECT simhash_attach('skipped', 'body', on_duplicate => 'skip', min_length => 40);
INSERT INTO skipped VALUES (1, 'Short note about the weather.'), (2, 'Short note about the weather!'),
  (3, 'The city council approved a budget for protected bike lanes on three main streets.'),
  (4, 'The city council approved a budget for protected bike lanes on three main streets!');
SELECT id FROM skipped ORDER BY id;
-- min_length survives a rename of the text column, and attach refuses a bad value.
ALTER TABLE posts RENAME COLUMN body TO content;
SELECT text_column, min_length FROM simhash_attachments() WHERE table_name = 'posts'::regclass;
INSERT INTO posts VALUES (11, 'Short note about the weather!!');
SELECT simhash_attach('flagged', 'body', min_length => -1);
SELECT simhash_attach('flagged', 'body', min_length => NULL);
DROP TABLE posts, flagged, skipped;
