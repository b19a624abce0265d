#!/usr/bin/env bash
# simhash_ext on a Citus cluster, verification on the shards (issue 43): a SimHash attachment
# verified (the default) on the shard rejects a near-duplicate and writes a text of the same
# fingerprint but no shingle in common; simhash_set_verify reaches every shard's trigger; verified
# lookups from the coordinator; a verified MinHash attachment names a repost's source with the exact
# similarity, and its lookups equal the verified brute force over every shard.
#
# A topic of tests/citus/run.sh, which starts the cluster and sources this file (in a subshell, with
# lib.sh's helpers); `bash tests/citus/run.sh NAME` or `bash` this file runs it alone.
[ -n "${CITUS_RUNNER:-}" ] || exec bash "$(dirname "${BASH_SOURCE[0]}")/run.sh" "$(basename "${BASH_SOURCE[0]}" .sh)"

ensure_mh_queries

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
copy_articles vstories
qn "$COORDINATOR" >/dev/null <<'SQL'
SELECT simhash_attach('vstories', 'body', method => 'minhash', on_duplicate => 'error', scope => 'site');
SQL
# A Chinese row, the one the MinHash topic reposts.
IFS='|' read -r zh_site zh_id < <(qn "$COORDINATOR" -c "SELECT site, id FROM vstories WHERE body ~ '^[一-龥]' AND body !~ '[A-Za-z]{3}' ORDER BY id LIMIT 1")
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
