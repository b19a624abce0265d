#!/usr/bin/env bash
# What simhash_attach(..., method => 'minhash') costs beside the SimHash default, in one command, as
# root on Debian 12:   bash bench/minhash_cost.sh
#
# On the same 1,000,000 rows of real text (bench/tables.py, the rows of bench/search.sh and
# bench/studies/attach/attach.sh), SimHash and MinHash side by side in one run: bytes per row on disk, attach time,
# lookup latency of simhash_near_duplicates(NULL::t, text), single-row INSERT latency with
# on_duplicate => 'error' (also 'none', the plain table, and MinHash with GIN fastupdate = off),
# and a 100,000-row INSERT ... SELECT into an empty attached table. Writes
# bench/results/minhash_cost.md (see bench/minhash_cost.py).
#
# Like bench/search.sh it never uses the extension installed in the system directories: it builds the
# release package from this working tree and runs a relocated copy of PostgreSQL 15 with it:
#   /tmp/simhash-mhbench-pkg   `cargo pgrx package` output
#   /tmp/simhash-mhbench-pg    the relocated PostgreSQL 15 with our simhash_ext.so
#   /tmp/simhash-mhbench       the throwaway server (port 54380), stopped at the end
# Server settings: shared_buffers = 6GB (the indexes of the seven 1M-row tables, about 5 GB, are
# loaded into it after the warm-ups of the lookups and of the single-row inserts, so that each table
# is measured hot), maintenance_work_mem = 1GB (the GIN build uses it),
# max_parallel_workers_per_gather = 2, max_wal_size = 8GB, checkpoint_timeout = 30min; work_mem is
# left at its default of 4MB: the plan PostgreSQL picks for the MinHash trigger's query depends on
# it, and users mostly run with it.
#
# Knobs (environment, defaults in brackets): BENCH_MC_ROWS [1000000] rows in the big tables,
# BENCH_MC_QUERIES [200] lookup texts, BENCH_MC_PASSES [3] timed lookup passes, BENCH_MC_INSERTS
# [1000] timed single-row inserts per table, BENCH_MC_BLOCKS [5] interleaved blocks they come in,
# BENCH_MC_WARMUP [200] untimed inserts per table first, BENCH_MC_BULK_ROWS [100000] rows of the bulk
# insert, BENCH_MC_BULK_REPS [2] rounds of it, BENCH_MC_BULK_TIMEOUT [150] seconds a bulk insert may
# take (then reported as "> 150"), BENCH_MC_SKIP_BUILD [0]: 1 reuses the package already in
# /tmp/simhash-mhbench-pkg, BENCH_MC_RESULT [minhash_cost.md]: the file under bench/results/ to write
# (so that a quick run does not replace the full one).
# A quick run: BENCH_MC_ROWS=100000 BENCH_MC_BULK_ROWS=20000 BENCH_MC_RESULT=minhash_cost_quick.md \
#   bash bench/minhash_cost.sh

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../scripts/common.sh
source "$BENCH/../scripts/common.sh" # set -euo pipefail, ROOT, PG_CONFIG, start_server, stop_server

SERVER_DIR=/tmp/simhash-mhbench
export BENCH_PORT=54380
PRIVATE_PG=/tmp/simhash-mhbench-pg
PACKAGE=/tmp/simhash-mhbench-pkg
PY=$BENCH/.venv/bin/python
START=$SECONDS
# This working tree's own build directory, whatever the caller's environment says.
export CARGO_TARGET_DIR=$ROOT/target
# shellcheck source=lib.sh
source "$BENCH/lib.sh" # step, bench_prepare
bench_prepare minhash_cost "${BENCH_MC_SKIP_BUILD:-0}"

step "server: $SERVER_DIR on port $BENCH_PORT"
trap 'stop_server "$SERVER_DIR"' EXIT
trap 'exit 130' INT TERM
start_server "$SERVER_DIR" "$BENCH_PORT" shared_buffers=6GB maintenance_work_mem=1GB \
    max_parallel_workers_per_gather=2 max_wal_size=8GB checkpoint_timeout=30min
psql -h /tmp -p "$BENCH_PORT" -U postgres -qX -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION simhash_ext'

export BENCH_MC_MACHINE="Machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), nproc = $(nproc), RAM $(free -g | awk '/^Mem:/ {print $2}') GiB; $("$PG_BIN/postgres" --version); simhash_ext release build (\`cargo pgrx package\`) of commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src core sql 2>/dev/null || echo ' with uncommitted changes under src/, core/ or sql/'), loaded from $PRIVATE_PG; shared_buffers = 6GB, work_mem = 4MB (the default), maintenance_work_mem = 1GB, max_parallel_workers_per_gather = 2 (0 for lookups and inserts), max_wal_size = 8GB."
step "measuring (bench/minhash_cost.py)"
"$PY" "$BENCH/minhash_cost.py"
step "done in $((SECONDS - START)) s: bench/results/${BENCH_MC_RESULT:-minhash_cost.md}"
