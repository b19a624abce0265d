#!/usr/bin/env bash
# peak_rss.sh start PID: sample the private memory (RssAnon) of process PID every 20 ms in the background.
# peak_rss.sh stop: stop sampling and print the peak in MB. Shared buffers are not counted.
state=/tmp/simhash-peak-rss
case "$1" in
start)
    echo 0 > "$state.max"
    (while kill -0 "$2" 2>/dev/null; do
        kb=$(awk '/^RssAnon:/ {print $2}' "/proc/$2/status" 2>/dev/null)
        [ -n "$kb" ] && [ "$kb" -gt "$(cat "$state.max")" ] && echo "$kb" > "$state.max"
        sleep 0.02
    done) >/dev/null 2>&1 &
    echo $! > "$state.pid"
    ;;
stop)
    kill "$(cat "$state.pid")" 2>/dev/null
    echo $(( $(cat "$state.max") / 1024 ))
    ;;
esac
