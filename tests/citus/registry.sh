#!/usr/bin/env bash
# simhash_ext on a Citus cluster, the registry (registry => true): near-duplicates rejected across
# the whole distributed table through the view feed_body_checked, the table itself refused for
# writes (INSERT, UPDATE, COPY: 0A000), REPEATABLE READ refused; the check asks each shard once
# (probe_shard) and falls back to its UNION query when the table of shards misses one; concurrent
# writers in different sites commit each text once; flag, skip and min_length; simhash_detach; the
# attachment follows its table (COPY through the view, ADD/RENAME/DROP COLUMN, defaults,
# privileges, a table rename refused, primary key updates).
#
# A topic of tests/citus/run.sh, which starts the cluster and sources this file (in a subshell, with
# lib.sh's helpers); `bash tests/citus/run.sh NAME` or `bash` this file runs it alone.
[ -n "${CITUS_RUNNER:-}" ] || exec bash "$(dirname "${BASH_SOURCE[0]}")/run.sh" "$(basename "${BASH_SOURCE[0]}" .sh)"

ensure_articles
ensure_race_texts

echo "-- near-duplicates rejected across the whole distributed table (registry => true)"
qn "$COORDINATOR" >/dev/null <<'SQL'
SET citus.shard_count = 8;
CREATE TABLE feed (site int, id bigserial, body text, PRIMARY KEY (site, id));
SELECT create_distributed_table('feed', 'site');
INSERT INTO feed (site, body) SELECT site, body FROM articles WHERE id < 400;
CREATE TABLE race_singles AS SELECT n, s FROM race_texts;
SQL
expect "registry => true on a table that is not distributed is refused" \
    "$(sqlstate "$DB" "SELECT simhash_attach('race_singles', 's', on_duplicate => 'error', registry => true)")" 22023
qn "$COORDINATOR" -c "SELECT simhash_attach('feed', 'body', on_duplicate => 'error', registry => true)" >/dev/null
expect "the table is its own registry: no other table is made, the rows already there count as registered" \
    "$(qn "$COORDINATOR" -c "SELECT (SELECT count(*) FROM pg_class WHERE relname LIKE 'feed\_body\_registry%')
                             || '|' || (SELECT count(*) FILTER (WHERE body_registered = body_simhash) = count(*) FROM feed)")" "0|true"
expect "its band indexes carry the fingerprint and the distribution column (index-only probes on every shard)" \
    "$(qn "$COORDINATOR" -c "SELECT string_agg(regexp_replace(indexdef, '^.* USING ', ''), '; ' ORDER BY indexname)
                             FROM pg_indexes WHERE tablename = 'feed' AND indexname LIKE '%band%'")" \
    "btree (body_band0) INCLUDE (body_simhash, site); btree (body_band1) INCLUDE (body_simhash, site); btree (body_band2) INCLUDE (body_simhash, site); btree (body_band3) INCLUDE (body_simhash, site)"
expect "an INSERT into the table itself is refused: it did not go through the registry" \
    "$(sqlstate "$DB" "INSERT INTO feed (site, body) VALUES (1, 'A quiet week in the valley: cranes return to the wetlands as spring arrives.')")" 0A000
expect_contains "the refusal names the view to write through" \
    "$(error_text "$DB" "INSERT INTO feed (site, body) VALUES (1, 'A quiet week in the valley: cranes return to the wetlands as spring arrives.')")" \
    "feed_body_checked"
expect "an UPDATE of the text on the table itself is refused too" \
    "$(sqlstate "$DB" "UPDATE feed SET body = 'A quiet week in the valley: cranes return to the wetlands as spring arrives.' WHERE id = 1")" 0A000
expect "a near-duplicate of a row of another site, written through the view, is rejected (23505)" \
    "$(qn "$COORDINATOR" -c "SELECT site FROM feed WHERE id = 5" |
        { read -r site; sqlstate "$DB" "INSERT INTO feed_body_checked (site, body)
                                        SELECT ($site + 1) % 12, regexp_replace(body, '[.。]$', '!') FROM feed WHERE id = 5"; })" 23505
expect "a new text through the view is accepted, fingerprinted and registered" \
    "$(qn "$COORDINATOR" -c "INSERT INTO feed_body_checked (site, body) VALUES (7, 'A quiet week in the valley: cranes return to the wetlands as spring arrives.')" \
        -c "SELECT body_registered = body_simhash AND body_simhash = simhash(body) FROM feed WHERE body LIKE 'A quiet week%'")" t
expect "a write through the view at REPEATABLE READ is refused (0A000): the check needs fresh snapshots on the workers" \
    "$(sqlstate "$DB" "BEGIN ISOLATION LEVEL REPEATABLE READ; INSERT INTO feed_body_checked (site, body) VALUES (8, 'Snow closed the mountain pass for the third time this month, stranding two buses.'); COMMIT")" 0A000
expect_contains "... with a hint to write at READ COMMITTED" \
    "$(error_text "$DB" "BEGIN ISOLATION LEVEL SERIALIZABLE; INSERT INTO feed_body_checked (site, body) VALUES (8, 'Snow closed the mountain pass for the third time this month, stranding two buses.'); COMMIT")" \
    "READ COMMITTED"
expect "a near-duplicate of a deleted row goes in (the table is the registry: nothing of the deleted row is left)" \
    "$(qn "$COORDINATOR" -c "DELETE FROM feed WHERE body LIKE 'A quiet week%'" \
        -c "INSERT INTO feed_body_checked (site, body) VALUES (9, 'A quiet week in the valley: cranes return to the wetlands as spring arrives!')" \
        -c "SELECT count(*) FROM feed WHERE body LIKE 'A quiet week%'")" 1

# The check searches each shard with simhash_internal.probe_shard(), one call per row of the table
# of shards, which is colocated with feed: Citus runs each call in the connection that wrote that
# shard in the transaction.
shard_list=$(qn "$COORDINATOR" -c "SELECT string_agg(shardid::text, ',' ORDER BY shardid) FROM pg_dist_shard WHERE logicalrelid = 'feed'::regclass")
expect "the table of shards: one row per shard of feed ..." \
    "$(qn "$COORDINATOR" -c "SELECT string_agg(shard::text, ',' ORDER BY shard) FROM feed_body_shards")" "$shard_list"
expect "... colocated with it" \
    "$(qn "$COORDINATOR" -c "SELECT count(DISTINCT colocationid) FROM pg_dist_partition WHERE logicalrelid IN ('feed'::regclass, 'feed_body_shards'::regclass)")" 1
remote_probe() { # SQL: the probe_shard calls and UNION queries Citus sends for one insert through the view
    "$PSQL" -X -q -h /tmp -p "$COORDINATOR" -U postgres -d "$DB" -c "SET client_min_messages = log" \
        -c "SET citus.log_remote_commands = on" -c "$1" 2>&1 |
        awk '/issuing/ && /probe_shard/ { p++ } /issuing/ && /UNION ALL/ { u++ } END { printf "%d|%d\n", p, u }'
}
expect "a write through the view asks each of the 8 shards once (probe_shard), without the UNION query" \
    "$(remote_probe "INSERT INTO feed_body_checked (site, body) VALUES (10, 'Harvest festival draws record crowds to the old mill despite the steady rain.')")" "8|0"
expect "a near-duplicate written earlier in the same transaction is rejected, after a parallel query opened more connections" \
    "$(sqlstate "$DB" "BEGIN; SET LOCAL citus.force_max_query_parallelization = on; SELECT count(*) FROM feed;
                       INSERT INTO feed_body_checked (site, body) VALUES (3, 'The ferry timetable changes on Monday as the winter schedule begins across the bay.');
                       INSERT INTO feed_body_checked (site, body) VALUES (4, 'The ferry timetable changes on Monday as the winter schedule begins across the bay!');
                       COMMIT")" 23505
expect "a near-duplicate of a row deleted earlier in the same transaction goes in" \
    "$(qn "$COORDINATOR" -c "BEGIN" -c "SET LOCAL citus.force_max_query_parallelization = on" -c "SELECT count(*) FROM feed" \
        -c "INSERT INTO feed_body_checked (site, body) VALUES (3, 'Librarians catalogued a donated collection of maps that once belonged to a sea captain.')" \
        -c "DELETE FROM feed WHERE site = 3 AND body LIKE 'Librarians catalogued%'" \
        -c "INSERT INTO feed_body_checked (site, body) VALUES (5, 'Librarians catalogued a donated collection of maps that once belonged to a sea captain!')" \
        -c "COMMIT" -c "SELECT site FROM feed WHERE body LIKE 'Librarians catalogued%'" | tail -1)" 5
# With a shard missing from the table of shards (as after a shard split), the check searches with
# the UNION query; registry_shards() makes the table again.
qn "$COORDINATOR" -c "DELETE FROM feed_body_shards WHERE shard = (SELECT get_shard_id_for_distribution_column('feed', 10))" >/dev/null
expect "with a shard missing from the table of shards, the check searches with its own query (the UNION on each of the 8 shards)" \
    "$(remote_probe "INSERT INTO feed_body_checked (site, body) VALUES (11, 'Astronomers at the hill observatory tracked a comet that will pass close to the sun in May.')")" "8|8"
expect "... and still rejects a near-duplicate of a row in that shard (23505)" \
    "$(sqlstate "$DB" "INSERT INTO feed_body_checked (site, body) VALUES (1, 'Harvest festival draws record crowds to the old mill despite the steady rain!')")" 23505
expect "simhash_internal.registry_shards() makes the table of shards again: one row per shard, the one query back" \
    "$(qn "$COORDINATOR" -c "SELECT simhash_internal.registry_shards('feed', 'body')" -c "SELECT string_agg(shard::text, ',' ORDER BY shard) = '$shard_list' FROM feed_body_shards" | tr '\n' '|')$(remote_probe "INSERT INTO feed_body_checked (site, body) VALUES (2, 'Fishermen report the largest herring run in a decade along the northern coast this spring.')")" "t|t|8|0"

# Concurrent writers through the view, each into its own site (sites live on different shards
# and workers): exactly one copy of each text may commit in the whole table, none of a text that
# has a near-duplicate there already.
fresh=$(qn "$COORDINATOR" -c "SELECT count(*) FROM race_texts r WHERE NOT EXISTS (SELECT FROM simhash_near_duplicates(NULL::feed, r.s))")
measure "registry: race texts without a near-duplicate in the table" "$fresh of $TEXTS"
((fresh >= TEXTS / 2)) || fail "too few fresh race texts ($fresh) to show anything"
for w in $(seq 1 "$WRITERS"); do
    script=$CITUS_DIR/feed$w.sql
    : >"$script"
    for n in $(seq 1 "$TEXTS" | shuf --random-source=<(yes "x$w")); do
        printf "BEGIN;\nINSERT INTO feed_body_checked (site, body) SELECT %d, s || repeat('!', %d) FROM race_texts WHERE n = %d;\nSELECT pg_sleep(0.03);\nCOMMIT;\n" \
            "$w" "$w" "$n" >>"$script"
    done
done
start=$(now_ms)
run_writers feed
measure "registry: $WRITERS writers in $WRITERS sites x $TEXTS inserts (ms)" $(($(now_ms) - start))
rejected=$(cat "$CITUS_DIR"/feed*.out | grep -c 'near-duplicate text' || true)
others=$(cat "$CITUS_DIR"/feed*.out | grep 'ERROR' | grep -v 'near-duplicate text' | grep -vc 'transaction is aborted' || true)
expect "each fresh text committed once in the whole table, whichever site" \
    "$(qn "$COORDINATOR" -c "SELECT count(*) || '|' || count(DISTINCT body_simhash) || '|' || (count(DISTINCT site) > 1)
                             FROM feed WHERE body_simhash IN (SELECT simhash(s) FROM race_texts)")" "$fresh|$fresh|true"
expect "every other copy was rejected with 23505, and nothing else failed" "$rejected|$others" \
    "$((WRITERS * TEXTS - fresh))|0"
expect "no two rows written through the registry are near-duplicates" \
    "$(qn "$COORDINATOR" -c "SELECT count(*) FROM simhash_pairs('feed') p
                             WHERE p.key_a IN (SELECT ROW(site, id)::text FROM feed WHERE id > 400)
                                OR p.key_b IN (SELECT ROW(site, id)::text FROM feed WHERE id > 400)")" 0
qn "$COORDINATOR" -c "SELECT simhash_detach('feed')" >/dev/null
expect "simhash_detach drops the view and the table of shards (and the registry tables of older versions)" \
    "$(qn "$COORDINATOR" -c "SELECT count(*) FROM pg_class WHERE relname LIKE 'feed\_body\_%'")" 0
qn "$COORDINATOR" >/dev/null <<'SQL'
CREATE TABLE flagged (site int, id bigint, body text, PRIMARY KEY (site, id));
SELECT create_distributed_table('flagged', 'site');
SELECT simhash_attach('flagged', 'body', on_duplicate => 'flag', registry => true);
INSERT INTO flagged_body_checked VALUES (1, 1, 'The city council approved the budget for protected bike lanes on Monday.');
INSERT INTO flagged_body_checked VALUES (2, 2, 'The city council approved the budget for protected bike lanes on Monday!');
INSERT INTO flagged_body_checked VALUES (3, 3, 'Volunteers hauled half a ton of trash from the beach at Sandy Point on Saturday.');
CREATE TABLE skipped (site int, id bigint, body text, PRIMARY KEY (site, id));
SELECT create_distributed_table('skipped', 'site');
SELECT simhash_attach('skipped', 'body', on_duplicate => 'skip', registry => true);
INSERT INTO skipped_body_checked VALUES (1, 1, 'The city council approved the budget for protected bike lanes on Monday.');
INSERT INTO skipped_body_checked VALUES (2, 2, 'The city council approved the budget for protected bike lanes on Monday!');
SQL
expect "registry, flag mode: the row goes in with the key of its near-duplicate in another site" \
    "$(qn "$COORDINATOR" -c "SELECT string_agg(site || ':' || coalesce(body_duplicate_of, '-'), ' ' ORDER BY site) FROM flagged")" \
    "1:- 2:1, 1 3:-"
expect "registry, skip mode: the near-duplicate in another site is dropped" \
    "$(qn "$COORDINATOR" -c "SELECT string_agg(site::text, ' ' ORDER BY site) FROM skipped")" "1"
qn "$COORDINATOR" >/dev/null <<'SQL'
CREATE TABLE notes (site int, id bigint, body text, PRIMARY KEY (site, id));
SELECT create_distributed_table('notes', 'site');
SELECT simhash_attach('notes', 'body', on_duplicate => 'error', registry => true, min_length => 40);
INSERT INTO notes_body_checked VALUES (1, 1, 'Short note about the weather.');
INSERT INTO notes_body_checked VALUES (2, 2, 'Short note about the weather!');
INSERT INTO notes_body_checked VALUES (3, 3, 'The city council approved the budget for protected bike lanes on Monday.');
SQL
expect "registry, min_length: a short near-duplicate in another site goes in, registered" \
    "$(qn "$COORDINATOR" -c "SELECT count(*) FROM notes WHERE body_registered = body_simhash")" 3
expect "registry, min_length: a long near-duplicate in another site is still rejected (23505)" \
    "$(sqlstate "$DB" "INSERT INTO notes_body_checked VALUES (4, 4, 'The city council approved the budget for protected bike lanes on Monday!')")" 23505

echo "-- a registry attachment follows its table (COPY, ALTER TABLE, primary key updates)"
qn "$COORDINATOR" >/dev/null <<'SQL'
CREATE TABLE ledger (site int, id bigint, body text, note text DEFAULT 'none', PRIMARY KEY (site, id));
SELECT create_distributed_table('ledger', 'site');
SELECT simhash_attach('ledger', 'body', on_duplicate => 'error', registry => true);
INSERT INTO ledger_body_checked (site, id, body) VALUES (1, 1, 'The city council approved the budget for protected bike lanes on Monday.');
CREATE ROLE ledger_writer;
GRANT INSERT ON ledger_body_checked TO ledger_writer;
SQL
copy_rows=$'2\t2\tVolunteers hauled half a ton of trash from the beach at Sandy Point on Saturday.'
expect "COPY into the table itself is refused with 0A000 on the coordinator (not Citus's XX000 from a shard)" \
    "$(sqlstate "$DB" "COPY ledger (site, id, body) FROM STDIN" <<<"$copy_rows")" 0A000
expect_contains "the COPY refusal's hint names the view to write through" \
    "$(error_text "$DB" "COPY ledger (site, id, body) FROM STDIN" <<<"$copy_rows")" \
    "HINT:  INSERT or COPY through the view public.ledger_body_checked"
expect "an INSERT into the table itself that leaves out body_registered is refused the same way" \
    "$(sqlstate "$DB" "INSERT INTO ledger (site, id, body) VALUES (2, 2, 'Volunteers hauled half a ton of trash.')")" 0A000
expect "COPY through the view checks every row: a near-duplicate of a row on another shard is rejected (23505)" \
    "$(sqlstate "$DB" "COPY ledger_body_checked (site, id, body) FROM STDIN" \
        <<<$'2\t2\tThe city council approved the budget for protected bike lanes on Monday!')" 23505
expect "COPY through the view writes a new text, registered" \
    "$(qn "$COORDINATOR" -c "COPY ledger_body_checked (site, id, body) FROM STDIN" <<<"$copy_rows" &&
        qn "$COORDINATOR" -c "SELECT count(*) FILTER (WHERE body_registered = simhash(body)) FROM ledger")" 2

qn "$COORDINATOR" -c "ALTER TABLE ledger ADD COLUMN lang text NOT NULL DEFAULT 'en'" \
    -c "ALTER TABLE ledger ADD COLUMN region text NOT NULL DEFAULT 'eu'" \
    -c "ALTER TABLE ledger ALTER COLUMN region DROP DEFAULT" \
    -c "ALTER TABLE ledger ALTER COLUMN note SET DEFAULT 'added later'" >/dev/null
expect "after ADD COLUMN the view has the new columns, with the table's defaults" \
    "$(qn "$COORDINATOR" -c "SELECT string_agg(a.attname || '=' || coalesce(pg_get_expr(d.adbin, d.adrelid), '-'), ' ' ORDER BY a.attnum)
                             FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
                             WHERE a.attrelid = 'ledger_body_checked'::regclass AND a.attnum > 0")" \
    "site=- id=- body=- note='added later'::text lang='en'::text region=-"
expect "an INSERT through the view names the new columns (a NOT NULL one without a default included)" \
    "$(qn "$COORDINATOR" -c "INSERT INTO ledger_body_checked (site, id, body, lang, region)
                             VALUES (3, 3, 'A quiet week in the valley: cranes return to the wetlands as spring arrives.', 'fr', 'us')" \
        -c "SELECT lang || '|' || region || '|' || note FROM ledger WHERE id = 3")" "fr|us|added later"
expect "... and the view still rejects near-duplicates (23505)" \
    "$(sqlstate "$DB" "INSERT INTO ledger_body_checked (site, id, body, region)
                       VALUES (4, 4, 'A quiet week in the valley: cranes return to the wetlands as spring arrives!', 'us')")" 23505
expect "the view keeps its privileges through ALTER TABLE" \
    "$(qn "$COORDINATOR" -c "SELECT has_table_privilege('ledger_writer', 'ledger_body_checked', 'INSERT')")" t
qn "$COORDINATOR" -c "ALTER TABLE ledger RENAME COLUMN lang TO language" >/dev/null
expect "a column renamed in the table is renamed in the view" \
    "$(qn "$COORDINATOR" -c "INSERT INTO ledger_body_checked (site, id, body, language, region)
                             VALUES (5, 5, 'Ferry service to the islands resumes after the storm damaged two piers.', 'de', 'eu')" \
        -c "SELECT language FROM ledger WHERE id = 5")" de
expect "dropping a column the view reads is refused by PostgreSQL (2BP01) unless CASCADE" \
    "$(sqlstate "$DB" "ALTER TABLE ledger DROP COLUMN language")" 2BP01
qn "$COORDINATOR" -c "ALTER TABLE ledger DROP COLUMN language CASCADE" >/dev/null
expect "after DROP COLUMN ... CASCADE the view is made again, without the column, and still checks" \
    "$(qn "$COORDINATOR" -c "SELECT string_agg(attname, ',' ORDER BY attnum) FROM pg_attribute
                             WHERE attrelid = 'ledger_body_checked'::regclass AND attnum > 0"
       sqlstate "$DB" "INSERT INTO ledger_body_checked (site, id, body, region)
                       VALUES (6, 6, 'Ferry service to the islands resumes after the storm damaged two piers!', 'eu')")" \
    "site,id,body,note,region
23505"
expect "renaming the table is refused (0A000): the view is named after it" \
    "$(sqlstate "$DB" "ALTER TABLE ledger RENAME TO ledger2")" 0A000

expect "an UPDATE of the primary key of a registered row goes through" \
    "$(sqlstate "$DB" "UPDATE ledger SET id = 100 WHERE site = 1 AND id = 1")" 00000
expect_contains "a later rejection names the row by its new key" \
    "$(error_text "$DB" "INSERT INTO ledger_body_checked (site, id, body, region)
                         VALUES (7, 7, 'The city council approved the budget for protected bike lanes on Monday!!', 'eu')")" \
    "Key (site, id)=(1, 100)"
