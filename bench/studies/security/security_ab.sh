#!/usr/bin/env bash
# Interleaved A/B of two builds of simhash_ext on the paths the privilege checks of 0.8.0 touch
# (issue 33: at most a few percent): SimHash lookups by fingerprint at distance 7 by a role that is
# not the owner (the SELECT and row-level security checks); single-statement writes of new rows into
# a SimHash table in 'flag' mode where every fourth row is a near-duplicate (the key of the row found
# read as the table's owner); and writes into a MinHash table in 'error' mode (its search run as the
# owner for every row).
#
#   bash bench/studies/security/security_ab.sh A_PREFIX B_PREFIX
#
# Each prefix is a complete PostgreSQL install (bin/initdb, bin/pg_ctl, bin/psql) with the build to
# compare installed in it. Both servers get the same tables (SEC_ROWS rows of 40 pseudo-random words
# each), the same SEC_QUERIES fingerprints and the same SEC_WRITE_ROWS rows to write. After an untimed
# warm-up, each of SEC_ROUNDS rounds measures A then B (B then A in every other round); every write
# is rolled back. Each measurement is a new connection, timed inside the server (clock_timestamp)
# and by the backend's time on a CPU (/proc/self/schedstat). Prints every measurement, the medians
# and the B/A ratios, with the rows found, which must agree.
#
# Knobs (environment): SEC_ROWS [200000], SEC_QUERIES [2000], SEC_WRITE_ROWS [4000], SEC_ROUNDS [8],
# SEC_PORT [55221] (B on SEC_PORT + 1), SEC_DIR [/tmp/security-ab]. Run as root.
set -euo pipefail

A=${1:?usage: security_ab.sh A_PREFIX B_PREFIX}
B=${2:?usage: security_ab.sh A_PREFIX B_PREFIX}
ROWS=${SEC_ROWS:-200000}
QUERIES=${SEC_QUERIES:-2000}
WRITE_ROWS=${SEC_WRITE_ROWS:-4000}
ROUNDS=${SEC_ROUNDS:-8}
PORT=${SEC_PORT:-55221}
DIR=${SEC_DIR:-/tmp/security-ab}

declare -A PREFIX=([A]=$A [B]=$B) PORTS=([A]=$PORT [B]=$((PORT + 1)))

source "$(dirname "${BASH_SOURCE[0]}")/../../ab_lib.sh"
start_all 256MB

setup=$(
    cat <<SQL
CREATE EXTENSION simhash_ext;
CREATE ROLE sec_reader;
CREATE FUNCTION sec_text(i int) RETURNS text LANGUAGE sql IMMUTABLE
    RETURN (SELECT string_agg(substr(md5((i * 64 + j)::text), 1, 2 + (i + j) % 7), ' ')
            FROM generate_series(1, 40) j);
CREATE TABLE sec_sim (id int PRIMARY KEY, body text);
INSERT INTO sec_sim SELECT i, sec_text(i) FROM generate_series(1, $ROWS) i;
SELECT simhash_attach('sec_sim', 'body', on_duplicate => 'flag');
CREATE TABLE sec_min (id int PRIMARY KEY, body text);
INSERT INTO sec_min SELECT i, sec_text(i) FROM generate_series(1, $ROWS) i;
SELECT simhash_attach('sec_min', 'body', method => 'minhash', on_duplicate => 'error');
GRANT SELECT ON sec_sim TO sec_reader;
-- New rows; every fourth repeats an existing row's text (a near-duplicate for 'flag').
CREATE TABLE sec_src AS
    SELECT $ROWS + i AS id, CASE WHEN i % 4 = 0 THEN sec_text(i * 37 % $ROWS + 1) ELSE sec_text($ROWS + i) END AS body
    FROM generate_series(1, $WRITE_ROWS) i;
CREATE TABLE sec_q AS
    SELECT n, CASE WHEN n % 2 = 0
        THEN (SELECT body_simhash FROM sec_sim WHERE id = n * 7919 % $ROWS + 1)
             # (1::bigint << (n % 64)) # (1::bigint << ((n * 7) % 64))
        ELSE ('x' || substr(md5('q' || n), 1, 16))::bit(64)::bigint END AS fp
    FROM generate_series(1, $QUERIES) n;
GRANT SELECT ON sec_q TO sec_reader;
CREATE FUNCTION sec_cpu() RETURNS bigint LANGUAGE sql SECURITY DEFINER
    RETURN split_part(pg_read_file('/proc/self/schedstat'), ' ', 1)::bigint;
CREATE FUNCTION sec_lookups(OUT ms float8, OUT cpu_ns bigint, OUT hits bigint) LANGUAGE plpgsql AS \$\$
DECLARE t0 timestamptz; c0 bigint; q record; c bigint;
BEGIN
    hits := 0; c0 := sec_cpu(); t0 := clock_timestamp();
    FOR q IN SELECT fp FROM sec_q ORDER BY n LOOP
        SELECT count(*) INTO c FROM simhash_near_duplicates(NULL::sec_sim, q.fp, 7);
        hits := hits + c;
    END LOOP;
    ms := extract(epoch FROM clock_timestamp() - t0) * 1000; cpu_ns := sec_cpu() - c0;
END \$\$;
CREATE FUNCTION sec_write_flag(OUT ms float8, OUT cpu_ns bigint, OUT hits bigint) LANGUAGE plpgsql AS \$\$
DECLARE t0 timestamptz; c0 bigint;
BEGIN
    c0 := sec_cpu(); t0 := clock_timestamp();
    INSERT INTO sec_sim (id, body) SELECT id, body FROM sec_src;
    ms := extract(epoch FROM clock_timestamp() - t0) * 1000; cpu_ns := sec_cpu() - c0;
    hits := (SELECT count(*) FROM sec_sim WHERE id > $ROWS AND body_duplicate_of IS NOT NULL);
END \$\$;
CREATE FUNCTION sec_write_minhash(OUT ms float8, OUT cpu_ns bigint, OUT hits bigint) LANGUAGE plpgsql AS \$\$
DECLARE t0 timestamptz; c0 bigint;
BEGIN
    c0 := sec_cpu(); t0 := clock_timestamp();
    INSERT INTO sec_min (id, body) SELECT id, body FROM sec_src WHERE id % 4 <> 0;
    ms := extract(epoch FROM clock_timestamp() - t0) * 1000; cpu_ns := sec_cpu() - c0;
    hits := (SELECT count(*) FROM sec_min WHERE id > $ROWS);
END \$\$;
SQL
)
for build in A B; do
    echo "setup $build: ${PREFIX[$build]} ($ROWS rows a table)" >&2
    sql "$build" -c "$setup" -c 'VACUUM ANALYZE sec_sim' -c 'VACUUM ANALYZE sec_min' >/dev/null
done

measure() { # build, kind
    case $2 in
    lookup) sql "$1" -F ' ' -c 'SET ROLE sec_reader' -c 'SELECT * FROM sec_lookups()' ;;
    flag) sql "$1" -F ' ' <<<'BEGIN; SELECT * FROM sec_write_flag(); ROLLBACK; VACUUM sec_sim;' ;;
    minhash) sql "$1" -F ' ' <<<'BEGIN; SELECT * FROM sec_write_minhash(); ROLLBACK; VACUUM sec_min;' ;;
    esac
}

ab_run "$ROUNDS" "lookup:$QUERIES:1:ms per lookup" "flag:$WRITE_ROWS:1000:us per row" \
    "minhash:$((WRITE_ROWS * 3 / 4)):1000:us per row"
