# Shared by bench/citus_scale.sh and bench/citus_dedup.sh (issue 26): the three-node Citus cluster
# with this tree's release build, and the rows of real text they grow. Source it after
# scripts/common.sh with BENCH, PACKAGE, PRIVATE_PG, PY and START set.

# shellcheck source=lib.sh
source "$BENCH/lib.sh" # step, bench_prepare

# citus_bench_cluster: the tools, the package (BENCH_CS_SKIP_BUILD=1 reuses it) and the corpus
# (bench_prepare), then a coordinator and two workers on a private copy of the PostgreSQL of
# $PG_CONFIG that loads the package (tests/citus/lib.sh: ports 54371-54373, data under
# /tmp/citus-simhash), stopped when the script exits.
citus_bench_cluster() {
    bench_prepare citus_scale "${BENCH_CS_SKIP_BUILD:-0}"
    export SIMHASH_PACKAGE=$PACKAGE
    # shellcheck source=../tests/citus/lib.sh
    source "$ROOT/tests/citus/lib.sh"
    citus_installed || {
        echo "Citus is not installed for $PG_CONFIG"
        exit 1
    }
    on_exit_stop_cluster
    step "cluster: a coordinator and two workers"
    start_cluster
}

# citus_bench_corpus: on the coordinator, the paragraphs of bench/data/paragraphs_en.txt (at most 400
# characters, as bench/tables.py takes them), para_pick(i, j) naming paragraph j (0-2) of row i,
# row_text(i) the text of row i (three paragraphs, picked by a hash of i, so every size holds the
# rows of the smaller ones and rows i < 0 are new texts), and the empty distributed table articles
# (8 shards, 12 sites). Sets NP, the number of paragraphs.
citus_bench_corpus() {
    qn "$COORDINATOR" >/dev/null <<SQL
-- One scan in file order: row_number() numbers the paragraphs as the file has them in every run.
SET max_parallel_workers_per_gather = 0;
CREATE TABLE para_in (p text);
\copy para_in FROM '$BENCH/data/paragraphs_en.txt' WITH (FORMAT csv, DELIMITER E'\x01', QUOTE E'\x02')
CREATE TABLE para AS SELECT row_number() OVER () AS n, p FROM para_in WHERE char_length(p) BETWEEN 1 AND 400;
ALTER TABLE para ADD PRIMARY KEY (n);
SET citus.shard_count = 8;
CREATE TABLE articles (site int, id bigint, body text, PRIMARY KEY (site, id));
SELECT create_distributed_table('articles', 'site');
SQL
    NP=$(qn "$COORDINATOR" -c "SELECT count(*) FROM para")
    qn "$COORDINATOR" >/dev/null <<SQL
CREATE FUNCTION para_pick(i bigint, j int) RETURNS bigint LANGUAGE sql IMMUTABLE AS
  'SELECT 1 + (hashint8(3 * i + j) & 2147483647) % $NP';
CREATE FUNCTION row_text(i bigint) RETURNS text LANGUAGE sql STABLE AS \$\$
  SELECT a.p || ' ' || b.p || ' ' || c.p FROM para a, para b, para c
  WHERE a.n = para_pick(i, 0) AND b.n = para_pick(i, 1) AND c.n = para_pick(i, 2)
\$\$;
SQL
}

# citus_bench_rows FROM TO: rows FROM to TO - 1 of row_text into articles, as one join.
citus_bench_rows() {
    qn "$COORDINATOR" -c "INSERT INTO articles SELECT i % 12, i, a.p || ' ' || b.p || ' ' || c.p
                          FROM generate_series($1, $2 - 1) i
                          JOIN para a ON a.n = para_pick(i, 0)
                          JOIN para b ON b.n = para_pick(i, 1)
                          JOIN para c ON c.n = para_pick(i, 2)" >/dev/null
}
