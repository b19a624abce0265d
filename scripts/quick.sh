#!/usr/bin/env bash
# A contributor's quick run: the pg_regress goldens and isolation specs, or a subset of them by name,
# against the PostgreSQL of $PG_CONFIG (default: Debian's 15), in minutes (docs/development.md).
#
#   bash scripts/quick.sh                          # build (debug), install, every golden and spec
#   bash scripts/quick.sh insert_race scope        # only these (goldens or specs, by file name)
#   bash scripts/quick.sh --no-build verify        # against what is installed already
#   bash scripts/quick.sh --port 54340 ...         # another port for the throwaway server
#   bash scripts/quick.sh --server 5432 --no-build insert_race   # a server already running
#
# Run as root, as scripts/test.sh: the throwaway server runs as the postgres user. With --server PORT
# no server is started and root is not needed: the tests connect to the server on PORT (host
# $PGHOST, else /tmp; as $PGUSER, else postgres: a superuser, since the goldens make roles), whose
# PostgreSQL must be $PG_CONFIG's with the extension installed (--no-build, or a build this user may
# install). Outputs and diffs: /tmp/simhash-quick/out/{regress,isolation} (SIMHASH_QUICK_DIR names
# another directory than /tmp/simhash-quick, for two runs at once).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$ROOT"

build=1
port=54341
running=0
names=()
while (($#)); do
    case $1 in
    --no-build) build=0 ;;
    --port)
        port=$2
        shift
        ;;
    --server)
        port=$2
        running=1
        shift
        ;;
    -h | --help)
        sed -n '2,16p' "$0"
        exit 0
        ;;
    *) names+=("$1") ;;
    esac
    shift
done

select_pg "${PG_CONFIG:-$DEBIAN_PG_CONFIG}"
dir=${SIMHASH_QUICK_DIR:-/tmp/simhash-quick}
if ((build)); then
    install_extension # with the base install script, from which the goldens install old versions
fi

# pick KIND DIR EXT: the names given that are files DIR/NAME.EXT (all of them when none is given).
pick() {
    local dir=$2 ext=$3 n found=()
    if ((${#names[@]} == 0)); then
        (cd "$dir" && ls ./*."$ext" | sed "s|^\./||; s|\.$ext\$||" | sort)
        return
    fi
    for n in "${names[@]}"; do
        [ ! -f "$dir/$n.$ext" ] || found+=("$n")
    done
    printf '%s\n' "${found[@]}"
}
regress=$(pick regress tests/pg_regress/sql sql)
isolation=$(pick isolation tests/isolation/specs spec)
if [ -z "$regress$isolation" ]; then
    echo "quick.sh: no golden or spec named ${names[*]}" >&2
    exit 2
fi

host=/tmp user=postgres
if ((running)); then
    host=${PGHOST:-/tmp} user=${PGUSER:-postgres}
    rm -rf "$dir/out"
else
    start_server "$dir" "$port"
    trap 'stop_server "$dir"' EXIT
fi
install -d "$dir/out"
chmod 777 "$dir/out"
pgxs=$(dirname "$(dirname "$("$PG_CONFIG" --pgxs)")")
status=0
# run RUNNER BINDIR INPUTDIR KIND NAMES...
run() {
    local runner=$1 bindir=$2 inputdir=$3 kind=$4
    shift 4
    (($#)) || return 0
    PG_ABS_SRCDIR=$ROOT/$inputdir "$runner" --bindir="$bindir" --host="$host" --port="$port" \
        --user="$user" --inputdir="$inputdir" --outputdir="$dir/out/$kind" \
        --dbname="simhash_$kind" --load-extension=simhash_ext "$@" || {
        status=1
        cat "$dir/out/$kind/regression.diffs" 2>/dev/null || true
    }
}
# shellcheck disable=SC2086
# PostgreSQL 14's psql has no \getenv: its server is tested through Debian's psql 15, as test.sh does.
client_bin=$PG_BIN
((PG_MAJOR >= 15)) || client_bin=$(dirname "$DEBIAN_PG_CONFIG")
run "$pgxs/test/regress/pg_regress" "$client_bin" tests/pg_regress regress $regress
# shellcheck disable=SC2086
run "$pgxs/test/isolation/pg_isolation_regress" "$PG_BIN" tests/isolation isolation $isolation
exit $status
