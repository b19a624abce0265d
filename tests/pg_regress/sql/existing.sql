-- Near-duplicates already in a table when it is attached (issue 50): they stay, and a checking
-- attach says how many rows have one and how to list them.
CREATE TABLE posts (id int PRIMARY KEY, body text);
INSERT INTO posts VALUES
  (1, 'The city council approved the budget for protected bike lanes on Monday.'),
  (2, 'The city council approved the budget for protected bike lanes on Monday!'),
  (3, 'The city council approved the budget for protected bike lanes on Monday?'),
  (4, 'The museum reopens on Saturday with a new wing for modern art.');
SELECT simhash_attach('posts', 'body', on_duplicate => 'error');
SELECT key_a, key_b FROM simhash_pairs('posts') ORDER BY 1, 2;
-- They stay; an UPDATE of the text of one is checked as any write: still a near-duplicate of the
-- others, it is refused; another column changes freely.
ALTER TABLE posts ADD COLUMN seen boolean DEFAULT false;
UPDATE posts SET seen = true WHERE id = 2;
UPDATE posts SET body = 'The city council approved the budget for protected bike lanes on Monday.!' WHERE id = 2;
SELECT count(*) FROM posts;
-- Without a check ('none') nothing is said; nor when no row has a near-duplicate.
SELECT simhash_detach('posts', 'body');
SELECT simhash_attach('posts', 'body');
SELECT simhash_detach('posts', 'body');
DELETE FROM posts WHERE id IN (2, 3);
SELECT simhash_attach('posts', 'body', on_duplicate => 'flag');
-- MinHash too.
CREATE TABLE notes (id int PRIMARY KEY, body text);
INSERT INTO notes SELECT g, 'Heavy rain is expected in the north of the province from Tuesday night ' || (g % 2)
FROM generate_series(1, 6) g;
SELECT simhash_attach('notes', 'body', method => 'minhash', on_duplicate => 'skip');
-- simhash_attach holds its lock until it commits: a table of over 100,000 rows is not counted.
CREATE TABLE big (id int PRIMARY KEY, body text);
INSERT INTO big SELECT g, 'row ' || g FROM generate_series(1, 100001) g;
SELECT simhash_attach('big', 'body', on_duplicate => 'error');
DROP TABLE posts, notes, big;
