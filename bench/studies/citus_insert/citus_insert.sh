#!/usr/bin/env bash
# Per-insert cost on a Citus cluster (issue 12): the same single-row INSERTs, each its own
# transaction from one psql session on the coordinator, into tables of the same rows attached five
# ways. Needs Citus installed for the system PostgreSQL 15 (docs/citus.md, Setup) and the
# extension built: it runs the nodes on a private copy of PostgreSQL with `cargo pgrx package` output
# (scripts/common.sh, private_postgres), ports 54371-54373, data under /tmp/citus-simhash.
#
#   bash bench/studies/citus_insert/citus_insert.sh [ROWS_ALREADY_THERE [INSERTS [MAX_DISTANCE]]]    # default 3000 300 7
# Writes bench/studies/citus_insert/citus_insert.md (citus_insert_k<MAX_DISTANCE>.md for another distance).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
PRELOAD=${1:-3000}
INSERTS=${2:-300}
K=${3:-7}
PACKAGE=/tmp/citus-simhash-package
source "$ROOT/scripts/common.sh"
(cd "$ROOT" && cargo pgrx package --pg-config "$PG_CONFIG" --out-dir "$PACKAGE" >/dev/null)
export SIMHASH_PACKAGE=$PACKAGE
source "$ROOT/tests/citus/lib.sh"
citus_installed || {
    echo "Citus is not installed for $PG_CONFIG"
    exit 1
}
on_exit_stop_cluster
start_cluster

qn "$COORDINATOR" -v sample="$(sample_text)" >/dev/null <<SQL
SET citus.shard_count = 8;
CREATE TABLE sentences AS
  SELECT row_number() OVER () AS n, s
  FROM regexp_split_to_table(:'sample', '(?<=[。！？.])\s*') s WHERE length(s) > 12;
-- Row i: two sentences, in site i % 12; the first $PRELOAD are there before, the next $INSERTS inserted.
CREATE TABLE texts AS
  SELECT i, i % 12 AS site, a.s || ' ' || b.s AS body
  FROM generate_series(0, $PRELOAD + $INSERTS - 1) i
  CROSS JOIN (SELECT count(*) AS c FROM sentences) k
  JOIN sentences a ON a.n = 1 + i % k.c
  JOIN sentences b ON b.n = 1 + (i / k.c + 1 + i % k.c) % k.c;
CREATE TABLE single_node (site int, id bigint, body text, PRIMARY KEY (site, id));
CREATE TABLE dist_plain (LIKE single_node INCLUDING ALL);
CREATE TABLE dist_none (LIKE single_node INCLUDING ALL);
CREATE TABLE dist_scoped (LIKE single_node INCLUDING ALL);
CREATE TABLE dist_registry (LIKE single_node INCLUDING ALL);
SELECT create_distributed_table(t, 'site') FROM unnest(ARRAY['dist_plain', 'dist_none', 'dist_scoped', 'dist_registry']) t;
INSERT INTO single_node SELECT site, i, body FROM texts WHERE i < $PRELOAD;
INSERT INTO dist_plain SELECT * FROM single_node;
INSERT INTO dist_none SELECT * FROM single_node;
INSERT INTO dist_scoped SELECT * FROM single_node;
INSERT INTO dist_registry SELECT * FROM single_node;
SELECT simhash_attach('single_node', 'body', max_distance => $K, on_duplicate => 'error');
SELECT simhash_attach('dist_none', 'body', max_distance => $K);
SELECT simhash_attach('dist_scoped', 'body', max_distance => $K, on_duplicate => 'error', scope => 'site');
SELECT simhash_attach('dist_registry', 'body', max_distance => $K, on_duplicate => 'error', registry => true);
SQL

# The INSERT statements, one per line, the same texts for every table.
qn "$COORDINATOR" -c "SELECT format('INSERT INTO %s VALUES (%s, %s, %L);', '@T@', site, i, body) FROM texts WHERE i >= $PRELOAD ORDER BY i" \
    >"$CITUS_DIR/inserts.sql"

results=()
run() { # NAME TARGET DESCRIPTION
    local file=$CITUS_DIR/$1.sql start elapsed rejected
    sed "s/@T@/$2/" "$CITUS_DIR/inserts.sql" >"$file"
    start=$(now_ms)
    "$PSQL" -X -q -h /tmp -p "$COORDINATOR" -U postgres -d "$DB" -f "$file" >"$CITUS_DIR/$1.out" 2>&1 || true
    elapsed=$(($(now_ms) - start))
    rejected=$(grep -c 'near-duplicate text' "$CITUS_DIR/$1.out" || true)
    results+=("| $3 | $(awk -v e="$elapsed" -v n="$INSERTS" 'BEGIN { printf "%.2f", e / n }') | $rejected |")
    printf '%-60s %6d ms, %d rejected\n' "$3" "$elapsed" "$rejected"
}
# Each is run twice and the second run counted: the first warms the caches and connections.
for pass in warm counted; do
    results=()
    qn "$COORDINATOR" -c "DELETE FROM single_node WHERE id >= $PRELOAD" -c "DELETE FROM dist_plain WHERE id >= $PRELOAD" -c "DELETE FROM dist_none WHERE id >= $PRELOAD" \
        -c "DELETE FROM dist_scoped WHERE id >= $PRELOAD" -c "DELETE FROM dist_registry WHERE id >= $PRELOAD" \
        -c "DELETE FROM dist_registry_body_registry WHERE split_part(row_key, ', ', 2)::bigint >= $PRELOAD" >/dev/null
    echo "-- $pass"
    run single_node single_node "single node (a table on the coordinator), 'error' trigger"
    run dist_plain dist_plain "distributed, not attached"
    run dist_none dist_none "distributed, on_duplicate 'none'"
    run dist_scoped dist_scoped "distributed, 'error', scope => 'site' (trigger on the shard)"
    run dist_registry dist_registry_body_checked "distributed, 'error', registry => true (through the view)"
done

out=$ROOT/bench/studies/citus_insert/citus_insert$([ "$K" = 7 ] || echo "_k$K").md
{
    echo "# Per-insert cost on Citus"
    echo
    echo "\`bash bench/studies/citus_insert/citus_insert.sh $PRELOAD $INSERTS $K\`: $INSERTS single-row INSERTs, each its own transaction, from one"
    echo "psql session on the coordinator, into tables that hold $PRELOAD rows of two real sentences each"
    echo "(12 sites, 8 shards); Citus $(qn "$COORDINATOR" -c "SELECT extversion FROM pg_extension WHERE extname = 'citus'"),"
    echo "a coordinator and two workers on one machine ($(nproc) cores, $(date -u +%Y-%m-%d)); \`max_distance\` $K; the second of two runs."
    echo
    echo "| table | ms per insert | rejected as near-duplicates |"
    echo "| --- | ---: | ---: |"
    printf '%s\n' "${results[@]}"
} >"$out"
cat "$out"
