-- The extension in a schema that is not on search_path; every function is IMMUTABLE STRICT PARALLEL SAFE.
DROP EXTENSION simhash_ext;
CREATE SCHEMA dedup;
CREATE EXTENSION simhash_ext SCHEMA dedup;
SET search_path = public;
SELECT dedup.simhash('abc', tokenizer => 'char', stopwords => false) AS fp,
       dedup.hamming(dedup.simhash('今天天气很好'), dedup.simhash('今天天气很好！')) AS distance,
       dedup.simhash_bands(dedup.simhash('abc')) IS NOT NULL AS bands;
SELECT p.pronamespace::regnamespace AS schema, p.proname, pg_get_function_identity_arguments(p.oid) AS arguments,
       pg_get_function_result(p.oid) AS result,
       p.provolatile AS volatility, p.proisstrict AS strict, p.proparallel AS parallel
FROM pg_proc p
JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'simhash_ext'
ORDER BY 1, 2, 3;
-- Usable in a generated column and an expression index.
CREATE TABLE posts (id int PRIMARY KEY, body text,
                    fp bigint GENERATED ALWAYS AS (dedup.simhash(body)) STORED);
CREATE INDEX ON posts (dedup.simhash_band(fp, 0));
INSERT INTO posts (id, body) VALUES (1, '北京地铁19号线今天开通'), (2, 'Metro line 19 opens today'), (3, '。。');
SELECT id, fp IS NULL AS no_fingerprint FROM posts ORDER BY id;
DROP TABLE posts;
-- The table helpers and the trigger work with the extension off search_path.
CREATE TABLE articles (id int PRIMARY KEY, body text);
INSERT INTO articles VALUES (1, '市图书馆改造完成，下个月一日起重新对读者开放，新增自习座位两百个。');
SELECT dedup.simhash_attach('articles', 'body', on_duplicate => 'error');
INSERT INTO articles VALUES (2, '市图书馆改造完成！下个月一日起重新对读者开放，新增自习座位两百个。');
INSERT INTO articles VALUES (3, 'Council approves budget for protected bike lanes');
SELECT (n.item).id, n.distance FROM dedup.simhash_near_duplicates(NULL::articles, '市图书馆改造完成，下个月一日起重新对读者开放，新增自习座位两百个') n;
SELECT (n.item).id, n.distance FROM dedup.simhash_near_duplicates(NULL::articles, (SELECT body_simhash FROM articles WHERE id = 3)) n;
SELECT table_name, text_column FROM dedup.simhash_attachments();
-- The event trigger finds its helpers off search_path too: a renamed text column keeps working.
ALTER TABLE articles RENAME COLUMN body TO content;
INSERT INTO articles VALUES (4, '市图书馆改造完成！下个月一日起重新对读者开放，新增自习座位两百个');
SELECT table_name, text_column FROM dedup.simhash_attachments();
SELECT dedup.simhash_detach('articles');
DROP TABLE articles;
DROP EXTENSION simhash_ext;
DROP SCHEMA dedup;
-- PostgreSQL 14 lets PUBLIC create in public, and CREATE EXTENSION would warn of it there only.
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
CREATE EXTENSION simhash_ext;
-- A table owner who is not a superuser attaches, writes, renames and detaches: the helpers in
-- schema simhash_internal run as the caller, who may use the schema and call them.
CREATE ROLE simhash_owner LOGIN;
CREATE SCHEMA owners AUTHORIZATION simhash_owner;
SET ROLE simhash_owner;
CREATE TABLE owners.owned (id int PRIMARY KEY, body text);
SELECT simhash_attach('owners.owned', 'body', on_duplicate => 'error');
INSERT INTO owners.owned VALUES (1, 'the quick brown fox jumps over the lazy dog again and again');
INSERT INTO owners.owned VALUES (2, 'the quick brown fox jumps over the lazy dog again and again!');
INSERT INTO owners.owned VALUES (3, 'an unrelated sentence about the weather in the mountains this week');
ALTER TABLE owners.owned RENAME COLUMN body TO content;
SELECT text_column, trigger_name FROM simhash_attachments() WHERE table_name = 'owners.owned'::regclass;
SELECT count(*) FROM simhash_pairs('owners.owned', 16);
SELECT simhash_detach('owners.owned');
RESET ROLE;
DROP SCHEMA owners CASCADE;
DROP ROLE simhash_owner;
