#!/usr/bin/env bash
# simhash_ext on a Citus cluster, the upgrade: in a database of its own, a registry attachment made
# by simhash_ext 0.3.0 (installed from the base install script, put into the extension directory
# for the test, and the update scripts up to 0.3.0) through ALTER EXTENSION simhash_ext UPDATE on the
# coordinator: versions on every node, the old view kept and still checking, COPY refused, the
# default of body_registered on the workers and shards, ADD COLUMN, simhash_detach.
#
# A topic of tests/citus/run.sh, which starts the cluster and sources this file (in a subshell, with
# lib.sh's helpers); `bash tests/citus/run.sh NAME` or `bash` this file runs it alone.
[ -n "${CITUS_RUNNER:-}" ] || exec bash "$(dirname "${BASH_SOURCE[0]}")/run.sh" "$(basename "${BASH_SOURCE[0]}" .sh)"

echo "-- a registry attachment made by 0.3.0, after ALTER EXTENSION simhash_ext UPDATE to the current version"
# In a database of its own: simhash_ext 0.3.0 from the base install script and the update scripts
# up to 0.3.0 (docs/ARCHITECTURE.md §12.1), on the library installed now, as after installing a new
# version over 0.3.0 on every node.
UP_DB=simhash_up
qu() { DB=$UP_DB qn "$@"; }
TARGET=$(sed -n "s/^default_version *= *'\(.*\)'/\1/p" "$CITUS_EXTDIR/simhash_ext.control")
BASE=$(base_version)
install_extension_file "$ROOT/sql/simhash_ext--$BASE.sql" "simhash_ext--$BASE.sql"
[ "$BASE" == 0.3.0 ] || [ ! -e "$CITUS_EXTDIR/simhash_ext--0.3.0.sql" ] ||
    fail "$CITUS_EXTDIR holds an install script of 0.3.0 (an older checkout's), which CREATE EXTENSION would run instead of the update scripts: install_extension (scripts/common.sh) removes it"
citus_database "$UP_DB"
qu "$COORDINATOR" -c "CREATE EXTENSION simhash_ext VERSION '0.3.0'"
versions() {
    qu "$COORDINATOR" -c "SELECT (SELECT extversion FROM pg_extension WHERE extname = 'simhash_ext') || ',' || string_agg(result, ',' ORDER BY nodeport)
                          FROM run_command_on_workers(\$\$SELECT extversion FROM pg_extension WHERE extname = 'simhash_ext'\$\$)"
}
expect "0.3.0 on the coordinator and both workers" "$(versions)" "0.3.0,0.3.0,0.3.0"
qu "$COORDINATOR" >/dev/null <<'SQL'
SET citus.shard_count = 8;
CREATE TABLE upgraded (site int, id bigint, body text, note text DEFAULT 'none', PRIMARY KEY (site, id));
SELECT create_distributed_table('upgraded', 'site');
INSERT INTO upgraded VALUES (1, 1, 'The city council approved the budget for protected bike lanes on Monday.');
SELECT simhash_attach('upgraded', 'body', on_duplicate => 'error', registry => true);
INSERT INTO upgraded_body_checked (site, id, body) VALUES (2, 2, 'Volunteers hauled half a ton of trash from the beach at Sandy Point on Saturday.');
INSERT INTO upgraded_body_checked (site, id, body) VALUES (3, 3, 'Ferry service to the islands resumes after the storm damaged two piers.');
SQL
# The view's trigger as 0.3.0 makes it: the settings and registry names as 11 arguments; and no
# default on upgraded.body_registered.
view_trigger="SELECT t.tgnargs || '|' || (SELECT count(*) FROM pg_attrdef d JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
                                              WHERE d.adrelid = 'upgraded'::regclass AND a.attname = 'body_registered')
              FROM pg_trigger t WHERE t.tgrelid = 'upgraded_body_checked'::regclass"
expect "0.3.0: the view's trigger has 11 arguments, body_registered no default" "$(qu "$COORDINATOR" -c "$view_trigger")" "11|0"
expect "0.3.0: three rows in the table, each filed in the registry under 8 buckets" \
    "$(qu "$COORDINATOR" -c "SELECT (SELECT count(*) FROM upgraded WHERE body_registered = body_simhash) || '|' || (SELECT count(*) FROM upgraded_body_registry)")" \
    "3|24"
expect "0.3.0: a near-duplicate through the view is rejected (23505)" \
    "$(sqlstate "$UP_DB" "INSERT INTO upgraded_body_checked (site, id, body)
                          VALUES (4, 4, 'The city council approved the budget for protected bike lanes on Monday!')")" 23505

# Citus runs ALTER EXTENSION ... UPDATE on the coordinator and then on every worker, in one
# distributed transaction.
expect "ALTER EXTENSION simhash_ext UPDATE on the coordinator goes through, naming the registry tables it leaves" \
    "$(error_text "$UP_DB" "ALTER EXTENSION simhash_ext UPDATE" | grep -o 'no longer reads or writes table public.upgraded_body_registry[_a-z]*' | sort | tr '\n' ' ')" \
    "no longer reads or writes table public.upgraded_body_registry no longer reads or writes table public.upgraded_body_registry_locks "
expect "ALTER EXTENSION UPDATE on the coordinator: $TARGET there and on both workers" "$(versions)" "$TARGET,$TARGET,$TARGET"
expect "the view of 0.3.0 is kept, its trigger with its 11 arguments; body_registered has a default now" \
    "$(qu "$COORDINATOR" -c "$view_trigger")" "11|1"
expect "a near-duplicate through the old view is still rejected (23505)" \
    "$(sqlstate "$UP_DB" "INSERT INTO upgraded_body_checked (site, id, body)
                          VALUES (5, 5, 'Volunteers hauled half a ton of trash from the beach at Sandy Point on Saturday!')")" 23505
expect_contains "... naming the key of the row it duplicates" \
    "$(error_text "$UP_DB" "INSERT INTO upgraded_body_checked (site, id, body)
                            VALUES (5, 5, 'Volunteers hauled half a ton of trash from the beach at Sandy Point on Saturday!')")" \
    "DETAIL:  Key (site, id)=(2, 2) is at Hamming distance"
expect "... which is there" "$(qu "$COORDINATOR" -c "SELECT count(*) FROM upgraded WHERE site = 2 AND id = 2")" 1
expect "a new text through the old view goes in, registered; 0.3.0's registry table is no longer written" \
    "$(qu "$COORDINATOR" -c "INSERT INTO upgraded_body_checked (site, id, body)
                             VALUES (6, 6, 'A quiet week in the valley: cranes return to the wetlands as spring arrives.')" \
        -c "SELECT (SELECT body_registered = simhash(body) AND body_simhash = simhash(body) FROM upgraded WHERE site = 6 AND id = 6)
                   || '|' || (SELECT count(*) FROM upgraded_body_registry WHERE row_key = '6, 6')")" "true|0"
expect "simhash_internal.registry_shards() gives the updated attachment its table of shards; a near-duplicate is still rejected" \
    "$(qu "$COORDINATOR" -c "SELECT simhash_internal.registry_shards('upgraded', 'body')")|$(sqlstate "$UP_DB" "INSERT INTO upgraded_body_checked (site, id, body)
                          VALUES (5, 55, 'Volunteers hauled half a ton of trash from the beach at Sandy Point on Saturday!')")" "t|23505"
copy_rows=$'7\t7\tThe harbour master closed the port for a day as the gale came in from the north.'
expect "COPY into the table itself is refused on the coordinator (0A000)" \
    "$(sqlstate "$UP_DB" "COPY upgraded (site, id, body) FROM STDIN" <<<"$copy_rows")" 0A000
expect_contains "... its hint naming the old view" \
    "$(error_text "$UP_DB" "COPY upgraded (site, id, body) FROM STDIN" <<<"$copy_rows")" \
    "HINT:  INSERT or COPY through the view public.upgraded_body_checked"
expect "... and nothing of it was written" "$(qu "$COORDINATOR" -c "SELECT count(*) FROM upgraded WHERE id = 7")" 0
# As simhash_attach of the current version leaves it: the same default on the workers' copies of
# the table and on every shard.
registered_default="simhash_internal.registry_unchecked('public.upgraded'::text, 'body'::text, 'public.upgraded_body_checked'::text)"
expect "the same default on both workers' copies of the table and on all 8 shards" \
    "$(qu "$COORDINATOR" -c "SELECT (SELECT count(*) FROM run_command_on_workers(\$\$
              SELECT pg_get_expr(d.adbin, d.adrelid) FROM pg_attrdef d JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
              WHERE d.adrelid = 'upgraded'::regclass AND a.attname = 'body_registered'\$\$) WHERE result = \$d\$$registered_default\$d\$)
            || '|' || (SELECT count(*) FROM run_command_on_shards('upgraded', \$\$
              SELECT pg_get_expr(d.adbin, d.adrelid) FROM pg_attrdef d JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
              WHERE d.adrelid = '%s'::regclass AND a.attname = 'body_registered'\$\$) WHERE result = \$d\$$registered_default\$d\$)")" "2|8"
qu "$COORDINATOR" -c "ALTER TABLE upgraded ADD COLUMN lang text NOT NULL DEFAULT 'en'" >/dev/null
expect "after ADD COLUMN the old view has the new column, with the table's default" \
    "$(qu "$COORDINATOR" -c "SELECT string_agg(a.attname || '=' || coalesce(pg_get_expr(d.adbin, d.adrelid), '-'), ' ' ORDER BY a.attnum)
                             FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
                             WHERE a.attrelid = 'upgraded_body_checked'::regclass AND a.attnum > 0")" \
    "site=- id=- body=- note='none'::text lang='en'::text"
expect "... and an INSERT through it writes the new column, and still checks (23505)" \
    "$(qu "$COORDINATOR" -c "INSERT INTO upgraded_body_checked (site, id, body, lang)
                             VALUES (8, 8, 'Le conseil municipal a voté le budget des pistes cyclables protégées lundi.', 'fr')" \
        -c "SELECT lang FROM upgraded WHERE site = 8 AND id = 8"
       sqlstate "$UP_DB" "INSERT INTO upgraded_body_checked (site, id, body, lang)
                          VALUES (9, 9, 'Le conseil municipal a voté le budget des pistes cyclables protégées lundi !', 'fr')")" \
    "fr
23505"
qu "$COORDINATOR" -c "SELECT simhash_detach('upgraded')" >/dev/null
expect "simhash_detach removes the view, the table of shards, the registry and its lock rows" \
    "$(qu "$COORDINATOR" -c "SELECT count(*) FROM pg_class WHERE relname LIKE 'upgraded\_body\_%'")" 0
expect "... and the columns and triggers, from the table and every shard" \
    "$(qu "$COORDINATOR" -c "SELECT string_agg(attname, ',' ORDER BY attnum) FROM pg_attribute WHERE attrelid = 'upgraded'::regclass AND attnum > 0 AND NOT attisdropped" \
        -c "SELECT count(*) FILTER (WHERE result = '0|0') FROM run_command_on_shards('upgraded', \$\$
              SELECT (SELECT count(*) FROM pg_attribute WHERE attrelid = '%1\$s'::regclass AND attname LIKE 'body\\_%%' AND NOT attisdropped)
                     || '|' || (SELECT count(*) FROM pg_trigger WHERE tgrelid = '%1\$s'::regclass AND NOT tgisinternal)\$\$)")" \
    "site,id,body,note,lang
8"
