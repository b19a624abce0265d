#!/usr/bin/env bash
# The simhash_ext benchmark, in one command, as root on Debian 12:   bash bench/run.sh
#
# Installs what it lacks (apt packages, a Python venv in bench/.venv), builds the release build of
# the extension into a private copy of PostgreSQL 15 (so that nobody's debug install in the system
# directories can change what is measured, and nothing system-wide is touched), reads the real text
# shipped on this machine, starts its own throwaway server (port 54340, /tmp/simhash-bench), and
# regenerates every table into bench/results/*.md, printing them as it goes. See bench/README.md.
#
# Environment knobs (defaults in brackets): BENCH_REPS [5] timed runs per throughput figure,
# BENCH_THROUGHPUT_MB [24] MB of text per language for throughput, BENCH_PY_MB [2] MB given to the
# (slow) Python simhash package, BENCH_BASES [150] base documents per language in the accuracy set,
# BENCH_QUIET_WAIT [180] seconds the throughput stage may wait for CPU 0 to be quiet,
# BENCH_ONLY [all] the stages to run, of: throughput spread accuracy write lookup (e.g.
# BENCH_ONLY="throughput write" for issue 10's throughput and bulk-write figures in one run).

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../scripts/common.sh
source "$BENCH/../scripts/common.sh" # set -euo pipefail, ROOT, PG_CONFIG, start_server, stop_server, ...

SERVER_DIR=/tmp/simhash-bench
export BENCH_PORT=54340
PRIVATE_PG=/tmp/simhash-bench-pg   # a relocated copy of PostgreSQL 15 with our release build
PACKAGE=/tmp/simhash-bench-pkg     # `cargo pgrx package` output: the .so and its SQL script
PY=$BENCH/.venv/bin/python
START=$SECONDS

step() { printf '\n[%4ds] == %s\n' $((SECONDS - START)) "$*" >&2; }

step "tools: apt packages, cargo-pgrx, Python venv"
ensure_tools # postgresql-15, -server-dev-15, -contrib, clang, cargo-pgrx (skips what is there)
missing=()
for pkg in gettext manpages-zh util-linux binutils; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
python3 -c 'import venv, ensurepip' 2>/dev/null || missing+=(python3-venv)
if ((${#missing[@]})); then
    step "apt-get install ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
[ -x "$PY" ] || python3 -m venv "$BENCH/.venv"
if ! "$PY" -c 'import chdb, simhash, jieba, psycopg' 2>/dev/null; then
    step "pip install -r bench/requirements.txt (into bench/.venv)"
    "$PY" -m pip install -q -r "$BENCH/requirements.txt"
fi

step "build: the core example (release) and the extension package (release)"
cd "$ROOT"
cargo build --release -q -p simhash_core --example throughput
if ! cargo pgrx package --pg-config "$PG_CONFIG" --out-dir "$PACKAGE" >"$BENCH/.package.log" 2>&1; then
    if [ -f "$PACKAGE$("$PG_CONFIG" --pkglibdir)/simhash_ext.so" ]; then
        step "WARNING: cargo pgrx package failed (see bench/.package.log); using the previous package"
    else
        cat "$BENCH/.package.log" >&2
        exit 1
    fi
fi

step "private PostgreSQL 15 in $PRIVATE_PG (system binaries, our release build of simhash_ext)"
# PostgreSQL finds its share/ and lib/ directories relative to the postgres executable, so a copy of
# the executables under the same relative layout uses the copied share/ and lib/ directories.
private_postgres "$PACKAGE" "$PRIVATE_PG" # sets PG_BIN for start_server / stop_server
export BENCH_PKGLIB=$PRIVATE_PKGLIB

step "corpus: reading the real text shipped on this machine into bench/data/"
"$PY" "$BENCH/prepare.py"

step "server: $SERVER_DIR on port $BENCH_PORT"
start_server "$SERVER_DIR" "$BENCH_PORT" shared_buffers=512MB
trap 'stop_server "$SERVER_DIR"' EXIT
psql -h /tmp -p "$BENCH_PORT" -U postgres -qX -v ON_ERROR_STOP=1 \
    -c 'CREATE EXTENSION simhash_ext' -c 'CREATE EXTENSION pg_trgm'

# wants STAGE: whether BENCH_ONLY (a list of stages) is unset or names it.
wants() { [ -z "${BENCH_ONLY:-}" ] || [[ " $BENCH_ONLY " == *" $1 "* ]]; }

if wants throughput; then
    step "1. throughput (one core: taskset -c 0)"
    taskset -c 0 "$PY" "$BENCH/throughput.py"
fi

if wants spread; then
    step "2-3. accuracy and spread of the candidate fingerprints (core crate, no server)"
    (cd "$BENCH/.." && cargo build --release -p simhash_core --example spread)
    "$PY" "$BENCH/spread.py"
fi

if wants accuracy; then
    step "2b. balanced precision/recall and band skew through SQL (results/accuracy_balanced.md, bands_sql.md)"
    "$PY" "$BENCH/accuracy.py"
    "$PY" "$BENCH/bands.py"
fi

if wants write; then
    step "4. write cost"
    "$PY" "$BENCH/write_cost.py"
fi

if wants lookup; then
    step "5. lookup latency"
    "$PY" "$BENCH/lookup.py"
fi

if [ -n "${BENCH_ONLY:-}" ]; then
    step "done (BENCH_ONLY=$BENCH_ONLY) in $((SECONDS - START)) s"
    exit 0
fi

step "machine"
elapsed=$((SECONDS - START))
{
    echo "## Machine and run"
    echo
    echo "- CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), nproc = $(nproc)"
    echo "- RAM: $(free -g | awk '/^Mem:/ {print $2}') GiB"
    echo "- OS: $(. /etc/os-release && echo "$PRETTY_NAME"), kernel $(uname -r)"
    echo "- PostgreSQL: $("$PG_BIN/postgres" --version), simhash_ext release build from the working tree"
    echo "- Source: commit $(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD -- src core 2>/dev/null || echo ' (with uncommitted changes under src/ or core/)')"
    echo "- Python $("$PY" -c 'import sys; print(sys.version.split()[0])'); $("$PY" -m pip list 2>/dev/null | awk '$1 ~ /^(chdb|simhash|jieba|psycopg)$/ {printf "%s %s, ", $1, $2}' | sed 's/, $//')"
    echo "- Date: $(date -u '+%Y-%m-%d %H:%M UTC'); \`bash bench/run.sh\` took ${elapsed} s"
    echo
    echo "Corpus (data/sources.txt):"
    echo
    sed 's/^/    /' "$BENCH/data/sources.txt"
} >"$BENCH/results/machine.md"
cat "$BENCH/results/machine.md"
step "done in ${elapsed} s; tables in bench/results/"
