#!/usr/bin/env bash
# simhash_ext on a Citus cluster (issue 12): a coordinator and two workers on loopback (ports
# 54371-54373, CITUS_PORT_BASE moves them; data under CITUS_DIR, /tmp/citus-simhash), Citus and
# simhash_ext installed in the PostgreSQL of $PG_CONFIG (15 to 18; Debian's 15 unless set). Starts
# the cluster once, checks that CREATE EXTENSION on the coordinator reached the workers, then runs
# each topic, a file of this folder sourced in a subshell of its own (each says what it checks):
#
#   simhash    SimHash: attach, lookups, pairs and clusters against brute force, refusals, detach,
#              near-duplicates rejected per site (scope), also under concurrent writers
#   registry   registry => true: rejected across the whole table through the view, the probes of
#              the shards, concurrent writers, flag/skip/min_length, the view following ALTER TABLE
#   minhash    MinHash: refusals, signatures on the shards, reposts rejected per site, concurrent
#              writers, lookups, pairs and clusters against brute force
#   verify     verification on the shards (issue 43), SimHash and MinHash
#   windows    the race windows of issue 48 on shards: a writer held in a worker's unique check
#              holds no key and no unrelated writer waits; an attachment of 0.12.0 gets its check
#              trigger through ALTER EXTENSION simhash_ext UPDATE
#   roles      the read paths as roles (issue 33): privileges and row-level security
#   upgrade    a registry attachment of 0.3.0 through ALTER EXTENSION simhash_ext UPDATE
#
#   bash tests/citus/run.sh [TOPIC...]      # default: every topic, once each, in the order above
#
# A topic stops at its first failed check (lib.sh, fail); the others still run. Prints each topic's
# status and time, then `citus: N of M topics passed`, and exits non-zero when a check failed.
# Prints "skipped: ..." and exits 77 when Citus is not installed (docs/citus.md, Setup).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CITUS_HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ALL_TOPICS=(simhash registry minhash verify windows roles upgrade)
TOPICS=()
for t in "$@"; do
    [[ " ${ALL_TOPICS[*]} " == *" $t "* ]] || {
        echo "run.sh: no topic $t (topics: ${ALL_TOPICS[*]})" >&2
        exit 2
    }
    [[ " ${TOPICS[*]} " == *" $t "* ]] || TOPICS+=("$t")
done
((${#TOPICS[@]})) || TOPICS=("${ALL_TOPICS[@]}")

if ! citus_installed; then
    echo "skipped: Citus is not installed for $PG_CONFIG"
    exit 77
fi
on_exit_stop_cluster
start_cluster
measure "Citus" "$(qn "$COORDINATOR" -c "SELECT extversion FROM pg_extension WHERE extname = 'citus'")"
measure "PostgreSQL" "$(qn "$COORDINATOR" -c "SHOW server_version")"
expect "simhash_ext created on both workers by CREATE EXTENSION on the coordinator" \
    "$(qn "$COORDINATOR" -c "SELECT string_agg(result, ',') FROM run_command_on_workers(
        \$\$SELECT extversion FROM pg_extension WHERE extname = 'simhash_ext'\$\$)")" \
    "$(qn "$COORDINATOR" -c "SELECT extversion || ',' || extversion FROM pg_extension WHERE extname = 'simhash_ext'")"

# Each topic in a subshell: its variables and functions stay its own, its first failed check (exit)
# ends it only, and the files it put into the extension directory (install_extension_file) are
# taken back when it ends. The subshell is a plain command, so that set -e stays in force in it.
CITUS_RUNNER=1
failed=()
for t in "${TOPICS[@]}"; do
    echo "== citus/$t"
    start=$(date +%s)
    set +e
    (
        set -e
        trap restore_extension_files EXIT
        source "$CITUS_HERE/$t.sh"
    )
    status=$?
    set -e
    if ((status == 0)); then
        printf '   %s: passed in %d s\n' "$t" $(($(date +%s) - start))
    else
        printf '   %s: FAILED in %d s\n' "$t" $(($(date +%s) - start))
        failed+=("$t")
    fi
done
echo "citus: $((${#TOPICS[@]} - ${#failed[@]})) of ${#TOPICS[@]} topics passed${failed[*]:+; failed: ${failed[*]}}"
((${#failed[@]} == 0))
