#!/usr/bin/env bash
# Dump and restore (docs/ARCHITECTURE.md §12.3): pg_dump / pg_restore of a database whose extension lives in a schema
# that is not on search_path, with attached tables (fingerprint and band columns, band indexes,
# triggers in error and flag mode; a partitioned table with a sub-partitioned partition). After the restore the fingerprints and bands are the same, the
# indexes are valid, the tables still reject (or flag) near-duplicates, and lookups use the indexes.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PORT=54344
DIR=/tmp/simhash-robust-dump
start_server "$DIR" "$PORT"
on_exit_stop "$DIR"

q postgres -c "CREATE DATABASE src"
q src -c "CREATE SCHEMA dedup" -c "CREATE EXTENSION simhash_ext SCHEMA dedup" -c "CREATE EXTENSION amcheck"
expect "src: the extension's schema is not on search_path" \
    "$(q src -c "SELECT 'dedup' = ANY(current_schemas(false))")" f
make_corpus src articles 20000
q src >/dev/null <<'SQL'
SELECT dedup.simhash_attach('articles', 'body', on_duplicate => 'error');
CREATE SCHEMA app;
CREATE TABLE app.posts (site int, path text, body text, PRIMARY KEY (site, path));
INSERT INTO app.posts SELECT id % 7, '/p/' || id, body FROM articles WHERE id <= 2000;
SELECT dedup.simhash_attach('app.posts', 'body', max_distance => 4, on_duplicate => 'flag', tokenizer => 'word');
CREATE TABLE app.feed (id int, published date, body text, PRIMARY KEY (id, published)) PARTITION BY RANGE (published);
CREATE TABLE app.feed_jan PARTITION OF app.feed FOR VALUES FROM ('2024-01-01') TO ('2024-02-01');
CREATE TABLE app.feed_feb PARTITION OF app.feed FOR VALUES FROM ('2024-02-01') TO ('2024-03-01') PARTITION BY HASH (id);
CREATE TABLE app.feed_feb_0 PARTITION OF app.feed_feb FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE app.feed_feb_1 PARTITION OF app.feed_feb FOR VALUES WITH (MODULUS 2, REMAINDER 1);
INSERT INTO app.feed SELECT id, date '2024-01-01' + (id % 59)::int, body FROM articles WHERE id <= 3000;
SELECT dedup.simhash_attach('app.feed', 'body', on_duplicate => 'error');
CREATE TABLE app.reposts (id int PRIMARY KEY, body text);
INSERT INTO app.reposts SELECT id, body FROM articles WHERE id <= 2000;
SELECT dedup.simhash_attach('app.reposts', 'body', method => 'minhash', on_duplicate => 'error');
SQL

summary() { # DB : what must survive the round trip
    q "$1" <<'SQL'
SELECT 'articles ' || count(*) || ' ' || sum(body_simhash) || ' ' || sum(body_band0 + body_band1 + body_band2 + body_band3)
FROM articles;
SELECT 'posts ' || count(*) || ' ' || sum(body_simhash) || ' ' || sum(body_band3) || ' ' || count(body_duplicate_of)
FROM app.posts;
SELECT 'feed ' || count(*) || ' ' || sum(body_simhash) || ' ' || sum(body_band2) || ' ' || count(DISTINCT tableoid)
FROM app.feed;
SELECT 'reposts ' || count(*) || ' ' || md5(string_agg(body_minhash::text || body_lsh::text, ',' ORDER BY id))
FROM app.reposts;
SELECT 'reposts index ' || pg_get_indexdef(indexrelid) || ' valid ' || indisvalid
FROM pg_index WHERE indrelid = 'app.reposts'::regclass ORDER BY 1;
SELECT 'feed index ' || i.indexrelid::regclass || ' valid ' || i.indisvalid
FROM pg_index i JOIN pg_partition_tree('app.feed') p ON p.relid = i.indrelid ORDER BY 1;
SELECT 'attachment ' || table_name || ' ' || text_column || ' ' || max_distance || ' ' || on_duplicate || ' ' || tokenizer
FROM dedup.simhash_attachments() ORDER BY 1;
SELECT 'index ' || indexrelid::regclass || ' valid ' || indisvalid
FROM pg_index WHERE indrelid IN ('articles'::regclass, 'app.posts'::regclass) ORDER BY 1;
SELECT 'trigger ' || tgrelid::regclass || ' ' || tgname || ' ' || tgfoid::regprocedure
FROM pg_trigger WHERE NOT tgisinternal ORDER BY 1;
SQL
}
summary src >"$DIR/src.summary"

t0=$(now_ms)
runuser -u postgres -- "$PG_BIN/pg_dump" -h /tmp -p "$PORT" -Fc -f "$DIR/src.dump" src
measure "pg_dump -Fc of 25,000 attached rows (s)" "$(awk -v ms=$(($(now_ms) - t0)) 'BEGIN { printf "%.1f", ms / 1000 }')"
q postgres -c "CREATE DATABASE dst"
t0=$(now_ms)
if runuser -u postgres -- "$PG_BIN/pg_restore" -h /tmp -p "$PORT" -d dst --exit-on-error -j 2 "$DIR/src.dump" \
    2>"$DIR/restore.err"; then
    pass "pg_restore -j 2 ends without error"
else
    cat "$DIR/restore.err" >&2
    fail "pg_restore failed"
fi
measure "pg_restore -j 2 (s)" "$(awk -v ms=$(($(now_ms) - t0)) 'BEGIN { printf "%.1f", ms / 1000 }')"
expect "pg_restore printed nothing" "$(cat "$DIR/restore.err")" ""

summary dst >"$DIR/dst.summary"
expect "restored: same rows, fingerprints, bands, attachments, valid indexes and triggers" \
    "$(cat "$DIR/dst.summary")" "$(cat "$DIR/src.summary")"
expect "restored: the extension is in schema dedup, off search_path" \
    "$(q dst -c "SELECT n.nspname || ' ' || ('dedup' = ANY(current_schemas(false)))
                 FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE extname = 'simhash_ext'")" "dedup false"
expect "restored: stored fingerprints equal dedup.simhash()" \
    "$(q dst -c "SELECT count(*) FROM articles WHERE body_simhash IS DISTINCT FROM dedup.simhash(body)")" 0
expect "restored: every index passes bt_index_check(heapallindexed)" \
    "$(q dst -c "SELECT sum(length(bt_index_check(indexrelid, true)::text) + 1) || '/' || count(*)
                 FROM pg_index WHERE indrelid IN ('articles'::regclass, 'app.posts'::regclass)")" 10/10

# The triggers act as before the dump.
expect "restored: a near-duplicate insert is rejected (23505)" \
    "$(sqlstate dst "INSERT INTO articles (title, body) SELECT 'dup', body || '！' FROM articles WHERE id = 42")" 23505
expect_contains "restored: the DETAIL names the existing row" \
    "$(error_text dst "INSERT INTO articles (title, body) SELECT 'dup', body || '！' FROM articles WHERE id = 42")" \
    "Key (id)=(42) is at Hamming distance"
q dst -c "INSERT INTO articles (title, body) VALUES ('new', '恢复以后插入的一段全新文字。Something entirely new after the restore.')"
expect "restored: a new row is fingerprinted by the trigger" \
    "$(q dst -c "SELECT body_simhash = dedup.simhash(body) FROM articles WHERE title = 'new'")" t
expect "restored: the flag trigger records the composite key" \
    "$(q dst -c "INSERT INTO app.posts SELECT 9, '/copy', body || '!' FROM app.posts WHERE site = 3 AND path = '/p/3'
                 RETURNING body_duplicate_of")" "3, /p/3"

# The partitioned table: its trigger searches every partition, its lookups too.
expect_contains "restored: a near-duplicate of a January row routed to a February sub-partition is rejected" \
    "$(error_text dst "INSERT INTO app.feed SELECT 90000, '2024-02-20', body || '！' FROM app.feed WHERE id = 10")" \
    "Key (id, published)=(10, 2024-01-11) is at Hamming distance"
expect "restored: simhash_near_duplicates() on the partitioned table finds row 10" \
    "$(q dst -c "SELECT (array_agg((n.item).id ORDER BY n.distance, (n.item).id))[1]
                 FROM dedup.simhash_near_duplicates(NULL::app.feed, (SELECT body FROM app.feed WHERE id = 10)) n")" 10

# The MinHash attachment: its trigger and lookups.
expect_contains "restored: a MinHash attachment rejects a repost with a header and footer (verified: its exact similarity)" \
    "$(error_text dst "INSERT INTO app.reposts SELECT 90000, '【转载】' || body || '（来源：本地日报）' FROM app.reposts WHERE id = 10")" \
    "Key (id)=(10) has similarity"
q dst -c "INSERT INTO app.reposts VALUES (90001, '恢复以后插入的另一段全新文字。Another new text after the restore.')"
expect "restored: a new row gets its signature and band keys" \
    "$(q dst -c "SELECT body_minhash = dedup.minhash(body) AND body_lsh = dedup.minhash_bands(body_minhash) FROM app.reposts WHERE id = 90001")" t
expect "restored: a MinHash lookup finds row 10 first" \
    "$(q dst -c "SELECT (array_agg((n.item).id ORDER BY n.similarity DESC, (n.item).id))[1]
                 FROM dedup.simhash_near_duplicates(NULL::app.reposts, (SELECT body FROM app.reposts WHERE id = 10)) n")" 10

# Lookups use the band indexes.
q dst -c "ANALYZE articles" -c "ANALYZE app.posts"
sql=$(q dst -c "SELECT dedup.simhash_near_duplicates_sql('articles', (SELECT body_simhash FROM articles WHERE id = 42))")
plan=$(q dst -c "EXPLAIN $sql")
expect_match "restored: the lookup plan appends one probe per band" "$plan" 'Append'
expect_match "restored: ... through the index on band 3" "$plan" 'Index Scan on articles_body_band3_body_simhash_idx'
if grep -q 'Seq Scan' <<<"$plan"; then fail "restored: the lookup plan has a sequential scan: $plan"; fi
pass "restored: no sequential scan in the lookup plan"
expect "restored: simhash_near_duplicates() finds row 42 by text" \
    "$(q dst -c "SELECT (array_agg((n.item).id ORDER BY n.distance, (n.item).id))[1]
                 FROM dedup.simhash_near_duplicates(NULL::articles, (SELECT body FROM articles WHERE id = 42)) n")" 42
expect "restored: simhash_near_duplicates() on the composite-key table" \
    "$(q dst -c "SELECT (n.item).path FROM dedup.simhash_near_duplicates(NULL::app.posts, (SELECT body FROM app.posts WHERE path = '/p/5'), 0) n ORDER BY 1")" "/p/5"
