#!/usr/bin/env bash
# Deduplicating a table at scale (README "Deduplicate a table and keep one row"; docs/performance.md): attach with 0 and 2
# parallel workers, then simhash_pairs and simhash_clusters on a uniform and a deliberately skewed
# corpus of ROWS rows (default 1,000,000), with times and the backend's peak memory.
# Usage: bash bench/dedup.sh [ROWS]   (TAIL=characters of own text after the boilerplate, default 250)
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
cd "$ROOT"
ROWS=${1:-1000000}
DIR=/tmp/simhash-dedup-bench
PORT=54350

ensure_tools
install_extension --release
start_server "$DIR" "$PORT" shared_buffers=2GB work_mem=256MB maintenance_work_mem=1GB \
    max_parallel_workers_per_gather=2 max_wal_size=8GB checkpoint_timeout=30min
trap 'stop_server "$DIR"' EXIT
log "benchmark with $ROWS rows on $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs))"
psql -X -q -h /tmp -p "$PORT" -U postgres -d postgres -v ON_ERROR_STOP=1 -v rows="$ROWS" -v tail="${TAIL:-250}" -f bench/dedup.sql
