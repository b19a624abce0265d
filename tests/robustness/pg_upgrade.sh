#!/usr/bin/env bash
# pg_upgrade across majors (issue 23): a PostgreSQL OLD cluster with attached tables (a plain table
# that rejects near-duplicates, a partitioned one that flags them, 'jieba' options on a third) is
# upgraded with PostgreSQL NEW's pg_upgrade, and on NEW every stored fingerprint, band column and
# band index, the lookups, simhash_pairs() and the triggers must give what they gave on OLD.
#
#   bash tests/robustness/pg_upgrade.sh OLD NEW     (default 15 18; as root)
#
# The extension is installed into both PostgreSQL installs (release build) if it is not there.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

OLD=${1:-15}
NEW=${2:-18}
DIR=/tmp/simhash-robust-pg-upgrade
PORT=54361
NEW_PORT=54362

use_pg "$NEW"
NEW_BIN=$PG_BIN
[ -f "$("$PG_CONFIG" --pkglibdir)/simhash_ext.so" ] || install_extension --release >&2
# The old cluster runs on the pinned wheel of its major, also for 15: Debian's 15.20 records an
# attribute option pg_attver on every column, which PostgreSQL 18.6 refuses when pg_upgrade
# restores the schema ('unrecognized parameter "pg_attver"'), with or without this extension.
# The extension's files for it are those of Debian's 15 when built there (same major, same ABI).
use_pg "$OLD"
if [ "$OLD" = 15 ] && [ -f "$("$PG_CONFIG" --pkglibdir)/simhash_ext.so" ]; then
    from_lib=$("$PG_CONFIG" --pkglibdir) from_share=$("$PG_CONFIG" --sharedir)
    select_pg "$(ensure_pg_wheel "$OLD")"
    cp "$from_lib/simhash_ext.so" "$("$PG_CONFIG" --pkglibdir)/"
    cp "$from_share"/extension/simhash_ext* "$("$PG_CONFIG" --sharedir)/extension/"
else
    select_pg "$(ensure_pg_wheel "$OLD")"
    [ -f "$("$PG_CONFIG" --pkglibdir)/simhash_ext.so" ] || install_extension --release >&2
fi
OLD_BIN=$PG_BIN
PSQL=$OLD_BIN/psql

cleanup() {
    local rc=$?
    PG_BIN=$OLD_BIN stop_server "$DIR/old"
    PG_BIN=$NEW_BIN stop_server "$DIR/new"
    [ $rc -ne 0 ] || rm -rf "$DIR"
}
trap cleanup EXIT
rm -rf "$DIR"
mkdir -p "$DIR"
chmod 777 "$DIR"

start_server "$DIR/old" "$PORT"
measure "old server" "$(q postgres -c 'SHOW server_version')"
q postgres -c "CREATE EXTENSION simhash_ext" >/dev/null
make_corpus postgres plain 3000
q postgres >/dev/null <<'SQL'
SELECT simhash_attach('plain', 'body', on_duplicate => 'error');
CREATE TABLE parted (id bigint, body text, PRIMARY KEY (id)) PARTITION BY RANGE (id);
CREATE TABLE parted_low PARTITION OF parted FOR VALUES FROM (0) TO (2000);
CREATE TABLE parted_high PARTITION OF parted FOR VALUES FROM (2000) TO (100000);
INSERT INTO parted SELECT id, body FROM plain;
SELECT simhash_attach('parted', 'body', on_duplicate => 'flag', max_distance => 5);
CREATE TABLE zh (id int PRIMARY KEY, body text);
INSERT INTO zh SELECT id, body FROM plain WHERE body ~ '[一-龥]';
SELECT simhash_attach('zh', 'body', tokenizer => 'jieba', weighting => 'tfidf', max_distance => 9);
SQL

# snapshot FILE: what must survive the upgrade, as text.
snapshot() {
    q postgres >"$1" <<'SQL'
SELECT 'ext', extversion FROM pg_extension WHERE extname = 'simhash_ext';
SELECT 'plain', id, body_simhash, body_band0, body_band1, body_band2, body_band3 FROM plain ORDER BY id;
SELECT 'parted', id, body_simhash, body_duplicate_of FROM parted ORDER BY id;
SELECT 'zh', id, body_simhash FROM zh ORDER BY id;
SELECT 'lookup', p.id, (n.item).id, n.distance
  FROM plain p, simhash_near_duplicates(NULL::plain, p.body_simhash, 12) n
  WHERE p.id % 97 = 0 ORDER BY 2, 3;
SELECT 'pairs', * FROM simhash_pairs('plain', 10) ORDER BY 2, 3;
SELECT 'clusters', count(*), count(DISTINCT representative), max(cluster_size) FROM simhash_clusters('parted', 8);
SELECT 'indexes', indexrelid::regclass, indisvalid FROM pg_index
  WHERE indrelid IN ('plain'::regclass, 'parted_low'::regclass, 'zh'::regclass) ORDER BY indexrelid::regclass::text;
SQL
}
snapshot "$DIR/before.txt"
measure "rows in the snapshot" "$(wc -l <"$DIR/before.txt")"
PG_BIN=$OLD_BIN stop_server "$DIR/old"

log "pg_upgrade from PostgreSQL $OLD to $NEW"
install -d -o postgres -g postgres "$DIR/new"
# The new cluster must match the old one's settings: PostgreSQL 18 initializes with data checksums
# unless told otherwise, and the old cluster has none.
checksums=()
[[ $("$NEW_BIN/initdb" --help) == *--no-data-checksums* ]] && checksums=(--no-data-checksums)
runuser -u postgres -- "$NEW_BIN/initdb" -D "$DIR/new/data" -A trust -E UTF8 --locale=C.UTF-8 \
    "${checksums[@]}" >"$DIR/new/initdb.log"
if ! (cd "$DIR" && runuser -u postgres -- env -u RUST_BACKTRACE "$NEW_BIN/pg_upgrade" \
    -b "$OLD_BIN" -B "$NEW_BIN" -d "$DIR/old/data" -D "$DIR/new/data" -p "$PORT" -P "$NEW_PORT" \
    >"$DIR/pg_upgrade.log" 2>&1); then
    tail -30 "$DIR/pg_upgrade.log" >&2
    fail "pg_upgrade failed (log: $DIR/pg_upgrade.log)"
fi
pass "pg_upgrade from $OLD to $NEW"

# The new cluster, started as start_server would but keeping its data.
runuser -u postgres -- env -u RUST_BACKTRACE -u RUST_LIB_BACKTRACE "$NEW_BIN/pg_ctl" -D "$DIR/new/data" \
    -l "$DIR/new/server.log" -o "-p $NEW_PORT -k /tmp -c listen_addresses=127.0.0.1" -w start >/dev/null
PORT=$NEW_PORT
PSQL=$NEW_BIN/psql
measure "new server" "$(q postgres -c 'SHOW server_version')"
snapshot "$DIR/after.txt"
if diff -u "$DIR/before.txt" "$DIR/after.txt" >"$DIR/snapshot.diff"; then
    pass "fingerprints, bands, flags, lookups, pairs, clusters and index validity are those of $OLD"
else
    head -40 "$DIR/snapshot.diff" >&2
    fail "the upgraded database differs from the original"
fi

expect "every stored fingerprint equals simhash() computed by $NEW" \
    "$(q postgres -c "SELECT count(*) FROM plain WHERE body_simhash IS DISTINCT FROM simhash(body)")" 0
expect "every 'jieba' fingerprint equals simhash() computed by $NEW" \
    "$(q postgres -c "SELECT count(*) FROM zh WHERE body_simhash IS DISTINCT FROM simhash(body, tokenizer => 'jieba', weighting => 'tfidf')")" 0
q postgres -c "CREATE EXTENSION amcheck" >/dev/null
band_indexes="FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname LIKE '%band%' AND c.relkind = 'i'"
expect "the band indexes pass amcheck's bt_index_check (with heapallindexed)" \
    "$(q postgres -c "SELECT count(*) FROM (SELECT bt_index_check(i.indexrelid, true) $band_indexes) s")" \
    "$(q postgres -c "SELECT count(*) $band_indexes")"
# lookups LEAF_MAP [SQL...]: after SQL, the md5 of the (row, match) pairs found within 7 bits of every
# seventh row of plain, with simhash.leaf_map set to LEAF_MAP.
lookups() {
    local leaf_map=$1
    shift
    q postgres "$@" -c "SET simhash.leaf_map = $leaf_map" -c "SELECT md5(string_agg(p.id || ':' || (n.item).id, ','
        ORDER BY p.id, (n.item).id)) FROM plain p, simhash_near_duplicates(NULL::plain, p.body_simhash, 7) n
        WHERE p.id % 7 = 0"
}
expect "lookups through the leaf-page reader equal plain index scans" "$(lookups on)" "$(lookups off)"
expect "the trigger still rejects a near-duplicate (23505)" \
    "$(sqlstate postgres "INSERT INTO plain (title, body) SELECT 'again', body FROM plain WHERE id = 42")" 23505
expect "the trigger fingerprints a new row" \
    "$(q postgres -c "INSERT INTO plain (title, body) VALUES ('new', 'A ferry across the harbor will run on weekend evenings from next month, the port authority said.') RETURNING body_simhash = simhash(body)")" t
expect "the partitioned table flags a near-duplicate" \
    "$(q postgres -c "INSERT INTO parted SELECT 99999, body FROM plain WHERE id = 7 RETURNING body_duplicate_of IS NOT NULL")" t
before_reindex=$(lookups off)
expect "REINDEX of an upgraded band index keeps lookups the same" "$(lookups on -c "REINDEX TABLE plain")" "$before_reindex"
