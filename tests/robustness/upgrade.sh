#!/usr/bin/env bash
# Upgrades (docs/ARCHITECTURE.md §12.1): for every version X before the control file's default version
# that sql/ can install (its base install script's version, and each update script's target, the oldest
# first), install version X from the base script and the update scripts up to X, attach tables with
# data, ALTER EXTENSION simhash_ext UPDATE to the default version, and check that stored fingerprints,
# band columns, band indexes, trigger and lookups agree with the new version, and that the updated
# extension's objects (functions with their definitions, types, every member) are those of a fresh
# install of the new version. The fresh install's functions name no file in their bodies.
#
# SIMHASH_UPGRADE_PACKAGE=DIR (`cargo pgrx package --out-dir DIR` output) runs a private copy of the
# PostgreSQL in use that loads that build (scripts/common.sh private_postgres) instead of the
# installed extension; SIMHASH_UPGRADE_PORT another port than 54343.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PORT=${SIMHASH_UPGRADE_PORT:-54343}
DIR=/tmp/simhash-robust-upgrade-$PORT
EXTDIR=$("$PG_CONFIG" --sharedir)/extension
if [ -n "${SIMHASH_UPGRADE_PACKAGE:-}" ]; then
    # psql stays the one of $PG_CONFIG (lib.sh set $PSQL): the private copy has the server only.
    private_postgres "$SIMHASH_UPGRADE_PACKAGE" "$DIR-pg"
    EXTDIR=$DIR-pg$EXTDIR
fi
TARGET=$(sed -n "s/^default_version *= *'\(.*\)'/\1/p" "$EXTDIR/simhash_ext.control")
[ -n "$TARGET" ] || fail "no default_version in $EXTDIR/simhash_ext.control"
# The base install script beside the update scripts, and no install script of another old version
# that CREATE EXTENSION ... VERSION would take instead of the update scripts.
install_base_script "$EXTDIR"
BASE=$(base_version)
mapfile -t VERSIONS < <({
    echo "$BASE"
    (cd "$ROOT/sql" && ls simhash_ext--*--*.sql) | sed 's/^simhash_ext--.*--\(.*\)\.sql$/\1/'
} | sort -uV | awk -v t="$TARGET" '$0 == t { exit } { print }')
((${#VERSIONS[@]})) || fail "no version before $TARGET in sql/"
[ "${VERSIONS[0]}" == "$BASE" ] || fail "sql/ has an update script to ${VERSIONS[0]}, older than its base script $BASE"
measure "versions from the base script $BASE and the update scripts (oldest first)" "${VERSIONS[*]}"
measure "target (default_version)" "$TARGET"

cleanup() {
    local rc=$?
    stop_server "$DIR"
    [ $rc -ne 0 ] || rm -rf "$DIR" "$DIR-pg"
}
trap cleanup EXIT

start_server "$DIR" "$PORT"
q postgres -c "CREATE DATABASE fresh" -c "CREATE DATABASE template_corpus"
q fresh -c "CREATE EXTENSION simhash_ext" -c "CREATE EXTENSION amcheck"
make_corpus template_corpus articles 20000

# No function of the extension cites a file of the repository in its body: such a path says nothing
# to the database's user and goes stale when the file moves (pgrx's C functions name their symbol).
expect "fresh install of $TARGET: no function body names a file" \
    "$(q fresh -c "SELECT coalesce(string_agg(p.oid::regprocedure::text, ', ' ORDER BY p.oid::regprocedure::text), 'none')
                   FROM pg_proc p JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
                   JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'simhash_ext'
                   WHERE p.prosrc ~ '(^|[^[:alnum:]_])(src|sql|docs|tests|bench|core|scripts|examples)/[[:alnum:]_./-]+|[[:alnum:]_]\\.(rs|md|sql|out|sh|py)([^[:alnum:]_]|\$)'")" none

# The objects of the extension, as text: members, function definitions, types.
objects() {
    q "$1" <<'SQL'
SELECT 'member ' || pg_describe_object(d.classid, d.objid, d.objsubid)
FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'simhash_ext'
WHERE d.deptype = 'e' ORDER BY 1;
SELECT 'function ' || p.oid::regprocedure::text || ' returns ' || pg_get_function_result(p.oid)
       || ' volatility ' || p.provolatile::text || ' strict ' || p.proisstrict || ' parallel ' || p.proparallel::text
       || ' cost ' || p.procost || ' rows ' || p.prorows || ' security ' || p.prosecdef
       || ' comment ' || coalesce(obj_description(p.oid, 'pg_proc'), '-') || E'\n'
       || CASE WHEN p.prokind IN ('f', 'p') THEN pg_get_functiondef(p.oid) ELSE p.prokind::text END
FROM pg_proc p JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'simhash_ext'
ORDER BY p.oid::regprocedure::text;
SELECT 'type ' || t.typname || ' ' || t.typtype::text || ' ' || coalesce(obj_description(t.oid, 'pg_type'), '-') || ' ('
       || coalesce((SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod), ', ' ORDER BY a.attnum)
                    FROM pg_attribute a WHERE a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped), '')
       || ')'
FROM pg_type t JOIN pg_depend d ON d.classid = 'pg_type'::regclass AND d.objid = t.oid AND d.deptype = 'e'
JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'simhash_ext'
ORDER BY 1;
SQL
}

near_dup_of_row1="(SELECT body || '！' FROM articles WHERE id = 1)"

for version in "${VERSIONS[@]}"; do
    db=up_${version//./_}
    q postgres -c "CREATE DATABASE $db TEMPLATE template_corpus"
    q "$db" -c "CREATE EXTENSION simhash_ext VERSION '$version'" -c "CREATE EXTENSION amcheck"
    expect "$db: installed version $version" "$(q "$db" -c "SELECT extversion FROM pg_extension WHERE extname = 'simhash_ext'")" "$version"
    t0=$(now_ms)
    q "$db" >/dev/null <<'SQL'
SELECT simhash_attach('articles', 'body', on_duplicate => 'error',
                      tokenizer => 'jieba', shingle => 1, weighting => 'tf', stopwords => true);
CREATE TABLE notes (code text PRIMARY KEY, note text);
INSERT INTO notes SELECT 'n' || id, title || ': ' || body FROM articles WHERE id <= 3000;
SELECT simhash_attach('notes', 'note', max_distance => 5, on_duplicate => 'flag',
                      tokenizer => 'char', shingle => 3, weighting => 'binary', stopwords => false);
INSERT INTO notes VALUES ('dup', (SELECT note FROM notes WHERE code = 'n7') || '.');
SQL
    # max_distance 5 gave 6 narrow bands before 0.3.0, four 16-bit bands since.
    nbands=$(q "$db" -c "SELECT count(*) FROM pg_attribute WHERE attrelid = 'notes'::regclass AND attname ~ '^note_band[0-9]+$'")
    note_bands="ARRAY[$(seq -s, 0 $((nbands - 1)) | sed 's/\([0-9]*\)/note_band\1/g; s/,/, /g')]"
    q "$db" >/dev/null <<SQL
CREATE TABLE before AS
  SELECT 'articles' AS t, id::text AS k, body_simhash AS fp,
         ARRAY[body_band0, body_band1, body_band2, body_band3] AS bands FROM articles
  UNION ALL
  SELECT 'notes', code, note_simhash, $note_bands FROM notes;
SQL
    measure "$db: attach 20,000 + 3,000 rows with version $version (s)" "$(awk -v ms=$(($(now_ms) - t0)) 'BEGIN { printf "%.1f", ms / 1000 }')"

    # Between installing the new library and the update, the old SQL works with it: dedup, and (0.3.0
    # on) the event trigger, which renames an attached column through the old version's helper.
    if [ "$(q "$db" -c "SELECT to_regproc('simhash_pairs') IS NOT NULL")" = t ]; then
        expect "$db: simhash_pairs of version $version answers with the new library" \
            "$(q "$db" -c "SELECT count(*) > 0 FROM simhash_pairs('notes')")" t
        expect "$db: simhash_clusters of version $version answers with the new library" \
            "$(q "$db" -c "SELECT count(*) = (SELECT count(*) FROM notes) AND max(cluster_size) > 1 FROM simhash_clusters('notes')")" t
    fi
    # Attaching with the old version's SQL works too, and the trigger it makes rejects.
    q "$db" >/dev/null <<'SQL'
CREATE TABLE late (id int PRIMARY KEY, body text);
INSERT INTO late SELECT id, body FROM articles WHERE id <= 200;
SELECT simhash_attach('late', 'body', on_duplicate => 'error');
SQL
    expect "$db: an attach with version $version's SQL and the new library rejects a near-duplicate" \
        "$(sqlstate "$db" "INSERT INTO late VALUES (1000, (SELECT body || '！' FROM late WHERE id = 1))")" 23505
    expect "$db: simhash_attachments() of version $version lists it" \
        "$(q "$db" -c "SELECT on_duplicate FROM simhash_attachments() WHERE table_name = 'late'::regclass")" error
    # 0.11.0 on: simhash_set_verify re-encodes an attachment's trigger arguments, and detach takes it off.
    if [ "$(q "$db" -c "SELECT to_regproc('simhash_set_verify') IS NOT NULL")" = t ]; then
        q "$db" >/dev/null <<'SQL'
CREATE TABLE reverified (id int PRIMARY KEY, body text);
SELECT simhash_attach('reverified', 'body');
SELECT simhash_set_verify('reverified', true);
SQL
        expect "$db: simhash_set_verify of version $version verifies with the new library" \
            "$(q "$db" -c "SELECT verify FROM simhash_attachments() WHERE table_name = 'reverified'::regclass")" t
        q "$db" -c "SELECT simhash_detach('reverified')" -c "DROP TABLE reverified" >/dev/null
    fi
    has_event_trigger=$(q "$db" -c "SELECT count(*) FROM pg_event_trigger WHERE evtname = 'simhash_ddl_command_start'")
    if [ "$has_event_trigger" = 1 ]; then
        q "$db" >/dev/null <<'SQL'
CREATE TABLE renamed (id int PRIMARY KEY, body text);
SELECT simhash_attach('renamed', 'body');
ALTER TABLE renamed RENAME COLUMN body TO content;
-- A derived column dropped by hand (possible under 0.3.0): detach must clean up after the update.
CREATE TABLE broken (id int PRIMARY KEY, body text);
SELECT simhash_attach('broken', 'body');
ALTER EVENT TRIGGER simhash_ddl_command_start DISABLE;
ALTER TABLE broken DROP COLUMN body_band1;
ALTER EVENT TRIGGER simhash_ddl_command_start ENABLE;
SQL
        expect "$db: RENAME COLUMN follows the attachment with version $version's SQL and the new library" \
            "$(q "$db" -c "SELECT text_column || ',' || fingerprint_column FROM simhash_attachments() WHERE table_name = 'renamed'::regclass")" \
            "content,content_simhash"
    fi

    q "$db" -c "ALTER EXTENSION simhash_ext UPDATE"
    expect "$db: ALTER EXTENSION UPDATE reaches $TARGET" \
        "$(q "$db" -c "SELECT extversion FROM pg_extension WHERE extname = 'simhash_ext'")" "$TARGET"

    # Stored fingerprints and bands equal what the new version computes.
    expect "$db: stored fingerprints equal the new simhash() (articles)" \
        "$(q "$db" -c "SELECT count(*) FROM articles WHERE body_simhash IS DISTINCT FROM simhash(body, 'jieba', 1, 'tf', true)")" 0
    expect "$db: stored fingerprints equal the new simhash() (notes, char/3/binary)" \
        "$(q "$db" -c "SELECT count(*) FROM notes
                       WHERE note_simhash IS DISTINCT FROM simhash(note, 'char', 3, 'binary', false)")" 0
    expect "$db: stored band columns equal the new simhash_band()" \
        "$(q "$db" -c "SELECT count(*) FROM articles a, generate_series(0, 3) i
                       WHERE (ARRAY[body_band0, body_band1, body_band2, body_band3])[i + 1]
                             IS DISTINCT FROM simhash_band(body_simhash, i, 4)")" 0
    expect "$db: $nbands band columns (max_distance 5) equal the new simhash_bands()" \
        "$(q "$db" -c "SELECT count(*) FROM notes WHERE $note_bands
                       IS DISTINCT FROM simhash_bands(note_simhash, $nbands)")" 0
    expect "$db: nothing changed since before the update" \
        "$(q "$db" -c "SELECT count(*) FROM before b LEFT JOIN articles a ON b.t = 'articles' AND a.id::text = b.k
                       LEFT JOIN notes n ON b.t = 'notes' AND n.code = b.k
                       WHERE b.fp IS DISTINCT FROM coalesce(a.body_simhash, n.note_simhash)")" 0
    expect "$db: every band index passes bt_index_check(heapallindexed)" \
        "$(q "$db" -c "SELECT sum(length(bt_index_check(i.indexrelid, true)::text) + 1) || '/' || count(*)
                       FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
                       WHERE i.indrelid IN ('articles'::regclass, 'notes'::regclass) AND c.relname ~ '_band[0-9]+_(.*_)?idx$'")" $((4 + nbands))/$((4 + nbands))
    expect "$db: the flag trigger of the old version flagged the near-duplicate" \
        "$(q "$db" -c "SELECT note_duplicate_of FROM notes WHERE code = 'dup'")" n7

    # The update made the check trigger (AFTER INSERT OR UPDATE) of every attachment that checks.
    expect "$db: every checking attachment has its check trigger after the update" \
        "$(q "$db" -c "SELECT count(*) FILTER (WHERE EXISTS (SELECT FROM pg_trigger c WHERE c.tgrelid = t.tgrelid
                                     AND c.tgfoid = 'simhash_check_trigger'::regproc AND c.tgtype & 20 = 20)) || '/' || count(*)
                       FROM pg_trigger t JOIN pg_class r ON r.oid = t.tgrelid
                       WHERE t.tgfoid = 'simhash_trigger'::regproc AND r.relname IN ('articles', 'notes', 'late')")" 3/3
    # The trigger and the lookups work with the new version.
    expect "$db: the trigger rejects a near-duplicate (23505)" \
        "$(sqlstate "$db" "INSERT INTO articles (title, body) VALUES ('dup', $near_dup_of_row1)")" 23505
    q "$db" -c "INSERT INTO articles (title, body) VALUES ('new', '一段全新的文字，和表里的任何一行都不一样。A brand new sentence.')"
    expect "$db: a new row gets the new version's fingerprint" \
        "$(q "$db" -c "SELECT body_simhash = simhash(body, 'jieba', 1, 'tf', true) AND body_band2 = simhash_band(body_simhash, 2)
                       FROM articles WHERE title = 'new'")" t
    expect "$db: the flag trigger still flags" \
        "$(q "$db" -c "INSERT INTO notes VALUES ('dup2', (SELECT note FROM notes WHERE code = 'n9') || '!') RETURNING note_duplicate_of")" n9
    expect "$db: lookup by text finds row 1" \
        "$(q "$db" -c "SELECT (array_agg((n.item).id ORDER BY n.distance, (n.item).id))[1]
                       FROM simhash_near_duplicates(NULL::articles, (SELECT body FROM articles WHERE id = 1)) n")" 1
    q "$db" -c "ANALYZE articles"
    sql=$(q "$db" -c "SELECT simhash_near_duplicates_sql('articles', (SELECT body_simhash FROM articles WHERE id = 1))")
    plan=$(q "$db" -c "EXPLAIN $sql")
    expect_match "$db: the lookup uses the band indexes" "$plan" 'Scan (using|on) articles_body_band0_(body_simhash_)?idx'
    # The notes table, attached with max_distance 5: before 0.3.0 with 6 narrow bands and indexes
    # without the fingerprint. The new probe-plan lookup is exact on it at every distance.
    expect "$db: lookups on the $nbands-band table equal a scan at k = 0..8 (rows found, rows missed)" \
        "$(q "$db" -c "WITH q AS (SELECT code, note_simhash # (1::bigint << (length(code) * 5 % 64)) AS fp FROM notes
                                  WHERE note_simhash IS NOT NULL AND code LIKE 'n1%'),
                       found AS (SELECT k, q.code, (n.item).code AS hit, n.distance
                                 FROM generate_series(0, 8) k, q, simhash_near_duplicates(NULL::notes, q.fp, k) n),
                       brute AS (SELECT k, q.code, n.code AS hit, hamming(n.note_simhash, q.fp) AS distance
                                 FROM generate_series(0, 8) k JOIN q ON true JOIN notes n ON hamming(n.note_simhash, q.fp) <= k)
                       SELECT (SELECT count(*) FROM found) > 1000,
                              (SELECT count(*) FROM (TABLE found EXCEPT TABLE brute) x) + (SELECT count(*) FROM (TABLE brute EXCEPT TABLE found) x)")" "t|0"

    # The new method on the updated extension: an attach, its trigger, a lookup and dedup.
    q "$db" >/dev/null <<'SQL'
CREATE TABLE reposts (id int PRIMARY KEY, body text);
INSERT INTO reposts SELECT id, body FROM articles WHERE id <= 300;
SELECT simhash_attach('reposts', 'body', method => 'minhash', on_duplicate => 'error');
SQL
    expect "$db: after the update, a MinHash attach rejects a repost with a header and footer" \
        "$(sqlstate "$db" "INSERT INTO reposts VALUES (1000, (SELECT '【转载】' || body || '（来源：本地日报）' FROM reposts WHERE id = 1))")" 23505
    expect "$db: after the update, a MinHash lookup and simhash_pairs answer" \
        "$(q "$db" -c "SELECT (SELECT (n.item).id FROM simhash_near_duplicates(NULL::reposts, (SELECT body FROM reposts WHERE id = 7)) n
                              ORDER BY n.similarity DESC LIMIT 1),
                             (SELECT count(*) >= 0 FROM simhash_pairs('reposts'))")" "7|t"
    q "$db" -c "SELECT simhash_detach('late'), simhash_detach('reposts')" >/dev/null

    if [ "$has_event_trigger" = 1 ]; then
        q "$db" -c "SELECT simhash_detach('broken'), simhash_detach('renamed')" >/dev/null
        expect "$db: after the update, detach removes what is left of an attachment with a dropped column" \
            "$(q "$db" -c "SELECT string_agg(attname, ',' ORDER BY attrelid::regclass::text, attnum) FROM pg_attribute
                           WHERE attrelid IN ('broken'::regclass, 'renamed'::regclass) AND attnum > 0 AND NOT attisdropped")" \
            "id,body,id,content"
    fi

    # The updated extension has the objects of a fresh install.
    objects fresh >"$DIR/fresh.objects"
    objects "$db" >"$DIR/$db.objects"
    measure "$db: extension objects compared" "$(grep -c '^member ' "$DIR/fresh.objects")"
    if diff -u "$DIR/fresh.objects" "$DIR/$db.objects" >"$DIR/$db.diff"; then
        pass "$db: functions, definitions, types and members equal a fresh install of $TARGET"
    else
        head -60 "$DIR/$db.diff" >&2
        fail "$db: the updated extension differs from a fresh install of $TARGET (see $DIR/$db.diff)"
    fi
done
