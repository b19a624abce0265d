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

# The data the topics share (run.sh runs each topic alone or after others: a topic calls what it
# needs, and what another topic made already is kept, the same either way).

# table_exists NAME: whether the coordinator has table NAME.
table_exists() { [ "$(qn "$COORDINATOR" -c "SELECT to_regclass('$1') IS NOT NULL")" == t ]; }

# ensure_articles: the distributed table articles (site, id, body), unless it is there: a corpus of
# real sentences (tests/data) in 12 sites, with near-duplicates planted across sites. The other
# topics copy its site, id and body; the simhash topic attaches it, adds one row (id 50000) and
# detaches it again.
ensure_articles() {
    table_exists articles && return
    qn "$COORDINATOR" -v sample="$(sample_text)" >/dev/null <<'SQL'
SET citus.shard_count = 8;
CREATE TEMP TABLE sentences AS
  SELECT row_number() OVER () AS n, s
  FROM regexp_split_to_table(:'sample', '(?<=[。！？.])\s*') s WHERE length(s) > 12;
CREATE TABLE articles (site int, id bigint, body text, PRIMARY KEY (site, id));
SELECT create_distributed_table('articles', 'site');
INSERT INTO articles
  SELECT i % 12, i, a.s || ' ' || b.s
  FROM generate_series(0, 2999) i
  CROSS JOIN (SELECT count(*) AS c FROM sentences) k
  JOIN sentences a ON a.n = 1 + i % k.c
  JOIN sentences b ON b.n = 1 + (i / k.c + 1 + i % k.c) % k.c;
-- Near-duplicates in other sites: punctuation changed, a word added, the first word dropped.
INSERT INTO articles SELECT (site + 5) % 12, id + 10000, regexp_replace(body, '[.。]$', '!') FROM articles WHERE id % 50 = 0;
INSERT INTO articles SELECT (site + 7) % 12, id + 20000, body || ' Reuters' FROM articles WHERE id % 70 = 1;
INSERT INTO articles SELECT (site + 3) % 12, id + 30000, regexp_replace(body, '^\S+\s+', '') FROM articles WHERE id % 90 = 2;
SQL
}

# copy_articles TABLE: a distributed table TABLE (site, id, body) of 8 shards, by site, holding the
# rows of articles (ensure_articles).
copy_articles() {
    ensure_articles
    qn "$COORDINATOR" >/dev/null <<SQL
SET citus.shard_count = 8;
CREATE TABLE $1 (site int, id bigint, body text, PRIMARY KEY (site, id));
SELECT create_distributed_table('$1', 'site');
INSERT INTO $1 SELECT site, id, body FROM articles;
SQL
}

# The races: WRITERS sessions at once, each writing the TEXTS texts of race_texts (real sentences
# of more than 40 characters) in its own order, each insert in its own transaction.
WRITERS=6
TEXTS=24
# ensure_race_texts: the table race_texts (n, s), unless it is there.
ensure_race_texts() {
    table_exists race_texts && return
    qn "$COORDINATOR" -v sample="$(sample_text)" >/dev/null <<SQL
CREATE TABLE race_texts AS
  SELECT row_number() OVER () AS n, s
  FROM regexp_split_to_table(:'sample', '(?<=[。！？.])\s*') s WHERE length(s) > 40 LIMIT $TEXTS;
SQL
}

# run_writers NAME [PSQL OPTION...]: runs the scripts $CITUS_DIR/NAME1.sql to NAME$WRITERS.sql at
# once, each in a psql session of its own on the coordinator, its output into NAMEw.out, and waits
# for all of them.
run_writers() {
    local name=$1 w
    shift
    for w in $(seq 1 "$WRITERS"); do
        "$PSQL" -X -q "$@" -h /tmp -p "$COORDINATOR" -U postgres -d "$DB" -f "$CITUS_DIR/$name$w.sql" >"$CITUS_DIR/$name$w.out" 2>&1 &
    done
    wait
}

# ensure_mh_queries: the query texts of the MinHash lookups, table mh_queries (k, q), unless it is
# there: rows' texts of articles, reposts with a header and footer, first sentences alone (near the
# threshold), a text of no row and one without tokens.
ensure_mh_queries() {
    table_exists mh_queries && return
    ensure_articles
    qn "$COORDINATOR" >/dev/null <<'SQL'
CREATE TABLE mh_queries AS
  SELECT id AS k, CASE (id / 97) % 4 WHEN 0 THEN body
                                     WHEN 1 THEN '【转载】' || body || '（来源：本地日报）'
                                     WHEN 2 THEN 'Breaking: ' || body || ' Share this story.'
                                     ELSE substring(body FROM '^.*?[。！？.]') END AS q
  FROM articles WHERE id % 97 = 0 AND id < 3000;
INSERT INTO mh_queries VALUES (-1, 'A quiet week in the valley: cranes return to the wetlands as spring arrives.'), (-2, '…!!!');
SQL
}
