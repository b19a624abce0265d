-- Security, second round (issue 40): a table's owner gets no code of its own run with the rights of
-- the superuser who attaches its table, and no role takes locks it has no write to justify.
-- mallory owns the tables and the functions; the superuser (the DBA) runs the extension's commands.
-- mallory's function sa.escalate() notes who runs it and, run by a superuser, makes mallory one:
-- after each command the test asks whether mallory became a superuser.
\getenv abs_srcdir PG_ABS_SRCDIR
\set include :abs_srcdir '/include/try.sql'
\i :include
\set SHOW_CONTEXT never
SET simhash.progress_interval = '1h';

CREATE ROLE regress_sa_mallory;
CREATE ROLE regress_sa_writer;
CREATE SCHEMA sa AUTHORIZATION regress_sa_mallory;
GRANT USAGE ON SCHEMA sa TO PUBLIC;

SET ROLE regress_sa_mallory;
CREATE TABLE sa.log (n serial, who name, superuser boolean, what text);
GRANT INSERT, SELECT ON sa.log TO PUBLIC;
GRANT USAGE ON SEQUENCE sa.log_n_seq TO PUBLIC;
CREATE FUNCTION sa.escalate(what text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE su boolean := (SELECT r.rolsuper FROM pg_catalog.pg_roles r WHERE r.rolname = current_user);
BEGIN
  INSERT INTO sa.log (who, superuser, what) VALUES (current_user, su, what);
  IF su THEN
    EXECUTE 'ALTER ROLE regress_sa_mallory SUPERUSER';
  END IF;
  RETURN true;
END $$;
CREATE FUNCTION sa.check_site(v int) RETURNS boolean LANGUAGE sql AS $$ SELECT sa.escalate('site check') $$;
CREATE FUNCTION sa.check_key(v int) RETURNS boolean LANGUAGE sql AS $$ SELECT sa.escalate('key check') $$;
CREATE FUNCTION sa.default_key() RETURNS int LANGUAGE plpgsql AS $$ BEGIN PERFORM sa.escalate('key default'); RETURN NULL; END $$;
CREATE DOMAIN sa.site_t AS int CHECK (sa.check_site(VALUE));
CREATE DOMAIN sa.key_t AS int DEFAULT sa.default_key() CHECK (sa.check_key(VALUE));
RESET ROLE;

-- Who ran mallory's code since the last look, and whether mallory is a superuser now.
CREATE FUNCTION pg_temp.ran() RETURNS TABLE (who name, superuser boolean, what text, times bigint) LANGUAGE sql AS $$
  WITH gone AS (DELETE FROM sa.log RETURNING *)
  SELECT g.who, g.superuser, g.what, count(*) FROM gone g GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
$$;
CREATE FUNCTION pg_temp.mallory_is_superuser() RETURNS boolean LANGUAGE sql AS $$
  SELECT r.rolsuper FROM pg_catalog.pg_roles r WHERE r.rolname = 'regress_sa_mallory'
$$;

-- 1. A scope column of mallory's domain: the attach checks the equality of its base type and
-- evaluates no CHECK of the domain (offline and online, the table empty or not).
SET ROLE regress_sa_mallory;
CREATE TABLE sa.sites (id int PRIMARY KEY, site sa.site_t, body text);
CREATE TABLE sa.sites_online (id int PRIMARY KEY, site sa.site_t, body text);
INSERT INTO sa.sites_online VALUES (1, 1, 'The ferry to the island leaves every hour from the old harbour pier.');
RESET ROLE;
SELECT * FROM pg_temp.ran();
SELECT simhash_attach('sa.sites', 'body', scope => 'site');
CALL simhash_attach_concurrently('sa.sites_online', 'body', scope => 'site', on_duplicate => 'error');
SELECT * FROM pg_temp.ran();
SELECT pg_temp.mallory_is_superuser() AS mallory_is_superuser;
-- The scope still works: rows of one site are checked against each other only.
SET ROLE regress_sa_mallory;
SELECT pg_temp.try($$INSERT INTO sa.sites_online VALUES (2, 1, 'The ferry to the island leaves every hour from the old harbour pier!')$$);
INSERT INTO sa.sites_online VALUES (3, 2, 'The ferry to the island leaves every hour from the old harbour pier!');
RESET ROLE;
SELECT who, superuser, what FROM pg_temp.ran();
-- A scope column of a type without equality is still refused.
SET ROLE regress_sa_mallory;
CREATE DOMAIN sa.point_t AS point CHECK (sa.escalate('point check'));
CREATE TABLE sa.points (id int PRIMARY KEY, site sa.point_t, body text);
RESET ROLE;
SELECT pg_temp.try($$SELECT simhash_attach('sa.points', 'body', scope => 'site')$$);
SELECT * FROM pg_temp.ran();

-- 2. A primary key of mallory's domain with a DEFAULT and a CHECK: the flag column of that type is
-- added as mallory, in a security-restricted operation, by the online attach as by the offline one.
SET ROLE regress_sa_mallory;
CREATE TABLE sa.keyed (id sa.key_t PRIMARY KEY, body text);
CREATE TABLE sa.keyed_online (id sa.key_t PRIMARY KEY, body text);
INSERT INTO sa.keyed VALUES (1, 'Heavy rain is expected along the coast until Thursday evening.'),
  (2, 'The library opens an hour earlier during the exam period.');
INSERT INTO sa.keyed_online SELECT * FROM sa.keyed;
RESET ROLE;
SELECT * FROM pg_temp.ran();
SELECT simhash_attach('sa.keyed', 'body', on_duplicate => 'flag');
SELECT * FROM pg_temp.ran();
CALL simhash_attach_concurrently('sa.keyed_online', 'body', on_duplicate => 'flag');
SELECT * FROM pg_temp.ran();
SELECT pg_temp.mallory_is_superuser() AS mallory_is_superuser;
SELECT id, body_duplicate_of FROM sa.keyed_online ORDER BY id;

-- 6. The online fill works as the owner of each partition only for a caller that has that
-- owner's privileges. mallory's partitioned table, whose row trigger (cloned onto every partition)
-- runs her code; the superuser's attach stops in the fill; the superuser then makes a partition of
-- its own, whose row a replica write left without a fingerprint. mallory's resume is refused
-- (42501) instead of filling the superuser's partition as the superuser.
SET ROLE regress_sa_mallory;
CREATE TABLE sa.parted (id int, site int, body text, PRIMARY KEY (id, site)) PARTITION BY LIST (site);
CREATE TABLE sa.parted_1 PARTITION OF sa.parted FOR VALUES IN (1);
INSERT INTO sa.parted VALUES (1, 1, 'A new bakery opened on Elm Street next to the post office.');
CREATE FUNCTION sa.spy() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM sa.escalate('update trigger on ' || TG_TABLE_NAME); RETURN NEW; END $$;
CREATE TRIGGER spy BEFORE UPDATE ON sa.parted FOR EACH ROW EXECUTE FUNCTION sa.spy();
CREATE FUNCTION sa.refuse() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'refused'; END $$;
CREATE TRIGGER refuse BEFORE UPDATE ON sa.parted_1 FOR EACH ROW EXECUTE FUNCTION sa.refuse();
RESET ROLE;
CALL simhash_attach_concurrently('sa.parted', 'body');
SELECT state FROM simhash_attachments() WHERE table_name = 'sa.parted'::regclass;
CREATE TABLE sa.parted_2 PARTITION OF sa.parted FOR VALUES IN (2);
SET session_replication_role = replica;
INSERT INTO sa.parted VALUES (2, 2, 'The night train to the coast now stops at the new station.');
RESET session_replication_role;
SELECT * FROM pg_temp.ran();
SET ROLE regress_sa_mallory;
DROP TRIGGER refuse ON sa.parted_1;
RESET ROLE;
SET ROLE regress_sa_mallory;
CALL simhash_attach_concurrently('sa.parted', 'body');
RESET ROLE;
SELECT * FROM pg_temp.ran();
SELECT pg_temp.mallory_is_superuser() AS mallory_is_superuser;
SELECT tableoid::regclass AS partition, id, body_simhash IS NOT NULL AS filled FROM sa.parted ORDER BY 1, 2;
SELECT simhash_detach('sa.parted');

-- 4. Renames of an attached table's columns through ALTER VIEW, ALTER MATERIALIZED VIEW and ALTER
-- FOREIGN TABLE (which PostgreSQL accepts for a table) are followed or refused as ALTER TABLE's are;
-- so are ALTER COLUMN ... TYPE and DROP EXPRESSION of the columns the attach added.
SET ROLE regress_sa_mallory;
CREATE TABLE sa.renamed (id int PRIMARY KEY, body text);
RESET ROLE;
SELECT simhash_attach('sa.renamed', 'body', on_duplicate => 'error');
SET ROLE regress_sa_mallory;
ALTER VIEW sa.renamed RENAME COLUMN body TO content;
SELECT pg_temp.try($$ALTER MATERIALIZED VIEW sa.renamed RENAME COLUMN content_band0 TO band$$);
SELECT pg_temp.try($$ALTER FOREIGN TABLE sa.renamed RENAME COLUMN content_simhash TO fingerprint$$);
ALTER FOREIGN TABLE sa.renamed RENAME COLUMN content TO body;
ALTER MATERIALIZED VIEW sa.renamed RENAME COLUMN body TO content;
SELECT pg_temp.try($$ALTER TABLE sa.renamed ALTER COLUMN content_band1 TYPE text$$);
SELECT pg_temp.try($$ALTER TABLE sa.renamed ALTER COLUMN content_band1 DROP EXPRESSION$$);
SELECT pg_temp.try($$ALTER TABLE sa.renamed ALTER COLUMN content_simhash TYPE numeric$$);
SELECT pg_temp.try($$ALTER TABLE sa.renamed ALTER COLUMN content TYPE bytea USING convert_to(content, 'UTF8')$$);
SELECT pg_temp.try($$ALTER VIEW sa.renamed ALTER COLUMN content_band1 TYPE text$$);
ALTER TABLE sa.renamed ALTER COLUMN content TYPE varchar(200);
INSERT INTO sa.renamed VALUES (1, 'Tickets for the autumn concert series go on sale at the box office on Monday.');
SELECT pg_temp.try($$INSERT INTO sa.renamed VALUES (2, 'Tickets for the autumn concert series go on sale at the box office on Monday!')$$);
RESET ROLE;
SELECT text_column, fingerprint_column, band_columns FROM simhash_attachments() WHERE table_name = 'sa.renamed'::regclass;
SELECT (item).id, distance FROM simhash_near_duplicates(NULL::sa.renamed,
  'Tickets for the autumn concert series go on sale at the box office on Monday.');

-- 5. simhash_internal.lock_near_duplicates() (the registry's locks) only for a role that may insert
-- a row: not with UPDATE alone, not under row-level security that lets it insert no row.
SET ROLE regress_sa_mallory;
CREATE TABLE sa.locked (id int PRIMARY KEY, owner name DEFAULT current_user, body text);
RESET ROLE;
SELECT simhash_attach('sa.locked', 'body', on_duplicate => 'error');
SET ROLE regress_sa_mallory;
GRANT UPDATE ON sa.locked TO regress_sa_writer;
SET ROLE regress_sa_writer;
SELECT pg_temp.try($$SELECT simhash_internal.lock_near_duplicates('sa.locked', 0, 3)$$) AS update_only;
RESET ROLE;
SET ROLE regress_sa_mallory;
GRANT INSERT ON sa.locked TO regress_sa_writer;
ALTER TABLE sa.locked ENABLE ROW LEVEL SECURITY;
CREATE POLICY mine ON sa.locked FOR UPDATE USING (owner = current_user);
SET ROLE regress_sa_writer;
SELECT pg_temp.try($$SELECT simhash_internal.lock_near_duplicates('sa.locked', 0, 3)$$) AS no_insert_policy;
RESET ROLE;
SET ROLE regress_sa_mallory;
CREATE POLICY none ON sa.locked FOR INSERT WITH CHECK (false);
SET ROLE regress_sa_writer;
SELECT pg_temp.try($$SELECT simhash_internal.lock_near_duplicates('sa.locked', 0, 3)$$) AS insert_policy_false;
RESET ROLE;
SET ROLE regress_sa_mallory;
CREATE POLICY own ON sa.locked FOR INSERT WITH CHECK (owner = current_user);
SET ROLE regress_sa_writer;
SELECT pg_temp.try($$SELECT simhash_internal.lock_near_duplicates('sa.locked', 0, 3)$$) AS may_insert;
RESET ROLE;
SET ROLE regress_sa_mallory;
ALTER TABLE sa.locked DISABLE ROW LEVEL SECURITY;
SET ROLE regress_sa_writer;
SELECT pg_temp.try($$SELECT simhash_internal.lock_near_duplicates('sa.locked', 0, 3)$$) AS insert_without_policies;
RESET ROLE;

-- 7. A function mallory adds to the extension's schema (public here, where she may create) under
-- the name of minhash_bands() with one argument: new MinHash attachments pass every argument to
-- minhash_bands(), so an attach and an ATTACH PARTITION under an attached table still work.
GRANT CREATE ON SCHEMA public TO regress_sa_mallory;
SET ROLE regress_sa_mallory;
CREATE FUNCTION public.minhash_bands(bytea) RETURNS bigint[] LANGUAGE plpgsql IMMUTABLE
  AS $$ BEGIN PERFORM sa.escalate('minhash_bands overload'); RETURN NULL; END $$;
CREATE TABLE sa.signed (id int, site int, body text, PRIMARY KEY (id, site)) PARTITION BY LIST (site);
CREATE TABLE sa.signed_1 PARTITION OF sa.signed FOR VALUES IN (1);
CREATE TABLE sa.signed_2 (id int, site int, body text, PRIMARY KEY (id, site));
INSERT INTO sa.signed VALUES (1, 1, 'The museum extends its opening hours on Thursdays through the end of August.');
INSERT INTO sa.signed_2 VALUES (2, 2, 'The museum extends its opening hours on Thursdays through the end of August!');
RESET ROLE;
SELECT simhash_attach('sa.signed', 'body', method => 'minhash');
SELECT pg_get_expr(d.adbin, d.adrelid) AS band_keys FROM pg_attrdef d JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
WHERE d.adrelid = 'sa.signed'::regclass AND a.attname = 'body_lsh';
ALTER TABLE sa.signed ATTACH PARTITION sa.signed_2 FOR VALUES IN (2);
SELECT (item).id, round(similarity::numeric, 2) AS similarity FROM simhash_near_duplicates(NULL::sa.signed,
  'The museum extends its opening hours on Thursdays through the end of August.') ORDER BY 1;
SELECT * FROM pg_temp.ran();
SELECT pg_temp.mallory_is_superuser() AS mallory_is_superuser;
DROP FUNCTION public.minhash_bands(bytea);
REVOKE CREATE ON SCHEMA public FROM regress_sa_mallory;

-- Review of 0.10.0: a primary key of mallory's type with her cast to text. Dedup runs as its
-- caller (the superuser here) and writes keys with their type's output function, never through
-- her cast; the trigger reads the key of a near-duplicate as the owner.
SET ROLE regress_sa_mallory;
CREATE TYPE sa.code AS ENUM ('a', 'b', 'c');
CREATE FUNCTION sa.code_text(sa.code) RETURNS text LANGUAGE plpgsql AS $$
BEGIN PERFORM sa.escalate('cast to text'); RETURN 'mallory''s text'; END $$;
CREATE CAST (sa.code AS text) WITH FUNCTION sa.code_text(sa.code);
CREATE TABLE sa.coded (id sa.code PRIMARY KEY, body text);
CREATE TABLE sa.coded2 (id sa.code, n int, body text, PRIMARY KEY (id, n));
INSERT INTO sa.coded VALUES ('a', 'Road works close the bridge to traffic from Monday to Wednesday night.'),
  ('b', 'Road works close the bridge to traffic from Monday to Wednesday night!');
INSERT INTO sa.coded2 SELECT id, 1, body FROM sa.coded;
RESET ROLE;
SELECT simhash_attach('sa.coded', 'body', on_duplicate => 'flag');
SELECT simhash_attach('sa.coded2', 'body', on_duplicate => 'error');
SELECT key_a, key_b, distance FROM simhash_pairs('sa.coded');
SELECT key, representative, cluster_size FROM simhash_clusters('sa.coded') ORDER BY key;
SELECT key_a, key_b, distance FROM simhash_pairs('sa.coded2');
SELECT * FROM pg_temp.ran();
INSERT INTO sa.coded VALUES ('c', 'Road works close the bridge to traffic from Monday to Wednesday night?');
SELECT id, body_duplicate_of FROM sa.coded ORDER BY id;
SELECT pg_temp.try($$INSERT INTO sa.coded2 VALUES ('c', 2, 'Road works close the bridge to traffic from Monday to Wednesday night?')$$);
SELECT * FROM pg_temp.ran();
SELECT pg_temp.mallory_is_superuser() AS mallory_is_superuser;

SET client_min_messages = warning;
DROP SCHEMA sa CASCADE;
DROP ROLE regress_sa_mallory, regress_sa_writer;
