#!/usr/bin/env bash
# The hammer (issue 48, point 4): near-duplicates never both commit, whatever the writers do.
# In one database, nine attached tables — SimHash and MinHash; 'error', 'skip' and 'flag'; verify on
# and off; two partitioned tables (three partitions each, rows moving between them by UPDATE of the
# partition key; one partition made after the attach) and one scoped table (scope => grp) — take
# $WRITERS concurrent writers (tests/robustness/hammer.py) for $SECONDS s: random transactions at
# READ COMMITTED, REPEATABLE READ and SERIALIZABLE, of single- and multi-row INSERTs, INSERT ...
# SELECT (also one whose source rows are slow to come), COPY (its client pausing between rows),
# UPDATEs of the text (to a near-duplicate of another row or a fresh text), of the scope or
# partition key and of both, UPDATEs that keep the text's value, INSERT ... ON CONFLICT DO NOTHING /
# DO UPDATE, writable CTEs over several tables, MERGE (PostgreSQL 15 and later), DELETEs and INSERTs
# straight into a partition, some with savepoints; on five tables an application trigger that
# sorts after the extension's (BEFORE or AFTER) holds a row for 3 ms one time in three. The texts
# are base paragraphs with one or two words changed (a pool of 30 made anew every second, 3 of them
# hot, so that writers race to write each base first), or fresh ones. Errors 23505, 40P01, 40001 and
# 55P03 are counted; any other error fails the test.
#
# Afterwards every row's stored fingerprint or signature must be that of its text, and:
# - 'error' and 'skip' tables hold no near-duplicate pair (in one scope, for the scoped table), by
#   the extension's own simhash_pairs() (verified as the attachment) and by a brute force over every
#   pair of rows, computed from the texts: SimHash hamming(simhash(a), simhash(b)) <= max_distance
#   (and shingle_similarity(a, b) >= threshold when verified), MinHash a band key shared at one
#   position and minhash_similarity() >= threshold (verified: >= threshold - 0.2, and
#   shingle_similarity() >= threshold);
# - 'flag' tables: every near-duplicate pair has a flagged row;
# - both counts of all pairs agree (they are exact), every key simhash_pairs() returns names a row,
#   each checked table saw its near-duplicates rejected, skipped or flagged, and races were lost
#   (40P01, or the 40001 of a 'skip'/'flag' row).
#
# Settings (environment): SIMHASH_HAMMER_SECONDS [75], SIMHASH_HAMMER_WRITERS [8],
# SIMHASH_HAMMER_SEED [time], SIMHASH_HAMMER_PORT [54340]; SIMHASH_HAMMER_PACKAGE=DIR runs a private
# copy of the PostgreSQL in use that loads the build of DIR (`cargo pgrx package --out-dir DIR`,
# scripts/common.sh private_postgres) instead of the installed extension.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PORT=${SIMHASH_HAMMER_PORT:-54340}
DIR=/tmp/simhash-robust-hammer-$PORT
SECONDS_=${SIMHASH_HAMMER_SECONDS:-75}
WRITERS=${SIMHASH_HAMMER_WRITERS:-8}
SEED=${SIMHASH_HAMMER_SEED:-$(date +%s)}
DB=hammer

if [ -n "${SIMHASH_HAMMER_PACKAGE:-}" ]; then
    # psql stays the one of $PG_CONFIG (lib.sh set $PSQL): the private copy has the server only.
    private_postgres "$SIMHASH_HAMMER_PACKAGE" "$DIR-pg"
fi
start_server "$DIR" "$PORT" deadlock_timeout=100ms max_connections=50
trap 'rc=$?; stop_server "'"$DIR"'"; [ $rc -ne 0 ] || rm -rf "'"$DIR"'" "'"$DIR-pg"'"' EXIT

q postgres -c "CREATE DATABASE $DB" >/dev/null
q "$DB" >/dev/null <<'SQL'
CREATE EXTENSION simhash_ext;
-- Every table: id, ref (the key of ON CONFLICT and MERGE), grp (a plain column; the partition key of
-- a partitioned table; the scope of the scoped one), body (the attached text), note (which writer,
-- transaction and statement wrote the row last: hammer.py's logs give its SQL).
CREATE TABLE sh_error_v (id bigserial PRIMARY KEY, ref int UNIQUE, grp int, body text, note text);
CREATE TABLE sh_skip_nv (LIKE sh_error_v INCLUDING ALL);
CREATE TABLE sh_flag_v (LIKE sh_error_v INCLUDING ALL);
CREATE TABLE mh_error_nv (LIKE sh_error_v INCLUDING ALL);
CREATE TABLE mh_skip_v (LIKE sh_error_v INCLUDING ALL);
CREATE TABLE mh_flag_nv (LIKE sh_error_v INCLUDING ALL);
CREATE TABLE scope_sh_error_nv (LIKE sh_error_v INCLUDING ALL);
SELECT simhash_attach('sh_error_v', 'body', on_duplicate => 'error');
SELECT simhash_attach('sh_skip_nv', 'body', on_duplicate => 'skip', verify => false);
SELECT simhash_attach('sh_flag_v', 'body', on_duplicate => 'flag');
SELECT simhash_attach('mh_error_nv', 'body', method => 'minhash', on_duplicate => 'error', verify => false);
SELECT simhash_attach('mh_skip_v', 'body', method => 'minhash', on_duplicate => 'skip');
SELECT simhash_attach('mh_flag_nv', 'body', method => 'minhash', on_duplicate => 'flag', verify => false);
SELECT simhash_attach('scope_sh_error_nv', 'body', on_duplicate => 'error', scope => 'grp', verify => false);

CREATE TABLE part_sh_error_v (id bigserial, ref int, grp int NOT NULL, body text, note text,
                              PRIMARY KEY (id, grp), UNIQUE (ref, grp)) PARTITION BY LIST (grp);
CREATE TABLE part_sh_error_v_p1 PARTITION OF part_sh_error_v FOR VALUES IN (1);
CREATE TABLE part_sh_error_v_p2 PARTITION OF part_sh_error_v FOR VALUES IN (2);
CREATE TABLE part_sh_error_v_p3 PARTITION OF part_sh_error_v FOR VALUES IN (3);
SELECT simhash_attach('part_sh_error_v', 'body', on_duplicate => 'error');
CREATE TABLE part_mh_skip_nv (LIKE part_sh_error_v INCLUDING DEFAULTS, PRIMARY KEY (id, grp), UNIQUE (ref, grp))
  PARTITION BY LIST (grp);
CREATE TABLE part_mh_skip_nv_p1 PARTITION OF part_mh_skip_nv FOR VALUES IN (1);
CREATE TABLE part_mh_skip_nv_p2 PARTITION OF part_mh_skip_nv FOR VALUES IN (2);
SELECT simhash_attach('part_mh_skip_nv', 'body', method => 'minhash', on_duplicate => 'skip', verify => false);
-- made after the attach: gets the columns, indexes and both triggers by cloning
CREATE TABLE part_mh_skip_nv_p3 PARTITION OF part_mh_skip_nv FOR VALUES IN (3);

-- The application's triggers, which sort after the extension's (triggers fire in name order) and
-- hold a row for 3 ms one time in three: BEFORE, between the extension's BEFORE trigger and the
-- row's write; AFTER, between the write and the statement's check.
CREATE FUNCTION hold() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF random() < 0.3 THEN PERFORM pg_sleep(0.003); END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER zz_hold BEFORE INSERT OR UPDATE ON part_sh_error_v FOR EACH ROW EXECUTE FUNCTION hold();
CREATE TRIGGER zz_hold BEFORE INSERT OR UPDATE ON scope_sh_error_nv FOR EACH ROW EXECUTE FUNCTION hold();
CREATE TRIGGER zz_hold BEFORE INSERT OR UPDATE ON mh_skip_v FOR EACH ROW EXECUTE FUNCTION hold();
CREATE TRIGGER zz_hold AFTER INSERT OR UPDATE ON sh_error_v FOR EACH ROW EXECUTE FUNCTION hold();
CREATE TRIGGER zz_hold AFTER INSERT OR UPDATE ON mh_flag_nv FOR EACH ROW EXECUTE FUNCTION hold();
SQL
TABLES=(sh_error_v sh_skip_nv sh_flag_v mh_error_nv mh_skip_v mh_flag_nv part_sh_error_v part_mh_skip_nv scope_sh_error_nv)
expect "nine attachments, each with its check trigger" \
    "$(q "$DB" -c "SELECT count(*), count(*) FILTER (WHERE EXISTS (SELECT FROM pg_trigger g WHERE g.tgrelid = a.table_name AND g.tgname = a.trigger_name || '\$chk'))
                   FROM simhash_attachments() a")" "9|9"
PG_SERVER=$(q "$DB" -c "SHOW server_version")

echo "  $WRITERS writers for $SECONDS_ s (seed $SEED; PostgreSQL $PG_SERVER; logs in $DIR)"
start=$(now_ms)
writers_rc=0
python3 "$HERE/hammer.py" --port "$PORT" --db "$DB" --seconds "$SECONDS_" --writers "$WRITERS" \
    --seed "$SEED" --out "$DIR" || writers_rc=$?
measure "the writers' run (s)" "$((($(now_ms) - start) / 1000))"
[ -s "$DIR/stats.tsv" ] || fail "the writers wrote no $DIR/stats.tsv (exit status $writers_rc)"
if [ -s "$DIR/unexpected.log" ]; then sed 's/^/  unexpected  /' "$DIR/unexpected.log" | head -40; fi
failures=()
check() { # check NAME CONDITION(bash arithmetic): prints ok, or notes a failure (reported at the end)
    if (($2)); then pass "$1"; else
        printf '  FAIL  %s\n' "$1" >&2
        failures+=("$1")
    fi
}

check "no unexpected error, every writer finished (hammer.py's exit status $writers_rc)" "$writers_rc == 0"

# stat TABLE COLUMN: a count of hammer.py's stats.tsv.
stat() {
    awk -F'\t' -v t="$1" -v c="$2" 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
                                    $1 == t { print $col[c] }' "$DIR/stats.tsv"
}

# attachment TABLE: method|on_duplicate|max_distance|threshold|verify|scope of its attachment.
attachment() {
    q "$DB" -c "SELECT method, on_duplicate, coalesce(max_distance, 0), threshold, verify, coalesce(scope_column::text, '')
                FROM simhash_attachments() WHERE table_name = '$1'::regclass"
}

# The key simhash_pairs() gives a row: the primary key's text, (id,grp) for a partitioned table.
key_of() {
    case $1 in
    part_*) echo "ROW($2.id, $2.grp)::text" ;;
    *) echo "$2.id::text" ;;
    esac
}

# pairs_of TABLE FROM: the pairs of FROM 'oracle' (simhash_pairs(), verified as the attachment) or
# 'brute' (every pair of rows, computed from the texts), as a relation of (a, b) rows of TABLE,
# each with id, grp, body, dup (its flag, NULL when not flagged) and note.
pairs_of() {
    local t=$1 from=$2 method mode k thr verify scope dup
    IFS='|' read -r method mode k thr verify scope <<<"$(attachment "$t")"
    dup=$([ "$mode" = flag ] && echo body_duplicate_of::text || echo NULL::text)
    if [ "$from" = oracle ]; then
        echo "(SELECT p.key_a, p.key_b, p.distance, p.similarity, a.id AS a_id, a.grp AS a_grp, a.body AS a_body, a.dup AS a_dup, a.note AS a_note,
                      b.id AS b_id, b.grp AS b_grp, b.body AS b_body, b.dup AS b_dup, b.note AS b_note
               FROM simhash_pairs('$t') p
               LEFT JOIN (SELECT *, $dup AS dup FROM $t) a ON $(key_of "$t" a) = p.key_a
               LEFT JOIN (SELECT *, $dup AS dup FROM $t) b ON $(key_of "$t" b) = p.key_b)"
    elif [ "$method" = simhash ]; then
        echo "(WITH s AS MATERIALIZED (SELECT id, grp, body, $dup AS dup, note, simhash(body) AS fp FROM $t)
               SELECT x.id::text AS key_a, y.id::text AS key_b, hamming(x.fp, y.fp) AS distance,
                      $([ "$verify" = t ] && echo "shingle_similarity(x.body, y.body)" || echo "NULL::float8") AS similarity,
                      x.id AS a_id, x.grp AS a_grp, x.body AS a_body, x.dup AS a_dup, x.note AS a_note, y.id AS b_id, y.grp AS b_grp, y.body AS b_body, y.dup AS b_dup, y.note AS b_note
               FROM s x JOIN s y ON x.id < y.id AND hamming(x.fp, y.fp) <= $k
               WHERE $([ "$verify" = t ] && echo "shingle_similarity(x.body, y.body) >= $thr" || echo true))"
    else
        echo "(WITH s AS MATERIALIZED (SELECT id, grp, body, $dup AS dup, note, minhash(body) AS sig FROM $t),
               k AS MATERIALIZED (SELECT s.id, u.pos, u.key FROM s, unnest(minhash_bands(s.sig)) WITH ORDINALITY u(key, pos)),
               c AS (SELECT DISTINCT k1.id AS a, k2.id AS b FROM k k1 JOIN k k2 ON k1.pos = k2.pos AND k1.key = k2.key AND k1.id < k2.id)
               SELECT x.id::text AS key_a, y.id::text AS key_b, NULL::int AS distance,
                      $([ "$verify" = t ] && echo "shingle_similarity(x.body, y.body)" || echo "minhash_similarity(x.sig, y.sig)") AS similarity,
                      x.id AS a_id, x.grp AS a_grp, x.body AS a_body, x.dup AS a_dup, x.note AS a_note, y.id AS b_id, y.grp AS b_grp, y.body AS b_body, y.dup AS b_dup, y.note AS b_note
               FROM c JOIN s x ON x.id = c.a JOIN s y ON y.id = c.b
               WHERE $([ "$verify" = t ] && echo "minhash_similarity(x.sig, y.sig) >= $thr - 0.2 AND shingle_similarity(x.body, y.body) >= $thr" ||
            echo "minhash_similarity(x.sig, y.sig) >= $thr"))"
    fi
}

# The pairs the guarantee forbids: in one scope (scoped table); 'flag': both rows unflagged.
forbidden() {
    local t=$1 mode scope cond=true
    IFS='|' read -r _ mode _ _ _ scope <<<"$(attachment "$t")"
    [ -n "$scope" ] && cond="p.a_grp = p.b_grp"
    [ "$mode" = flag ] && cond="$cond AND p.a_dup IS NULL AND p.b_dup IS NULL"
    echo "$cond"
}

# counts TABLE FROM: all pairs | pairs whose both keys name a row | forbidden pairs.
counts() {
    q "$DB" -c "SELECT count(*), count(*) FILTER (WHERE p.a_id IS NOT NULL AND p.b_id IS NOT NULL),
                       count(*) FILTER (WHERE $(forbidden "$1"))
                FROM $(pairs_of "$1" "$2") p"
}

# show_forbidden TABLE FROM: up to 5 forbidden pairs, and the writers' log lines of the transactions
# that wrote each row last (note w<N>.t<M>.s<K>): the reproduction of a failure.
show_forbidden() {
    local t=$1 from=$2 line note txn
    echo "  forbidden pairs of $t ($from):"
    q "$DB" -F ' ' -c "SELECT p.key_a, p.key_b, 'distance', p.distance, 'similarity', round(p.similarity::numeric, 3),
                              'a:', p.a_grp, p.a_dup, p.a_note, 'b:', p.b_grp, p.b_dup, p.b_note
                       FROM $(pairs_of "$t" "$from") p WHERE $(forbidden "$t") ORDER BY 1, 2 LIMIT 5" |
        while read -r line; do
            echo "    $line"
            for note in $(grep -oE 'w[0-9]+\.t[0-9]+\.s[0-9]+' <<<"$line" | sort -u); do
                txn=${note%.s*}
                grep -hE " $txn( |\.s)" "$DIR"/writer-*.log | cut -c1-400 | sed 's/^/      /'
            done
        done
    q "$DB" -F ' ' -c "SELECT 'texts:', p.a_body, ' || ', p.b_body FROM $(pairs_of "$t" "$from") p
                       WHERE $(forbidden "$t") ORDER BY p.key_a, p.key_b LIMIT 2" | sed 's/^/    /'
}

printf '\n  %-18s %7s %6s %6s %6s %6s %6s %6s %6s %6s %7s %7s %7s %7s\n' table rows stmts ok \
    23505 23505u 40P01 40001 40001s 55P03 skipped flagged oracle brute
races=0
for t in "${TABLES[@]}"; do
    IFS='|' read -r method mode _ _ verify scope <<<"$(attachment "$t")"
    fpcol=$([ "$method" = simhash ] && echo "body_simhash IS DISTINCT FROM simhash(body)" || echo "body_minhash IS DISTINCT FROM minhash(body)")
    IFS='|' read -r rows stale flagged <<<"$(q "$DB" -c "SELECT count(*), count(*) FILTER (WHERE $fpcol),
        $([ "$mode" = flag ] && echo "count(body_duplicate_of)" || echo 0) FROM $t")"
    IFS='|' read -r o_all o_keys o_bad <<<"$(counts "$t" oracle)"
    IFS='|' read -r b_all _ b_bad <<<"$(counts "$t" brute)"
    skipped=$(($(stat "$t" asked) - $(stat "$t" written)))
    [ "$mode" = skip ] || skipped=0
    races=$((races + $(stat "$t" 40P01) + $(stat "$t" near_40001)))
    printf '  %-18s %7s %6s %6s %6s %6s %6s %6s %6s %6s %7s %7s %7s %7s\n' "$t" "$rows" "$(stat "$t" statements)" \
        "$(stat "$t" ok)" "$(stat "$t" near_23505)" "$(stat "$t" other_23505)" "$(stat "$t" 40P01)" \
        "$(stat "$t" near_40001)" "$(stat "$t" other_40001)" "$(stat "$t" 55P03)" "$skipped" "$flagged" \
        "$o_bad/$o_all" "$b_bad/$b_all"
    results+=("$t|$method|$mode|$verify|$scope|$rows|$stale|$flagged|$skipped|$o_all|$o_keys|$o_bad|$b_all|$b_bad")
done
printf '  %-18s %7s %6s %6s %6s %6s %6s %6s %6s %6s\n' "(at commit)" "" "$(stat "(commit)" statements)" "" \
    "$(stat "(commit)" near_23505)" "$(stat "(commit)" other_23505)" "$(stat "(commit)" 40P01)" \
    "$(stat "(commit)" near_40001)" "$(stat "(commit)" other_40001)" "$(stat "(commit)" 55P03)"
echo "  (errors count against the table they name, else the statement's first table; 23505: near-duplicate,"
echo "   23505u: other unique violations; 40001: a 'skip'/'flag' row's lost race,"
echo "   40001s: PostgreSQL's serialization failures; oracle, brute: forbidden pairs / all pairs)"
echo

for r in "${results[@]}"; do
    IFS='|' read -r t method mode verify scope rows stale flagged skipped o_all o_keys o_bad b_all b_bad <<<"$r"
    what="$t ($method, '$mode', verify $verify${scope:+, scope $scope})"
    check "$what: every stored ${method/simhash/fingerprint} is its text's ($stale stale of $rows)" "$stale == 0"
    check "$what: every key of simhash_pairs() names a row ($o_keys of $o_all)" "$o_keys == $o_all"
    check "$what: simhash_pairs() and the brute force agree ($o_all and $b_all pairs)" "$o_all == $b_all"
    if [ "$mode" = flag ]; then
        check "$what: every near-duplicate pair has a flagged row (unflagged pairs: $o_bad by simhash_pairs, $b_bad by brute force)" \
            "$o_bad == 0 && $b_bad == 0"
        check "$what: near-duplicates were flagged ($flagged rows)" "$flagged > 0"
    else
        check "$what: no near-duplicate pair${scope:+ in one scope} ($o_bad by simhash_pairs, $b_bad by brute force)" \
            "$o_bad == 0 && $b_bad == 0"
        if [ "$mode" = error ]; then
            check "$what: near-duplicates were rejected ($(stat "$t" near_23505) x 23505)" "$(stat "$t" near_23505) > 0"
        else
            check "$what: near-duplicates were skipped ($skipped rows)" "$skipped > 0"
        fi
    fi
    ((o_bad == 0)) || show_forbidden "$t" oracle
    ((b_bad == 0 || o_bad != 0)) || show_forbidden "$t" brute
done
check "races were lost: $races x 40P01 or the 40001 of a 'skip'/'flag' row" "$races > 0"
measure "statements" "$(awk -F'\t' 'NR > 1 { s += $2 } END { print s }' "$DIR/stats.tsv")"
measure "rows at the end" "$(q "$DB" -c "SELECT sum(n_live_tup) FROM pg_stat_user_tables")"
measure "races lost (40P01, 40001 of 'skip'/'flag')" "$races"

if ((${#failures[@]})); then
    echo "hammer: FAIL (${#failures[@]} checks failed; seed $SEED; logs kept in $DIR)"
    exit 1
fi
echo "hammer: PASS (${#TABLES[@]} tables, 0 forbidden pairs)"
