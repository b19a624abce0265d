# Two private PostgreSQL servers, A and B, for the interleaved A/B benchmarks (bench/leafmap_ab.sh,
# bench/security_ab.sh). Source it after setting PREFIX (A and B: complete PostgreSQL installs),
# PORTS (A and B) and DIR (their data directories, removed first).

sql() { # build, psql arguments (SQL on stdin or with -c)
    local build=$1
    shift
    "${PREFIX[$build]}/bin/psql" -h /tmp -p "${PORTS[$build]}" -U postgres -qXAt -v ON_ERROR_STOP=1 "$@"
}

stop_all() {
    for build in A B; do
        [ -f "$DIR/$build/postmaster.pid" ] &&
            runuser -u postgres -- "${PREFIX[$build]}/bin/pg_ctl" -D "$DIR/$build" -w stop -m fast >/dev/null
    done
    return 0
}

# start_all SHARED_BUFFERS: both servers, fresh, on loopback sockets only, without parallel workers,
# autovacuum or fsync; stopped when the script exits.
start_all() {
    rm -rf "$DIR"
    install -d -o postgres -g postgres "$DIR"
    trap stop_all EXIT
    local build
    for build in A B; do
        runuser -u postgres -- "${PREFIX[$build]}/bin/initdb" -D "$DIR/$build" -A trust -E UTF8 --locale=C.UTF-8 >/dev/null
        env -u RUST_BACKTRACE -u RUST_LIB_BACKTRACE runuser -u postgres -- "${PREFIX[$build]}/bin/pg_ctl" \
            -D "$DIR/$build" -l "$DIR/$build.log" -w start -o "-p ${PORTS[$build]} -k /tmp \
            -c listen_addresses='' -c shared_buffers=$1 -c max_parallel_workers_per_gather=0 \
            -c autovacuum=off -c fsync=off" >/dev/null
    done
}
