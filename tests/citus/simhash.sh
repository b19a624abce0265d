#!/usr/bin/env bash
# simhash_ext on a Citus cluster, SimHash (issue 12): an attached distributed table has its
# fingerprints, band indexes and trigger on every shard; lookups, pairs and clusters from the
# coordinator equal brute force over all shards (on the workers and on the coordinator, unverified
# and verified); what could not be exact is refused with SQLSTATE 0A000 (no scope, a scope that is
# not the distribution column, simhash_lookup_cost, a column rename, pairs without a primary key, a
# reference table); simhash_detach cleans every shard; near-duplicates are rejected exactly per value
# of the distribution column (scope), also under concurrent writers; a table attached before
# create_distributed_table.
#
# A topic of tests/citus/run.sh, which starts the cluster and sources this file (in a subshell, with
# lib.sh's helpers); `bash tests/citus/run.sh NAME` or `bash` this file runs it alone.
[ -n "${CITUS_RUNNER:-}" ] || exec bash "$(dirname "${BASH_SOURCE[0]}")/run.sh" "$(basename "${BASH_SOURCE[0]}" .sh)"

ensure_articles
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
# own topic (verify.sh).
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
ensure_race_texts
for w in $(seq 1 "$WRITERS"); do
    script=$CITUS_DIR/writer$w.sql
    : >"$script"
    for n in $(seq 1 "$TEXTS" | shuf --random-source=<(yes "$w")); do
        printf "BEGIN;\nINSERT INTO posts SELECT 10 + %d %% 3, %d, s || repeat('!', %d) FROM race_texts WHERE n = %d;\nSELECT pg_sleep(0.03);\nCOMMIT;\n" \
            "$n" $((w * 1000 + n)) "$w" "$n" >>"$script"
    done
done
start=$(now_ms)
run_writers writer
measure "concurrent writers: $WRITERS x $TEXTS inserts (ms)" $(($(now_ms) - start))
# Each copy is checked after its write, holding nothing (docs/ARCHITECTURE.md §8.7): two copies
# written before either's search wait for each other, and Citus's deadlock detector ends one (40P01),
# as PostgreSQL's ends one of two unique-key writers that cross.
rejected=$(cat "$CITUS_DIR"/writer*.out | grep -c 'near-duplicate text' || true)
deadlocked=$(cat "$CITUS_DIR"/writer*.out | grep -c 'involved in a distributed deadlock' || true)
others=$(cat "$CITUS_DIR"/writer*.out | grep 'ERROR' | grep -v 'near-duplicate text' |
    grep -v 'involved in a distributed deadlock' | grep -vc 'transaction is aborted' || true)
measure "concurrent writers: copies ended by a deadlock (40P01)" "$deadlocked"
expect "each text committed once per site" \
    "$(qn "$COORDINATOR" -c "SELECT count(*) || '|' || count(DISTINCT simhash(body)) FROM posts WHERE site >= 10")" "$TEXTS|$TEXTS"
expect "every other concurrent copy was rejected with 23505 or ended by a deadlock, and nothing else failed" \
    "$((rejected + deadlocked))|$others" "$(((WRITERS - 1) * TEXTS))|0"

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
