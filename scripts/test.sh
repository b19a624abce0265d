#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine (as root): lint, unit tests of the pure core,
# #[pg_test]s, pg_regress goldens and isolation specs against a real PostgreSQL 15 server.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$ROOT"

REGRESS_DIR=/tmp/simhash-regress
REGRESS_PORT=54331
PGXS=$(dirname "$(dirname "$("$PG_CONFIG" --pgxs)")")
failed=()
suites=(fmt clippy core pg_test pg_regress)
[ -d tests/isolation/specs ] && suites+=(isolation)

ensure_tools

log "cargo fmt --check"
cargo fmt --all --check || failed+=(fmt)

suites+=(release)
log "release metadata (LICENSE, META.json, CHANGELOG.md agree with Cargo.toml)"
python3 scripts/check_release.py || failed+=(release)

log "cargo clippy --all-targets -- -D warnings"
cargo clippy --workspace --all-targets -- -D warnings || failed+=(clippy)

log "unit tests of the pure core (golden vectors, properties)"
cargo test --release -p simhash_core || failed+=(core)

log "#[pg_test]s"
install -d -o postgres -g postgres /tmp/simhash-pgrx-test
CARGO_PGRX_TEST_RUNAS=postgres CARGO_PGRX_TEST_PGDATA=/tmp/simhash-pgrx-test/pgdata \
    cargo pgrx test pg15 || failed+=(pg_test)

install_extension --release
log "pg_regress and isolation tests on a throwaway server (port $REGRESS_PORT)"
start_server "$REGRESS_DIR" "$REGRESS_PORT"
trap 'stop_server "$REGRESS_DIR"' EXIT
out=$REGRESS_DIR/out
install -d "$out"
regress_tests=$(cd tests/pg_regress/sql && ls ./*.sql | sed 's|^\./||; s|\.sql$||' | sort)
"$PGXS/test/regress/pg_regress" --bindir="$PG_BIN" --host=/tmp --port="$REGRESS_PORT" --user=postgres \
    --inputdir=tests/pg_regress --outputdir="$out/regress" --dbname=simhash_regress \
    --load-extension=simhash_ext $regress_tests || {
    failed+=(pg_regress)
    cat "$out/regress/regression.diffs" 2>/dev/null || true
}
if [ -d tests/isolation/specs ]; then
    isolation_tests=$(cd tests/isolation/specs && ls ./*.spec | sed 's|^\./||; s|\.spec$||' | sort)
    "$PGXS/test/isolation/pg_isolation_regress" --bindir="$PG_BIN" --host=/tmp --port="$REGRESS_PORT" \
        --user=postgres --inputdir=tests/isolation --outputdir="$out/isolation" --dbname=simhash_isolation \
        --load-extension=simhash_ext $isolation_tests || {
        failed+=(isolation)
        cat "$out/isolation/regression.diffs" 2>/dev/null || true
    }
fi

# Client integrations (issue 13): the examples under examples/ (psycopg 3, SQLAlchemy 2.0, node-postgres)
# against a server with the extension installed above (port 54352); installs a venv and npm packages.
suites+=(clients)
log "client integrations (tests/clients/run.sh)"
bash tests/clients/run.sh || failed+=(clients)

# Robustness (issue 4): encodings, huge inputs and cancellation, upgrades, dump and restore,
# preloading, crash recovery, allocation failure; each on its own server (ports 54341-54348).
suites+=(robustness)
log "robustness tests (tests/robustness/run.sh; logs in /tmp/simhash-robust-logs)"
bash tests/robustness/run.sh || failed+=(robustness)

# The Debian package (issue 13): built from `cargo pgrx package` output, installed with dpkg into an
# isolated copy of the PostgreSQL tree (never the system directories, whose simhash_ext.so came from
# install_extension above), where CREATE EXTENSION and the README quick start run (port 54351).
suites+=(deb)
log "Debian package (tests/package/deb.sh)"
bash tests/package/deb.sh || failed+=(deb)

# Citus (issue 12): a coordinator and two workers on loopback (ports 54371-54373) with the extension
# installed above; skipped, and not counted, when Citus is not installed for $PG_CONFIG.
skipped=()
log "Citus cluster tests (tests/citus/run.sh)"
citus_status=0
bash tests/citus/run.sh || citus_status=$?
case $citus_status in
0) suites+=(citus) ;;
77) skipped+=(citus) ;;
*)
    suites+=(citus)
    failed+=(citus)
    ;;
esac

echo
echo "suites: $((${#suites[@]} - ${#failed[@]})) passed, ${#failed[@]} failed${skipped[*]:+, ${#skipped[@]} skipped}"
if ((${#failed[@]})); then
    log "FAILED: ${failed[*]}"
    exit 1
fi
