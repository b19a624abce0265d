#!/usr/bin/env bash
# Issue 10, item 4, in one command, as root on Debian 12:   bash bench/studies/attach/attach.sh
#
# simhash_attach() of 1,000,000 rows before (the UPDATE + rewrite of commit 11d0355, loaded from
# bench/studies/attach/attach_before.sql) and after (one rewrite, parallel fingerprinting), alternating on fresh
# copies of the same table, with the steps and the fingerprinting alone, in one run. Writes
# bench/studies/attach/attach.md (see attach.py).
#
# Like bench/search.sh it never uses the extension installed in the system directories: it builds the
# release package from this working tree and runs a relocated copy of PostgreSQL 15 with it:
#   /tmp/simhash-attach-pkg    `cargo pgrx package` output
#   /tmp/simhash-attach-pg     the relocated PostgreSQL 15 with our simhash_ext.so
#   /tmp/simhash-attach-bench  the throwaway server (port 54391), stopped at the end
# Server settings as bench/dedup.sh's (which measured 0.2.0's 26.7 s): shared_buffers = 2GB,
# work_mem = 256MB, maintenance_work_mem = 1GB, max_parallel_workers_per_gather = 2,
# max_wal_size = 8GB, checkpoint_timeout = 30min.
#
# Knobs (environment, defaults in brackets): BENCH_ATTACH_ROWS [1000000], BENCH_ATTACH_ROUNDS [3]
# (each round attaches with (a) and (b), the order alternating), BENCH_ATTACH_SKIP_BUILD [0]: 1 reuses
# the package in /tmp/simhash-attach-pkg, BENCH_ATTACH_RESULT [attach.md]: the file to write beside this script.

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd) # bench/studies/attach
BENCH=$(cd "$HERE/../.." && pwd)
# shellcheck source=../../../scripts/common.sh
source "$BENCH/../scripts/common.sh" # set -euo pipefail, ROOT, PG_CONFIG, start_server, stop_server

SERVER_DIR=/tmp/simhash-attach-bench
export BENCH_PORT=54391
PRIVATE_PG=/tmp/simhash-attach-pg
PACKAGE=/tmp/simhash-attach-pkg
PY=$BENCH/.venv/bin/python
START=$SECONDS
# shellcheck source=../../lib.sh
source "$BENCH/lib.sh" # step, bench_prepare
bench_prepare attach "${BENCH_ATTACH_SKIP_BUILD:-0}"

step "server: $SERVER_DIR on port $BENCH_PORT"
start_server "$SERVER_DIR" "$BENCH_PORT" shared_buffers=2GB work_mem=256MB maintenance_work_mem=1GB \
    max_parallel_workers_per_gather=2 max_wal_size=8GB checkpoint_timeout=30min
trap 'stop_server "$SERVER_DIR"' EXIT
psql -h /tmp -p "$BENCH_PORT" -U postgres -qX -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION simhash_ext'

export BENCH_ATTACH_MACHINE="Machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), nproc = $(nproc), RAM $(free -g | awk '/^Mem:/ {print $2}') GiB; $("$PG_BIN/postgres" --version); simhash_ext release build (\`cargo pgrx package\`) of commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src core sql 2>/dev/null || echo ' with uncommitted changes under src/, core/ or sql/'), loaded from $PRIVATE_PG; the server settings of bench/dedup.sh (shared_buffers = 2GB, maintenance_work_mem = 1GB, max_parallel_workers_per_gather = 2, max_wal_size = 8GB)."
step "measuring (bench/studies/attach/attach.py)"
"$PY" "$HERE/attach.py"
step "done in $((SECONDS - START)) s: bench/studies/attach/${BENCH_ATTACH_RESULT:-attach.md}"
