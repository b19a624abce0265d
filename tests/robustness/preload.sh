#!/usr/bin/env bash
# Preloading (docs/ARCHITECTURE.md §12.4): with shared_preload_libraries = 'simhash_ext' the jieba dictionary is built
# in the postmaster and inherited by every backend, so a new connection's first simhash() call costs
# no dictionary load. Measures that first simhash(tokenizer => 'jieba') call (median of several new connections) with and without
# preloading, and the postmaster's RSS, which holds the dictionary when preloaded.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PORT=54345
DIR=/tmp/simhash-robust-preload
CONNECTIONS=7
on_exit_stop "$DIR"

# first_calls : for each new connection, "FIRST SECOND" times of two simhash(tokenizer => 'jieba')
# calls, in ms (the dictionary matters to the jieba tokenizer only).
first_calls() {
    local i
    for i in $(seq "$CONNECTIONS"); do
        "$PSQL" -X -q -At -h /tmp -p "$PORT" -U postgres -d postgres -c '\timing on' \
            -c "SELECT simhash('北京地铁19号线今天开通，全长22公里。Line 19 opens today.', tokenizer => 'jieba')" \
            -c "SELECT simhash('杭州本周天气：冷空气南下，气温明显下降。', tokenizer => 'jieba')" |
            awk '/^Time:/ { printf "%s ", $2 } END { print "" }'
    done
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

declare -A first second rss
for mode in without with; do
    if [ "$mode" == with ]; then
        start_server "$DIR" "$PORT" shared_preload_libraries=simhash_ext
    else
        start_server "$DIR" "$PORT"
    fi
    q postgres -c "CREATE EXTENSION simhash_ext"
    expect "$mode preloading: shared_preload_libraries" "$(q postgres -c "SHOW shared_preload_libraries")" \
        "$([ "$mode" == with ] && echo simhash_ext || echo '')"
    times=$(first_calls)
    first[$mode]=$(awk '{ print $1 }' <<<"$times" | median)
    second[$mode]=$(awk '{ print $2 }' <<<"$times" | median)
    rss[$mode]=$(($(vm_kb "$(head -1 "$DIR/data/postmaster.pid")" VmRSS) / 1024))
    measure "$mode preloading: first simhash() of a new connection, median of $CONNECTIONS (ms)" "${first[$mode]}"
    measure "$mode preloading: second call (ms)" "${second[$mode]}"
    measure "$mode preloading: postmaster RSS (MB)" "${rss[$mode]}"
    stop_server "$DIR"
done

expect "the first call is at least 5x faster with preloading" \
    "$(awk -v a="${first[with]}" -v b="${first[without]}" 'BEGIN { print (a * 5 <= b) ? "yes" : "no" }')" yes
expect "with preloading the first call costs no dictionary load (under 20 ms)" \
    "$(awk -v a="${first[with]}" 'BEGIN { print (a < 20) ? "yes" : "no" }')" yes
expect "the preloaded postmaster holds the dictionary (RSS at least 20 MB more)" \
    "$(awk -v a="${rss[with]}" -v b="${rss[without]}" 'BEGIN { print (a >= b + 20) ? "yes" : "no" }')" yes
