#!/usr/bin/env bash
# The entry point of the maintained benchmarks (bench/README.md), as root on Debian 12:
#
#   bash bench/run.sh                  the core stages below, into bench/results/*.md
#   bash bench/run.sh list             the maintained benchmarks: name, script, what it measures
#   bash bench/run.sh NAME [ARGS...]   one of them by name; ARGS go to its script
#
# The core stages install what they lack (apt packages, a Python venv in bench/.venv), build the
# release build of the extension into a private copy of PostgreSQL 15 (so that nobody's debug
# install in the system directories can change what is measured, and nothing system-wide is
# touched), read the real text shipped on this machine, start their own throwaway server (port
# 54340, /tmp/simhash-bench), and regenerate their tables into bench/results/*.md, printing them as
# they go.
#
# Environment knobs of the core stages (defaults in brackets): BENCH_REPS [5] timed runs per
# throughput figure, BENCH_THROUGHPUT_MB [24] MB of text per language for throughput, BENCH_PY_MB [2]
# MB given to the (slow) Python simhash package, BENCH_BASES [150] base documents per language in the
# accuracy set, BENCH_QUIET_WAIT [180] seconds the throughput stage may wait for CPU 0 to be quiet,
# BENCH_ONLY [all] the stages to run, of: throughput accuracy write lookup (e.g.
# BENCH_ONLY="throughput write" for the throughput and bulk-write figures of docs/performance.md).

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# name|script under bench/|what it measures. Each is described in bench/README.md under its name.
BENCHMARKS=(
    "core|run.sh|fingerprint throughput, balanced accuracy, band skew, write cost, lookup latency"
    "search|search.sh|lookups at max_distance 3-8 (100k, 1M, 10M rows) and the 'error' write cost"
    "dedup|dedup.sh|simhash_pairs / simhash_clusters of 1M rows, uniform and skewed"
    "minhash_dedup|minhash_dedup.sh|the same dedup with MinHash beside SimHash"
    "minhash_cost|minhash_cost.sh|MinHash beside SimHash: bytes a row, attach, lookups, writes"
    "minhash_attach|minhash_attach.sh|where a MinHash attach of 1M rows spends its time"
    "online_attach|online_attach.sh|simhash_attach against simhash_attach_concurrently under load"
    "writers|writers.sh|writers of unrelated texts beside each other (issue 41's tables A and B)"
    "methods_ab|methods_ab.sh|two builds side by side on both methods (a change meant to change nothing)"
    "copy_kinds|copy_kinds.py|recall per kind of copy with each method's defaults"
    "trgm_baseline|trgm_baseline.py|pg_trgm's exclusion constraint beside simhash_attach"
    "huge_rows|huge_rows.py|a victim's write, lookup and pairs beside planted rows of 50 and 500 MB"
    "citus_scale|citus_scale.sh|single-row INSERTs into a Citus table as it grows"
    "citus_dedup|citus_dedup.sh|simhash_pairs of a Citus table on the workers and on the coordinator"
)

case "${1:-core}" in
list | -h | --help)
    printf '%-15s %-24s %s\n' name script "what it measures"
    for entry in "${BENCHMARKS[@]}"; do
        IFS='|' read -r name script what <<<"$entry"
        printf '%-15s %-24s %s\n' "$name" "bench/$script" "$what"
    done
    exit 0
    ;;
core)
    [ $# -eq 0 ] || shift # the stages below
    ;;
*)
    for entry in "${BENCHMARKS[@]}"; do
        IFS='|' read -r name script _ <<<"$entry"
        [ "$name" = "$1" ] || continue
        shift
        case $script in
        *.py)
            py=python3
            [ -x "$BENCH/.venv/bin/python" ] && py=$BENCH/.venv/bin/python
            exec "$py" "$BENCH/$script" "$@"
            ;;
        *) exec bash "$BENCH/$script" "$@" ;;
        esac
    done
    echo "bench/run.sh: no benchmark named '$1' (bash bench/run.sh list)" >&2
    exit 2
    ;;
esac

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

if wants accuracy; then
    step "2. balanced precision/recall and band skew through SQL (results/accuracy_balanced.md, bands_sql.md)"
    "$PY" "$BENCH/accuracy.py"
    "$PY" "$BENCH/bands.py"
fi

if wants write; then
    step "3. write cost"
    "$PY" "$BENCH/write_cost.py"
fi

if wants lookup; then
    step "4. lookup latency"
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
