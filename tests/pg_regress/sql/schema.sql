-- The extension in a schema that is not on search_path; every function is IMMUTABLE STRICT PARALLEL SAFE.
DROP EXTENSION simhash_ext;
CREATE SCHEMA dedup;
CREATE EXTENSION simhash_ext SCHEMA dedup;
SET search_path = public;
SELECT dedup.simhash('abc', tokenizer => 'char', stopwords => false) AS fp,
       dedup.hamming(dedup.simhash('今天天气很好'), dedup.simhash('今天天气很好！')) AS distance,
       dedup.simhash_bands(dedup.simhash('abc')) IS NOT NULL AS bands;
SELECT p.proname, pg_get_function_identity_arguments(p.oid) AS arguments,
       pg_get_function_result(p.oid) AS result,
       p.provolatile AS volatility, p.proisstrict AS strict, p.proparallel AS parallel
FROM pg_proc p
JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'simhash_ext'
ORDER BY p.proname, 2;
-- Usable in a generated column and an expression index.
CREATE TABLE posts (id int PRIMARY KEY, body text,
                    fp bigint GENERATED ALWAYS AS (dedup.simhash(body)) STORED);
CREATE INDEX ON posts (dedup.simhash_band(fp, 0));
INSERT INTO posts (id, body) VALUES (1, '北京地铁19号线今天开通'), (2, 'Metro line 19 opens today'), (3, '。。');
SELECT id, fp IS NULL AS no_fingerprint FROM posts ORDER BY id;
DROP TABLE posts;
DROP EXTENSION simhash_ext;
DROP SCHEMA dedup;
CREATE EXTENSION simhash_ext;
