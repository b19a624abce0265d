#!/usr/bin/env bash
# Allocation failure (docs/ARCHITECTURE.md §11.3): with the server's address space limited (ulimit -v), fingerprinting a
# text with millions of distinct features runs out of memory. That must end in ERROR 53200 in that
# session only: the session goes on, other sessions keep their connections, the server does not
# restart. (Rust aborts the process on an allocation failure by default, which would make the
# postmaster reset every backend; see the allocator in src/errors.rs.)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PORT=54348
DIR=/tmp/simhash-robust-oom
LIMIT_MB=700
start_server "$DIR" "$PORT" shared_buffers=16MB
on_exit_stop "$DIR"

# 6 million distinct words (about 200 MB), made before the limit is set.
q postgres >/dev/null <<'SQL'
CREATE EXTENSION simhash_ext;
CREATE TABLE words AS SELECT string_agg(md5(i::text), ' ') AS body FROM generate_series(1, 6000000) i;
SQL
measure "text size, bytes (6 million distinct words)" "$(q postgres -c "SELECT octet_length(body) FROM words")"

stop_server "$DIR"
runuser -u postgres -- bash -c "ulimit -v $((LIMIT_MB * 1024)) && exec '$PG_BIN/pg_ctl' -D '$DIR/data' -l '$DIR/server.log' \
    -o '-p $PORT -k /tmp -c listen_addresses=127.0.0.1 -c shared_buffers=16MB' -w start" >/dev/null
postmaster_pid=$(head -1 "$DIR/data/postmaster.pid")
expect "the server runs with an address space limit of $LIMIT_MB MB" \
    "$(awk '/Max address space/ { print $4 }' "/proc/$postmaster_pid/limits")" $((LIMIT_MB * 1024 * 1024))
started=$(q postgres -c "SELECT pg_postmaster_start_time()")

# A bystander session that must keep its connection.
"$PSQL" -X -q -At -h /tmp -p "$PORT" -U postgres -d postgres \
    -c "SET application_name = 'bystander'" -c "SELECT pg_sleep(120)" >/dev/null 2>&1 &
bystander_client=$!
for _ in $(seq 100); do
    bystander=$(q postgres -c "SELECT pid FROM pg_stat_activity WHERE application_name = 'bystander'")
    [ -n "$bystander" ] && break
    sleep 0.05
done
[ -n "$bystander" ] || fail "the bystander session did not start"

run_out_of_memory() { # LABEL SQL
    "$PSQL" -X -q -At -h /tmp -p "$PORT" -U postgres -d postgres -v VERBOSITY=verbose >"$DIR/oom.out" 2>&1 <<SQL || true
SELECT simhash('warm up', tokenizer => 'jieba', weighting => 'tfidf') IS NOT NULL;
$2;
SELECT 'alive ' || simhash('the session goes on after the error', tokenizer => 'word');
SQL
    local report
    report=$(grep -E '^(ERROR|FATAL|DETAIL):' "$DIR/oom.out" | tr '\n' ' ' || true)
    measure "$1: outcome" "${report:-no error}"
    expect_match "$1: ends in ERROR 53200 (out of memory)" "$report" '^ERROR: +53200: out of memory'
    expect_match "$1: the same session goes on" "$(cat "$DIR/oom.out")" 'alive -?[0-9]+'
}
t0=$(now_ms)
run_out_of_memory "simhash_features() of 6 million distinct words" \
    "SELECT count(*) FROM words, simhash_features(body, tokenizer => 'word')"
run_out_of_memory "simhash(weighting => 'tfidf') of 6 million distinct words" \
    "SELECT simhash(body, tokenizer => 'word', weighting => 'tfidf') FROM words"
measure "both out-of-memory cases (s)" "$(awk -v ms=$(($(now_ms) - t0)) 'BEGIN { printf "%.1f", ms / 1000 }')"

expect "the server did not restart" "$(q postgres -c "SELECT pg_postmaster_start_time()")" "$started"
expect "the bystander session kept its connection" \
    "$(q postgres -c "SELECT count(*) FROM pg_stat_activity WHERE pid = $bystander")" 1
if grep -qE 'terminated by signal|was terminated' "$DIR/server.log"; then
    fail "a backend crashed: $(grep -E 'terminated by signal|was terminated' "$DIR/server.log" | head -1)"
fi
pass "no backend crashed (server.log)"
q postgres -c "SELECT pg_terminate_backend($bystander)" >/dev/null
wait "$bystander_client" || true
