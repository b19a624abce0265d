-- What DROP EXTENSION simhash_ext CASCADE leaves of attached tables (the README's FAQ says the
-- same): SimHash and MinHash, attached by simhash_attach() and by simhash_attach_concurrently(), and
-- a 'flag' attachment. Everything that calls the extension's functions goes (generated columns,
-- triggers, the bands constraint of an online attach); the columns that only hold values stay as
-- plain columns, and so do the indexes on them. The tables keep their rows and take writes. In a
-- database of its own, since the extension goes.
\set regress_db :DBNAME
\set VERBOSITY terse
SET client_min_messages = warning;
DROP DATABASE IF EXISTS simhash_drop_cascade;
CREATE DATABASE simhash_drop_cascade;
\c simhash_drop_cascade
-- PostgreSQL 14 lets PUBLIC create in public, and CREATE EXTENSION would warn of it there only.
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
SET client_min_messages = warning;
CREATE EXTENSION simhash_ext;

CREATE TABLE s_plain (id int PRIMARY KEY, body text);
CREATE TABLE s_online (id int PRIMARY KEY, body text);
CREATE TABLE m_plain (id int PRIMARY KEY, body text);
CREATE TABLE m_online (id int PRIMARY KEY, body text);
CREATE TABLE s_flag (id int PRIMARY KEY, body text);
INSERT INTO s_plain VALUES (1, 'The city council approved the budget for protected bike lanes on Monday.'),
                           (2, 'The museum reopens on Saturday with a new wing for modern art.');
INSERT INTO s_online SELECT * FROM s_plain;
INSERT INTO m_plain SELECT * FROM s_plain;
INSERT INTO m_online SELECT * FROM s_plain;
INSERT INTO s_flag SELECT * FROM s_plain;
SELECT simhash_attach('s_plain', 'body', on_duplicate => 'error');
CALL simhash_attach_concurrently('s_online', 'body', on_duplicate => 'error');
SELECT simhash_attach('m_plain', 'body', method => 'minhash', on_duplicate => 'error');
CALL simhash_attach_concurrently('m_online', 'body', method => 'minhash', on_duplicate => 'error');
SELECT simhash_attach('s_flag', 'body', on_duplicate => 'flag');

-- Without CASCADE: refused, the added columns and triggers depend on the extension.
DROP EXTENSION simhash_ext;
DROP EXTENSION simhash_ext CASCADE;

-- What is left: columns (generated or not), indexes, triggers, constraints.
SELECT c.relname, a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod) AS type,
       a.attgenerated <> '' AS generated
FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
WHERE c.relname IN ('s_plain', 's_online', 'm_plain', 'm_online', 's_flag') AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY c.relname, a.attnum;
SELECT tablename, indexdef FROM pg_indexes
WHERE tablename IN ('s_plain', 's_online', 'm_plain', 'm_online', 's_flag') AND indexname NOT LIKE '%_pkey'
ORDER BY tablename, indexname;
SELECT tgrelid::regclass AS table_name, tgname FROM pg_trigger
WHERE tgrelid IN ('s_plain'::regclass, 's_online'::regclass, 'm_plain'::regclass, 'm_online'::regclass, 's_flag'::regclass)
ORDER BY 1, 2;
SELECT conrelid::regclass AS table_name, conname, contype FROM pg_constraint
WHERE conrelid IN ('s_plain'::regclass, 's_online'::regclass, 'm_plain'::regclass, 'm_online'::regclass, 's_flag'::regclass)
  AND contype <> 'n'  -- PostgreSQL 18 lists NOT NULL constraints too
ORDER BY 1, 2;

-- The rows stay, with the values last written; new writes go in (nothing fills the columns left).
SELECT id, body_simhash IS NOT NULL AS fingerprint FROM s_online ORDER BY id;
INSERT INTO s_plain (id, body) VALUES (3, 'The city council approved the budget for protected bike lanes on Monday!');
INSERT INTO s_online (id, body) VALUES (3, 'The city council approved the budget for protected bike lanes on Monday!');
INSERT INTO m_online (id, body) VALUES (3, 'The city council approved the budget for protected bike lanes on Monday!');
SELECT 's_online' AS t, id, body_simhash IS NULL AS no_fingerprint, body_band0 IS NULL AS no_band FROM s_online WHERE id = 3
UNION ALL
SELECT 'm_online', id, body_minhash IS NULL, body_lsh IS NULL FROM m_online WHERE id = 3;

\c :regress_db
DROP DATABASE simhash_drop_cascade;
