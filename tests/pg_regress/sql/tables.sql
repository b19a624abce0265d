-- simhash_attach/detach, the trigger's three modes, keys of every type, UPDATEs, NULLs and errors.
\getenv abs_srcdir PG_ABS_SRCDIR
\set include :abs_srcdir '/include/try.sql'
\i :include

-- error mode on a bigint key, with rows already there (filled by attach; their duplicates are kept).
CREATE TABLE news (id bigserial PRIMARY KEY, body text);
INSERT INTO news (body) VALUES
  ('北京地铁19号线今天正式开通运营，全长22公里，共设10座车站，早晚高峰发车间隔约4分钟。'),
  ('北京地铁19号线今天正式开通运营，全长22公里，共设10座车站，早晚高峰发车间隔约4分钟！'),
  ('The city council approved the budget for protected bike lanes on Monday evening after a long debate.'),
  (NULL), ('。。。');
SELECT simhash_attach('news', 'body', on_duplicate => 'error');
SELECT id, body_simhash = simhash(body) AS fingerprint_ok, body_band0 = simhash_band(body_simhash, 0) AS band_ok,
       body_simhash IS NULL AS no_fingerprint
FROM news ORDER BY id;
SELECT table_name, text_column, fingerprint_column, band_columns, max_distance, on_duplicate, flag_column,
       tokenizer, shingle, weighting, stopwords, trigger_name
FROM simhash_attachments();
SELECT indexrelid::regclass AS band_index FROM pg_index WHERE indrelid = 'news'::regclass AND NOT indisprimary
ORDER BY 1;
-- A near-duplicate insert is rejected with 23505 and the key and distance of the existing row.
\set VERBOSITY default
INSERT INTO news (body) VALUES ('北京地铁19号线今日正式开通运营，全长22公里，共设10座车站，早晚高峰发车间隔约4分钟。');
SELECT pg_temp.try($$INSERT INTO news (body) VALUES ('THE CITY COUNCIL APPROVED THE BUDGET FOR PROTECTED BIKE LANES ON MONDAY EVENING AFTER A LONG DEBATE')$$);
-- Texts without features never conflict, and neither do unrelated texts.
INSERT INTO news (body) VALUES (NULL), ('！！！'), ('A quiet week in the valley: cranes return to the wetlands as spring arrives.');
-- Two near-duplicates in one statement: the second sees the first.
SELECT pg_temp.try($$INSERT INTO news (body) VALUES ('Library reopens after renovation with a new reading room.'), ('Library reopens after renovation, with a new reading room!')$$);
-- UPDATEs: a row is never its own duplicate; changing the text to a near-duplicate is rejected.
UPDATE news SET body = body || '  ' WHERE id = 3;
UPDATE news SET body = 'The city council approved the budget for protected bike lanes on Monday evening after a long debate!' WHERE id = 3;
SELECT pg_temp.try($$UPDATE news SET body = (SELECT body FROM news WHERE id = 3) WHERE id = 8$$);
-- The fingerprint column cannot be tampered with: the trigger recomputes it.
UPDATE news SET body_simhash = 42 WHERE id = 3;
SELECT body_simhash = simhash(body) AS restored FROM news WHERE id = 3;
SELECT pg_temp.try($$UPDATE news SET body_band0 = 1$$);
SELECT count(*) AS rows FROM news;

-- The lookup: rows within max_distance of a text or a fingerprint, nearest first.
SELECT (n.item).id, n.distance FROM simhash_near_duplicates(NULL::news, '北京地铁19号线今天正式开通运营，全长22公里，共设10座车站，早晚高峰发车间隔约4分钟') n;
SELECT (n.item).id, n.distance FROM simhash_near_duplicates(NULL::news, (SELECT body_simhash FROM news WHERE id = 3) # 7) n;
SELECT (n.item).id, n.distance FROM simhash_near_duplicates(NULL::news, (SELECT body_simhash FROM news WHERE id = 3) # 15, max_distance => 4) n;
SELECT count(*) AS none FROM simhash_near_duplicates(NULL::news, '。。');
SELECT count(*) AS none FROM simhash_near_duplicates(NULL::news, NULL::bigint);
SELECT simhash_near_duplicates_sql('news', 42);
SELECT simhash_detach('news');
SELECT attname FROM pg_attribute WHERE attrelid = 'news'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum;
SELECT count(*) AS triggers FROM pg_trigger WHERE tgrelid = 'news'::regclass;
SELECT count(*) AS indexes FROM pg_index WHERE indrelid = 'news'::regclass;
DROP TABLE news;

-- skip mode on a uuid key: INSERT 0 0 for a near-duplicate.
CREATE TABLE posts (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), body text);
SELECT simhash_attach('posts', 'body', on_duplicate => 'skip');
WITH ins AS (INSERT INTO posts (body) VALUES ('周末去青石岭徒步，山顶的风景非常漂亮，下山时遇到一场小雨。') RETURNING 1) SELECT count(*) AS inserted FROM ins;
WITH ins AS (INSERT INTO posts (body) VALUES ('周末去青石岭徒步，山顶的风景非常漂亮！下山时遇到一场小雨。') RETURNING 1) SELECT count(*) AS inserted FROM ins;
WITH ins AS (INSERT INTO posts (body) VALUES ('Fresh sourdough every morning at the corner bakery on Pine Street.') RETURNING 1) SELECT count(*) AS inserted FROM ins;
SELECT count(*) AS rows FROM posts;
DROP TABLE posts;

-- flag mode on a text key: the row is kept and points at the row it duplicates, in the key's type.
CREATE TABLE pages (url text PRIMARY KEY, body text);
SELECT simhash_attach('pages', 'body', on_duplicate => 'flag');
INSERT INTO pages VALUES ('https://example.org/a', 'Museum opens exhibit of hand-drawn harbor maps from the eighteenth century.');
INSERT INTO pages VALUES ('https://example.org/b', 'MUSEUM OPENS EXHIBIT OF HAND-DRAWN HARBOR MAPS FROM THE EIGHTEENTH CENTURY!');
INSERT INTO pages VALUES ('https://example.org/c', 'Sandhill cranes return to the valley wetlands in early spring.');
SELECT url, body_duplicate_of, pg_typeof(body_duplicate_of) FROM pages ORDER BY url;
-- Editing the duplicate into something new clears its flag.
UPDATE pages SET body = 'An entirely new text about the marathon in the rain.' WHERE url = 'https://example.org/b';
SELECT url, body_duplicate_of FROM pages ORDER BY url;
SELECT simhash_detach('pages', 'body');
SELECT count(*) AS flag_columns FROM pg_attribute WHERE attrelid = 'pages'::regclass AND attname = 'body_duplicate_of' AND NOT attisdropped;
DROP TABLE pages;

-- A composite key, a table in another schema with a quoted name, and a per-table threshold.
CREATE SCHEMA "Crawl";
CREATE TABLE "Crawl"."Docs" (site int, path text, "Body Text" varchar(500), PRIMARY KEY (site, path));
SELECT simhash_attach('"Crawl"."Docs"', 'Body Text', max_distance => 6, on_duplicate => 'error', tokenizer => 'word');
SELECT table_name, band_columns, max_distance FROM simhash_attachments();
INSERT INTO "Crawl"."Docs" VALUES (1, '/a', 'Scheduled power outage notice for Maple District on Tuesday from nine to noon.');
INSERT INTO "Crawl"."Docs" VALUES (2, '/b', 'Scheduled power outage notice for Maple District on Tuesday from ten to noon.');
INSERT INTO "Crawl"."Docs" VALUES (3, '/c', 'SCHEDULED power outage notice for Maple District, on Tuesday from nine to noon!');
SELECT (n.item).site, (n.item).path, n.distance
FROM simhash_near_duplicates(NULL::"Crawl"."Docs", 'Scheduled power outage notice for Maple District on Tuesday from nine to noon') n;
SELECT simhash_detach('"Crawl"."Docs"');
DROP SCHEMA "Crawl" CASCADE;

-- A table without a primary key: rows are named by ctid.
CREATE TABLE logs (line text);
SELECT simhash_attach('logs', 'line', on_duplicate => 'error');
INSERT INTO logs VALUES ('connection from 10.0.0.1 accepted on port 5432 by the server');
INSERT INTO logs VALUES ('connection from 10.0.0.1 accepted on port 5432 by the server.');
DROP TABLE logs;

-- Errors.
CREATE TABLE t (id int PRIMARY KEY, body text, n int);
CREATE VIEW v AS SELECT * FROM t;
SELECT q, pg_temp.try(q) AS result FROM (VALUES
  ($$SELECT simhash_attach('t', 'nope')$$),
  ($$SELECT simhash_attach('t', 'n')$$),
  ($$SELECT simhash_attach('v', 'body')$$),
  ($$SELECT simhash_attach('t', 'body', max_distance => -1)$$),
  ($$SELECT simhash_attach('t', 'body', max_distance => 64)$$),
  ($$SELECT simhash_attach('t', 'body', on_duplicate => 'reject')$$),
  ($$SELECT simhash_attach('t', 'body', tokenizer => 'bpe')$$),
  ($$SELECT simhash_attach('t', NULL)$$),
  ($$SELECT simhash_detach('t')$$),
  ($$SELECT * FROM simhash_near_duplicates(NULL::t, 'x')$$),
  ($$SELECT * FROM simhash_near_duplicates(1, 'x')$$),
  ($$SELECT * FROM simhash_lookup_cost('t', 1)$$)
) v(q);
SELECT simhash_attach('t', 'body');
SELECT pg_temp.try($$SELECT simhash_attach('t', 'body')$$) AS attach_twice;
SELECT pg_temp.try($$SELECT * FROM simhash_near_duplicates(NULL::t, 1::bigint, max_distance => 65)$$) AS bad_distance;
DROP VIEW v;
DROP TABLE t;
