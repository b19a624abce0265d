-- Search path (issue 33 item 2): with pg_catalog's names shadowed first on search_path, no part of the API runs a shadow.
-- Schema shadow (include/shadow.sql) holds a raising function, aggregate or operator of the same
-- name and argument types for every one of pg_catalog (and of simhash_ext's own schema), a raising
-- view for every catalog table and view, and composite types named text, name, oid, regclass, ...
-- With it first on search_path, attach (every mode of both methods, a scope, partitioned tables),
-- INSERT, UPDATE, COPY, multi-row statements, lookups by text, fingerprint and signature (under
-- row-level security too), the lookup cost, the probe plan's SQL, pairs, clusters, RENAME COLUMN,
-- ATTACH and DETACH PARTITION, detach, and ALTER EXTENSION ... UPDATE from 0.6.0 run, as a
-- superuser and as a writer, and none of them reaches a shadow.
\getenv abs_srcdir PG_ABS_SRCDIR
\set include :abs_srcdir '/include/sentences.sql'
\i :include
\set VERBOSITY default
\set SHOW_CONTEXT never

-- Documents of three real sentences each, and their near-duplicates: the same with a header (a
-- SimHash distance of at most 3 for the documents used as such, a MinHash similarity of 0.9 or more).
CREATE TEMP TABLE docs AS
SELECT i AS id, (SELECT string_agg(s, ' ' ORDER BY k)
                 FROM (VALUES (1, (i * 7) % m + 1), (2, (i * 13 + 5) % m + 1), (3, (i * 31 + 11) % m + 1)) p(k, n)
                 JOIN sentences USING (n)) AS body
FROM generate_series(1, 60) i, (SELECT count(*) AS m FROM sentences) c;
SELECT id, hamming(simhash(body), simhash('Update: ' || body)) AS distance,
       minhash_similarity(minhash(body), minhash('Update: ' || body)) >= 0.9 AS similar
FROM docs WHERE id IN (5, 16, 19, 22, 24, 25, 28, 30, 33, 42, 45, 47) ORDER BY id;
SELECT min(hamming(simhash(a.body), simhash(b.body))) > 3 AS documents_apart FROM docs a JOIN docs b ON a.id < b.id;
-- The texts the statements below write, as psql variables (the statements name no function).
SELECT max(body) FILTER (WHERE id = 1) AS doc1,
       max(body) FILTER (WHERE id = 5) AS doc5,
       max(body) FILTER (WHERE id = 16) AS doc16,
       max(body) FILTER (WHERE id = 19) AS doc19,
       max(body) FILTER (WHERE id = 22) AS doc22,
       max(body) FILTER (WHERE id = 24) AS doc24,
       max(body) FILTER (WHERE id = 41) AS doc41,
       max(body) FILTER (WHERE id = 42) AS doc42,
       max(body) FILTER (WHERE id = 43) AS doc43,
       max(body) FILTER (WHERE id = 44) AS doc44,
       max('Update: ' || body) FILTER (WHERE id = 5) AS near5,
       max('Update: ' || body) FILTER (WHERE id = 16) AS near16,
       max('Update: ' || body) FILTER (WHERE id = 19) AS near19,
       max('Update: ' || body) FILTER (WHERE id = 22) AS near22,
       max('Update: ' || body) FILTER (WHERE id = 24) AS near24,
       max('Update: ' || body) FILTER (WHERE id = 42) AS near42
FROM docs \gset

-- Tables of 20 documents each: SimHash and MinHash in every mode, a scope, partitioned tables.
CREATE TABLE sh_error (id int PRIMARY KEY, body text);
CREATE TABLE sh_skip (id int PRIMARY KEY, body text);
CREATE TABLE sh_flag (id int PRIMARY KEY, body text);
CREATE TABLE sh_none (id int PRIMARY KEY, body text);
CREATE TABLE mh_error (id int PRIMARY KEY, body text);
CREATE TABLE mh_skip (id int PRIMARY KEY, body text);
CREATE TABLE mh_flag (id int PRIMARY KEY, body text);
CREATE TABLE mh_none (id int PRIMARY KEY, body text);
CREATE TABLE sh_scoped (id int PRIMARY KEY, site int, body text);
CREATE TABLE mh_scoped (id int PRIMARY KEY, site int, body text);
CREATE TABLE sh_part (id int, day date, body text, PRIMARY KEY (id, day)) PARTITION BY RANGE (day);
CREATE TABLE sh_part_1 PARTITION OF sh_part FOR VALUES FROM ('2026-01-01') TO ('2026-02-01');
CREATE TABLE sh_part_2 PARTITION OF sh_part FOR VALUES FROM ('2026-02-01') TO ('2026-03-01');
CREATE TABLE sh_part_3 (id int, day date, body text, PRIMARY KEY (id, day));
CREATE TABLE mh_part (id int, day date, body text, PRIMARY KEY (id, day)) PARTITION BY LIST (day);
CREATE TABLE mh_part_1 PARTITION OF mh_part FOR VALUES IN ('2026-01-01');
CREATE TABLE mh_part_3 (id int, day date, body text, PRIMARY KEY (id, day));
INSERT INTO sh_error SELECT id, body FROM docs WHERE id <= 20;
INSERT INTO sh_skip SELECT id, body FROM docs WHERE id <= 20;
INSERT INTO sh_flag SELECT id, body FROM docs WHERE id <= 20;
INSERT INTO sh_none SELECT id, body FROM docs WHERE id <= 20;
INSERT INTO sh_none VALUES (21, 'Update: ' || (SELECT body FROM docs WHERE id = 5)),
                           (22, 'Update: ' || (SELECT body FROM docs WHERE id = 16));
INSERT INTO mh_error SELECT id, body FROM docs WHERE id <= 20;
INSERT INTO mh_skip SELECT id, body FROM docs WHERE id <= 20;
INSERT INTO mh_flag SELECT id, body FROM docs WHERE id <= 20;
INSERT INTO mh_none SELECT id, body FROM docs WHERE id <= 20;
INSERT INTO mh_none VALUES (21, 'Update: ' || (SELECT body FROM docs WHERE id = 5)),
                           (22, 'Update: ' || (SELECT body FROM docs WHERE id = 16));
INSERT INTO sh_scoped SELECT id, id % 2, body FROM docs WHERE id <= 20;
INSERT INTO mh_scoped SELECT id, id % 2, body FROM docs WHERE id <= 20;
INSERT INTO sh_part SELECT id, date '2026-01-01' + id * 3, body FROM docs WHERE id <= 15;
INSERT INTO sh_part_3 SELECT id, date '2026-03-01' + id, body FROM docs WHERE id BETWEEN 21 AND 25;
INSERT INTO mh_part SELECT id, date '2026-01-01', body FROM docs WHERE id <= 10;
INSERT INTO mh_part_3 SELECT id, date '2026-03-01', body FROM docs WHERE id BETWEEN 21 AND 25;
-- A writer who may write and read the tables, not own them; two tables under row-level security,
-- where the writer sees its own rows only (lookups then run as a query the policy applies to).
CREATE ROLE regress_simhash_shadow_writer;
CREATE TABLE sh_rls (id int PRIMARY KEY, owner name, body text);
CREATE TABLE mh_rls (id int PRIMARY KEY, owner name, body text);
INSERT INTO sh_rls SELECT id, CASE WHEN id % 2 = 0 THEN 'regress_simhash_shadow_writer' ELSE 'nobody' END, body
FROM docs WHERE id <= 20;
INSERT INTO sh_rls VALUES (21, 'regress_simhash_shadow_writer', 'Update: ' || (SELECT body FROM docs WHERE id = 16)),
                          (22, 'nobody', 'Update: ' || (SELECT body FROM docs WHERE id = 5));
INSERT INTO mh_rls SELECT * FROM sh_rls;
ALTER TABLE sh_rls ENABLE ROW LEVEL SECURITY;
ALTER TABLE mh_rls ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON sh_rls USING (owner = current_user);
CREATE POLICY own ON mh_rls USING (owner = current_user);
GRANT SELECT, INSERT, UPDATE ON sh_error, sh_flag, mh_error, mh_flag, sh_part, mh_part, sh_rls, mh_rls
  TO regress_simhash_shadow_writer;

-- The shadows: how many of each, and that they would be found first.
\set include :abs_srcdir '/include/shadow.sql'
\i :include
SELECT count(*) FILTER (WHERE p.prokind = 'f') > 2500 AS functions,
       count(*) FILTER (WHERE p.prokind = 'a') > 100 AS aggregates,
       (SELECT count(*) FROM pg_operator o WHERE o.oprnamespace = 'shadow'::regnamespace) > 500 AS operators,
       (SELECT count(*) FROM pg_class c WHERE c.relnamespace = 'shadow'::regnamespace AND c.relkind = 'v') > 100 AS views,
       (SELECT count(*) FROM pg_type t WHERE t.typnamespace = 'shadow'::regnamespace AND t.typtype = 'c'
                                             AND t.typname IN ('text', 'name', 'oid', 'regclass', 'int8', 'bytea')) AS types
FROM pg_proc p WHERE p.pronamespace = 'shadow'::regnamespace;
SELECT f.name AS not_shadowed
FROM (VALUES ('format'), ('concat_ws'), ('convert_to'), ('quote_ident'), ('quote_literal'), ('array_agg'), ('string_agg'),
             ('count'), ('min'), ('max'), ('sum'), ('bool_and'), ('bool_or'), ('regexp_replace'), ('set_config'),
             ('current_setting'), ('unnest'), ('cardinality'), ('array_to_string')) f(name)
WHERE NOT EXISTS (SELECT FROM pg_proc p WHERE p.pronamespace = 'shadow'::regnamespace AND p.proname = f.name)
ORDER BY 1;
SET search_path = shadow, public, pg_catalog;
-- The test's own names are qualified; an unqualified one runs its shadow (as any role):
SET ROLE regress_simhash_shadow_writer;
SELECT concat_ws(', '::pg_catalog.text, 'a'::pg_catalog.text);
SELECT pg_catalog.count(*) FROM pg_class;
SELECT 1 = 1;
SELECT count(*) FROM pg_catalog.pg_am;
SELECT string_agg(a.amname::pg_catalog.text, ','::pg_catalog.text) FROM pg_catalog.pg_am a WHERE false;
SELECT 'x'::text;
SELECT hamming(0, 1);
RESET ROLE;
SELECT pg_catalog.lower('X'::pg_catalog.text) AS qualified;

-- Attach: every mode of both methods, a scope, partitioned tables (fills the rows already there).
SELECT public.simhash_attach('public.sh_error', 'body', max_distance => 3, on_duplicate => 'error');
SELECT public.simhash_attach('public.sh_skip', 'body', max_distance => 3, on_duplicate => 'skip');
SELECT public.simhash_attach('public.sh_flag', 'body', max_distance => 3, on_duplicate => 'flag');
SELECT public.simhash_attach('public.sh_none', 'body', max_distance => 3);
SELECT public.simhash_attach('public.mh_error', 'body', method => 'minhash', threshold => 0.8, on_duplicate => 'error');
SELECT public.simhash_attach('public.mh_skip', 'body', method => 'minhash', threshold => 0.8, on_duplicate => 'skip');
SELECT public.simhash_attach('public.mh_flag', 'body', method => 'minhash', threshold => 0.8, on_duplicate => 'flag');
SELECT public.simhash_attach('public.mh_none', 'body', method => 'minhash', threshold => 0.8);
SELECT public.simhash_attach('public.sh_scoped', 'body', max_distance => 3, on_duplicate => 'flag', scope => 'site', min_length => 20);
SELECT public.simhash_attach('public.mh_scoped', 'body', method => 'minhash', on_duplicate => 'error', scope => 'site');
SELECT public.simhash_attach('public.sh_part', 'body', max_distance => 3, on_duplicate => 'error');
SELECT public.simhash_attach('public.mh_part', 'body', method => 'minhash', on_duplicate => 'flag');
SELECT public.simhash_attach('public.sh_rls', 'body', max_distance => 3, on_duplicate => 'error');
SELECT public.simhash_attach('public.mh_rls', 'body', method => 'minhash', on_duplicate => 'error');
SELECT a.table_name, a.text_column, a.method, a.on_duplicate, a.scope_column
FROM public.simhash_attachments() a ORDER BY a.table_name::pg_catalog.text;

-- SimHash, error: a near-duplicate (its key in the DETAIL), an UPDATE to one, another UPDATE, a
-- multi-row INSERT whose rows are near-duplicates of each other (the check at the statement's end),
-- one of unrelated rows, COPY.
INSERT INTO public.sh_error VALUES (101, :'near5');
UPDATE public.sh_error SET body = :'near16' WHERE id OPERATOR(pg_catalog.=) 1;
UPDATE public.sh_error SET body = :'doc41' WHERE id OPERATOR(pg_catalog.=) 1;
INSERT INTO public.sh_error VALUES (102, :'doc42'), (103, :'near42');
INSERT INTO public.sh_error VALUES (102, :'doc42'), (103, :'doc43');
COPY public.sh_error (id, body) FROM STDIN;
104	社区食堂本周起延长营业时间，早餐六点半开始供应，午餐增加两种素菜，老人凭卡就餐可享八折优惠。
105	The river ferry will run every twenty minutes during the festival weekend, and bicycles ride free before ten in the morning.
\.
COPY public.sh_error (id, body) FROM STDIN;
106	社区食堂本周起延长营业时间，早餐六点半开始供应，午餐增加两种素菜，老人凭卡就餐可享八折优惠！
\.
-- The same as the writer.
SET ROLE regress_simhash_shadow_writer;
INSERT INTO public.sh_error VALUES (107, :'near19');
INSERT INTO public.sh_error VALUES (107, :'doc44');
RESET ROLE;
SELECT s.id FROM public.sh_error s ORDER BY s.id;

-- SimHash, skip and flag: INSERT, UPDATE, COPY, multi-row.
INSERT INTO public.sh_skip VALUES (101, :'near5'), (102, :'doc42'), (103, :'near42');
UPDATE public.sh_skip SET body = :'near16' WHERE id OPERATOR(pg_catalog.=) 1;
COPY public.sh_skip (id, body) FROM STDIN;
104	The river ferry will run every twenty minutes during the festival weekend, and bicycles ride free before ten in the morning.
105	The river ferry will run every twenty minutes during the festival weekend, and bicycles ride free before ten in the morning!
\.
SELECT s.id FROM public.sh_skip s ORDER BY s.id;
SELECT s.body OPERATOR(pg_catalog.=) :'doc1' AS unchanged FROM public.sh_skip s WHERE s.id OPERATOR(pg_catalog.=) 1;
INSERT INTO public.sh_flag VALUES (101, :'near5'), (102, :'doc42'), (103, :'near42');
UPDATE public.sh_flag SET body = :'near16' WHERE id OPERATOR(pg_catalog.=) 1;
COPY public.sh_flag (id, body) FROM STDIN;
104	The river ferry will run every twenty minutes during the festival weekend, and bicycles ride free before ten in the morning.
105	The river ferry will run every twenty minutes during the festival weekend, and bicycles ride free before ten in the morning!
\.
SET ROLE regress_simhash_shadow_writer;
INSERT INTO public.sh_flag VALUES (106, :'near19');
RESET ROLE;
SELECT s.id, s.body_duplicate_of FROM public.sh_flag s ORDER BY s.id;
INSERT INTO public.sh_none VALUES (101, :'near5');
SELECT s.id FROM public.sh_none s ORDER BY s.id;
-- Scope and min_length: a near-duplicate in another site passes, in the same site is flagged.
INSERT INTO public.sh_scoped VALUES (101, 0, :'near5'), (102, 1, :'near5'), (103, 1, 'Short text.'), (104, 1, 'Short text!');
SELECT s.id, s.body_duplicate_of FROM public.sh_scoped s WHERE s.id OPERATOR(pg_catalog.>) 100 ORDER BY s.id;

-- MinHash, every mode.
INSERT INTO public.mh_error VALUES (101, :'near5');
UPDATE public.mh_error SET body = :'near16' WHERE id OPERATOR(pg_catalog.=) 1;
INSERT INTO public.mh_error VALUES (102, :'doc42'), (103, :'near42');
COPY public.mh_error (id, body) FROM STDIN;
104	社区食堂本周起延长营业时间，早餐六点半开始供应，午餐增加两种素菜，老人凭卡就餐可享八折优惠。
105	社区食堂本周起延长营业时间，早餐六点半开始供应，午餐增加两种素菜，老人凭卡就餐可享八折优惠！
\.
SET ROLE regress_simhash_shadow_writer;
INSERT INTO public.mh_error VALUES (106, :'near19');
INSERT INTO public.mh_error VALUES (106, :'doc44');
RESET ROLE;
SELECT s.id FROM public.mh_error s ORDER BY s.id;
INSERT INTO public.mh_skip VALUES (101, :'near5'), (102, :'doc42'), (103, :'near42');
UPDATE public.mh_skip SET body = :'near16' WHERE id OPERATOR(pg_catalog.=) 1;
COPY public.mh_skip (id, body) FROM STDIN;
104	社区食堂本周起延长营业时间，早餐六点半开始供应，午餐增加两种素菜，老人凭卡就餐可享八折优惠。
105	社区食堂本周起延长营业时间，早餐六点半开始供应，午餐增加两种素菜，老人凭卡就餐可享八折优惠！
\.
SELECT s.id FROM public.mh_skip s ORDER BY s.id;
SELECT s.body OPERATOR(pg_catalog.=) :'doc1' AS unchanged FROM public.mh_skip s WHERE s.id OPERATOR(pg_catalog.=) 1;
INSERT INTO public.mh_flag VALUES (101, :'near5'), (102, :'doc42'), (103, :'near42');
UPDATE public.mh_flag SET body = :'near16' WHERE id OPERATOR(pg_catalog.=) 1;
COPY public.mh_flag (id, body) FROM STDIN;
104	社区食堂本周起延长营业时间，早餐六点半开始供应，午餐增加两种素菜，老人凭卡就餐可享八折优惠。
105	社区食堂本周起延长营业时间，早餐六点半开始供应，午餐增加两种素菜，老人凭卡就餐可享八折优惠！
\.
SET ROLE regress_simhash_shadow_writer;
INSERT INTO public.mh_flag VALUES (106, :'near19');
RESET ROLE;
SELECT s.id, s.body_duplicate_of FROM public.mh_flag s ORDER BY s.id;
INSERT INTO public.mh_none VALUES (101, :'near5');
INSERT INTO public.mh_scoped VALUES (101, 0, :'near5');
INSERT INTO public.mh_scoped VALUES (102, 1, :'near5');
SELECT s.id FROM public.mh_scoped s WHERE s.id OPERATOR(pg_catalog.>) 100 ORDER BY s.id;

-- Lookups by text, fingerprint and signature, with their options; the cost of one; the probe plan
-- as SQL, run; pairs and clusters of both methods.
SELECT (n.item).id, n.distance FROM public.simhash_near_duplicates(NULL::public.sh_none, :'near16') n
ORDER BY n.distance, (n.item).id;
SELECT (n.item).id, n.distance
FROM public.simhash_near_duplicates(NULL::public.sh_none, (SELECT s.body_simhash FROM public.sh_none s WHERE s.id OPERATOR(pg_catalog.=) 5), 3) n
ORDER BY n.distance, (n.item).id;
SELECT (n.item).id, n.distance
FROM public.simhash_near_duplicates(NULL::public.sh_none, :'doc5', max_distance => 4, text_column => 'body') n
ORDER BY n.distance, (n.item).id;
SELECT (n.item).id, n.similarity OPERATOR(pg_catalog.>=) 0.9 AS similar
FROM public.simhash_near_duplicates(NULL::public.mh_none, :'doc5') n ORDER BY (n.item).id;
SELECT (n.item).id, n.similarity OPERATOR(pg_catalog.>=) 0.5 AS similar
FROM public.simhash_near_duplicates(NULL::public.mh_none, :'doc16', threshold => 0.5, text_column => 'body') n
ORDER BY (n.item).id;
SELECT (n.item).id FROM public.simhash_near_duplicates(NULL::public.mh_none, (SELECT s.body_minhash FROM public.mh_none s WHERE s.id OPERATOR(pg_catalog.=) 16)) n
ORDER BY (n.item).id;
SELECT (n.item).id, (n.item).day, n.distance FROM public.simhash_near_duplicates(NULL::public.sh_part, :'near5') n
ORDER BY n.distance, (n.item).id;
SELECT c.matches FROM public.simhash_lookup_cost('public.sh_none', (SELECT s.body_simhash FROM public.sh_none s WHERE s.id OPERATOR(pg_catalog.=) 5)) c;
-- The SQL simhash_near_duplicates_sql() returns is the caller's own query, for EXPLAIN: it names
-- operators bare, as a query typed by the caller would (the extension runs it with search_path
-- pg_catalog, docs/ARCHITECTURE.md §13.2). Made under the shadows, run without them.
SELECT 'SELECT (q.item).id, q.distance FROM (' OPERATOR(pg_catalog.||)
       public.simhash_near_duplicates_sql('public.sh_none', s.body_simhash, 3) OPERATOR(pg_catalog.||) ') q ORDER BY 2, 1' AS query
FROM public.sh_none s WHERE s.id OPERATOR(pg_catalog.=) 5 \gset lookup_
SET search_path = pg_catalog, public;
:lookup_query;
SET search_path = shadow, public, pg_catalog;
SELECT p.key_a, p.key_b, p.distance FROM public.simhash_pairs('public.sh_none') p ORDER BY p.key_a, p.key_b;
SELECT p.key_a, p.key_b, p.similarity OPERATOR(pg_catalog.>=) 0.8 AS similar FROM public.simhash_pairs('public.mh_none') p
ORDER BY p.key_a, p.key_b;
SELECT c.key, c.representative, c.cluster_size FROM public.simhash_clusters('public.sh_none', 3) c
WHERE c.cluster_size OPERATOR(pg_catalog.>) 1 ORDER BY c.key;
SELECT c.key, c.representative, c.cluster_size FROM public.simhash_clusters('public.mh_none', threshold => 0.8) c
WHERE c.cluster_size OPERATOR(pg_catalog.>) 1 ORDER BY c.key;
SET ROLE regress_simhash_shadow_writer;
SELECT (n.item).id, n.distance FROM public.simhash_near_duplicates(NULL::public.sh_error, :'near5') n
ORDER BY n.distance, (n.item).id;
SELECT (n.item).id FROM public.simhash_near_duplicates(NULL::public.mh_error, :'near5') n ORDER BY (n.item).id;
SELECT p.key_a, p.key_b FROM public.simhash_pairs('public.sh_flag') p ORDER BY p.key_a, p.key_b;
-- Under row-level security: lookups, pairs and clusters of the writer's rows; the check sees every
-- row (its error names no key under row-level security, as PostgreSQL's unique violations).
SELECT (n.item).id, n.distance FROM public.simhash_near_duplicates(NULL::public.sh_rls, :'near16') n
ORDER BY n.distance, (n.item).id;
SELECT (n.item).id, n.distance FROM public.simhash_near_duplicates(NULL::public.sh_rls, :'near5') n
ORDER BY n.distance, (n.item).id;
SELECT (n.item).id, n.distance
FROM public.simhash_near_duplicates(NULL::public.sh_rls, (SELECT s.body_simhash FROM public.sh_rls s WHERE s.id OPERATOR(pg_catalog.=) 16), 3) n
ORDER BY n.distance, (n.item).id;
SELECT (n.item).id FROM public.simhash_near_duplicates(NULL::public.mh_rls, :'near16') n ORDER BY (n.item).id;
SELECT (n.item).id FROM public.simhash_near_duplicates(NULL::public.mh_rls, :'near5') n ORDER BY (n.item).id;
SELECT (n.item).id FROM public.simhash_near_duplicates(NULL::public.mh_rls, (SELECT s.body_minhash FROM public.mh_rls s WHERE s.id OPERATOR(pg_catalog.=) 16)) n
ORDER BY (n.item).id;
INSERT INTO public.sh_rls VALUES (101, 'regress_simhash_shadow_writer', :'near16');
INSERT INTO public.sh_rls VALUES (101, 'regress_simhash_shadow_writer', :'near5');
INSERT INTO public.mh_rls VALUES (101, 'regress_simhash_shadow_writer', :'near16');
INSERT INTO public.mh_rls VALUES (101, 'regress_simhash_shadow_writer', :'near5');
INSERT INTO public.sh_rls VALUES (102, 'regress_simhash_shadow_writer', :'doc42'), (103, 'regress_simhash_shadow_writer', :'doc43');
INSERT INTO public.sh_rls VALUES (104, 'regress_simhash_shadow_writer', :'near42');
INSERT INTO public.sh_rls VALUES (105, 'regress_simhash_shadow_writer', :'near24');
SELECT p.key_a, p.key_b, p.distance FROM public.simhash_pairs('public.sh_rls') p ORDER BY p.key_a, p.key_b;
SELECT c.key, c.cluster_size FROM public.simhash_clusters('public.sh_rls') c
WHERE c.cluster_size OPERATOR(pg_catalog.>) 1 ORDER BY c.key;
SELECT p.key_a, p.key_b FROM public.simhash_pairs('public.mh_rls') p ORDER BY p.key_a, p.key_b;
SELECT c.key, c.cluster_size FROM public.simhash_clusters('public.mh_rls') c
WHERE c.cluster_size OPERATOR(pg_catalog.>) 1 ORDER BY c.key;
SELECT c.matches FROM public.simhash_lookup_cost('public.sh_rls', 0) c;
RESET ROLE;
-- The functions of one text.
SELECT public.hamming(public.simhash(:'doc5'), public.simhash(:'near5')) AS distance,
       public.minhash_similarity(public.minhash(:'doc5'), public.minhash(:'near5')) OPERATOR(pg_catalog.>=) 0.9 AS similar;

-- ALTER TABLE: a rename of an attached column (its columns and trigger follow), a refused drop of
-- a column the attach added, another ALTER TABLE, partitions attached with their rows and detached.
ALTER TABLE public.sh_flag RENAME COLUMN body TO content;
INSERT INTO public.sh_flag VALUES (107, :'near22');
SELECT s.id, s.content_duplicate_of FROM public.sh_flag s WHERE s.id OPERATOR(pg_catalog.>) 100 ORDER BY s.id;
ALTER TABLE public.mh_error RENAME COLUMN body TO content;
INSERT INTO public.mh_error VALUES (107, :'near22');
ALTER TABLE public.sh_none DROP COLUMN body_band0;
ALTER TABLE public.mh_none DROP COLUMN body_lsh;
ALTER TABLE public.sh_none ADD COLUMN note text;
ALTER TABLE public.sh_part ATTACH PARTITION public.sh_part_3 FOR VALUES FROM ('2026-03-01') TO ('2026-04-01');
SELECT s.id, s.body_simhash OPERATOR(pg_catalog.=) public.simhash(s.body) AS fingerprinted
FROM public.sh_part_3 s ORDER BY s.id;
INSERT INTO public.sh_part VALUES (31, '2026-02-10', :'near22');
SET ROLE regress_simhash_shadow_writer;
INSERT INTO public.sh_part VALUES (32, '2026-01-10', :'near5');
RESET ROLE;
ALTER TABLE public.mh_part ATTACH PARTITION public.mh_part_3 FOR VALUES IN ('2026-03-01');
SET ROLE regress_simhash_shadow_writer;
INSERT INTO public.mh_part VALUES (33, '2026-01-01', :'near22');
RESET ROLE;
SELECT s.id, s.body_duplicate_of FROM public.mh_part s WHERE s.id OPERATOR(pg_catalog.>) 30 ORDER BY s.id;
ALTER TABLE public.sh_part DETACH PARTITION public.sh_part_3;

-- Detach, each.
SELECT public.simhash_detach('public.sh_error');
SELECT public.simhash_detach('public.sh_skip');
SELECT public.simhash_detach('public.sh_flag');
SELECT public.simhash_detach('public.sh_none');
SELECT public.simhash_detach('public.mh_error');
SELECT public.simhash_detach('public.mh_skip');
SELECT public.simhash_detach('public.mh_flag');
SELECT public.simhash_detach('public.mh_none');
SELECT public.simhash_detach('public.sh_scoped');
SELECT public.simhash_detach('public.mh_scoped');
SELECT public.simhash_detach('public.sh_part');
SELECT public.simhash_detach('public.mh_part');
SELECT public.simhash_detach('public.sh_rls');
SELECT public.simhash_detach('public.mh_rls');
SELECT a.table_name FROM public.simhash_attachments() a
WHERE a.table_name::pg_catalog.text OPERATOR(pg_catalog.~) '^(sh|mh)_'::pg_catalog.text;
RESET search_path;
SELECT c.relname, a.attname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
WHERE c.relname ~ '^(sh|mh)_' AND c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p')
  AND a.attnum > 0 AND NOT a.attisdropped AND a.attname NOT IN ('id', 'day', 'site', 'owner', 'body', 'content', 'note')
ORDER BY 1, 2;
DROP TABLE sh_error, sh_skip, sh_flag, sh_none, mh_error, mh_skip, mh_flag, mh_none, sh_scoped, mh_scoped,
           sh_part, sh_part_3, mh_part, sh_rls, mh_rls;
SET client_min_messages = warning;
DROP SCHEMA shadow CASCADE;
RESET client_min_messages;
DROP ROLE regress_simhash_shadow_writer;

-- ALTER EXTENSION simhash_ext UPDATE from 0.6.0 with the shadows first on search_path, in a
-- database of its own: 0.6.0 from the base install script and the update scripts up to 0.6.0
-- (install_extension of scripts/common.sh puts the base script beside them), tables attached by
-- 0.6.0, then the update and the attachments at work after it.
\set regress_db :DBNAME
CREATE DATABASE regress_simhash_search_path;
\c regress_simhash_search_path
-- PostgreSQL 14 lets PUBLIC create in public, and CREATE EXTENSION would warn of it there only.
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
CREATE EXTENSION simhash_ext VERSION '0.6.0';
CREATE TABLE old_sh (id int PRIMARY KEY, body text);
CREATE TABLE old_mh (id int PRIMARY KEY, body text);
CREATE TABLE old_part (id int, day date, body text, PRIMARY KEY (id, day)) PARTITION BY RANGE (day);
CREATE TABLE old_part_1 PARTITION OF old_part FOR VALUES FROM ('2026-01-01') TO ('2026-02-01');
CREATE TABLE old_part_2 (id int, day date, body text, PRIMARY KEY (id, day));
INSERT INTO old_sh VALUES (1, :'doc5'), (2, :'doc16'), (3, :'doc19'), (4, :'doc22');
INSERT INTO old_mh VALUES (1, :'doc5'), (2, :'doc16'), (3, :'doc19'), (4, :'doc22');
INSERT INTO old_part VALUES (1, '2026-01-05', :'doc5'), (2, '2026-01-06', :'doc16');
INSERT INTO old_part_2 VALUES (3, '2026-02-05', :'doc19');
SELECT simhash_attach('old_sh', 'body', max_distance => 3, on_duplicate => 'error');
SELECT simhash_attach('old_mh', 'body', method => 'minhash', on_duplicate => 'flag');
SELECT simhash_attach('old_part', 'body', max_distance => 3, on_duplicate => 'skip');
SELECT extversion FROM pg_extension WHERE extname = 'simhash_ext';
\i :include
SET search_path = shadow, public, pg_catalog;
-- Before the update (the new library with 0.6.0's SQL): writes, a lookup, pairs, a partition attached.
INSERT INTO public.old_sh VALUES (5, :'near16');
INSERT INTO public.old_mh VALUES (5, :'near16');
INSERT INTO public.old_part VALUES (4, '2026-01-07', :'near5');
SELECT (n.item).id, n.distance FROM public.simhash_near_duplicates(NULL::public.old_sh, :'near5') n ORDER BY n.distance, (n.item).id;
SELECT p.key_a, p.key_b FROM public.simhash_pairs('public.old_mh') p ORDER BY p.key_a, p.key_b;
ALTER TABLE public.old_part ATTACH PARTITION public.old_part_2 FOR VALUES FROM ('2026-02-01') TO ('2026-03-01');
-- The update, and the same attachments after it.
ALTER EXTENSION simhash_ext UPDATE;
SELECT e.extversion OPERATOR(pg_catalog.=) v.default_version AS updated FROM pg_catalog.pg_extension e
JOIN pg_catalog.pg_available_extensions v ON v.name OPERATOR(pg_catalog.=) e.extname
WHERE e.extname OPERATOR(pg_catalog.=) 'simhash_ext';
INSERT INTO public.old_sh VALUES (5, :'near16');
INSERT INTO public.old_sh VALUES (5, :'doc24'), (6, :'near24');
UPDATE public.old_sh SET body = :'near19' WHERE id OPERATOR(pg_catalog.=) 1;
INSERT INTO public.old_mh VALUES (6, :'near19'), (7, :'doc24');
SELECT s.id, s.body_duplicate_of FROM public.old_mh s ORDER BY s.id;
INSERT INTO public.old_part VALUES (5, '2026-01-08', :'near19');
SELECT s.id FROM public.old_part s ORDER BY s.id;
ALTER TABLE public.old_sh RENAME COLUMN body TO content;
INSERT INTO public.old_sh VALUES (7, :'near22');
SELECT (n.item).id, n.distance FROM public.simhash_near_duplicates(NULL::public.old_sh, :'near5') n ORDER BY n.distance, (n.item).id;
SELECT (n.item).id FROM public.simhash_near_duplicates(NULL::public.old_mh, :'near16') n ORDER BY (n.item).id;
SELECT p.key_a, p.key_b FROM public.simhash_pairs('public.old_mh') p ORDER BY p.key_a, p.key_b;
SELECT c.key, c.cluster_size FROM public.simhash_clusters('public.old_mh') c ORDER BY c.key;
SELECT public.simhash_detach('public.old_sh');
SELECT public.simhash_detach('public.old_mh');
SELECT public.simhash_detach('public.old_part');
RESET search_path;
\c :regress_db
DROP DATABASE regress_simhash_search_path;
