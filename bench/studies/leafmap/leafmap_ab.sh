#!/usr/bin/env bash
# Interleaved A/B of two builds of simhash_ext on the paths that read band indexes through the leaf
# map: lookups at distance 7 (simhash_near_duplicates by fingerprint) and the write cost of the
# 'flag' trigger (a band lookup per written row), on two private PostgreSQL installs side by side.
#
#   bash bench/studies/leafmap/leafmap_ab.sh A_PREFIX B_PREFIX
#
# Each prefix is a complete PostgreSQL install (bin/initdb, bin/pg_ctl, bin/psql) with the build to
# compare installed in it (`cargo pgrx install --release --pg-config PREFIX/bin/pg_config`). Both
# servers get the same synthetic table (AB_ROWS rows of 40 pseudo-random words, attached with
# on_duplicate => 'flag'), the same AB_QUERIES fingerprints (half of them a row's fingerprint with two
# bits flipped, half random) and the same AB_WRITE_ROWS rows to insert. After an untimed warm-up,
# each of AB_ROUNDS rounds measures A then B (B then A in every other round): one pass of all
# lookups, then one INSERT … SELECT of the new rows (rolled back, then VACUUM). Every measurement is
# a new connection, timed inside the server (clock_timestamp) and by the backend's time on a CPU
# (/proc/self/schedstat, in ns: on a shared machine the steadier figure). Prints each measurement,
# the rows found (which must agree), the medians and the B/A ratios.
#
# Knobs (environment, defaults in brackets): AB_ROWS [300000], AB_QUERIES [2000], AB_WRITE_ROWS
# [10000], AB_ROUNDS [10], AB_PORT [55211] (B on AB_PORT + 1), AB_DIR [/tmp/leafmap-ab] (data
# directories, removed first), AB_SHARED_BUFFERS [256MB]. Run as root; servers run as postgres and
# are stopped at the end.
set -euo pipefail

A=${1:?usage: leafmap_ab.sh A_PREFIX B_PREFIX}
B=${2:?usage: leafmap_ab.sh A_PREFIX B_PREFIX}
ROWS=${AB_ROWS:-300000}
QUERIES=${AB_QUERIES:-2000}
WRITE_ROWS=${AB_WRITE_ROWS:-10000}
ROUNDS=${AB_ROUNDS:-10}
PORT=${AB_PORT:-55211}
DIR=${AB_DIR:-/tmp/leafmap-ab}
SHARED_BUFFERS=${AB_SHARED_BUFFERS:-256MB}

declare -A PREFIX=([A]=$A [B]=$B) PORTS=([A]=$PORT [B]=$((PORT + 1)))

source "$(dirname "${BASH_SOURCE[0]}")/../../ab_lib.sh"
start_all "$SHARED_BUFFERS"

setup=$(
    cat <<SQL
CREATE EXTENSION simhash_ext;
CREATE FUNCTION ab_text(i int) RETURNS text LANGUAGE sql IMMUTABLE
    RETURN (SELECT string_agg(substr(md5((i * 64 + j)::text), 1, 2 + (i + j) % 7), ' ')
            FROM generate_series(1, 40) j);
CREATE TABLE ab (id int PRIMARY KEY, body text);
INSERT INTO ab SELECT i, ab_text(i) FROM generate_series(1, $ROWS) i;
SELECT simhash_attach('ab', 'body', on_duplicate => 'flag');
CREATE TABLE ab_src AS SELECT $ROWS + i AS id, ab_text($ROWS + i) AS body FROM generate_series(1, $WRITE_ROWS) i;
CREATE TABLE ab_q AS
    SELECT n, CASE WHEN n % 2 = 0
        THEN (SELECT body_simhash FROM ab WHERE id = n * 7919 % $ROWS + 1)
             # (1::bigint << (n % 64)) # (1::bigint << ((n * 7) % 64))
        ELSE ('x' || substr(md5('q' || n), 1, 16))::bit(64)::bigint END AS fp
    FROM generate_series(1, $QUERIES) n;
CREATE FUNCTION ab_cpu() RETURNS bigint LANGUAGE sql
    RETURN split_part(pg_read_file('/proc/self/schedstat'), ' ', 1)::bigint;
CREATE FUNCTION ab_lookups(OUT ms float8, OUT cpu_ns bigint, OUT hits bigint) LANGUAGE plpgsql AS \$\$
DECLARE t0 timestamptz; c0 bigint; q record; c bigint;
BEGIN
    hits := 0; c0 := ab_cpu(); t0 := clock_timestamp();
    FOR q IN SELECT fp FROM ab_q ORDER BY n LOOP
        SELECT count(*) INTO c FROM simhash_near_duplicates(NULL::ab, q.fp, 7);
        hits := hits + c;
    END LOOP;
    ms := extract(epoch FROM clock_timestamp() - t0) * 1000; cpu_ns := ab_cpu() - c0;
END \$\$;
CREATE FUNCTION ab_write(OUT ms float8, OUT cpu_ns bigint, OUT hits bigint) LANGUAGE plpgsql AS \$\$
DECLARE t0 timestamptz; c0 bigint;
BEGIN
    c0 := ab_cpu(); t0 := clock_timestamp();
    INSERT INTO ab (id, body) SELECT id, body FROM ab_src;
    ms := extract(epoch FROM clock_timestamp() - t0) * 1000; cpu_ns := ab_cpu() - c0;
    hits := (SELECT count(*) FROM ab WHERE id > $ROWS AND body_duplicate_of IS NOT NULL);
END \$\$;
SQL
)
for build in A B; do
    echo "setup $build: ${PREFIX[$build]} ($ROWS rows)" >&2
    sql "$build" -c "$setup" -c 'VACUUM ANALYZE ab' >/dev/null
done

measure() { # build, kind
    case $2 in
    lookup) sql "$1" -F ' ' -c 'SELECT * FROM ab_lookups()' ;;
    write) sql "$1" -F ' ' <<<'BEGIN; SELECT * FROM ab_write(); ROLLBACK; VACUUM ab;' ;;
    esac
}

ab_run "$ROUNDS" "lookup:$QUERIES:1:ms per lookup" "write:$WRITE_ROWS:1000:us per row"
