#!/usr/bin/env bash
# Issue 36, item 5, in one command, as root on Debian 12:   bash bench/online_attach.sh
#
# Attach under a write load: the offline simhash_attach() (ACCESS EXCLUSIVE for the whole attach)
# beside the online simhash_attach_concurrently(), SimHash and MinHash at 1,000,000 rows and SimHash
# at 10,000,000, while 4 clients write (single-row INSERT, UPDATE of the text, UPDATE of another
# column) and 2 read (lookup by primary key; simhash_near_duplicates once attached), with a
# baseline of the same load and no attach: the writes' and reads' p99.9 and longest wait during the
# attach, failed statements, the attach time, bytes per row afterwards, and a check of the stored
# fingerprints. Prints a Markdown table and writes it to /tmp/online_attach_result.md (see
# bench/online_attach.py); docs/performance.md gets it by hand. When the build has no
# simhash_attach_concurrently() the online runs are skipped (and the table says so).
#
# Like bench/studies/attach/attach.sh it never uses the extension installed in the system directories: it builds the
# release package from this working tree and runs a relocated copy of PostgreSQL 15 with it:
#   /tmp/online-attach-pkg     `cargo pgrx package` output
#   /tmp/online-attach-pg      the relocated PostgreSQL 15 with our simhash_ext.so
#   /tmp/online-attach-bench   the throwaway server (port 54395), stopped at the end
# Server settings as bench/studies/attach/attach.sh's: shared_buffers = 2GB, work_mem = 256MB,
# maintenance_work_mem = 1GB, max_parallel_workers_per_gather = 2, max_wal_size = 8GB,
# checkpoint_timeout = 30min (autovacuum on, as on a server that takes writes).
#
# Time on the 2-core machine (AMD EPYC, 23 GiB), 2026-11-27, while other sessions' builds and
# benchmarks ran (load average 2.6-7.1): 1,985 s in all. The 1M part 995 s (the table 15 s, the
# baseline 60 s, SimHash offline 22 s and online 43 s, MinHash offline 249 s and online 423 s, each
# with its copy of the table, load and check); the 10M part 990 s (the table 229 s, offline 160 s,
# online 268 s, the check of the touched rows and every 100th). Disk: about 15 GB at 10M rows.
#
# Knobs (environment, defaults in brackets):
#   BENCH_OA_ROWS [1000000]            rows of the first size
#   BENCH_OA_METHODS ["simhash minhash"]  methods attached at that size
#   BENCH_OA_SKIP_BIG [0]              1: no second size
#   BENCH_OA_BIG_ROWS [10000000]       rows of the second size
#   BENCH_OA_BIG_METHODS [simhash]     methods attached at the second size
#   BENCH_OA_MODES ["offline online"]  attaches per method (online skipped if the build lacks it)
#   BENCH_OA_WRITERS [4], BENCH_OA_READERS [2], BENCH_OA_RATE [50] statements/s per client (0: unpaced)
#   BENCH_OA_PRE [10], BENCH_OA_POST [20] seconds of load before / after the attach
#   BENCH_OA_BASELINE [60]             seconds of the no-attach baseline
#   BENCH_OA_VERIFY [all below 5M rows, else touched]  all | touched | none
#   BENCH_OA_SESSION [none]            a statement the attaching session runs first
#                                      (e.g. "SET maintenance_work_mem = '64MB'")
#   BENCH_OA_SKIP_BUILD [0]            1: reuse the package in /tmp/online-attach-pkg
#   BENCH_OA_RESULT [/tmp/online_attach_result.md]

# The body is one function, read whole before it runs: editing this file during a run cannot change
# what the running shell reads next.
main() {
    BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
    # shellcheck source=../scripts/common.sh
    source "$BENCH/../scripts/common.sh" # set -euo pipefail, ROOT, PG_CONFIG, start_server, stop_server

    SERVER_DIR=/tmp/online-attach-bench
    export BENCH_PORT=54395
    PRIVATE_PG=/tmp/online-attach-pg
    PACKAGE=/tmp/online-attach-pkg
    PY=$BENCH/.venv/bin/python
    START=$SECONDS
    # shellcheck source=lib.sh
    source "$BENCH/lib.sh" # step, bench_prepare
    bench_prepare online-attach "${BENCH_OA_SKIP_BUILD:-0}"

    step "server: $SERVER_DIR on port $BENCH_PORT"
    start_server "$SERVER_DIR" "$BENCH_PORT" shared_buffers=2GB work_mem=256MB maintenance_work_mem=1GB \
        max_parallel_workers_per_gather=2 max_wal_size=8GB checkpoint_timeout=30min
    trap 'stop_server "$SERVER_DIR"' EXIT
    psql -h /tmp -p "$BENCH_PORT" -U postgres -qX -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION simhash_ext'

    export BENCH_OA_MACHINE="Machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), nproc = $(nproc), RAM $(free -g | awk '/^Mem:/ {print $2}') GiB; $("$PG_BIN/postgres" --version); simhash_ext release build (\`cargo pgrx package\`) of commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src core sql 2>/dev/null || echo ' with uncommitted changes under src/, core/ or sql/'), loaded from $PRIVATE_PG; the server settings of bench/studies/attach/attach.sh (shared_buffers = 2GB, maintenance_work_mem = 1GB, max_parallel_workers_per_gather = 2, max_wal_size = 8GB), autovacuum on."
    step "measuring (bench/online_attach.py)"
    "$PY" "$BENCH/online_attach.py"
    step "done in $((SECONDS - START)) s: ${BENCH_OA_RESULT:-/tmp/online_attach_result.md}"
}
main "$@"; exit # one line: the shell reads no further, whatever this file becomes during the run
