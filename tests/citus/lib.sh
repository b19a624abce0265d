# Shared by the Citus tests (issue 12): a Citus cluster of one coordinator and two workers, each a
# throwaway server of the PostgreSQL of $PG_CONFIG (Debian's 15 unless set; Citus 13 builds for 15
# to 17, Citus 14 for 16 to 18) on loopback owned by postgres (ports 54371-54373, data under
# /tmp/citus-simhash), with Citus and simhash_ext installed in that PostgreSQL. Source it.
# CITUS_PORT_BASE=N puts the nodes on ports N to N+2 and CITUS_DIR=DIR their data under DIR, so
# that a second cluster can run beside the suite's.

source "$(dirname "${BASH_SOURCE[0]}")/../robustness/lib.sh"

CITUS_DIR=${CITUS_DIR:-/tmp/citus-simhash}
# SIMHASH_PACKAGE=DIR (`cargo pgrx package --out-dir DIR` output) runs the nodes on a private copy of
# PostgreSQL with that build (scripts/common.sh, private_postgres): safe while the installed library
# is replaced by another build.
# CITUS_EXTDIR: the extension directory the nodes read (control and script files).
CITUS_EXTDIR=$("$PG_CONFIG" --sharedir)/extension
if [ -n "${SIMHASH_PACKAGE:-}" ]; then
    private_postgres "$SIMHASH_PACKAGE" "$CITUS_DIR-postgres"
    CITUS_EXTDIR=$CITUS_DIR-postgres$CITUS_EXTDIR
fi
CITUS_PORT_BASE=${CITUS_PORT_BASE:-54371}
CITUS_PORTS=("$CITUS_PORT_BASE" $((CITUS_PORT_BASE + 1)) $((CITUS_PORT_BASE + 2)))
COORDINATOR=${CITUS_PORTS[0]}
PORT=$COORDINATOR
DB=simhash

# qn PORT SQL... : like q, on the node listening on PORT, database $DB.
qn() {
    local port=$1
    shift
    "$PSQL" -X -q -v ON_ERROR_STOP=1 -At -h /tmp -p "$port" -U postgres -d "$DB" "$@"
}

# citus_database NAME: database NAME on every node, with Citus, and the coordinator and the two
# workers in its metadata (Citus keeps its metadata per database). No simhash_ext yet.
citus_database() {
    local i
    for i in 0 1 2; do
        DB=postgres qn "${CITUS_PORTS[$i]}" -c "CREATE DATABASE $1"
        DB=$1 qn "${CITUS_PORTS[$i]}" -c "CREATE EXTENSION citus"
    done
    DB=$1 qn "$COORDINATOR" >/dev/null <<SQL
SELECT citus_set_coordinator_host('127.0.0.1', ${CITUS_PORTS[0]});
SELECT citus_add_node('127.0.0.1', ${CITUS_PORTS[1]});
SELECT citus_add_node('127.0.0.1', ${CITUS_PORTS[2]});
SQL
}

# start_cluster: three fresh nodes and database $DB (citus_database) with simhash_ext (CREATE
# EXTENSION simhash_ext on the coordinator reaches the workers through Citus).
start_cluster() {
    local i
    for i in 0 1 2; do
        start_server "$CITUS_DIR/node$i" "${CITUS_PORTS[$i]}" shared_preload_libraries=citus \
            max_connections=60 max_prepared_transactions=120
    done
    citus_database "$DB"
    qn "$COORDINATOR" -c "CREATE EXTENSION simhash_ext"
}

# install_extension_file SOURCE NAME: copies SOURCE to file NAME of $CITUS_EXTDIR (all three nodes
# read it) until the end of the test: the exit trap of on_exit_stop_cluster removes it again, or puts
# back the file that was there before.
EXTENSION_FILES=()
install_extension_file() {
    local dest=$CITUS_EXTDIR/$2
    if [ -e "$dest" ]; then
        mkdir -p "$CITUS_DIR/saved"
        cp -p "$dest" "$CITUS_DIR/saved/$2"
    fi
    EXTENSION_FILES+=("$2")
    cp "$1" "$dest"
}

restore_extension_files() {
    local name
    for name in ${EXTENSION_FILES[@]+"${EXTENSION_FILES[@]}"}; do
        if [ -e "$CITUS_DIR/saved/$name" ]; then
            cp -p "$CITUS_DIR/saved/$name" "$CITUS_EXTDIR/$name"
        else
            rm -f "$CITUS_EXTDIR/$name"
        fi
    done
    EXTENSION_FILES=()
}

stop_cluster() {
    local i
    for i in 0 1 2; do stop_server "$CITUS_DIR/node$i"; done
}

# Stops the cluster on exit, also when a check fails, and takes back the files of
# install_extension_file; removes the cluster's files after a success and keeps them (server logs
# in $CITUS_DIR/node*/server.log) after a failure.
on_exit_stop_cluster() {
    trap 'rc=$?; restore_extension_files; stop_cluster; [ $rc -ne 0 ] || rm -rf "$CITUS_DIR"' EXIT
}
