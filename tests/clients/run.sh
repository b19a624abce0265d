#!/usr/bin/env bash
# Client integrations (issue 13): runs the examples under examples/ against a real PostgreSQL 15 with
# simhash_ext: Python with psycopg 3, SQLAlchemy 2.0 (ORM), Node.js with node-postgres. Each example
# checks what it shows (the 23505 and its DETAIL as the client library's own exception, told apart
# from a duplicate primary key by its constraint name, simhash_<column>; lookups, simhash_pairs) and
# exits non-zero when something differs.
#
#   bash tests/clients/run.sh [--package DIR]   (as root)
#
# Installs what it lacks and skips what is there: python3-venv, nodejs and npm from Debian when
# absent, the pinned Python packages (examples/python/requirements.txt) into examples/python/.venv,
# the locked npm packages (examples/node/package-lock.json) into examples/node/node_modules.
# Without --package the server is the system PostgreSQL with the installed extension (what
# scripts/test.sh installs); with --package DIR (`cargo pgrx package` output) a relocated copy that
# loads that build instead (scripts/common.sh private_postgres), which leaves the system alone.
# Port: $SIMHASH_CLIENTS_PORT, default 54352.
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/common.sh"
cd "$ROOT"

PORT=${SIMHASH_CLIENTS_PORT:-54352}
DIR=${SIMHASH_CLIENTS_DIR:-/tmp/simhash-clients}
package=
while (($#)); do
    case $1 in
    --package) package=$2; shift 2 ;;
    *) echo "usage: $0 [--package DIR]" >&2; exit 2 ;;
    esac
done

PYDIR=$ROOT/examples/python
NODEDIR=$ROOT/examples/node
VENV=$PYDIR/.venv

log "client tools (skipping what is installed)"
missing=()
python3 -c 'import venv, ensurepip' 2>/dev/null || missing+=(python3-venv)
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
if ((${#missing[@]})); then
    log "installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# A marker holds the checksum of the pins the environment was made from: a changed pin reinstalls.
pins=$(sha256sum "$PYDIR/requirements.txt" | cut -d' ' -f1)
if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$VENV/.pins" 2>/dev/null)" != "$pins" ]; then
    log "pip install -r examples/python/requirements.txt (into examples/python/.venv)"
    rm -rf "$VENV"
    python3 -m venv "$VENV"
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check -r "$PYDIR/requirements.txt"
    echo "$pins" >"$VENV/.pins"
fi
lock=$(sha256sum "$NODEDIR/package-lock.json" | cut -d' ' -f1)
if [ "$(cat "$NODEDIR/node_modules/.pins" 2>/dev/null)" != "$lock" ]; then
    log "npm ci (examples/node, from package-lock.json)"
    (cd "$NODEDIR" && npm ci --no-audit --no-fund --loglevel=error)
    echo "$lock" >"$NODEDIR/node_modules/.pins"
fi

if [ -n "$package" ]; then
    private_postgres "$package" "$DIR/pg"
fi
log "server on port $PORT ($PG_BIN)"
start_server "$DIR/srv" "$PORT"
trap 'stop_server "$DIR/srv"' EXIT

psql_() { runuser -u postgres -- "$PG_BIN/psql" -X -q -h /tmp -p "$PORT" -U postgres "$@"; }
passed=0
failed=0
failures=()
run_example() { # NAME COMMAND...: in a fresh database named after the example
    local name=$1 db=clients_$1
    shift
    psql_ -d postgres -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
    log "$name: $*"
    if PGHOST=/tmp PGPORT=$PORT PGUSER=postgres PGDATABASE=$db "$@"; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        failures+=("$name")
    fi
}
run_example psycopg "$VENV/bin/python" "$PYDIR/psycopg_example.py"
run_example sqlalchemy "$VENV/bin/python" "$PYDIR/sqlalchemy_example.py"
run_example node node "$NODEDIR/example.js"

echo
echo "clients: $passed passed, $failed failed"
((failed == 0)) || { log "FAILED: ${failures[*]}"; exit 1; }
