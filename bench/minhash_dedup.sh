#!/usr/bin/env bash
# Deduplicating a table attached with MinHash (issue 25, item 5): simhash_pairs and simhash_clusters on
# ROWS rows (default 1,000,000) of bench/dedup.sql's corpus, with the same rows attached with SimHash
# beside them, times and the backend's peak memory. Usage: bash bench/minhash_dedup.sh [ROWS]
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
cd "$ROOT"
ROWS=${1:-1000000}
DIR=/tmp/simhash-mhdedup-bench
PORT=54390

ensure_tools
install_extension --release
start_server "$DIR" "$PORT" shared_buffers=2GB work_mem=256MB maintenance_work_mem=1GB \
    max_parallel_workers_per_gather=2 max_wal_size=8GB checkpoint_timeout=30min
trap 'stop_server "$DIR"' EXIT
log "MinHash dedup benchmark with $ROWS rows on $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs))"
psql -X -q -h /tmp -p "$PORT" -U postgres -d postgres -v ON_ERROR_STOP=1 -v rows="$ROWS" -f bench/minhash_dedup.sql
