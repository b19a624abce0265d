#!/usr/bin/env bash
# Interleaved A/B of two builds of simhash_ext over both methods, for a change meant to leave
# behaviour and speed alone (a restructuring of src/): lookups by text, the write cost of the
# duplicate trigger and whole-table dedup, each on a SimHash and on a MinHash attachment, on two
# private PostgreSQL installs side by side.
#
#   bash bench/methods_ab.sh A_PREFIX B_PREFIX
#
# Each prefix is a complete PostgreSQL install (bin/initdb, bin/pg_ctl, bin/psql) with the build to
# compare installed in it (`cargo pgrx install --release --pg-config PREFIX/bin/pg_config`). Both
# servers get the same tables, built from the same deterministic text: MAB_ROWS rows of 30 to 120
# real words (the repository's English and Chinese prose: tests/data/long_*.txt, demo/corpus.tsv)
# drawn with Zipf-like frequencies (a few words in most rows, as in prose), with punctuation, one row
# in five Chinese; every MAB_DUP_EVERY-th row is an earlier row's text with about one word in 25
# replaced (mostly a near-duplicate under both methods, so lookups, 'flag' writes and dedup find
# something). One copy of the table is attached with SimHash and one with MinHash, both with
# on_duplicate => 'error' (and, with MAB_FLAG=1, two more copies with 'flag'); the two servers are set
# up at once. Measured, each on both methods:
#
#   lookup_sim / lookup_min   one pass of MAB_QUERIES simhash_near_duplicates(NULL::t, text) lookups
#                             at the attached max_distance / threshold (half the texts an existing
#                             row's with words replaced, half new);
#   write_sim / write_min     one INSERT … SELECT of up to MAB_WRITE_ROWS new rows into the 'error'
#                             table (the rows that would be near-duplicates of the table's or of each
#                             other, under either method, are left out at setup, so none fails),
#                             rolled back, then VACUUM;
#   flag_sim / flag_min       (MAB_FLAG=1) the same into the 'flag' table, with every fourth row a
#                             near-duplicate of an existing row;
#   pairs_sim / pairs_min     simhash_pairs() over the whole 'error' table;
#   clusters_sim / _min       (MAB_CLUSTERS=1) simhash_clusters() over it.
#
# After an untimed warm-up, each of MAB_ROUNDS rounds measures every kind on A then B (B then A in
# every other round). Every measurement is a new connection, which first loads the library and warms
# its caches untimed (one lookup; one row written and undone; a call of simhash()), then is timed
# inside the server (clock_timestamp) and by the backend's time on a CPU (/proc/self/schedstat, in
# ns, brought up to date by a short sleep: on a shared machine the steadier figure). Each measurement also returns what it found (lookups: rows found and
# the sum of their ids; writes: rows written or flagged; dedup: the number of pairs, or of rows in
# clusters of two or more, with an md5 of the sorted result), which must be the same for A and B in
# every round: a difference is printed as MISMATCH and the script exits with status 1. Prints every
# measurement, then the medians, the B/A ratios (of the medians, and the median of the rounds'
# paired ratios with their spread) for server time and backend CPU time, and B/A of the fastest
# round's CPU time (on a shared virtual machine the least disturbed figure).
#
# Knobs (environment, defaults in brackets; the defaults take 4 to 7 minutes on a 2-core machine
# that other builds share): MAB_ROWS [60000] rows a table, MAB_DUP_EVERY [10], MAB_QUERIES [1500],
# MAB_WRITE_ROWS [5000], MAB_ROUNDS [20], MAB_FLAG [1], MAB_CLUSTERS [1], MAB_PORT [55231] (B on
# MAB_PORT + 1), MAB_DIR [/tmp/methods-ab] (data directories, removed first), MAB_SHARED_BUFFERS
# [256MB]. Run as root; servers run as postgres and are stopped at the end. To keep a log, pipe it
# (`… 2>&1 | tee log`): ab_run echoes each measurement through /dev/stderr, which reopens a file
# that stderr is redirected to with `2>file` and truncates it.
set -euo pipefail

A=${1:?usage: methods_ab.sh A_PREFIX B_PREFIX}
B=${2:?usage: methods_ab.sh A_PREFIX B_PREFIX}
ROWS=${MAB_ROWS:-60000}
DUP_EVERY=${MAB_DUP_EVERY:-10}
QUERIES=${MAB_QUERIES:-1500}
WRITE_ROWS=${MAB_WRITE_ROWS:-5000}
ROUNDS=${MAB_ROUNDS:-20}
FLAG=${MAB_FLAG:-1}
CLUSTERS=${MAB_CLUSTERS:-1}
PORT=${MAB_PORT:-55231}
DIR=${MAB_DIR:-/tmp/methods-ab}
SHARED_BUFFERS=${MAB_SHARED_BUFFERS:-256MB}
((DUP_EVERY >= 2)) || { echo "MAB_DUP_EVERY must be 2 or more" >&2; exit 2; }

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
declare -A PREFIX=([A]=$A [B]=$B) PORTS=([A]=$PORT [B]=$((PORT + 1)))

source "$(dirname "${BASH_SOURCE[0]}")/ab_lib.sh"
start_all "$SHARED_BUFFERS"

# The text: real words, drawn at random with their real frequencies skewed further. The vocabulary is
# the repository's own prose (tests/data/long_en.txt, long_zh.txt, demo/corpus.tsv): English words,
# and Chinese two-character runs, each ranked by how often it occurs there. Word k of a vocabulary
# of n is drawn with probability about 1/(k ln n) (log-uniform ranks, Zipf's law), so a few words
# are in most rows, as in prose. A text (mab_texts(), from (id, seed, variant) triples) has 30 to 120
# words, by its seed; one seed in 5 gives a Chinese text (no spaces, full-width punctuation), the
# others English; with variant <> 0 about one word in 25 is replaced by the variant's. Row i's seed
# is i, but every DUP_EVERY-th row is a variant of an earlier row that is not (mab_base()).
setup=$(
    cat <<SQL
CREATE EXTENSION simhash_ext;
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
CREATE TABLE mab_spec (id int, seed int, variant int);
CREATE FUNCTION mab_texts(spec mab_spec[]) RETURNS TABLE (id int, body text) LANGUAGE sql STABLE AS \$\$
    SELECT w.id, string_agg(v.w || CASE WHEN w.j % 13 = 0 THEN CASE WHEN w.zh THEN '。' ELSE '.' END
                                        WHEN w.j % 7 = 0 THEN CASE WHEN w.zh THEN '，' ELSE ',' END ELSE '' END,
                            CASE WHEN w.zh THEN '' ELSE ' ' END ORDER BY w.j)
    FROM (SELECT d.id, d.zh, d.j, least(s.n, 1 + floor(exp(ln(s.n) * ((hashint8(
                     CASE WHEN d.variant <> 0 AND abs(hashint8extended(d.variant::bigint * 1000 + d.j, 1)) % 25 = 0
                          THEN d.variant ELSE d.seed END::bigint * 1000 + d.j) & 2147483647) / 2147483648.0)))::int) AS k
          FROM (SELECT t.id, t.seed, t.variant, t.seed % 5 = 0 AS zh, j
                FROM unnest(spec) t, generate_series(1, 30 + abs(hashint4(t.seed)) % 91) j) d
          JOIN mab_vsize s ON s.zh = d.zh) w
    JOIN mab_vocab v ON v.zh = w.zh AND v.k = w.k
    GROUP BY w.id
\$\$;
CREATE FUNCTION mab_base(i int) RETURNS int LANGUAGE sql IMMUTABLE
    RETURN (SELECT CASE WHEN b % $DUP_EVERY = 0 THEN b - 1 ELSE b END
            FROM (SELECT abs(hashint4(i)) % greatest(i - 1, 1) + 1 AS b) x);

CREATE TABLE ab_sim (id int PRIMARY KEY, body text);
INSERT INTO ab_sim SELECT * FROM mab_texts(ARRAY(
    SELECT (i, CASE WHEN i % $DUP_EVERY = 0 THEN mab_base(i) ELSE i END, CASE WHEN i % $DUP_EVERY = 0 THEN -i ELSE 0 END)::mab_spec
    FROM generate_series(1, $ROWS) i)) ORDER BY id;
CREATE TABLE ab_min (id int PRIMARY KEY, body text);
INSERT INTO ab_min SELECT id, body FROM ab_sim ORDER BY id;
SELECT simhash_attach('ab_sim', 'body', on_duplicate => 'error');
SELECT simhash_attach('ab_min', 'body', method => 'minhash', on_duplicate => 'error');
DO \$\$ BEGIN IF $FLAG = 1 THEN
    CREATE TABLE ab_simf (id int PRIMARY KEY, body text);
    INSERT INTO ab_simf SELECT id, body FROM ab_sim ORDER BY id;
    CREATE TABLE ab_minf (id int PRIMARY KEY, body text);
    INSERT INTO ab_minf SELECT id, body FROM ab_sim ORDER BY id;
    PERFORM simhash_attach('ab_simf', 'body', on_duplicate => 'flag');
    PERFORM simhash_attach('ab_minf', 'body', method => 'minhash', on_duplicate => 'flag');
END IF; END \$\$;

-- The lookups: odd n a new text, even n an existing row's text with words replaced.
CREATE TABLE mab_q AS
    SELECT id AS n, body FROM mab_texts(ARRAY(
        SELECT CASE WHEN n % 2 = 0 THEN (n, mab_base(n * 7919 % $ROWS + 2), -(2000000 + n))::mab_spec
                    ELSE (n, 3 * $ROWS + 1000000 + n, 0)::mab_spec END
        FROM generate_series(1, $QUERIES) n));
-- New rows for the 'error' tables, less those either method would refuse.
CREATE TABLE mab_src AS
    SELECT * FROM mab_texts(ARRAY(SELECT ($ROWS + i, $ROWS + i, 0)::mab_spec FROM generate_series(1, $WRITE_ROWS) i)) ORDER BY id;
CREATE TABLE mab_chk_sim (id int PRIMARY KEY, body text);
INSERT INTO mab_chk_sim SELECT * FROM mab_src;
CREATE TABLE mab_chk_min (id int PRIMARY KEY, body text);
INSERT INTO mab_chk_min SELECT * FROM mab_src;
SELECT simhash_attach('mab_chk_sim', 'body');
SELECT simhash_attach('mab_chk_min', 'body', method => 'minhash');
DELETE FROM mab_src s
    WHERE EXISTS (SELECT FROM simhash_near_duplicates(NULL::ab_sim, s.body))
       OR EXISTS (SELECT FROM simhash_near_duplicates(NULL::ab_min, s.body))
       OR s.id::text IN (SELECT key_b FROM simhash_pairs('mab_chk_sim') UNION SELECT key_b FROM simhash_pairs('mab_chk_min'));
DROP TABLE mab_chk_sim, mab_chk_min;
-- New rows for the 'flag' tables: every fourth a near-duplicate of an existing row.
CREATE TABLE mab_srcf AS
    SELECT * FROM mab_texts(ARRAY(
        SELECT CASE WHEN i % 4 = 0 THEN ($ROWS + i, mab_base(i * 37 % $ROWS + 2), -(3000000 + i))::mab_spec
                    ELSE ($ROWS + i, 2 * $ROWS + i, 0)::mab_spec END
        FROM generate_series(1, $WRITE_ROWS) i)) ORDER BY id;

-- The backend's time on a CPU, in ns. The kernel adds to it at each scheduler tick (4 ms at HZ=250)
-- and when the process leaves the CPU, not when the file is read: the sleep first brings it up to
-- date, so the figure is exact rather than off by up to a tick at each end.
CREATE FUNCTION mab_cpu() RETURNS bigint LANGUAGE sql
    RETURN (SELECT split_part(pg_read_file('/proc/self/schedstat'), ' ', 1)::bigint FROM pg_sleep(0.0002));
CREATE FUNCTION mab_lookups(t regclass, OUT ms float8, OUT cpu_ns bigint, OUT hits text) LANGUAGE plpgsql AS \$\$
DECLARE t0 timestamptz; c0 bigint; q record; c bigint; s bigint; found bigint := 0; idsum bigint := 0;
BEGIN
    -- Untimed: one lookup loads the library and fills this new backend's caches.
    IF t = 'ab_sim'::regclass THEN
        PERFORM FROM simhash_near_duplicates(NULL::ab_sim, (SELECT body FROM mab_q ORDER BY n DESC LIMIT 1));
    ELSE
        PERFORM FROM simhash_near_duplicates(NULL::ab_min, (SELECT body FROM mab_q ORDER BY n DESC LIMIT 1));
    END IF;
    c0 := mab_cpu(); t0 := clock_timestamp();
    FOR q IN SELECT body FROM mab_q ORDER BY n LOOP
        IF t = 'ab_sim'::regclass THEN
            SELECT count(*), coalesce(sum((n.item).id), 0) INTO c, s FROM simhash_near_duplicates(NULL::ab_sim, q.body) n;
        ELSE
            SELECT count(*), coalesce(sum((n.item).id), 0) INTO c, s FROM simhash_near_duplicates(NULL::ab_min, q.body) n;
        END IF;
        found := found + c; idsum := idsum + s;
    END LOOP;
    ms := extract(epoch FROM clock_timestamp() - t0) * 1000; cpu_ns := mab_cpu() - c0;
    hits := found || ':' || idsum;
END \$\$;
CREATE FUNCTION mab_write(t regclass, src regclass, OUT ms float8, OUT cpu_ns bigint, OUT hits text) LANGUAGE plpgsql AS \$\$
DECLARE t0 timestamptz; c0 bigint; written bigint; flagged bigint;
BEGIN
    -- Untimed: one row written and undone (a subtransaction) loads the library and warms the trigger.
    BEGIN
        EXECUTE format('INSERT INTO %s (id, body) SELECT -id, body FROM %s ORDER BY id LIMIT 1', t, src);
        RAISE EXCEPTION USING ERRCODE = 'P0004';
    EXCEPTION WHEN assert_failure THEN NULL;
    END;
    c0 := mab_cpu(); t0 := clock_timestamp();
    EXECUTE format('INSERT INTO %s (id, body) SELECT id, body FROM %s', t, src);
    ms := extract(epoch FROM clock_timestamp() - t0) * 1000; cpu_ns := mab_cpu() - c0;
    EXECUTE format('SELECT count(*) FROM %s WHERE id > $ROWS', t) INTO written;
    hits := written;
    IF t::text IN ('ab_simf', 'ab_minf') THEN
        EXECUTE format('SELECT count(*) FROM %s WHERE id > $ROWS AND body_duplicate_of IS NOT NULL', t) INTO flagged;
        hits := written || ':' || flagged;
    END IF;
END \$\$;
CREATE FUNCTION mab_pairs(t regclass, OUT ms float8, OUT cpu_ns bigint, OUT hits text) LANGUAGE plpgsql AS \$\$
DECLARE t0 timestamptz; c0 bigint;
BEGIN
    PERFORM simhash('load the library');
    CREATE TEMP TABLE mab_out ON COMMIT DROP AS SELECT * FROM simhash_pairs(t) WITH NO DATA;
    c0 := mab_cpu(); t0 := clock_timestamp();
    INSERT INTO mab_out SELECT * FROM simhash_pairs(t);
    ms := extract(epoch FROM clock_timestamp() - t0) * 1000; cpu_ns := mab_cpu() - c0;
    SELECT count(*) || ':' || left(md5(coalesce(string_agg(a || '-' || b || '-' || d, ',' ORDER BY a, b), '')), 10) INTO hits
        FROM (SELECT least(key_a::int, key_b::int) a, greatest(key_a::int, key_b::int) b,
                     coalesce(distance::text, round(similarity::numeric, 6)::text) d FROM mab_out) p;
END \$\$;
CREATE FUNCTION mab_clusters(t regclass, OUT ms float8, OUT cpu_ns bigint, OUT hits text) LANGUAGE plpgsql AS \$\$
DECLARE t0 timestamptz; c0 bigint;
BEGIN
    PERFORM simhash('load the library');
    CREATE TEMP TABLE mab_out ON COMMIT DROP AS SELECT * FROM simhash_clusters(t) WITH NO DATA;
    c0 := mab_cpu(); t0 := clock_timestamp();
    INSERT INTO mab_out SELECT * FROM simhash_clusters(t);
    ms := extract(epoch FROM clock_timestamp() - t0) * 1000; cpu_ns := mab_cpu() - c0;
    SELECT count(*) || ':' || left(md5(coalesce(string_agg(key || '-' || representative, ',' ORDER BY key::int), '')), 10)
        INTO hits FROM mab_out WHERE cluster_size > 1;
END \$\$;
SQL
)
tables="ab_sim ab_min"
((FLAG)) && tables+=" ab_simf ab_minf"
setup_build() {
    local start=$SECONDS t
    sql "$1" <<<"$setup" >/dev/null
    for t in $tables; do sql "$1" -c "VACUUM ANALYZE $t"; done
    echo "setup $1: $((SECONDS - start)) s; rows to write into the 'error' tables (of $WRITE_ROWS):" \
        "$(sql "$1" -c 'SELECT count(*) FROM mab_src')" >&2
}
# Both at once (untimed; the two cores of a small machine).
echo "setup: A ${PREFIX[A]}, B ${PREFIX[B]}: $ROWS rows a table, $tables" >&2
declare -A pids
for build in A B; do
    setup_build "$build" &
    pids[$build]=$!
done
for build in A B; do wait "${pids[$build]}" || { echo "setup $build failed" >&2; exit 1; }; done
if [ "$(sql A -c 'SELECT count(*) FROM mab_src')" != "$(sql B -c 'SELECT count(*) FROM mab_src')" ]; then
    echo "MISMATCH: A and B leave out different rows to write (the builds disagree on near-duplicates)" >&2
fi

measure() { # build, kind
    local t
    case $2 in
    lookup_sim | lookup_min) sql "$1" -F ' ' -c "SELECT * FROM mab_lookups('ab_${2#lookup_}')" ;;
    write_sim | write_min)
        t=ab_${2#write_}
        sql "$1" -F ' ' <<<"BEGIN; SELECT * FROM mab_write('$t', 'mab_src'); ROLLBACK; VACUUM $t;" ;;
    flag_sim | flag_min)
        t=ab_${2#flag_}f
        sql "$1" -F ' ' <<<"BEGIN; SELECT * FROM mab_write('$t', 'mab_srcf'); ROLLBACK; VACUUM $t;" ;;
    pairs_sim | pairs_min) sql "$1" -F ' ' <<<"BEGIN; SELECT * FROM mab_pairs('ab_${2#pairs_}'); COMMIT;" ;;
    clusters_sim | clusters_min) sql "$1" -F ' ' <<<"BEGIN; SELECT * FROM mab_clusters('ab_${2#clusters_}'); COMMIT;" ;;
    esac
}

write_rows=$(sql A -c 'SELECT count(*) FROM mab_src')
specs=("lookup_sim:$QUERIES:1:ms per lookup" "lookup_min:$QUERIES:1:ms per lookup"
    "write_sim:$write_rows:1000:us per row" "write_min:$write_rows:1000:us per row")
((FLAG)) && specs+=("flag_sim:$WRITE_ROWS:1000:us per row" "flag_min:$WRITE_ROWS:1000:us per row")
specs+=("pairs_sim:1:1:ms per call" "pairs_min:1:1:ms per call")
((CLUSTERS)) && specs+=("clusters_sim:1:1:ms per call" "clusters_min:1:1:ms per call")
start=$SECONDS
status=0
ab_run "$ROUNDS" "${specs[@]}" || status=$?
echo "rounds: $((SECONDS - start)) s; whole run: $SECONDS s"
exit "$status"
