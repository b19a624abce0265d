#!/usr/bin/env bash
# Runs every robustness test (issue 4) against the installed extension, each on its own throwaway
# server, and prints their measurements at the end. Exits non-zero when any test fails.
#
#   bash tests/robustness/run.sh [TEST...]      # default: all of them, in the order below
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TESTS=("$@")
((${#TESTS[@]})) || TESTS=(encodings limits upgrade old_library dump_restore preload crash oom online_attach copy_pause hammer)
LOG_DIR=/tmp/simhash-robust-logs
rm -rf "$LOG_DIR"
mkdir -p "$LOG_DIR"

failed=()
for t in "${TESTS[@]}"; do
    start=$(date +%s)
    if bash "$HERE/$t.sh" 2>&1 | tee "$LOG_DIR/$t.log"; then
        status=passed
    else
        status=FAILED
        failed+=("$t")
    fi
    printf '   %s: %s in %d s\n' "$t" "$status" $(($(date +%s) - start)) | tee -a "$LOG_DIR/$t.log"
done

echo
echo "== robustness measurements"
for t in "${TESTS[@]}"; do
    grep -h '^  measure' "$LOG_DIR/$t.log" | sed "s/^  measure  /  $t: /"
done
echo
echo "robustness: $((${#TESTS[@]} - ${#failed[@]})) of ${#TESTS[@]} tests passed${failed[*]:+; failed: ${failed[*]}}"
((${#failed[@]} == 0))
