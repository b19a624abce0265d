#!/usr/bin/env bash
# Encodings (docs/ARCHITECTURE.md §2.12): databases created from template0 in UTF8, LATIN1, EUC_CN and SQL_ASCII give
# the same fingerprints and features for the same characters; simhash_features() returns its
# features in the server encoding; the duplicate trigger works with non-ASCII keys and names and
# reports them in the server encoding; invalid UTF-8 in SQL_ASCII raises SQLSTATE 22021.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PORT=54341
DIR=/tmp/simhash-robust-encodings
start_server "$DIR" "$PORT"
on_exit_stop "$DIR"

for enc in UTF8 LATIN1 EUC_CN SQL_ASCII; do
    db=enc_${enc,,}
    q postgres -c "CREATE DATABASE $db TEMPLATE template0 ENCODING '$enc' LC_COLLATE 'C' LC_CTYPE 'C'"
    q "$db" -c "CREATE EXTENSION simhash_ext"
    expect "$db has server encoding $enc" "$(q "$db" -c 'SHOW server_encoding')" "$enc"
done

# Texts each encoding can hold (the client sends UTF-8; the server converts it).
ascii_texts=("Hello, World!" "abc" "Near-duplicate detection in PostgreSQL, version 15.")
latin_texts=("Le conseil municipal a approuvé le budget des pistes cyclables protégées à Zürich."
    "Straße naïve façade ÀÉÎÕÜ Ærø Ångström ½ ª º ² µ")
chinese_texts=("我喜欢看电视，不喜欢看电影。ＡＢＣ abc 123" "北京地铁19号线今天开通，全长22公里。")
options=("" ", tokenizer => 'jieba'" ", tokenizer => 'word'" ", tokenizer => 'char', shingle => 3, stopwords => false"
    ", weighting => 'binary'" ", weighting => 'tfidf'" ", weighting => 'logtfidf'" ", weighting => 'tf', fold => 'none'")

# fingerprints DB TEXTS... : one line per text and option set.
fingerprints() {
    local db=$1 sql="" t o
    shift
    for t in "$@"; do
        for o in "${options[@]}"; do
            sql+="SELECT coalesce(simhash(\$t\$$t\$t\$$o)::text, 'NULL');"$'\n'
        done
    done
    q "$db" <<<"$sql"
}

# features DB TEXT : every feature with its weight and hash, default, jieba and char options.
features() {
    q "$1" <<SQL
SELECT feature || ' ' || weight || ' ' || hash FROM simhash_features(\$t\$$2\$t\$);
SELECT feature || ' ' || weight || ' ' || hash FROM simhash_features(\$t\$$2\$t\$, tokenizer => 'jieba');
SELECT feature || ' ' || weight || ' ' || hash FROM simhash_features(\$t\$$2\$t\$, tokenizer => 'char', shingle => 2);
SQL
}

check_same() { # DB LABEL TEXTS...
    local db=$1 label=$2
    shift 2
    local want got n
    want=$(fingerprints enc_utf8 "$@")
    got=$(fingerprints "$db" "$@")
    n=$(wc -l <<<"$want")
    expect "$db: $label: $n fingerprints equal UTF8's" "$got" "$want"
    for t in "$@"; do
        want=$(features enc_utf8 "$t")
        got=$(features "$db" "$t")
        if [ "$db" == enc_latin1 ]; then
            # NFKC can make characters LATIN1 cannot hold (µ becomes Greek μ, ½ becomes 1⁄2):
            # they are shown as \uXXXX escapes, with the hash of the character itself.
            want=$(perl -CSD -pe 's/([^\x{0}-\x{ff}])/sprintf("\\u%04x", ord($1))/ge' <<<"$want")
        fi
        expect "$db: $label: simhash_features() equal UTF8's for '${t:0:24}…'" "$got" "$want"
    done
}

check_same enc_latin1 ascii "${ascii_texts[@]}"
check_same enc_latin1 latin "${latin_texts[@]}"
check_same enc_euc_cn ascii "${ascii_texts[@]}"
check_same enc_euc_cn chinese "${chinese_texts[@]}"
check_same enc_sql_ascii ascii "${ascii_texts[@]}"
check_same enc_sql_ascii latin "${latin_texts[@]}"
check_same enc_sql_ascii chinese "${chinese_texts[@]}"

for db in enc_latin1 enc_euc_cn enc_sql_ascii; do
    expect "$db: golden vector 'Hello, World!' (char)" \
        "$(q "$db" -c "SELECT simhash('Hello, World!', tokenizer => 'char', stopwords => false, weighting => 'tf')")" \
        "4720314355354338905"
done
expect "enc_euc_cn: golden vector 我喜欢看电视… (char, shingle 3)" \
    "$(q enc_euc_cn -c "SELECT simhash('我喜欢看电视，不喜欢看电影。', tokenizer => 'char', shingle => 3, stopwords => false, weighting => 'tf')")" \
    "-8534240120405747014"
expect "enc_latin1: a feature LATIN1 cannot hold keeps the hash of its UTF-8 text" \
    "$(q enc_latin1 -c "SELECT feature || ' ' || hash FROM simhash_features('µ', tokenizer => 'char')")" \
    "$(q enc_utf8 -c "SELECT '\\u03bc ' || hash FROM simhash_features('µ', tokenizer => 'char')")"
# simhash_explain(): in every encoding the same distance and features as in UTF8; features (and the
# details naming them) that LATIN1 cannot hold are escaped like simhash_features()'s.
explain_sql="SELECT string_agg(section || ' ' || coalesce(feature, '') || ' ' || coalesce(bit::text, '') || ' '
    || coalesce(weight_a::text, '') || ' ' || coalesce(weight_b::text, ''), E'\\n' ORDER BY n)
    FROM simhash_explain('Le conseil a approuvé le budget à Zürich.', 'Le conseil approuve le budget de Zürich !')
         WITH ORDINALITY e(section, feature, bit, weight_a, weight_b, detail, n)"
for db in enc_latin1 enc_euc_cn enc_sql_ascii; do
    expect "$db: simhash_explain() rows equal UTF8's" "$(q "$db" -c "$explain_sql")" "$(q enc_utf8 -c "$explain_sql")"
done
expect "enc_euc_cn: simhash_explain() of a Chinese pair equals UTF8's" \
    "$(q enc_euc_cn -c "SELECT string_agg(coalesce(feature, '') || coalesce(detail, ''), '|') FROM simhash_explain('北京地铁19号线今天开通，全长22公里。', '北京地铁19号线今日开通，全长22公里。')")" \
    "$(q enc_utf8 -c "SELECT string_agg(coalesce(feature, '') || coalesce(detail, ''), '|') FROM simhash_explain('北京地铁19号线今天开通，全长22公里。', '北京地铁19号线今日开通，全长22公里。')")"
expect "enc_latin1: simhash_explain() escapes a feature LATIN1 cannot hold" \
    "$(q enc_latin1 -c "SELECT feature FROM simhash_explain('5 µm', '5 mm', tokenizer => 'word') WHERE section = 'only_a'")" \
    '\u03bcm'

# Invalid UTF-8 in SQL_ASCII: every entry point raises 22021, none crashes.
for bytes in '\x61ff62' '\xeda080' '\xe4b8' '\xc0af' '\xf4908080'; do
    text="convert_from('$bytes'::bytea, 'SQL_ASCII')"
    expect "enc_sql_ascii: simhash() of bytes $bytes raises 22021" "$(sqlstate enc_sql_ascii "SELECT simhash($text)")" 22021
    expect "enc_sql_ascii: simhash_features() of bytes $bytes raises 22021" \
        "$(sqlstate enc_sql_ascii "SELECT * FROM simhash_features($text, tokenizer => 'char')")" 22021
done
expect "enc_sql_ascii: invalid bytes in an option raise 22021" \
    "$(sqlstate enc_sql_ascii "SELECT simhash('abc', tokenizer => convert_from('\\x6368ff'::bytea, 'SQL_ASCII'))")" 22021
expect_contains "enc_sql_ascii: the error names the bad byte" \
    "$(error_text enc_sql_ascii "SELECT simhash(convert_from('\\x61ff62'::bytea, 'SQL_ASCII'))")" \
    'invalid byte sequence for encoding "UTF8": 0xff'
expect "enc_sql_ascii: the backend survives" "$(q enc_sql_ascii -c "SELECT simhash('ok', tokenizer => 'char') IS NOT NULL")" t

# Option errors stay readable: LATIN1 gets ASCII escapes for what it could not show otherwise.
expect "enc_latin1: bad option raises 22023" "$(sqlstate enc_latin1 "SELECT simhash('x', tokenizer => 'chär')")" 22023
expect_match "enc_latin1: the message escapes non-ASCII characters" \
    "$(error_text enc_latin1 "SELECT simhash('x', tokenizer => 'chär')")" "'ch\\\\u00e4r'"
expect_match "enc_utf8: the message shows them as they are" \
    "$(error_text enc_utf8 "SELECT simhash('x', tokenizer => 'chär')")" "'chär'"

# The duplicate trigger with non-ASCII keys and key names, in each encoding.
trigger_test() { # DB KEY_COLUMN KEY1 KEY2 TEXT
    local db=$1 keycol=$2 k1=$3 k2=$4 text=$5 want_detail
    q "$db" >/dev/null <<SQL
CREATE TABLE docs ("$keycol" text PRIMARY KEY, body text);
INSERT INTO docs VALUES ('$k1', \$t\$$text\$t\$);
SELECT simhash_attach('docs', 'body', on_duplicate => 'error');
CREATE TABLE flagged ("$keycol" text PRIMARY KEY, body text);
SELECT simhash_attach('flagged', 'body', on_duplicate => 'flag');
INSERT INTO flagged VALUES ('$k1', \$t\$$text\$t\$), ('$k2', \$t\$$text!\$t\$);
SQL
    expect "$db: a near-duplicate insert raises 23505" \
        "$(sqlstate "$db" "INSERT INTO docs VALUES ('$k2', \$t\$$text!\$t\$)")" 23505
    want_detail="DETAIL:  Key (\"$keycol\")=($k1) is at Hamming distance 0 (max_distance 7) and has similarity"
    expect_contains "$db: DETAIL names the non-ASCII key in the client's encoding" \
        "$(error_text "$db" "INSERT INTO docs VALUES ('$k2', \$t\$$text!\$t\$)")" "$want_detail"
    expect "$db: flag mode stores the non-ASCII key" \
        "$(q "$db" -c "SELECT body_duplicate_of FROM flagged WHERE \"$keycol\" = '$k2'")" "$k1"
    expect "$db: simhash_pairs names both non-ASCII keys" \
        "$(q "$db" -c "SELECT count(*) FROM simhash_pairs('flagged') WHERE ARRAY[key_a, key_b] @> ARRAY['$k1', '$k2']")" 1
    expect "$db: the stored fingerprint is UTF8's" \
        "$(q "$db" -c "SELECT body_simhash FROM docs")" "$(q enc_utf8 -c "SELECT simhash(\$t\$$text\$t\$)")"
    expect "$db: lookup by text finds the row" \
        "$(q "$db" -c "SELECT (n.item).\"$keycol\" FROM simhash_near_duplicates(NULL::docs, \$t\$$text\$t\$) n")" "$k1"
    q "$db" -c "SELECT simhash_detach('docs'); SELECT simhash_detach('flagged'); DROP TABLE docs, flagged" >/dev/null
}
trigger_test enc_latin1 "clé" "crème" "brûlée" "${latin_texts[0]}"
trigger_test enc_euc_cn "编号" "文章一" "文章二" "${chinese_texts[1]}"
trigger_test enc_sql_ascii "clé" "文章一" "crème" "${chinese_texts[1]}"
trigger_test enc_utf8 "clé" "文章一" "crème" "${chinese_texts[1]}"

# Non-ASCII names of the table and of the text column: the trigger finds its columns and reports
# them in the server encoding.
for db in enc_latin1 enc_utf8; do
    q "$db" -c "CREATE TABLE \"Städte\" (id int PRIMARY KEY, \"résumé\" text);
                SELECT simhash_attach('\"Städte\"', 'résumé', on_duplicate => 'error');
                INSERT INTO \"Städte\" VALUES (1, 'Zürich und Genève')"  >/dev/null
    expect_contains "$db: non-ASCII table and column names in the message" \
        "$(error_text "$db" "INSERT INTO \"Städte\" VALUES (2, 'Zürich und Genève!')")" \
        'near-duplicate text in column "résumé" of relation "Städte"'
    # The text column named as an argument, in the server encoding (not UTF-8 in LATIN1).
    expect "$db: simhash_pairs(text_column => 'résumé') reads the column" \
        "$(q "$db" -c "SELECT count(*) FROM simhash_pairs('\"Städte\"', text_column => 'résumé')")" 0
    expect "$db: simhash_lookup_cost(text_column => 'résumé') finds the row" \
        "$(q "$db" -c "SELECT matches FROM simhash_lookup_cost('\"Städte\"', simhash('Zürich und Genève'), text_column => 'résumé')")" 1
    q "$db" -c 'DROP TABLE "Städte"'
done

# Invalid UTF-8 through the trigger in SQL_ASCII.
q enc_sql_ascii -c "CREATE TABLE t (id int PRIMARY KEY, body text); SELECT simhash_attach('t', 'body', on_duplicate => 'error')" >/dev/null
expect "enc_sql_ascii: the trigger raises 22021 on invalid UTF-8" \
    "$(sqlstate enc_sql_ascii "INSERT INTO t VALUES (1, convert_from('\\x61ff62'::bytea, 'SQL_ASCII'))")" 22021
expect "enc_sql_ascii: no row was written" "$(q enc_sql_ascii -c "SELECT count(*) FROM t")" 0

# A legacy SQL_ASCII database whose keys are LATIN1 bytes: the duplicate is still reported (23505),
# the key shown with U+FFFD for the bytes that are not UTF-8.
q enc_sql_ascii >/dev/null <<'SQL'
CREATE TABLE legacy (k text PRIMARY KEY, body text);
SELECT simhash_attach('legacy', 'body', on_duplicate => 'error');
INSERT INTO legacy VALUES (convert_from('\x6372e86d65'::bytea, 'SQL_ASCII'), 'The city council approved the budget.');
SQL
expect "enc_sql_ascii: a key that is not UTF-8 still gets 23505" \
    "$(sqlstate enc_sql_ascii "INSERT INTO legacy VALUES ('x', 'The city council approved the budget!')")" 23505
expect_contains "enc_sql_ascii: ... with the key shown lossily" \
    "$(error_text enc_sql_ascii "INSERT INTO legacy VALUES ('x', 'The city council approved the budget!')")" \
    "Key (k)=(cr�me)"
