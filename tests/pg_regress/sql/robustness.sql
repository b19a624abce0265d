-- Error paths of the trigger and odd inputs (issue 4): every error has its SQLSTATE and a message a
-- user understands; no input reaches the user as an internal error (XX000).
\getenv abs_srcdir PG_ABS_SRCDIR
\set include :abs_srcdir '/include/try.sql'
\i :include

-- The trigger function used outside simhash_attach().
CREATE TABLE misuse (id int PRIMARY KEY, body text, body_simhash bigint);
CREATE TRIGGER after_insert AFTER INSERT ON misuse FOR EACH ROW EXECUTE FUNCTION simhash_trigger();
SELECT pg_temp.try($$INSERT INTO misuse VALUES (1, 'abc')$$) AS after_trigger;
DROP TRIGGER after_insert ON misuse;
CREATE TRIGGER bad_args BEFORE INSERT ON misuse FOR EACH ROW EXECUTE FUNCTION simhash_trigger('body', 'x');
SELECT pg_temp.try($$INSERT INTO misuse VALUES (1, 'abc')$$) AS bad_arguments;
DROP TRIGGER bad_args ON misuse;
CREATE TRIGGER statement_level BEFORE INSERT ON misuse FOR EACH STATEMENT EXECUTE FUNCTION simhash_trigger();
SELECT pg_temp.try($$INSERT INTO misuse VALUES (1, 'abc')$$) AS statement_trigger;
DROP TABLE misuse;
SELECT pg_temp.try($$SELECT simhash_trigger()$$) AS called_directly;

-- Columns altered after simhash_attach(): a clear error instead of reading the wrong type.
CREATE TABLE altered (id int PRIMARY KEY, body text, code text);
SELECT simhash_attach('altered', 'body', on_duplicate => 'error');
INSERT INTO altered VALUES (1, 'The city council approved the budget for protected bike lanes.', 'a');
-- A renamed text column takes its fingerprint and band columns and the trigger along (issue 11);
-- with the extension's event trigger disabled, the trigger reports the missing column instead.
ALTER TABLE altered RENAME COLUMN body TO content;
SELECT pg_temp.try($$INSERT INTO altered VALUES (3, 'The city council approved the budget for protected bike lanes!', 'c')$$)
  AS duplicate_after_rename;
ALTER TABLE altered RENAME COLUMN content TO body;
ALTER EVENT TRIGGER simhash_ddl_command_start DISABLE;
ALTER TABLE altered RENAME COLUMN body TO content;
SELECT pg_temp.try($$INSERT INTO altered VALUES (2, 'A text', 'b')$$) AS renamed_text_column;
ALTER TABLE altered RENAME COLUMN content TO body;
ALTER EVENT TRIGGER simhash_ddl_command_start ENABLE;
-- The event trigger refuses a type that is no text (issue 40); with it disabled, the trigger does.
SELECT pg_temp.try($$ALTER TABLE altered ALTER COLUMN body TYPE int USING length(body)$$) AS retype_refused;
ALTER EVENT TRIGGER simhash_ddl_command_start DISABLE;
ALTER TABLE altered ALTER COLUMN body TYPE int USING length(body);
SELECT pg_temp.try($$INSERT INTO altered VALUES (2, 42, 'b')$$) AS text_column_not_text;
ALTER EVENT TRIGGER simhash_ddl_command_start ENABLE;
ALTER TABLE altered ALTER COLUMN body TYPE varchar(200);
SELECT pg_temp.try($$INSERT INTO altered VALUES (2, 'varchar works', 'b')$$) AS varchar_column;
SELECT simhash_detach('altered');
DROP TABLE altered;

CREATE TABLE flagged (id int PRIMARY KEY, body text);
SELECT simhash_attach('flagged', 'body', on_duplicate => 'flag');
INSERT INTO flagged VALUES (1, 'The city council approved the budget for protected bike lanes.');
-- The event trigger refuses to retype a column the attach added (issue 40); with it disabled,
-- the trigger reports the flag column of another type.
SELECT pg_temp.try($$ALTER TABLE flagged ALTER COLUMN body_duplicate_of TYPE text$$) AS retype_refused;
ALTER EVENT TRIGGER simhash_ddl_command_start DISABLE;
ALTER TABLE flagged ALTER COLUMN body_duplicate_of TYPE text;
SELECT pg_temp.try($$INSERT INTO flagged VALUES (2, 'The city council approved the budget for protected bike lanes!')$$)
  AS flag_column_retyped;
ALTER TABLE flagged ALTER COLUMN body_duplicate_of TYPE int USING body_duplicate_of::int;
ALTER EVENT TRIGGER simhash_ddl_command_start ENABLE;
SELECT pg_temp.try($$INSERT INTO flagged VALUES (2, 'The city council approved the budget for protected bike lanes!')$$)
  AS flag_column_restored;
SELECT id, body_duplicate_of FROM flagged ORDER BY id;
SELECT simhash_detach('flagged');
DROP TABLE flagged;

-- Odd texts through every tokenizer and weighting: results or NULL, never an error.
CREATE TEMP TABLE odd (label text, doc text);
INSERT INTO odd VALUES
  ('empty', ''), ('spaces', repeat(' ', 1000)), ('control characters', E'\x01\x02\t\x7f'),
  ('combining marks only', repeat(U&'\0301\0345', 500)),
  ('space run then a mark', U&'\3000 \0345'),
  ('noncharacters and private use', U&'\FFFE\FFFF\E000\+10FFFF'),
  ('emoji and ZWJ', U&'\+01F469\200D\+01F4BB \+01F600'),
  ('NFKC expansions', U&'\FDFA \3300 \FB03 \00BD'),
  ('long word', repeat('a', 100000)),
  ('long CJK run', repeat('汉字', 200000)),
  ('mixed scripts', 'Привет мир 你好世界 مرحبا שלום नमस्ते 안녕하세요');
SELECT label, count(*) AS option_sets, count(fp) AS fingerprints
FROM odd,
     (VALUES ('jieba'), ('word'), ('char')) t(tokenizer),
     (VALUES (1), (64)) s(shingle),
     (VALUES ('tf'), ('binary'), ('tfidf')) w(weighting),
     (VALUES (true), (false)) sw(stopwords),
     LATERAL (SELECT simhash(doc, tokenizer, shingle, weighting, stopwords) AS fp
              WHERE weighting <> 'tfidf' OR shingle = 1) f
GROUP BY label ORDER BY label;
SELECT label, count(*) AS features FROM odd, simhash_features(doc, tokenizer => 'char', shingle => 2, stopwords => true)
GROUP BY label ORDER BY label;
