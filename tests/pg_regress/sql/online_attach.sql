-- simhash_attach_concurrently() (issue 36): an online attach stores what simhash_attach() stores. Each
-- table is made twice from the same rows of real text (planted near-duplicates, NULL, empty and
-- featureless texts), in schema "online" (attached with CALL simhash_attach_concurrently(), in many
-- small batches) and in schema "offline" (simhash_attach()); then, row by row, the fingerprints or
-- signatures, bands and flags are equal, and so are simhash_near_duplicates(), simhash_pairs() and
-- simhash_clusters(); later writes are treated the same (rejected, skipped or flagged alike). SimHash
-- and MinHash, plain and partitioned tables (a sub-partition, a partition created while an attach is
-- unfinished and one created after), on_duplicate error, skip and flag. Also: the bands constraint,
-- simhash_attachments().state, the errors of an unfinished attach (55000), of other settings (42710)
-- and of a call inside a transaction (25001), resuming, detach of finished and unfinished attaches.
-- (Writers running through each phase: tests/isolation/specs/online_attach.spec; cancels and crashes
-- in each phase: tests/robustness/online_attach.sh.)
\getenv abs_srcdir PG_ABS_SRCDIR
\set include :abs_srcdir '/include/sentences.sql'
\i :include
\set SHOW_CONTEXT never

-- pg_temp.err(query): 'no error', or the SQLSTATE, the constraint the error names, and its message.
CREATE FUNCTION pg_temp.err(query text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE constraint_name text;
BEGIN
  EXECUTE query;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS constraint_name = CONSTRAINT_NAME;
  RETURN SQLSTATE || coalesce(' [' || nullif(constraint_name, '') || ']', '') || ': ' || SQLERRM;
END $$;
-- pg_temp.both(template): runs the statement on the online and on the offline copy ('@' in the
-- template stands for the schema) and shows what each did, with the schema's name taken out.
CREATE FUNCTION pg_temp.both(template text) RETURNS TABLE (copy text, result text) LANGUAGE sql AS $$
  SELECT s, replace(pg_temp.err(replace(template, '@', s || '.')), s || '.', '')
  FROM unnest(ARRAY['online', 'offline']) WITH ORDINALITY u(s, i) ORDER BY i
$$;
-- pg_temp.compare(table): the rows of the offline copy (the reference) and how many rows of the
-- online copy store other values (fingerprint or signature, bands, flag; a row missing on either
-- side counts); the reference's lookups (simhash_near_duplicates() of the text of every fifth row),
-- pairs and clusters, and how many of each the online copy has otherwise (both ways).
CREATE FUNCTION pg_temp.compare(tab text, OUT rows bigint, OUT stored_differ bigint, OUT lookups bigint,
                                OUT lookups_differ bigint, OUT pairs bigint, OUT pairs_differ bigint,
                                OUT clustered bigint, OUT clusters_differ bigint)
LANGUAGE plpgsql AS $$
DECLARE
  att simhash_attachment;
  cols text;
  t_on text := format('online.%I', tab);
  t_off text := format('offline.%I', tab);
  lookup text := 'SELECT d.id, (n.item).id AS found, n.distance, n.similarity FROM %1$s d, simhash_near_duplicates(NULL::%1$s, d.body) n WHERE d.id %% 5 = 0';
BEGIN
  SELECT * INTO STRICT att FROM simhash_attachments() s WHERE s.table_name = t_on::regclass;
  SELECT string_agg(format('%I', c), ', ') INTO cols
  FROM unnest(att.fingerprint_column || att.band_columns || att.flag_column) c WHERE c IS NOT NULL;
  EXECUTE format('SELECT count(*) FROM %s', t_off) INTO rows;
  EXECUTE format('SELECT count(*) FROM (SELECT id, %1$s FROM %2$s) a FULL JOIN (SELECT id, %1$s FROM %3$s) b USING (id) '
                 'WHERE ROW(a.*) IS DISTINCT FROM ROW(b.*)', cols, t_on, t_off) INTO stored_differ;
  EXECUTE format('SELECT count(*) FROM (' || lookup || ') x', t_off) INTO lookups;
  EXECUTE format('SELECT count(*) FROM ((' || lookup || ' EXCEPT ' || replace(lookup, '%1$s', '%2$s') || ') UNION ALL ('
                 || replace(lookup, '%1$s', '%2$s') || ' EXCEPT ' || lookup || ')) x', t_on, t_off) INTO lookups_differ;
  EXECUTE format('SELECT count(*) FROM simhash_pairs(%L)', t_off) INTO pairs;
  EXECUTE format('SELECT count(*) FROM ((SELECT * FROM simhash_pairs(%1$L) EXCEPT ALL SELECT * FROM simhash_pairs(%2$L)) '
                 'UNION ALL (SELECT * FROM simhash_pairs(%2$L) EXCEPT ALL SELECT * FROM simhash_pairs(%1$L))) x', t_on, t_off) INTO pairs_differ;
  EXECUTE format('SELECT count(*) FROM simhash_clusters(%L)', t_off) INTO clustered;
  EXECUTE format('SELECT count(*) FROM ((SELECT * FROM simhash_clusters(%1$L) EXCEPT ALL SELECT * FROM simhash_clusters(%2$L)) '
                 'UNION ALL (SELECT * FROM simhash_clusters(%2$L) EXCEPT ALL SELECT * FROM simhash_clusters(%1$L))) x', t_on, t_off)
    INTO clusters_differ;
END $$;
-- pg_temp.objects(table): what an attach left on a table and its partitions: columns, constraints
-- (with whether validated), triggers and indexes named after the text column "body".
CREATE FUNCTION pg_temp.objects(t regclass) RETURNS TABLE (relation regclass, kind text, name text) LANGUAGE sql AS $$
  WITH p AS (SELECT relid FROM pg_partition_tree(t) UNION SELECT t)
  SELECT p.relid, 'column', a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
         || CASE WHEN a.attgenerated <> '' THEN ' generated' ELSE '' END
  FROM p JOIN pg_attribute a ON a.attrelid = p.relid
  WHERE a.attnum > 0 AND NOT a.attisdropped AND a.attname LIKE 'body_%'
  UNION ALL
  SELECT p.relid, 'constraint', k.conname || CASE WHEN k.convalidated THEN ' valid' ELSE ' NOT VALID' END
  FROM p JOIN pg_constraint k ON k.conrelid = p.relid WHERE k.contype = 'c'
  UNION ALL
  SELECT p.relid, 'trigger', g.tgname FROM p JOIN pg_trigger g ON g.tgrelid = p.relid
  WHERE NOT g.tgisinternal OR g.tgparentid <> 0  -- a partition's clone is internal up to PostgreSQL 14
  UNION ALL
  SELECT p.relid, 'index', regexp_replace(pg_get_indexdef(i.indexrelid), '^.* USING ', '')
         || CASE WHEN i.indisvalid THEN '' ELSE ' INVALID' END
  FROM p JOIN pg_index i ON i.indrelid = p.relid WHERE NOT i.indisprimary
  ORDER BY 1, 2, 3
$$;

-- 1,500 documents of four real sentences, 250 planted near-duplicates (an edit of a document),
-- NULL, empty and featureless texts; site spreads them over partitions.
CREATE TEMP TABLE base (id int PRIMARY KEY, site int NOT NULL, body text);
INSERT INTO base
SELECT i, i % 3 + 1, (SELECT string_agg(s, ' ' ORDER BY k)
                      FROM (VALUES (1, (i * 7) % m + 1), (2, (i * 13 + 5) % m + 1), (3, (i * 31 + 11) % m + 1),
                                   (4, (i / 405) % m + 1)) p(k, n)
                      JOIN sentences USING (n))
FROM generate_series(1, 1500) i, (SELECT count(*) AS m FROM sentences) c;
INSERT INTO base
SELECT 2000 + i, (i + 1) % 3 + 1, CASE i % 3 WHEN 0 THEN body || ' 来源：本地新闻网'
                                            WHEN 1 THEN upper(body)
                                            ELSE replace(body, '。', '！') END
FROM (SELECT row_number() OVER (ORDER BY id) AS i, body FROM base WHERE id % 6 = 0) x WHERE i <= 250;
INSERT INTO base VALUES (3001, 1, NULL), (3002, 2, ''), (3003, 3, '。。。'), (3004, 1, NULL);
CREATE SCHEMA online;
CREATE SCHEMA offline;
-- Small batches: the fill of each table takes many transactions. No progress NOTICEs (a slow
-- machine would print some).
SET simhash.attach_batch_size = 100;
SET simhash.progress_interval = '1h';

-- 1. SimHash, a plain table, on_duplicate 'error'.
CREATE TABLE online.docs (id int PRIMARY KEY, body text);
CREATE TABLE offline.docs (id int PRIMARY KEY, body text);
INSERT INTO online.docs SELECT id, body FROM base;
INSERT INTO offline.docs SELECT id, body FROM base;
CALL simhash_attach_concurrently('online.docs', 'body', on_duplicate => 'error');
SELECT simhash_attach('offline.docs', 'body', on_duplicate => 'error');
SELECT * FROM pg_temp.compare('docs');
SELECT count(*) AS rows, count(body_simhash) AS fingerprinted,
       count(*) FILTER (WHERE body_simhash IS DISTINCT FROM simhash(body)) AS wrong_fingerprints,
       count(*) FILTER (WHERE ARRAY[body_band0, body_band1, body_band2, body_band3]
                              IS DISTINCT FROM ARRAY(SELECT simhash_band(body_simhash, i, 4) FROM generate_series(0, 3) i))
         AS wrong_bands
FROM online.docs;
-- The same attachment (trigger arguments), state 'attached'; nothing left in the progress view.
SELECT a.table_name, a.state, a.on_duplicate, a.band_columns,
       (SELECT t.tgargs FROM pg_trigger t WHERE t.tgrelid = a.table_name AND t.tgname = a.trigger_name)
       = (SELECT t.tgargs FROM pg_trigger t WHERE t.tgrelid = 'offline.docs'::regclass AND t.tgname = a.trigger_name)
       AS same_trigger_arguments
FROM simhash_attachments() a WHERE a.table_name = 'online.docs'::regclass;
SELECT count(*) AS attaches_in_progress FROM simhash_attach_progress;
-- Plain band columns under a validated CHECK constraint where the offline attach generates them;
-- the same band indexes and triggers.
SELECT * FROM pg_temp.objects('online.docs');
SELECT * FROM pg_temp.objects('offline.docs');
-- Later writes: near-duplicates rejected alike (23505, the trigger named), by an INSERT of one row,
-- an INSERT of many (the deferred check of simhash_body$chk), an UPDATE and a COPY-like INSERT ...
-- SELECT; an exact duplicate too; new texts and NULL are written.
SELECT * FROM pg_temp.both($$INSERT INTO @docs SELECT 5001, body || ' 转载自本地日报' FROM @docs WHERE id = 12$$);
SELECT * FROM pg_temp.both($$INSERT INTO @docs SELECT 5000 + id, upper(body) FROM @docs WHERE id IN (13, 14)$$);
SELECT * FROM pg_temp.both($$INSERT INTO @docs SELECT 5003, body FROM @docs WHERE id = 15$$);
SELECT * FROM pg_temp.both($$UPDATE @docs SET body = (SELECT body || '!' FROM @docs WHERE id = 16) WHERE id = 17$$);
SELECT * FROM pg_temp.both($$INSERT INTO @docs VALUES (5004, 'A quiet week in the valley: cranes return to the wetlands, and the ferry timetable changes for winter.'), (5005, NULL)$$);
SELECT * FROM pg_temp.both($$INSERT INTO @docs VALUES (5006, 'A quiet week in the valley - cranes return to the wetlands, and the ferry timetable changes for winter!')$$);
SELECT * FROM pg_temp.both($$UPDATE @docs SET body = body || ' Updated at noon with the mayor''s comments on the new budget and the tram line.' WHERE id = 19$$);
SELECT * FROM pg_temp.compare('docs');
-- A band column set by hand to a value other than the fingerprint's band: the bands constraint
-- refuses it (the offline attach's band columns are generated and cannot be written at all).
\set VERBOSITY terse
SELECT * FROM pg_temp.both($$UPDATE @docs SET body_band0 = body_band0 # 1 WHERE id = 20$$);
SELECT * FROM pg_temp.both($$UPDATE @docs SET body_simhash = body_simhash # 1 WHERE id = 20$$);
SELECT 'online' AS copy, body_simhash = simhash(body) AS fingerprint_right FROM online.docs WHERE id = 20
UNION ALL SELECT 'offline', body_simhash = simhash(body) FROM offline.docs WHERE id = 20;
-- An INSERT naming band values gets the fingerprint's bands (the trigger computes them).
INSERT INTO online.docs (id, body, body_band0, body_band2) VALUES (5007, 'Snow closed the mountain pass overnight; crews expect to reopen it by the weekend.', 1, 2);
SELECT body_simhash = simhash(body) AS fingerprint_right,
       ARRAY[body_band0, body_band1, body_band2, body_band3] = simhash_bands(body_simhash) AS bands_right
FROM online.docs WHERE id = 5007;
DELETE FROM online.docs WHERE id = 5007;
-- An online attach of a column already attached (with other settings): 42710, as simhash_attach() says.
CALL simhash_attach_concurrently('online.docs', 'body');
\echo :LAST_ERROR_SQLSTATE

-- 2. SimHash, a plain table with a text key, on_duplicate 'flag': the same flags before and after.
CREATE TABLE online.notes (id int, key text PRIMARY KEY, body text);
CREATE TABLE offline.notes (id int, key text PRIMARY KEY, body text);
INSERT INTO online.notes SELECT id, 'k' || id, body FROM base;
INSERT INTO offline.notes SELECT id, 'k' || id, body FROM base;
CALL simhash_attach_concurrently('online.notes', 'body', on_duplicate => 'flag', max_distance => 5);
SELECT simhash_attach('offline.notes', 'body', on_duplicate => 'flag', max_distance => 5);
SELECT * FROM pg_temp.compare('notes');
SELECT * FROM pg_temp.both($$INSERT INTO @notes SELECT 5001, 'k5001', body || ' 来源：本地新闻网' FROM @notes WHERE id = 30$$);
SELECT * FROM pg_temp.both($$INSERT INTO @notes SELECT 5002, 'k5002', replace(body, '。', '！') FROM @notes WHERE id = 31$$);
SELECT * FROM pg_temp.both($$UPDATE @notes SET body = (SELECT upper(body) FROM @notes WHERE id = 32) WHERE id = 33$$);
SELECT 'online' AS copy, id, body_duplicate_of FROM online.notes WHERE body_duplicate_of IS NOT NULL
UNION ALL
SELECT 'offline', id, body_duplicate_of FROM offline.notes WHERE body_duplicate_of IS NOT NULL
ORDER BY 1 DESC, 2;
SELECT * FROM pg_temp.compare('notes');
SELECT * FROM pg_temp.objects('online.notes') WHERE kind IN ('column', 'constraint');

-- 3. MinHash, a plain table, on_duplicate 'error'.
CREATE TABLE online.news (id int PRIMARY KEY, body text);
CREATE TABLE offline.news (id int PRIMARY KEY, body text);
INSERT INTO online.news SELECT id, body FROM base;
INSERT INTO offline.news SELECT id, body FROM base;
CALL simhash_attach_concurrently('online.news', 'body', method => 'minhash', on_duplicate => 'error');
SELECT simhash_attach('offline.news', 'body', method => 'minhash', on_duplicate => 'error');
SELECT * FROM pg_temp.compare('news');
SELECT count(*) AS rows, count(body_minhash) AS with_signature,
       count(*) FILTER (WHERE body_minhash IS DISTINCT FROM minhash(body)) AS wrong_signatures,
       count(*) FILTER (WHERE body_lsh IS DISTINCT FROM minhash_bands(body_minhash)) AS wrong_bands
FROM online.news;
SELECT * FROM pg_temp.objects('online.news');
SELECT * FROM pg_temp.objects('offline.news');
SELECT a.state, a.method, a.band_columns FROM simhash_attachments() a WHERE a.table_name = 'online.news'::regclass;
SELECT * FROM pg_temp.both($$INSERT INTO @news SELECT 5001, body || ' 来源：本地新闻网' FROM @news WHERE id = 40$$);
SELECT * FROM pg_temp.both($$UPDATE @news SET body = (SELECT upper(body) FROM @news WHERE id = 41) WHERE id = 42$$);
SELECT * FROM pg_temp.both($$INSERT INTO @news VALUES (5002, 'A quiet week in the valley: cranes return to the wetlands, and the ferry timetable changes for winter.')$$);
SELECT * FROM pg_temp.both($$UPDATE @news SET body_lsh = body_lsh[2:] WHERE id = 43$$);
SELECT * FROM pg_temp.compare('news');

-- 4. SimHash, a partitioned table (a list partition sub-partitioned by range), on_duplicate 'skip'.
-- The online attach is left unfinished by a failing fill: a trigger of the application's refuses
-- the update of one row of the sub-partition filled last. Then a partition is created, the
-- application writes, and the attach is called again and finishes.
CREATE TABLE online.feed (id int, site int, body text, PRIMARY KEY (id, site)) PARTITION BY LIST (site);
CREATE TABLE online.feed_1 PARTITION OF online.feed FOR VALUES IN (1);
CREATE TABLE online.feed_2 PARTITION OF online.feed FOR VALUES IN (2, 3) PARTITION BY RANGE (id);
CREATE TABLE online.feed_2a PARTITION OF online.feed_2 FOR VALUES FROM (MINVALUE) TO (1000);
CREATE TABLE online.feed_2b PARTITION OF online.feed_2 FOR VALUES FROM (1000) TO (MAXVALUE);
CREATE TABLE offline.feed (id int, site int, body text, PRIMARY KEY (id, site)) PARTITION BY LIST (site);
CREATE TABLE offline.feed_1 PARTITION OF offline.feed FOR VALUES IN (1);
CREATE TABLE offline.feed_2 PARTITION OF offline.feed FOR VALUES IN (2, 3) PARTITION BY RANGE (id);
CREATE TABLE offline.feed_2a PARTITION OF offline.feed_2 FOR VALUES FROM (MINVALUE) TO (1000);
CREATE TABLE offline.feed_2b PARTITION OF offline.feed_2 FOR VALUES FROM (1000) TO (MAXVALUE);
INSERT INTO online.feed SELECT id, site, body FROM base WHERE site <> 3 OR id < 2000;
INSERT INTO offline.feed SELECT id, site, body FROM base WHERE site <> 3 OR id < 2000;
CREATE FUNCTION online.refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'row % is locked by the application', NEW.id;
END $$;
CREATE TRIGGER refuse BEFORE UPDATE ON online.feed_2b FOR EACH ROW WHEN (OLD.id = 1301) EXECUTE FUNCTION online.refuse();
CALL simhash_attach_concurrently('online.feed', 'body', on_duplicate => 'skip');
\echo :LAST_ERROR_SQLSTATE
-- Unfinished: 'attaching'; the rows of the partitions filled before are fingerprinted, those of
-- feed_2b from its first block up to the failing batch, the rest not yet.
SELECT a.table_name, a.state FROM simhash_attachments() a WHERE a.table_name = 'online.feed'::regclass;
SELECT tableoid::regclass AS leaf, count(*) AS rows, count(*) FILTER (WHERE body IS NOT NULL) AS texts,
       count(body_simhash) > 0 AS some_fingerprinted,
       count(*) FILTER (WHERE body_simhash IS NULL AND body IS NOT NULL) = 0 AS all_fingerprinted,
       count(*) FILTER (WHERE body_simhash IS NOT NULL AND body_simhash IS DISTINCT FROM simhash(body)) AS wrong
FROM online.feed GROUP BY 1 ORDER BY 1;
SELECT count(*) AS ids_above_failing_row_fingerprinted FROM online.feed_2b WHERE id > 1301 AND id < 2000 AND body_simhash IS NOT NULL;
SELECT table_name, text_column, phase, running, rows_done > 0 AS some_rows_done, started <= updated AS times_in_order
FROM simhash_attach_progress;
SELECT * FROM pg_temp.objects('online.feed') WHERE kind <> 'column';
-- Lookups refuse a column still being attached (55000), through the table and through a partition.
SELECT pg_temp.err($$SELECT * FROM simhash_near_duplicates(NULL::online.feed, 'some text')$$) AS near_duplicates;
SELECT pg_temp.err($$SELECT * FROM simhash_near_duplicates(NULL::online.feed_1, 12345::bigint)$$) AS near_duplicates_partition;
SELECT pg_temp.err($$SELECT * FROM simhash_pairs('online.feed')$$) AS pairs;
SELECT pg_temp.err($$SELECT * FROM simhash_clusters('online.feed')$$) AS clusters;
SELECT pg_temp.err($$SELECT * FROM simhash_lookup_cost('online.feed', 12345)$$) AS lookup_cost;
SELECT pg_temp.err($$SELECT simhash_near_duplicates_sql('online.feed', 12345)$$) AS near_duplicates_sql;
\set VERBOSITY default
SELECT * FROM simhash_pairs('online.feed');
\set VERBOSITY terse
-- Another attach of the column with other settings: 42710; simhash_attach() too.
CALL simhash_attach_concurrently('online.feed', 'body', on_duplicate => 'error');
\echo :LAST_ERROR_SQLSTATE
CALL simhash_attach_concurrently('online.feed', 'body', on_duplicate => 'skip', max_distance => 5);
\echo :LAST_ERROR_SQLSTATE
SELECT pg_temp.err($$SELECT simhash_attach('online.feed', 'body', on_duplicate => 'skip')$$) AS offline_attach;
-- While attaching, writes are fingerprinted and not checked: a near-duplicate gets in (removed again).
INSERT INTO online.feed SELECT 6001, 1, body || ' 来源：本地新闻网' FROM online.feed WHERE id = 51;
SELECT id, body_simhash = simhash(body) AS fingerprinted,
       ARRAY[body_band0, body_band1, body_band2, body_band3] = simhash_bands(body_simhash) AS bands
FROM online.feed WHERE id IN (51, 6001) ORDER BY id;
DELETE FROM online.feed WHERE id = 6001;
-- A partition created while the attach is unfinished, with rows; writes of the application.
CREATE TABLE online.feed_4 PARTITION OF online.feed FOR VALUES IN (4);
CREATE TABLE offline.feed_4 PARTITION OF offline.feed FOR VALUES IN (4);
SELECT * FROM pg_temp.objects('online.feed_4') WHERE kind IN ('column', 'trigger');
-- It is part of the attach still being made: a copy of a row written into it gets in (not
-- skipped), and a lookup through it refuses (removed again).
INSERT INTO online.feed SELECT 6002, 4, body FROM online.feed WHERE id = 52;
SELECT id, site, body_simhash = simhash(body) AS fingerprinted FROM online.feed WHERE id IN (52, 6002) ORDER BY id;
SELECT pg_temp.err($$SELECT * FROM simhash_near_duplicates(NULL::online.feed_4, 'some text')$$) AS near_duplicates_new_partition;
DELETE FROM online.feed WHERE id = 6002;
INSERT INTO online.feed SELECT id, 4, body FROM base WHERE site = 3 AND id >= 2000;
INSERT INTO offline.feed SELECT id, 4, body FROM base WHERE site = 3 AND id >= 2000;
-- A table with rows (copies of texts there: near-duplicates) attached as a partition while the
-- attach is unfinished: its rows are fingerprinted as it joins.
CREATE TABLE online.feed_6 (id int NOT NULL, site int NOT NULL, body text);
CREATE TABLE offline.feed_6 (id int NOT NULL, site int NOT NULL, body text);
INSERT INTO online.feed_6 SELECT id + 10000, 6, body FROM base WHERE id % 10 = 1;
INSERT INTO offline.feed_6 SELECT id + 10000, 6, body FROM base WHERE id % 10 = 1;
ALTER TABLE online.feed ATTACH PARTITION online.feed_6 FOR VALUES IN (6);
ALTER TABLE offline.feed ATTACH PARTITION offline.feed_6 FOR VALUES IN (6);
SELECT count(*) AS rows, count(body_simhash) AS fingerprinted,
       count(*) FILTER (WHERE body_simhash IS DISTINCT FROM simhash(body)) AS wrong_fingerprints,
       count(*) FILTER (WHERE ARRAY[body_band0, body_band1, body_band2, body_band3]
                              IS DISTINCT FROM ARRAY(SELECT simhash_band(body_simhash, i, 4) FROM generate_series(0, 3) i))
         AS wrong_bands
FROM online.feed_6;
SELECT * FROM pg_temp.objects('online.feed_6') WHERE kind IN ('column', 'trigger');
UPDATE online.feed SET body = body || ' 更新。' WHERE id IN (60, 61);
UPDATE offline.feed SET body = body || ' 更新。' WHERE id IN (60, 61);
-- The application's trigger lets go; the attach is called again (same settings: it resumes) and
-- finishes.
DROP TRIGGER refuse ON online.feed_2b;
CALL simhash_attach_concurrently('online.feed', 'body', on_duplicate => 'skip');
SELECT simhash_attach('offline.feed', 'body', on_duplicate => 'skip');
SELECT a.table_name, a.state FROM simhash_attachments() a WHERE a.table_name = 'online.feed'::regclass;
SELECT count(*) AS attaches_in_progress FROM simhash_attach_progress;
SELECT * FROM pg_temp.compare('feed');
SELECT tableoid::regclass AS leaf, count(*) AS rows, count(body_simhash) AS fingerprinted,
       count(*) FILTER (WHERE body_simhash IS DISTINCT FROM simhash(body)) AS wrong_fingerprints,
       count(*) FILTER (WHERE ARRAY[body_band0, body_band1, body_band2, body_band3]
                              IS DISTINCT FROM ARRAY(SELECT simhash_band(body_simhash, i, 4) FROM generate_series(0, 3) i))
         AS wrong_bands
FROM online.feed GROUP BY 1 ORDER BY 1;
SELECT * FROM pg_temp.objects('online.feed');
SELECT * FROM pg_temp.objects('offline.feed') WHERE kind <> 'column';
-- A partition created after the attach; later writes skipped alike, in every partition.
CREATE TABLE online.feed_5 PARTITION OF online.feed FOR VALUES IN (5);
CREATE TABLE offline.feed_5 PARTITION OF offline.feed FOR VALUES IN (5);
SELECT * FROM pg_temp.objects('online.feed_5');
-- A table with rows attached as a partition after the attach.
-- Rows of their own: a partition with near-duplicates of the table's rows is refused (windows.sql).
CREATE TABLE online.feed_7 (id int NOT NULL, site int NOT NULL, body text);
CREATE TABLE offline.feed_7 (id int NOT NULL, site int NOT NULL, body text);
INSERT INTO online.feed_7 SELECT id + 20000, 7, 'Partition seven note ' || id || ': ' || md5(id::text) || ' ' || md5((id * 3)::text) FROM base WHERE id % 10 = 2;
INSERT INTO offline.feed_7 SELECT id + 20000, 7, 'Partition seven note ' || id || ': ' || md5(id::text) || ' ' || md5((id * 3)::text) FROM base WHERE id % 10 = 2;
ALTER TABLE online.feed ATTACH PARTITION online.feed_7 FOR VALUES IN (7);
ALTER TABLE offline.feed ATTACH PARTITION offline.feed_7 FOR VALUES IN (7);
SELECT * FROM pg_temp.objects('online.feed_7');
SELECT * FROM pg_temp.compare('feed');
SELECT * FROM pg_temp.both($$INSERT INTO @feed SELECT 7001, 5, body || ' 来源：本地新闻网' FROM @feed WHERE id = 70$$);
SELECT * FROM pg_temp.both($$INSERT INTO @feed SELECT 7002, 2, upper(body) FROM @feed WHERE id = 2006$$);
SELECT * FROM pg_temp.both($$INSERT INTO @feed VALUES (7003, 5, 'A quiet week in the valley: cranes return to the wetlands, and the ferry timetable changes for winter.')$$);
SELECT * FROM pg_temp.both($$INSERT INTO @feed VALUES (7004, 3, 'A quiet week in the valley - cranes return to the wetlands, and the ferry timetable changes for winter!')$$);
SELECT * FROM pg_temp.both($$UPDATE @feed SET body_band3 = 0 WHERE id = 7003$$);
SELECT 'online' AS copy, string_agg(id::text, ', ' ORDER BY id) AS new_rows FROM online.feed WHERE id BETWEEN 7001 AND 7999
UNION ALL SELECT 'offline', string_agg(id::text, ', ' ORDER BY id) FROM offline.feed WHERE id BETWEEN 7001 AND 7999;
SELECT * FROM pg_temp.compare('feed');

-- 5. MinHash, a partitioned table, on_duplicate 'flag'.
CREATE TABLE online.posts (id int PRIMARY KEY, site int, body text) PARTITION BY RANGE (id);
CREATE TABLE online.posts_1 PARTITION OF online.posts FOR VALUES FROM (MINVALUE) TO (1000);
CREATE TABLE online.posts_2 PARTITION OF online.posts FOR VALUES FROM (1000) TO (MAXVALUE);
CREATE TABLE offline.posts (id int PRIMARY KEY, site int, body text) PARTITION BY RANGE (id);
CREATE TABLE offline.posts_1 PARTITION OF offline.posts FOR VALUES FROM (MINVALUE) TO (1000);
CREATE TABLE offline.posts_2 PARTITION OF offline.posts FOR VALUES FROM (1000) TO (MAXVALUE);
INSERT INTO online.posts SELECT * FROM base;
INSERT INTO offline.posts SELECT * FROM base;
CALL simhash_attach_concurrently('online.posts', 'body', method => 'minhash', on_duplicate => 'flag', threshold => 0.6);
SELECT simhash_attach('offline.posts', 'body', method => 'minhash', on_duplicate => 'flag', threshold => 0.6);
SELECT * FROM pg_temp.compare('posts');
SELECT * FROM pg_temp.objects('online.posts');
SELECT * FROM pg_temp.both($$INSERT INTO @posts SELECT 5001, 1, body || ' 来源：本地新闻网' FROM @posts WHERE id = 80$$);
SELECT * FROM pg_temp.both($$INSERT INTO @posts SELECT 0, 1, upper(body) FROM @posts WHERE id = 1081$$);
SELECT * FROM pg_temp.both($$UPDATE @posts SET body = (SELECT replace(body, '。', '！') FROM @posts WHERE id = 82) WHERE id = 1083$$);
SELECT 'online' AS copy, id, body_duplicate_of FROM online.posts WHERE body_duplicate_of IS NOT NULL
UNION ALL
SELECT 'offline', id, body_duplicate_of FROM offline.posts WHERE body_duplicate_of IS NOT NULL
ORDER BY 1 DESC, 2;
SELECT * FROM pg_temp.compare('posts');

-- 6. A call that cannot commit: inside BEGIN ... COMMIT, from a DO block, from a function, from a
-- procedure: 25001, and nothing is changed.
CREATE TABLE online.plain (id int PRIMARY KEY, body text);
INSERT INTO online.plain SELECT id, body FROM base WHERE id <= 300;
BEGIN;
CALL simhash_attach_concurrently('online.plain', 'body');
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
DO $$ BEGIN CALL simhash_attach_concurrently('online.plain', 'body'); END $$;
\echo :LAST_ERROR_SQLSTATE
CREATE FUNCTION online.attach_from_function() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  CALL simhash_attach_concurrently('online.plain', 'body');
END $$;
SELECT online.attach_from_function();
\echo :LAST_ERROR_SQLSTATE
CREATE PROCEDURE online.attach_from_procedure() LANGUAGE plpgsql AS $$
BEGIN
  CALL simhash_attach_concurrently('online.plain', 'body');
END $$;
CALL online.attach_from_procedure();
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM pg_temp.objects('online.plain');
SELECT count(*) AS attachments FROM simhash_attachments() a WHERE a.table_name = 'online.plain'::regclass;
-- What simhash_attach() refuses, this refuses the same way (NULL arguments, a missing column, a
-- partition, a view, an unknown option).
CALL simhash_attach_concurrently(NULL, 'body');
\echo :LAST_ERROR_SQLSTATE
CALL simhash_attach_concurrently('online.plain', 'nobody');
\echo :LAST_ERROR_SQLSTATE
SELECT pg_temp.err($$SELECT simhash_attach('online.plain', 'nobody')$$) AS missing_column_offline;
CALL simhash_attach_concurrently('online.feed_1', 'body');
\echo :LAST_ERROR_SQLSTATE
CREATE VIEW online.plain_view AS SELECT * FROM online.plain;
CALL simhash_attach_concurrently('online.plain_view', 'body');
\echo :LAST_ERROR_SQLSTATE
CALL simhash_attach_concurrently('online.plain', 'body', on_duplicate => 'ignore');
\echo :LAST_ERROR_SQLSTATE
CALL simhash_attach_concurrently('online.plain', 'body', method => 'minhash', max_distance => 3);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM pg_temp.objects('online.plain');

-- 7. simhash_detach() of an attach that has finished, and of one that has not: every column,
-- constraint, trigger and index it made is gone, the rows are kept, and the table can be attached
-- again (online).
SELECT simhash_detach('online.docs');
SELECT * FROM pg_temp.objects('online.docs');
SELECT count(*) AS rows FROM online.docs;
SELECT simhash_detach('online.posts');
SELECT * FROM pg_temp.objects('online.posts');
CREATE TRIGGER refuse BEFORE UPDATE ON online.plain FOR EACH ROW WHEN (OLD.id = 250) EXECUTE FUNCTION online.refuse();
CALL simhash_attach_concurrently('online.plain', 'body', method => 'minhash');
SELECT a.state FROM simhash_attachments() a WHERE a.table_name = 'online.plain'::regclass;
SELECT phase FROM simhash_attach_progress;
SELECT simhash_detach('online.plain');
SELECT * FROM pg_temp.objects('online.plain');
SELECT count(*) AS attaches_in_progress FROM simhash_attach_progress;
DROP TRIGGER refuse ON online.plain;
CALL simhash_attach_concurrently('online.plain', 'body', on_duplicate => 'error');
SELECT a.state, a.method FROM simhash_attachments() a WHERE a.table_name = 'online.plain'::regclass;
SELECT count(*) FILTER (WHERE body_simhash IS DISTINCT FROM simhash(body)) AS wrong FROM online.plain;
SELECT * FROM pg_temp.objects('online.plain');

-- 8. A table's owner gets none of its code run as whoever attaches it. Between the steps of an
-- attach that failed, the owner puts an expression of its own under the name of the bands
-- constraint; the superuser's resume validates it as the owner (the expression records the user).
-- And the progress of that attach stays hidden from a role that may not read the table, even
-- through a function of its own in the view's condition (a security barrier).
CREATE ROLE regress_online_owner;
CREATE ROLE regress_online_reader;
CREATE SCHEMA online_owned AUTHORIZATION regress_online_owner;
SET ROLE regress_online_owner;
CREATE TABLE online_owned.docs (id int PRIMARY KEY, body text);
INSERT INTO online_owned.docs SELECT g, 'owned text number ' || g || ' with a few more words' FROM generate_series(1, 60) g;
CREATE TABLE online_owned.who (u name);
CREATE FUNCTION online_owned.note() RETURNS boolean LANGUAGE plpgsql
  AS $$BEGIN INSERT INTO online_owned.who VALUES (current_user); RETURN true; END$$;
CREATE FUNCTION online_owned.refuse() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'refused'; END$$;
CREATE TRIGGER refuse BEFORE UPDATE ON online_owned.docs FOR EACH ROW EXECUTE FUNCTION online_owned.refuse();
RESET ROLE;
CALL simhash_attach_concurrently('online_owned.docs', 'body');
SET ROLE regress_online_reader;
CREATE FUNCTION pg_temp.leak(t text) RETURNS boolean LANGUAGE plpgsql COST 0.0000001
  AS $$BEGIN RAISE NOTICE 'leaked %', t; RETURN true; END$$;
SELECT count(*) AS progress_rows_seen FROM simhash_attach_progress WHERE pg_temp.leak(table_name::text || ' ' || detail);
DROP FUNCTION pg_temp.leak(text);
RESET ROLE;
SET ROLE regress_online_owner;
DROP TRIGGER refuse ON online_owned.docs;
ALTER TABLE online_owned.docs DROP CONSTRAINT "simhash_body$bands";
ALTER TABLE online_owned.docs ADD CONSTRAINT "simhash_body$bands" CHECK (online_owned.note()) NOT VALID;
RESET ROLE;
CALL simhash_attach_concurrently('online_owned.docs', 'body');
SELECT u AS validated_as, count(*) > 0 AS some_rows FROM online_owned.who GROUP BY u ORDER BY u;
DROP SCHEMA online_owned CASCADE;
DROP ROLE regress_online_owner, regress_online_reader;

RESET simhash.attach_batch_size;
RESET simhash.progress_interval;
DROP SCHEMA online, offline CASCADE;
