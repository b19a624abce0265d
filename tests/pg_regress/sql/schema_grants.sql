-- Who may create objects in the extension's schema (issue 49, attack 4). A role that may create there
-- captures an unqualified call with an untyped argument; CREATE EXTENSION and ALTER EXTENSION ...
-- UPDATE warn of it, naming the grantees; in a schema of its own the README's calls work unchanged.
\set VERBOSITY default
\set SHOW_CONTEXT never
DROP EXTENSION simhash_ext;
CREATE ROLE regress_schema_mallory;
CREATE ROLE regress_schema_admin SUPERUSER;
-- 1. Any role may create in the schema: the warning names PUBLIC.
CREATE SCHEMA open_ext;
GRANT CREATE ON SCHEMA open_ext TO PUBLIC;
CREATE EXTENSION simhash_ext SCHEMA open_ext;
-- The capture it warns of: mallory's simhash_pairs(text) is the closer match for the untyped
-- literal, and runs with the rights of the superuser who calls it.
SET search_path = public, open_ext;
CREATE TABLE docs (id int PRIMARY KEY, body text);
SELECT simhash_attach('docs', 'body');
SET ROLE regress_schema_mallory;
CREATE FUNCTION open_ext.simhash_pairs(t text) RETURNS TABLE (key_a text, key_b text, distance int)
LANGUAGE sql AS $$ SELECT 'ran as a superuser: ' || r.rolsuper, t, 0 FROM pg_roles r WHERE r.rolname = current_user $$;
RESET ROLE;
SELECT * FROM simhash_pairs('docs');
DROP FUNCTION open_ext.simhash_pairs(text);
DROP TABLE docs;
DROP EXTENSION simhash_ext;
-- 2. A grant to one role, beside one to a superuser: only the role is named.
REVOKE CREATE ON SCHEMA open_ext FROM PUBLIC;
GRANT CREATE ON SCHEMA open_ext TO regress_schema_mallory, regress_schema_admin;
CREATE EXTENSION simhash_ext SCHEMA open_ext;
DROP EXTENSION simhash_ext;
-- 3. Only the owner and a superuser may create: no warning.
REVOKE CREATE ON SCHEMA open_ext FROM regress_schema_mallory;
CREATE EXTENSION simhash_ext SCHEMA open_ext;
DROP EXTENSION simhash_ext;
-- 4. ALTER EXTENSION ... UPDATE warns too (the previous version did not check at its install).
GRANT CREATE ON SCHEMA open_ext TO regress_schema_mallory;
CREATE EXTENSION simhash_ext SCHEMA open_ext VERSION '0.12.0';
ALTER EXTENSION simhash_ext UPDATE;
DROP EXTENSION simhash_ext;
DROP SCHEMA open_ext;
-- 5. A schema of its own, on search_path after public: the README's calls, unqualified and with
-- untyped literals, work as they do with the extension in public.
CREATE SCHEMA simhash;
CREATE EXTENSION simhash_ext SCHEMA simhash;
SET search_path = "$user", public, simhash;
CREATE TABLE crawl (id int PRIMARY KEY, body text);
INSERT INTO crawl VALUES
  (1, 'The city council approved the budget for protected bike lanes on Main Street this week.'),
  (2, 'The city council approved the budget for protected bike lanes on Main Street this week!'),
  (3, 'Rain is expected across the region on Saturday, with clearing skies by Sunday afternoon.');
SELECT simhash_attach('crawl', 'body');
SELECT key_a, key_b, distance FROM simhash_pairs('crawl') ORDER BY key_a, key_b;
SELECT key, representative, cluster_size FROM simhash_clusters('crawl') ORDER BY key;
SELECT (n.item).id, n.distance
FROM simhash_near_duplicates(NULL::crawl, 'The city council approved the budget for protected bike lanes on Main Street this week') n
ORDER BY 1;
SELECT simhash_detach('crawl');
SELECT simhash_attach('crawl', 'body', method => 'minhash', on_duplicate => 'error');
DELETE FROM crawl WHERE id = 2;
INSERT INTO crawl VALUES (4, 'The city council approved the budget for protected bike lanes on Main Street this week!');
DROP TABLE crawl;
DROP EXTENSION simhash_ext;
DROP SCHEMA simhash;
RESET search_path;
DROP ROLE regress_schema_mallory;
DROP ROLE regress_schema_admin;
-- PostgreSQL 14 lets PUBLIC create in public, and CREATE EXTENSION would warn of it there only.
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
CREATE EXTENSION simhash_ext;
