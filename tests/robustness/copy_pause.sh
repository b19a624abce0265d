#!/usr/bin/env bash
# Issue 48, U2: a COPY whose client pauses between rows holds up no writer of an unrelated text.
# A psql COPY FROM STDIN is fed its first row, then nothing for 3 s, then its second; meanwhile
# another session, with lock_timeout = 300ms, updates an unrelated row's text and inserts an
# unrelated text into the same tables ('error' and 'skip', SimHash and MinHash): each must finish
# at once (0.11.0: 55P03 on the table's written key or a shared part key). Then a near-duplicate of
# the paused COPY's first row is still caught once the COPY commits.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PORT=54346
DIR=/tmp/simhash-robust-copy-pause
start_server "$DIR" "$PORT"
on_exit_stop "$DIR"
q postgres -c "CREATE EXTENSION simhash_ext" >/dev/null

first='The harbour master said on Monday that the old ferry pier will close for repairs in May and reopen before the summer festival.'
second='A new bakery on the corner of Elm Street sells rye bread, cinnamon rolls and coffee from six in the morning every day.'
unrelated='Scientists counted more than four hundred migrating cranes resting on the frozen lake north of the village this week.'
unrelated2='The chess club moved its Tuesday meetings to the library basement, where there are more tables and better light.'
near_first='The harbour master said on Monday that the old ferry pier will close for repairs in May and reopen before the summer fair.'

for spec in "simhash error" "simhash skip" "minhash error" "minhash skip"; do
    read -r method mode <<<"$spec"
    t=t_${method}_$mode
    q postgres >/dev/null <<SQL
CREATE TABLE $t (id int PRIMARY KEY, body text);
SELECT simhash_attach('$t', 'body', method => '$method', on_duplicate => '$mode');
INSERT INTO $t VALUES (1, '$unrelated');
SQL
    # The COPY: its first row, a pause, its second row.
    {
        printf '10\t%s\n' "$first"
        sleep 3
        printf '11\t%s\n' "$second"
        printf '\\.\n'
    } | "$PSQL" -X -q -h /tmp -p "$PORT" -U postgres -d postgres -c "COPY $t (id, body) FROM STDIN" >"$DIR/copy_$t.log" 2>&1 &
    copy_pid=$!
    sleep 1
    t0=$(now_ms)
    expect "$t: an unrelated UPDATE beside the paused COPY" \
        "$(sqlstate postgres "SET lock_timeout = '300ms'; UPDATE $t SET body = '$unrelated2' WHERE id = 1")" 00000
    expect "$t: an unrelated INSERT beside the paused COPY" \
        "$(sqlstate postgres "SET lock_timeout = '300ms'; INSERT INTO $t VALUES (2, '$unrelated')")" 00000
    waited=$(($(now_ms) - t0))
    measure "$t: both writes beside the paused COPY (ms)" "$waited"
    ((waited < 1500)) || fail "$t: the unrelated writes took $waited ms beside a paused COPY"
    pass "$t: unrelated writes did not wait for the paused COPY"
    wait "$copy_pid" || fail "$t: the COPY failed: $(cat "$DIR/copy_$t.log")"
    case $mode in
    error) want=23505 ;;
    skip) want=00000 ;;
    esac
    expect "$t: a near-duplicate of the COPY's first row is caught" \
        "$(sqlstate postgres "INSERT INTO $t VALUES (12, '$near_first')")" "$want"
    expect "$t: rows" "$(q postgres -c "SELECT string_agg(id::text, ',' ORDER BY id) FROM $t")" "1,2,10,11"
done
