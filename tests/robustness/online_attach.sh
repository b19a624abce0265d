#!/usr/bin/env bash
# The online attach (issue 36) cancelled and crashed in each of its phases while the application
# writes: simhash_attach_concurrently() is held in a phase by what holds it in production — an open
# transaction that read the table (the first step retries under simhash.attach_lock_timeout), an
# application trigger waiting on a lock (the fill), an old snapshot (CREATE INDEX CONCURRENTLY), a
# writer open across the validation (the final wait) — and then cancelled (pg_cancel_backend) or its
# backend killed with SIGKILL, while pgbench inserts and updates rows of the table. Afterwards: the
# application's writes went on (pgbench without a failed transaction; after a crash, a new run), the
# table is usable and its writes fingerprinted, simhash_attachments() says 'attaching' (nothing at
# all when the first step never committed; 'attached' once the validation committed), an INVALID
# index is only ever left with the attach 'attaching'; the same CALL again resumes and finishes, no
# index is left INVALID, amcheck's bt_index_check (heapallindexed) passes on every B-tree (GIN has
# no checker in PostgreSQL 15; gin_index_check runs where it exists), every row's fingerprint is
# simhash(body) (signature minhash(body)) and its bands agree, and a near-duplicate is then
# rejected; simhash_detach() of an unfinished attach removes every column, constraint, trigger and
# index it made.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PORT=54349
DIR=/tmp/simhash-robust-online-attach
ROWS=3000
CLIENTS=3
start_server "$DIR" "$PORT" restart_after_crash=on
on_exit_stop "$DIR"
PGBENCH=$PG_BIN/pgbench

q postgres >/dev/null <<'SQL'
CREATE EXTENSION simhash_ext;
CREATE EXTENSION amcheck;
CREATE TABLE other (id int);
INSERT INTO other VALUES (1);
-- An application trigger that, for one row, waits on an advisory lock: the fill's UPDATE of that row
-- waits while a session holds the lock.
CREATE FUNCTION wait_for_app() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(4242);
  RETURN NEW;
END $$;
SQL
HAS_GIN_CHECK=$(q postgres -c "SELECT count(*) FROM pg_proc WHERE proname = 'gin_index_check'")

# The application's load on table :tbl: a new row of random words, an update of another column of
# one of the first 1,000 rows, and a new text for one of the next 1,000 (single statements).
cat >"$DIR/load.sql" <<'SQL'
\set r random(1, 1000)
INSERT INTO :tbl (title, body) VALUES ('load', 'load ' || md5(random()::text) || ' ' || md5(random()::text) || ' '
  || md5(random()::text) || ' ' || md5(random()::text) || ' ' || md5(random()::text) || ' ' || md5(random()::text));
UPDATE :tbl SET title = 'touched' WHERE id = :r;
UPDATE :tbl SET body = 'edit ' || md5(random()::text) || ' ' || md5(random()::text) || ' ' || md5(random()::text) || ' '
  || md5(random()::text) || ' ' || md5(random()::text) || ' ' || md5(random()::text) WHERE id = :r + 1000;
SQL
chmod 644 "$DIR/load.sql"

# load_start TABLE SECONDS NAME: pgbench on TABLE in the background ($load_pid).
load_start() {
    (cd "$DIR" && runuser -u postgres -- "$PGBENCH" -n -h /tmp -p "$PORT" -U postgres -c "$CLIENTS" -j 1 -T "$2" \
        -D tbl="$1" -f load.sql postgres) >"$DIR/$3.pgbench" 2>&1 &
    load_pid=$!
}

# session NAME SQL...: a background psql (application_name NAME) that runs each SQL in turn and then
# sleeps in its open transaction until ended with end_session.
session() {
    local name=$1
    shift
    local args=()
    for s in "$@"; do args+=(-c "$s"); done
    PGAPPNAME=$name "$PSQL" -X -q -h /tmp -p "$PORT" -U postgres -d postgres "${args[@]}" -c "SELECT pg_sleep(600)" \
        >"$DIR/$name.out" 2>&1 &
    wait_for "session $name holds its locks" \
        "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE application_name = '$name' AND query = 'SELECT pg_sleep(600)')"
}
pid_of() { q postgres -c "SELECT pid FROM pg_stat_activity WHERE application_name = '$1'"; }
# end_session NAME: ends the session (its transaction rolls back), if it is still there.
end_session() {
    local pid
    pid=$(pid_of "$1")
    [ -z "$pid" ] || q postgres -c "SELECT pg_terminate_backend($pid, 10000)" >/dev/null
}

# wait_for WHAT SQL: polls SQL (a boolean) until true, at most 60 s.
wait_for() {
    local i
    for i in $(seq 1200); do
        [ "$(q postgres -c "$2" 2>/dev/null)" = t ] && return 0
        sleep 0.05
    done
    fail "timed out waiting until $1"
}
# blocked_by NAME: the condition that the attach waits for session NAME.
blocked_by() {
    echo "SELECT EXISTS (SELECT FROM pg_stat_activity a, pg_stat_activity b
                         WHERE a.application_name = 'attacher' AND b.application_name = '$1'
                           AND b.pid = ANY (pg_blocking_pids(a.pid)))"
}

# attach_start TABLE METHOD: CALL simhash_attach_concurrently() in the background ($attach_pid).
attach_call() {
    echo "CALL simhash_attach_concurrently('$1', 'body', method => '$2', on_duplicate => 'error'$([ "$2" = simhash ] && echo ", max_distance => 3"))"
}
attach_start() {
    PGAPPNAME=attacher "$PSQL" -X -q -h /tmp -p "$PORT" -U postgres -d postgres -v ON_ERROR_STOP=1 \
        -c "SET simhash.attach_lock_timeout = 100" -c "SET simhash.attach_batch_size = 200" -c "$(attach_call "$1" "$2")" \
        >"$DIR/attach.out" 2>&1 &
    attach_pid=$!
    wait_for "the attach has started" "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE application_name = 'attacher')"
}

state_of() {
    q postgres -c "SELECT coalesce((SELECT state FROM simhash_attachments() WHERE table_name = '$1'::regclass), 'none')"
}
loaded() { q postgres -c "SELECT count(*) FROM $1 WHERE title = 'load'"; }
wait_server() {
    local i
    for i in $(seq 600); do
        q postgres -c "SELECT 1" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    fail "the server did not come back"
}

# interrupt TABLE MODE: cancels the attach or kills its backend, once the application has written
# during the pause; then checks that the load went on (cancel) or recovers (kill).
interrupt() {
    local table=$1 mode=$2 before pid first_load
    # The load started with the attach may be over by now (on a busy machine the attach takes long
    # to reach its pause): a second one writes during the pause, and both must not fail.
    first_load=$load_pid
    before=$(loaded "$table")
    load_start "$table" 3 "$table.paused"
    # On a busy machine pgbench's clients may take a while to get going: wait for their rows.
    wait_for "the application inserted rows while the attach was paused" \
        "SELECT count(*) > $before FROM $table WHERE title = 'load'"
    pass "$mode: the application inserted rows while the attach was paused"
    pid=$(pid_of attacher)
    [ -n "$pid" ] || fail "no attach backend"
    if [ "$mode" = cancel ]; then
        q postgres -c "SELECT pg_cancel_backend($pid)" >/dev/null
        wait "$attach_pid" && fail "the cancelled attach succeeded"
        expect_contains "$mode: the attach was cancelled" "$(cat "$DIR/attach.out")" "canceling statement due to user request"
        local run
        for run in "$first_load:$table" "$load_pid:$table.paused"; do
            wait "${run%%:*}" || fail "pgbench failed: $(tail -5 "$DIR/${run#*:}.pgbench")"
            expect_contains "$mode: no write of the application failed (${run#*:})" \
                "$(cat "$DIR/${run#*:}.pgbench")" "number of failed transactions: 0 "
        done
        measure "$table: pgbench during the attach" "$(grep -E '^tps' "$DIR/$table.pgbench" | head -1)"
    else
        local crashes
        crashes=$(grep -c "was terminated by signal 9: Killed" "$DIR/server.log" || true)
        kill -KILL "$pid"
        wait "$attach_pid" || true
        wait "$first_load" "$load_pid" || true
        wait_server
        expect "$mode: the server recovered from the killed attach" \
            "$(grep -c "was terminated by signal 9: Killed" "$DIR/server.log")" $((crashes + 1))
        (cd "$DIR" && runuser -u postgres -- "$PGBENCH" -n -h /tmp -p "$PORT" -U postgres -c "$CLIENTS" -j 1 -T 2 \
            -D tbl="$table" -f load.sql postgres) >"$DIR/$table.after.pgbench" 2>&1 ||
            fail "pgbench after the crash failed: $(tail -5 "$DIR/$table.after.pgbench")"
        pass "$mode: the application writes again after the crash"
    fi
    for s in holder locker snapshot progress writer; do end_session "$s"; done
}

# usable TABLE METHOD: the table reads, takes writes, and fingerprints them.
usable() {
    local fp=body_simhash fn=simhash
    [ "$2" = minhash ] && fp=body_minhash fn=minhash
    expect "the table takes a write, fingerprinted" \
        "$(q postgres -c "INSERT INTO $1 (title, body) VALUES ('probe', 'probe ' || md5('$1') || ' ' || md5('x$1') || ' ' || md5('y$1'))
                          RETURNING $fp = $fn(body)")" t
}

# invalid_announced TABLE: an INVALID index of the table is only there while the attach is 'attaching'.
invalid_announced() {
    local invalid
    invalid=$(q postgres -c "SELECT count(*) FROM pg_index WHERE indrelid = '$1'::regclass AND NOT indisvalid")
    measure "$1: INVALID indexes left" "$invalid"
    if ((invalid > 0)); then
        expect "an INVALID index is left only with the attach 'attaching'" "$(state_of "$1")" attaching
    fi
}

# finished TABLE METHOD: the attach is finished and everything it made is sound.
finished() {
    local table=$1 method=$2
    expect "$table: attached" "$(state_of "$table")" attached
    expect "$table: nothing left in simhash_attach_progress" \
        "$(q postgres -c "SELECT count(*) FROM simhash_attach_progress WHERE table_name = '$table'::regclass")" 0
    expect "$table: no INVALID index" "$(q postgres -c "SELECT count(*) FROM pg_index WHERE indrelid = '$table'::regclass AND NOT indisvalid")" 0
    expect "$table: every B-tree passes bt_index_check(heapallindexed)" \
        "$(q postgres -c "SELECT count(*) = count(length(bt_index_check(i.indexrelid, true)::text))
                          FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
                          WHERE i.indrelid = '$table'::regclass AND a.amname = 'btree'")" t
    if [ "$method" = simhash ]; then
        expect "$table: four band indexes" \
            "$(q postgres -c "SELECT count(*) FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
                              WHERE i.indrelid = '$table'::regclass AND a.attname ~ '^body_band[0-3]$'")" 4
        expect "$table: every fingerprint is simhash(body), every band agrees" \
            "$(q postgres -c "SELECT count(*) || ' rows, ' || count(*) FILTER (WHERE body_simhash IS DISTINCT FROM simhash(body)
                                OR ARRAY[body_band0, body_band1, body_band2, body_band3] IS DISTINCT FROM simhash_bands(body_simhash))
                              || ' wrong' FROM $table")" "$(q postgres -c "SELECT count(*) FROM $table") rows, 0 wrong"
    else
        expect "$table: one GIN band index" \
            "$(q postgres -c "SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
                              WHERE i.indrelid = '$table'::regclass AND a.amname = 'gin'")" 1
        if ((HAS_GIN_CHECK)); then
            expect "$table: the GIN index passes gin_index_check" \
                "$(q postgres -c "SELECT count(*) = count(length(gin_index_check(i.indexrelid)::text))
                                  FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
                                  WHERE i.indrelid = '$table'::regclass AND a.amname = 'gin'")" t
        fi
        expect "$table: every signature is minhash(body), every band key agrees" \
            "$(q postgres -c "SELECT count(*) || ' rows, ' || count(*) FILTER (WHERE body_minhash IS DISTINCT FROM minhash(body)
                                OR body_lsh IS DISTINCT FROM minhash_bands(body_minhash)) || ' wrong' FROM $table")" \
            "$(q postgres -c "SELECT count(*) FROM $table") rows, 0 wrong"
    fi
    expect "$table: a near-duplicate is rejected (23505)" \
        "$(sqlstate postgres "INSERT INTO $table (title, body) SELECT 'dup', body FROM $table WHERE id = 7")" 23505
}

# resume TABLE METHOD: the same CALL again finishes.
resume() {
    local out
    out=$(q postgres -c "SET simhash.attach_batch_size = 200" -c "$(attach_call "$1" "$2")" 2>&1) ||
        fail "$1: the CALL again failed: $out"
    pass "$1: the CALL again finished"
}

# objects TABLE: what an attach made that is left on the table.
objects() {
    q postgres -c "SELECT (SELECT count(*) FROM pg_attribute WHERE attrelid = '$1'::regclass AND attname LIKE 'body\_%' AND NOT attisdropped)
                          || ' columns, ' || (SELECT count(*) FROM pg_constraint WHERE conrelid = '$1'::regclass AND conname LIKE 'simhash%')
                          || ' constraints, ' || (SELECT count(*) FROM pg_trigger WHERE tgrelid = '$1'::regclass AND tgname LIKE 'simhash%')
                          || ' triggers, ' || (SELECT count(*) FROM pg_index WHERE indrelid = '$1'::regclass AND NOT indisprimary)
                          || ' indexes'"
}

# 1. The first step, retrying behind a reader's ACCESS SHARE lock: nothing is attached afterwards,
# and the CALL again attaches from the start.
phase_begin() {
    local mode=$1 table=t_begin_$1
    echo "-- first step, $mode"
    make_corpus postgres "$table" "$ROWS"
    load_start "$table" 6 "$table"
    session holder "BEGIN" "SELECT count(*) FROM $table"
    attach_start "$table" simhash
    wait_for "the first step waits for the reader" "$(blocked_by holder)"
    interrupt "$table" "$mode"
    expect "$mode: nothing attached" "$(state_of "$table")" none
    expect "$mode: the table is unchanged" "$(objects "$table")" "0 columns, 0 constraints, 0 triggers, 0 indexes"
    resume "$table" simhash
    finished "$table" simhash
}

# 2. The fill, waiting on the application's trigger for one row near the end of the table.
phase_fill() {
    local mode=$1 table=t_fill_$1
    echo "-- fill, $mode"
    make_corpus postgres "$table" "$ROWS"
    q postgres -c "CREATE TRIGGER app BEFORE UPDATE ON $table FOR EACH ROW WHEN (OLD.id = $ROWS - 5) EXECUTE FUNCTION wait_for_app()"
    load_start "$table" 6 "$table"
    session locker "SELECT pg_advisory_lock(4242)"
    attach_start "$table" simhash
    wait_for "the fill waits for the application" \
        "$(blocked_by locker) AND EXISTS (SELECT FROM simhash_attach_progress WHERE table_name = '$table'::regclass AND phase = 'filling')"
    interrupt "$table" "$mode"
    expect "$mode: the attach is 'attaching'" "$(state_of "$table")" attaching
    expect "$mode: some rows are fingerprinted, some not yet" \
        "$(q postgres -c "SELECT count(body_simhash) > 0 AND count(*) FILTER (WHERE body_simhash IS NULL) > 0 FROM $table")" t
    usable "$table" simhash
    invalid_announced "$table"
    resume "$table" simhash
    finished "$table" simhash
}

# 3. CREATE INDEX CONCURRENTLY, waiting for an old snapshot: the cancelled or crashed build leaves
# an INVALID index, which the CALL again drops and builds anew. detach: simhash_detach() instead.
phase_indexes() {
    local mode=$1 table=t_indexes_$1
    echo "-- indexes, $mode"
    make_corpus postgres "$table" "$ROWS"
    load_start "$table" 6 "$table"
    session snapshot "BEGIN ISOLATION LEVEL REPEATABLE READ" "SELECT count(*) FROM other"
    attach_start "$table" simhash
    wait_for "CREATE INDEX CONCURRENTLY waits for the old snapshot" \
        "$(blocked_by snapshot) AND EXISTS (SELECT FROM simhash_attach_progress WHERE table_name = '$table'::regclass AND phase = 'building indexes')"
    interrupt "$table" "${mode/detach/cancel}"
    expect "${mode}: the attach is 'attaching'" "$(state_of "$table")" attaching
    expect "${mode}: the interrupted build left an INVALID index" \
        "$(q postgres -c "SELECT count(*) > 0 FROM pg_index WHERE indrelid = '$table'::regclass AND NOT indisvalid")" t
    usable "$table" simhash
    invalid_announced "$table"
    if [ "$mode" = detach ]; then
        q postgres -c "SELECT simhash_detach('$table')" >/dev/null
        expect "simhash_detach() of the unfinished attach removes everything it made" \
            "$(objects "$table")" "0 columns, 0 constraints, 0 triggers, 0 indexes"
        expect "... and the attachment" "$(state_of "$table")" none
        expect "... and the rows stay" "$(q postgres -c "SELECT count(*) >= $ROWS FROM $table")" t
        resume "$table" simhash
    else
        resume "$table" simhash
    fi
    finished "$table" simhash
}

# 4. The final wait (MinHash: one band index). An old snapshot holds the index build; the attach's
# row of progress is then held, so that it stops just before it validates; a writer opens and
# writes a copy of a row (not checked: the attach has not finished); the validation commits and the
# attach waits for that writer.
LATE_FAILURES=()
phase_validate() {
    local mode=$1 table=t_validate_$1 out
    echo "-- final wait, $mode"
    make_corpus postgres "$table" "$ROWS"
    load_start "$table" 8 "$table"
    session snapshot "BEGIN ISOLATION LEVEL REPEATABLE READ" "SELECT count(*) FROM other"
    attach_start "$table" minhash
    wait_for "the index build waits for the old snapshot" \
        "$(blocked_by snapshot) AND EXISTS (SELECT FROM simhash_attach_progress WHERE table_name = '$table'::regclass AND phase = 'building indexes')"
    session progress "BEGIN" "SELECT 1 FROM simhash_internal.attach_progress WHERE table_name = '$table'::regclass FOR UPDATE"
    end_session snapshot
    wait_for "the attach waits to report that it validates" "$(blocked_by progress)"
    session writer "BEGIN" "INSERT INTO $table (title, body) SELECT 'unchecked', body FROM $table WHERE id = 8"
    end_session progress
    wait_for "the attach has validated and waits for the writer" \
        "$(blocked_by writer) AND EXISTS (SELECT FROM simhash_attachments() WHERE table_name = '$table'::regclass AND state = 'attached')"
    interrupt "$table" "$mode"
    # The validation had committed: the column is attached (and checked) already.
    expect "$mode: the attach is 'attached'" "$(state_of "$table")" attached
    usable "$table" minhash
    invalid_announced "$table"
    # The call never returned, so whether every earlier writer had finished is unknown: the same
    # CALL again should wait for them and return.
    if out=$(q postgres -c "$(attach_call "$table" minhash)" 2>&1); then
        pass "$mode: the CALL again finished"
    else
        printf '  FAIL  %s\n' "$mode: the CALL again after an interrupted final wait failed: $out" >&2
        LATE_FAILURES+=("$table")
    fi
    finished "$table" minhash
}

started=$(date +%s)
for mode in cancel kill; do phase_begin "$mode"; done
for mode in cancel kill; do phase_fill "$mode"; done
for mode in cancel kill detach; do phase_indexes "$mode"; done
for mode in cancel kill; do phase_validate "$mode"; done
measure "seconds for every phase, cancelled and killed" "$(($(date +%s) - started))"
((${#LATE_FAILURES[@]} == 0)) || fail "the CALL again did not finish after an interrupted final wait: ${LATE_FAILURES[*]}"
