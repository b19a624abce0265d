#!/usr/bin/env bash
# What candidate verification (issue 43) costs: two builds side by side at a million rows, both
# methods — A without verification (0.9.0), B with it (0.11.0: new attachments verify by default).
#
#   bash bench/studies/verify/verify_ab.sh A_PREFIX B_PREFIX
#
# Each prefix is a complete PostgreSQL install (bin/initdb, bin/pg_ctl, bin/psql) with the build to
# compare installed in it, as for bench/methods_ab.sh (`cargo pgrx install --release --pg-config
# PREFIX/bin/pg_config`, or a relocated copy of the server with a `cargo pgrx package` output in it, as
# scripts/common.sh private_postgres makes). Both servers get the same VAB_ROWS rows of methods_ab.sh's
# text (real words of the repository's English and Chinese prose, Zipf-like frequencies, one row in
# five Chinese, every VAB_DUP_EVERY-th row an earlier row's text with about one word in 25 replaced),
# generated once (on A, in chunks) and copied to B through files in $VAB_DIR/data. One copy is
# attached with SimHash and one with MinHash, on_duplicate => 'error', with each build's defaults: B
# verifies, A (0.9.0) has no verification. Measured, each on both methods:
#
#   lookup_sim / lookup_min   VAB_QUERIES lookups by text, simhash_near_duplicates(NULL::t, text), one
#                             at a time (half an existing row's text with words replaced, half new
#                             texts): the p50 of a lookup's server time and of its backend CPU time
#                             (the cost of reading the CPU time, measured alone, subtracted), and
#                             the mean CPU time;
#   single_sim / single_min   VAB_SINGLE_ROWS single-row INSERT statements (a PL/pgSQL loop, each
#                             row its own statement: its own check) into the 'error' table, rolled
#                             back, then VACUUM: per row;
#   bulk_sim / bulk_min       one INSERT ... SELECT of up to VAB_WRITE_ROWS rows into it, rolled back,
#                             then VACUUM: per row (both check a bulk SimHash 'error' INSERT at
#                             the statement's end; since e550921 that check verifies too);
#   pairs_sim / pairs_min     simhash_pairs() of the whole table;
#   clusters_sim / _min       simhash_clusters() of it;
#   KIND_off                  any of these with B's verification off (lookups and dedup: verify =>
#                             false; writes: simhash_set_verify(table, false) in the transaction that
#                             is rolled back), A as in KIND: what B costs without verification, so
#                             that KIND / KIND_off is the verification's own share.
#
# The rows written are new texts, less those either build would refuse (a near-duplicate in the table,
# or of an earlier row written, by each build's own lookups), so no write fails and both builds write
# the same rows. Lookups, pairs and clusters DIFFER between the builds by design (verification drops
# the candidates whose texts are not similar): their counts are printed side by side, not compared.
# Before the rounds, for B, the candidates verified per lookup: SimHash, the rows within max_distance
# (a lookup with verify => false); MinHash, the rows that share a band and whose estimate reaches the
# threshold less simhash_core::verify::ESTIMATE_MARGIN (0.2) (verify => false at that threshold); and
# the rows the verification keeps.
#
# Rounds: VAB_ROUNDS rounds of the lookups and writes, then VAB_DEDUP_ROUNDS rounds of pairs and
# clusters (the slow part at 1M rows), each round every kind on A then B (B then A in every other
# round), each measurement a new connection that warms up untimed (a lookup; a row written and
# undone; a call of simhash()) and is then timed inside the server (clock_timestamp) and by the
# backend's time on a CPU (/proc/self/schedstat, brought up to date by a short sleep). The summary
# (bench/studies/verify/verify_ab.py) prints the medians over the rounds, B/A of the medians and the median of the
# rounds' paired B/A ratios, for server time and CPU time, and each build's counts.
#
# Knobs (environment, defaults in brackets): VAB_ROWS [1000000], VAB_DUP_EVERY [10], VAB_QUERIES
# [1000], VAB_SINGLE_ROWS [1000], VAB_WRITE_ROWS [10000], VAB_ROUNDS [7], VAB_DEDUP_ROUNDS [3],
# VAB_KINDS [lookups, single-row and bulk writes, both methods, each also _off] / VAB_DEDUP_KINDS
# [pairs and clusters, both methods, and pairs _off] (the kinds of each group; empty: none),
# VAB_PORT [55241] (B on VAB_PORT + 1), VAB_DIR [/tmp/verify-ab], VAB_SHARED_BUFFERS [1GB], VAB_REUSE [0] (1: keep $VAB_DIR;
# a server already set up there is started as it is, one whose directory is missing is set up again
# from the data files: remove $VAB_DIR/B to set up a new B build against the same A), VAB_KEEP [0]
# (1: leave the servers running at the end), VAB_NICE [10] (the niceness of the client and the
# servers). Run as root; servers run as postgres. At the defaults, on the shared 2-core machine of
# bench/results/machine.md: the text about 4 minutes, the two servers' setup about 4 (side by side;
# MinHash's attach is most of it), the rounds about 18 (bench/studies/verify/verify_cost.md). To keep a
# log, pipe it (`... 2>&1 | tee log`).
set -euo pipefail

A=${1:?usage: verify_ab.sh A_PREFIX B_PREFIX}
B=${2:?usage: verify_ab.sh A_PREFIX B_PREFIX}
ROWS=${VAB_ROWS:-1000000}
DUP_EVERY=${VAB_DUP_EVERY:-10}
QUERIES=${VAB_QUERIES:-1000}
SINGLE_ROWS=${VAB_SINGLE_ROWS:-1000}
WRITE_ROWS=${VAB_WRITE_ROWS:-10000}
ROUNDS=${VAB_ROUNDS:-7}
DEDUP_ROUNDS=${VAB_DEDUP_ROUNDS:-3}
KINDS=${VAB_KINDS-lookup_sim lookup_min single_sim single_min bulk_sim bulk_min
    lookup_sim_off lookup_min_off single_sim_off single_min_off bulk_sim_off bulk_min_off}
DEDUP_KINDS=${VAB_DEDUP_KINDS-pairs_sim pairs_min clusters_sim clusters_min pairs_sim_off pairs_min_off}
PORT=${VAB_PORT:-55241}
DIR=${VAB_DIR:-/tmp/verify-ab}
SHARED_BUFFERS=${VAB_SHARED_BUFFERS:-1GB}
REUSE=${VAB_REUSE:-0}
KEEP=${VAB_KEEP:-0}
NICE=${VAB_NICE:-10}
((DUP_EVERY >= 2)) || { echo "VAB_DUP_EVERY must be 2 or more" >&2; exit 2; }
((SINGLE_ROWS <= WRITE_ROWS)) || { echo "VAB_SINGLE_ROWS must not exceed VAB_WRITE_ROWS" >&2; exit 2; }

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
declare -A PREFIX=([A]=$A [B]=$B) PORTS=([A]=$PORT [B]=$((PORT + 1)))
DATA=$DIR/data

sql() { # build, psql arguments (SQL on stdin or with -c)
    local build=$1
    shift
    nice -n "$NICE" "${PREFIX[$build]}/bin/psql" -h /tmp -p "${PORTS[$build]}" -U postgres -qXAt -v ON_ERROR_STOP=1 "$@"
}
running() { [ -f "$DIR/$1/postmaster.pid" ]; }
stop_all() {
    ((KEEP)) && return 0
    for build in A B; do
        running "$build" && runuser -u postgres -- "${PREFIX[$build]}/bin/pg_ctl" -D "$DIR/$build" -w stop -m fast >/dev/null
    done
    return 0
}
start() { # build: its server, on a loopback socket only, without parallel workers, autovacuum or fsync
    running "$1" && return 0
    env -u RUST_BACKTRACE -u RUST_LIB_BACKTRACE nice -n "$NICE" runuser -u postgres -- "${PREFIX[$1]}/bin/pg_ctl" \
        -D "$DIR/$1" -l "$DIR/$1.log" -w start -o "-p ${PORTS[$1]} -k /tmp \
        -c listen_addresses='' -c shared_buffers=$SHARED_BUFFERS -c max_parallel_workers_per_gather=0 \
        -c autovacuum=off -c fsync=off -c max_wal_size=4GB -c checkpoint_timeout=1h -c work_mem=64MB" >/dev/null
}

((REUSE)) || rm -rf "$DIR"
install -d -o postgres -g postgres "$DIR" "$DATA"
trap stop_all EXIT
fresh=()
for build in A B; do
    if [ ! -f "$DIR/$build/vab_ready" ]; then
        running "$build" && runuser -u postgres -- "${PREFIX[$build]}/bin/pg_ctl" -D "$DIR/$build" -w stop -m fast >/dev/null
        rm -rf "${DIR:?}/$build"
        runuser -u postgres -- "${PREFIX[$build]}/bin/initdb" -D "$DIR/$build" -A trust -E UTF8 --locale=C.UTF-8 >/dev/null
        fresh+=("$build")
    fi
    start "$build"
done
echo "A ${PREFIX[A]}: $(sql A -c "SELECT version FROM pg_available_extension_versions WHERE name = 'simhash_ext' ORDER BY string_to_array(version, '.')::int[] DESC LIMIT 1")" \
    "B ${PREFIX[B]}: $(sql B -c "SELECT version FROM pg_available_extension_versions WHERE name = 'simhash_ext' ORDER BY string_to_array(version, '.')::int[] DESC LIMIT 1")" \
    "(newest available); set up now: ${fresh[*]:-none}" >&2

# The text, once, into $DATA: methods_ab.sh's generator (see there), in chunks of 100,000 rows, on A.
# Row i's seed is i, but every DUP_EVERY-th row is a variant of an earlier row that is not. The
# queries: odd n a new text, even n an existing row's text with words replaced. The rows to write:
# new texts (seeds past the table's).
key="rows${ROWS}_dup${DUP_EVERY}_q${QUERIES}_w${WRITE_ROWS}"
if [ ! -f "$DATA/$key.done" ]; then
    start=$SECONDS
    sql A <<SQL
SET work_mem = '256MB';
SET client_min_messages = warning;
CREATE SCHEMA gen;
SET search_path = gen, public;
CREATE TEMP TABLE mab_source (doc text);
\\copy mab_source FROM '$ROOT/tests/data/long_en.txt'
\\copy mab_source FROM '$ROOT/tests/data/long_zh.txt'
\\copy mab_source FROM '$ROOT/demo/corpus.tsv' WITH (DELIMITER E'\\x1f')
CREATE TABLE mab_vocab AS
    SELECT zh, row_number() OVER (PARTITION BY zh ORDER BY count(*) DESC, w)::int AS k, w FROM (
        SELECT false AS zh, lower(w) AS w FROM mab_source, regexp_split_to_table(doc, '[^[:alnum:]]+') w
        WHERE w ~ '^[a-zA-Z]+\$'
        UNION ALL
        SELECT true, substr(w, i, 2) FROM mab_source, regexp_split_to_table(doc, '[^一-龥]+') w, generate_series(1, 200) i
        WHERE length(w) >= i + 1) x
    GROUP BY zh, w;
ALTER TABLE mab_vocab ADD PRIMARY KEY (zh, k);
CREATE TABLE mab_vsize AS SELECT zh, max(k) AS n FROM mab_vocab GROUP BY zh;
CREATE TYPE mab_spec AS (id int, seed int, variant int);
CREATE FUNCTION mab_texts(spec mab_spec[]) RETURNS TABLE (id int, body text) LANGUAGE sql STABLE AS \$\$
    SELECT w.id, string_agg(v.w || CASE WHEN w.j % 13 = 0 THEN CASE WHEN w.zh THEN '。' ELSE '.' END
                                        WHEN w.j % 7 = 0 THEN CASE WHEN w.zh THEN '，' ELSE ',' END ELSE '' END,
                            CASE WHEN w.zh THEN '' ELSE ' ' END ORDER BY w.j)
    FROM (SELECT d.id, d.zh, d.j, least(s.n, 1 + floor(exp(ln(s.n) * ((hashint8(
                     CASE WHEN d.variant <> 0 AND abs(hashint8extended(d.variant::bigint * 1000 + d.j, 1)) % 25 = 0
                          THEN d.variant ELSE d.seed END::bigint * 1000 + d.j) & 2147483647) / 2147483648.0)))::int) AS k
          FROM (SELECT t.id, t.seed, t.variant, t.seed % 5 = 0 AS zh, j
                FROM unnest(spec) t, generate_series(1, 30 + abs(hashint4(t.seed)) % 91) j) d
          JOIN gen.mab_vsize s ON s.zh = d.zh) w
    JOIN gen.mab_vocab v ON v.zh = w.zh AND v.k = w.k
    GROUP BY w.id
\$\$;
CREATE FUNCTION mab_base(i int) RETURNS int LANGUAGE sql IMMUTABLE
    RETURN (SELECT CASE WHEN b % $DUP_EVERY = 0 THEN b - 1 ELSE b END
            FROM (SELECT abs(hashint4(i)) % greatest(i - 1, 1) + 1 AS b) x);
CREATE TABLE rows (id int, body text);
DO \$\$
DECLARE lo int;
BEGIN
    FOR lo IN SELECT generate_series(1, $ROWS, 100000) LOOP
        INSERT INTO gen.rows SELECT * FROM gen.mab_texts(ARRAY(
            SELECT (i, CASE WHEN i % $DUP_EVERY = 0 THEN gen.mab_base(i) ELSE i END,
                    CASE WHEN i % $DUP_EVERY = 0 THEN -i ELSE 0 END)::gen.mab_spec
            FROM generate_series(lo, least(lo + 99999, $ROWS)) i));
    END LOOP;
END \$\$;
\\copy (SELECT id, body FROM gen.rows ORDER BY id) TO '$DATA/$key.rows'
\\copy (SELECT id AS n, body FROM gen.mab_texts(ARRAY(SELECT CASE WHEN n % 2 = 0 THEN (n, gen.mab_base(n * 7919 % $ROWS + 2), -(2000000 + n))::gen.mab_spec ELSE (n, 3 * $ROWS + 1000000 + n, 0)::gen.mab_spec END FROM generate_series(1, $QUERIES) n)) ORDER BY n) TO '$DATA/$key.queries'
\\copy (SELECT * FROM gen.mab_texts(ARRAY(SELECT ($ROWS + i, $ROWS + i, 0)::gen.mab_spec FROM generate_series(1, $WRITE_ROWS) i)) ORDER BY id) TO '$DATA/$key.src'
DROP SCHEMA gen CASCADE;
SQL
    touch "$DATA/$key.done"
    echo "text: $((SECONDS - start)) s ($(wc -c <"$DATA/$key.rows") bytes of rows)" >&2
fi

# A server's tables, attachments and measuring functions (untimed).
setup=$(
    cat <<SQL
CREATE EXTENSION simhash_ext;
CREATE TABLE ab_sim (id int PRIMARY KEY, body text);
\\copy ab_sim FROM '$DATA/$key.rows'
CREATE TABLE ab_min (id int PRIMARY KEY, body text);
INSERT INTO ab_min SELECT id, body FROM ab_sim ORDER BY id;
CREATE TABLE vab_q (n int PRIMARY KEY, body text);
\\copy vab_q FROM '$DATA/$key.queries'
CREATE TABLE vab_src (id int PRIMARY KEY, body text);
\\copy vab_src FROM '$DATA/$key.src'
SET maintenance_work_mem = '1GB';
SELECT simhash_attach('ab_sim', 'body', on_duplicate => 'error');
SELECT simhash_attach('ab_min', 'body', method => 'minhash', on_duplicate => 'error');
-- For leaving out the rows either build would refuse: the rows to write, attached without a check.
CREATE TABLE vab_chk_sim (id int PRIMARY KEY, body text);
INSERT INTO vab_chk_sim SELECT * FROM vab_src;
CREATE TABLE vab_chk_min (id int PRIMARY KEY, body text);
INSERT INTO vab_chk_min SELECT * FROM vab_src;
SELECT simhash_attach('vab_chk_sim', 'body');
SELECT simhash_attach('vab_chk_min', 'body', method => 'minhash');

VACUUM ANALYZE ab_sim;
VACUUM ANALYZE ab_min;
VACUUM ANALYZE vab_src;
VACUUM ANALYZE vab_q;
SQL
)
setup_build() {
    local start=$SECONDS
    sql "$1" <<<"$setup" >/dev/null
    touch "$DIR/$1/vab_ready"
    echo "setup $1: $((SECONDS - start)) s" >&2
}
# The measuring functions, made again on every run (a server set up by an earlier run included).
functions=$(
    cat <<SQL
-- The backend's time on a CPU, in ns. The kernel adds to it at each scheduler tick and when the
-- process leaves the CPU, not when the file is read: the sleep first brings it up to date.
CREATE OR REPLACE FUNCTION vab_cpu() RETURNS bigint LANGUAGE sql
    RETURN (SELECT split_part(pg_read_file('/proc/self/schedstat'), ' ', 1)::bigint FROM pg_sleep(0.0002));
CREATE OR REPLACE FUNCTION vab_median(xs float8[]) RETURNS float8 LANGUAGE sql IMMUTABLE
    RETURN (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM unnest(xs) x);
-- ms: p50 of a lookup's server time; cpu_ns: p50 of its CPU time less the p50 of reading the CPU
-- time alone (200 readings); total_ns: the mean CPU time of a lookup, less the same. off: B's
-- lookups with verify => false (A's calls have no verify argument: 0.9.0 has none).
CREATE OR REPLACE FUNCTION vab_lookups(t regclass, off boolean, OUT ms float8, OUT cpu_ns bigint, OUT total_ns bigint, OUT hits text)
LANGUAGE plpgsql AS \$\$
DECLARE q record; c bigint; s bigint; found bigint := 0; idsum bigint := 0; c0 bigint; c1 bigint;
    t0 timestamptz; t1 timestamptz; walls float8[] := '{}'; cpus float8[] := '{}'; idle float8[] := '{}'; i int;
    overhead float8; sim boolean := t = 'ab_sim'::regclass;
BEGIN
    -- Untimed: one lookup loads the library and fills this new backend's caches.
    IF sim THEN
        PERFORM FROM simhash_near_duplicates(NULL::ab_sim, (SELECT body FROM vab_q ORDER BY n DESC LIMIT 1));
    ELSE
        PERFORM FROM simhash_near_duplicates(NULL::ab_min, (SELECT body FROM vab_q ORDER BY n DESC LIMIT 1));
    END IF;
    FOR i IN 1 .. 200 LOOP
        c0 := vab_cpu(); c1 := vab_cpu(); idle := idle || (c1 - c0)::float8;
    END LOOP;
    overhead := vab_median(idle);
    FOR q IN SELECT body FROM vab_q ORDER BY n LOOP
        c0 := vab_cpu(); t0 := clock_timestamp();
        IF sim AND NOT off THEN
            SELECT count(*), coalesce(sum((n.item).id), 0) INTO c, s FROM simhash_near_duplicates(NULL::ab_sim, q.body) n;
        ELSIF NOT off THEN
            SELECT count(*), coalesce(sum((n.item).id), 0) INTO c, s FROM simhash_near_duplicates(NULL::ab_min, q.body) n;
        ELSIF sim THEN
            SELECT count(*), coalesce(sum((n.item).id), 0) INTO c, s FROM simhash_near_duplicates(NULL::ab_sim, q.body, verify => false) n;
        ELSE
            SELECT count(*), coalesce(sum((n.item).id), 0) INTO c, s FROM simhash_near_duplicates(NULL::ab_min, q.body, verify => false) n;
        END IF;
        t1 := clock_timestamp(); c1 := vab_cpu();
        walls := walls || extract(epoch FROM t1 - t0) * 1000; cpus := cpus || (c1 - c0)::float8;
        found := found + c; idsum := idsum + s;
    END LOOP;
    ms := vab_median(walls);
    cpu_ns := round(vab_median(cpus) - overhead);
    total_ns := round((SELECT avg(x) FROM unnest(cpus) x) - overhead);
    hits := found || ':' || idsum;
END \$\$;
-- Single-row INSERT statements, each its own statement (so its own check), into the 'error' table.
CREATE OR REPLACE FUNCTION vab_single(t regclass, n int, OUT ms float8, OUT cpu_ns bigint, OUT total_ns bigint, OUT hits text)
LANGUAGE plpgsql AS \$\$
DECLARE t0 timestamptz; c0 bigint; r record; written bigint;
BEGIN
    BEGIN
        EXECUTE format('INSERT INTO %s (id, body) SELECT -id, body FROM vab_src ORDER BY id LIMIT 1', t);
        RAISE EXCEPTION USING ERRCODE = 'P0004';
    EXCEPTION WHEN assert_failure THEN NULL;
    END;
    c0 := vab_cpu(); t0 := clock_timestamp();
    IF t = 'ab_sim'::regclass THEN
        FOR r IN SELECT id, body FROM vab_src ORDER BY id LIMIT n LOOP
            INSERT INTO ab_sim (id, body) VALUES (r.id, r.body);
        END LOOP;
    ELSE
        FOR r IN SELECT id, body FROM vab_src ORDER BY id LIMIT n LOOP
            INSERT INTO ab_min (id, body) VALUES (r.id, r.body);
        END LOOP;
    END IF;
    ms := extract(epoch FROM clock_timestamp() - t0) * 1000; cpu_ns := vab_cpu() - c0; total_ns := cpu_ns;
    EXECUTE format('SELECT count(*) FROM %s WHERE id > $ROWS', t) INTO written;
    hits := written;
END \$\$;
-- One INSERT ... SELECT of the rows to write.
CREATE OR REPLACE FUNCTION vab_bulk(t regclass, OUT ms float8, OUT cpu_ns bigint, OUT total_ns bigint, OUT hits text)
LANGUAGE plpgsql AS \$\$
DECLARE t0 timestamptz; c0 bigint; written bigint;
BEGIN
    BEGIN
        EXECUTE format('INSERT INTO %s (id, body) SELECT -id, body FROM vab_src ORDER BY id LIMIT 1', t);
        RAISE EXCEPTION USING ERRCODE = 'P0004';
    EXCEPTION WHEN assert_failure THEN NULL;
    END;
    c0 := vab_cpu(); t0 := clock_timestamp();
    EXECUTE format('INSERT INTO %s (id, body) SELECT id, body FROM vab_src', t);
    ms := extract(epoch FROM clock_timestamp() - t0) * 1000; cpu_ns := vab_cpu() - c0; total_ns := cpu_ns;
    EXECUTE format('SELECT count(*) FROM %s WHERE id > $ROWS', t) INTO written;
    hits := written;
END \$\$;
-- simhash_pairs / simhash_clusters of the whole table (args: '' or B's ', verify => false').
CREATE OR REPLACE FUNCTION vab_pairs(t regclass, args text, OUT ms float8, OUT cpu_ns bigint, OUT total_ns bigint, OUT hits text)
LANGUAGE plpgsql AS \$\$
DECLARE t0 timestamptz; c0 bigint;
BEGIN
    PERFORM simhash('load the library');
    CREATE TEMP TABLE vab_out ON COMMIT DROP AS SELECT * FROM simhash_pairs(t) WITH NO DATA;
    c0 := vab_cpu(); t0 := clock_timestamp();
    EXECUTE format('INSERT INTO vab_out SELECT * FROM simhash_pairs(%L::regclass%s)', t, args);
    ms := extract(epoch FROM clock_timestamp() - t0) * 1000; cpu_ns := vab_cpu() - c0; total_ns := cpu_ns;
    SELECT count(*) || ':' || left(md5(coalesce(string_agg(a || '-' || b, ',' ORDER BY a, b), '')), 10) INTO hits
        FROM (SELECT least(key_a::int, key_b::int) a, greatest(key_a::int, key_b::int) b FROM vab_out) p;
END \$\$;
CREATE OR REPLACE FUNCTION vab_clusters(t regclass, args text, OUT ms float8, OUT cpu_ns bigint, OUT total_ns bigint, OUT hits text)
LANGUAGE plpgsql AS \$\$
DECLARE t0 timestamptz; c0 bigint;
BEGIN
    PERFORM simhash('load the library');
    CREATE TEMP TABLE vab_out ON COMMIT DROP AS SELECT * FROM simhash_clusters(t) WITH NO DATA;
    c0 := vab_cpu(); t0 := clock_timestamp();
    EXECUTE format('INSERT INTO vab_out SELECT * FROM simhash_clusters(%L::regclass%s)', t, args);
    ms := extract(epoch FROM clock_timestamp() - t0) * 1000; cpu_ns := vab_cpu() - c0; total_ns := cpu_ns;
    SELECT count(*) || ':' || left(md5(coalesce(string_agg(key || '-' || representative, ',' ORDER BY key::int), '')), 10)
        INTO hits FROM vab_out WHERE cluster_size > 1;
END \$\$;
SQL
)
declare -A pids
for build in "${fresh[@]}"; do
    setup_build "$build" &
    pids[$build]=$!
done
for build in "${fresh[@]}"; do wait "${pids[$build]}" || { echo "setup $build failed" >&2; exit 1; }; done
for build in A B; do
    sql "$build" <<<"$functions"
    echo "attachments $build: $(sql "$build" -c "SELECT string_agg(format('%s %s %s verify=%s', table_name, method, on_duplicate,
        coalesce(to_jsonb(a) ->> 'verify', '(none)')), '; ' ORDER BY table_name::text) FROM simhash_attachments() a")" >&2
done

# The rows to write: each build leaves out the rows it would refuse (a near-duplicate in either table,
# or of an earlier row to write, by its own lookups: the trigger's test, verified on B), and both
# builds delete the union, so that every write succeeds and both write the same rows (from the full
# list again on every run: a build set up anew may refuse other rows).
refused=$(
    for build in A B; do
        sql "$build" <<SQL
TRUNCATE vab_src;
\\copy vab_src FROM '$DATA/$key.src'
SQL
        sql "$build" <<'SQL'
SELECT s.id FROM vab_src s
WHERE EXISTS (SELECT FROM simhash_near_duplicates(NULL::ab_sim, s.body))
   OR EXISTS (SELECT FROM simhash_near_duplicates(NULL::ab_min, s.body))
   OR EXISTS (SELECT FROM simhash_near_duplicates(NULL::vab_chk_sim, s.body) n WHERE (n.item).id < s.id)
   OR EXISTS (SELECT FROM simhash_near_duplicates(NULL::vab_chk_min, s.body) n WHERE (n.item).id < s.id);
SQL
    done | sort -un | paste -sd, -
)
for build in A B; do
    [ -z "$refused" ] || sql "$build" -c "DELETE FROM vab_src WHERE id IN ($refused)" -c "VACUUM ANALYZE vab_src"
done
write_rows=$(sql A -c 'SELECT count(*) FROM vab_src')
[ "$write_rows" = "$(sql B -c 'SELECT count(*) FROM vab_src')" ] || { echo "A and B have different rows to write" >&2; exit 1; }
echo "rows to write: $write_rows of $WRITE_ROWS (left out: $(tr ',' '\n' <<<"$refused" | grep -c . || true))" >&2

# For B: the candidates a lookup verifies, and the rows the verification keeps (untimed).
thr=$(sql B -c "SELECT threshold FROM simhash_attachments() WHERE table_name = 'ab_min'::regclass")
sql B <<SQL >&2
SELECT 'B candidates verified per lookup (mean / p50 / p90 / max) and rows kept per lookup (mean): ' ||
       string_agg(format('%s %s / %s / %s / %s, kept %s', m, a, p50, p90, mx, k), '; ' ORDER BY m DESC)
FROM (
    SELECT m, round(avg(cand), 2) a, percentile_cont(0.5) WITHIN GROUP (ORDER BY cand) p50,
           percentile_cont(0.9) WITHIN GROUP (ORDER BY cand) p90, max(cand) mx, round(avg(kept), 2) k
    FROM (
        SELECT 'SimHash' m, (SELECT count(*) FROM simhash_near_duplicates(NULL::ab_sim, q.body, verify => false)) cand,
               (SELECT count(*) FROM simhash_near_duplicates(NULL::ab_sim, q.body)) kept FROM vab_q q
        UNION ALL
        SELECT 'MinHash (threshold $thr, candidates from $thr - 0.2)',
               (SELECT count(*) FROM simhash_near_duplicates(NULL::ab_min, q.body, threshold => greatest($thr - 0.2, 0), verify => false)),
               (SELECT count(*) FROM simhash_near_duplicates(NULL::ab_min, q.body)) FROM vab_q q) x
    GROUP BY m) y;
SQL

measure() { # build, kind: prints "ms cpu_ns total_ns hits"
    local kind=${2%_off} off=false args='' t
    # KIND_off: B with verification off (A: the same as KIND; 0.9.0 has no verification)
    if [ "$kind" != "$2" ] && [ "$1" = B ]; then off=true args=', verify => false'; fi
    case $kind in
    lookup_sim | lookup_min) sql "$1" -F ' ' -c "SELECT * FROM vab_lookups('ab_${kind#lookup_}', $off)" ;;
    single_sim | single_min | bulk_sim | bulk_min)
        t=ab_${kind#*_}
        {
            echo "BEGIN;"
            [ "$off" = false ] || echo "SELECT simhash_set_verify('$t', false);"
            case $kind in
            single_*) echo "SELECT * FROM vab_single('$t', $SINGLE_ROWS);" ;;
            *) echo "SELECT * FROM vab_bulk('$t');" ;;
            esac
            echo "ROLLBACK; VACUUM $t;"
        } | sql "$1" -F ' ' | grep -v '^$' ;;
    pairs_sim | pairs_min) sql "$1" -F ' ' <<<"BEGIN; SELECT * FROM vab_pairs('ab_${kind#pairs_}', '$args'); COMMIT;" ;;
    clusters_sim | clusters_min) sql "$1" -F ' ' <<<"BEGIN; SELECT * FROM vab_clusters('ab_${kind#clusters_}', '$args'); COMMIT;" ;;
    *) echo "unknown kind $2" >&2; return 1 ;;
    esac
}
rounds() { # rounds, kinds...: every kind on A then B (B then A in every other round)
    local n=$1 round build kind order
    shift
    for round in $(seq 1 "$n"); do
        order="A B"
        [ $((round % 2)) -eq 0 ] && order="B A"
        for build in $order; do
            for kind in "$@"; do
                m=$(measure "$build" "$kind") || { echo "$build $kind failed" >&2; return 1; }
                echo "$round $build $kind $m"
            done
        done
    done
}

# One untimed warm-up of every kind of the first group (reads the tables into the caches; pairs and
# clusters read the whole table anyway), then the rounds.
start=$SECONDS
for build in A B; do for kind in $KINDS; do
    measure "$build" "$kind" >/dev/null
done; done
echo "warm-up: $((SECONDS - start)) s" >&2
log=$DIR/rounds.$$.txt
echo "round build kind ms cpu_ns total_ns hits"
{
    [ -z "$KINDS" ] || rounds "$ROUNDS" $KINDS
    [ -z "$DEDUP_KINDS" ] || rounds "$DEDUP_ROUNDS" $DEDUP_KINDS
} | tee "$log"
echo "rounds: $((SECONDS - start)) s with the warm-up; whole run: $SECONDS s"
echo
specs=()
for kind in $KINDS $DEDUP_KINDS; do
    case $kind in
    lookup_*) specs+=("$kind:1:1:ms per lookup (p50; CPU also mean)") ;;
    single_*) specs+=("$kind:$SINGLE_ROWS:1000:us per row") ;;
    bulk_*) specs+=("$kind:$write_rows:1000:us per row") ;;
    *) specs+=("$kind:1:1:ms per call") ;;
    esac
done
python3 "$HERE/verify_ab.py" "$log" "${specs[@]}"
