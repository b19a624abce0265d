#!/usr/bin/env bash
# Issue 41, point 6: do writers of unrelated texts wait for each other? Tables A and B of the issue,
# with a plain table and a unique index on md5(body) as baselines in the same run, for one build or
# several side by side. As root on Debian 12, from anywhere:
#
#   bash bench/writers.sh                                  # build this working tree, measure it
#   bash bench/writers.sh --package /tmp/pkgA --package new=/tmp/pkgB   # two builds, A/B in one run
#   bash bench/writers.sh --quick                          # H in 1,100,1000 and 8 s windows
#   bash bench/writers.sh --modes error,skip,flag --partitioned --batch insert500,insert10000,copy500,copy10000
#
# Builds:
#   --package [LABEL=]DIR  a `cargo pgrx package` output (repeatable); each gets a relocated copy of
#                          the PostgreSQL of $PG_CONFIG (scripts/common.sh, private_postgres) in
#                          /tmp/bench41-pg-PORT that loads its simhash_ext.so, and its own server
#   --prefix [LABEL=]DIR   a complete PostgreSQL install with the build installed in it (DIR/bin)
#   neither: `cargo pgrx package` (release) of this working tree into /tmp/bench41-pkg (log in
#   /tmp/bench41-package.log), or, with --skip-build, the package already there.
# Servers: one per build N (0, 1, ...), fresh, on port PORT = 55300 + N (--port-base) with its data
# in /tmp/bench41-srv-PORT, PostgreSQL's default configuration (initdb's; loopback only), all
# started first and stopped at the end; the measurements alternate between builds row by row, so
# the builds see the same machine load. Two runs at once need different --port-base (and --result).
# Everything else is bench/writers.py's (see its --help and its docstring): --tables A,B, --kinds,
# --modes, --partitioned, --holds, --probes, --lock-timeout, --batch, --seconds, --app-writers,
# --prefill, --rounds, --result (/tmp/bench41-writers.md), ...
#
# Exit status: nonzero when a build, a server or the set-up of a measurement fails; the numbers
# themselves (PASS / FAIL) never change it.
#
# Time on the 2-core machine shared with other builds, defaults, one build (0.9.0): 275 s (table A
# is slowest where writers wait: a probe that times out costs 0.3 s, 60 of them per cell).

# The body is one function, read whole before it runs.
main() {
    BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
    # shellcheck source=../scripts/common.sh
    source "$BENCH/../scripts/common.sh" # set -euo pipefail, ROOT, PG_CONFIG, start_server, stop_server
    START=$SECONDS
    step() { printf '\n[%4ds] == %s\n' $((SECONDS - START)) "$*" >&2; }

    local labels=() kinds=() dirs=() pyargs=() skip_build=0 port_base=55300 quick=0
    while (($#)); do
        case $1 in
        --package | --prefix)
            [ $# -ge 2 ] || { echo "writers.sh: $1 needs a directory" >&2; exit 2; }
            local spec=$2 label dir
            if [[ $spec == *=* ]]; then label=${spec%%=*} dir=${spec#*=}; else label=$(basename "$spec") dir=$spec; fi
            labels+=("$label") kinds+=("${1#--}") dirs+=("$dir")
            shift 2
            ;;
        --skip-build) skip_build=1; shift ;;
        --port-base) port_base=$2; shift 2 ;;
        --quick) quick=1; shift ;;
        -h | --help)
            sed -n '2,/^$/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
            exit 0
            ;;
        *) pyargs+=("$1"); shift ;;
        esac
    done
    [ "$(id -u)" = 0 ] || { echo "writers.sh: run as root (the servers run as postgres through runuser)" >&2; exit 2; }
    ((${#labels[@]} <= 99)) || exit 2

    PY=${BENCH41_PY:-$BENCH/.venv/bin/python}
    step "Python venv with psycopg ($PY)"
    if [ ! -x "$PY" ]; then python3 -m venv "$(dirname "$(dirname "$PY")")"; fi
    "$PY" -c 'import psycopg' 2>/dev/null || "$PY" -m pip install -q "$(grep '^psycopg' "$BENCH/requirements.txt")"

    if ((${#labels[@]} == 0)); then
        local pkg=/tmp/bench41-pkg
        if [ "$skip_build" = 1 ] && [ -f "$pkg$("$PG_CONFIG" --pkglibdir)/simhash_ext.so" ]; then
            step "build: skipped, using $pkg"
        else
            step "build: cargo pgrx package (release) of $ROOT into $pkg (log /tmp/bench41-package.log)"
            if ! (cd "$ROOT" && cargo pgrx package --pg-config "$PG_CONFIG" --out-dir "$pkg") >/tmp/bench41-package.log 2>&1; then
                tail -40 /tmp/bench41-package.log >&2
                exit 1
            fi
        fi
        labels=("$(cd "$ROOT" && git rev-parse --short HEAD)") kinds=(package) dirs=("$pkg")
    fi

    local i servers=()
    pgbins=() srvdirs=() # global: the EXIT trap runs after main has returned
    stop_all() {
        local j
        for j in "${!srvdirs[@]}"; do PG_BIN=${pgbins[$j]} stop_server "${srvdirs[$j]}"; done
    }
    trap stop_all EXIT
    for i in "${!labels[@]}"; do
        local port=$((port_base + i)) srv=/tmp/bench41-srv-$((port_base + i))
        if [ "${kinds[$i]}" = package ]; then
            [ -f "${dirs[$i]}$("$PG_CONFIG" --pkglibdir)/simhash_ext.so" ] ||
                { echo "writers.sh: no simhash_ext.so for $PG_CONFIG in package ${dirs[$i]}" >&2; exit 1; }
            step "${labels[$i]}: private PostgreSQL in /tmp/bench41-pg-$((port_base + i)) loading ${dirs[$i]}"
            private_postgres "${dirs[$i]}" "/tmp/bench41-pg-$((port_base + i))"
        else
            [ -x "${dirs[$i]}/bin/postgres" ] || { echo "writers.sh: no ${dirs[$i]}/bin/postgres" >&2; exit 1; }
            PG_BIN=${dirs[$i]}/bin
        fi
        step "${labels[$i]}: server $srv on port $port"
        pgbins+=("$PG_BIN") srvdirs+=("$srv")
        start_server "$srv" "$port"
        servers+=(--server "${labels[$i]}=$port")
    done

    local note
    note="Machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), nproc = $(nproc), load average at the start $(cut -d' ' -f1-3 /proc/loadavg); $("${pgbins[0]}/postgres" --version), default configuration; $(date -u '+%Y-%m-%d %H:%M UTC'); bench/writers.sh of commit $(cd "$ROOT" && git rev-parse --short HEAD)."
    local quickargs=()
    [ "$quick" = 1 ] && quickargs=(--holds 1,100,1000 --seconds 8)
    step "measuring (bench/writers.py)"
    "$PY" "$BENCH/writers.py" "${servers[@]}" --note "$note" "${quickargs[@]}" "${pyargs[@]}"
    step "done in $((SECONDS - START)) s"
}
main "$@"; exit # one line: the shell reads no further, whatever this file becomes during the run
