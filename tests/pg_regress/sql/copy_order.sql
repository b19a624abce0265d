-- COPY and INSERT name the same existing row when rows of one statement are near-duplicates.
CREATE TABLE copy_order (id int PRIMARY KEY, body text);
SELECT simhash_attach('copy_order', 'body', on_duplicate => 'error');
-- Rows 1 and 3 are near-duplicates: row 3 is rejected, and row 1 is named as the existing one.
COPY copy_order (id, body) FROM stdin;
1	the quick brown fox jumps over the lazy dog again and again
2	completely different text about databases and indexes
3	the quick brown fox jumps over the lazy dog again and again
\.
INSERT INTO copy_order VALUES
  (1, 'the quick brown fox jumps over the lazy dog again and again'),
  (2, 'completely different text about databases and indexes'),
  (3, 'the quick brown fox jumps over the lazy dog again and again');
-- A row already in the table is named as such.
INSERT INTO copy_order VALUES (10, 'completely different text about databases and indexes');
COPY copy_order (id, body) FROM stdin;
11	the quick brown fox jumps over the lazy dog again and again
12	completely different text about databases and indexes
\.
-- Rows without near-duplicates are all written.
COPY copy_order (id, body) FROM stdin;
21	the quick brown fox jumps over the lazy dog again and again
22	a third text that shares nothing with the other two at all
\.
SELECT id FROM copy_order ORDER BY id;
DROP TABLE copy_order;
