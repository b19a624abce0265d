-- Issue 49: what verification may tell a writer, and what a candidate row can make a check cost.
\getenv abs_srcdir PG_ABS_SRCDIR
\set include :abs_srcdir '/include/try.sql'
\i :include
CREATE ROLE regress_simhash_prober;

-- 1. No measure without SELECT on the text: a writer that may SELECT the key column but not the
-- text gets the short DETAIL (no key, no similarity, no distance), both methods; with SELECT on
-- the text too, the key and the measure.
CREATE TABLE secrets (id int PRIMARY KEY, body text);
CREATE TABLE hashed (id int PRIMARY KEY, body text);
SELECT simhash_attach('secrets', 'body', method => 'minhash', on_duplicate => 'error');
SELECT simhash_attach('hashed', 'body', on_duplicate => 'error');
INSERT INTO secrets VALUES (1, 'The account holder is Margaret Alvarez and the PIN of her card is four seven one nine, kept in the office safe.');
INSERT INTO hashed VALUES (1, 'The account holder is Margaret Alvarez and the PIN of her card is four seven one nine, kept in the office safe.');
GRANT INSERT, SELECT (id) ON secrets, hashed TO regress_simhash_prober;
SET ROLE regress_simhash_prober;
\set VERBOSITY default
INSERT INTO secrets VALUES (2, 'The account holder is Margaret Alvarez and the PIN of her card is four seven one nine, kept in the office safe!');
INSERT INTO hashed VALUES (2, 'The account holder is Margaret Alvarez and the PIN of her card is four seven one nine, kept in the office safe!');
-- Multi-row and COPY: the same.
INSERT INTO secrets VALUES (3, 'An unrelated note about the weather on the coast this weekend, windy and cold with rain.'),
                           (4, 'The account holder is Margaret Alvarez and the PIN of her card is four seven one nine, kept in the office safe!');
COPY hashed (id, body) FROM STDIN;
5	The account holder is Margaret Alvarez and the PIN of her card is four seven one nine, kept in the office safe!
\.
RESET ROLE;
GRANT SELECT (body) ON secrets, hashed TO regress_simhash_prober;
SET ROLE regress_simhash_prober;
INSERT INTO secrets VALUES (2, 'The account holder is Margaret Alvarez and the PIN of her card is four seven one nine, kept in the office safe!');
INSERT INTO hashed VALUES (2, 'The account holder is Margaret Alvarez and the PIN of her card is four seven one nine, kept in the office safe!');
RESET ROLE;
\set VERBOSITY terse

-- 2. No step oracle: the fingerprint drops stop words (the default options), and so does the
-- verification of a SimHash attachment: padding a probe with stop words changes neither, so the
-- padded probe is judged as the unpadded one (before 0.12.0 each stop word lowered the verified
-- similarity one step while the fingerprint stayed the same).
SELECT simhash('a quiet harbour town with a small market') = simhash('a quiet harbour town with a small market and the of to in it is was for on') AS fingerprint_blind_to_stop_words;
SELECT pg_temp.try($$INSERT INTO hashed VALUES (6, 'The account holder is Margaret Alvarez and the PIN of her card is four seven one nine, kept in the office safe. '
  || 'and the of to in it is was for on with as at by from but not or be are this that an which were there their been has have had would will its')$$) AS padded_probe;

-- 3. Bounded work: a candidate far longer than the text checked (here the text repeated 2,000
-- times, 220 kB, with the same fingerprint) is not read to verify it: beyond 64 kB and 8 /
-- threshold times the text checked, it is no near-duplicate (docs/ARCHITECTURE.md §8.11).
CREATE TABLE big (id int PRIMARY KEY, body text);
SELECT simhash_attach('big', 'body', on_duplicate => 'error');
INSERT INTO big VALUES (1, repeat('A ferry leaves the north pier every hour in summer and twice a day in winter, weather permitting. ', 2000));
SELECT simhash(body) = simhash('A ferry leaves the north pier every hour in summer and twice a day in winter, weather permitting.') AS same_fingerprint,
       length(body) AS chars FROM big;
SELECT pg_temp.try($$INSERT INTO big VALUES (2, 'A ferry leaves the north pier every hour in summer and twice a day in winter, weather permitting.')$$) AS short_beside_huge;
SELECT pg_temp.try($$INSERT INTO big VALUES (3, 'A ferry leaves the north pier every hour in summer and twice a day in winter, weather permitting!')$$) AS near_duplicate_of_short;

DROP TABLE secrets, hashed, big;
DROP ROLE regress_simhash_prober;
