# Shared by the robustness tests (issue 4): each test sources this file, starts its own throwaway
# server with start_server from scripts/common.sh on a port in 54339–54349, prints what it measures,
# and exits non-zero on the first failed check. The extension must already be installed
# (scripts/test.sh installs the release build first; run.sh runs every test).

source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/common.sh"

PSQL=$PG_BIN/psql
TEST_NAME=$(basename "$0" .sh)
export PGCLIENTENCODING=UTF8 PGOPTIONS="-c client_min_messages=warning"

# q DB SQL... : runs SQL on the test server ($PORT), unaligned, stopping at the first error.
q() {
    local db=$1
    shift
    "$PSQL" -X -q -v ON_ERROR_STOP=1 -At -h /tmp -p "$PORT" -U postgres -d "$db" "$@"
}

# sqlstate DB SQL : runs one statement and prints the SQLSTATE it ends with (00000 on success).
sqlstate() {
    local out
    out=$("$PSQL" -X -q -At -h /tmp -p "$PORT" -U postgres -d "$1" -v VERBOSITY=verbose -c "$2" 2>&1 >/dev/null || true)
    if [[ $out =~ (ERROR|FATAL):\ +([0-9A-Z]{5}): ]]; then
        echo "${BASH_REMATCH[2]}"
    else
        echo 00000
    fi
}

# error_text DB SQL : the whole error report (message, DETAIL, HINT) of one statement.
error_text() {
    "$PSQL" -X -q -At -h /tmp -p "$PORT" -U postgres -d "$1" -c "$2" 2>&1 >/dev/null || true
}

pass() { printf '  ok    %s\n' "$*"; }
fail() {
    printf '  FAIL  %s\n' "$*" >&2
    exit 1
}

# expect NAME ACTUAL EXPECTED
expect() {
    if [ "$2" == "$3" ]; then
        pass "$1"
    else
        fail "$1: expected [$3], got [$2]"
    fi
}

# expect_match NAME ACTUAL REGEX
expect_match() {
    if [[ $2 =~ $3 ]]; then
        pass "$1"
    else
        fail "$1: [$2] does not match /$3/"
    fi
}

# expect_contains NAME ACTUAL SUBSTRING
expect_contains() {
    if [[ $2 == *"$3"* ]]; then
        pass "$1"
    else
        fail "$1: [$2] does not contain [$3]"
    fi
}

# measure NAME VALUE : a number this test reports (collected by run.sh from the output).
measure() { printf '  measure  %-58s %s\n' "$1" "$2"; }

now_ms() { date +%s%3N; }

# VmHWM / VmRSS of a process, in kB.
vm_kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }

# A text of real sentences, Chinese and English, with its lines joined by spaces.
sample_text() {
    tr '\n' ' ' <"$ROOT/tests/data/long_zh.txt"
    tr '\n' ' ' <"$ROOT/tests/data/long_en.txt"
}

# Stops the test's server on exit (also when a check fails); removes its files after a success and
# keeps them, server.log included, for a look after a failure.
on_exit_stop() {
    local dir=$1
    trap 'rc=$?; stop_server "'"$dir"'"; [ $rc -ne 0 ] || rm -rf "'"$dir"'"' EXIT
}

echo "== $TEST_NAME"

# make_corpus DB TABLE ROWS : an attached-table-to-be (id bigserial PRIMARY KEY, title, body) with
# ROWS distinct texts, each two real sentences of tests/data (Chinese or English).
make_corpus() {
    local db=$1 table=$2 rows=$3
    q "$db" -v sample="$(sample_text)" >/dev/null <<SQL
CREATE TEMP TABLE sentences AS
  SELECT row_number() OVER () AS n, s
  FROM regexp_split_to_table(:'sample', '(?<=[。！？.])\s*') s WHERE length(s) > 12;
CREATE TABLE $table (id bigserial PRIMARY KEY, title text, body text);
INSERT INTO $table (title, body)
  SELECT 'row ' || i, a.s || ' ' || b.s
  FROM generate_series(0, $rows - 1) i
  CROSS JOIN (SELECT count(*) AS c FROM sentences) k
  JOIN sentences a ON a.n = 1 + i % k.c
  JOIN sentences b ON b.n = 1 + (i / k.c + 1 + i % k.c) % k.c;
SQL
}
