-- Security (issue 33): lookups, pairs and clusters are checked as a SELECT (row-level security too);
-- the duplicate check sees every row as the table's owner and names keys only to who may see them;
-- mallory's functions on the search path never run; a partition's fill runs as its owner.
\getenv abs_srcdir PG_ABS_SRCDIR
\set include :abs_srcdir '/include/try.sql'
\i :include
\set SHOW_CONTEXT never

CREATE ROLE regress_simhash_mallory;
CREATE ROLE regress_simhash_reader;
CREATE ROLE regress_simhash_writer;
CREATE ROLE regress_simhash_other;
GRANT CREATE ON SCHEMA public TO regress_simhash_mallory;  -- as PostgreSQL 14 grants PUBLIC

-- The error of a statement with its SQLSTATE and, when it has one, the constraint it names.
CREATE FUNCTION pg_temp.violation(query text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  constraint_name text;
  detail text;
BEGIN
  EXECUTE query;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS constraint_name = CONSTRAINT_NAME, detail = PG_EXCEPTION_DETAIL;
  RETURN SQLSTATE || ' [' || constraint_name || ']: ' || SQLERRM || ' / ' || detail;
END $$;

-- 1. No SELECT, no rows: every read path raises 42501.
CREATE TABLE sec_hr (id int PRIMARY KEY, note text);
INSERT INTO sec_hr
SELECT g, format('Annual review of employee %s: salary band %s, rated %s by the panel in March.', g, g % 7, g % 5)
FROM generate_series(1, 50) g;
SELECT simhash_attach('sec_hr', 'note');
CREATE TABLE sec_hr_m (id int PRIMARY KEY, note text);
INSERT INTO sec_hr_m SELECT id, note FROM sec_hr;
SELECT simhash_attach('sec_hr_m', 'note', method => 'minhash');
REVOKE ALL ON sec_hr, sec_hr_m FROM PUBLIC;

SET ROLE regress_simhash_mallory;
SELECT pg_temp.try($$SELECT * FROM sec_hr$$);
SELECT pg_temp.try($$SELECT (item).* FROM simhash_near_duplicates(NULL::public.sec_hr, 0::bigint, 64)$$);
SELECT pg_temp.try($$SELECT * FROM simhash_near_duplicates(NULL::sec_hr, 'Annual review of employee 7: salary band 0, rated 2 by the panel in March.')$$);
SELECT pg_temp.try($$SELECT * FROM simhash_near_duplicates(NULL::sec_hr_m, 'Annual review of employee 7: salary band 0, rated 2 by the panel in March.')$$);
SELECT pg_temp.try($$SELECT * FROM simhash_near_duplicates(NULL::sec_hr_m, minhash('Annual review of employee 7'))$$);
SELECT pg_temp.try($$SELECT * FROM simhash_lookup_cost('sec_hr', 0)$$);
SELECT pg_temp.try($$SELECT * FROM simhash_pairs('sec_hr')$$);
SELECT pg_temp.try($$SELECT * FROM simhash_clusters('sec_hr')$$);
SELECT pg_temp.try($$SELECT * FROM simhash_pairs('sec_hr_m')$$);
SELECT pg_temp.try($$SELECT * FROM simhash_clusters('sec_hr_m')$$);
RESET ROLE;

-- Columns: a lookup returns whole rows (SELECT on every column); its cost reads the fingerprints.
GRANT SELECT (id, note) ON sec_hr TO regress_simhash_reader;
SET ROLE regress_simhash_reader;
SELECT pg_temp.try($$SELECT * FROM simhash_near_duplicates(NULL::sec_hr, 0::bigint, 64)$$);
SELECT pg_temp.try($$SELECT * FROM simhash_lookup_cost('sec_hr', 0)$$);
RESET ROLE;
GRANT SELECT (note_simhash) ON sec_hr TO regress_simhash_reader;
SET ROLE regress_simhash_reader;
SELECT matches FROM simhash_lookup_cost('sec_hr', 0, 64);
SELECT pg_temp.try($$SELECT * FROM simhash_near_duplicates(NULL::sec_hr, 0::bigint, 64)$$);
RESET ROLE;
GRANT SELECT ON sec_hr, sec_hr_m TO regress_simhash_reader;
SET ROLE regress_simhash_reader;
SELECT count(*) FROM simhash_near_duplicates(NULL::sec_hr, 0::bigint, 64);
SELECT (item).id, distance FROM simhash_near_duplicates(NULL::sec_hr,
  'Annual review of employee 7: salary band 0, rated 2 by the panel in March.') ORDER BY 2, 1 LIMIT 3;
SELECT (item).id, similarity FROM simhash_near_duplicates(NULL::sec_hr_m,
  'Annual review of employee 7: salary band 0, rated 2 by the panel in March.') ORDER BY 2 DESC, 1 LIMIT 1;
RESET ROLE;

-- 2. Row-level security: a lookup, pairs and clusters see the caller's rows only, on a plain
-- table, a partitioned one and a MinHash attachment; the cost of a lookup is refused.
CREATE TABLE sec_notes (id int PRIMARY KEY, owner name NOT NULL, body text);
INSERT INTO sec_notes
SELECT g, CASE WHEN g <= 20 THEN 'regress_simhash_other' ELSE 'regress_simhash_reader' END,
       format('Minutes of the budget meeting: the committee approved %s new bicycle lanes downtown.', g % 3)
FROM generate_series(1, 30) g;
CREATE TABLE sec_parts (id int, owner name NOT NULL, body text, PRIMARY KEY (id)) PARTITION BY RANGE (id);
CREATE TABLE sec_parts_1 PARTITION OF sec_parts FOR VALUES FROM (1) TO (16);
CREATE TABLE sec_parts_2 PARTITION OF sec_parts FOR VALUES FROM (16) TO (100);
INSERT INTO sec_parts SELECT * FROM sec_notes;
CREATE TABLE sec_notes_m (id int PRIMARY KEY, owner name NOT NULL, body text);
INSERT INTO sec_notes_m SELECT * FROM sec_notes;
SELECT simhash_attach('sec_notes', 'body', max_distance => 3);
SELECT simhash_attach('sec_parts', 'body', max_distance => 3);
SELECT simhash_attach('sec_notes_m', 'body', method => 'minhash');
DO $$
DECLARE t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['sec_notes', 'sec_parts', 'sec_notes_m'] LOOP
    EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
    EXECUTE format('CREATE POLICY own ON %I USING (owner = current_user)', t);
    EXECUTE format('GRANT SELECT ON %I TO regress_simhash_reader', t);
  END LOOP;
END $$;
SET ROLE regress_simhash_reader;
SELECT count(*) AS visible FROM sec_notes;
SELECT count(*) AS fingerprint FROM simhash_near_duplicates(NULL::sec_notes, 0::bigint, 64);
SELECT count(*) AS by_text, min((item).id), bool_and((item).owner = current_user) AS own
FROM simhash_near_duplicates(NULL::sec_notes, 'Minutes of the budget meeting: the committee approved 1 new bicycle lanes downtown.');
SELECT count(*) AS partitioned, bool_and((item).owner = current_user) AS own
FROM simhash_near_duplicates(NULL::sec_parts, 'Minutes of the budget meeting: the committee approved 1 new bicycle lanes downtown.');
-- A partition is checked as itself, as a SELECT of it would be: no privilege was granted on it.
SELECT pg_temp.try($$SELECT * FROM simhash_near_duplicates(NULL::sec_parts_2, 'Minutes of the budget meeting')$$);
SELECT count(*) AS minhash, bool_and((item).owner = current_user) AS own
FROM simhash_near_duplicates(NULL::sec_notes_m, 'Minutes of the budget meeting: the committee approved 1 new bicycle lanes downtown.');
SELECT count(*) AS pairs, min(key_a), max(key_b) FROM simhash_pairs('sec_notes');
SELECT count(*) AS rows_in_clusters, count(DISTINCT representative) AS clusters FROM simhash_clusters('sec_notes');
SELECT count(*) AS pairs FROM simhash_pairs('sec_parts');
SELECT count(*) AS pairs FROM simhash_pairs('sec_notes_m');
SELECT pg_temp.try($$SELECT * FROM simhash_lookup_cost('sec_notes', 0)$$);
RESET ROLE;
-- The owner is exempt from its policies (no FORCE): it sees every row, as before.
SELECT count(*) AS owner_sees FROM simhash_near_duplicates(NULL::sec_notes,
  'Minutes of the budget meeting: the committee approved 1 new bicycle lanes downtown.');

-- 3. A writer with INSERT only writes to both methods; a near-duplicate is rejected with the
-- attachment's constraint name and, without SELECT on the key, without naming the row.
CREATE TABLE sec_feed (id int PRIMARY KEY, body text);
SELECT simhash_attach('sec_feed', 'body', on_duplicate => 'error');
CREATE TABLE sec_feed_m (id int PRIMARY KEY, body text);
SELECT simhash_attach('sec_feed_m', 'body', on_duplicate => 'error', method => 'minhash');
INSERT INTO sec_feed VALUES (1, 'Heavy snow closed the mountain pass on Tuesday, and the road crews expect to reopen it by Friday.');
INSERT INTO sec_feed_m SELECT id, body FROM sec_feed;
GRANT INSERT ON sec_feed, sec_feed_m TO regress_simhash_writer;
SET ROLE regress_simhash_writer;
INSERT INTO sec_feed VALUES (2, 'The city council voted to extend library opening hours on weekends starting next month.');
INSERT INTO sec_feed_m VALUES (2, 'The city council voted to extend library opening hours on weekends starting next month.');
SELECT pg_temp.violation($$INSERT INTO sec_feed VALUES (3, 'Heavy snow closed the mountain pass on Tuesday, and the road crews expect to reopen it by Friday!')$$);
SELECT pg_temp.violation($$INSERT INTO sec_feed_m VALUES (3, 'Heavy snow closed the mountain pass on Tuesday, and the road crews expect to reopen it by Friday!')$$);
-- A multi-row INSERT: the statement-end check.
SELECT pg_temp.violation($$INSERT INTO sec_feed VALUES (4, 'A new bakery opened on Elm Street.'),
  (5, 'Heavy snow closed the mountain pass on Tuesday, and the road crews expect to reopen it by Friday.')$$);
RESET ROLE;
-- SELECT on the key column alone: still the short DETAIL, the measure is read from the text (issue
-- 49; security_verify.sql grants the text too).
GRANT SELECT (id) ON sec_feed, sec_feed_m TO regress_simhash_writer;
SET ROLE regress_simhash_writer;
SELECT pg_temp.violation($$INSERT INTO sec_feed VALUES (3, 'Heavy snow closed the mountain pass on Tuesday, and the road crews expect to reopen it by Friday!')$$);
SELECT pg_temp.violation($$INSERT INTO sec_feed_m VALUES (3, 'Heavy snow closed the mountain pass on Tuesday, and the road crews expect to reopen it by Friday!')$$);
RESET ROLE;
SELECT id FROM sec_feed ORDER BY id;
SELECT id FROM sec_feed_m ORDER BY id;

-- Under row-level security near-duplicates of rows the writer cannot see are rejected too, without
-- naming them; the tables belong to a role whose policies (FORCE ROW LEVEL SECURITY) hide the row
-- from the owner too: the check sees it anyway, as a foreign-key check would.
CREATE TABLE sec_inbox (id int PRIMARY KEY, owner name NOT NULL DEFAULT current_user, body text);
SELECT simhash_attach('sec_inbox', 'body', on_duplicate => 'error');
CREATE TABLE sec_inbox_m (id int PRIMARY KEY, owner name NOT NULL DEFAULT current_user, body text);
SELECT simhash_attach('sec_inbox_m', 'body', on_duplicate => 'error', method => 'minhash');
INSERT INTO sec_inbox VALUES (1, 'regress_simhash_mallory', 'Reminder: the quarterly tax filing is due on the fifteenth, and late filings pay a penalty.');
INSERT INTO sec_inbox_m SELECT id, owner, body FROM sec_inbox;
DO $$
DECLARE t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['sec_inbox', 'sec_inbox_m'] LOOP
    EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
    EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
    EXECUTE format('CREATE POLICY own ON %I USING (owner = current_user)', t);
    EXECUTE format('GRANT SELECT, INSERT ON %I TO regress_simhash_writer', t);
    EXECUTE format('ALTER TABLE %I OWNER TO regress_simhash_other', t);
  END LOOP;
END $$;
SET ROLE regress_simhash_writer;
SELECT count(*) AS visible FROM sec_inbox;
SELECT pg_temp.violation($$INSERT INTO sec_inbox (id, body) VALUES (2, 'Reminder: the quarterly tax filing is due on the fifteenth, and late filings pay a penalty!')$$);
SELECT pg_temp.violation($$INSERT INTO sec_inbox_m (id, body) VALUES (2, 'Reminder: the quarterly tax filing is due on the fifteenth, and late filings pay a penalty!')$$);
RESET ROLE;
-- The superuser bypasses row-level security: the key is named.
SELECT pg_temp.violation($$INSERT INTO sec_inbox (id, body) VALUES (3, 'Reminder: the quarterly tax filing is due on the fifteenth, and late filings pay a penalty!')$$);

-- 4. Functions mallory puts on the search path never run inside the extension's work.
SET ROLE regress_simhash_mallory;
CREATE FUNCTION public.concat_ws(text, text) RETURNS text LANGUAGE plpgsql
  AS $$ BEGIN RAISE EXCEPTION 'mallory''s concat_ws ran as %', current_user; END $$;
CREATE FUNCTION public.convert_to(text, text) RETURNS bytea LANGUAGE plpgsql
  AS $$ BEGIN RAISE EXCEPTION 'mallory''s convert_to ran as %', current_user; END $$;
CREATE FUNCTION public.format(text, text) RETURNS text LANGUAGE plpgsql
  AS $$ BEGIN RAISE EXCEPTION 'mallory''s format ran as %', current_user; END $$;
RESET ROLE;
CREATE TABLE sec_flagged (id int PRIMARY KEY, body text);
SELECT simhash_attach('sec_flagged', 'body', on_duplicate => 'flag');
INSERT INTO sec_flagged VALUES (1, 'The harbor ferry will run every twenty minutes during the summer festival weekend.');
INSERT INTO sec_flagged VALUES (2, 'The harbor ferry will run every twenty minutes during the summer festival weekend!');
SELECT id, body_duplicate_of FROM sec_flagged ORDER BY id;
SELECT pg_temp.violation($$INSERT INTO sec_feed VALUES (9, 'Heavy snow closed the mountain pass on Tuesday, and the road crews expect to reopen it by Friday!')$$);
SELECT key_a, key_b, distance FROM simhash_pairs('sec_flagged');
SELECT key, representative, cluster_size FROM simhash_clusters('sec_flagged') ORDER BY key;
DROP FUNCTION public.concat_ws(text, text), public.convert_to(text, text), public.format(text, text);

-- 5. ATTACH PARTITION fills a new partition as its owner: mallory's trigger never runs as the
-- superuser who attaches it.
CREATE TABLE sec_log (who name, superuser boolean);
GRANT INSERT ON sec_log TO regress_simhash_mallory;
CREATE TABLE sec_events (id int, body text, PRIMARY KEY (id)) PARTITION BY RANGE (id);
CREATE TABLE sec_events_1 PARTITION OF sec_events FOR VALUES FROM (1) TO (100);
SELECT simhash_attach('sec_events', 'body');
SET ROLE regress_simhash_mallory;
CREATE TABLE public.sec_m_part (id int, body text, PRIMARY KEY (id));
INSERT INTO sec_m_part VALUES (100, 'Tickets for the autumn concert series go on sale at the box office on Monday morning.');
CREATE FUNCTION public.sec_m_trigger() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO public.sec_log SELECT current_user, r.rolsuper FROM pg_catalog.pg_roles r WHERE r.rolname = current_user;
  RETURN NEW;
END $$;
CREATE TRIGGER sec_m_trigger BEFORE UPDATE ON sec_m_part FOR EACH ROW EXECUTE FUNCTION public.sec_m_trigger();
RESET ROLE;
ALTER TABLE sec_events ATTACH PARTITION sec_m_part FOR VALUES FROM (100) TO (200);
SELECT who, superuser FROM sec_log;
SELECT id, body_simhash IS NOT NULL AS filled FROM sec_events ORDER BY id;
-- The same for attach's rewrite of a table mallory owns: her index's function runs as her.
SET ROLE regress_simhash_mallory;
CREATE TABLE public.sec_m_table (id int PRIMARY KEY, body text);
INSERT INTO sec_m_table VALUES (1, 'The museum extends its opening hours on Thursdays through the end of August.');
CREATE FUNCTION public.sec_m_length(t text) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  RAISE NOTICE 'sec_m_length ran as % (superuser: %)', current_user,
    (SELECT r.rolsuper FROM pg_catalog.pg_roles r WHERE r.rolname = current_user);
  RETURN pg_catalog.length(t);
END $$;
CREATE INDEX sec_m_length_idx ON sec_m_table (public.sec_m_length(body));
RESET ROLE;
SELECT simhash_attach('sec_m_table', 'body');

-- 6. The event trigger does nothing for a role that does not own the tables of its command: an
-- ATTACH PARTITION of someone else's table under mallory's own "parent" never runs her domain's
-- check as that table's owner (PostgreSQL then refuses the command).
CREATE TABLE sec_payroll (id int PRIMARY KEY, name text, salary int);
INSERT INTO sec_payroll VALUES (1, 'Bob', 100000);
REVOKE ALL ON sec_payroll FROM PUBLIC;
SET ROLE regress_simhash_mallory;
CREATE FUNCTION public.sec_m_spy(int) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  RAISE NOTICE 'mallory''s check ran as %', current_user;
  RETURN true;
END $$;
CREATE DOMAIN public.sec_m_dom AS int CHECK (public.sec_m_spy(VALUE));
CREATE TABLE public.sec_m_parent (id int, name text, name_simhash bigint, name_band0 public.sec_m_dom,
  name_band1 int, name_band2 int, name_band3 int) PARTITION BY LIST (id);
CREATE TRIGGER simhash_name BEFORE INSERT OR UPDATE ON public.sec_m_parent FOR EACH ROW
  EXECUTE FUNCTION simhash_trigger('name', '4', '7', 'none', 'bigram', '1', 'logtf', 'true', 'auto');
SELECT pg_temp.try($$ALTER TABLE public.sec_m_parent ATTACH PARTITION public.sec_payroll FOR VALUES IN (1)$$);
SELECT pg_temp.try($$ALTER TABLE public.sec_payroll RENAME COLUMN name TO who$$);
RESET ROLE;
SELECT attname FROM pg_attribute WHERE attrelid = 'sec_payroll'::regclass AND attnum > 0 ORDER BY attnum;
DROP TABLE sec_m_parent, sec_payroll;
DROP DOMAIN sec_m_dom;
DROP FUNCTION sec_m_spy(int);

-- Functions mallory adds to the extension's own schema (public here) with a closer signature are
-- never chosen: the fill of an attach, and the SQL of a lookup under row-level security.
SET ROLE regress_simhash_mallory;
CREATE FUNCTION public.simhash(text, text, int, text, text, text) RETURNS bigint LANGUAGE plpgsql
  AS $$ BEGIN RAISE EXCEPTION 'mallory''s simhash ran as %', current_user; END $$;
CREATE FUNCTION public.hamming(bigint, int) RETURNS int LANGUAGE plpgsql
  AS $$ BEGIN RAISE EXCEPTION 'mallory''s hamming ran as %', current_user; END $$;
CREATE FUNCTION public.simhash_near_duplicates_sql(oid, bigint, int, name) RETURNS text LANGUAGE plpgsql
  AS $$ BEGIN RAISE EXCEPTION 'mallory''s simhash_near_duplicates_sql ran as %', current_user; END $$;
RESET ROLE;
CREATE TABLE sec_overload (id int PRIMARY KEY, owner name, body text);
INSERT INTO sec_overload VALUES (1, 'regress_simhash_reader', 'Snow is expected in the northern valleys by the weekend.');
SELECT simhash_attach('sec_overload', 'body');
ALTER TABLE sec_overload ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON sec_overload USING (owner = current_user);
GRANT SELECT ON sec_overload TO regress_simhash_reader;
SET ROLE regress_simhash_reader;
SELECT (item).id, distance FROM simhash_near_duplicates(NULL::sec_overload, 'Snow is expected in the northern valleys by the weekend.');
RESET ROLE;
DROP TABLE sec_overload;
DROP FUNCTION public.simhash(text, text, int, text, text, text), public.hamming(bigint, int),
  public.simhash_near_duplicates_sql(oid, bigint, int, name);

-- 7. The extension's internal schema is found by membership, not by name: with the SQL of 0.3.0
-- (the new library installed, ALTER EXTENSION ... UPDATE not yet run), a schema simhash_internal
-- made by mallory is never called, and the update to the current version refuses to take it over.
\set regress_db :DBNAME
CREATE DATABASE sec_window;
GRANT CREATE ON DATABASE sec_window TO regress_simhash_mallory;
\c sec_window
-- PostgreSQL 14 lets PUBLIC create in public, and CREATE EXTENSION would warn of it there only.
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
\set SHOW_CONTEXT never
CREATE EXTENSION simhash_ext VERSION '0.3.0';
CREATE TABLE win (id int, body text, PRIMARY KEY (id)) PARTITION BY RANGE (id);
CREATE TABLE win_1 PARTITION OF win FOR VALUES FROM (1) TO (100);
SELECT simhash_attach('win', 'body');
SET ROLE regress_simhash_mallory;
CREATE SCHEMA simhash_internal;
CREATE FUNCTION simhash_internal.prepare_partition(regclass, regclass) RETURNS void LANGUAGE plpgsql
  AS $$ BEGIN RAISE EXCEPTION 'mallory''s prepare_partition ran as %', current_user; END $$;
GRANT USAGE ON SCHEMA simhash_internal TO PUBLIC;
RESET ROLE;
CREATE TABLE win_2 (id int, body text, PRIMARY KEY (id));
INSERT INTO win_2 VALUES (100, 'The night train to the coast now stops at the new station by the university.');
ALTER TABLE win ATTACH PARTITION win_2 FOR VALUES FROM (100) TO (200);
SELECT id, body_simhash IS NOT NULL AS filled FROM win ORDER BY id;
ALTER EXTENSION simhash_ext UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'simhash_ext';
\c :regress_db
DROP DATABASE sec_window;

DROP TABLE sec_hr, sec_hr_m, sec_notes, sec_parts, sec_notes_m, sec_feed, sec_feed_m, sec_inbox, sec_inbox_m,
  sec_flagged, sec_log, sec_events;
DROP TABLE sec_m_table;
DROP FUNCTION public.sec_m_trigger(), public.sec_m_length(text);
REVOKE CREATE ON SCHEMA public FROM regress_simhash_mallory;
DROP ROLE regress_simhash_mallory, regress_simhash_reader, regress_simhash_writer, regress_simhash_other;
