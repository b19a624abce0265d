#!/usr/bin/env bash
# Runs the README's "Quick start" SQL, as a reader would paste it, against a server where
# simhash_ext is installed, and checks that psql prints what the README's comments show:
#
#   bash tests/package/quickstart.sh PORT [PSQL]
#
# Every README comment that is psql output (a line of a result table, "-- ERROR:", "-- DETAIL:")
# must appear in the output, and exactly the statements the README shows failing ("-- ERROR:" after
# them: the near-duplicate inserts) must fail. The
# comment "-- ... rows already there ..." becomes an insert of the original article, so that the
# repost has something to be a near-duplicate of. Uses a fresh database simhash_quickstart.
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/common.sh" # ROOT, PG_BIN of $PG_CONFIG
PORT=$1
PSQL=${2:-$PG_BIN/psql}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

awk '/^## Quick start/ {q = 1; next} /^## / {q = 0}
     q && /^```sql/ {s = 1; next} q && /^```/ {s = 0} q && s' "$ROOT/README.md" >"$work/readme.sql"
[ -s "$work/readme.sql" ] || { echo "quickstart: no SQL under '## Quick start' in README.md" >&2; exit 1; }
grep -q '^-- \.\.\. rows already there' "$work/readme.sql" ||
    { echo "quickstart: README quick start no longer has the '-- ... rows already there' line" >&2; exit 1; }
sed "s|^-- \.\.\. rows already there.*|INSERT INTO articles (title, body) VALUES ('line 19 opens', '北京地铁19号线今天开通，全长22公里。');|" \
    "$work/readme.sql" >"$work/run.sql"

q() { runuser -u postgres -- "$PSQL" -X -h /tmp -p "$PORT" -U postgres "$@"; }
q -q -d postgres -c 'DROP DATABASE IF EXISTS simhash_quickstart' -c 'CREATE DATABASE simhash_quickstart'
q -q -d simhash_quickstart -c 'CREATE EXTENSION simhash_ext'
# No ON_ERROR_STOP: the near-duplicate insert fails, as the README says it does.
q -d simhash_quickstart <"$work/run.sql" >"$work/out.txt" 2>&1 || true
sed -i 's/[[:space:]]*$//; s/^psql:[^ ]* ERROR:/ERROR:/' "$work/out.txt"

failed=0
# psql output quoted in the README: "--  value", "-- ---+---", "-- ERROR:  ...", "-- DETAIL:  ...".
while IFS= read -r line; do
    want=${line#-- }
    want=${want%"${want##*[![:space:]]}"}
    if ! grep -qxF -- "$want" "$work/out.txt"; then
        echo "quickstart: README shows '$want', psql printed no such line" >&2
        failed=1
    fi
done < <(grep -E '^-- ( |-|ERROR:|DETAIL:)' "$work/run.sql")
errors=$(grep -c '^ERROR:' "$work/out.txt" || true)
documented=$(grep -c '^-- ERROR:' "$work/run.sql" || true)
if [ "$errors" != "$documented" ]; then
    echo "quickstart: $errors statements failed, expected exactly the $documented the README shows (the near-duplicate inserts)" >&2
    failed=1
fi
# The trailing "-- 0: ..." comments of the two hamming() calls.
zeros=$(grep -cx ' *0' "$work/out.txt" || true)
if [ "$zeros" -lt 2 ]; then
    echo "quickstart: the README's two hamming() calls should print 0, found $zeros zeros" >&2
    failed=1
fi
if ((failed)); then
    echo "--- psql output:" >&2
    cat "$work/out.txt" >&2
    exit 1
fi
echo "quickstart: README quick start ran as documented ($(grep -cE '^-- ( |-|ERROR:|DETAIL:)' "$work/run.sql") output lines checked)"
