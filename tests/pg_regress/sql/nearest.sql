-- "The 3 nearest articles to this draft" (issue 50, row 10). Near-duplicate lookups return the
-- rows within the attachment's reach; ranked by the verified similarity, a lookup whose reach is the
-- whole table (SimHash: max_distance => 64, threshold => 0) gives the exact k nearest by the texts'
-- similarity, at the cost of a scan; a nearer reach gives the k nearest among the likely ones.
CREATE TABLE articles (id int PRIMARY KEY, body text);
SELECT simhash_attach('articles', 'body');
INSERT INTO articles VALUES
  (1, 'The city council approved the budget for protected bike lanes on Monday after a long debate.'),
  (2, 'The city council approved the budget for new bus lanes on Monday after a short debate.'),
  (3, 'The council rejected the budget for bike lanes.'),
  (4, 'The museum reopens on Saturday with a new wing for modern art.'),
  (5, 'Heavy rain is expected in the north of the province from Tuesday night.'),
  (6, 'Bike lanes: the city council debated the budget on Monday.'),
  (7, 'The library extends its opening hours during the exam period.');
-- The attachment's reach (max_distance 7, threshold 0.4) is for near-duplicates: a short draft
-- has none.
SELECT count(*) FROM simhash_near_duplicates(NULL::articles, 'city council budget for bike lanes');
-- The whole table, ranked by the exact similarity: the 3 nearest.
SELECT (n.item).id, round(n.similarity::numeric, 3) AS similarity
FROM simhash_near_duplicates(NULL::articles, 'city council budget for bike lanes', max_distance => 64, threshold => 0) n
ORDER BY n.similarity DESC, (n.item).id LIMIT 3;
-- ... the same rows as ranking every text by shingle_similarity() (the measure verification uses).
SELECT a.id, round(shingle_similarity('city council budget for bike lanes', a.body, stopwords => true)::numeric, 3) AS similarity
FROM articles a ORDER BY shingle_similarity('city council budget for bike lanes', a.body, stopwords => true) DESC, a.id LIMIT 3;
-- MinHash: a lookup finds the rows that share an LSH band, so a low threshold gives the nearest
-- among those (rows far below the threshold are not candidates).
CREATE TABLE notes (id int PRIMARY KEY, body text);
SELECT simhash_attach('notes', 'body', method => 'minhash');
INSERT INTO notes SELECT id, body FROM articles;
SELECT (n.item).id, round(n.similarity::numeric, 3) AS similarity
FROM simhash_near_duplicates(NULL::notes, 'The city council approved the budget for protected bike lanes on Monday.', threshold => 0.2) n
ORDER BY n.similarity DESC, (n.item).id LIMIT 3;
DROP TABLE articles, notes;
