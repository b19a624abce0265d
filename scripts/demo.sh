#!/usr/bin/env bash
# The main job, from a fresh Debian 12 machine (as root): build and install simhash_ext, start a
# throwaway PostgreSQL 15 on 127.0.0.1, load the sample corpus and show near-duplicates being found
# and rejected. `--keep` leaves the server running afterwards.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$ROOT"

DEMO_DIR=/tmp/simhash-demo
DEMO_PORT=54332

ensure_tools
install_extension --release
log "starting a throwaway PostgreSQL 15 in $DEMO_DIR on 127.0.0.1:$DEMO_PORT"
start_server "$DEMO_DIR" "$DEMO_PORT"
if [ "${1:-}" != "--keep" ]; then
    trap 'stop_server "$DEMO_DIR"' EXIT
fi
psql -X -q -h /tmp -p "$DEMO_PORT" -U postgres -d postgres -v ON_ERROR_STOP=1 -f demo/demo.sql
if [ "${1:-}" = "--keep" ]; then
    log "server left running: psql -h /tmp -p $DEMO_PORT -U postgres   (stop: bash scripts/demo.sh --stop)"
fi
