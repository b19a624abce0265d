#!/usr/bin/env bash
# Issue 14, item 5, in one command, as root on Debian 12:   bash bench/search.sh
#
# Exact near-duplicate search on four 16-bit band indexes at k = 3, 5, 7, 8: lookup latency and
# candidates at 100k, 1M and 10M rows against a brute-force scan and the previous k+1-band scheme,
# and the write cost of the 'error' trigger against 'none'. Writes its tables under bench/results/
# (search.md unless BENCH_SEARCH_RESULT names another file; see bench/search.py and bench/README.md).
#
# Like bench/run.sh it never uses the extension installed in the system directories: it builds the
# release package from this working tree and runs a relocated copy of PostgreSQL 15 with it, but in
# its own directories and on its own port, so that it can run while someone runs bench/run.sh:
#   /tmp/simhash-sbench-pkg  `cargo pgrx package` output
#   /tmp/simhash-sbench-pg   the relocated PostgreSQL 15 with our simhash_ext.so
#   /tmp/simhash-sbench      the throwaway server (port 54360), stopped at the end
#
# Knobs (environment, defaults in brackets): BENCH_SEARCH_ROWS [100000,1000000,10000000],
# BENCH_SEARCH_K [3,5,7,8], BENCH_SEARCH_OPTIONS [def=;stop=stopwords => true] fingerprint variants
# as name=simhash_attach options, BENCH_SEARCH_BIG_VARIANTS [1] variants used above
# BENCH_SEARCH_SHORT_ABOVE [1000000] rows (where short texts are used), BENCH_SEARCH_QUERIES [200],
# BENCH_SEARCH_PASSES [2], BENCH_SEARCH_OLD_BUDGET [8] s, BENCH_SEARCH_SCAN_QUERIES [5],
# BENCH_SEARCH_SCAN_BUDGET [12] s, BENCH_WRITE_ROWS [100000], BENCH_WRITE_REPS [2],
# BENCH_SEARCH_WRITE_K [3,7], BENCH_SEARCH_PARTS [write,lookup], BENCH_SEARCH_SKIP_BUILD [0]: 1
# reuses the package already in /tmp/simhash-sbench-pkg, BENCH_SEARCH_RESULT [search.md]: the file
# under bench/results/ to write (so that a partial run does not replace the full one).

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../scripts/common.sh
source "$BENCH/../scripts/common.sh" # set -euo pipefail, ROOT, PG_CONFIG, start_server, stop_server

SERVER_DIR=/tmp/simhash-sbench
export BENCH_PORT=54360
PRIVATE_PG=/tmp/simhash-sbench-pg
PACKAGE=/tmp/simhash-sbench-pkg
PY=$BENCH/.venv/bin/python
START=$SECONDS
# shellcheck source=lib.sh
source "$BENCH/lib.sh" # step, bench_prepare
bench_prepare search "${BENCH_SEARCH_SKIP_BUILD:-0}"

step "server: $SERVER_DIR on port $BENCH_PORT"
start_server "$SERVER_DIR" "$BENCH_PORT" shared_buffers=512MB max_wal_size=8GB
trap 'stop_server "$SERVER_DIR"' EXIT
psql -h /tmp -p "$BENCH_PORT" -U postgres -qX -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION simhash_ext'

export BENCH_SEARCH_MACHINE="Machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), nproc = $(nproc), RAM $(free -g | awk '/^Mem:/ {print $2}') GiB; $("$PG_BIN/postgres" --version); simhash_ext release build (\`cargo pgrx package\`) of commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src core sql 2>/dev/null || echo ' with uncommitted changes under src/, core/ or sql/'), loaded from $PRIVATE_PG; shared_buffers = 512MB, max_wal_size = 8GB."
step "measuring (bench/search.py)"
"$PY" "$BENCH/search.py"
step "done in $((SECONDS - START)) s: bench/results/${BENCH_SEARCH_RESULT:-search.md}"
