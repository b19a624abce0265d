#!/usr/bin/env bash
# simhash_ext on a Citus cluster, the read paths as roles (issue 33): roles, grants and policies made
# on the coordinator reach the workers and shards; without SELECT every lookup, simhash_pairs and
# simhash_clusters is refused (42501), with SELECT on some columns only what they cover is allowed;
# with SELECT, and under row-level security on the distributed tables, they return the superuser's
# results kept to the rows the role's own SELECT shows.
#
# A topic of tests/citus/run.sh, which starts the cluster and sources this file (in a subshell, with
# lib.sh's helpers); `bash tests/citus/run.sh NAME` or `bash` this file runs it alone.
[ -n "${CITUS_RUNNER:-}" ] || exec bash "$(dirname "${BASH_SOURCE[0]}")/run.sh" "$(basename "${BASH_SOURCE[0]}" .sh)"

echo "-- read paths checked as a SELECT would be: privileges and row-level security (issue 33)"
# Copies of the articles, attached with SimHash (guarded) and with MinHash (guarded_mh). Roles made
# on the coordinator (Citus makes them, their grants and the policies on the workers and shards):
# guard_outsider has no SELECT, guard_reader SELECT, guard_sites SELECT under a policy that shows it
# sites 1 and 6 only (the planted near-duplicates pair rows of these sites with each other and with
# rows it may not see), guard_keys SELECT on the key and fingerprint columns only. All of them may
# CREATE in the schema, so that simhash_pairs may pair on the workers for them.
copy_articles guarded
copy_articles guarded_mh
qn "$COORDINATOR" >/dev/null <<'SQL'
SELECT simhash_attach('guarded', 'body');
SELECT simhash_attach('guarded_mh', 'body', method => 'minhash');
CREATE ROLE guard_outsider LOGIN;
CREATE ROLE guard_reader LOGIN;
CREATE ROLE guard_sites LOGIN;
CREATE ROLE guard_keys LOGIN;
GRANT SELECT ON guarded, guarded_mh TO guard_reader, guard_sites;
GRANT SELECT (site, id, body_simhash) ON guarded TO guard_keys;
GRANT CREATE ON SCHEMA public TO guard_outsider, guard_reader, guard_sites, guard_keys;
SQL
expect "the roles made on the coordinator exist on both workers" \
    "$(qn "$COORDINATOR" -c "SELECT string_agg(result, ' ' ORDER BY nodeport) FROM run_command_on_workers(\$\$
        SELECT string_agg(rolname, ',' ORDER BY rolname) FROM pg_roles WHERE rolname LIKE 'guard\\_%'\$\$)")" \
    "guard_keys,guard_outsider,guard_reader,guard_sites guard_keys,guard_outsider,guard_reader,guard_sites"
expect "... with their grants on all 16 shards (SELECT for the reader, none for the outsider, the fingerprint column for guard_keys)" \
    "$(qn "$COORDINATOR" -c "SELECT count(*) FILTER (WHERE result = 'true|false|true|false') FROM (
        SELECT result FROM run_command_on_shards('guarded', \$\$
          SELECT has_table_privilege('guard_reader', '%1\$s', 'SELECT') || '|' || has_table_privilege('guard_outsider', '%1\$s', 'SELECT')
                 || '|' || has_column_privilege('guard_keys', '%1\$s', 'body_simhash', 'SELECT')
                 || '|' || has_column_privilege('guard_keys', '%1\$s', 'body', 'SELECT')\$\$)
        UNION ALL
        SELECT result FROM run_command_on_shards('guarded_mh', \$\$
          SELECT has_table_privilege('guard_reader', '%1\$s', 'SELECT') || '|' || has_table_privilege('guard_outsider', '%1\$s', 'SELECT')
                 || '|' || has_table_privilege('guard_sites', '%1\$s', 'SELECT') || '|' || has_table_privilege('guard_keys', '%1\$s', 'SELECT')\$\$)) r")" 16

# as_role ROLE SQL: the SQLSTATE of SQL run after SET ROLE ROLE in one session.
as_role() { sqlstate "$DB" "SET ROLE $1; $2"; }
guard_text='The city council approved the budget for protected bike lanes on Monday.'
for read in "simhash_near_duplicates(NULL::guarded, '$guard_text')|simhash_near_duplicates(text)" \
    "simhash_near_duplicates(NULL::guarded, 0::bigint, 64)|simhash_near_duplicates(fingerprint)" \
    "simhash_near_duplicates(NULL::guarded_mh, '$guard_text')|minhash: simhash_near_duplicates(text)" \
    "simhash_near_duplicates(NULL::guarded_mh, minhash('$guard_text'))|minhash: simhash_near_duplicates(signature)" \
    "simhash_pairs('guarded')|simhash_pairs" "simhash_clusters('guarded')|simhash_clusters" \
    "simhash_pairs('guarded_mh')|minhash: simhash_pairs" "simhash_clusters('guarded_mh')|minhash: simhash_clusters"; do
    expect "without SELECT on the table: ${read#*|} is refused (42501)" \
        "$(as_role guard_outsider "SELECT count(*) FROM ${read%|*}")" 42501
done
expect "... simhash_pairs also when told to pair on the coordinator (42501)" \
    "$(as_role guard_outsider "SET simhash.dedup_on_workers = off; SELECT count(*) FROM simhash_pairs('guarded')")" 42501
expect_contains "... with PostgreSQL's own message" \
    "$(error_text "$DB" "SET ROLE guard_outsider; SELECT * FROM simhash_near_duplicates(NULL::guarded, '$guard_text')")" \
    "ERROR:  permission denied for table guarded"
expect "... and the refused pairing on the workers left no bucket table behind" \
    "$(qn "$COORDINATOR" -c "SELECT count(*) FROM pg_class WHERE relname LIKE 'simhash\_pairs\_%'")" 0
expect "SELECT on the key and fingerprint columns only: unverified simhash_pairs on the workers and on the coordinator gives the superuser's pairs, a lookup (whole rows) is refused" \
    "$(qn "$COORDINATOR" -c "SET ROLE guard_keys" -c "SELECT count(*) FROM simhash_pairs('guarded', verify => false)" \
        -c "SET simhash.dedup_on_workers = off" -c "SELECT count(*) FROM simhash_pairs('guarded', verify => false)" | tr '\n' ' ')$(
       as_role guard_keys "SELECT count(*) FROM simhash_near_duplicates(NULL::guarded, 0::bigint)")" \
    "$(qn "$COORDINATOR" -c "SELECT count(*) FROM simhash_pairs('guarded', verify => false)") $(qn "$COORDINATOR" -c "SELECT count(*) FROM simhash_pairs('guarded', verify => false)") 42501"
expect "... verified pairs read the texts, which guard_keys may not (42501)" \
    "$(as_role guard_keys "SELECT count(*) FROM simhash_pairs('guarded')")" 42501

# read_as ROLE: in one session, as ROLE (SET ROLE), the lookups of guard_fps (fingerprints, within
# 9) and guard_texts (SimHash and MinHash, by text and by signature), simhash_pairs and
# simhash_clusters of both tables (SimHash's on the workers and on the coordinator); then as the
# superuser the same, kept to the rows ROLE's own SELECT of guarded shows, and the clusters those
# pairs make (connected components, each named by its first row in key order). Into table
# read_check_ROLE: the counts of what differs (SimHash lookups in their order: nearest first, then
# key order; MinHash's as sets, its ties having no order).
read_as() {
    qn "$COORDINATOR" -v fps="$guard_fps" -v texts="$guard_texts" >/dev/null <<SQL
SET ROLE $1;
CREATE TEMP TABLE r_visible AS SELECT site, id FROM guarded;
CREATE TEMP TABLE r_fp AS
  SELECT q.ord AS q, n.ord, (n.item).site, (n.item).id, n.distance
  FROM unnest(:'fps'::bigint[]) WITH ORDINALITY q(fp, ord),
       LATERAL simhash_near_duplicates(NULL::guarded, q.fp, 9) WITH ORDINALITY n(item, distance, similarity, ord);
CREATE TEMP TABLE r_txt AS
  SELECT q.ord AS q, n.ord, (n.item).site, (n.item).id, n.distance
  FROM unnest(:'texts'::text[]) WITH ORDINALITY q(t, ord),
       LATERAL simhash_near_duplicates(NULL::guarded, q.t) WITH ORDINALITY n(item, distance, similarity, ord);
-- (MinHash by text unverified: it is compared with the lookup by signature, which has no text.)
CREATE TEMP TABLE r_mh AS
  SELECT q.ord AS q, (n.item).site, (n.item).id, n.similarity
  FROM unnest(:'texts'::text[]) WITH ORDINALITY q(t, ord), LATERAL simhash_near_duplicates(NULL::guarded_mh, q.t, verify => false) n;
CREATE TEMP TABLE r_sig AS
  SELECT q.ord AS q, (n.item).site, (n.item).id, n.similarity
  FROM unnest(:'texts'::text[]) WITH ORDINALITY q(t, ord), LATERAL simhash_near_duplicates(NULL::guarded_mh, minhash(q.t)) n;
CREATE TEMP TABLE r_pairs AS SELECT 'workers' AS how, * FROM simhash_pairs('guarded');
CREATE TEMP TABLE r_clusters AS SELECT 'workers' AS how, * FROM simhash_clusters('guarded');
CREATE TEMP TABLE r_mh_pairs AS SELECT * FROM simhash_pairs('guarded_mh');
CREATE TEMP TABLE r_mh_clusters AS SELECT * FROM simhash_clusters('guarded_mh');
SET simhash.dedup_on_workers = off;
INSERT INTO r_pairs SELECT 'coordinator', * FROM simhash_pairs('guarded');
INSERT INTO r_clusters SELECT 'coordinator', * FROM simhash_clusters('guarded');
RESET simhash.dedup_on_workers;
RESET ROLE;
CREATE TEMP TABLE keys AS
  SELECT ROW(g.site, g.id)::text AS key, g.site::bigint * 1000000000 + g.id AS ord FROM guarded g JOIN r_visible v USING (site, id);
CREATE TEMP TABLE s_fp_all AS
  SELECT q.ord AS q, n.ord, (n.item).site, (n.item).id, n.distance
  FROM unnest(:'fps'::bigint[]) WITH ORDINALITY q(fp, ord),
       LATERAL simhash_near_duplicates(NULL::guarded, q.fp, 9) WITH ORDINALITY n(item, distance, similarity, ord);
CREATE TEMP TABLE s_txt_all AS
  SELECT q.ord AS q, n.ord, (n.item).site, (n.item).id, n.distance
  FROM unnest(:'texts'::text[]) WITH ORDINALITY q(t, ord),
       LATERAL simhash_near_duplicates(NULL::guarded, q.t) WITH ORDINALITY n(item, distance, similarity, ord);
CREATE TEMP TABLE s_mh_all AS
  SELECT q.ord AS q, (n.item).site, (n.item).id, n.similarity
  FROM unnest(:'texts'::text[]) WITH ORDINALITY q(t, ord), LATERAL simhash_near_duplicates(NULL::guarded_mh, q.t, verify => false) n;
CREATE TEMP TABLE s_fp AS
  SELECT q, row_number() OVER (PARTITION BY q ORDER BY ord) AS ord, site, id, distance FROM s_fp_all WHERE (site, id) IN (TABLE r_visible);
CREATE TEMP TABLE s_txt AS
  SELECT q, row_number() OVER (PARTITION BY q ORDER BY ord) AS ord, site, id, distance FROM s_txt_all WHERE (site, id) IN (TABLE r_visible);
CREATE TEMP TABLE s_mh AS SELECT * FROM s_mh_all WHERE (site, id) IN (TABLE r_visible);
CREATE TEMP TABLE s_hidden AS
  SELECT (SELECT count(*) FROM s_fp_all) + (SELECT count(*) FROM s_txt_all) + (SELECT count(*) FROM s_mh_all)
         - (SELECT count(*) FROM s_fp) - (SELECT count(*) FROM s_txt) - (SELECT count(*) FROM s_mh) AS n;
CREATE TEMP TABLE s_pairs AS
  SELECT 's' AS m, p.* FROM simhash_pairs('guarded') p WHERE key_a IN (SELECT key FROM keys) AND key_b IN (SELECT key FROM keys)
  UNION ALL
  SELECT 'm', p.* FROM simhash_pairs('guarded_mh') p WHERE key_a IN (SELECT key FROM keys) AND key_b IN (SELECT key FROM keys);
CREATE TEMP TABLE labels AS SELECT x.m, k.key, k.ord, k.ord AS label FROM keys k CROSS JOIN (VALUES ('s'), ('m')) x(m);
CREATE TEMP TABLE edges AS SELECT p.m, a.ord AS x, b.ord AS y FROM s_pairs p JOIN keys a ON a.key = p.key_a JOIN keys b ON b.key = p.key_b;
INSERT INTO edges SELECT m, y, x FROM edges;
DO \$\$
BEGIN
  LOOP
    UPDATE labels l SET label = n.label
    FROM (SELECT e.m, e.x, min(o.label) AS label FROM edges e JOIN labels o ON o.m = e.m AND o.ord = e.y GROUP BY e.m, e.x) n
    WHERE n.m = l.m AND n.x = l.ord AND n.label < l.label;
    EXIT WHEN NOT FOUND;
  END LOOP;
END \$\$;
CREATE TEMP TABLE s_clusters AS
  SELECT l.m, l.key, r.key AS representative, count(*) OVER (PARTITION BY l.m, l.label) AS cluster_size
  FROM labels l JOIN keys r ON r.ord = l.label;
CREATE TEMP TABLE r_all_pairs AS
  SELECT 's' || how AS m, key_a, key_b, distance, similarity FROM r_pairs UNION ALL SELECT 'm', * FROM r_mh_pairs;
CREATE TEMP TABLE s_all_pairs AS
  SELECT m || how AS m, key_a, key_b, distance, similarity FROM s_pairs, (VALUES ('workers'), ('coordinator')) h(how) WHERE m = 's'
  UNION ALL SELECT m, key_a, key_b, distance, similarity FROM s_pairs WHERE m = 'm';
CREATE TEMP TABLE r_all_clusters AS
  SELECT 's' || how AS m, key, representative, cluster_size FROM r_clusters UNION ALL SELECT 'm', * FROM r_mh_clusters;
CREATE TEMP TABLE s_all_clusters AS
  SELECT m || how AS m, key, representative, cluster_size FROM s_clusters, (VALUES ('workers'), ('coordinator')) h(how) WHERE m = 's'
  UNION ALL SELECT m, key, representative, cluster_size FROM s_clusters WHERE m = 'm';
DROP TABLE IF EXISTS read_check_$1;
CREATE TABLE read_check_$1 AS SELECT
  (SELECT count(*) FROM keys) AS visible,
  (SELECT count(*) FROM guarded) - (SELECT count(*) FROM keys) AS hidden,
  (SELECT count(*) FROM s_fp) + (SELECT count(*) FROM s_txt) + (SELECT count(*) FROM s_mh) AS lookup_rows,
  (SELECT n FROM s_hidden) AS lookup_hidden,
  (SELECT count(*) FROM (SELECT * FROM r_fp EXCEPT ALL SELECT * FROM s_fp) x) + (SELECT count(*) FROM (SELECT * FROM s_fp EXCEPT ALL SELECT * FROM r_fp) x)
  || '|' || (SELECT count(*) FROM (SELECT * FROM r_txt EXCEPT ALL SELECT * FROM s_txt) x) + (SELECT count(*) FROM (SELECT * FROM s_txt EXCEPT ALL SELECT * FROM r_txt) x)
  || '|' || (SELECT count(*) FROM (SELECT * FROM r_mh EXCEPT ALL SELECT * FROM s_mh) x) + (SELECT count(*) FROM (SELECT * FROM s_mh EXCEPT ALL SELECT * FROM r_mh) x)
  || '|' || (SELECT count(*) FROM (SELECT * FROM r_sig EXCEPT ALL SELECT * FROM s_mh) x) + (SELECT count(*) FROM (SELECT * FROM s_mh EXCEPT ALL SELECT * FROM r_sig) x)
    AS lookups_differ,
  (SELECT count(*) FROM s_pairs) AS pairs,
  (SELECT count(*) FROM simhash_pairs('guarded')) + (SELECT count(*) FROM simhash_pairs('guarded_mh')) AS all_pairs,
  (SELECT string_agg(m || ':' || n, ' ' ORDER BY m) FROM (SELECT m, count(*) AS n FROM (
     (SELECT * FROM r_all_pairs EXCEPT ALL SELECT * FROM s_all_pairs) UNION ALL (SELECT * FROM s_all_pairs EXCEPT ALL SELECT * FROM r_all_pairs)) d
   GROUP BY m) x) AS pairs_differ,
  (SELECT string_agg(m || ':' || n, ' ' ORDER BY m) FROM (SELECT m, count(*) AS n FROM (
     (SELECT * FROM r_all_clusters EXCEPT ALL SELECT * FROM s_all_clusters) UNION ALL (SELECT * FROM s_all_clusters EXCEPT ALL SELECT * FROM r_all_clusters)) d
   GROUP BY m) x) AS clusters_differ;
SQL
}
guard_fps=$(qn "$COORDINATOR" -c "SELECT array_agg(body_simhash ORDER BY site, id) FROM guarded WHERE id % 97 = 0")
guard_texts=$(qn "$COORDINATOR" -c "SELECT array_agg(body ORDER BY site, id) FROM guarded WHERE id % 97 = 0 OR (id % 50 = 0 AND id % 10000 < 1500)")
# read_checks ROLE WHAT: read_as ROLE, and the checks that nothing differs.
read_checks() {
    read_as "$1"
    expect "$2: lookups equal the superuser's kept to its rows (SimHash by fingerprint and by text, in order; MinHash by text and by signature)" \
        "$(qn "$COORDINATOR" -c "SELECT lookups_differ FROM read_check_$1")" "0|0|0|0"
    expect "$2: simhash_pairs equals the superuser's kept to its rows (SimHash on the workers and on the coordinator, MinHash)" \
        "$(qn "$COORDINATOR" -c "SELECT coalesce(pairs_differ, 'none') FROM read_check_$1")" none
    expect "$2: simhash_clusters are the clusters of those pairs over its rows, each once" \
        "$(qn "$COORDINATOR" -c "SELECT coalesce(clusters_differ, 'none') FROM read_check_$1")" none
}
read_checks guard_reader "with SELECT"
IFS='|' read -r visible hidden lookup_rows lookup_hidden pairs < <(qn "$COORDINATOR" -c "SELECT visible, hidden, lookup_rows, lookup_hidden, pairs FROM read_check_guard_reader")
measure "with SELECT: rows, lookup rows, pairs compared" "$visible, $lookup_rows, $pairs"
expect "... all of the table: the superuser's results themselves" "$hidden|$lookup_hidden|$visible" "0|0|$(qn "$COORDINATOR" -c "SELECT count(*) FROM guarded")"
((lookup_rows > 100 && pairs > 100)) || fail "too few lookup rows ($lookup_rows) or pairs ($pairs) to show anything"

echo "-- row-level security on the distributed tables"
qn "$COORDINATOR" >/dev/null <<'SQL'
ALTER TABLE guarded ENABLE ROW LEVEL SECURITY;
CREATE POLICY everything ON guarded FOR SELECT TO guard_reader USING (true);
CREATE POLICY two_sites ON guarded FOR SELECT TO guard_sites USING (site IN (1, 6));
ALTER TABLE guarded_mh ENABLE ROW LEVEL SECURITY;
CREATE POLICY everything ON guarded_mh FOR SELECT TO guard_reader USING (true);
CREATE POLICY two_sites ON guarded_mh FOR SELECT TO guard_sites USING (site IN (1, 6));
SQL
expect "CREATE POLICY on the coordinator: row-level security and both policies on all 16 shards" \
    "$(qn "$COORDINATOR" -c "SELECT count(*) FILTER (WHERE result = 'true everything:true two_sites:(site = ANY (ARRAY[1, 6]))') FROM (
        SELECT result FROM run_command_on_shards('guarded', \$\$SELECT (SELECT relrowsecurity FROM pg_class WHERE oid = '%1\$s'::regclass)
          || ' ' || (SELECT string_agg(polname || ':' || pg_get_expr(polqual, polrelid), ' ' ORDER BY polname) FROM pg_policy WHERE polrelid = '%1\$s'::regclass)\$\$)
        UNION ALL
        SELECT result FROM run_command_on_shards('guarded_mh', \$\$SELECT (SELECT relrowsecurity FROM pg_class WHERE oid = '%1\$s'::regclass)
          || ' ' || (SELECT string_agg(polname || ':' || pg_get_expr(polqual, polrelid), ' ' ORDER BY polname) FROM pg_policy WHERE polrelid = '%1\$s'::regclass)\$\$)) r")" 16
expect "guard_sites's own SELECT shows sites 1 and 6 only" \
    "$(qn "$COORDINATOR" -c "SET ROLE guard_sites" -c "SELECT string_agg(DISTINCT site::text, ',') FROM guarded")" "1,6"
expect "for guard_sites simhash_pairs pairs on the workers (its progress says so)" \
    "$(qn "$COORDINATOR" -c "SET client_min_messages = notice" -c "SET simhash.progress_interval = 0" -c "SET ROLE guard_sites" \
          -c "SELECT count(*) FROM simhash_pairs('guarded')" 2>&1 | grep -c 'pairing each bucket on its worker')" 1
read_checks guard_sites "under a policy USING (site IN (1, 6))"
IFS='|' read -r visible hidden lookup_rows lookup_hidden pairs all_pairs < <(qn "$COORDINATOR" -c "SELECT visible, hidden, lookup_rows, lookup_hidden, pairs, all_pairs FROM read_check_guard_sites")
measure "under the policy: rows, lookup rows, pairs shown (hidden)" "$visible ($hidden), $lookup_rows ($lookup_hidden), $pairs ($((all_pairs - pairs)))"
expect "... its rows are the policy's" "$visible" "$(qn "$COORDINATOR" -c "SELECT count(*) FROM guarded WHERE site IN (1, 6)")"
((lookup_rows > 20 && lookup_hidden > 20 && pairs > 20 && all_pairs > pairs)) ||
    fail "the policy shows or hides too little to show anything (lookup rows $lookup_rows shown, $lookup_hidden hidden; pairs $pairs of $all_pairs)"
read_checks guard_reader "under a policy USING (true)"
expect "... all of the table" "$(qn "$COORDINATOR" -c "SELECT hidden || '|' || lookup_hidden FROM read_check_guard_reader")" "0|0"

qn "$COORDINATOR" >/dev/null <<'SQL'
DROP TABLE guarded, guarded_mh, read_check_guard_reader, read_check_guard_sites;
REVOKE CREATE ON SCHEMA public FROM guard_outsider, guard_reader, guard_sites, guard_keys;
DROP ROLE guard_outsider, guard_reader, guard_sites, guard_keys;
SQL
expect "the roles are dropped on the coordinator and both workers" \
    "$(qn "$COORDINATOR" -c "SELECT (SELECT count(*) FROM pg_roles WHERE rolname LIKE 'guard\\_%') || ' ' || string_agg(result, ' ' ORDER BY nodeport)
                             FROM run_command_on_workers(\$\$SELECT count(*) FROM pg_roles WHERE rolname LIKE 'guard\\_%'\$\$)")" "0 0 0"
