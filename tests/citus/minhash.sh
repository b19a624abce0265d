#!/usr/bin/env bash
# simhash_ext on a Citus cluster, MinHash (method => 'minhash'): the refusals (no scope, a scope
# that is not the distribution column, the registry) and on_duplicate 'none' without scope;
# signatures, band keys and their GIN index on every shard; reposts with a header and footer
# rejected per site, naming the most similar row (also under concurrent writers); lookups, pairs and
# clusters equal to a brute-force scan for "shares a band position and similarity >= 0.5", and
# verified ones to a local copy's; simhash_detach cleans every shard.
#
# A topic of tests/citus/run.sh, which starts the cluster and sources this file (in a subshell, with
# lib.sh's helpers); `bash tests/citus/run.sh NAME` or `bash` this file runs it alone.
[ -n "${CITUS_RUNNER:-}" ] || exec bash "$(dirname "${BASH_SOURCE[0]}")/run.sh" "$(basename "${BASH_SOURCE[0]}" .sh)"

ensure_race_texts

echo "-- MinHash attachments (method => 'minhash') on a distributed table"
# The articles (lib.sh: real sentences in 12 sites, near-duplicates planted across sites), in a table
# of their own. A MinHash near-duplicate shares an LSH band position with the text and reaches the
# threshold (0.5) in estimated similarity (docs/ARCHITECTURE.md §4.5); the brute force below is
# that definition in SQL, over all rows.
copy_articles stories
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
# its own topic (verify.sh).
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

# Concurrent writers, as for SimHash (simhash.sh): WRITERS sessions each write the TEXTS texts of
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
run_writers minhash -v VERBOSITY=verbose
measure "minhash: concurrent writers: $WRITERS x $TEXTS inserts (ms)" $(($(now_ms) - start))
# Checked after the write: two copies written before either's search end in a deadlock (40P01).
rejected=$(cat "$CITUS_DIR"/minhash*.out | grep -c 'ERROR:  23505: near-duplicate text' || true)
deadlocked=$(cat "$CITUS_DIR"/minhash*.out | grep -Ec 'ERROR:  40P01: |involved in a distributed deadlock' || true)
others=$(cat "$CITUS_DIR"/minhash*.out | grep 'ERROR' | grep -v '23505: near-duplicate text' | grep -Ev 'ERROR:  40P01: |involved in a distributed deadlock' |
    grep -vc 'transaction is aborted' || true)
measure "minhash: concurrent writers: versions ended by a deadlock (40P01)" "$deadlocked"
expect "minhash: each text committed once in its site, one writer's version" \
    "$(qn "$COORDINATOR" -c "SELECT count(*) || '|' || count(DISTINCT id % 1000) FROM stories WHERE site BETWEEN 20 AND 22")" "$TEXTS|$TEXTS"
expect "minhash: every other concurrent version was rejected with 23505 or ended by a deadlock, and nothing else failed" "$((rejected + deadlocked))|$others" \
    "$(((WRITERS - 1) * TEXTS))|0"

echo "-- MinHash lookups, pairs and clusters from the coordinator equal brute force over every shard"
# The query texts: mh_queries (lib.sh).
ensure_mh_queries
qn "$COORDINATOR" >/dev/null <<'SQL'
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
