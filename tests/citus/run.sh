#!/usr/bin/env bash
# simhash_ext on a Citus cluster (issue 12): a coordinator and two workers on loopback (ports
# 54371-54373), Citus and simhash_ext installed in the PostgreSQL of $PG_CONFIG (15 to 18;
# Debian's 15 unless set). Checks that an attached distributed table has its fingerprints, band
# indexes and trigger on every shard, that lookups, pairs and clusters from the coordinator equal
# brute force over all shards, that near-duplicates are rejected exactly per value of the
# distribution column under concurrent writers (also in the race windows of issue 48: a writer held
# in a unique check holds no key, tests/citus/windows.sh), and that every check that could not be exact is
# refused with SQLSTATE 0A000. The same for a MinHash attachment (method => 'minhash'): signatures,
# band keys and their GIN index on every shard, reposts with a header and footer rejected per site
# (also under concurrent writers), lookups, pairs and clusters equal to a brute-force scan for
# "shares a band position and similarity >= 0.5", the registry refused. Then the read paths as roles
# (issue 33): without SELECT every lookup, simhash_pairs and simhash_clusters is refused (42501);
# with SELECT, and under row-level security on the distributed tables, they return the superuser's
# results kept to the rows the role's own SELECT shows. Last, in a database of its own, a registry
# attachment made by simhash_ext 0.3.0 (installed from the base install script, put into the
# extension directory for the test, and the update scripts up to 0.3.0) through ALTER EXTENSION
# simhash_ext UPDATE on the coordinator.
#
# Prints "skipped: ..." and exits 77 when Citus is not installed (docs/citus.md, Setup).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if ! citus_installed; then
    echo "skipped: Citus is not installed for $PG_CONFIG"
    exit 77
fi
on_exit_stop_cluster
start_cluster
measure "Citus" "$(qn "$COORDINATOR" -c "SELECT extversion FROM pg_extension WHERE extname = 'citus'")"
measure "PostgreSQL" "$(qn "$COORDINATOR" -c "SHOW server_version")"
expect "simhash_ext created on both workers by CREATE EXTENSION on the coordinator" \
    "$(qn "$COORDINATOR" -c "SELECT string_agg(result, ',') FROM run_command_on_workers(
        \$\$SELECT extversion FROM pg_extension WHERE extname = 'simhash_ext'\$\$)")" \
    "$(qn "$COORDINATOR" -c "SELECT extversion || ',' || extversion FROM pg_extension WHERE extname = 'simhash_ext'")"

# A corpus of real sentences (tests/data) in 12 sites, with near-duplicates planted across sites.
qn "$COORDINATOR" -v sample="$(sample_text)" >/dev/null <<'SQL'
SET citus.shard_count = 8;
CREATE TEMP TABLE sentences AS
  SELECT row_number() OVER () AS n, s
  FROM regexp_split_to_table(:'sample', '(?<=[。！？.])\s*') s WHERE length(s) > 12;
CREATE TABLE articles (site int, id bigint, body text, PRIMARY KEY (site, id));
SELECT create_distributed_table('articles', 'site');
INSERT INTO articles
  SELECT i % 12, i, a.s || ' ' || b.s
  FROM generate_series(0, 2999) i
  CROSS JOIN (SELECT count(*) AS c FROM sentences) k
  JOIN sentences a ON a.n = 1 + i % k.c
  JOIN sentences b ON b.n = 1 + (i / k.c + 1 + i % k.c) % k.c;
-- Near-duplicates in other sites: punctuation changed, a word added, the first word dropped.
INSERT INTO articles SELECT (site + 5) % 12, id + 10000, regexp_replace(body, '[.。]$', '!') FROM articles WHERE id % 50 = 0;
INSERT INTO articles SELECT (site + 7) % 12, id + 20000, body || ' Reuters' FROM articles WHERE id % 70 = 1;
INSERT INTO articles SELECT (site + 3) % 12, id + 30000, regexp_replace(body, '^\S+\s+', '') FROM articles WHERE id % 90 = 2;
SQL
rows=$(qn "$COORDINATOR" -c "SELECT count(*) FROM articles")
measure "rows in articles (12 sites, 8 shards)" "$rows"

echo "-- attach a distributed table"
expect "attach with on_duplicate 'error' and no scope is refused" \
    "$(sqlstate "$DB" "SELECT simhash_attach('articles', 'body', on_duplicate => 'error')")" 0A000
expect_contains "the refusal says which scope would be exact" \
    "$(error_text "$DB" "SELECT simhash_attach('articles', 'body', on_duplicate => 'skip')")" "scope => 'site'"
expect "a scope that is not the distribution column is refused" \
    "$(sqlstate "$DB" "SELECT simhash_attach('articles', 'body', scope => 'id')")" 0A000
start=$(now_ms)
# Unverified (verify => false): the brute force below compares fingerprints; verification has its
# own section ("verification on the shards").
qn "$COORDINATOR" -c "SELECT simhash_attach('articles', 'body', verify => false)" >/dev/null
measure "simhash_attach on $rows rows (ms)" $(($(now_ms) - start))
expect "every row fingerprinted on the shards, as simhash() computes it" \
    "$(qn "$COORDINATOR" -c "SELECT count(*) FILTER (WHERE body_simhash IS DISTINCT FROM simhash(body)),
                                    count(*) FILTER (WHERE body_band2 IS DISTINCT FROM simhash_band(body_simhash, 2, 4))
                             FROM articles")" "0|0"
expect "each of the 8 shards has the 4 band indexes (band INCLUDE fingerprint) and the trigger" \
    "$(qn "$COORDINATOR" -c "SELECT count(*) FILTER (WHERE result = '4|1') FROM run_command_on_shards('articles', \$\$
        SELECT (SELECT count(*) FROM pg_index i WHERE i.indrelid = '%1\$s'::regclass AND i.indnatts = 2
                  AND pg_get_indexdef(i.indexrelid) ~ 'body_band[0-3]\) INCLUDE \(body_simhash\)')
               || '|' || (SELECT count(*) FROM pg_trigger t WHERE t.tgrelid = '%1\$s'::regclass
                            AND t.tgfoid = 'simhash_trigger'::regproc)\$\$)")" 8
qn "$COORDINATOR" -c "INSERT INTO articles VALUES (3, 50000, 'The city council approved the budget for protected bike lanes on Monday.')"
expect "a row inserted later is fingerprinted by the trigger on its shard" \
    "$(qn "$COORDINATOR" -c "SELECT body_simhash = simhash(body) FROM articles WHERE id = 50000")" t

echo "-- lookups from the coordinator equal brute force over every shard"
qn "$COORDINATOR" >/dev/null <<'SQL'
CREATE TABLE lookup_check AS SELECT 0 AS queries, 0 AS found, 0 AS mismatches;
DO $$
DECLARE
  q bigint;
  k int;
  got text[];
  want text[];
  n int := 0;
  nfound int := 0;
  bad int := 0;
BEGIN
  -- Fingerprints of rows, and the same with 1 to 6 bits flipped: queries at distances 0 to 9.
  FOR q IN SELECT body_simhash # (CASE WHEN id % 3 = 0 THEN 0 ELSE (1::bigint << (id % 61)::int) | (1::bigint << (id % 13)::int) END)
                                 # (CASE WHEN id % 5 = 0 THEN (7::bigint << 40) ELSE 0 END)
           FROM articles WHERE id % 97 = 0 ORDER BY id LOOP
    FOREACH k IN ARRAY ARRAY[0, 3, 7, 9] LOOP
      SELECT coalesce(array_agg(ROW((x.item).site, (x.item).id)::text || ':' || x.distance
                                ORDER BY (x.item).site, (x.item).id), '{}') INTO got
      FROM simhash_near_duplicates(NULL::articles, q, k) x;
      SELECT coalesce(array_agg(ROW(a.site, a.id)::text || ':' || hamming(a.body_simhash, q) ORDER BY a.site, a.id), '{}') INTO want
      FROM articles a WHERE hamming(a.body_simhash, q) <= k;
      n := n + 1;
      nfound := nfound + cardinality(want);
      IF got IS DISTINCT FROM want THEN
        bad := bad + 1;
        RAISE WARNING 'lookup of % at k %: got %, want %', q, k, got, want;
      END IF;
    END LOOP;
  END LOOP;
  UPDATE lookup_check SET queries = n, found = nfound, mismatches = bad;
END $$;
SQL
IFS='|' read -r lookups found mismatches < <(qn "$COORDINATOR" -c "SELECT queries, found, mismatches FROM lookup_check")
measure "lookups checked against brute force (k 0, 3, 7, 9)" "$lookups lookups, $found rows found"
expect "simhash_near_duplicates(fingerprint) equals a scan of all shards" "$mismatches" 0
((found > lookups)) || fail "the lookups found too few rows ($found) to show anything"
expect "simhash_near_duplicates(text) finds the planted near-duplicates in other sites" \
    "$(qn "$COORDINATOR" -v body="$(qn "$COORDINATOR" -c "SELECT body FROM articles WHERE id = 100")" <<'SQL'
SELECT string_agg(ROW((n.item).site, (n.item).id)::text || ':' || n.distance, ' ' ORDER BY n.distance, (n.item).site, (n.item).id)
FROM simhash_near_duplicates(NULL::articles, :'body') n;
SQL
)" \
    "$(qn "$COORDINATOR" -c "SELECT string_agg(ROW(b.site, b.id)::text || ':' || hamming(a.body_simhash, b.body_simhash), ' '
                                    ORDER BY hamming(a.body_simhash, b.body_simhash), b.site, b.id)
                             FROM (SELECT body_simhash FROM articles WHERE id = 100) a, articles b
                             WHERE hamming(a.body_simhash, b.body_simhash) <= 7")"
expect_match "the lookup reads the band indexes on the shards (without sequential scans: the shards are small)" \
    "$(qn "$COORDINATOR" -c "SELECT simhash_near_duplicates_sql('articles', body_simhash) FROM articles WHERE id = 100" |
        { read -r sql; qn "$COORDINATOR" -c "SET citus.propagate_set_commands = 'local'" -c "BEGIN" \
            -c "SET LOCAL enable_seqscan = off" -c "EXPLAIN (COSTS OFF) $sql" -c "COMMIT"; })" \
    "BitmapOr.*Bitmap Index Scan on articles_body_band0_body_simhash_idx_[0-9]+.*Bitmap Index Scan on articles_body_band3_body_simhash_idx_[0-9]+"
expect "a lookup filtered to one site goes to one shard (router query)" \
    "$(qn "$COORDINATOR" -c "SELECT simhash_near_duplicates_sql('articles', body_simhash, filter => 't.site = 4') FROM articles WHERE id = 100" |
        { read -r sql; qn "$COORDINATOR" -c "EXPLAIN (COSTS OFF) $sql" | grep -c 'Task Count: 1'; })" 1

echo "-- simhash_pairs and simhash_clusters over all shards"
qn "$COORDINATOR" >/dev/null <<'SQL'
CREATE TEMP TABLE fps AS SELECT site, id, body_simhash AS fp FROM articles;
CREATE TEMP TABLE want AS
  SELECT ROW(a.site, a.id)::text AS key_a, ROW(b.site, b.id)::text AS key_b, hamming(a.fp, b.fp) AS distance,
         NULL::float8 AS similarity
  FROM fps a JOIN fps b ON (a.site, a.id) < (b.site, b.id) AND hamming(a.fp, b.fp) <= 7;
CREATE TABLE pairs_check AS
  SELECT (SELECT count(*) FROM want) AS want,
         (SELECT count(*) FROM (SELECT * FROM simhash_pairs('articles', verify => false) EXCEPT SELECT * FROM want) x) AS extra,
         (SELECT count(*) FROM (SELECT * FROM want EXCEPT SELECT * FROM simhash_pairs('articles', verify => false)) x) AS missed;
SQL
IFS='|' read -r want extra missed < <(qn "$COORDINATOR" -c "SELECT want, extra, missed FROM pairs_check")
measure "pairs within distance 7 (brute force over all shards)" "$want"
((want > 50)) || fail "too few pairs ($want) to show anything"
expect "simhash_pairs (verify => false) equals brute force: none extra, none missed" "$extra|$missed" "0|0"
expect "simhash_clusters: every row once, each pair in one cluster" \
    "$(qn "$COORDINATOR" -c "CREATE TEMP TABLE c AS SELECT * FROM simhash_clusters('articles')" \
        -c "SELECT (SELECT count(*) FROM c) || '|' || (SELECT count(DISTINCT key) FROM c) || '|' ||
                   (SELECT count(*) FROM simhash_pairs('articles') p JOIN c ca ON ca.key = p.key_a JOIN c cb ON cb.key = p.key_b
                    WHERE ca.representative <> cb.representative)")" "$((rows + 1))|$((rows + 1))|0"
# The pairs are searched on the workers (bucket by bucket, simhash.dedup_on_workers, the default);
# the coordinator's own search (the setting off) reads every key and fingerprint. Both must agree at
# every distance, and the clusters too.
expect "simhash_pairs pairs on the workers (its progress says so), or on the coordinator when told" \
    "$(qn "$COORDINATOR" -c "SET client_min_messages = notice" -c "SET simhash.progress_interval = 0" \
          -c "SELECT count(*) FROM simhash_pairs('articles')" 2>&1 | grep -c 'pairing each bucket on its worker')|$(
       qn "$COORDINATOR" -c "SET client_min_messages = notice" -c "SET simhash.progress_interval = 0" -c "SET simhash.dedup_on_workers = off" \
          -c "SELECT count(*) FROM simhash_pairs('articles')" 2>&1 | grep -c 'pairing each bucket on its worker')" "1|0"
for k in 0 3 7 12; do
    expect "max_distance $k: pairs and clusters on the workers equal the coordinator's (pairs, extra, missed, clusters differing)" \
        "$(qn "$COORDINATOR" >/dev/null <<SQL
CREATE TEMP TABLE w_pairs AS SELECT * FROM simhash_pairs('articles', max_distance => $k);
CREATE TEMP TABLE w_clusters AS SELECT * FROM simhash_clusters('articles', max_distance => $k);
SET simhash.dedup_on_workers = off;
CREATE TEMP TABLE c_pairs AS SELECT * FROM simhash_pairs('articles', max_distance => $k);
CREATE TEMP TABLE c_clusters AS SELECT * FROM simhash_clusters('articles', max_distance => $k);
CREATE TABLE dedup_check_$k AS SELECT (SELECT count(*) FROM c_pairs) AS pairs,
  (SELECT count(*) FROM (SELECT * FROM w_pairs EXCEPT ALL SELECT * FROM c_pairs) x) AS extra,
  (SELECT count(*) FROM (SELECT * FROM c_pairs EXCEPT ALL SELECT * FROM w_pairs) x) AS missed,
  (SELECT count(*) FROM (SELECT * FROM w_clusters EXCEPT SELECT * FROM c_clusters) x)
  + (SELECT count(*) FROM (SELECT * FROM c_clusters EXCEPT SELECT * FROM w_clusters) x) AS clusters;
SQL
        qn "$COORDINATOR" -c "SELECT (pairs > 0 OR $k = 0) || '|' || extra || '|' || missed || '|' || clusters FROM dedup_check_$k")" \
        "true|0|0|0"
done
# Verified (verify => true: articles is attached without verification): the candidates, found on the
# workers or on the coordinator, are verified against their texts, read by key from the shards; the pairs, distances, exact similarities
# and clusters are one node's: those of a local copy of the table with the same attachment.
qn "$COORDINATOR" >/dev/null <<'SQL'
CREATE TABLE articles_local AS SELECT site, id, body FROM articles;
ALTER TABLE articles_local ADD PRIMARY KEY (site, id);
SELECT simhash_attach('articles_local', 'body');
SQL
for k in 7 12; do
    qn "$COORDINATOR" >/dev/null <<SQL
CREATE TEMP TABLE w_pairs AS SELECT * FROM simhash_pairs('articles', max_distance => $k, verify => true);
CREATE TEMP TABLE w_clusters AS SELECT * FROM simhash_clusters('articles', max_distance => $k, verify => true);
CREATE TEMP TABLE l_pairs AS SELECT * FROM simhash_pairs('articles_local', max_distance => $k);
CREATE TEMP TABLE l_clusters AS SELECT * FROM simhash_clusters('articles_local', max_distance => $k);
SET simhash.dedup_on_workers = off;
CREATE TEMP TABLE c_pairs AS SELECT * FROM simhash_pairs('articles', max_distance => $k, verify => true);
CREATE TEMP TABLE c_clusters AS SELECT * FROM simhash_clusters('articles', max_distance => $k, verify => true);
CREATE TABLE verify_check_$k AS SELECT (SELECT count(*) FROM l_pairs) AS pairs,
  (SELECT count(*) FROM simhash_pairs('articles', max_distance => $k, verify => false)) AS candidates,
  (SELECT count(*) FROM l_pairs WHERE similarity IS NULL OR similarity < 0.4) AS below,
  (SELECT count(*) FROM (SELECT * FROM w_pairs EXCEPT ALL SELECT * FROM l_pairs) x)
  + (SELECT count(*) FROM (SELECT * FROM l_pairs EXCEPT ALL SELECT * FROM w_pairs) x) AS workers,
  (SELECT count(*) FROM (SELECT * FROM c_pairs EXCEPT ALL SELECT * FROM l_pairs) x)
  + (SELECT count(*) FROM (SELECT * FROM l_pairs EXCEPT ALL SELECT * FROM c_pairs) x) AS coordinator,
  (SELECT count(*) FROM (SELECT * FROM w_clusters EXCEPT SELECT * FROM l_clusters) x)
  + (SELECT count(*) FROM (SELECT * FROM l_clusters EXCEPT SELECT * FROM w_clusters) x)
  + (SELECT count(*) FROM (SELECT * FROM c_clusters EXCEPT SELECT * FROM l_clusters) x)
  + (SELECT count(*) FROM (SELECT * FROM l_clusters EXCEPT SELECT * FROM c_clusters) x) AS clusters;
SQL
    IFS='|' read -r vpairs vcandidates vbelow vworkers vcoordinator vclusters < <(
        qn "$COORDINATOR" -c "SELECT pairs, candidates, below, workers, coordinator, clusters FROM verify_check_$k")
    measure "verified pairs of candidates at max_distance $k" "$vpairs of $vcandidates"
    ((vpairs > 0 && vpairs <= vcandidates)) || fail "verified at $k: $vpairs pairs of $vcandidates candidates"
    expect "verified at max_distance $k: pairs (with their exact similarity) and clusters on the workers and on the coordinator equal one node's (below 0.4, workers, coordinator, clusters differing)" \
        "$vbelow|$vworkers|$vcoordinator|$vclusters" "0|0|0|0"
done
expect "verification removes candidates at max_distance 12" \
    "$(qn "$COORDINATOR" -c "SELECT candidates > pairs FROM verify_check_12")" t
expect "the workers' bucket table is gone afterwards" \
    "$(qn "$COORDINATOR" -c "SELECT count(*) FROM pg_class WHERE relname LIKE 'simhash\_pairs\_%'")" 0
qn "$COORDINATOR" -c "CREATE ROLE pairs_reader LOGIN" -c "GRANT SELECT ON articles TO pairs_reader" \
    -c "REVOKE CREATE ON SCHEMA public FROM PUBLIC" >/dev/null
expect "a role without CREATE on the table's schema gets the coordinator's pairs (the same)" \
    "$(qn "$COORDINATOR" -c "SET ROLE pairs_reader" -c "SELECT count(*) FROM simhash_pairs('articles')")" \
    "$(qn "$COORDINATOR" -c "SELECT pairs FROM dedup_check_7")"
expect "in a read-only transaction the coordinator pairs (the workers' search writes a table)" \
    "$(qn "$COORDINATOR" -c "BEGIN READ ONLY" -c "SELECT count(*) FROM simhash_pairs('articles')" -c "COMMIT")" \
    "$(qn "$COORDINATOR" -c "SELECT pairs FROM dedup_check_7")"
expect "simhash_lookup_cost is refused on a distributed table" \
    "$(sqlstate "$DB" "SELECT * FROM simhash_lookup_cost('articles', 1)")" 0A000
expect "renaming the attached column of a distributed table is refused" \
    "$(sqlstate "$DB" "ALTER TABLE articles RENAME COLUMN body TO content")" 0A000
qn "$COORDINATOR" -c "CREATE TABLE nokey (site int, body text)" -c "SELECT create_distributed_table('nokey', 'site')" \
    -c "SELECT simhash_attach('nokey', 'body')" >/dev/null
expect "simhash_pairs on a distributed table without a primary key is refused (a ctid names a row in one shard)" \
    "$(sqlstate "$DB" "SELECT * FROM simhash_pairs('nokey')")" 0A000
qn "$COORDINATOR" -c "CREATE TABLE ref (id int PRIMARY KEY, body text)" -c "SELECT create_reference_table('ref')" >/dev/null
expect "a reference table is refused" "$(sqlstate "$DB" "SELECT simhash_attach('ref', 'body')")" 0A000
qn "$COORDINATOR" -c "SELECT simhash_detach('articles')" >/dev/null
expect "simhash_detach removes the columns, indexes and trigger from every shard" \
    "$(qn "$COORDINATOR" -c "SELECT count(*) FILTER (WHERE result = '0|0') FROM run_command_on_shards('articles', \$\$
        SELECT (SELECT count(*) FROM pg_attribute WHERE attrelid = '%1\$s'::regclass AND attname LIKE 'body\\_%%' AND NOT attisdropped)
               || '|' || (SELECT count(*) FROM pg_trigger WHERE tgrelid = '%1\$s'::regclass AND NOT tgisinternal)\$\$)")" 8

echo "-- near-duplicates rejected per site (scope => the distribution column)"
qn "$COORDINATOR" >/dev/null <<'SQL'
SET citus.shard_count = 8;
CREATE TABLE posts (site int, id bigint, body text, PRIMARY KEY (site, id));
SELECT create_distributed_table('posts', 'site');
SELECT simhash_attach('posts', 'body', on_duplicate => 'error', scope => 'site');
INSERT INTO posts VALUES (1, 1, 'The city council approved the budget for protected bike lanes on Monday.');
SQL
expect "a near-duplicate in the same site is rejected (23505)" \
    "$(sqlstate "$DB" "INSERT INTO posts VALUES (1, 2, 'The city council approved the budget for protected bike lanes on Monday!')")" 23505
expect_contains "the error names the distributed table and the existing row's key" \
    "$(error_text "$DB" "INSERT INTO posts VALUES (1, 3, 'On Monday the city council approved a budget for protected bike lanes.')")" \
    'relation "posts"'
expect "the same text in another site is accepted" \
    "$(sqlstate "$DB" "INSERT INTO posts VALUES (2, 2, 'The city council approved the budget for protected bike lanes on Monday!')")" 00000
expect "an UPDATE that makes a row a near-duplicate in its site is rejected" \
    "$(sqlstate "$DB" "INSERT INTO posts VALUES (1, 4, 'Volunteers hauled half a ton of trash from the beach at Sandy Point.');
                       UPDATE posts SET body = 'The city council approved the budget for protected bike lanes on Monday' WHERE site = 1 AND id = 4")" 23505
qn "$COORDINATOR" >/dev/null <<'SQL'
CREATE TABLE posts_flag (site text, id bigint, body text, PRIMARY KEY (site, id));
SELECT create_distributed_table('posts_flag', 'site');
SELECT simhash_attach('posts_flag', 'body', on_duplicate => 'flag', scope => 'site');
INSERT INTO posts_flag VALUES ('a', 1, 'The city council approved the budget for protected bike lanes on Monday.');
INSERT INTO posts_flag VALUES ('a', 2, 'The city council approved the budget for protected bike lanes on Monday!');
INSERT INTO posts_flag VALUES ('b', 3, 'The city council approved the budget for protected bike lanes on Monday!');
SQL
expect "flag mode records the key of the near-duplicate in the same site only" \
    "$(qn "$COORDINATOR" -c "SELECT string_agg(id || ':' || coalesce(body_duplicate_of, '-'), ' ' ORDER BY id) FROM posts_flag")" \
    "1:- 2:a, 1 3:-"

# Concurrent writers: WRITERS sessions each insert the same TEXTS texts (in a different order and
# punctuation, fingerprints identical) into sites 1..3, each in its own transaction held open for
# 30 ms after the insert. Exactly one copy of each text may commit per site.
WRITERS=6
TEXTS=24
qn "$COORDINATOR" -v sample="$(sample_text)" >/dev/null <<SQL
CREATE TABLE race_texts AS
  SELECT row_number() OVER () AS n, s
  FROM regexp_split_to_table(:'sample', '(?<=[。！？.])\s*') s WHERE length(s) > 40 LIMIT $TEXTS;
SQL
for w in $(seq 1 "$WRITERS"); do
    script=$CITUS_DIR/writer$w.sql
    : >"$script"
    for n in $(seq 1 "$TEXTS" | shuf --random-source=<(yes "$w")); do
        printf "BEGIN;\nINSERT INTO posts SELECT 10 + %d %% 3, %d, s || repeat('!', %d) FROM race_texts WHERE n = %d;\nSELECT pg_sleep(0.03);\nCOMMIT;\n" \
            "$n" $((w * 1000 + n)) "$w" "$n" >>"$script"
    done
done
start=$(now_ms)
for w in $(seq 1 "$WRITERS"); do
    "$PSQL" -X -q -h /tmp -p "$COORDINATOR" -U postgres -d "$DB" -f "$CITUS_DIR/writer$w.sql" >"$CITUS_DIR/writer$w.out" 2>&1 &
done
wait
measure "concurrent writers: $WRITERS x $TEXTS inserts (ms)" $(($(now_ms) - start))
rejected=$(cat "$CITUS_DIR"/writer*.out | grep -c 'near-duplicate text' || true)
expect "each text committed once per site" \
    "$(qn "$COORDINATOR" -c "SELECT count(*) || '|' || count(DISTINCT simhash(body)) FROM posts WHERE site >= 10")" "$TEXTS|$TEXTS"
expect "every other concurrent copy was rejected with 23505" "$rejected" $(((WRITERS - 1) * TEXTS))

# The race windows of issue 48 on shards: checked after the write, no keys (tests/citus/windows.sh).
source "$(dirname "${BASH_SOURCE[0]}")/windows.sh"

echo "-- attached before distribution"
qn "$COORDINATOR" >/dev/null <<'SQL'
CREATE TABLE early (site int, id bigint, body text, PRIMARY KEY (site, id));
SELECT simhash_attach('early', 'body', on_duplicate => 'error');
SET citus.enable_unsafe_triggers = on;
SELECT create_distributed_table('early', 'site');
CREATE TABLE early_scoped (site int, id bigint, body text, PRIMARY KEY (site, id));
SELECT simhash_attach('early_scoped', 'body', on_duplicate => 'error', scope => 'site');
SELECT create_distributed_table('early_scoped', 'site');
SQL
expect "a table attached without scope and then distributed refuses checked writes (0A000)" \
    "$(sqlstate "$DB" "INSERT INTO early VALUES (1, 1, 'The city council approved the budget for protected bike lanes on Monday.')")" 0A000
expect_contains "the refusal says how to attach it" \
    "$(error_text "$DB" "INSERT INTO early VALUES (1, 1, 'The city council approved the budget for protected bike lanes on Monday.')")" \
    "scope => 'site'"
expect "a table attached with scope => its distribution column works once distributed" \
    "$(qn "$COORDINATOR" -c "INSERT INTO early_scoped VALUES (1, 1, 'The city council approved the budget for protected bike lanes on Monday.')" \
        -c "INSERT INTO early_scoped VALUES (2, 2, 'The city council approved the budget for protected bike lanes on Monday.')"
       sqlstate "$DB" "INSERT INTO early_scoped VALUES (1, 3, 'The city council approved the budget for protected bike lanes on Monday!')")" 23505
expect "... and only its first two rows are there" "$(qn "$COORDINATOR" -c "SELECT count(*) FROM early_scoped")" 2

echo "-- near-duplicates rejected across the whole distributed table (registry => true)"
qn "$COORDINATOR" -v sample="$(sample_text)" >/dev/null <<'SQL'
SET citus.shard_count = 8;
CREATE TABLE feed (site int, id bigserial, body text, PRIMARY KEY (site, id));
SELECT create_distributed_table('feed', 'site');
INSERT INTO feed (site, body) SELECT site, body FROM articles WHERE id < 400;
CREATE TABLE race_singles AS SELECT n, s FROM race_texts;
SQL
expect "registry => true on a table that is not distributed is refused" \
    "$(sqlstate "$DB" "SELECT simhash_attach('race_singles', 's', on_duplicate => 'error', registry => true)")" 22023
qn "$COORDINATOR" -c "SELECT simhash_attach('feed', 'body', on_duplicate => 'error', registry => true)" >/dev/null
expect "the table is its own registry: no other table is made, the rows already there count as registered" \
    "$(qn "$COORDINATOR" -c "SELECT (SELECT count(*) FROM pg_class WHERE relname LIKE 'feed\_body\_registry%')
                             || '|' || (SELECT count(*) FILTER (WHERE body_registered = body_simhash) = count(*) FROM feed)")" "0|true"
expect "its band indexes carry the fingerprint and the distribution column (index-only probes on every shard)" \
    "$(qn "$COORDINATOR" -c "SELECT string_agg(regexp_replace(indexdef, '^.* USING ', ''), '; ' ORDER BY indexname)
                             FROM pg_indexes WHERE tablename = 'feed' AND indexname LIKE '%band%'")" \
    "btree (body_band0) INCLUDE (body_simhash, site); btree (body_band1) INCLUDE (body_simhash, site); btree (body_band2) INCLUDE (body_simhash, site); btree (body_band3) INCLUDE (body_simhash, site)"
expect "an INSERT into the table itself is refused: it did not go through the registry" \
    "$(sqlstate "$DB" "INSERT INTO feed (site, body) VALUES (1, 'A quiet week in the valley: cranes return to the wetlands as spring arrives.')")" 0A000
expect_contains "the refusal names the view to write through" \
    "$(error_text "$DB" "INSERT INTO feed (site, body) VALUES (1, 'A quiet week in the valley: cranes return to the wetlands as spring arrives.')")" \
    "feed_body_checked"
expect "an UPDATE of the text on the table itself is refused too" \
    "$(sqlstate "$DB" "UPDATE feed SET body = 'A quiet week in the valley: cranes return to the wetlands as spring arrives.' WHERE id = 1")" 0A000
expect "a near-duplicate of a row of another site, written through the view, is rejected (23505)" \
    "$(qn "$COORDINATOR" -c "SELECT site FROM feed WHERE id = 5" |
        { read -r site; sqlstate "$DB" "INSERT INTO feed_body_checked (site, body)
                                        SELECT ($site + 1) % 12, regexp_replace(body, '[.。]$', '!') FROM feed WHERE id = 5"; })" 23505
expect "a new text through the view is accepted, fingerprinted and registered" \
    "$(qn "$COORDINATOR" -c "INSERT INTO feed_body_checked (site, body) VALUES (7, 'A quiet week in the valley: cranes return to the wetlands as spring arrives.')" \
        -c "SELECT body_registered = body_simhash AND body_simhash = simhash(body) FROM feed WHERE body LIKE 'A quiet week%'")" t
expect "a write through the view at REPEATABLE READ is refused (0A000): the check needs fresh snapshots on the workers" \
    "$(sqlstate "$DB" "BEGIN ISOLATION LEVEL REPEATABLE READ; INSERT INTO feed_body_checked (site, body) VALUES (8, 'Snow closed the mountain pass for the third time this month, stranding two buses.'); COMMIT")" 0A000
expect_contains "... with a hint to write at READ COMMITTED" \
    "$(error_text "$DB" "BEGIN ISOLATION LEVEL SERIALIZABLE; INSERT INTO feed_body_checked (site, body) VALUES (8, 'Snow closed the mountain pass for the third time this month, stranding two buses.'); COMMIT")" \
    "READ COMMITTED"
expect "a near-duplicate of a deleted row goes in (the table is the registry: nothing of the deleted row is left)" \
    "$(qn "$COORDINATOR" -c "DELETE FROM feed WHERE body LIKE 'A quiet week%'" \
        -c "INSERT INTO feed_body_checked (site, body) VALUES (9, 'A quiet week in the valley: cranes return to the wetlands as spring arrives!')" \
        -c "SELECT count(*) FROM feed WHERE body LIKE 'A quiet week%'")" 1

# The check searches each shard with simhash_internal.probe_shard(), one call per row of the table
# of shards, which is colocated with feed: Citus runs each call in the connection that wrote that
# shard in the transaction.
shard_list=$(qn "$COORDINATOR" -c "SELECT string_agg(shardid::text, ',' ORDER BY shardid) FROM pg_dist_shard WHERE logicalrelid = 'feed'::regclass")
expect "the table of shards: one row per shard of feed ..." \
    "$(qn "$COORDINATOR" -c "SELECT string_agg(shard::text, ',' ORDER BY shard) FROM feed_body_shards")" "$shard_list"
expect "... colocated with it" \
    "$(qn "$COORDINATOR" -c "SELECT count(DISTINCT colocationid) FROM pg_dist_partition WHERE logicalrelid IN ('feed'::regclass, 'feed_body_shards'::regclass)")" 1
remote_probe() { # SQL: the probe_shard calls and UNION queries Citus sends for one insert through the view
    "$PSQL" -X -q -h /tmp -p "$COORDINATOR" -U postgres -d "$DB" -c "SET client_min_messages = log" \
        -c "SET citus.log_remote_commands = on" -c "$1" 2>&1 |
        awk '/issuing/ && /probe_shard/ { p++ } /issuing/ && /UNION ALL/ { u++ } END { printf "%d|%d\n", p, u }'
}
expect "a write through the view asks each of the 8 shards once (probe_shard), without the UNION query" \
    "$(remote_probe "INSERT INTO feed_body_checked (site, body) VALUES (10, 'Harvest festival draws record crowds to the old mill despite the steady rain.')")" "8|0"
expect "a near-duplicate written earlier in the same transaction is rejected, after a parallel query opened more connections" \
    "$(sqlstate "$DB" "BEGIN; SET LOCAL citus.force_max_query_parallelization = on; SELECT count(*) FROM feed;
                       INSERT INTO feed_body_checked (site, body) VALUES (3, 'The ferry timetable changes on Monday as the winter schedule begins across the bay.');
                       INSERT INTO feed_body_checked (site, body) VALUES (4, 'The ferry timetable changes on Monday as the winter schedule begins across the bay!');
                       COMMIT")" 23505
expect "a near-duplicate of a row deleted earlier in the same transaction goes in" \
    "$(qn "$COORDINATOR" -c "BEGIN" -c "SET LOCAL citus.force_max_query_parallelization = on" -c "SELECT count(*) FROM feed" \
        -c "INSERT INTO feed_body_checked (site, body) VALUES (3, 'Librarians catalogued a donated collection of maps that once belonged to a sea captain.')" \
        -c "DELETE FROM feed WHERE site = 3 AND body LIKE 'Librarians catalogued%'" \
        -c "INSERT INTO feed_body_checked (site, body) VALUES (5, 'Librarians catalogued a donated collection of maps that once belonged to a sea captain!')" \
        -c "COMMIT" -c "SELECT site FROM feed WHERE body LIKE 'Librarians catalogued%'" | tail -1)" 5
# With a shard missing from the table of shards (as after a shard split), the check searches with
# the UNION query; registry_shards() makes the table again.
qn "$COORDINATOR" -c "DELETE FROM feed_body_shards WHERE shard = (SELECT get_shard_id_for_distribution_column('feed', 10))" >/dev/null
expect "with a shard missing from the table of shards, the check searches with its own query (the UNION on each of the 8 shards)" \
    "$(remote_probe "INSERT INTO feed_body_checked (site, body) VALUES (11, 'Astronomers at the hill observatory tracked a comet that will pass close to the sun in May.')")" "8|8"
expect "... and still rejects a near-duplicate of a row in that shard (23505)" \
    "$(sqlstate "$DB" "INSERT INTO feed_body_checked (site, body) VALUES (1, 'Harvest festival draws record crowds to the old mill despite the steady rain!')")" 23505
expect "simhash_internal.registry_shards() makes the table of shards again: one row per shard, the one query back" \
    "$(qn "$COORDINATOR" -c "SELECT simhash_internal.registry_shards('feed', 'body')" -c "SELECT string_agg(shard::text, ',' ORDER BY shard) = '$shard_list' FROM feed_body_shards" | tr '\n' '|')$(remote_probe "INSERT INTO feed_body_checked (site, body) VALUES (2, 'Fishermen report the largest herring run in a decade along the northern coast this spring.')")" "t|t|8|0"

# Concurrent writers through the view, each into its own site (sites live on different shards
# and workers): exactly one copy of each text may commit in the whole table, none of a text that
# has a near-duplicate there already.
fresh=$(qn "$COORDINATOR" -c "SELECT count(*) FROM race_texts r WHERE NOT EXISTS (SELECT FROM simhash_near_duplicates(NULL::feed, r.s))")
measure "registry: race texts without a near-duplicate in the table" "$fresh of $TEXTS"
((fresh >= TEXTS / 2)) || fail "too few fresh race texts ($fresh) to show anything"
for w in $(seq 1 "$WRITERS"); do
    script=$CITUS_DIR/feed$w.sql
    : >"$script"
    for n in $(seq 1 "$TEXTS" | shuf --random-source=<(yes "x$w")); do
        printf "BEGIN;\nINSERT INTO feed_body_checked (site, body) SELECT %d, s || repeat('!', %d) FROM race_texts WHERE n = %d;\nSELECT pg_sleep(0.03);\nCOMMIT;\n" \
            "$w" "$w" "$n" >>"$script"
    done
done
start=$(now_ms)
for w in $(seq 1 "$WRITERS"); do
    "$PSQL" -X -q -h /tmp -p "$COORDINATOR" -U postgres -d "$DB" -f "$CITUS_DIR/feed$w.sql" >"$CITUS_DIR/feed$w.out" 2>&1 &
done
wait
measure "registry: $WRITERS writers in $WRITERS sites x $TEXTS inserts (ms)" $(($(now_ms) - start))
rejected=$(cat "$CITUS_DIR"/feed*.out | grep -c 'near-duplicate text' || true)
others=$(cat "$CITUS_DIR"/feed*.out | grep 'ERROR' | grep -v 'near-duplicate text' | grep -vc 'transaction is aborted' || true)
expect "each fresh text committed once in the whole table, whichever site" \
    "$(qn "$COORDINATOR" -c "SELECT count(*) || '|' || count(DISTINCT body_simhash) || '|' || (count(DISTINCT site) > 1)
                             FROM feed WHERE body_simhash IN (SELECT simhash(s) FROM race_texts)")" "$fresh|$fresh|true"
expect "every other copy was rejected with 23505, and nothing else failed" "$rejected|$others" \
    "$((WRITERS * TEXTS - fresh))|0"
expect "no two rows written through the registry are near-duplicates" \
    "$(qn "$COORDINATOR" -c "SELECT count(*) FROM simhash_pairs('feed') p
                             WHERE p.key_a IN (SELECT ROW(site, id)::text FROM feed WHERE id > 400)
                                OR p.key_b IN (SELECT ROW(site, id)::text FROM feed WHERE id > 400)")" 0
qn "$COORDINATOR" -c "SELECT simhash_detach('feed')" >/dev/null
expect "simhash_detach drops the view and the table of shards (and the registry tables of older versions)" \
    "$(qn "$COORDINATOR" -c "SELECT count(*) FROM pg_class WHERE relname LIKE 'feed\_body\_%'")" 0
qn "$COORDINATOR" >/dev/null <<'SQL'
CREATE TABLE flagged (site int, id bigint, body text, PRIMARY KEY (site, id));
SELECT create_distributed_table('flagged', 'site');
SELECT simhash_attach('flagged', 'body', on_duplicate => 'flag', registry => true);
INSERT INTO flagged_body_checked VALUES (1, 1, 'The city council approved the budget for protected bike lanes on Monday.');
INSERT INTO flagged_body_checked VALUES (2, 2, 'The city council approved the budget for protected bike lanes on Monday!');
INSERT INTO flagged_body_checked VALUES (3, 3, 'Volunteers hauled half a ton of trash from the beach at Sandy Point on Saturday.');
CREATE TABLE skipped (site int, id bigint, body text, PRIMARY KEY (site, id));
SELECT create_distributed_table('skipped', 'site');
SELECT simhash_attach('skipped', 'body', on_duplicate => 'skip', registry => true);
INSERT INTO skipped_body_checked VALUES (1, 1, 'The city council approved the budget for protected bike lanes on Monday.');
INSERT INTO skipped_body_checked VALUES (2, 2, 'The city council approved the budget for protected bike lanes on Monday!');
SQL
expect "registry, flag mode: the row goes in with the key of its near-duplicate in another site" \
    "$(qn "$COORDINATOR" -c "SELECT string_agg(site || ':' || coalesce(body_duplicate_of, '-'), ' ' ORDER BY site) FROM flagged")" \
    "1:- 2:1, 1 3:-"
expect "registry, skip mode: the near-duplicate in another site is dropped" \
    "$(qn "$COORDINATOR" -c "SELECT string_agg(site::text, ' ' ORDER BY site) FROM skipped")" "1"
qn "$COORDINATOR" >/dev/null <<'SQL'
CREATE TABLE notes (site int, id bigint, body text, PRIMARY KEY (site, id));
SELECT create_distributed_table('notes', 'site');
SELECT simhash_attach('notes', 'body', on_duplicate => 'error', registry => true, min_length => 40);
INSERT INTO notes_body_checked VALUES (1, 1, 'Short note about the weather.');
INSERT INTO notes_body_checked VALUES (2, 2, 'Short note about the weather!');
INSERT INTO notes_body_checked VALUES (3, 3, 'The city council approved the budget for protected bike lanes on Monday.');
SQL
expect "registry, min_length: a short near-duplicate in another site goes in, registered" \
    "$(qn "$COORDINATOR" -c "SELECT count(*) FROM notes WHERE body_registered = body_simhash")" 3
expect "registry, min_length: a long near-duplicate in another site is still rejected (23505)" \
    "$(sqlstate "$DB" "INSERT INTO notes_body_checked VALUES (4, 4, 'The city council approved the budget for protected bike lanes on Monday!')")" 23505

echo "-- a registry attachment follows its table (COPY, ALTER TABLE, primary key updates)"
qn "$COORDINATOR" >/dev/null <<'SQL'
CREATE TABLE ledger (site int, id bigint, body text, note text DEFAULT 'none', PRIMARY KEY (site, id));
SELECT create_distributed_table('ledger', 'site');
SELECT simhash_attach('ledger', 'body', on_duplicate => 'error', registry => true);
INSERT INTO ledger_body_checked (site, id, body) VALUES (1, 1, 'The city council approved the budget for protected bike lanes on Monday.');
CREATE ROLE ledger_writer;
GRANT INSERT ON ledger_body_checked TO ledger_writer;
SQL
copy_rows=$'2\t2\tVolunteers hauled half a ton of trash from the beach at Sandy Point on Saturday.'
expect "COPY into the table itself is refused with 0A000 on the coordinator (not Citus's XX000 from a shard)" \
    "$(sqlstate "$DB" "COPY ledger (site, id, body) FROM STDIN" <<<"$copy_rows")" 0A000
expect_contains "the COPY refusal's hint names the view to write through" \
    "$(error_text "$DB" "COPY ledger (site, id, body) FROM STDIN" <<<"$copy_rows")" \
    "HINT:  INSERT or COPY through the view public.ledger_body_checked"
expect "an INSERT into the table itself that leaves out body_registered is refused the same way" \
    "$(sqlstate "$DB" "INSERT INTO ledger (site, id, body) VALUES (2, 2, 'Volunteers hauled half a ton of trash.')")" 0A000
expect "COPY through the view checks every row: a near-duplicate of a row on another shard is rejected (23505)" \
    "$(sqlstate "$DB" "COPY ledger_body_checked (site, id, body) FROM STDIN" \
        <<<$'2\t2\tThe city council approved the budget for protected bike lanes on Monday!')" 23505
expect "COPY through the view writes a new text, registered" \
    "$(qn "$COORDINATOR" -c "COPY ledger_body_checked (site, id, body) FROM STDIN" <<<"$copy_rows" &&
        qn "$COORDINATOR" -c "SELECT count(*) FILTER (WHERE body_registered = simhash(body)) FROM ledger")" 2

qn "$COORDINATOR" -c "ALTER TABLE ledger ADD COLUMN lang text NOT NULL DEFAULT 'en'" \
    -c "ALTER TABLE ledger ADD COLUMN region text NOT NULL DEFAULT 'eu'" \
    -c "ALTER TABLE ledger ALTER COLUMN region DROP DEFAULT" \
    -c "ALTER TABLE ledger ALTER COLUMN note SET DEFAULT 'added later'" >/dev/null
expect "after ADD COLUMN the view has the new columns, with the table's defaults" \
    "$(qn "$COORDINATOR" -c "SELECT string_agg(a.attname || '=' || coalesce(pg_get_expr(d.adbin, d.adrelid), '-'), ' ' ORDER BY a.attnum)
                             FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
                             WHERE a.attrelid = 'ledger_body_checked'::regclass AND a.attnum > 0")" \
    "site=- id=- body=- note='added later'::text lang='en'::text region=-"
expect "an INSERT through the view names the new columns (a NOT NULL one without a default included)" \
    "$(qn "$COORDINATOR" -c "INSERT INTO ledger_body_checked (site, id, body, lang, region)
                             VALUES (3, 3, 'A quiet week in the valley: cranes return to the wetlands as spring arrives.', 'fr', 'us')" \
        -c "SELECT lang || '|' || region || '|' || note FROM ledger WHERE id = 3")" "fr|us|added later"
expect "... and the view still rejects near-duplicates (23505)" \
    "$(sqlstate "$DB" "INSERT INTO ledger_body_checked (site, id, body, region)
                       VALUES (4, 4, 'A quiet week in the valley: cranes return to the wetlands as spring arrives!', 'us')")" 23505
expect "the view keeps its privileges through ALTER TABLE" \
    "$(qn "$COORDINATOR" -c "SELECT has_table_privilege('ledger_writer', 'ledger_body_checked', 'INSERT')")" t
qn "$COORDINATOR" -c "ALTER TABLE ledger RENAME COLUMN lang TO language" >/dev/null
expect "a column renamed in the table is renamed in the view" \
    "$(qn "$COORDINATOR" -c "INSERT INTO ledger_body_checked (site, id, body, language, region)
                             VALUES (5, 5, 'Ferry service to the islands resumes after the storm damaged two piers.', 'de', 'eu')" \
        -c "SELECT language FROM ledger WHERE id = 5")" de
expect "dropping a column the view reads is refused by PostgreSQL (2BP01) unless CASCADE" \
    "$(sqlstate "$DB" "ALTER TABLE ledger DROP COLUMN language")" 2BP01
qn "$COORDINATOR" -c "ALTER TABLE ledger DROP COLUMN language CASCADE" >/dev/null
expect "after DROP COLUMN ... CASCADE the view is made again, without the column, and still checks" \
    "$(qn "$COORDINATOR" -c "SELECT string_agg(attname, ',' ORDER BY attnum) FROM pg_attribute
                             WHERE attrelid = 'ledger_body_checked'::regclass AND attnum > 0"
       sqlstate "$DB" "INSERT INTO ledger_body_checked (site, id, body, region)
                       VALUES (6, 6, 'Ferry service to the islands resumes after the storm damaged two piers!', 'eu')")" \
    "site,id,body,note,region
23505"
expect "renaming the table is refused (0A000): the view is named after it" \
    "$(sqlstate "$DB" "ALTER TABLE ledger RENAME TO ledger2")" 0A000

expect "an UPDATE of the primary key of a registered row goes through" \
    "$(sqlstate "$DB" "UPDATE ledger SET id = 100 WHERE site = 1 AND id = 1")" 00000
expect_contains "a later rejection names the row by its new key" \
    "$(error_text "$DB" "INSERT INTO ledger_body_checked (site, id, body, region)
                         VALUES (7, 7, 'The city council approved the budget for protected bike lanes on Monday!!', 'eu')")" \
    "Key (site, id)=(1, 100)"

echo "-- MinHash attachments (method => 'minhash') on a distributed table"
# The articles above (real sentences in 12 sites, near-duplicates planted across sites), in a table
# of their own. A MinHash near-duplicate shares an LSH band position with the text and reaches the
# threshold (0.5) in estimated similarity (docs/ARCHITECTURE.md §4.5); the brute force below is
# that definition in SQL, over all rows.
qn "$COORDINATOR" >/dev/null <<'SQL'
SET citus.shard_count = 8;
CREATE TABLE stories (site int, id bigint, body text, PRIMARY KEY (site, id));
SELECT create_distributed_table('stories', 'site');
INSERT INTO stories SELECT site, id, body FROM articles;
SQL
mh_rows=$(qn "$COORDINATOR" -c "SELECT count(*) FROM stories")
# A Chinese and an English row, and a repost of the Chinese one.
IFS='|' read -r zh_site zh_id < <(qn "$COORDINATOR" -c "SELECT site, id FROM stories WHERE body ~ '^[一-龥]' AND body !~ '[A-Za-z]{3}' ORDER BY id LIMIT 1")
IFS='|' read -r en_site en_id < <(qn "$COORDINATOR" -c "SELECT site, id FROM stories WHERE body !~ '[一-龥]' ORDER BY id LIMIT 1")
zh_repost=$(qn "$COORDINATOR" <<<"SELECT '【转载】' || body || '（来源：本地日报）' FROM stories WHERE site = $zh_site AND id = $zh_id")
expect "minhash: attach with on_duplicate 'error' and no scope is refused" \
    "$(sqlstate "$DB" "SELECT simhash_attach('stories', 'body', method => 'minhash', on_duplicate => 'error')")" 0A000
expect_contains "... its hint offers scope => the distribution column or 'none', not the registry (refused with MinHash)" \
    "$(error_text "$DB" "SELECT simhash_attach('stories', 'body', method => 'minhash', on_duplicate => 'skip')")" \
    "HINT:  Attach with scope => 'site' (near-duplicates per site), or with on_duplicate => 'none'."
expect "minhash: a scope that is not the distribution column is refused" \
    "$(sqlstate "$DB" "SELECT simhash_attach('stories', 'body', method => 'minhash', on_duplicate => 'flag', scope => 'id')")" 0A000
expect "minhash: registry => true is refused" \
    "$(sqlstate "$DB" "SELECT simhash_attach('stories', 'body', method => 'minhash', on_duplicate => 'error', registry => true)")" 0A000
expect_contains "... its hint names the scope" \
    "$(error_text "$DB" "SELECT simhash_attach('stories', 'body', method => 'minhash', on_duplicate => 'error', registry => true)")" \
    "HINT:  Attach the distributed table with scope => its distribution column, or use method => 'simhash'."
expect "... and the refusals left the table as it was" \
    "$(qn "$COORDINATOR" -c "SELECT string_agg(attname, ',' ORDER BY attnum) || '|' || (SELECT count(*) FROM simhash_attachments() WHERE table_name = 'stories'::regclass)
                             FROM pg_attribute WHERE attrelid = 'stories'::regclass AND attnum > 0 AND NOT attisdropped")" "site,id,body|0"

# on_duplicate 'none' needs no scope: nothing is checked, rows are signed for lookups and dedup.
qn "$COORDINATOR" >/dev/null <<'SQL'
CREATE TABLE wire (site int, id bigint, body text, PRIMARY KEY (site, id));
SELECT create_distributed_table('wire', 'site');
INSERT INTO wire SELECT site, id, body FROM stories WHERE id < 1000;
SQL
expect "minhash: on_duplicate 'none' without scope is attached" \
    "$(sqlstate "$DB" "SELECT simhash_attach('wire', 'body', method => 'minhash')")" 00000
expect "... a repost in the same site is written, and signed by the trigger on its shard" \
    "$(qn "$COORDINATOR" -c "INSERT INTO wire VALUES ($zh_site, $((zh_id + 100000)), \$r\$$zh_repost\$r\$)" \
        -c "SELECT count(*) FILTER (WHERE body_minhash = minhash(body)) || '|' || count(*) FROM wire
            WHERE site = $zh_site AND id IN ($zh_id, $((zh_id + 100000)))")" "2|2"
expect "... a lookup of the repost from the coordinator finds it (similarity 1) and its source" \
    "$(qn "$COORDINATOR" -v r="$zh_repost" -v id="$zh_id" <<'SQL'
SELECT string_agg((n.item).id || ':' || coalesce(n.distance::text, '-') || ':' || (n.similarity = 1), ' ' ORDER BY n.similarity DESC)
FROM simhash_near_duplicates(NULL::wire, :'r') n WHERE (n.item).id IN (:id, :id + 100000);
SQL
)" "$((zh_id + 100000)):-:true $zh_id:-:false"
qn "$COORDINATOR" -c "SELECT simhash_detach('wire')" >/dev/null

start=$(now_ms)
# Unverified (verify => false): the brute force below is the estimate's definition; verification has
# its own section ("verification on the shards").
qn "$COORDINATOR" -c "SELECT simhash_attach('stories', 'body', method => 'minhash', on_duplicate => 'error', scope => 'site', verify => false)" >/dev/null
measure "minhash: simhash_attach on $mh_rows rows (ms)" $(($(now_ms) - start))
expect "minhash: attached with on_duplicate 'error', scope => 'site', threshold 0.5, unverified" \
    "$(qn "$COORDINATOR" -c "SELECT method || '|' || on_duplicate || '|' || scope_column || '|' || threshold || '|' || verify FROM simhash_attachments()
                             WHERE table_name = 'stories'::regclass")" "minhash|error|site|0.5|false"
expect "minhash: every row signed on the shards as minhash() signs it, its band keys as minhash_bands() makes them" \
    "$(qn "$COORDINATOR" -c "SELECT count(*) FILTER (WHERE body_minhash IS DISTINCT FROM minhash(body)) || '|' ||
                                    count(*) FILTER (WHERE body_lsh IS DISTINCT FROM minhash_bands(body_minhash)) || '|' ||
                                    count(body_minhash) FROM stories")" "0|0|$mh_rows"
expect "each of the 8 shards has body_minhash bytea, body_lsh bigint[] (generated), its GIN index, the trigger and the check trigger" \
    "$(qn "$COORDINATOR" -c "SELECT count(*) FILTER (WHERE result = 'bytea|bigint[] s|1|1|2') FROM run_command_on_shards('stories', \$\$
        SELECT (SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = '%1\$s'::regclass AND attname = 'body_minhash')
               || '|' || (SELECT format_type(atttypid, atttypmod) || ' ' || attgenerated::text FROM pg_attribute
                          WHERE attrelid = '%1\$s'::regclass AND attname = 'body_lsh')
               || '|' || (SELECT count(*) FROM pg_index i WHERE i.indrelid = '%1\$s'::regclass
                            AND pg_get_indexdef(i.indexrelid) ~ 'USING gin \(body_lsh\)')
               || '|' || (SELECT count(*) FROM pg_trigger t WHERE t.tgrelid = '%1\$s'::regclass AND t.tgfoid = 'simhash_trigger'::regproc)
               || '|' || (SELECT count(*) FROM pg_trigger t WHERE t.tgrelid = '%1\$s'::regclass AND NOT t.tgisinternal)\$\$)")" 8

# mh_brute SITE TEXT: the rows of site SITE that are near-duplicates of TEXT by the brute force, as
# site|id|similarity, most similar first.
mh_brute() {
    qn "$COORDINATOR" -v site="$1" -v r="$2" <<'SQL'
SELECT s.site, s.id, minhash_similarity(s.body_minhash, minhash(:'r')) AS sim FROM stories s
WHERE s.site = :site AND minhash_similarity(s.body_minhash, minhash(:'r')) >= 0.5
  AND EXISTS (SELECT FROM unnest(s.body_lsh, minhash_bands(minhash(:'r'))) u(p, q) WHERE p = q)
ORDER BY sim DESC, s.id;
SQL
}
# repost_checks LANGUAGE SITE ID HEADER FOOTER: a repost of row (SITE, ID), its text between HEADER
# and FOOTER, is rejected in SITE, naming the most similar row there with its similarity; in the
# next site, where no row is a near-duplicate of it, it is written once.
repost_checks() {
    local lang=$1 site=$2 id=$3 other=$((($2 + 1) % 12)) repost detail named best
    repost=$(qn "$COORDINATOR" -v h="$4" -v f="$5" <<<"SELECT :'h' || body || :'f' FROM stories WHERE site = $site AND id = $id")
    expect "$lang repost '$4...$5' in the same site is rejected (23505)" \
        "$(sqlstate "$DB" "INSERT INTO stories VALUES ($site, $((id + 100000)), \$r\$$repost\$r\$)")" 23505
    detail=$(error_text "$DB" "INSERT INTO stories VALUES ($site, $((id + 100000)), \$r\$$repost\$r\$)")
    # site|id|similarity of the row the DETAIL names, and of the most similar row by brute force.
    named=$(sed -n 's/^DETAIL:  Key (site, id)=(\([0-9]*\), \([0-9]*\)) has estimated similarity \([0-9.]*\) (threshold 0\.5)\.$/\1|\2|\3/p' <<<"$detail")
    best=$(mh_brute "$site" "$repost" | head -1)
    # The DETAIL shows the similarity (a multiple of 1/128) to three decimals.
    expect "... the DETAIL names the most similar row of the site, ($site, $id) by brute force, and its similarity" \
        "${named%|*} ${best%|*} $(awk -v a="${named##*|}" -v b="${best##*|}" 'BEGIN { d = a - b; print (a != "" && d < 0.0006 && d > -0.0006) ? "same" : "differs" }')" \
        "$site|$id $site|$id same"
    expect "... by brute force no row of site $other is a near-duplicate of it" "$(mh_brute "$other" "$repost" | wc -l)" 0
    expect "... so in site $other it is written, signed by the trigger on its shard" \
        "$(qn "$COORDINATOR" -c "INSERT INTO stories VALUES ($other, $((id + 200000)), \$r\$$repost\$r\$)" \
            -c "SELECT body_minhash = minhash(body) FROM stories WHERE site = $other AND id = $((id + 200000))")" t
    expect "... and a second copy in site $other is rejected (23505)" \
        "$(sqlstate "$DB" "INSERT INTO stories VALUES ($other, $((id + 300000)), \$r\$$repost\$r\$)")" 23505
}
repost_checks Chinese "$zh_site" "$zh_id" '【转载】' '（来源：本地日报）'
repost_checks English "$en_site" "$en_id" 'Breaking: ' ' Share this story.'
expect "an UPDATE that makes a row a repost of another row of its site is rejected (23505)" \
    "$(sqlstate "$DB" "UPDATE stories SET body = (SELECT '【转载】' || body || '（来源：本地日报）' FROM stories WHERE site = $zh_site AND id = $zh_id)
                       WHERE site = $zh_site AND id = (SELECT min(id) FROM stories WHERE site = $zh_site AND id > $zh_id)")" 23505

# Concurrent writers, as for SimHash above: WRITERS sessions each write the TEXTS texts of
# race_texts, each writer with its own header and footer, text n into site 20 + n % 3, each
# insert in its own transaction held open 30 ms. Every two writers' versions of a text are
# near-duplicates (checked first by brute force), versions of different texts are not: exactly one
# version of each text may commit.
qn "$COORDINATOR" >/dev/null <<'SQL'
CREATE TABLE repost_variants (w int PRIMARY KEY, header text, footer text);
INSERT INTO repost_variants VALUES (1, '', ''), (2, '【转载】', ''), (3, '', '（来源：本地日报）'),
  (4, '【转载】', '（来源：本地日报）'), (5, 'Breaking: ', ' Share this story.'), (6, '快讯：', '（完）');
SQL
expect "minhash race: every two versions of one text are near-duplicates, of two texts never (brute force)" \
    "$(qn "$COORDINATOR" <<'SQL'
WITH v AS (SELECT r.n, v.w, minhash(v.header || r.s || v.footer) AS sig FROM race_texts r CROSS JOIN repost_variants v)
SELECT count(*) FILTER (WHERE a.n = b.n AND m.near) || '|' || count(*) FILTER (WHERE a.n <> b.n AND m.near)
FROM v a JOIN v b ON (a.n, a.w) < (b.n, b.w)
CROSS JOIN LATERAL (SELECT minhash_similarity(a.sig, b.sig) >= 0.5
                           AND EXISTS (SELECT FROM unnest(minhash_bands(a.sig), minhash_bands(b.sig)) u(p, q) WHERE p = q) AS near) m;
SQL
)" "$((TEXTS * WRITERS * (WRITERS - 1) / 2))|0"
for w in $(seq 1 "$WRITERS"); do
    order=$(seq 1 "$TEXTS" | shuf --random-source=<(yes "m$w") | paste -sd,)
    qn "$COORDINATOR" >"$CITUS_DIR/minhash$w.sql" <<SQL
SELECT format(E'BEGIN;\nINSERT INTO stories VALUES (%s, %s, %L);\nSELECT pg_sleep(0.03);\nCOMMIT;', 20 + r.n % 3, $w * 1000 + r.n,
              v.header || r.s || v.footer)
FROM race_texts r JOIN repost_variants v ON v.w = $w ORDER BY array_position('{$order}'::int[], r.n::int);
SQL
done
start=$(now_ms)
for w in $(seq 1 "$WRITERS"); do
    "$PSQL" -X -q -v VERBOSITY=verbose -h /tmp -p "$COORDINATOR" -U postgres -d "$DB" -f "$CITUS_DIR/minhash$w.sql" \
        >"$CITUS_DIR/minhash$w.out" 2>&1 &
done
wait
measure "minhash: concurrent writers: $WRITERS x $TEXTS inserts (ms)" $(($(now_ms) - start))
rejected=$(cat "$CITUS_DIR"/minhash*.out | grep -c 'ERROR:  23505: near-duplicate text' || true)
others=$(cat "$CITUS_DIR"/minhash*.out | grep 'ERROR' | grep -v '23505: near-duplicate text' | grep -vc 'transaction is aborted' || true)
expect "minhash: each text committed once in its site, one writer's version" \
    "$(qn "$COORDINATOR" -c "SELECT count(*) || '|' || count(DISTINCT id % 1000) FROM stories WHERE site BETWEEN 20 AND 22")" "$TEXTS|$TEXTS"
expect "minhash: every other concurrent version was rejected with 23505, and nothing else failed" "$rejected|$others" \
    "$(((WRITERS - 1) * TEXTS))|0"

echo "-- MinHash lookups, pairs and clusters from the coordinator equal brute force over every shard"
# Query texts: rows' texts, reposts with a header and footer, first sentences alone (near the
# threshold), a text of no row and one without tokens.
qn "$COORDINATOR" >/dev/null <<'SQL'
CREATE TABLE mh_queries AS
  SELECT id AS k, CASE (id / 97) % 4 WHEN 0 THEN body
                                     WHEN 1 THEN '【转载】' || body || '（来源：本地日报）'
                                     WHEN 2 THEN 'Breaking: ' || body || ' Share this story.'
                                     ELSE substring(body FROM '^.*?[。！？.]') END AS q
  FROM stories WHERE id % 97 = 0 AND id < 3000;
INSERT INTO mh_queries VALUES (-1, 'A quiet week in the valley: cranes return to the wetlands as spring arrives.'), (-2, '…!!!');
CREATE TABLE mh_lookup_check AS SELECT 0 AS queries, 0 AS found, 0 AS mismatches, 0 AS misordered, 0 AS near, 0 AS below;
DO $$
DECLARE
  query text;
  sig bytea;
  bands bigint[];
  got text[];
  want text[];
  n int := 0;
  nfound int := 0;
  bad int := 0;
  unordered int := 0;
  nnear int := 0;
  nbelow int := 0;
  c int;
  d int;
BEGIN
  FOR query IN SELECT q FROM mh_queries ORDER BY k LOOP
    sig := minhash(query);
    bands := minhash_bands(sig);
    SELECT coalesce(array_agg(ROW((x.item).site, (x.item).id)::text || ':' || coalesce(x.distance::text, '-') || ':' || x.similarity
                              ORDER BY (x.item).site, (x.item).id), '{}') INTO got
    FROM simhash_near_duplicates(NULL::stories, query) x;
    SELECT coalesce(array_agg(ROW(s.site, s.id)::text || ':-:' || minhash_similarity(s.body_minhash, sig) ORDER BY s.site, s.id), '{}') INTO want
    FROM stories s
    WHERE minhash_similarity(s.body_minhash, sig) >= 0.5 AND EXISTS (SELECT FROM unnest(s.body_lsh, bands) u(p, r) WHERE p = r);
    n := n + 1;
    nfound := nfound + cardinality(want);
    IF got IS DISTINCT FROM want THEN
      bad := bad + 1;
      RAISE WARNING 'minhash lookup of %: got %, want %', query, got, want;
    END IF;
    -- The lookup's own order: most similar first.
    SELECT count(*) INTO c FROM (
      SELECT x.similarity > lag(x.similarity) OVER (ORDER BY x.ord) AS up
      FROM simhash_near_duplicates(NULL::stories, query) WITH ORDINALITY x(item, distance, similarity, ord)) o WHERE up;
    unordered := unordered + c;
    -- Edges of the contract: matches just above the threshold, rows that share a band but stay below it.
    SELECT count(*) FILTER (WHERE sim >= 0.5 AND sim < 0.6), count(*) FILTER (WHERE sim < 0.5) INTO c, d
    FROM (SELECT minhash_similarity(s.body_minhash, sig) AS sim FROM stories s
          WHERE EXISTS (SELECT FROM unnest(s.body_lsh, bands) u(p, r) WHERE p = r)) e;
    nnear := nnear + c;
    nbelow := nbelow + d;
  END LOOP;
  UPDATE mh_lookup_check SET queries = n, found = nfound, mismatches = bad, misordered = unordered, near = nnear, below = nbelow;
END $$;
SQL
IFS='|' read -r lookups found mismatches misordered near below < <(qn "$COORDINATOR" -c "SELECT queries, found, mismatches, misordered, near, below FROM mh_lookup_check")
measure "minhash: lookups checked against brute force" "$lookups lookups, $found rows found"
measure "... found below similarity 0.6; sharing a band, below 0.5" "$near; $below"
((found > 2 * lookups && near > 0 && below > 0)) || fail "the lookups found too few rows to show anything ($found, $near, $below)"
expect "minhash: simhash_near_duplicates(text) equals the brute force over all shards (rows, similarity, no distance)" "$mismatches" 0
expect "minhash: lookups return the most similar first" "$misordered" 0

# simhash_pairs and simhash_clusters: brute force over the keys and signatures of every row, read
# to the coordinator (ord: the key's order, (site, id)).
qn "$COORDINATOR" >/dev/null <<'SQL'
CREATE TEMP TABLE sigs AS
  SELECT site::bigint * 1000000000 + id AS ord, ROW(site, id)::text AS key, body_minhash AS sig, body_lsh AS lsh FROM stories;
CREATE TEMP TABLE want AS
  SELECT a.ord AS a, b.ord AS b, a.key AS key_a, b.key AS key_b, minhash_similarity(a.sig, b.sig) AS similarity
  FROM sigs a JOIN sigs b ON a.ord < b.ord
  WHERE minhash_similarity(a.sig, b.sig) >= 0.5 AND EXISTS (SELECT FROM unnest(a.lsh, b.lsh) u(p, r) WHERE p = r);
CREATE TEMP TABLE got AS SELECT * FROM simhash_pairs('stories', verify => false);
CREATE TABLE mh_pairs_check AS
  SELECT (SELECT count(*) FROM want) AS want,
         (SELECT count(*) FILTER (WHERE similarity < 0.6) FROM want) AS near,
         (SELECT count(*) FROM got WHERE distance IS NOT NULL) AS with_distance,
         (SELECT count(*) FROM (SELECT key_a, key_b, similarity FROM got EXCEPT SELECT key_a, key_b, similarity FROM want) x) AS extra,
         (SELECT count(*) FROM (SELECT key_a, key_b, similarity FROM want EXCEPT SELECT key_a, key_b, similarity FROM got) x) AS missed;
-- Clusters: the connected components of the brute force's pairs (label propagation), each named
-- by its first row in key order.
CREATE TEMP TABLE labels AS SELECT ord, ord AS label FROM sigs;
CREATE TEMP TABLE edges AS SELECT a AS x, b AS y FROM want UNION ALL SELECT b, a FROM want;
DO $$
BEGIN
  LOOP
    UPDATE labels l SET label = m.label
    FROM (SELECT e.x, min(n.label) AS label FROM edges e JOIN labels n ON n.ord = e.y GROUP BY e.x) m
    WHERE m.x = l.ord AND m.label < l.label;
    EXIT WHEN NOT FOUND;
  END LOOP;
END $$;
CREATE TEMP TABLE components AS
  SELECT s.key, r.key AS representative, count(*) OVER (PARTITION BY l.label) AS cluster_size
  FROM labels l JOIN sigs s ON s.ord = l.ord JOIN sigs r ON r.ord = l.label;
CREATE TEMP TABLE clusters AS SELECT * FROM simhash_clusters('stories', verify => false);
CREATE TABLE mh_clusters_check AS
  SELECT (SELECT count(*) FROM clusters) AS rows, (SELECT count(DISTINCT key) FROM clusters) AS keys,
         (SELECT count(DISTINCT representative) FROM components) AS components,
         (SELECT max(cluster_size) FROM components) AS largest,
         (SELECT count(*) FROM (SELECT * FROM clusters EXCEPT SELECT * FROM components) x) AS differ;
SQL
IFS='|' read -r want near with_distance extra missed < <(qn "$COORDINATOR" -c "SELECT want, near, with_distance, extra, missed FROM mh_pairs_check")
measure "minhash: pairs by brute force (below similarity 0.6)" "$want ($near)"
((want > 100 && near > 0)) || fail "too few pairs ($want, $near below 0.6) to show anything"
expect "minhash: simhash_pairs equals brute force: none extra, none missed, similarity and no distance" "$extra|$missed|$with_distance" "0|0|0"
IFS='|' read -r crows ckeys components largest differ < <(qn "$COORDINATOR" -c "SELECT rows, keys, components, largest, differ FROM mh_clusters_check")
measure "minhash: clusters by brute force (rows in the largest)" "$components ($largest)"
((largest > 2)) || fail "the clusters are too small ($largest) to show anything"
expect "minhash: simhash_clusters equals the components of the brute force's pairs, every row once" \
    "$crows|$ckeys|$differ" "$(qn "$COORDINATOR" -c "SELECT count(*) FROM stories")|$(qn "$COORDINATOR" -c "SELECT count(*) FROM stories")|0"

# Verified (on the coordinator, where MinHash's candidates are; verify => true, as stories is attached
# without): the texts of the candidates read by key from the shards; the same pairs, exact
# similarities and clusters as a local copy's.
qn "$COORDINATOR" >/dev/null <<'SQL'
CREATE TABLE stories_local AS SELECT site, id, body FROM stories;
ALTER TABLE stories_local ADD PRIMARY KEY (site, id);
SELECT simhash_attach('stories_local', 'body', method => 'minhash');
CREATE TABLE mh_verify_check AS
  SELECT (SELECT count(*) FROM simhash_pairs('stories_local')) AS pairs,
         (SELECT count(*) FROM simhash_pairs('stories_local') WHERE similarity < 0.5 OR distance IS NOT NULL) AS wrong,
         (SELECT count(*) FROM (SELECT * FROM simhash_pairs('stories', verify => true) EXCEPT ALL SELECT * FROM simhash_pairs('stories_local')) x)
         + (SELECT count(*) FROM (SELECT * FROM simhash_pairs('stories_local') EXCEPT ALL SELECT * FROM simhash_pairs('stories', verify => true)) x) AS pairs_differ,
         (SELECT count(*) FROM (SELECT * FROM simhash_clusters('stories', verify => true) EXCEPT SELECT * FROM simhash_clusters('stories_local')) x)
         + (SELECT count(*) FROM (SELECT * FROM simhash_clusters('stories_local') EXCEPT SELECT * FROM simhash_clusters('stories', verify => true)) x) AS clusters_differ;
DROP TABLE stories_local;
SQL
IFS='|' read -r mpairs mwrong mpdiffer mcdiffer < <(qn "$COORDINATOR" -c "SELECT pairs, wrong, pairs_differ, clusters_differ FROM mh_verify_check")
measure "minhash: verified pairs (one node)" "$mpairs"
((mpairs > 100)) || fail "minhash: too few verified pairs ($mpairs) to show anything"
expect "minhash: verified pairs and clusters of the distributed table equal one node's (below 0.5 or with a distance, pairs, clusters differing)" \
    "$mwrong|$mpdiffer|$mcdiffer" "0|0|0"

qn "$COORDINATOR" -c "SELECT simhash_detach('stories')" >/dev/null
expect "minhash: simhash_detach removes the columns, the GIN index and the trigger from every shard" \
    "$(qn "$COORDINATOR" -c "SELECT count(*) FILTER (WHERE result = '0|0|0') FROM run_command_on_shards('stories', \$\$
        SELECT (SELECT count(*) FROM pg_attribute WHERE attrelid = '%1\$s'::regclass AND attname LIKE 'body\\_%%' AND NOT attisdropped)
               || '|' || (SELECT count(*) FROM pg_index WHERE indrelid = '%1\$s'::regclass AND NOT indisprimary)
               || '|' || (SELECT count(*) FROM pg_trigger WHERE tgrelid = '%1\$s'::regclass AND NOT tgisinternal)\$\$)")" 8
expect "... and from the distributed table; a repost is written now" \
    "$(qn "$COORDINATOR" -c "SELECT string_agg(attname, ',' ORDER BY attnum) || '|' || (SELECT count(*) FROM simhash_attachments() WHERE table_name = 'stories'::regclass)
                             FROM pg_attribute WHERE attrelid = 'stories'::regclass AND attnum > 0 AND NOT attisdropped"
       sqlstate "$DB" "INSERT INTO stories VALUES ($zh_site, $((zh_id + 100000)), \$r\$$zh_repost\$r\$)")" "site,id,body|0
00000"

echo "-- verification on the shards (issue 43): the trigger and lookups judge candidates by their texts"
# vposts: SimHash with 0.2.0's options at max_distance 16, where a text's words in reverse order have
# the same fingerprint and no shingle in common with it; verified (the default) on the shard where
# the site's rows are.
qn "$COORDINATOR" >/dev/null <<'SQL'
SET citus.shard_count = 8;
CREATE TABLE vposts (site int, id bigint, body text, PRIMARY KEY (site, id));
SELECT create_distributed_table('vposts', 'site');
SELECT simhash_attach('vposts', 'body', on_duplicate => 'error', scope => 'site', max_distance => 16,
                      tokenizer => 'word', weighting => 'tf', stopwords => false);
INSERT INTO vposts VALUES (1, 1, 'The city council approved the budget for protected bike lanes on Monday after a long hearing.'),
                          (1, 2, 'Volunteers hauled half a ton of trash from the beach at Sandy Point on Saturday morning.');
CREATE FUNCTION reversed_words(t text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT array_to_string(array(SELECT w FROM unnest(string_to_array(t, ' ')) WITH ORDINALITY u(w, n) ORDER BY n DESC), ' ')
$$;
SQL
expect "verified: attached with verify, threshold 0.4" \
    "$(qn "$COORDINATOR" -c "SELECT verify || '|' || threshold FROM simhash_attachments() WHERE table_name = 'vposts'::regclass")" "true|0.4"
expect "verified: a near-duplicate in the site is rejected (23505)" \
    "$(sqlstate "$DB" "INSERT INTO vposts VALUES (1, 3, 'The city council approved the budget for protected bike lanes on Monday after a long hearing!')")" 23505
expect "verified: the words of row (1, 1) reversed, at distance 0 and similarity 0, are written" \
    "$(qn "$COORDINATOR" -c "INSERT INTO vposts SELECT 1, 4, reversed_words(body) FROM vposts WHERE site = 1 AND id = 1" \
        -c "SELECT hamming(a.body_simhash, b.body_simhash) || '|' || shingle_similarity(a.body, b.body)
            FROM vposts a, vposts b WHERE a.site = 1 AND a.id = 1 AND b.site = 1 AND b.id = 4")" "0|0"
qn "$COORDINATOR" -c "SELECT simhash_set_verify('vposts', false)" >/dev/null
# (INSERT ... VALUES: Citus reports a shard's error of an INSERT ... SELECT as XX000.)
reversed2=$(qn "$COORDINATOR" -c "SELECT reversed_words(body) FROM vposts WHERE site = 1 AND id = 2")
expect "simhash_set_verify(false): the triggers on every shard decide on the fingerprint alone (23505)" \
    "$(sqlstate "$DB" "INSERT INTO vposts VALUES (1, 5, \$r\$$reversed2\$r\$)")" 23505
qn "$COORDINATOR" -c "SELECT simhash_set_verify('vposts', true)" >/dev/null
expect "simhash_set_verify(true): verified again, the reversed text is written" \
    "$(sqlstate "$DB" "INSERT INTO vposts VALUES (1, 5, \$r\$$reversed2\$r\$)")" 00000
expect "... every shard's trigger records it" \
    "$(qn "$COORDINATOR" -c "SELECT count(*) FILTER (WHERE result = '1') FROM run_command_on_shards('vposts', \$\$
        SELECT count(*) FROM pg_trigger t WHERE t.tgrelid = '%1\$s'::regclass AND t.tgfoid = 'simhash_trigger'::regproc
          AND encode(t.tgargs, 'escape') LIKE '%%verify%%'\$\$)")" 8
body1=$(qn "$COORDINATOR" -c "SELECT body FROM vposts WHERE site = 1 AND id = 1")
expect "verified lookups from the coordinator: the row itself (similarity 1), not its reversed words" \
    "$(qn "$COORDINATOR" -v body="$body1" <<'SQL'
SELECT string_agg((n.item).id || ':' || n.distance || ':' || n.similarity, ' ' ORDER BY (n.item).id)
FROM simhash_near_duplicates(NULL::vposts, :'body') n;
SQL
)" "1:0:1"
expect "... and with verify => false both, without a similarity" \
    "$(qn "$COORDINATOR" -v body="$body1" <<'SQL'
SELECT string_agg((n.item).id || ':' || n.distance || ':' || coalesce(n.similarity::text, '-'), ' ' ORDER BY (n.item).id)
FROM simhash_near_duplicates(NULL::vposts, :'body', verify => false) n;
SQL
)" "1:0:- 4:0:-"

# vstories: the MinHash stories, verified: a repost is rejected with its exact similarity; lookups
# from the coordinator equal the brute force of the verified contract over every shard (shares a
# band, estimate at least 0.3 so that the text is read, exact similarity at least 0.5).
qn "$COORDINATOR" >/dev/null <<'SQL'
SET citus.shard_count = 8;
CREATE TABLE vstories (site int, id bigint, body text, PRIMARY KEY (site, id));
SELECT create_distributed_table('vstories', 'site');
INSERT INTO vstories SELECT site, id, body FROM articles;
SELECT simhash_attach('vstories', 'body', method => 'minhash', on_duplicate => 'error', scope => 'site');
SQL
expect "verified minhash: attached with verify, threshold 0.5" \
    "$(qn "$COORDINATOR" -c "SELECT verify || '|' || threshold FROM simhash_attachments() WHERE table_name = 'vstories'::regclass")" "true|0.5"
vrepost=$(qn "$COORDINATOR" <<<"SELECT '【转载】' || body || '（来源：本地日报）' FROM vstories WHERE site = $zh_site AND id = $zh_id")
vdetail=$(error_text "$DB" "INSERT INTO vstories VALUES ($zh_site, $((zh_id + 100000)), \$r\$$vrepost\$r\$)")
expect "verified minhash: the repost's DETAIL names its source with the exact similarity of the texts" \
    "$(sed -n 's/^DETAIL:  Key (site, id)=(\([0-9]*\), \([0-9]*\)) has similarity \([0-9.]*\) (threshold 0\.5)\.$/\1|\2|\3/p' <<<"$vdetail")" \
    "$(qn "$COORDINATOR" -v r="$vrepost" <<SQL
SELECT site || '|' || id || '|' || to_char(shingle_similarity(body, :'r'), 'FM0.000') FROM vstories WHERE site = $zh_site AND id = $zh_id;
SQL
)"
qn "$COORDINATOR" >/dev/null <<'SQL'
CREATE TABLE vlookup_check AS SELECT 0 AS queries, 0 AS found, 0 AS mismatches, 0 AS dropped;
DO $$
DECLARE
  query text;
  sig bytea;
  bands bigint[];
  got text[];
  want text[];
  n int := 0;
  nfound int := 0;
  bad int := 0;
  ndropped int := 0;
  c int;
BEGIN
  FOR query IN SELECT q FROM mh_queries ORDER BY k LOOP
    sig := minhash(query);
    bands := minhash_bands(sig);
    SELECT coalesce(array_agg(ROW((x.item).site, (x.item).id)::text || ':' || x.similarity ORDER BY (x.item).site, (x.item).id), '{}')
    INTO got FROM simhash_near_duplicates(NULL::vstories, query) x;
    SELECT coalesce(array_agg(ROW(s.site, s.id)::text || ':' || shingle_similarity(s.body, query) ORDER BY s.site, s.id), '{}') INTO want
    FROM vstories s
    WHERE minhash_similarity(s.body_minhash, sig) >= 0.3 AND shingle_similarity(s.body, query) >= 0.5
      AND EXISTS (SELECT FROM unnest(s.body_lsh, bands) u(p, r) WHERE p = r);
    n := n + 1;
    nfound := nfound + cardinality(want);
    IF got IS DISTINCT FROM want THEN
      bad := bad + 1;
      RAISE WARNING 'verified minhash lookup of %: got %, want %', query, got, want;
    END IF;
    -- Rows the estimate alone would have returned that the texts do not support.
    SELECT count(*) INTO c FROM vstories s
    WHERE minhash_similarity(s.body_minhash, sig) >= 0.5 AND shingle_similarity(s.body, query) < 0.5
      AND EXISTS (SELECT FROM unnest(s.body_lsh, bands) u(p, r) WHERE p = r);
    ndropped := ndropped + c;
  END LOOP;
  UPDATE vlookup_check SET queries = n, found = nfound, mismatches = bad, dropped = ndropped;
END $$;
SQL
IFS='|' read -r vlookups vfound vmismatches vdropped < <(qn "$COORDINATOR" -c "SELECT queries, found, mismatches, dropped FROM vlookup_check")
measure "verified minhash: lookups checked against the verified brute force" "$vlookups lookups, $vfound rows found, $vdropped estimated matches the texts do not support"
((vfound > vlookups)) || fail "the verified lookups found too few rows ($vfound) to show anything"
expect "verified minhash: simhash_near_duplicates(text) equals the verified brute force over all shards (rows, exact similarity)" "$vmismatches" 0

echo "-- read paths checked as a SELECT would be: privileges and row-level security (issue 33)"
# Copies of the articles, attached with SimHash (guarded) and with MinHash (guarded_mh). Roles made
# on the coordinator (Citus makes them, their grants and the policies on the workers and shards):
# guard_outsider has no SELECT, guard_reader SELECT, guard_sites SELECT under a policy that shows it
# sites 1 and 6 only (the planted near-duplicates pair rows of these sites with each other and with
# rows it may not see), guard_keys SELECT on the key and fingerprint columns only. All of them may
# CREATE in the schema, so that simhash_pairs may pair on the workers for them.
qn "$COORDINATOR" >/dev/null <<'SQL'
SET citus.shard_count = 8;
CREATE TABLE guarded (site int, id bigint, body text, PRIMARY KEY (site, id));
SELECT create_distributed_table('guarded', 'site');
INSERT INTO guarded SELECT site, id, body FROM articles;
SELECT simhash_attach('guarded', 'body');
CREATE TABLE guarded_mh (site int, id bigint, body text, PRIMARY KEY (site, id));
SELECT create_distributed_table('guarded_mh', 'site');
INSERT INTO guarded_mh SELECT site, id, body FROM articles;
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

echo "-- a registry attachment made by 0.3.0, after ALTER EXTENSION simhash_ext UPDATE to the current version"
# In a database of its own: simhash_ext 0.3.0 from the base install script and the update scripts
# up to 0.3.0 (docs/ARCHITECTURE.md §12.1), on the library installed now, as after installing a new
# version over 0.3.0 on every node.
UP_DB=simhash_up
qu() { DB=$UP_DB qn "$@"; }
TARGET=$(sed -n "s/^default_version *= *'\(.*\)'/\1/p" "$CITUS_EXTDIR/simhash_ext.control")
BASE=$(base_version)
install_extension_file "$ROOT/sql/simhash_ext--$BASE.sql" "simhash_ext--$BASE.sql"
[ "$BASE" == 0.3.0 ] || [ ! -e "$CITUS_EXTDIR/simhash_ext--0.3.0.sql" ] ||
    fail "$CITUS_EXTDIR holds an install script of 0.3.0 (an older checkout's), which CREATE EXTENSION would run instead of the update scripts: install_extension (scripts/common.sh) removes it"
citus_database "$UP_DB"
qu "$COORDINATOR" -c "CREATE EXTENSION simhash_ext VERSION '0.3.0'"
versions() {
    qu "$COORDINATOR" -c "SELECT (SELECT extversion FROM pg_extension WHERE extname = 'simhash_ext') || ',' || string_agg(result, ',' ORDER BY nodeport)
                          FROM run_command_on_workers(\$\$SELECT extversion FROM pg_extension WHERE extname = 'simhash_ext'\$\$)"
}
expect "0.3.0 on the coordinator and both workers" "$(versions)" "0.3.0,0.3.0,0.3.0"
qu "$COORDINATOR" >/dev/null <<'SQL'
SET citus.shard_count = 8;
CREATE TABLE upgraded (site int, id bigint, body text, note text DEFAULT 'none', PRIMARY KEY (site, id));
SELECT create_distributed_table('upgraded', 'site');
INSERT INTO upgraded VALUES (1, 1, 'The city council approved the budget for protected bike lanes on Monday.');
SELECT simhash_attach('upgraded', 'body', on_duplicate => 'error', registry => true);
INSERT INTO upgraded_body_checked (site, id, body) VALUES (2, 2, 'Volunteers hauled half a ton of trash from the beach at Sandy Point on Saturday.');
INSERT INTO upgraded_body_checked (site, id, body) VALUES (3, 3, 'Ferry service to the islands resumes after the storm damaged two piers.');
SQL
# The view's trigger as 0.3.0 makes it: the settings and registry names as 11 arguments; and no
# default on upgraded.body_registered.
view_trigger="SELECT t.tgnargs || '|' || (SELECT count(*) FROM pg_attrdef d JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
                                              WHERE d.adrelid = 'upgraded'::regclass AND a.attname = 'body_registered')
              FROM pg_trigger t WHERE t.tgrelid = 'upgraded_body_checked'::regclass"
expect "0.3.0: the view's trigger has 11 arguments, body_registered no default" "$(qu "$COORDINATOR" -c "$view_trigger")" "11|0"
expect "0.3.0: three rows in the table, each filed in the registry under 8 buckets" \
    "$(qu "$COORDINATOR" -c "SELECT (SELECT count(*) FROM upgraded WHERE body_registered = body_simhash) || '|' || (SELECT count(*) FROM upgraded_body_registry)")" \
    "3|24"
expect "0.3.0: a near-duplicate through the view is rejected (23505)" \
    "$(sqlstate "$UP_DB" "INSERT INTO upgraded_body_checked (site, id, body)
                          VALUES (4, 4, 'The city council approved the budget for protected bike lanes on Monday!')")" 23505

# Citus runs ALTER EXTENSION ... UPDATE on the coordinator and then on every worker, in one
# distributed transaction.
expect "ALTER EXTENSION simhash_ext UPDATE on the coordinator goes through, naming the registry tables it leaves" \
    "$(error_text "$UP_DB" "ALTER EXTENSION simhash_ext UPDATE" | grep -o 'no longer reads or writes table public.upgraded_body_registry[_a-z]*' | sort | tr '\n' ' ')" \
    "no longer reads or writes table public.upgraded_body_registry no longer reads or writes table public.upgraded_body_registry_locks "
expect "ALTER EXTENSION UPDATE on the coordinator: $TARGET there and on both workers" "$(versions)" "$TARGET,$TARGET,$TARGET"
expect "the view of 0.3.0 is kept, its trigger with its 11 arguments; body_registered has a default now" \
    "$(qu "$COORDINATOR" -c "$view_trigger")" "11|1"
expect "a near-duplicate through the old view is still rejected (23505)" \
    "$(sqlstate "$UP_DB" "INSERT INTO upgraded_body_checked (site, id, body)
                          VALUES (5, 5, 'Volunteers hauled half a ton of trash from the beach at Sandy Point on Saturday!')")" 23505
expect_contains "... naming the key of the row it duplicates" \
    "$(error_text "$UP_DB" "INSERT INTO upgraded_body_checked (site, id, body)
                            VALUES (5, 5, 'Volunteers hauled half a ton of trash from the beach at Sandy Point on Saturday!')")" \
    "DETAIL:  Key (site, id)=(2, 2) is at Hamming distance"
expect "... which is there" "$(qu "$COORDINATOR" -c "SELECT count(*) FROM upgraded WHERE site = 2 AND id = 2")" 1
expect "a new text through the old view goes in, registered; 0.3.0's registry table is no longer written" \
    "$(qu "$COORDINATOR" -c "INSERT INTO upgraded_body_checked (site, id, body)
                             VALUES (6, 6, 'A quiet week in the valley: cranes return to the wetlands as spring arrives.')" \
        -c "SELECT (SELECT body_registered = simhash(body) AND body_simhash = simhash(body) FROM upgraded WHERE site = 6 AND id = 6)
                   || '|' || (SELECT count(*) FROM upgraded_body_registry WHERE row_key = '6, 6')")" "true|0"
expect "simhash_internal.registry_shards() gives the updated attachment its table of shards; a near-duplicate is still rejected" \
    "$(qu "$COORDINATOR" -c "SELECT simhash_internal.registry_shards('upgraded', 'body')")|$(sqlstate "$UP_DB" "INSERT INTO upgraded_body_checked (site, id, body)
                          VALUES (5, 55, 'Volunteers hauled half a ton of trash from the beach at Sandy Point on Saturday!')")" "t|23505"
copy_rows=$'7\t7\tThe harbour master closed the port for a day as the gale came in from the north.'
expect "COPY into the table itself is refused on the coordinator (0A000)" \
    "$(sqlstate "$UP_DB" "COPY upgraded (site, id, body) FROM STDIN" <<<"$copy_rows")" 0A000
expect_contains "... its hint naming the old view" \
    "$(error_text "$UP_DB" "COPY upgraded (site, id, body) FROM STDIN" <<<"$copy_rows")" \
    "HINT:  INSERT or COPY through the view public.upgraded_body_checked"
expect "... and nothing of it was written" "$(qu "$COORDINATOR" -c "SELECT count(*) FROM upgraded WHERE id = 7")" 0
# As simhash_attach of the current version leaves it: the same default on the workers' copies of
# the table and on every shard.
registered_default="simhash_internal.registry_unchecked('public.upgraded'::text, 'body'::text, 'public.upgraded_body_checked'::text)"
expect "the same default on both workers' copies of the table and on all 8 shards" \
    "$(qu "$COORDINATOR" -c "SELECT (SELECT count(*) FROM run_command_on_workers(\$\$
              SELECT pg_get_expr(d.adbin, d.adrelid) FROM pg_attrdef d JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
              WHERE d.adrelid = 'upgraded'::regclass AND a.attname = 'body_registered'\$\$) WHERE result = \$d\$$registered_default\$d\$)
            || '|' || (SELECT count(*) FROM run_command_on_shards('upgraded', \$\$
              SELECT pg_get_expr(d.adbin, d.adrelid) FROM pg_attrdef d JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
              WHERE d.adrelid = '%s'::regclass AND a.attname = 'body_registered'\$\$) WHERE result = \$d\$$registered_default\$d\$)")" "2|8"
qu "$COORDINATOR" -c "ALTER TABLE upgraded ADD COLUMN lang text NOT NULL DEFAULT 'en'" >/dev/null
expect "after ADD COLUMN the old view has the new column, with the table's default" \
    "$(qu "$COORDINATOR" -c "SELECT string_agg(a.attname || '=' || coalesce(pg_get_expr(d.adbin, d.adrelid), '-'), ' ' ORDER BY a.attnum)
                             FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
                             WHERE a.attrelid = 'upgraded_body_checked'::regclass AND a.attnum > 0")" \
    "site=- id=- body=- note='none'::text lang='en'::text"
expect "... and an INSERT through it writes the new column, and still checks (23505)" \
    "$(qu "$COORDINATOR" -c "INSERT INTO upgraded_body_checked (site, id, body, lang)
                             VALUES (8, 8, 'Le conseil municipal a voté le budget des pistes cyclables protégées lundi.', 'fr')" \
        -c "SELECT lang FROM upgraded WHERE site = 8 AND id = 8"
       sqlstate "$UP_DB" "INSERT INTO upgraded_body_checked (site, id, body, lang)
                          VALUES (9, 9, 'Le conseil municipal a voté le budget des pistes cyclables protégées lundi !', 'fr')")" \
    "fr
23505"
qu "$COORDINATOR" -c "SELECT simhash_detach('upgraded')" >/dev/null
expect "simhash_detach removes the view, the table of shards, the registry and its lock rows" \
    "$(qu "$COORDINATOR" -c "SELECT count(*) FROM pg_class WHERE relname LIKE 'upgraded\_body\_%'")" 0
expect "... and the columns and triggers, from the table and every shard" \
    "$(qu "$COORDINATOR" -c "SELECT string_agg(attname, ',' ORDER BY attnum) FROM pg_attribute WHERE attrelid = 'upgraded'::regclass AND attnum > 0 AND NOT attisdropped" \
        -c "SELECT count(*) FILTER (WHERE result = '0|0') FROM run_command_on_shards('upgraded', \$\$
              SELECT (SELECT count(*) FROM pg_attribute WHERE attrelid = '%1\$s'::regclass AND attname LIKE 'body\\_%%' AND NOT attisdropped)
                     || '|' || (SELECT count(*) FROM pg_trigger WHERE tgrelid = '%1\$s'::regclass AND NOT tgisinternal)\$\$)")" \
    "site,id,body,note,lang
8"
