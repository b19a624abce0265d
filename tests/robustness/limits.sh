#!/usr/bin/env bash
# Huge inputs and cancellation (docs/ARCHITECTURE.md §2.2): a 100 MB text is fingerprinted with memory bounded by about
# one copy of it (peak RSS of the backend reported against the text size); a text near the 1 GB
# varlena limit ends in a result or a clean ERROR, never a crash; statement_timeout and
# pg_cancel_backend stop a long simhash(), simhash_features() or trigger within a second.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PORT=54342
DIR=/tmp/simhash-robust-limits
# Small shared buffers: the backend's RSS counts the shared pages it touches.
start_server "$DIR" "$PORT" shared_buffers=16MB max_wal_size=2GB
on_exit_stop "$DIR"
OUT=$DIR/out
mkdir -p "$OUT"
chmod 777 "$OUT"

q postgres -c "CREATE DATABASE rb_latin1 TEMPLATE template0 ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C'"
for db in postgres rb_latin1; do
    q "$db" -c "CREATE EXTENSION simhash_ext" -c "CREATE TABLE big (id int PRIMARY KEY, body text)" \
        -c "ALTER TABLE big ALTER body SET STORAGE EXTERNAL"
done
MB=100
SIZE=$((MB * 1000 * 1000))
# Real sentences, Chinese and English, repeated to 100 MB, stored out of line and uncompressed.
q postgres -v sample="$(sample_text)" >/dev/null <<SQL
INSERT INTO big SELECT 1, left(repeat(:'sample', $SIZE / octet_length(:'sample') + 1), $SIZE);
SQL
# French with accents for the LATIN1 database: converted to UTF-8 before fingerprinting.
latin="Le conseil municipal a approuvé le budget des pistes cyclables protégées à Zürich, après un débat animé. "
q rb_latin1 -v sample="$latin" >/dev/null <<SQL
INSERT INTO big SELECT 1, left(repeat(:'sample', $SIZE / octet_length(:'sample') + 1), $SIZE);
SQL
# left() counts characters: read the exact size back.
SIZE=$(q postgres -c "SELECT octet_length(body) FROM big")
expect "the stored text is $MB MB" "$((SIZE / 1000000))" "$MB"
measure "text size, bytes (UTF8 database)" "$SIZE"
measure "text size, bytes (LATIN1 database)" "$(q rb_latin1 -c "SELECT octet_length(body) FROM big")"

postmaster_start=$(q postgres -c "SELECT pg_postmaster_start_time()")

# peak_rss DB LABEL SQL : runs SQL in a new session after loading jieba and its IDF table and resetting the peak RSS;
# writes the growth of the peak over the session's RSS before the statement, in kB, to $OUT/growth.
peak_rss() {
    local db=$1 label=$2 sql=$3
    "$PSQL" -X -q -At -h /tmp -p "$PORT" -U postgres -d "$db" -v ON_ERROR_STOP=1 >"$OUT/peak.out" <<SQL
SELECT simhash('warm up the jieba dictionary', tokenizer => 'jieba', weighting => 'tfidf') IS NOT NULL;
SELECT pg_backend_pid() AS pid \gset
\setenv BPID :pid
\! echo 5 > /proc/\$BPID/clear_refs; awk '/VmRSS/ { print \$2 }' /proc/\$BPID/status > $OUT/before
$sql;
\! awk '/VmHWM/ { print \$2 }' /proc/\$BPID/status > $OUT/after
SQL
    local before after
    before=$(cat "$OUT/before")
    after=$(cat "$OUT/after")
    measure "$label: RSS before, MB" "$((before / 1024))"
    measure "$label: peak RSS, MB" "$((after / 1024))"
    measure "$label: peak growth / text size" "$(awk -v g=$((after - before)) -v s=$SIZE 'BEGIN { printf "%.2f", g * 1024 / s }')"
    echo $((after - before)) >"$OUT/growth"
}

check_growth() { # LABEL GROWTH_KB MAX_RATIO
    local ratio_ok
    ratio_ok=$(awk -v g="$2" -v s=$SIZE -v m="$3" 'BEGIN { print (g * 1024 <= m * s) ? "yes" : "no" }')
    expect "$1: peak RSS grows by at most ${3}x the text size" "$ratio_ok" yes
}

t0=$(now_ms)
peak_rss postgres "UTF8 simhash() of $MB MB" "SELECT simhash(body) IS NOT NULL FROM big"
growth=$(cat "$OUT/growth")
measure "UTF8 simhash() of $MB MB: seconds (with warm-up)" "$(awk -v ms=$(($(now_ms) - t0)) 'BEGIN { printf "%.1f", ms / 1000 }')"
expect "UTF8 simhash() of $MB MB gives a fingerprint" "$(tail -1 "$OUT/peak.out")" t
check_growth "UTF8 simhash()" "$growth" 1.3
peak_rss postgres "UTF8 simhash(tokenizer => 'jieba', weighting => 'tfidf') of $MB MB" \
    "SELECT simhash(body, tokenizer => 'jieba', weighting => 'tfidf') IS NOT NULL FROM big"
growth=$(cat "$OUT/growth")
check_growth "UTF8 simhash(jieba, tfidf)" "$growth" 1.3
peak_rss postgres "UTF8 simhash_features() of $MB MB" \
    "SELECT count(*) > 0 FROM big, simhash_features(body)"
growth=$(cat "$OUT/growth")
check_growth "UTF8 simhash_features()" "$growth" 1.3
peak_rss rb_latin1 "LATIN1 simhash() of $MB MB" "SELECT simhash(body) IS NOT NULL FROM big"
growth=$(cat "$OUT/growth")
check_growth "LATIN1 simhash() (one converted copy)" "$growth" 2.5
q postgres -c "CREATE TABLE docs (id int PRIMARY KEY, body text)" \
    -c "SELECT simhash_attach('docs', 'body', on_duplicate => 'error')" >/dev/null
peak_rss postgres "trigger on a $MB MB INSERT" "INSERT INTO docs SELECT id, body FROM big"
growth=$(cat "$OUT/growth")
check_growth "trigger on INSERT (the row is written too)" "$growth" 3.5
expect "the trigger stored the fingerprint of the $MB MB row" \
    "$(q postgres -c "SELECT body_simhash = simhash(body) FROM docs")" t

# The statements stopped below are made long by construction, whatever the machine's speed: each
# fingerprints the 100 MB text a thousand times (over a quarter of an hour at today's speed), so the
# timeout or the cancel always finds them running. (Fingerprinting it once takes about a second, so a
# statement that did it once raced the 0.5 s timeout and the cancel sent after 1 s.) The trigger's
# case writes into `slow`, attached with on_duplicate 'none', so that no row is refused as a
# near-duplicate of the one before and every row is fingerprinted; a second BEFORE trigger, which
# fires after simhash_attach's (triggers fire in name order), then drops each row, so that the
# statement spends its time in the fingerprint and not in compressing and storing 100 MB rows
# (which PostgreSQL does without checking for interrupts).
THOUSAND="generate_series(1, 1000) AS g"
q postgres >/dev/null <<'SQL'
CREATE TABLE slow (id int PRIMARY KEY, body text);
SELECT simhash_attach('slow', 'body');
CREATE FUNCTION drop_row() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
CREATE TRIGGER zz_drop_row BEFORE INSERT ON slow FOR EACH ROW EXECUTE FUNCTION drop_row();
SQL

# timed DB SQL [SETTING] : runs SQL with statement_timeout = 500ms; prints "SQLSTATE seconds".
timed() {
    "$PSQL" -X -q -At -h /tmp -p "$PORT" -U postgres -d "$1" -v VERBOSITY=verbose >"$OUT/timed.out" 2>&1 <<SQL || true
SET statement_timeout = '500ms';
SELECT 'T0 ' || extract(epoch FROM clock_timestamp());
$2;
SELECT 'T1 ' || extract(epoch FROM clock_timestamp());
SQL
    local state t0 t1
    state=$(grep -oE '(ERROR|FATAL): +[0-9A-Z]{5}' "$OUT/timed.out" | grep -oE '[0-9A-Z]{5}$' | head -1 || true)
    t0=$(awk '/^T0 / { print $2 }' "$OUT/timed.out")
    t1=$(awk '/^T1 / { print $2 }' "$OUT/timed.out")
    echo "${state:-00000} $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')"
}

for case in "simhash()|SELECT count(simhash(body)) FROM big, $THOUSAND" \
    "simhash(tokenizer => 'jieba')|SELECT count(simhash(body, tokenizer => 'jieba')) FROM big, $THOUSAND" \
    "simhash_features()|SELECT count(*) FROM big, $THOUSAND, simhash_features(body)" \
    "simhash(tokenizer => 'char', shingle => 3)|SELECT count(simhash(body, tokenizer => 'char', shingle => 3)) FROM big, $THOUSAND" \
    "trigger on INSERT|INSERT INTO slow SELECT g, body FROM big, $THOUSAND"; do
    label=${case%%|*}
    read -r state secs <<<"$(timed postgres "${case#*|}")"
    expect "statement_timeout 500ms stops $label with 57014" "$state" 57014
    measure "statement_timeout: $label ends after (s, timeout 0.5)" "$secs"
    expect "$label ends within 1 s of the timeout" "$(awk -v s="$secs" 'BEGIN { print (s < 1.5) ? "yes" : "no" }')" yes
done
read -r state secs <<<"$(timed rb_latin1 "SELECT count(simhash(body)) FROM big, $THOUSAND")"
expect "statement_timeout stops simhash() in LATIN1 with 57014" "$state" 57014
measure "statement_timeout: LATIN1 simhash() ends after (s, timeout 0.5)" "$secs"
expect "LATIN1 simhash() ends within 1 s of the timeout" "$(awk -v s="$secs" 'BEGIN { print (s < 1.5) ? "yes" : "no" }')" yes

# pg_cancel_backend from a second session, 1 s into the computation (a statement timeout of two
# minutes stops it should the cancel not).
cancel_case() { # LABEL SQL
    "$PSQL" -X -q -At -h /tmp -p "$PORT" -U postgres -d postgres -v VERBOSITY=verbose >"$OUT/cancel.out" 2>&1 <<SQL &
SET application_name = 'rb_cancel';
SET statement_timeout = '120s';
$2;
SELECT 'T1 ' || extract(epoch FROM clock_timestamp());
SQL
    local client=$! pid="" i
    for i in $(seq 100); do
        pid=$(q postgres -c "SELECT pid FROM pg_stat_activity WHERE application_name = 'rb_cancel' AND state = 'active'")
        [ -n "$pid" ] && break
        sleep 0.05
    done
    [ -n "$pid" ] || fail "$1: the session to cancel did not start"
    sleep 1
    local t0 state t1
    t0=$(q postgres -c "SELECT extract(epoch FROM clock_timestamp()) FROM (SELECT pg_cancel_backend($pid)) c")
    wait "$client" || true
    state=$(grep -oE 'ERROR: +[0-9A-Z]{5}' "$OUT/cancel.out" | grep -oE '[0-9A-Z]{5}$' | head -1 || true)
    t1=$(awk '/^T1 / { print $2 }' "$OUT/cancel.out")
    expect "pg_cancel_backend stops $1 with 57014" "${state:-none}" 57014
    local secs
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
    measure "pg_cancel_backend: $1 ends after (s)" "$secs"
    expect "$1 ends within 1 s of the cancel" "$(awk -v s="$secs" 'BEGIN { print (s < 1.0) ? "yes" : "no" }')" yes
}
cancel_case "simhash()" "SELECT count(simhash(body)) FROM big, $THOUSAND"
cancel_case "simhash_features()" "SELECT count(*) FROM big, $THOUSAND, simhash_features(body)"
cancel_case "trigger on INSERT" "INSERT INTO slow SELECT g, body FROM big, $THOUSAND"

# Near the 1 GB varlena limit (1 GB - 1 byte with its 4-byte header): a result or a clean ERROR.
limit_case() { # DB LABEL UNIT
    local db=$1 label=$2 unit=$3 sec state count len t0
    count=$(q "$db" -c "SELECT (1073741818 - 4) / octet_length(\$u\$$unit\$u\$)")
    len=$(q "$db" -c "SELECT $count * octet_length(\$u\$$unit\$u\$)")
    t0=$(now_ms)
    # random() * 0 keeps the planner from folding repeat() into a constant (which copies it).
    "$PSQL" -X -q -At -h /tmp -p "$PORT" -U postgres -d "$db" -v VERBOSITY=verbose >"$OUT/limit.out" 2>&1 <<SQL || true
SELECT pg_backend_pid() AS pid \gset
\setenv BPID :pid
SELECT 'FP ' || coalesce(simhash(t)::text, 'NULL')
FROM (SELECT repeat(\$u\$$unit\$u\$, $count + (random() * 0)::int) AS t OFFSET 0) r;
\! awk '/VmHWM/ { print \$2 }' /proc/\$BPID/status > $OUT/after
SQL
    sec=$(awk -v ms=$(($(now_ms) - t0)) 'BEGIN { printf "%.1f", ms / 1000 }')
    state=$(grep -oE '(ERROR|FATAL): +[0-9A-Z]{5}.*' "$OUT/limit.out" | head -1 || true)
    local result
    result=$(grep -E '^FP ' "$OUT/limit.out" || true)
    measure "$label: text size, bytes" "$len"
    measure "$label: seconds" "$sec"
    measure "$label: peak RSS, MB" "$(($(cat "$OUT/after") / 1024))"
    if [ -n "$result" ]; then
        measure "$label: result" "$result"
        expect_match "$label: ends in a fingerprint" "$result" '^FP -?[0-9]+$'
    else
        measure "$label: error" "$state"
        expect_match "$label: ends in a clean ERROR" "$state" '^ERROR: +(53200|54000)'
    fi
    expect "$label: the server did not restart" "$(q postgres -c "SELECT pg_postmaster_start_time()")" "$postmaster_start"
}
limit_case postgres "1 GB text (UTF8)" "The city council approved the budget for protected bike lanes. 北京地铁19号线今天开通。 "
limit_case rb_latin1 "1 GB text with accents (LATIN1, converted)" "Le conseil a approuvé le budget à Zürich. "
if grep -qE 'terminated by signal|server process .* was terminated' "$DIR/server.log"; then
    fail "a backend crashed: $(grep -E 'terminated by signal' "$DIR/server.log" | head -1)"
fi
pass "no backend crashed (server.log)"
