#!/usr/bin/env bash
# How the cost of a single-row INSERT into a Citus table grows with the table (issue 26): for each
# size, the same 300 single-row INSERTs (each its own transaction, from one psql session on the
# coordinator) into the table not attached ("plain"), attached with scope => its distribution
# column ("scope", the trigger on the shard), and attached with registry => true (through the view
# <t>_body_checked: the check across all shards on the coordinator; then again with the table of
# shards renamed away, so that the check searches by query, 0.6.0's way). Rows are three real English
# paragraphs each (bench/data/paragraphs_en.txt, about 50 words), 12 sites, 8 shards, max_distance 7.
#
#   bash bench/citus_scale.sh [SIZES]        # default "10000 100000 1000000 10000000"
#   BENCH_CS_PAIRS=0 bash bench/citus_scale.sh  # without simhash_pairs
#
# Needs Citus installed in the PostgreSQL of $PG_CONFIG (docs/citus.md, Setup); runs a
# coordinator and two workers on this machine on a private copy of that PostgreSQL with the release
# package of this working tree (tests/citus/lib.sh: ports 54371-54373, data under /tmp/citus-simhash).
# Per size it prints p50 and p99 of each kind, the index entries a registry check reads (its
# candidates, over the first 50 texts), the remote commands one registry insert sends, and the
# bytes per row of the table with each attachment. Writes bench/results/citus_scale.md.
BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../scripts/common.sh
source "$BENCH/../scripts/common.sh"
SIZES=${1:-"10000 100000 1000000 10000000"}
INSERTS=300
PACKAGE=/tmp/simhash-citus-scale-pkg
PRIVATE_PG=/tmp/simhash-citus-scale-pg
PY=$BENCH/.venv/bin/python
START=$SECONDS
# shellcheck source=citus_lib.sh
source "$BENCH/citus_lib.sh" # citus_bench_cluster, citus_bench_corpus, citus_bench_rows
citus_bench_cluster
for port in "${CITUS_PORTS[@]}"; do
    qn "$port" -c "ALTER SYSTEM SET shared_buffers = '2GB'" -c "ALTER SYSTEM SET max_wal_size = '2GB'" \
        -c "ALTER SYSTEM SET checkpoint_timeout = '30min'" -c "ALTER SYSTEM SET maintenance_work_mem = '512MB'" >/dev/null
done
for i in 0 1 2; do
    runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$CITUS_DIR/node$i/data" -l "$CITUS_DIR/node$i/server.log" -w restart -m fast >/dev/null
done

# The rows (citus_bench_corpus); the inserted texts (i < 0) are new.
citus_bench_corpus
qn "$COORDINATOR" >/dev/null <<SQL
-- The index entries a registry check of fingerprint fp reads: the rows in the probed values of
-- each band (simhash_probes), as the check's UNION reads them.
CREATE FUNCTION candidates(fp bigint) RETURNS bigint LANGUAGE plpgsql AS \$\$
DECLARE
  total bigint := 0;
  c bigint;
  p record;
BEGIN
  FOR p IN SELECT * FROM simhash_probes(fp, 7, 4) LOOP
    EXECUTE format('SELECT count(*) FROM articles WHERE body_band%s = ANY (%L::int[])', p.band, p.probe_values) INTO c;
    total := total + c;
  END LOOP;
  RETURN total;
END
\$\$;
SQL
qn "$COORDINATOR" -c "SELECT format('INSERT INTO @T@ (site, id, body) VALUES (%s, %s, %L);', (-i) % 12, -i, row_text(-i))
                      FROM generate_series(1, $INSERTS) i ORDER BY i" >"$CITUS_DIR/inserts.sql"
qn "$COORDINATOR" -c "SELECT format('INSERT INTO @T@ (site, id, body) VALUES (%s, %s, %L);', (-i) % 12, -i, row_text(-i))
                      FROM generate_series($INSERTS + 1, $INSERTS + 100) i ORDER BY i" >"$CITUS_DIR/warmup.sql"

# run TARGET LABEL: the warm-up inserts, then the timed ones; prints "p50 p99 rejected" (ms) and
# deletes the inserted rows again.
run() {
    local target=$1 out=$CITUS_DIR/run.out port
    # A checkpoint started by the writes before (an attach rewrites the table) would overlap the
    # timed inserts of whichever column comes next: each column starts after one.
    for port in "${CITUS_PORTS[@]}"; do qn "$port" -c "CHECKPOINT" >/dev/null; done
    sed "s/@T@/$target/" "$CITUS_DIR/warmup.sql" | "$PSQL" -X -q -h /tmp -p "$COORDINATOR" -U postgres -d "$DB" >/dev/null 2>&1 || true
    { echo '\timing on'; sed "s/@T@/$target/" "$CITUS_DIR/inserts.sql"; } |
        "$PSQL" -X -q -h /tmp -p "$COORDINATOR" -U postgres -d "$DB" >"$out" 2>&1 || true
    qn "$COORDINATOR" -c "DELETE FROM articles WHERE id < 0" >/dev/null
    awk '/^Time:/ { print $2 }' "$out" | sort -n | awk -v rejected="$(grep -c 'near-duplicate text' "$out" || true)" \
        '{ a[NR] = $1 } END { printf "%.2f %.2f %d\n", a[int((NR + 1) / 2)], a[int(NR * 0.99 + 0.5)], rejected }'
}

rows=0
table=()
sizes=()
for n in $SIZES; do
    step "rows: $n"
    if ((n > rows)); then
        citus_bench_rows "$rows" "$n"
        rows=$n
    fi
    qn "$COORDINATOR" -c "VACUUM ANALYZE articles" >/dev/null
    read -r plain_p50 plain_p99 _ <<<"$(run articles)"
    step "rows: $n, scope => 'site'"
    qn "$COORDINATOR" -c "SELECT simhash_attach('articles', 'body', max_distance => 7, on_duplicate => 'error', scope => 'site')" \
        -c "VACUUM ANALYZE articles" >/dev/null
    scope_bytes=$(qn "$COORDINATOR" -c "SELECT citus_total_relation_size('articles') / $n")
    read -r scope_p50 scope_p99 scope_rejected <<<"$(run articles)"
    qn "$COORDINATOR" -c "SELECT simhash_detach('articles')" -c "VACUUM articles" >/dev/null
    step "rows: $n, registry => true"
    qn "$COORDINATOR" -c "SELECT simhash_attach('articles', 'body', max_distance => 7, on_duplicate => 'error', registry => true)" \
        -c "VACUUM ANALYZE articles" >/dev/null
    registry_bytes=$(qn "$COORDINATOR" -c "SELECT citus_total_relation_size('articles') / $n")
    read -r registry_p50 registry_p99 registry_rejected <<<"$(run articles_body_checked)"
    # The same check by query alone (0.6.0's search, the fallback of 0.7.0), with the table of
    # shards renamed away, then back: an A/B in the same run.
    qn "$COORDINATOR" -c "ALTER TABLE articles_body_shards RENAME TO articles_body_shards_away" >/dev/null
    read -r query_p50 query_p99 query_rejected <<<"$(run articles_body_checked)"
    qn "$COORDINATOR" -c "ALTER TABLE articles_body_shards_away RENAME TO articles_body_shards" >/dev/null
    [ "$query_rejected" = "$registry_rejected" ] || echo "rejections differ: $registry_rejected with the table of shards, $query_rejected by query" >&2
    candidates=$(qn "$COORDINATOR" -c "SELECT round(avg(candidates(simhash(row_text(-i))))) FROM generate_series(1, 50) i")
    # The remote commands of one insert through the view (Citus logs each one it sends).
    qn "$COORDINATOR" -c "SET client_min_messages = notice" -c "SET citus.log_remote_commands = on" \
        -c "INSERT INTO articles_body_checked (site, id, body) VALUES (0, -999999, row_text(-999999))" >"$CITUS_DIR/remote.out" 2>&1 || true
    remote=$(grep -c 'issuing' "$CITUS_DIR/remote.out" || true)
    qn "$COORDINATOR" -c "DELETE FROM articles WHERE id < 0" >/dev/null
    # simhash_pairs of the distributed table, paired on the workers (the default) and on the
    # coordinator (simhash.dedup_on_workers off), one after the other (BENCH_CS_PAIRS=0 skips it:
    # at 10M rows it takes a quarter of an hour).
    workers_s=- coordinator_s=- npairs=-
    if [ "${BENCH_CS_PAIRS:-1}" = 1 ]; then
        start=$(now_ms)
        npairs=$(qn "$COORDINATOR" -c "SELECT count(*) FROM simhash_pairs('articles')")
        workers_s=$(awk -v ms=$(($(now_ms) - start)) 'BEGIN { printf "%.1f", ms / 1000 }')
        start=$(now_ms)
        npairs_c=$(qn "$COORDINATOR" -c "SET simhash.dedup_on_workers = off" -c "SELECT count(*) FROM simhash_pairs('articles')")
        coordinator_s=$(awk -v ms=$(($(now_ms) - start)) 'BEGIN { printf "%.1f", ms / 1000 }')
        [ "$npairs" = "$npairs_c" ] || echo "pairs differ: $npairs on the workers, $npairs_c on the coordinator" >&2
    fi
    # Detached, and vacuumed: the next attach's UPDATE reuses the space of this one's row versions.
    qn "$COORDINATOR" -c "SELECT simhash_detach('articles')" -c "VACUUM articles" >/dev/null
    sizes+=("$n")
    table+=("| $(printf "%'d" "$n") | $candidates | $registry_p50 / $registry_p99 | $query_p50 / $query_p99 | $scope_p50 / $scope_p99 | $plain_p50 / $plain_p99 | $registry_rejected / $scope_rejected | $remote | $registry_bytes / $scope_bytes | $workers_s / $coordinator_s s, $npairs |")
    printf '%s\n' "${table[-1]}"
done

out=$ROOT/bench/results/citus_scale.md
{
    echo "# Single-row INSERTs into a Citus table as it grows"
    echo
    echo "\`bash bench/citus_scale.sh \"$SIZES\"\`: Citus $(qn "$COORDINATOR" -c "SELECT extversion FROM pg_extension WHERE extname = 'citus'")"
    echo "on $("$PG_BIN/postgres" --version), a coordinator and two workers on one machine ($(nproc) cores,"
    echo "$(free -g | awk '/^Mem:/ {print $2}') GiB, $(date -u +%Y-%m-%d)); simhash_ext release build of commit $(git -C "$ROOT" rev-parse --short HEAD)."
    echo "8 shards, 12 sites, rows of three real English paragraphs (about 50 words), max_distance 7,"
    echo "$INSERTS single-row INSERTs per column after 100 untimed ones, each its own transaction, from one psql"
    echo "session on the coordinator; times are psql's (ms). Candidates: index entries a registry check"
    echo "reads (mean over 50 texts). Registry by query: the same inserts with the table of shards renamed"
    echo "away, so that the check searches with its own UNION query (0.6.0's check), right after the registry run."
    echo "Remote commands: what Citus sends to the workers for one insert"
    echo "through the view. Bytes per row: the table with its indexes, registry attachment / scope attachment."
    echo "simhash_pairs: count(*) of simhash_pairs('articles') at max_distance 7, its time paired on the workers"
    echo "(the default) / on the coordinator (simhash.dedup_on_workers off), and the pairs (the same both ways)."
    echo
    echo "| rows | candidates per check | registry p50 / p99 | registry by query p50 / p99 | scope p50 / p99 | plain p50 / p99 | rejected (registry / scope) | remote commands | bytes per row (registry / scope) | simhash_pairs |"
    echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    printf '%s\n' "${table[@]}"
    echo
    echo "Paragraphs in the pool: $NP."
} >"$out"
cat "$out"
