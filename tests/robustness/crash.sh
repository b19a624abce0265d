#!/usr/bin/env bash
# Crashes (issue 4): under a concurrent insert load (pgbench, custom script) into a table attached in
# 'error' mode, one backend is killed with SIGKILL. The postmaster resets every backend and recovers;
# afterwards every transaction pgbench saw committed is there, every index passes amcheck's
# bt_index_check (heapallindexed), fingerprints and bands are consistent, and the trigger still
# rejects near-duplicates.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PORT=54347
DIR=/tmp/simhash-robust-crash
CLIENTS=4
start_server "$DIR" "$PORT" restart_after_crash=on
on_exit_stop "$DIR"

q postgres >/dev/null <<'SQL'
CREATE EXTENSION simhash_ext;
CREATE EXTENSION amcheck;
CREATE TABLE load (id bigint PRIMARY KEY, client int NOT NULL, seq int NOT NULL, body text NOT NULL);
-- max_distance 3: texts of a few random hex words have few features, and some would fall within 7 bits.
SELECT simhash_attach('load', 'body', max_distance => 3, on_duplicate => 'error');
SQL
# Each transaction inserts (client, seq) with seq counting the client's transactions from 1, and a
# text of random words (so no two rows are near-duplicates).
cat >"$DIR/insert.sql" <<'SQL'
\set seq :seq + 1
INSERT INTO load (id, client, seq, body)
VALUES (:client_id * 100000000 + :seq, :client_id, :seq,
        'load ' || md5(random()::text) || ' ' || md5(random()::text) || ' ' || md5(random()::text) || ' '
        || md5(random()::text) || ' ' || md5(random()::text) || ' ' || md5(random()::text));
SQL
chmod 644 "$DIR/insert.sql"

run_pgbench() { # SECONDS LOG_PREFIX [FIRST_SEQ]
    (cd "$DIR" && runuser -u postgres -- "$PG_BIN/pgbench" -n -h /tmp -p "$PORT" -U postgres -c "$CLIENTS" -j 2 \
        -T "$1" -D seq="${3:-0}" -f insert.sql -l --log-prefix="$2" postgres) >"$DIR/$2.out" 2>&1
}

# A short clean run first: pgbench keeps :seq per client across transactions, as the check needs.
run_pgbench 2 warmup || fail "pgbench warm-up failed: $(tail -5 "$DIR/warmup.out")"
expect "warm-up: seq runs 1..n for every client" \
    "$(q postgres -c "SELECT bool_and(n = m) FROM (SELECT client, count(*) n, max(seq) m FROM load GROUP BY client) s")" t
q postgres -c "TRUNCATE load"

postmaster_pid=$(head -1 "$DIR/data/postmaster.pid")
run_pgbench 15 crash &
bench=$!
sleep 4
victim=$(q postgres -c "SELECT pid FROM pg_stat_activity WHERE application_name = 'pgbench'
                        ORDER BY state = 'active' DESC, pid LIMIT 1")
[ -n "$victim" ] || fail "no pgbench backend to kill"
rows_before=$(q postgres -c "SELECT count(*) FROM load")
t_kill=$(now_ms)
kill -KILL "$victim"
measure "rows committed when the backend was killed (about)" "$rows_before"
wait "$bench" || true
# The server comes back by itself.
for _ in $(seq 600); do
    q postgres -c "SELECT 1" >/dev/null 2>&1 && break
    sleep 0.1
done
t_ready=$(now_ms)
expect "the server accepts connections again" "$(q postgres -c "SELECT 1")" 1
measure "from SIGKILL to accepting connections (s)" "$(awk -v ms=$((t_ready - t_kill)) 'BEGIN { printf "%.1f", ms / 1000 }')"
expect "the postmaster survived (same pid)" "$(head -1 "$DIR/data/postmaster.pid")" "$postmaster_pid"
expect_contains "the server log shows the killed backend" "$(cat "$DIR/server.log")" "was terminated by signal 9: Killed"
expect_contains "... and the crash recovery" "$(cat "$DIR/server.log")" "all server processes terminated; reinitializing"
expect_match "pgbench saw its clients cut off" "$(cat "$DIR/crash.out")" "(aborted|server closed the connection|terminat)"

# Every transaction pgbench logged as done (after its COMMIT returned) is in the table: for a client
# that logged L transactions, seq 1..L are there.
logged=$(cat "$DIR"/crash.[0-9]* 2>/dev/null | awk 'NF >= 6 && $3 != "failed" && $3 != "skipped" { n[$1]++ }
    END { for (c in n) print c, n[c] }' | sort -n)
[ -n "$logged" ] || fail "pgbench logged no transaction"
total=0
missing=0
while read -r client count; do
    total=$((total + count))
    have=$(q postgres -c "SELECT count(*) FROM load WHERE client = $client AND seq BETWEEN 1 AND $count")
    missing=$((missing + count - have))
done <<<"$logged"
measure "transactions pgbench saw committed" "$total"
measure "rows in the table after recovery" "$(q postgres -c "SELECT count(*) FROM load")"
expect "every committed transaction's row is there after recovery" "$missing" 0

expect "every index passes bt_index_check(heapallindexed)" \
    "$(q postgres -c "SELECT sum(length(bt_index_check(indexrelid, true)::text) + 1) || '/' || count(*)
                      FROM pg_index WHERE indrelid = 'load'::regclass")" 5/5
expect "fingerprints and bands are consistent" \
    "$(q postgres -c "SELECT count(*) FROM load WHERE body_simhash IS DISTINCT FROM simhash(body)
                      OR ARRAY[body_band0, body_band1, body_band2, body_band3] IS DISTINCT FROM simhash_bands(body_simhash)")" 0
expect "the trigger still rejects a near-duplicate (23505)" \
    "$(sqlstate postgres "INSERT INTO load SELECT 1, 1, 0, body || '!' FROM load ORDER BY id LIMIT 1")" 23505
run_pgbench 3 after 50000000 || fail "pgbench after recovery failed: $(tail -5 "$DIR/after.out")"
pass "the insert load runs again after recovery"
measure "pgbench after recovery" "$(grep -E '^tps' "$DIR/after.out" | head -1)"
