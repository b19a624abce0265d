-- "Why was my post rejected?" (issue 50, row 7): the DETAIL of a verified SimHash rejection gives
-- the similarity that decided, and simhash_compare(table, a, b) shows how an attachment judges a
-- write of text a against a row of text b, for both methods, by the measures its check uses.
\pset null '(null)'
CREATE TABLE posts (id int PRIMARY KEY, body text);
SELECT simhash_attach('posts', 'body', on_duplicate => 'error');
INSERT INTO posts VALUES (1, 'The city council approved the budget for protected bike lanes on Monday after a long debate.');
-- Rejected: the DETAIL gives the distance and the verified similarity with its threshold.
INSERT INTO posts VALUES (2, 'On Monday the city council approved the budget for protected bike lanes after a long debate.');
SELECT method, distance, max_distance, round(similarity::numeric, 3) AS similarity, threshold, verify, near_duplicate
FROM simhash_compare('posts', 'On Monday the city council approved the budget for protected bike lanes after a long debate.',
                     (SELECT body FROM posts WHERE id = 1));
-- The same words in reverse order: the fingerprint cannot tell (distance 0), the texts can
-- (similarity 0): not a near-duplicate, and written.
SELECT method, distance, similarity, near_duplicate
FROM simhash_compare('posts', 'debate. long a after Monday on lanes bike protected for budget the approved council city The',
                     (SELECT body FROM posts WHERE id = 1));
INSERT INTO posts VALUES (3, 'debate. long a after Monday on lanes bike protected for budget the approved council city The');
-- A repost in a header and a footer moves too many bits for SimHash ...
SELECT method, distance, max_distance, round(similarity::numeric, 3) AS similarity, near_duplicate
FROM simhash_compare('posts', 'Local news, read more below. The city council approved the budget for protected bike lanes on Monday after a long debate. Share this story with your friends and subscribe.',
                     (SELECT body FROM posts WHERE id = 1));
-- ... while MinHash shares a band and verifies it.
CREATE TABLE notes (id int PRIMARY KEY, body text);
SELECT simhash_attach('notes', 'body', method => 'minhash', on_duplicate => 'error');
SELECT method, distance, estimated_similarity > 0.3 AS estimated, round(similarity::numeric, 3) AS similarity, threshold, near_duplicate
FROM simhash_compare('notes', 'Local news, read more below. The city council approved the budget for protected bike lanes on Monday after a long debate. Share this story with your friends and subscribe.',
                     'The city council approved the budget for protected bike lanes on Monday after a long debate.');
INSERT INTO notes VALUES (1, 'The city council approved the budget for protected bike lanes on Monday after a long debate.');
INSERT INTO notes VALUES (2, 'Local news, read more below. The city council approved the budget for protected bike lanes on Monday after a long debate. Share this story with your friends and subscribe.');
-- A bulk INSERT is checked at the statement's end: its DETAIL gives the same measures.
INSERT INTO posts SELECT g, 'The museum reopens on Saturday with a new wing for modern art' || repeat('!', g)
FROM generate_series(10, 11) g;
-- Without verification the sketch decides: no threshold for SimHash, the DETAIL ends after the distance.
SELECT simhash_set_verify('posts', false);
SELECT distance, threshold, verify, near_duplicate
FROM simhash_compare('posts', 'debate. long a after Monday on lanes bike protected for budget the approved council city The',
                     (SELECT body FROM posts WHERE id = 1));
INSERT INTO posts VALUES (4, 'The city council approved the budget for protected bike lanes on Monday after a long debate!');
-- A text shorter than min_length is never refused.
CREATE TABLE titles (id int PRIMARY KEY, body text);
SELECT simhash_attach('titles', 'body', on_duplicate => 'error', min_length => 40);
SELECT distance, near_duplicate FROM simhash_compare('titles', 'Bike lanes approved', 'Bike lanes approved!');
-- NULL arguments give no row; a table without an attachment is an error.
SELECT count(*) FROM simhash_compare('posts', NULL, 'x');
SELECT count(*) FROM simhash_compare(NULL, 'x', 'y');
CREATE TABLE plain (id int PRIMARY KEY, body text);
SELECT * FROM simhash_compare('plain', 'x', 'y');
DROP TABLE posts, notes, titles, plain;
