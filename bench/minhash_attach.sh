#!/usr/bin/env bash
# simhash_attach(..., method => 'minhash') beside the SimHash default on 1,000,000 rows of real text,
# with where the MinHash time goes (signatures, rewrite, the GIN build at several
# maintenance_work_mem), for one build or two side by side (issue 36, item 5). As root on Debian 12:
#
#   bash bench/minhash_attach.sh                      # this working tree's build
#   bash bench/minhash_attach.sh A_PACKAGE B_PACKAGE  # two builds: `cargo pgrx package --out-dir` outputs
#
# With no argument it builds the release package of this working tree into /tmp/simhash-mhattach-pkg.
# Each package runs from its own relocated copy of PostgreSQL 15 (scripts/common.sh private_postgres,
# /tmp/simhash-mhattach-pg-A and -B), never the extension installed in the system directories, in a
# throwaway server (/tmp/simhash-mhattach-A and -B, ports MA_PORT and MA_PORT + 1), stopped at the
# end. Server settings as bench/studies/attach/attach.sh's and bench/minhash_cost.sh's: shared_buffers = 2GB,
# work_mem = 256MB, maintenance_work_mem = 1GB, max_parallel_workers_per_gather = 2, max_wal_size =
# 8GB, checkpoint_timeout = 30min. Writes bench/results/$MA_RESULT (see bench/minhash_attach.py).
#
# Knobs (environment, defaults in brackets): MA_ROWS [1000000], MA_ROUNDS [2] attach rounds (each
# attaches a fresh copy with SimHash and MinHash on every build, the order rotating), MA_GIN_MWM
# [64MB,256MB,1GB] the maintenance_work_mem of the GIN builds measured alone, MA_GIN_ROUNDS [1],
# MA_PORT [55491], MA_LABELS [before,after] the names of the two builds, MA_RESULT
# [minhash_attach.md] the file under bench/results/, MA_SAMPLE [200] rows whose band keys are looked up
# through the index and by a sequential scan in the checks (the scans take most of the checks' minutes).
# On a quiet 2-core machine a full run takes about 25 minutes, most of it the GIN builds.
# A quick run: MA_ROWS=100000 MA_ROUNDS=1 MA_GIN_MWM=64MB MA_RESULT=minhash_attach_quick.md bash bench/minhash_attach.sh

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../scripts/common.sh
source "$BENCH/../scripts/common.sh" # set -euo pipefail, ROOT, PG_CONFIG, start_server, stop_server

PORT=${MA_PORT:-55491}
PY=$BENCH/.venv/bin/python
START=$SECONDS
# With two packages, the first stands in bench_prepare's $PACKAGE (not built; the tools and corpus only).
PACKAGE=${1:-/tmp/simhash-mhattach-pkg}
PRIVATE_PG=/tmp/simhash-mhattach-pg-A
# This working tree's own build directory, whatever the caller's environment says.
export CARGO_TARGET_DIR=$ROOT/target
# shellcheck source=lib.sh
source "$BENCH/lib.sh" # step, bench_prepare

declare -a PACKAGES LABELS
if (($# == 0)); then
    bench_prepare minhash_attach 0 # builds $PACKAGE from this working tree
    PACKAGES=("$PACKAGE")
    LABELS=(this)
elif (($# == 2)); then
    bench_prepare minhash_attach 1
    PACKAGES=("$1" "$2")
    IFS=, read -r -a LABELS <<<"${MA_LABELS:-before,after}"
else
    echo "usage: bench/minhash_attach.sh [A_PACKAGE B_PACKAGE]" >&2
    exit 2
fi

SETTINGS=(shared_buffers=2GB work_mem=256MB maintenance_work_mem=1GB max_parallel_workers_per_gather=2
    max_wal_size=8GB checkpoint_timeout=30min)
declare -a DIRS BINS
builds=""
for i in "${!PACKAGES[@]}"; do
    name=$([ "$i" = 0 ] && echo A || echo B)
    step "build ${LABELS[$i]}: private PostgreSQL 15 in /tmp/simhash-mhattach-pg-$name with ${PACKAGES[$i]}"
    private_postgres "${PACKAGES[$i]}" "/tmp/simhash-mhattach-pg-$name"
    BINS[$i]=$PG_BIN
    DIRS[$i]=/tmp/simhash-mhattach-$name
    step "server: ${DIRS[$i]} on port $((PORT + i))"
    start_server "${DIRS[$i]}" "$((PORT + i))" "${SETTINGS[@]}"
    psql -h /tmp -p "$((PORT + i))" -U postgres -qX -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION simhash_ext'
    builds="$builds${builds:+,}${LABELS[$i]}=$((PORT + i))"
done
stop_all() {
    for i in "${!DIRS[@]}"; do
        PG_BIN=${BINS[$i]} stop_server "${DIRS[$i]}"
    done
}
trap stop_all EXIT
trap 'exit 130' INT TERM

export MA_BUILDS=$builds
export MA_MACHINE="Machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), nproc = $(nproc), RAM $(free -g | awk '/^Mem:/ {print $2}') GiB; $("$PG_BIN/postgres" --version); release builds (\`cargo pgrx package\`): $(for i in "${!PACKAGES[@]}"; do printf '%s = %s; ' "${LABELS[$i]}" "${PACKAGES[$i]}"; done)working tree at commit $(git -C "$ROOT" rev-parse --short HEAD); server settings of bench/studies/attach/attach.sh (shared_buffers = 2GB, maintenance_work_mem = 1GB, max_parallel_workers_per_gather = 2, max_wal_size = 8GB)."
step "measuring (bench/minhash_attach.py)"
(cd "$BENCH" && "$PY" "$BENCH/minhash_attach.py")
step "done in $((SECONDS - START)) s: bench/results/${MA_RESULT:-minhash_attach.md}"
