#!/usr/bin/env bash
# simhash_ext on a Citus cluster, the race windows of issue 48 on the shards of a table scoped by its
# distribution column: each shard has the check trigger beside the attachment's trigger, so a write
# is checked after it is written, under a dirty snapshot, and no extension key is held while a
# writer waits for anything.
#
# The window (U1 of issue 48, on a shard): C holds a primary key open; A inserts a text T with the
# same key and waits for C in the unique check, on a worker. Meanwhile an unrelated writer of the
# same site (for MinHash one whose text shares one of T's band lock keys, as ~22 % of unrelated
# texts do) must not wait, no key of the extension may be held on any worker, and B's near-duplicate
# T' of T goes in (A's row is not written yet). When C ends, A's check after its write finds T':
# 23505 in 'error' mode; in 'skip' mode 40001, whose retry skips A's row (its check before the write
# ran before T' was written). One of T and T' commits. Then an attachment made with 0.12.0 gets its
# check trigger through ALTER EXTENSION simhash_ext UPDATE.
#
# A topic of tests/citus/run.sh, which starts the cluster and sources this file (in a subshell, with
# lib.sh's helpers); `bash tests/citus/run.sh windows` or `bash` this file runs it alone.
[ -n "${CITUS_RUNNER:-}" ] || exec bash "$(dirname "${BASH_SOURCE[0]}")/run.sh" "$(basename "${BASH_SOURCE[0]}" .sh)"

echo "-- race windows on shards (scope => the distribution column)"
WIN_T='The city council approved the budget for protected bike lanes on Monday after a long debate.'
qn "$COORDINATOR" -v sample="$(sample_text)" -v t="$WIN_T" >/dev/null <<'SQL'
SET citus.shard_count = 4;
CREATE TABLE win_sh (site int, id bigint, body text, PRIMARY KEY (site, id));
SELECT create_distributed_table('win_sh', 'site');
SELECT simhash_attach('win_sh', 'body', on_duplicate => 'error', scope => 'site');
CREATE TABLE win_mh (site int, id bigint, body text, PRIMARY KEY (site, id));
SELECT create_distributed_table('win_mh', 'site');
SELECT simhash_attach('win_mh', 'body', method => 'minhash', on_duplicate => 'skip', scope => 'site');
-- Unrelated texts of the corpus whose MinHash band lock keys (band b, key mod 128) meet T's.
CREATE TABLE win_unrelated AS
  SELECT s FROM regexp_split_to_table(:'sample', '(?<=[。！？.])\s*') s
  WHERE length(s) > 40 AND shingle_similarity(s, :'t') < 0.1
    AND EXISTS (SELECT FROM unnest(minhash_bands(minhash(:'t'))) WITH ORDINALITY a(k, b)
                JOIN unnest(minhash_bands(minhash(s))) WITH ORDINALITY u(k, b) USING (b)
                WHERE a.k & 127 = u.k & 127)
  LIMIT 2;
INSERT INTO win_sh VALUES (1, 100, 'A wholly different note on the tides of the southern ocean and their long records.');
INSERT INTO win_mh VALUES (1, 100, 'A wholly different note on the tides of the southern ocean and their long records.');
SQL
for t in win_sh win_mh; do
    expect "$t: every shard has the attachment's trigger and its check trigger" \
        "$(qn "$COORDINATOR" -c "SELECT count(*) FILTER (WHERE result = 'simhash_body,simhash_body\$chk') || '/' || count(*)
            FROM run_command_on_shards('$t', \$\$SELECT string_agg(regexp_replace(tgname, '_[0-9]+\$', ''), ',' ORDER BY tgname DESC)
                                             FROM pg_trigger WHERE tgrelid = '%s'::regclass AND NOT tgisinternal\$\$)")" "4/4"
done

# wait_for WHAT SQL: polls the coordinator until SQL returns t (10 s at most).
wait_for() {
    local i
    for i in $(seq 1 100); do
        [ "$(qn "$COORDINATOR" -c "$2")" = t ] && return 0
        sleep 0.1
    done
    fail "$1: not reached within 10 s"
}

# window TABLE UNRELATED_SQL: the window above on TABLE; UNRELATED_SQL is the unrelated write.
window() {
    local t=$1 unrelated=$2 start took
    "$PSQL" -X -q -h /tmp -p "$COORDINATOR" -U postgres -d "$DB" \
        -c "BEGIN; INSERT INTO $t VALUES (1, 1, 'held'); SELECT pg_sleep(4); ROLLBACK;" >"$CITUS_DIR/$t.c.out" 2>&1 &
    wait_for "$t: C holds key (1, 1)" \
        "SELECT bool_or(result::int > 0) FROM run_command_on_workers(\$\$SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%INSERT INTO ${t}_%''held''%'\$\$)"
    "$PSQL" -X -q -h /tmp -p "$COORDINATOR" -U postgres -d "$DB" -v ON_ERROR_STOP=1 \
        -c "INSERT INTO $t VALUES (1, 1, '$WIN_T')" >"$CITUS_DIR/$t.a.out" 2>&1 &
    wait_for "$t: A waits for C in the primary key" \
        "SELECT bool_or(result::int > 0) FROM run_command_on_workers(\$\$SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'transactionid'\$\$)"
    expect "$t: no key of the extension is held on the workers while A waits" \
        "$(qn "$COORDINATOR" -c "SELECT sum(result::int) FROM run_command_on_workers(\$\$SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 21320\$\$)")" 0
    start=$(now_ms)
    qn "$COORDINATOR" -c "$unrelated" >/dev/null
    took=$(($(now_ms) - start))
    measure "$t: the unrelated write beside A's wait (ms)" "$took"
    expect "$t: the unrelated write did not wait for A (under 2 s of C's 4)" "$((took < 2000))" 1
    expect "$t: B's near-duplicate of T goes in while A's row is not written" \
        "$(qn "$COORDINATOR" -c "INSERT INTO $t VALUES (1, 2, '$WIN_T!') RETURNING id")" 2
    wait
}

window win_sh "UPDATE win_sh SET body = 'A second, unrelated note on the migration of cranes over the eastern marshes.' WHERE site = 1 AND id = 100"
expect_contains "win_sh: A's check after its write found B's row: 23505" "$(cat "$CITUS_DIR/win_sh.a.out")" \
    'near-duplicate text in column "body" of relation "win_sh"'
window win_mh "INSERT INTO win_mh SELECT 1, 200 + row_number() OVER (), s FROM win_unrelated"
expect "win_mh: the unrelated writes shared a band lock key with T" \
    "$(qn "$COORDINATOR" -c "SELECT count(*) > 0 FROM win_unrelated")" t
expect_contains "win_mh: A's check after its write found B's row: 40001, a retry skips ('skip')" \
    "$(cat "$CITUS_DIR/win_mh.a.out")" 'could not skip a near-duplicate row of table "win_mh"'
for t in win_sh win_mh; do
    expect "$t: one of T and T' committed in site 1" \
        "$(qn "$COORDINATOR" -c "SELECT string_agg(id::text, ',' ORDER BY id) FROM $t WHERE site = 1 AND body LIKE 'The city council%'")" 2
done

# An attachment made before 0.13.0 has no check trigger on its shards (their writes are checked
# before the write, under keys): ALTER EXTENSION simhash_ext UPDATE on the coordinator makes it,
# and Citus makes it on every shard. A registry attachment keeps its one trigger.
echo "-- race windows on shards: an attachment of 0.12.0 after ALTER EXTENSION simhash_ext UPDATE"
citus_database win_up
DB=win_up qn "$COORDINATOR" >/dev/null <<'SQL'
CREATE EXTENSION simhash_ext VERSION '0.12.0';
SET citus.shard_count = 4;
CREATE TABLE old_scoped (site int, id bigint, body text, PRIMARY KEY (site, id));
SELECT create_distributed_table('old_scoped', 'site');
SELECT simhash_attach('old_scoped', 'body', method => 'minhash', on_duplicate => 'error', scope => 'site');
CREATE TABLE old_registry (site int, id bigint, body text, PRIMARY KEY (site, id));
SELECT create_distributed_table('old_registry', 'site');
SELECT simhash_attach('old_registry', 'body', on_duplicate => 'error', registry => true);
SQL
# shard_triggers TABLE: per shard, its non-internal triggers, without the shard id.
shard_triggers() {
    DB=win_up qn "$COORDINATOR" -c "SELECT string_agg(DISTINCT result, ' ') FROM run_command_on_shards('$1', \$\$
        SELECT string_agg(regexp_replace(tgname, '_[0-9]+\$', ''), ',' ORDER BY tgname DESC)
        FROM pg_trigger WHERE tgrelid = '%s'::regclass AND NOT tgisinternal\$\$)"
}
expect "0.12.0: the scoped attachment's shards have its trigger alone" "$(shard_triggers old_scoped)" simhash_body
DB=win_up qn "$COORDINATOR" -c "ALTER EXTENSION simhash_ext UPDATE" 2>/dev/null
expect "after the update: every shard of the scoped attachment has the check trigger too" \
    "$(shard_triggers old_scoped)" 'simhash_body,simhash_body$chk'
expect "... and the registry's shards keep their one trigger" "$(shard_triggers old_registry)" simhash_body
expect "... and a near-duplicate in one site is rejected after its write (23505)" \
    "$(DB=win_up qn "$COORDINATOR" -c "INSERT INTO old_scoped VALUES (1, 1, '$WIN_T')"
       sqlstate win_up "INSERT INTO old_scoped VALUES (1, 2, '$WIN_T!')")" 23505
