-- What simhash_attach() stores for the rows already there (issue 10): one table rewrite fills the
-- fingerprint column and the generated band columns, with fingerprints collected by a parallel scan
-- (simhash_internal.fill_collect/fill_stash) or, past the memory budget or without parallel workers,
-- computed by the rewrite (simhash_internal.fill_value). Every row's stored fingerprint must equal simhash()
-- of its text with the attached options and every band simhash_band() of it: plain tables, NULL and
-- featureless texts, varchar, other options, a partitioned tree whose leaves are collected or not,
-- modes, re-attach, rollback; and the table is written once (no dead row versions left behind).
\getenv abs_srcdir PG_ABS_SRCDIR
\set include :abs_srcdir '/include/sentences.sql'
\i :include

-- Rows that differ from what simhash() / simhash_band() give (0 everywhere below).
CREATE FUNCTION pg_temp.wrong(t regclass, col name, opts text DEFAULT '') RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  EXECUTE format('SELECT count(*) FROM %s WHERE %2$I IS DISTINCT FROM simhash(%3$I%4$s) OR '
                 'ARRAY[%5$I, %6$I, %7$I, %8$I] IS DISTINCT FROM '
                 'ARRAY(SELECT simhash_band(%2$I, i, 4) FROM generate_series(0, 3) i)',
                 t, col || '_simhash', col, opts, col || '_band0', col || '_band1', col || '_band2', col || '_band3')
    INTO n;
  RETURN n;
END $$;

-- 1. A plain table: real text, NULL, empty and featureless texts, exact duplicates.
CREATE TABLE docs (id int PRIMARY KEY, body text);
INSERT INTO docs SELECT n, s FROM sentences WHERE n <= 3000;
INSERT INTO docs VALUES (100001, NULL), (100002, ''), (100003, '!!! ... ???'), (100004, NULL);
INSERT INTO docs SELECT 200000 + n, s FROM sentences WHERE n <= 50;
VACUUM ANALYZE docs;
SELECT pg_relation_size('docs') AS size_before \gset
SELECT simhash_attach('docs', 'body');
SELECT pg_temp.wrong('docs', 'body') AS wrong,
       count(*) FILTER (WHERE body_simhash IS NULL) AS null_fingerprints,
       count(*) FILTER (WHERE body_band0 IS NULL) AS null_bands
FROM docs;
-- One version of each row: the rewrite wrote the table once (an UPDATE would leave one dead version
-- per row and rows on about twice as many pages). Pages holding rows are counted, not the file's
-- size: PostgreSQL 16 and later extend a relation written in bulk by several empty pages at once.
CREATE EXTENSION pgstattuple;
SELECT (SELECT count(DISTINCT (ctid::text::point)[0]) FROM docs)
         < 1.5 * :size_before / current_setting('block_size')::int AS written_once,
       s.dead_tuple_count AS dead_versions,
       s.tuple_count = (SELECT count(*) FROM docs) AS live_versions_are_the_rows
FROM pgstattuple('docs') s;
-- The band indexes hold every row.
SET enable_seqscan = off;
SELECT count(*) = (SELECT count(*) FROM docs WHERE body_band2 IS NOT NULL) AS index_complete
FROM docs WHERE body_band2 >= 0;
RESET enable_seqscan;
-- Rows written after the attach: the trigger, as before.
INSERT INTO docs SELECT 300000 + n, s || ' again' FROM sentences WHERE n <= 20;
SELECT pg_temp.wrong('docs', 'body') AS wrong_after_insert;

-- 2. Without parallel workers (nothing collected: the rewrite fingerprints every row), other options,
-- a varchar column; then re-attached after a detach, with parallel workers.
CREATE TABLE notes (code text PRIMARY KEY, note varchar(2000));
INSERT INTO notes SELECT 'n' || n, s FROM sentences WHERE n BETWEEN 500 AND 1500;
INSERT INTO notes VALUES ('null', NULL);
SET max_parallel_workers_per_gather = 0;
SELECT simhash_attach('notes', 'note', on_duplicate => 'flag', tokenizer => 'char', shingle => 3,
                      weighting => 'binary', stopwords => false);
RESET max_parallel_workers_per_gather;
SELECT pg_temp.wrong('notes', 'note', ', ''char'', 3, ''binary'', false') AS wrong;
SELECT simhash_detach('notes', 'note');
SELECT simhash_attach('notes', 'note', tokenizer => 'word', weighting => 'tf');
SELECT pg_temp.wrong('notes', 'note', ', ''word'', 1, ''tf''') AS wrong_reattached;

-- 3. A partitioned tree: range partitions, one of them sub-partitioned by list, a default partition,
-- an empty one. With maintenance_work_mem at its minimum (1 MB: about 32,000 rows collected) the
-- largest leaf is left to the rewrite and the others are collected.
CREATE TABLE posts (id int, month int, lang text, body text, PRIMARY KEY (id, month, lang)) PARTITION BY RANGE (month);
CREATE TABLE posts_1 PARTITION OF posts FOR VALUES FROM (1) TO (2);
CREATE TABLE posts_2 PARTITION OF posts FOR VALUES FROM (2) TO (3) PARTITION BY LIST (lang);
CREATE TABLE posts_2_zh PARTITION OF posts_2 FOR VALUES IN ('zh');
CREATE TABLE posts_2_other PARTITION OF posts_2 DEFAULT;
CREATE TABLE posts_3 PARTITION OF posts FOR VALUES FROM (3) TO (4);
CREATE TABLE posts_other PARTITION OF posts DEFAULT;
INSERT INTO posts SELECT n, 1 + n % 3, CASE WHEN s ~ '[一-龥]' THEN 'zh' ELSE 'en' END, s FROM sentences WHERE n <= 2000;
INSERT INTO posts SELECT 10000 + g, 7, 'en', CASE WHEN g % 1000 = 0 THEN NULL ELSE 'row ' || g || ' of the big partition' END
FROM generate_series(1, 40000) g;
DELETE FROM posts_3;
VACUUM ANALYZE posts;
SET maintenance_work_mem = '1MB';
SELECT simhash_attach('posts', 'body', max_distance => 3, on_duplicate => 'none');
RESET maintenance_work_mem;
SELECT tableoid::regclass AS leaf, count(*) AS rows, count(body_simhash) AS fingerprints,
       pg_temp.wrong(tableoid::regclass, 'body') AS wrong
FROM posts GROUP BY tableoid ORDER BY 1;
SELECT pg_temp.wrong('posts', 'body') AS wrong;

-- 4. Scope and 'error' modes (the statement-level check trigger), inside a transaction rolled back,
-- then again: the same fingerprints.
CREATE TABLE items (id int PRIMARY KEY, shop int, body text);
INSERT INTO items SELECT n, n % 5, s FROM sentences WHERE n <= 1000;
BEGIN;
SELECT simhash_attach('items', 'body', on_duplicate => 'error', scope => 'shop');
SELECT pg_temp.wrong('items', 'body') AS wrong;
ROLLBACK;
SELECT count(*) AS columns_after_rollback FROM pg_attribute WHERE attrelid = 'items'::regclass AND attname LIKE 'body_%';
SELECT simhash_attach('items', 'body', on_duplicate => 'error');
SELECT pg_temp.wrong('items', 'body') AS wrong;
SELECT tgname FROM pg_trigger WHERE tgrelid = 'items'::regclass ORDER BY 1;

-- 5. The collected fingerprints live until the end of the transaction, and only a collected row's
-- is taken: any other is computed as simhash() computes it.
BEGIN;
SELECT simhash_internal.fill_stash('items'::regclass, '(0,1)', 42);
SELECT simhash_internal.fill_value('items'::regclass, '(0,1)', 'any text', 'bigram', 1, 'logtf', true, 'auto') AS collected;
SELECT simhash_internal.fill_value('items'::regclass, '(0,2)', 'any text', 'bigram', 1, 'logtf', true, 'auto')
       = simhash('any text') AS computed;
SELECT simhash_internal.fill_value('docs'::regclass, '(0,1)', 'any text', 'bigram', 1, 'logtf', true, 'auto')
       = simhash('any text') AS other_table_computed;
COMMIT;
SELECT simhash_internal.fill_value('items'::regclass, '(0,1)', 'any text', 'bigram', 1, 'logtf', true, 'auto')
       = simhash('any text') AS forgotten_at_commit;
SELECT simhash_internal.fill_value('items'::regclass, '(0,1)', NULL, 'bigram', 1, 'logtf', true, 'auto') AS null_text;

DROP TABLE docs, notes, posts, items;
DROP EXTENSION pgstattuple;
