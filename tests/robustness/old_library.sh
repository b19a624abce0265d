#!/usr/bin/env bash
# The previous release's library under the new one (issue 51, docs/ARCHITECTURE.md §12.1). upgrade.sh
# runs old versions' SQL on the new library; this test runs rows that the previous release's library
# wrote. It builds that library from the commit recorded in tests/robustness/previous_release (git
# archive of the commit, `cargo pgrx package`), loads it into a private copy of the PostgreSQL in
# use, creates the extension, attaches tables with both methods (SimHash and MinHash, in 'error',
# 'skip' and 'flag' mode, verifying and not, a partitioned table of each, a partition attached later)
# and writes rows, near-duplicates among them. Then it stops the server, puts this tree's library and
# scripts in place of the old ones, starts it again and runs ALTER EXTENSION simhash_ext UPDATE (to the
# default version of this tree's control file; nothing to do when that is the previous version
# itself, and the library still changes). It checks that:
# - the server maps the new library, and between the swap and the update the old SQL works with it;
# - every stored fingerprint, signature and band column equals what the new library computes from the
#   text with the attachment's settings, and the update changed none of them, nor any setting;
# - the band indexes pass bt_index_check, and lookups through them and through the GIN index find the
#   old rows;
# - each trigger rejects, skips or flags a near-duplicate of an old row written after the swap (across
#   partitions too), an UPDATE to a near-duplicate too, and a new text gets the new library's values;
# - simhash_pairs equals a brute force over the SimHash table's fingerprints and finds the MinHash
#   pair written by the old library; simhash_clusters and simhash_compare answer;
# - simhash_detach leaves the tables as they were before the attach, and an attach again computes
#   the values the old library stored, and its triggers act.
#
# Settings (environment): SIMHASH_OLD_LIBRARY_PORT [54339]; SIMHASH_OLD_LIBRARY_PACKAGE=DIR and
# SIMHASH_NEW_LIBRARY_PACKAGE=DIR reuse `cargo pgrx package --out-dir DIR` outputs instead of
# building them. The builds share the target directory of this tree (CARGO_TARGET_DIR, default
# target/): the new one is the release build `cargo pgrx install --release` made, and the old commit
# reuses the compiled dependencies. The old package is kept there (target/previous-release/) for the
# next run.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PORT=${SIMHASH_OLD_LIBRARY_PORT:-54339}
DIR=/tmp/simhash-robust-old-library-$PORT
WORK=$DIR-work
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
RECORD=$ROOT/tests/robustness/previous_release
OLD_VERSION=$(sed -n 's/^version=//p' "$RECORD")
OLD_COMMIT=$(sed -n 's/^commit=//p' "$RECORD")
[[ $OLD_VERSION =~ ^[0-9]+\.[0-9]+\.[0-9]+$ && $OLD_COMMIT =~ ^[0-9a-f]{40}$ ]] ||
    fail "$RECORD names no version=X.Y.Z and commit=<40 hex digits>"
measure "previous release" "$OLD_VERSION at ${OLD_COMMIT:0:12}"

stop_server "$DIR"
rm -rf "$DIR" "$WORK"
mkdir -p "$WORK"
trap 'rc=$?; stop_server "'"$DIR"'"; [ $rc -ne 0 ] || rm -rf "'"$DIR"'" "'"$WORK"'"' EXIT
t_start=$(now_ms)
seconds_since() { awk -v ms=$(($(now_ms) - $1)) 'BEGIN { printf "%.0f", ms / 1000 }'; }

# package SOURCE_TREE OUT LOG: `cargo pgrx package` of SOURCE_TREE for $PG_CONFIG into OUT; fails
# (returns 1) when the build does, its log in LOG.
package() {
    ensure_pgrx_config
    if ! (cd "$1" && CARGO_TARGET_DIR=$TARGET_DIR nice -n 10 cargo pgrx package --pg-config "$PG_CONFIG" --out-dir "$2") >"$3" 2>&1; then
        tail -30 "$3" >&2
        return 1
    fi
}
# forget_library: removes the library (cdylib) of the target directory's release build. Cargo names
# it without a hash, so the old tree's build and this tree's write the same file, and each would then
# take the other's for its own output, up to date: removed before and after the old tree's build, it
# is built again by the next build of either tree.
forget_library() {
    rm -f "$TARGET_DIR/release/deps/libsimhash_ext.so" "$TARGET_DIR/release/libsimhash_ext.so"
}

# The new library first: this tree's, the release build `cargo pgrx install --release` made when
# there is one.
NEW_PKG=${SIMHASH_NEW_LIBRARY_PACKAGE:-}
if [ -z "$NEW_PKG" ]; then
    NEW_PKG=$WORK/new-package
    t0=$(now_ms)
    package "$ROOT" "$NEW_PKG" "$WORK/new-package.log" || fail "cargo pgrx package of this tree failed (log: $WORK/new-package.log)"
    measure "build of the new library (s)" "$(seconds_since "$t0")"
fi
# The old library: the recorded commit's tree, built once per commit and PostgreSQL version.
OLD_PKG=${SIMHASH_OLD_LIBRARY_PACKAGE:-}
if [ -z "$OLD_PKG" ]; then
    pg_version=$("$PG_CONFIG" --version | sed -E 's/^PostgreSQL ([^ ]+).*/\1/')
    OLD_PKG=$TARGET_DIR/previous-release/$OLD_COMMIT-pg$pg_version
    if [ ! -f "$OLD_PKG/complete" ]; then
        git -C "$ROOT" cat-file -e "$OLD_COMMIT^{commit}" 2>/dev/null ||
            fail "commit $OLD_COMMIT of $RECORD is not in this clone (a shallow clone? git fetch --unshallow)"
        mkdir -p "$WORK/old-tree"
        git -C "$ROOT" archive "$OLD_COMMIT" | tar -x -C "$WORK/old-tree"
        expect "the recorded commit's Cargo.toml has the recorded version" \
            "$(sed -n 's/^version = "\(.*\)"/\1/p' "$WORK/old-tree/Cargo.toml" | head -1)" "$OLD_VERSION"
        t0=$(now_ms)
        rm -rf "$OLD_PKG"
        forget_library
        built=0
        package "$WORK/old-tree" "$OLD_PKG" "$WORK/old-package.log" || built=$?
        forget_library
        ((built == 0)) || fail "cargo pgrx package of $OLD_COMMIT failed (log: $WORK/old-package.log)"
        touch "$OLD_PKG/complete"
        measure "build of the old library (s)" "$(seconds_since "$t0")"
    fi
fi
SYS_LIB=$("$PG_CONFIG" --pkglibdir)
SYS_EXT=$("$PG_CONFIG" --sharedir)/extension
for pkg in "$OLD_PKG" "$NEW_PKG"; do
    [ -f "$pkg$SYS_LIB/simhash_ext.so" ] && [ -f "$pkg$SYS_EXT/simhash_ext.control" ] ||
        fail "$pkg is not a package of simhash_ext for $PG_CONFIG"
done
default_version() { sed -n "s/^default_version *= *'\(.*\)'/\1/p" "$1$SYS_EXT/simhash_ext.control"; }
expect "the old package is version $OLD_VERSION" "$(default_version "$OLD_PKG")" "$OLD_VERSION"
TARGET=$(default_version "$NEW_PKG")
[ "$(printf '%s\n' "$OLD_VERSION" "$TARGET" | sort -V | tail -1)" == "$TARGET" ] ||
    fail "this tree's version $TARGET is older than the previous release $OLD_VERSION"
measure "this tree's version (the update's target)" "$TARGET"
old_md5=$(md5sum <"$OLD_PKG$SYS_LIB/simhash_ext.so" | cut -c1-32)
new_md5=$(md5sum <"$NEW_PKG$SYS_LIB/simhash_ext.so" | cut -c1-32)
measure "libraries (md5 of old, new)" "${old_md5:0:12}, ${new_md5:0:12}"
# A tree whose sources differ from the previous release's builds another library (the SQL of
# sql/src and the version are in it too): the same file means a build took the other's.
if ! git -C "$ROOT" diff --quiet "$OLD_COMMIT" -- src core sql build.rs Cargo.toml Cargo.lock simhash_ext.control; then
    [ "$old_md5" != "$new_md5" ] ||
        fail "the old and new packages hold the same library, but this tree's sources differ from $OLD_COMMIT's"
    pass "the new library differs from the old one, as the sources do"
fi

PG_COPY=$WORK/postgres
private_postgres "$OLD_PKG" "$PG_COPY"
start_server "$DIR" "$PORT"
# restart: the same cluster started again (start_server would make a fresh one).
restart() {
    runuser -u postgres -- env -u RUST_BACKTRACE -u RUST_LIB_BACKTRACE "$PG_BIN/pg_ctl" -D "$DIR/data" \
        -l "$DIR/server.log" -o "-p $PORT -k /tmp -c listen_addresses=127.0.0.1" -w start >/dev/null
}
# mapped_library DB: the simhash_ext.so files the backend of a session of DB has mapped, after a call.
mapped_library() {
    q "$1" -c "SELECT simhash('x') IS NULL" -c "SELECT string_agg(DISTINCT m[1], ' ')
        FROM regexp_matches(pg_read_file('/proc/' || pg_backend_pid() || '/maps'), '(/[^ \n]*simhash_ext\.so)', 'g') m" | tail -1
}

DB=swap
q postgres -c "CREATE DATABASE $DB"
q "$DB" -c "CREATE EXTENSION simhash_ext" -c "CREATE EXTENSION amcheck"
expect "old library: version $OLD_VERSION installed" \
    "$(q "$DB" -c "SELECT extversion FROM pg_extension WHERE extname = 'simhash_ext'")" "$OLD_VERSION"
make_corpus "$DB" corpus 3000

# The tables, each with 1,000 rows of the corpus before its attach (fingerprinted by the attach) and
# 200 after it (by the trigger), all with the old library. SimHash: sh_error (the defaults, verified),
# sh_skip (word tokens, not verified), sh_flag (max_distance 5, char trigrams, binary weights),
# sh_part (jieba, partitioned by range, its second partition attached after the attach). MinHash:
# mh_error (the defaults), mh_skip (not verified), mh_flag (threshold 0.6), mh_part (partitioned by
# list, 'skip').
t0=$(now_ms)
q "$DB" >/dev/null <<'SQL'
CREATE TABLE sh_error (id int PRIMARY KEY, body text);
CREATE TABLE sh_skip (id int PRIMARY KEY, body text);
CREATE TABLE sh_flag (id int PRIMARY KEY, body text);
CREATE TABLE mh_error (id int PRIMARY KEY, body text);
CREATE TABLE mh_skip (id int PRIMARY KEY, body text);
CREATE TABLE mh_flag (id int PRIMARY KEY, body text);
CREATE TABLE sh_part (id int, day date, body text, PRIMARY KEY (id, day)) PARTITION BY RANGE (day);
CREATE TABLE sh_part_1 PARTITION OF sh_part FOR VALUES FROM ('2026-01-01') TO ('2026-02-01');
CREATE TABLE sh_part_2 (id int, day date, body text, PRIMARY KEY (id, day));
CREATE TABLE mh_part (id int, site int, body text, PRIMARY KEY (id, site)) PARTITION BY LIST (site);
CREATE TABLE mh_part_1 PARTITION OF mh_part FOR VALUES IN (1);
CREATE TABLE mh_part_2 PARTITION OF mh_part FOR VALUES IN (2);
INSERT INTO sh_error SELECT id, body FROM corpus WHERE id <= 1000;
INSERT INTO sh_skip SELECT id, body FROM corpus WHERE id <= 1000;
INSERT INTO sh_flag SELECT id, body FROM corpus WHERE id <= 1000;
INSERT INTO mh_error SELECT id, body FROM corpus WHERE id BETWEEN 1001 AND 2000;
INSERT INTO mh_skip SELECT id, body FROM corpus WHERE id BETWEEN 1001 AND 2000;
INSERT INTO mh_flag SELECT id, body FROM corpus WHERE id BETWEEN 1001 AND 2000;
INSERT INTO sh_part SELECT id, date '2026-01-01' + (id % 31)::int, body FROM corpus WHERE id BETWEEN 2001 AND 2500;
INSERT INTO sh_part_2 SELECT id, date '2026-02-01' + (id % 28)::int, body FROM corpus WHERE id BETWEEN 2501 AND 3000;
INSERT INTO mh_part SELECT id, 1 + id % 2, body FROM corpus WHERE id BETWEEN 2001 AND 3000;
SET client_min_messages = warning;
SELECT simhash_attach('sh_error', 'body', on_duplicate => 'error');
SELECT simhash_attach('sh_skip', 'body', on_duplicate => 'skip', tokenizer => 'word', verify => false);
SELECT simhash_attach('sh_flag', 'body', on_duplicate => 'flag', max_distance => 5, tokenizer => 'char',
                      shingle => 3, weighting => 'binary', stopwords => false);
SELECT simhash_attach('sh_part', 'body', on_duplicate => 'error', tokenizer => 'jieba', verify => true);
-- ATTACH PARTITION refuses a partition with a near-duplicate of a row (as a unique index would), and
-- the corpus has some (texts that share a long sentence): of each pair, the partition's row goes.
WITH f AS (SELECT id, simhash(body, tokenizer => 'jieba') AS fp FROM sh_part_2)
DELETE FROM sh_part_2 x USING f
WHERE f.id = x.id AND (EXISTS (SELECT FROM sh_part y WHERE hamming(y.body_simhash, f.fp) <= 7)
                       OR EXISTS (SELECT FROM f g WHERE g.id < f.id AND hamming(g.fp, f.fp) <= 7));
ALTER TABLE sh_part ATTACH PARTITION sh_part_2 FOR VALUES FROM ('2026-02-01') TO ('2026-03-01');
SELECT simhash_attach('mh_error', 'body', method => 'minhash', on_duplicate => 'error');
SELECT simhash_attach('mh_skip', 'body', method => 'minhash', on_duplicate => 'skip', verify => false);
SELECT simhash_attach('mh_flag', 'body', method => 'minhash', on_duplicate => 'flag', threshold => 0.6);
SELECT simhash_attach('mh_part', 'body', method => 'minhash', on_duplicate => 'skip');
SQL
# 200 more rows each through the trigger (texts of the corpus none of them holds yet, so none is a
# copy; one that the trigger finds near another row is rejected, skipped or flagged as any write).
for t in sh_skip sh_flag mh_skip mh_flag; do
    q "$DB" -c "INSERT INTO $t SELECT id + 10000, body FROM corpus WHERE id BETWEEN 2001 AND 2200" >/dev/null
done
# insert_rows TABLE COLUMNS QUERY: inserts the rows of QUERY (its columns named as COLUMNS, a list
# "a, b") one by one, passing over those the trigger of an 'error' attachment rejects as
# near-duplicates of a row there.
insert_rows() {
    local values
    values=$(sed 's/\([a-z_]\+\)/r.\1/g' <<<"$2")
    q "$DB" -c "DO \$\$ DECLARE r record; BEGIN
                  FOR r IN $3 LOOP
                    BEGIN INSERT INTO $1 ($2) VALUES ($values); EXCEPTION WHEN unique_violation THEN NULL; END;
                  END LOOP; END \$\$" >/dev/null
}
insert_rows sh_error "id, body" "SELECT id + 10000 AS id, body FROM corpus WHERE id BETWEEN 2001 AND 2200"
insert_rows mh_error "id, body" "SELECT id + 10000 AS id, body FROM corpus WHERE id BETWEEN 2001 AND 2200"
insert_rows sh_part "id, day, body" \
    "SELECT id + 10000 AS id, date '2026-01-01' + (id % 59)::int AS day, body FROM corpus WHERE id BETWEEN 1 AND 200"
q "$DB" -c "INSERT INTO mh_part SELECT id + 10000, 1 + id % 2, body FROM corpus WHERE id BETWEEN 1 AND 200" >/dev/null
# rejected SQL: "23505 near-duplicate" when SQL fails as a near-duplicate write (not, say, on a
# primary key); else its SQLSTATE and error.
rejected() {
    local state text
    state=$(sqlstate "$DB" "$1")
    text=$(error_text "$DB" "$1")
    if [[ $text == *near-duplicate* ]]; then echo "$state near-duplicate"; else echo "$state $text"; fi
}
near_sh() { echo "(SELECT body || '！' FROM $1 WHERE id = $2)"; }
near_mh() { echo "(SELECT '【转载】' || body || '（来源：本地日报）' FROM $1 WHERE id = $2)"; }

# Near-duplicates written with the old library: flagged, skipped, rejected.
q "$DB" >/dev/null <<'SQL'
INSERT INTO sh_flag VALUES (20007, (SELECT body || '.' FROM sh_flag WHERE id = 7));
INSERT INTO mh_flag VALUES (20007, (SELECT '【转载】' || body || '（来源：本地日报）' FROM mh_flag WHERE id = 1007));
INSERT INTO sh_skip VALUES (20007, (SELECT body || '！' FROM sh_skip WHERE id = 7));
INSERT INTO mh_skip VALUES (20007, (SELECT '【转载】' || body || '（来源：本地日报）' FROM mh_skip WHERE id = 1007));
SQL
expect "old library: sh_flag and mh_flag flagged their near-duplicates" \
    "$(q "$DB" -c "SELECT (SELECT body_duplicate_of FROM sh_flag WHERE id = 20007) || ',' || (SELECT body_duplicate_of FROM mh_flag WHERE id = 20007)")" "7,1007"
expect "old library: sh_skip and mh_skip skipped theirs" \
    "$(q "$DB" -c "SELECT count(*) FROM (SELECT id FROM sh_skip UNION ALL SELECT id FROM mh_skip) s WHERE id = 20007")" 0
expect "old library: sh_error rejects a near-duplicate (23505)" \
    "$(rejected "INSERT INTO sh_error VALUES (20007, (SELECT body || '！' FROM sh_error WHERE id = 7))")" "23505 near-duplicate"
measure "old library: attach and writes of 8 tables (s)" "$(seconds_since "$t0")"

TABLES="'sh_error', 'sh_skip', 'sh_flag', 'sh_part', 'mh_error', 'mh_skip', 'mh_flag', 'mh_part'"
# settings: every attachment with the settings it records (the fields of every version since 0.11.0).
settings() {
    q "$DB" -c "SELECT concat_ws(' ', table_name, text_column, method, fingerprint_column, band_columns, max_distance,
                                 threshold, on_duplicate, flag_column, tokenizer, shingle, weighting, stopwords, fold,
                                 verify, state, trigger_name)
                FROM simhash_attachments() ORDER BY table_name::text"
}
# stored: the md5 of every row's stored fingerprint or signature, band columns and flag, per table.
stored() {
    local t
    for t in sh_error sh_skip sh_flag sh_part mh_error mh_skip mh_flag mh_part; do
        case $t in
        sh_*) cols="body_simhash::text || ',' || body_band0 || ',' || body_band1 || ',' || body_band2 || ',' || body_band3" ;;
        mh_*) cols="encode(body_minhash, 'hex') || ',' || body_lsh::text" ;;
        esac
        case $t in *_flag) cols="$cols || ',' || coalesce(body_duplicate_of::text, '-')" ;; esac
        echo "$t $(q "$DB" -c "SELECT count(*) || ' ' || md5(string_agg(id::text || ':' || coalesce($cols, 'NULL'), ';' ORDER BY id)) FROM $t")"
    done
}
settings >"$WORK/settings.before"
stored >"$WORK/stored.before"
measure "attachments written by the old library" "$(wc -l <"$WORK/settings.before")"
expect "old library: 8 attachments" "$(wc -l <"$WORK/settings.before")" 8
expect "old library: the server maps the old package's library" "$(mapped_library "$DB")" "$PRIVATE_PKGLIB/simhash_ext.so"
q "$DB" -c "CREATE TABLE texts AS SELECT 'sh_error' AS t, id, body FROM sh_error UNION ALL SELECT 'mh_error', id, body FROM mh_error" >/dev/null

# The swap: the server stopped, the new library and scripts in place of the old ones, started again.
stop_server "$DIR"
private_postgres "$NEW_PKG" "$PG_COPY"
restart
expect "new library: the server maps the new package's library" "$(mapped_library "$DB")" "$PRIVATE_PKGLIB/simhash_ext.so"
expect "new library: the copy's library is the new package's" \
    "$(cmp -s "$PRIVATE_PKGLIB/simhash_ext.so" "$NEW_PKG$SYS_LIB/simhash_ext.so" && echo same)" same

# Between the swap and the update: the old version's SQL on the new library.
expect "before the update: sh_error rejects a near-duplicate of an old row (23505)" \
    "$(rejected "INSERT INTO sh_error VALUES (30001, (SELECT body || '！' FROM sh_error WHERE id = 11))")" "23505 near-duplicate"
expect "before the update: mh_error rejects a repost of an old row (23505)" \
    "$(rejected "INSERT INTO mh_error VALUES (30001, (SELECT '【转载】' || body || '（来源：本地日报）' FROM mh_error WHERE id = 1011))")" "23505 near-duplicate"
expect "before the update: a lookup finds the old row" \
    "$(q "$DB" -c "SELECT (n.item).id FROM simhash_near_duplicates(NULL::sh_error, (SELECT body FROM sh_error WHERE id = 12)) n
                   ORDER BY n.distance, (n.item).id LIMIT 1")" 12

q "$DB" -c "ALTER EXTENSION simhash_ext UPDATE"
expect "ALTER EXTENSION simhash_ext UPDATE reaches $TARGET" \
    "$(q "$DB" -c "SELECT extversion FROM pg_extension WHERE extname = 'simhash_ext'")" "$TARGET"

settings >"$WORK/settings.after"
stored >"$WORK/stored.after"
if diff -u "$WORK/settings.before" "$WORK/settings.after" >&2; then
    pass "every attachment keeps its settings through the swap and the update"
else
    fail "the settings of the attachments changed"
fi
if diff -u "$WORK/stored.before" "$WORK/stored.after" >&2; then
    pass "no stored fingerprint, signature, band or flag changed through the swap and the update"
else
    fail "stored values changed"
fi

# Every stored value against the new library, computed from the text with the attachment's own
# settings (read back from its trigger by the new SQL), through the public functions.
q "$DB" >/dev/null <<'SQL'
CREATE FUNCTION recompute_mismatches() RETURNS TABLE (table_name regclass, rows_checked bigint, mismatches bigint)
LANGUAGE plpgsql AS $$
DECLARE
  a record;
  fp text;
  cond text;
BEGIN
  FOR a IN SELECT * FROM simhash_attachments() ORDER BY 1 LOOP
    IF a.method = 'minhash' THEN
      fp := format('minhash(%I, tokenizer => %L, shingle => %s, stopwords => %L, fold => %L)',
                   a.text_column, a.tokenizer, a.shingle, a.stopwords, a.fold);
      cond := format('%I IS DISTINCT FROM %s OR %I IS DISTINCT FROM minhash_bands(%s, 32, 4)',
                     a.fingerprint_column, fp, a.band_columns[1], fp);
    ELSE
      fp := format('simhash(%I, tokenizer => %L, shingle => %s, weighting => %L, stopwords => %L, fold => %L)',
                   a.text_column, a.tokenizer, a.shingle, a.weighting, a.stopwords, a.fold);
      cond := format('%I IS DISTINCT FROM %s', a.fingerprint_column, fp);
      FOR i IN 1 .. cardinality(a.band_columns) LOOP
        cond := cond || format(' OR %I IS DISTINCT FROM simhash_band(%s, %s, %s)', a.band_columns[i], fp, i - 1,
                               cardinality(a.band_columns));
      END LOOP;
    END IF;
    -- A row without a value: a text without features only.
    cond := cond || format(' OR (%I IS NULL AND %I IS NOT NULL)', a.fingerprint_column, a.text_column);
    table_name := a.table_name;
    EXECUTE format('SELECT count(*), count(*) FILTER (WHERE %s) FROM %s', cond, a.table_name)
      INTO rows_checked, mismatches;
    RETURN NEXT;
  END LOOP;
END
$$;
SQL
recomputed=$(q "$DB" -c "SELECT string_agg(table_name || ' ' || rows_checked || ' ' || mismatches, ', ' ORDER BY table_name::text)
                         FROM recompute_mismatches()")
measure "rows checked against the new library" "$recomputed"
expect "every stored fingerprint, signature and band equals the new library's, from the text and the settings" \
    "$(q "$DB" -c "SELECT count(*) || ' tables, ' || sum(mismatches) || ' mismatches, ' || bool_and(rows_checked >= 1000)
                   FROM recompute_mismatches()")" "8 tables, 0 mismatches, true"
# And with the options written out, not read back from the attachments.
expect "the stored values equal simhash() and minhash() with the options given to the attach" \
    "$(q "$DB" -c "SELECT (SELECT count(*) FROM sh_error WHERE body_simhash IS DISTINCT FROM simhash(body))
                   + (SELECT count(*) FROM sh_skip WHERE body_simhash IS DISTINCT FROM simhash(body, tokenizer => 'word'))
                   + (SELECT count(*) FROM sh_flag WHERE body_simhash IS DISTINCT FROM
                         simhash(body, tokenizer => 'char', shingle => 3, weighting => 'binary', stopwords => false))
                   + (SELECT count(*) FROM sh_part WHERE body_simhash IS DISTINCT FROM simhash(body, tokenizer => 'jieba'))
                   + (SELECT count(*) FROM mh_error WHERE body_minhash IS DISTINCT FROM minhash(body)
                                                     OR body_lsh IS DISTINCT FROM minhash_bands(minhash(body)))
                   + (SELECT count(*) FROM mh_part WHERE body_minhash IS DISTINCT FROM minhash(body))")" 0
expect "every band index passes bt_index_check(heapallindexed)" \
    "$(q "$DB" -c "SELECT count(*) FILTER (WHERE bt_index_check(i.indexrelid, true)::text = '') || '/' || count(*)
                   FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am m ON m.oid = c.relam
                   WHERE m.amname = 'btree' AND c.relkind = 'i' AND c.relname ~ '_band[0-9]+_'")" \
    "$(q "$DB" -c "SELECT count(*) || '/' || count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
                   JOIN pg_am m ON m.oid = c.relam WHERE m.amname = 'btree' AND c.relkind = 'i' AND c.relname ~ '_band[0-9]+_'")"

# Lookups find the rows the old library wrote: each of 100 old rows by its text is its own nearest
# (SimHash at distance 0, MinHash at similarity 1), and by its stored value.
# nearest_self TABLE ORDER: of the old rows of TABLE with an id that is a multiple of 10 (ids below
# 10000: the rows there before the attach), "found/all": how many are the first row a lookup by their
# text returns, nearest first by ORDER.
nearest_self() {
    q "$DB" -c "SELECT count(*) FILTER (WHERE (SELECT (n.item).id FROM simhash_near_duplicates(NULL::$1, s.body) n
                                               ORDER BY $2, (n.item).id LIMIT 1) = s.id) || '/' || count(*)
                FROM $1 s WHERE s.id % 10 = 0 AND s.id < 10000"
}
for t in sh_error sh_part mh_error mh_part; do
    case $t in sh_*) order="n.distance" ;; *) order="n.similarity DESC" ;; esac
    found=$(nearest_self $t "$order")
    expect "a lookup by text finds each old row of $t as its own nearest ($found)" "${found%/*}" "${found#*/}"
    ((${found#*/} >= 90)) || fail "$t: only ${found#*/} rows looked up"
done
expect "lookups by the stored fingerprint and signature find the row that holds it" \
    "$(q "$DB" -c "SELECT
        (SELECT count(*) FROM sh_flag s WHERE s.id % 10 = 0 AND s.id <= 1000
           AND s.id IN (SELECT (n.item).id FROM simhash_near_duplicates(NULL::sh_flag, s.body_simhash, 0) n)) || ',' ||
        (SELECT count(*) FROM mh_flag s WHERE s.id % 10 = 0 AND s.id <= 2000
           AND s.id IN (SELECT (n.item).id FROM simhash_near_duplicates(NULL::mh_flag, s.body_minhash) n))")" "100,100"
q "$DB" -c "ANALYZE sh_error"
sql=$(q "$DB" -c "SELECT simhash_near_duplicates_sql('sh_error', (SELECT body_simhash FROM sh_error WHERE id = 1))")
expect_match "the SQL form of a lookup goes through the band indexes" "$(q "$DB" -c "EXPLAIN $sql")" \
    'Scan (using|on) sh_error_body_band[0-9]_'
expect "the SQL form of a lookup finds the old row" "$(q "$DB" -c "SELECT count(*) FROM ($sql) s WHERE (s.item).id = 1")" 1

# The triggers, after the update, on near-duplicates of old rows.
expect "sh_error rejects a near-duplicate of an old row (23505)" \
    "$(rejected "INSERT INTO sh_error VALUES (40001, $(near_sh sh_error 21))")" "23505 near-duplicate"
expect "sh_error rejects an UPDATE of an old row to a near-duplicate of another (23505)" \
    "$(rejected "UPDATE sh_error SET body = $(near_sh sh_error 22) WHERE id = 23")" "23505 near-duplicate"
expect "sh_part rejects a near-duplicate of an old row of its first partition in its second (23505)" \
    "$(rejected "INSERT INTO sh_part VALUES (40001, '2026-02-10', (SELECT body || '！' FROM sh_part WHERE id = 2021))")" "23505 near-duplicate"
expect "sh_part rejects a near-duplicate of a row of the partition attached later (23505)" \
    "$(rejected "INSERT INTO sh_part VALUES (40002, '2026-01-10', (SELECT body || '！' FROM sh_part_2 ORDER BY id LIMIT 1))")" "23505 near-duplicate"
expect "mh_error rejects a repost of an old row (23505)" \
    "$(rejected "INSERT INTO mh_error VALUES (40001, $(near_mh mh_error 1021))")" "23505 near-duplicate"
q "$DB" >/dev/null <<SQL
INSERT INTO sh_skip VALUES (40001, $(near_sh sh_skip 21));
INSERT INTO mh_skip VALUES (40001, $(near_mh mh_skip 1021));
INSERT INTO mh_part VALUES (40001, 2, (SELECT '【转载】' || body || '（来源：本地日报）' FROM mh_part WHERE id = 2021));
INSERT INTO sh_flag VALUES (40001, (SELECT body || '.' FROM sh_flag WHERE id = 21));
INSERT INTO mh_flag VALUES (40001, $(near_mh mh_flag 1021));
SQL
expect "sh_skip, mh_skip and mh_part (across partitions) skip a near-duplicate of an old row" \
    "$(q "$DB" -c "SELECT (SELECT count(*) FROM sh_skip WHERE id = 40001) + (SELECT count(*) FROM mh_skip WHERE id = 40001)
                   + (SELECT count(*) FROM mh_part WHERE id = 40001)")" 0
expect "sh_flag and mh_flag flag a near-duplicate of an old row" \
    "$(q "$DB" -c "SELECT (SELECT body_duplicate_of FROM sh_flag WHERE id = 40001) || ',' || (SELECT body_duplicate_of FROM mh_flag WHERE id = 40001)")" \
    "21,1021"
new_text="'Ein völlig neuer Satz, den keine Zeile enthält. 一段全新的文字，和表里的任何一行都不一样。'"
q "$DB" -c "INSERT INTO sh_error VALUES (40002, $new_text)" -c "INSERT INTO mh_error VALUES (40002, $new_text)" \
    -c "INSERT INTO sh_part VALUES (40003, '2026-01-20', $new_text)" >/dev/null
expect "a new text is accepted and gets the new library's values" \
    "$(q "$DB" -c "SELECT (SELECT body_simhash = simhash(body) AND body_band1 = simhash_band(body_simhash, 1) FROM sh_error WHERE id = 40002)
                   AND (SELECT body_minhash = minhash(body) AND body_lsh = minhash_bands(body_minhash) FROM mh_error WHERE id = 40002)
                   AND (SELECT body_simhash = simhash(body, tokenizer => 'jieba') FROM sh_part WHERE id = 40003)")" t

# Dedup over the old rows.
expect "simhash_pairs of sh_flag (unverified) equals a brute force over the stored fingerprints" \
    "$(q "$DB" -c "WITH p AS (SELECT least(key_a::int, key_b::int) a, greatest(key_a::int, key_b::int) b
                             FROM simhash_pairs('sh_flag', verify => false)),
                        b AS (SELECT x.id a, y.id b FROM sh_flag x JOIN sh_flag y ON x.id < y.id
                              AND hamming(x.body_simhash, y.body_simhash) <= 5)
                   SELECT (SELECT count(*) FROM p) > 0, (SELECT count(*) FROM (TABLE p EXCEPT TABLE b) d)
                          + (SELECT count(*) FROM (TABLE b EXCEPT TABLE p) d)")" "t|0"
expect "simhash_pairs of mh_flag finds the pair the old library flagged, each pair at its threshold" \
    "$(q "$DB" -c "SELECT bool_or(key_a = '1007' AND key_b = '20007' OR key_a = '20007' AND key_b = '1007'),
                          bool_and(similarity >= 0.6) FROM simhash_pairs('mh_flag')")" "t|t"
expect "simhash_clusters of sh_part and mh_part give every row a cluster" \
    "$(q "$DB" -c "SELECT (SELECT count(*) FROM simhash_clusters('sh_part')) = (SELECT count(*) FROM sh_part)
                   AND (SELECT count(*) FROM simhash_clusters('mh_part')) = (SELECT count(*) FROM mh_part)")" t
expect "simhash_compare judges an old row against its near-duplicate" \
    "$(q "$DB" -c "SELECT string_agg(near_duplicate::text, ',' ORDER BY t) FROM (
                     SELECT 1 t, c.near_duplicate FROM sh_error s, simhash_compare('sh_error', s.body || '！', s.body) c WHERE s.id = 31
                     UNION ALL
                     SELECT 2, c.near_duplicate FROM mh_error s, simhash_compare('mh_error', '【转载】' || s.body, s.body) c WHERE s.id = 1031) x")" \
    "true,true"

# Detach, and attach again with the same settings: the tables as before the attach, then values equal
# to those the old library stored, and triggers that act.
q "$DB" -c "CREATE TABLE kept AS SELECT 'sh_flag' AS t, id, body_simhash::text AS v FROM sh_flag
            UNION ALL SELECT 'mh_skip', id, encode(body_minhash, 'hex') FROM mh_skip
            UNION ALL SELECT 'sh_part', id, body_simhash::text FROM sh_part" >/dev/null
q "$DB" -c "SELECT simhash_detach('sh_flag'), simhash_detach('mh_skip'), simhash_detach('sh_part')" >/dev/null
expect "simhash_detach leaves only the tables' own columns, no trigger and no band index" \
    "$(q "$DB" -c "SELECT (SELECT string_agg(attrelid::regclass || '.' || attname, ',' ORDER BY attrelid::regclass::text, attnum)
                           FROM pg_attribute WHERE attrelid IN ('sh_flag'::regclass, 'mh_skip'::regclass, 'sh_part'::regclass,
                                                                'sh_part_2'::regclass)
                             AND attnum > 0 AND NOT attisdropped) || ' ' ||
                          (SELECT count(*) FROM pg_trigger WHERE NOT tgisinternal AND tgrelid IN ('sh_flag'::regclass,
                             'mh_skip'::regclass, 'sh_part'::regclass, 'sh_part_1'::regclass, 'sh_part_2'::regclass)) || ' ' ||
                          (SELECT count(*) FROM pg_index WHERE indrelid IN ('sh_flag'::regclass, 'mh_skip'::regclass,
                             'sh_part'::regclass, 'sh_part_2'::regclass) AND NOT indisprimary) || ' ' ||
                          (SELECT count(*) FROM simhash_attachments() WHERE table_name::text IN ($TABLES))")" \
    "mh_skip.id,mh_skip.body,sh_flag.id,sh_flag.body,sh_part.id,sh_part.day,sh_part.body,sh_part_2.id,sh_part_2.day,sh_part_2.body 0 0 5"
q "$DB" >/dev/null <<'SQL'
SET client_min_messages = warning;
SELECT simhash_attach('sh_flag', 'body', on_duplicate => 'flag', max_distance => 5, tokenizer => 'char',
                      shingle => 3, weighting => 'binary', stopwords => false);
SELECT simhash_attach('mh_skip', 'body', method => 'minhash', on_duplicate => 'skip', verify => false);
SELECT simhash_attach('sh_part', 'body', on_duplicate => 'error', tokenizer => 'jieba', verify => true);
SQL
expect "attached again: every fingerprint and signature equals what the old library stored" \
    "$(q "$DB" -c "SELECT count(*) FROM kept k
                   LEFT JOIN sh_flag f ON k.t = 'sh_flag' AND f.id = k.id
                   LEFT JOIN mh_skip m ON k.t = 'mh_skip' AND m.id = k.id
                   LEFT JOIN sh_part p ON k.t = 'sh_part' AND p.id = k.id
                   WHERE k.v IS DISTINCT FROM coalesce(f.body_simhash::text, encode(m.body_minhash, 'hex'), p.body_simhash::text)")" 0
expect "attached again: the settings are those the old library recorded" \
    "$(settings | grep -E '^(sh_flag|mh_skip|sh_part) ')" "$(grep -E '^(sh_flag|mh_skip|sh_part) ' "$WORK/settings.before")"
expect "attached again: sh_part rejects, mh_skip skips, sh_flag flags a near-duplicate" \
    "$(rejected "INSERT INTO sh_part VALUES (50001, '2026-02-11', (SELECT body || '！' FROM sh_part WHERE id = 2031))")|$(
        q "$DB" -c "INSERT INTO mh_skip VALUES (50001, $(near_mh mh_skip 1031)) RETURNING id" | wc -l)|$(
        q "$DB" -c "INSERT INTO sh_flag VALUES (50001, (SELECT body || '.' FROM sh_flag WHERE id = 31)) RETURNING body_duplicate_of")" \
    "23505 near-duplicate|0|31"

measure "total (s)" "$(seconds_since "$t_start")"
