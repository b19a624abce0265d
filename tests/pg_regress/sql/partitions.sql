-- Partitioned tables (issue 11): attach on a range/list/hash tree with sub-partitions, partitions
-- created or attached later, the trigger and the lookups across partitions (exact against a
-- brute-force scan on real text), partition pruning, row moves, detach; attachments through renames.
\getenv abs_srcdir PG_ABS_SRCDIR
\set include :abs_srcdir '/include/sentences.sql'
\i :include
\set include :abs_srcdir '/include/try.sql'
\set SHOW_CONTEXT never
\i :include

-- 4,000 documents of three real sentences over four months; a range partition per month, one of
-- them sub-partitioned by hash, another by list. Some rows share sentences: near-duplicates
-- across partitions, there before the attach.
CREATE TABLE news (id int, published date, lang text, body text, PRIMARY KEY (id, published, lang))
  PARTITION BY RANGE (published);
CREATE TABLE news_2024_01 PARTITION OF news FOR VALUES FROM ('2024-01-01') TO ('2024-02-01');
CREATE TABLE news_2024_02 PARTITION OF news FOR VALUES FROM ('2024-02-01') TO ('2024-03-01') PARTITION BY HASH (id);
CREATE TABLE news_2024_02_h0 PARTITION OF news_2024_02 FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE news_2024_02_h1 PARTITION OF news_2024_02 FOR VALUES WITH (MODULUS 2, REMAINDER 1);
CREATE TABLE news_2024_03 PARTITION OF news FOR VALUES FROM ('2024-03-01') TO ('2024-04-01') PARTITION BY LIST (lang);
CREATE TABLE news_2024_03_zh PARTITION OF news_2024_03 FOR VALUES IN ('zh');
CREATE TABLE news_2024_03_other PARTITION OF news_2024_03 DEFAULT;
CREATE TABLE news_2024_04 PARTITION OF news FOR VALUES FROM ('2024-04-01') TO ('2024-05-01');
INSERT INTO news
SELECT i, date '2024-01-01' + (i % 120), CASE WHEN b ~ '[一-龥]' THEN 'zh' ELSE 'en' END, b
FROM (SELECT i, (SELECT string_agg(s, ' ' ORDER BY k)
                 FROM (VALUES (1, (i * 7) % m + 1), (2, (i * 13 + 5) % m + 1), (3, (i / 97) % m + 1)) p(k, n)
                 JOIN sentences USING (n)) AS b
      FROM generate_series(1, 4000) i, (SELECT count(*) AS m FROM sentences) c) x;
SELECT simhash_attach('news', 'body', on_duplicate => 'error');
SELECT table_name, text_column, band_columns, on_duplicate FROM simhash_attachments();
-- Every leaf has the columns, its fingerprints, the band indexes (attached to the partitioned
-- indexes) and a clone of the trigger.
SELECT p.relid::regclass AS leaf,
       (SELECT count(*) FROM pg_attribute a WHERE a.attrelid = p.relid AND a.attname ~ '^body_(simhash|band[0-3])$') AS columns,
       (SELECT count(*) FROM pg_index i JOIN pg_inherits h ON h.inhrelid = i.indexrelid
        WHERE i.indrelid = p.relid AND pg_get_indexdef(i.indexrelid) ~ 'body_band\d\) INCLUDE \(body_simhash\)') AS band_indexes,
       (SELECT count(*) FROM pg_trigger t WHERE t.tgrelid = p.relid AND t.tgname = 'simhash_body' AND t.tgparentid <> 0) AS trigger_clone
FROM pg_partition_tree('news') p WHERE p.isleaf ORDER BY 1;
SELECT count(*) AS rows, count(*) FILTER (WHERE body_simhash IS DISTINCT FROM simhash(body)) AS wrong_fingerprints,
       count(*) FILTER (WHERE body_band2 IS DISTINCT FROM simhash_band(body_simhash, 2)) AS wrong_bands,
       count(DISTINCT tableoid) AS leaves
FROM news;

-- The trigger sees every partition: a near-duplicate of a January row, published in April (or
-- routed to a hash or list sub-partition), is rejected with the key of the January row.
\set VERBOSITY default
INSERT INTO news VALUES (10001, '2024-04-15', 'en', (SELECT body || '!' FROM news WHERE id = 120));
INSERT INTO news VALUES (10002, '2024-02-15', 'en', (SELECT upper(body) FROM news WHERE id = 120));
INSERT INTO news VALUES (10003, '2024-03-15', 'zh', (SELECT body || '。' FROM news WHERE id = 120));
\set VERBOSITY terse
INSERT INTO news VALUES (10004, '2024-04-15', 'en', 'A brand new text about a quiet week in the valley, as cranes return to the wetlands.');
SELECT pg_temp.try($$INSERT INTO news VALUES (10005, '2024-01-20', 'en', 'A brand-new text about a quiet week in the valley: cranes return to the wetlands!')$$) AS dup_of_new_row;

-- A partition created later has everything at once.
CREATE TABLE news_2024_05 PARTITION OF news FOR VALUES FROM ('2024-05-01') TO ('2024-06-01');
SELECT pg_temp.try($$INSERT INTO news VALUES (10006, '2024-05-02', 'en', (SELECT body || '?' FROM news WHERE id = 121))$$) AS dup_into_new_partition;
INSERT INTO news VALUES (10007, '2024-05-03', 'en', 'Library reopens after renovation with a new reading room and longer hours.');
SELECT body_simhash = simhash(body) AS fingerprinted, tableoid::regclass FROM news WHERE id = 10007;

-- ALTER TABLE ... ATTACH PARTITION of a table that has rows and none of the columns: the event
-- trigger gives it the columns and fills its fingerprints first, then checks its rows (a partition
-- holding copies of the table's rows is refused: windows.sql). Its rows: texts of their own.
CREATE TABLE june (lang text NOT NULL, body text, id int NOT NULL, published date NOT NULL);
INSERT INTO june SELECT lang, 'June bulletin ' || id || ': ' || md5(id::text) || ' ' || md5((id * 7)::text) || ' ' || md5((id * 13)::text),
                        id + 20000, date '2024-06-01' + id % 30 FROM news WHERE id BETWEEN 1 AND 200;
INSERT INTO june VALUES ('en', 'Sandhill cranes return to the valley wetlands in early spring, a week early.', 30000, '2024-06-09');
ALTER TABLE news ATTACH PARTITION june FOR VALUES FROM ('2024-06-01') TO ('2024-07-01');
SELECT count(*) AS rows, count(*) FILTER (WHERE body_simhash IS DISTINCT FROM simhash(body)) AS wrong_fingerprints,
       count(*) FILTER (WHERE body_band3 IS DISTINCT FROM simhash_band(body_simhash, 3)) AS wrong_bands
FROM june;
SELECT count(*) AS band_indexes FROM pg_index WHERE indrelid = 'june'::regclass AND NOT indisprimary;
SELECT pg_temp.try($$INSERT INTO news VALUES (10008, '2024-01-09', 'en', 'Sandhill cranes return to the valley wetlands in early spring, a week early!')$$) AS dup_of_attached_row;
-- Its rows are found by lookups through the parent (their columns are in another order).
SELECT (n.item).id, (n.item).published, (n.item).lang, n.distance
FROM simhash_near_duplicates(NULL::news, 'Sandhill cranes return to the valley wetlands in early spring, a week early') n;
-- Detached, written to, attached again: the rows written meanwhile get their fingerprints.
ALTER TABLE news DETACH PARTITION june;
UPDATE june SET body = 'The riverside marathon drew a record field of runners despite the cold morning rain.' WHERE id = 30000;
INSERT INTO june (lang, body, id, published) VALUES ('en', 'Fresh sourdough every morning at the corner bakery on Pine Street.', 30001, '2024-06-10');
ALTER TABLE news ATTACH PARTITION june FOR VALUES FROM ('2024-06-01') TO ('2024-07-01');
SELECT id, body_simhash = simhash(body) AS fingerprinted FROM june WHERE id >= 30000 ORDER BY id;
-- A table made with LIKE ... INCLUDING ALL has the columns, not the fingerprints: filled too.
CREATE TABLE july (LIKE news INCLUDING ALL);
INSERT INTO july (id, published, lang, body) VALUES (40000, '2024-07-01', 'en', 'Scheduled power outage notice for Maple District on Tuesday from nine to noon.');
SELECT body_simhash IS NULL AS not_yet FROM july;
ALTER TABLE news ATTACH PARTITION july FOR VALUES FROM ('2024-07-01') TO ('2024-08-01');
SELECT body_simhash = simhash(body) AS fingerprinted FROM july;
-- The same one level down, into the list sub-partitioned March (next to its default partition).
CREATE TABLE march_fr (id int NOT NULL, published date NOT NULL, lang text NOT NULL, body text);
INSERT INTO march_fr VALUES (50000, '2024-03-03', 'fr', 'Le marché du samedi revient sur la place de la mairie dès le mois prochain.');
ALTER TABLE news_2024_03 ATTACH PARTITION march_fr FOR VALUES IN ('fr');
SELECT body_simhash = simhash(body) AS fingerprinted,
       (SELECT count(*) FROM pg_trigger t WHERE t.tgrelid = 'march_fr'::regclass AND t.tgparentid <> 0) AS trigger_clone
FROM march_fr;
SELECT pg_temp.try($$INSERT INTO news VALUES (10009, '2024-04-03', 'fr', 'Le marché du samedi revient sur la place de la mairie dès le mois prochain !')$$) AS dup_of_sub_partition_row;
-- A table attached on its own is refused, with the fix in the hint; PostgreSQL's own checks stay.
CREATE TABLE august (id int NOT NULL, published date NOT NULL, lang text NOT NULL, body text);
SELECT simhash_attach('august', 'body');
\set VERBOSITY default
ALTER TABLE news ATTACH PARTITION august FOR VALUES FROM ('2024-08-01') TO ('2024-09-01');
\set VERBOSITY terse
SELECT simhash_detach('august');
ALTER TABLE news ATTACH PARTITION august FOR VALUES FROM ('2024-08-01') TO ('2024-09-01');
CREATE TABLE september (id int NOT NULL, published date NOT NULL, lang text NOT NULL, body text, body_simhash text);
SELECT pg_temp.try($$ALTER TABLE news ATTACH PARTITION september FOR VALUES FROM ('2024-09-01') TO ('2024-10-01')$$) AS wrong_type;
CREATE TABLE october (id int NOT NULL, published date NOT NULL, lang text NOT NULL);
SELECT pg_temp.try($$ALTER TABLE news ATTACH PARTITION october FOR VALUES FROM ('2024-10-01') TO ('2024-11-01')$$) AS no_text_column;

-- Exact search across partitions: lookups equal a brute-force scan for planted queries at
-- distances 0..9, for every k from 0 to 8.
CREATE TEMP TABLE queries AS
SELECT d.id AS src, flips, d.body_simhash # coalesce((SELECT bit_or(1::bigint << ((d.id * 7 + j * 13) % 64))
                                                      FROM generate_series(1, flips) j), 0) AS fp
FROM news d, generate_series(0, 9) flips
WHERE d.id % 100 = 7 AND d.id < 4000 AND d.body_simhash IS NOT NULL;
CREATE TEMP TABLE brute AS
SELECT q.src, q.flips, d.id, d.published, hamming(d.body_simhash, q.fp) AS distance
FROM queries q JOIN news d ON hamming(d.body_simhash, q.fp) <= 8;
CREATE TEMP TABLE found AS
SELECT k, q.src, q.flips, (n.item).id, (n.item).published, n.distance
FROM generate_series(0, 8) k, queries q, simhash_near_duplicates(NULL::news, q.fp, max_distance => k) n;
SELECT k, (SELECT count(*) FROM brute b WHERE b.distance <= k) AS by_scan, count(*) AS by_lookup,
       (SELECT count(*) FROM (SELECT src, flips, id, published, distance FROM found f2 WHERE f2.k = f.k
                              EXCEPT ALL SELECT src, flips, id, published, distance FROM brute WHERE distance <= f.k) x) AS only_in_lookup,
       (SELECT count(*) FROM (SELECT src, flips, id, published, distance FROM brute WHERE distance <= f.k
                              EXCEPT ALL SELECT src, flips, id, published, distance FROM found f2 WHERE f2.k = f.k) x) AS missed
FROM found f GROUP BY k ORDER BY k;
SELECT count(DISTINCT published - date '2024-01-01' >= 31) = 2 AS found_in_several_partitions FROM found WHERE k = 8;
-- The lookup cost adds up over the partitions; the lookup on one partition reads only that one.
SELECT c.matches = (SELECT count(*) FROM brute b WHERE b.src = 507 AND b.flips = 3 AND b.distance <= 7) AS cost_matches
FROM queries q, simhash_lookup_cost('news', q.fp, 7) c WHERE q.src = 507 AND q.flips = 3;
SELECT count(*) AS january_rows_found,
       count(*) = (SELECT count(*) FROM brute b WHERE b.distance <= 8 AND b.published < '2024-02-01') AS equal_scan
FROM queries q, simhash_near_duplicates(NULL::news_2024_01, q.fp, max_distance => 8) n;
SELECT count(*) = (SELECT count(*) FROM brute b WHERE b.distance <= 8 AND b.published >= '2024-02-01' AND b.published < '2024-03-01')
       AS hash_subtree_equal_scan
FROM queries q, simhash_near_duplicates(NULL::news_2024_02, q.fp, max_distance => 8) n;

-- "Near-duplicates of this text published since March 15": the SQL form with a filter on the
-- partition key. PostgreSQL prunes the other partitions in every probe.
CREATE FUNCTION pg_temp.window_lookup(fp bigint, k int, since date) RETURNS TABLE (id int, distance int)
LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY EXECUTE format('SELECT (item).id, distance FROM (%s) x',
                              simhash_near_duplicates_sql('news', fp, k, filter => format('t.published >= %L', since)));
END $$;
SELECT count(*) AS rows_found,
       count(*) = (SELECT count(*) FROM brute b WHERE b.distance <= 7 AND b.published >= '2024-03-15') AS equal_scan
FROM queries q, pg_temp.window_lookup(q.fp, 7, '2024-03-15') w;
-- Without a filter the SQL form reads every partition, and finds what the scan finds.
CREATE FUNCTION pg_temp.by_sql(fp bigint, k int) RETURNS SETOF int LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY EXECUTE 'SELECT (item).id FROM (' || simhash_near_duplicates_sql('news', fp, k) || ') x';
END $$;
SELECT count(*) = (SELECT count(*) FROM brute b WHERE b.distance <= 7) AS sql_form_equal_scan
FROM queries q, pg_temp.by_sql(q.fp, 7) id;
CREATE FUNCTION pg_temp.plan(query text) RETURNS SETOF text LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY EXECUTE 'EXPLAIN (COSTS OFF) ' || query;
END $$;
ANALYZE news;
-- The tables the plan reads (an index named for its table): only the March partitions.
SELECT DISTINCT coalesce(i.indrelid, c.oid)::regclass AS reads
FROM pg_temp.plan(simhash_near_duplicates_sql('news', (SELECT body_simhash FROM news WHERE id = 3242), 7,
                  filter => $$t.published >= date '2024-03-15' AND t.published < date '2024-04-01'$$)) line
CROSS JOIN LATERAL regexp_matches(line, ' on (\S+)') m
JOIN pg_class c ON c.relname = m[1] LEFT JOIN pg_index i ON i.indexrelid = c.oid
ORDER BY 1;
-- With a stable expression (the last 7 days of now()), pruning happens when the query starts.
SELECT count(*) > 0 AS subplans_removed
FROM pg_temp.plan(simhash_near_duplicates_sql('news', 42, 3, filter => $$t.published >= now() - interval '7 days'$$)) line
WHERE line ~ 'Subplans Removed';

-- Row moves: an UPDATE that moves a row to another partition is no new text. A row that was a
-- near-duplicate before the attach moves freely; editing it into a near-duplicate on the way is
-- still rejected.
SELECT b.id AS moved_id, b.published AS old_published FROM brute b JOIN brute c USING (src, flips)
WHERE b.flips = 0 AND b.id <> c.id AND b.distance <= 7 AND c.distance <= 7 AND b.published < '2024-02-01'
ORDER BY b.id LIMIT 1 \gset
UPDATE news SET published = '2024-04-20' WHERE id = :moved_id;
SELECT tableoid::regclass, body_simhash = simhash(body) AS fingerprinted FROM news WHERE id = :moved_id;
SELECT pg_temp.try(format($$UPDATE news SET published = '2024-01-20', body = (SELECT body || '.' FROM news WHERE id = 1000) WHERE id = %s$$, :moved_id))
  AS moved_and_edited_into_duplicate;
UPDATE news SET published = '2024-01-21', body = 'A text of its own about the harbor festival and its fireworks over the bay.' WHERE id = :moved_id;
SELECT tableoid::regclass, body_simhash = simhash(body) AS fingerprinted FROM news WHERE id = :moved_id;

-- skip and flag across list partitions; a moved row is neither dropped nor flagged again.
CREATE TABLE posts (id int, site text, body text, PRIMARY KEY (id, site)) PARTITION BY LIST (site);
CREATE TABLE posts_a PARTITION OF posts FOR VALUES IN ('a');
CREATE TABLE posts_b PARTITION OF posts FOR VALUES IN ('b');
INSERT INTO posts VALUES (1, 'a', 'Museum opens exhibit of hand-drawn harbor maps from the eighteenth century.'),
                         (2, 'b', 'Museum opens exhibit of hand-drawn harbor maps from the eighteenth century!');
SELECT simhash_attach('posts', 'body', on_duplicate => 'skip');
INSERT INTO posts VALUES (3, 'b', 'MUSEUM OPENS EXHIBIT OF HAND-DRAWN HARBOR MAPS FROM THE EIGHTEENTH CENTURY');
-- Also when a BEFORE DELETE trigger of the user runs SQL between the two halves of the move.
CREATE FUNCTION pg_temp.audit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM count(*) FROM posts; RETURN OLD; END $$;
CREATE TRIGGER audit BEFORE DELETE ON posts FOR EACH ROW EXECUTE FUNCTION pg_temp.audit();
UPDATE posts SET site = 'a' WHERE id = 2;
SELECT id, site, tableoid::regclass FROM posts ORDER BY id;
SELECT simhash_detach('posts');
SELECT simhash_attach('posts', 'body', on_duplicate => 'flag');
INSERT INTO posts VALUES (4, 'b', 'MUSEUM OPENS EXHIBIT OF HAND-DRAWN HARBOR MAPS FROM THE EIGHTEENTH CENTURY');
UPDATE posts SET site = 'b' WHERE id = 1;
SELECT id, site, body_duplicate_of, tableoid::regclass FROM posts ORDER BY id;
-- An upsert that updates a row in place and inserts another row with the same text in the same
-- statement: that insert is checked (flagged) like any other; only a real move is exempt.
INSERT INTO posts VALUES (2, 'a', 'Museum opens exhibit of hand-drawn harbor maps from the eighteenth century!'),
                         (5, 'a', 'Museum opens exhibit of hand-drawn harbor maps from the eighteenth century!')
ON CONFLICT (id, site) DO UPDATE SET site = EXCLUDED.site;
SELECT id, site, body_duplicate_of IS NOT NULL AS flagged FROM posts WHERE id IN (2, 5) ORDER BY id;

-- Without a primary key, a row is named by its partition and ctid (a ctid alone is ambiguous).
CREATE TABLE logs (site text, line text) PARTITION BY LIST (site);
CREATE TABLE logs_a PARTITION OF logs FOR VALUES IN ('a');
CREATE TABLE logs_b PARTITION OF logs FOR VALUES IN ('b');
INSERT INTO logs VALUES ('a', 'connection from 10.0.0.1 accepted on port 5432 by the server');
SELECT simhash_attach('logs', 'line', on_duplicate => 'flag');
INSERT INTO logs VALUES ('b', 'connection from 10.0.0.1 accepted on port 5432 by the server.');
SELECT site, line_duplicate_of FROM logs ORDER BY site;
SELECT key_a, key_b, distance FROM simhash_pairs('logs');
DROP TABLE logs;

-- Pairs and clusters of a partitioned table equal a brute-force self-join over every partition.
SELECT (SELECT count(*) FROM simhash_pairs('news', 3)) AS pairs,
       (SELECT count(*) FROM news a JOIN news b ON (a.id, a.published, a.lang) < (b.id, b.published, b.lang)
        AND hamming(a.body_simhash, b.body_simhash) <= 3) AS by_scan,
       (SELECT count(*) FROM (SELECT key_a, key_b, distance FROM simhash_pairs('news', 3)
                              EXCEPT SELECT ROW(a.id, a.published, a.lang)::text, ROW(b.id, b.published, b.lang)::text,
                                            hamming(a.body_simhash, b.body_simhash)
                              FROM news a JOIN news b ON (a.id, a.published, a.lang) < (b.id, b.published, b.lang)
                              AND hamming(a.body_simhash, b.body_simhash) <= 3) x) AS not_in_scan;
SELECT count(*) AS rows, count(*) = (SELECT count(*) FROM news) AS every_row FROM simhash_clusters('news', 3);
SELECT count(*) AS posts_pairs FROM simhash_pairs('posts');

-- Errors: a partition is attached and detached through its partitioned table; a partitioned
-- table one of whose partitions has a trigger of the name the attach gives is refused before any
-- change.
\set VERBOSITY default
SELECT simhash_attach('news_2024_01', 'lang');
SELECT simhash_detach('news_2024_01');
CREATE TABLE mixed (id int, body text) PARTITION BY RANGE (id);
CREATE TABLE mixed_1 PARTITION OF mixed FOR VALUES FROM (0) TO (100);
CREATE FUNCTION pg_temp.noop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
CREATE TRIGGER simhash_body BEFORE INSERT ON mixed_1 FOR EACH ROW EXECUTE FUNCTION pg_temp.noop();
SELECT simhash_attach('mixed', 'body');
\set VERBOSITY terse
SELECT count(*) AS columns_added FROM pg_attribute WHERE attrelid = 'mixed'::regclass AND attname LIKE 'body\_%';
DROP TABLE mixed;

-- Renames. The text column: its fingerprint, band and flag columns and the trigger follow, and
-- detection goes on, on the partitions too.
ALTER TABLE news RENAME COLUMN body TO content;
SELECT table_name, text_column, fingerprint_column, band_columns, trigger_name FROM simhash_attachments() ORDER BY 1;
SELECT attname FROM pg_attribute WHERE attrelid = 'news_2024_02_h1'::regclass AND attname ~ 'content_' ORDER BY 1;
SELECT pg_temp.try($$INSERT INTO news VALUES (10010, '2024-03-09', 'en', (SELECT content || '!' FROM news WHERE id = 122))$$) AS after_column_rename;
SELECT count(*) AS found FROM simhash_near_duplicates(NULL::news, (SELECT content FROM news WHERE id = 122)) n;
-- A derived column cannot be renamed alone; a new name whose derived names are taken is refused
-- before anything changes.
\set VERBOSITY default
ALTER TABLE news RENAME COLUMN content_band1 TO b1;
ALTER TABLE news ADD COLUMN text_simhash int;
ALTER TABLE news RENAME COLUMN content TO text;
\set VERBOSITY terse
SELECT text_column FROM simhash_attachments() WHERE table_name = 'news'::regclass;
ALTER TABLE news DROP COLUMN text_simhash;
-- The table, a partition and their schemas: the trigger of this session, whose prepared key
-- query names the partition it read a key from (news_2024_01, above), keeps working.
CREATE SCHEMA archive;
ALTER TABLE news SET SCHEMA archive;
ALTER TABLE archive.news RENAME TO stories;
ALTER TABLE news_2024_01 RENAME TO january;
ALTER TABLE january SET SCHEMA archive;
ALTER SCHEMA archive RENAME TO vault;
\set VERBOSITY default
INSERT INTO vault.stories VALUES (10011, '2024-04-09', 'en', (SELECT content || '!' FROM vault.stories WHERE id = 120));
\set VERBOSITY terse
SELECT pg_temp.try($$INSERT INTO vault.stories VALUES (10012, '2024-01-09', 'en', (SELECT content || '?' FROM vault.stories WHERE id = 10004))$$) AS dup_of_april_row;

-- Detach removes everything from every partition.
SELECT simhash_detach('vault.stories');
SELECT count(*) AS columns_left FROM pg_attribute a JOIN pg_partition_tree('vault.stories') p ON p.relid = a.attrelid
WHERE a.attname ~ '^content_' AND NOT a.attisdropped;
SELECT count(*) AS indexes_left FROM pg_index i JOIN pg_partition_tree('vault.stories') p ON p.relid = i.indrelid
WHERE NOT i.indisprimary;
SELECT count(*) AS triggers_left FROM pg_trigger t JOIN pg_partition_tree('vault.stories') p ON p.relid = t.tgrelid;
SELECT count(*) AS attachments FROM simhash_attachments();
DROP SCHEMA vault CASCADE;
DROP TABLE posts, september, october;

-- An ordinary table: a column named like one the attach adds is refused (42701) before anything
-- changes; renaming the table, its schema and the text column keeps detection working in this
-- session, whose trigger has prepared its key query on the old names.
CREATE TABLE notes (id int PRIMARY KEY, note text, note_band2 int);
INSERT INTO notes VALUES (1, 'Scheduled power outage notice for Maple District on Tuesday from nine to noon.');
\set VERBOSITY default
SELECT simhash_attach('notes', 'note', on_duplicate => 'flag');
\set VERBOSITY terse
SELECT attname FROM pg_attribute WHERE attrelid = 'notes'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum;
SELECT count(*) AS triggers FROM pg_trigger WHERE tgrelid = 'notes'::regclass;
ALTER TABLE notes DROP COLUMN note_band2;
SELECT simhash_attach('notes', 'note', on_duplicate => 'error');
SELECT pg_temp.try($$INSERT INTO notes VALUES (2, 'Scheduled power outage notice for Maple District on Tuesday from nine to noon!')$$) AS before_renames;
CREATE SCHEMA crawl;
ALTER TABLE notes SET SCHEMA crawl;
ALTER TABLE crawl.notes RENAME TO memos;
ALTER SCHEMA crawl RENAME TO crawled;
ALTER TABLE crawled.memos RENAME COLUMN note TO memo;
\set VERBOSITY default
INSERT INTO crawled.memos VALUES (3, 'SCHEDULED POWER OUTAGE NOTICE FOR MAPLE DISTRICT ON TUESDAY FROM NINE TO NOON');
\set VERBOSITY terse
SELECT (n.item).id, n.distance FROM simhash_near_duplicates(NULL::crawled.memos, 'Scheduled power outage notice for Maple District on Tuesday from nine to noon') n;
SELECT simhash_detach('crawled.memos');
SELECT attname FROM pg_attribute WHERE attrelid = 'crawled.memos'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum;
DROP SCHEMA crawled CASCADE;
