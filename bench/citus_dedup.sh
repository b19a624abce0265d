#!/usr/bin/env bash
# Where the work of simhash_pairs on a Citus table is done (issue 26): the same count(*) of
# simhash_pairs('articles') paired on the workers (simhash.dedup_on_workers on, the default) and on
# the coordinator (off), alternating, with the wall time, the CPU time and the peak memory of the
# coordinator's backend (read from /proc by psql's \! on this machine).
#
#   bash bench/citus_dedup.sh [ROWS [ROUNDS]]      # default 1000000 2
#
# The cluster, the rows and the build are those of bench/citus_scale.sh (ports 54371-54373, data
# under /tmp/citus-simhash, PG_CONFIG naming a PostgreSQL with Citus). Writes
# bench/results/citus_dedup.md.
BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../scripts/common.sh
source "$BENCH/../scripts/common.sh"
ROWS=${1:-1000000}
ROUNDS=${2:-2}
PACKAGE=/tmp/simhash-citus-scale-pkg
PRIVATE_PG=/tmp/simhash-citus-scale-pg
PY=$BENCH/.venv/bin/python
START=$SECONDS
# shellcheck source=citus_lib.sh
source "$BENCH/citus_lib.sh" # citus_bench_cluster, citus_bench_corpus, citus_bench_rows
citus_bench_cluster
step "rows: $ROWS"
citus_bench_corpus
citus_bench_rows 0 "$ROWS"
qn "$COORDINATOR" -c "SELECT simhash_attach('articles', 'body', max_distance => 7)" -c "VACUUM ANALYZE articles" >/dev/null

# measure ON_WORKERS: "pairs seconds cpu_seconds peak_rss_mb" of one count(*) in a fresh session.
measure_pairs() {
    local out
    out=$(qn "$COORDINATOR" <<SQL
SET simhash.dedup_on_workers = $1;
SELECT pg_backend_pid() AS pid \gset
\setenv BACKEND :pid
\! awk '{ print "cpu0", \$14 + \$15 }' /proc/\$BACKEND/stat
\! date +'t0 %s%N'
SELECT 'pairs ' || count(*) FROM simhash_pairs('articles');
\! date +'t1 %s%N'
\! awk '{ print "cpu1", \$14 + \$15 }' /proc/\$BACKEND/stat
\! awk '/VmHWM/ { print "rss", \$2 }' /proc/\$BACKEND/status
SQL
    )
    awk -v hz="$(getconf CLK_TCK)" '
        $1 == "pairs" { pairs = $2 } $1 == "t0" { t0 = $2 } $1 == "t1" { t1 = $2 }
        $1 == "cpu0" { c0 = $2 } $1 == "cpu1" { c1 = $2 } $1 == "rss" { rss = $2 }
        END { printf "%d %.1f %.1f %d\n", pairs, (t1 - t0) / 1e9, (c1 - c0) / hz, rss / 1024 }' <<<"$out"
}

rows=()
for round in $(seq 1 "$ROUNDS"); do
    for mode in on off; do
        step "round $round, simhash.dedup_on_workers = $mode"
        read -r pairs secs cpu rss <<<"$(measure_pairs $mode)"
        label=$([ $mode = on ] && echo "on the workers" || echo "on the coordinator")
        rows+=("| $round | $label | $secs | $cpu | $rss | $pairs |")
        printf '%s\n' "${rows[-1]}"
    done
done

out=$ROOT/bench/results/citus_dedup.md
{
    echo "# simhash_pairs of a Citus table: on the workers or on the coordinator"
    echo
    echo "\`bash bench/citus_dedup.sh $ROWS $ROUNDS\`: Citus $(qn "$COORDINATOR" -c "SELECT extversion FROM pg_extension WHERE extname = 'citus'")"
    echo "on $("$PG_BIN/postgres" --version), a coordinator and two workers on one machine ($(nproc) cores,"
    echo "$(free -g | awk '/^Mem:/ {print $2}') GiB, $(date -u +%Y-%m-%d)); simhash_ext release build of commit $(git -C "$ROOT" rev-parse --short HEAD)."
    echo "$(printf "%'d" "$ROWS") rows of three real English paragraphs, 8 shards, max_distance 7. Each line is one"
    echo "\`SELECT count(*) FROM simhash_pairs('articles')\` in a new session; CPU and peak memory are the"
    echo "coordinator's backend's (from /proc), not the workers'."
    echo
    echo "| round | paired | seconds | coordinator CPU s | coordinator peak RSS MB | pairs |"
    echo "| ---: | --- | ---: | ---: | ---: | ---: |"
    printf '%s\n' "${rows[@]}"
} >"$out"
cat "$out"
