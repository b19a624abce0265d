//! `#[pg_test]`s: the SQL surface inside a real backend (run by `cargo pgrx test`).

use pgrx::prelude::*;

#[pg_schema]
mod tests {
    use pgrx::prelude::*;

    fn fp(sql: &str) -> Option<i64> {
        Spi::get_one::<i64>(sql).expect("query failed")
    }

    fn int(sql: &str) -> i32 {
        Spi::get_one::<i32>(sql)
            .expect("query failed")
            .expect("NULL result")
    }

    #[pg_test]
    fn golden_vectors_through_sql() {
        let cases = [
            (
                "simhash('abc', tokenizer=>'char', stopwords=>false, weighting=>'tf')",
                Some(7359782673178083930),
            ),
            (
                "simhash('ＡＢＣ', tokenizer=>'char', stopwords=>false, weighting=>'tf')",
                Some(7359782673178083930),
            ),
            (
                "simhash('aab', tokenizer=>'char', stopwords=>false, weighting=>'tf')",
                Some(-9033471704281723301),
            ),
            (
                "simhash('Hello, World!', tokenizer=>'char', stopwords=>false, weighting=>'tf')",
                Some(4720314355354338905),
            ),
            (
                "simhash('我喜欢看电视，不喜欢看电影。', tokenizer=>'char', stopwords=>false, weighting=>'tf')",
                Some(-8300616725021068736),
            ),
            (
                "simhash('我喜欢看电视，不喜欢看电影。', tokenizer=>'char', shingle=>3, stopwords=>false, weighting=>'tf')",
                Some(-8534240120405747014),
            ),
            (
                "simhash('abcdef', tokenizer=>'char', shingle=>3, stopwords=>false, weighting=>'tf')",
                Some(4704172577261246261),
            ),
            ("simhash('!!!', tokenizer=>'char')", None),
            ("simhash('')", None),
        ];
        for (expr, want) in cases {
            assert_eq!(fp(&format!("SELECT {expr}")), want, "{expr}");
        }
    }

    #[pg_test]
    fn every_function_is_immutable_strict_parallel_safe() {
        let names = [
            "simhash",
            "simhash_features",
            "hamming",
            "simhash_bands",
            "simhash_band",
            "minhash",
            "minhash_similarity",
            "minhash_bands",
        ];
        let wrong = Spi::get_one::<i64>(
            "SELECT count(*) FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.deptype = 'e'
             JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'simhash_ext'
             WHERE p.prokind = 'f' AND NOT (p.provolatile = 'i' AND p.proisstrict AND p.proparallel = 's')
               AND p.proname = ANY(ARRAY['simhash','simhash_features','hamming','simhash_bands','simhash_band',
                                         'minhash','minhash_similarity','minhash_bands'])",
        );
        assert_eq!(wrong, Ok(Some(0)));
        for name in names {
            let n = Spi::get_one::<i64>(&format!("SELECT count(*) FROM pg_proc WHERE proname = '{name}'"));
            assert_eq!(n, Ok(Some(1)), "{name} should exist once");
        }
    }

    #[pg_test]
    fn strict_functions_return_null_for_null() {
        assert_eq!(fp("SELECT simhash(NULL)"), None);
        assert_eq!(fp("SELECT simhash('abc', NULL)"), None);
        assert_eq!(Spi::get_one::<i32>("SELECT hamming(NULL, 1)"), Ok(None));
        assert_eq!(Spi::get_one::<i32>("SELECT simhash_band(NULL, 0)"), Ok(None));
    }

    #[pg_test]
    fn hamming_and_bands() {
        assert_eq!(int("SELECT hamming(0, -1)"), 64);
        assert_eq!(int("SELECT hamming(5, 6)"), 2);
        assert_eq!(int("SELECT simhash_band(x'123456789abcdef0'::bigint, 3)"), 0x1234);
        let bands = Spi::get_one::<Vec<i32>>("SELECT simhash_bands(x'123456789abcdef0'::bigint)");
        assert_eq!(bands, Ok(Some(vec![0xdef0, 0x9abc, 0x5678, 0x1234])));
        assert_eq!(int("SELECT cardinality(simhash_bands(-1, 7))"), 7);
    }

    #[pg_test]
    fn features_explain_the_fingerprint() {
        // Summing ±weight per bit over simhash_features() must give simhash() back.
        let same = Spi::get_one::<bool>(
            "WITH f AS (SELECT * FROM simhash_features('今天天气很好，我们去公园散步。The weather is fine today.')),
                  bits AS (SELECT i, sum(CASE WHEN (hash >> i) & 1 = 1 THEN weight ELSE -weight END) > 0 AS one
                           FROM f, generate_series(0, 63) i GROUP BY i)
             SELECT (SELECT sum(CASE WHEN one THEN (1::numeric * 2 ^ i) ELSE 0 END) FROM bits)
                  = (SELECT CASE WHEN s < 0 THEN s::numeric + 2 ^ 64 ELSE s END
                     FROM simhash('今天天气很好，我们去公园散步。The weather is fine today.') s)",
        );
        assert_eq!(same, Ok(Some(true)));
    }

    #[pg_test]
    fn jieba_dictionary_loads_lazily_once_per_backend() {
        // Each pg_test runs in a new backend, after CREATE EXTENSION: nothing loaded yet.
        assert_eq!(simhash_core::tokenize::jieba_loads(), 0);
        fp("SELECT simhash('abc', tokenizer=>'char')");
        assert_eq!(
            simhash_core::tokenize::jieba_loads(),
            0,
            "the char tokenizer needs no dictionary"
        );
        fp("SELECT simhash('我们去北京')");
        assert_eq!(
            simhash_core::tokenize::jieba_loads(),
            0,
            "the default 'bigram' tokenizer needs none"
        );
        fp("SELECT simhash('我们去北京', tokenizer=>'jieba')");
        fp("SELECT simhash('他们来上海', tokenizer=>'jieba')");
        assert_eq!(simhash_core::tokenize::jieba_loads(), 1);
    }

    #[pg_test]
    fn small_edit_of_long_document_moves_few_bits() {
        let zh = include_str!("../tests/data/long_zh.txt");
        let en = include_str!("../tests/data/long_en.txt");
        let distance = |a: &str, b: &str, tok: &str| -> i32 {
            Spi::get_one_with_args::<i32>(
                "SELECT hamming(simhash($1, tokenizer=>$3), simhash($2, tokenizer=>$3))",
                &[a.into(), b.into(), tok.into()],
            )
            .expect("query failed")
            .expect("NULL distance")
        };
        for tok in ["jieba", "word"] {
            let zh_edit = zh.replacen("。", "，这是记者补充的一句话。", 1);
            let en_edit = en.replacen(". ", ", as our neighbour put it. ", 1);
            assert!(
                distance(zh, &zh_edit, tok) <= 3,
                "{tok}: Chinese edit moved too far"
            );
            assert!(
                distance(en, &en_edit, tok) <= 3,
                "{tok}: English edit moved too far"
            );
            let far = distance(zh, en, tok);
            assert!(
                (20..=44).contains(&far),
                "{tok}: unrelated documents only {far} bits apart"
            );
        }
    }

    #[pg_test(
        error = "invalid value for option \"tokenizer\": 'bpe'; allowed: 'jieba', 'word', 'char', 'bigram'"
    )]
    fn unknown_tokenizer_is_an_error() {
        fp("SELECT simhash('abc', tokenizer=>'bpe')");
    }

    #[pg_test(error = "invalid value for option \"shingle\": 0; allowed: an integer from 1 to 64")]
    fn zero_shingle_is_an_error() {
        fp("SELECT simhash('abc', shingle=>0)");
    }

    #[pg_test(error = "invalid value for option \"nbands\": 2; allowed: an integer from 3 to 64")]
    fn too_few_bands_is_an_error() {
        Spi::get_one::<Vec<i32>>("SELECT simhash_bands(1, 2)").ok();
    }

    #[pg_test(error = "invalid value for option \"band\": 4; allowed: an integer from 0 to 3 (nbands - 1)")]
    fn band_out_of_range_is_an_error() {
        int("SELECT simhash_band(1, 4)");
    }

    #[pg_test]
    fn trigger_fingerprints_once_per_row_write() {
        use crate::write::trigger::FINGERPRINTS_COMPUTED;
        use std::sync::atomic::Ordering;
        Spi::run("CREATE TABLE posts (id int PRIMARY KEY, body text, views int DEFAULT 0)").unwrap();
        Spi::run("SELECT simhash_attach('posts', 'body', on_duplicate => 'error')").unwrap();
        let before = FINGERPRINTS_COMPUTED.load(Ordering::Relaxed);
        Spi::run(
            "INSERT INTO posts (id, body) SELECT i, 'post number ' || i || ' about ' || md5(i::text) \
             FROM generate_series(1, 20) i",
        )
        .unwrap();
        assert_eq!(
            FINGERPRINTS_COMPUTED.load(Ordering::Relaxed) - before,
            20,
            "one per inserted row"
        );
        // The four band columns are generated from the stored fingerprint, not from the text.
        let band_exprs = Spi::get_one::<i64>(
            "SELECT count(*) FROM pg_attribute WHERE attrelid = 'posts'::regclass AND attgenerated = 's' \
             AND pg_get_expr((SELECT adbin FROM pg_attrdef WHERE adrelid = attrelid AND adnum = attnum), attrelid) \
                 LIKE 'simhash_band(body_simhash, %'",
        );
        assert_eq!(band_exprs, Ok(Some(4)));
        Spi::run("UPDATE posts SET views = views + 1").unwrap();
        assert_eq!(
            FINGERPRINTS_COMPUTED.load(Ordering::Relaxed) - before,
            20,
            "text unchanged: no work"
        );
        Spi::run("UPDATE posts SET body = body || ' (edited)' WHERE id <= 5").unwrap();
        assert_eq!(FINGERPRINTS_COMPUTED.load(Ordering::Relaxed) - before, 25);
        let consistent = Spi::get_one::<bool>("SELECT bool_and(body_simhash = simhash(body, a.tokenizer, a.shingle, a.weighting, a.stopwords)) \
             FROM posts, simhash_attachments() a WHERE a.table_name = 'posts'::regclass");
        assert_eq!(consistent, Ok(Some(true)));
    }

    #[pg_test]
    fn leaf_lists_serve_probes_and_agree_with_index_scans() {
        use crate::storage::leafmap::SERVED;
        use std::sync::atomic::Ordering;
        let text = [
            include_str!("../tests/data/long_en.txt"),
            include_str!("../tests/data/long_zh.txt"),
        ]
        .concat();
        let sentences: Vec<String> = text
            .split(['.', '。', '\n'])
            .map(str::trim)
            .filter(|s| s.chars().count() > 15)
            .map(String::from)
            .collect();
        assert!(sentences.len() > 80, "{} sentences", sentences.len());
        Spi::run_with_args(
            "CREATE TABLE docs AS SELECT i AS id, $1[1 + (i * 7) % m] || ' ' || $1[1 + (i * 13 + 5) % m] || ' ' || $1[1 + (i / 29) % m] AS body \
             FROM generate_series(1, 8000) i, (SELECT cardinality($1) AS m) c",
            &[sentences.into()],
        )
        .unwrap();
        Spi::run("SELECT simhash_attach('docs', 'body', max_distance => 8)").unwrap();
        // Texts without features: NULL bands, which the band indexes keep after every value.
        Spi::run("INSERT INTO docs SELECT 100000 + i, CASE WHEN i % 2 = 0 THEN '' END FROM generate_series(1, 3000) i")
            .unwrap();
        // One transaction (a #[pg_test] runs in one): the lists read for the first lookups stay
        // valid while more rows go in and split leaves.
        let lookups = "SELECT count(*) FROM docs d, simhash_near_duplicates(NULL::docs, d.body_simhash # 3, max_distance => 6) n \
                       WHERE d.id % 40 = 1";
        let count = |sql: &str| Spi::get_one::<i64>(sql).unwrap().unwrap();
        let before = SERVED.load(Ordering::Relaxed);
        let first = count(lookups);
        assert!(
            SERVED.load(Ordering::Relaxed) - before > 600,
            "lists served the probes"
        );
        Spi::run("INSERT INTO docs SELECT id + 8000, body || ' ' || id FROM docs WHERE id < 100000").unwrap();
        let with_lists = count(lookups);
        assert!(with_lists > first, "the new rows are found too");
        Spi::run("SET LOCAL simhash.leaf_map = off").unwrap();
        let served = SERVED.load(Ordering::Relaxed);
        let with_scans = count(lookups);
        assert_eq!(SERVED.load(Ordering::Relaxed), served, "off: index scans only");
        assert_eq!(with_lists, with_scans);
        let brute = count(
            "SELECT count(*) FROM docs d JOIN docs e ON hamming(e.body_simhash, d.body_simhash # 3) <= 6 WHERE d.id % 40 = 1",
        );
        assert_eq!(with_lists, brute);
    }

    #[pg_test]
    fn stale_leaf_lists_are_checked_where_they_are_used() {
        use crate::storage::leafmap::{scramble_list, STALE_REREADS};
        use std::sync::atomic::Ordering;
        Spi::run(
            "CREATE TABLE docs AS SELECT i AS id, concat_ws(' ', md5(i::text), md5((i * 31)::text), md5((i / 3)::text), \
             md5((i / 7)::text), md5((i * 41)::text)) AS body FROM generate_series(1, 20000) i",
        )
        .unwrap();
        Spi::run("SELECT simhash_attach('docs', 'body', max_distance => 8)").unwrap();
        let lookups = "SELECT count(*) FROM docs d, simhash_near_duplicates(NULL::docs, d.body_simhash # 5, max_distance => 8) n \
                       WHERE d.id % 50 = 1";
        let count = |sql: &str| Spi::get_one::<i64>(sql).unwrap().unwrap();
        let brute = count(
            "SELECT count(*) FROM docs d JOIN docs e ON hamming(e.body_simhash, d.body_simhash # 5) <= 8 WHERE d.id % 50 = 1",
        );
        assert_eq!(count(lookups), brute, "lists read");
        let indexes: Vec<pg_sys::Oid> = Spi::connect(|client| {
            client
                .select(
                    "SELECT indexrelid FROM pg_index WHERE indrelid = 'docs'::regclass",
                    None,
                    &[],
                )
                .unwrap()
                .map(|row| row.get::<pg_sys::Oid>(1).unwrap().unwrap())
                .collect()
        });
        // Each listed block now names another leaf, as if deleted and reused there since (a list
        // kept from an older xmin): the lookups find the same rows, reading the lists again.
        for shift in [1, 37] {
            let scrambled: usize = indexes.iter().map(|&oid| scramble_list(oid, shift)).sum();
            assert!(scrambled > 40, "{scrambled} leaves listed");
            let rereads = STALE_REREADS.load(Ordering::Relaxed);
            assert_eq!(count(lookups), brute, "shift {shift}");
            assert!(
                STALE_REREADS.load(Ordering::Relaxed) > rereads,
                "stale lists were read again"
            );
        }
    }

    #[pg_test]
    fn error_mode_checks_bulk_inserts_once_per_statement() {
        use crate::write::deferred::BATCHED;
        use std::sync::atomic::Ordering;
        Spi::run("CREATE TABLE feed (id int PRIMARY KEY, body text)").unwrap();
        // An attachment that does not verify: one that does checks each row before it is written.
        Spi::run("SELECT simhash_attach('feed', 'body', on_duplicate => 'error', verify => false)").unwrap();
        // Unrelated texts (six random words each).
        let rows = "INSERT INTO feed SELECT i, concat_ws(' ', md5(i::text), md5((i * 31)::text), md5((i * 37)::text), \
                    md5((i * 41)::text), md5((i * 43)::text), md5((i * 47)::text)) FROM generate_series(1, 3000) i";
        let before = BATCHED.load(Ordering::Relaxed);
        Spi::run(rows).unwrap();
        assert_eq!(
            BATCHED.load(Ordering::Relaxed) - before,
            3000,
            "the statement's rows were checked together, in one pass"
        );
        // With leaf_map off the rows are searched one by one.
        Spi::run("SET LOCAL simhash.leaf_map = off").unwrap();
        let before = BATCHED.load(Ordering::Relaxed);
        Spi::run(
            "INSERT INTO feed SELECT 5000 + i, 'more ' || md5((i * 7)::text) FROM generate_series(1, 10) i",
        )
        .unwrap();
        assert_eq!(
            BATCHED.load(Ordering::Relaxed),
            before,
            "leaf_map off: searched row by row"
        );
        assert_eq!(Spi::get_one::<i64>("SELECT count(*) FROM feed"), Ok(Some(3010)));
    }

    #[pg_test]
    fn trigger_arguments_round_trip() {
        let args = Spi::get_one::<Vec<String>>(
            "SELECT simhash_internal.trigger_args(convert_to('body', 'UTF8') || '\\x00'::bytea || convert_to('4', 'UTF8') \
             || '\\x00'::bytea || convert_to('新闻', 'UTF8') || '\\x00'::bytea)",
        );
        assert_eq!(args, Ok(Some(vec!["body".into(), "4".into(), "新闻".into()])));
        let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let att = crate::attachment::Attachment::from_args(&strings(&[
            "body", "4", "3", "flag", "word", "2", "binary", "false",
        ]))
        .expect("valid arguments");
        let sim = *att.simhash().expect("a SimHash attachment");
        assert_eq!(
            (sim.nbands, sim.max_distance, att.mode),
            (4, 3, crate::attachment::Mode::Flag)
        );
        assert!(!sim.options.stopwords);
        assert_eq!(att.fingerprint_column(), "body_simhash");
        assert_eq!(
            sim.options.fold,
            simhash_core::options::Fold::None,
            "8 arguments: fold 'auto'"
        );
        let folded = crate::attachment::Attachment::from_args(&strings(&[
            "body", "4", "7", "error", "bigram", "1", "logtf", "true", "auto",
        ]))
        .expect("valid arguments of 0.3.0");
        assert_eq!(
            folded.simhash().map(|s| s.options.fold),
            Some(simhash_core::options::Fold::Simplified)
        );
        assert!(crate::attachment::Attachment::from_args(&strings(&[
            "body", "4", "7", "error", "bigram", "1", "logtf", "true", "sideways",
        ]))
        .is_none());
        assert!(crate::attachment::Attachment::from_args(&strings(&["body", "2", "3", "flag"])).is_none());
        assert!(crate::attachment::Attachment::from_args(&strings(&[
            "body", "4", "3", "reject", "jieba", "1", "tf", "true"
        ]))
        .is_none());
    }

    #[pg_test]
    fn lock_keys_are_k_plus_one_parts() {
        // k = 3: four 16-bit parts, each value modulo 256.
        let keys = simhash_core::probe::lock_keys(0x1234_5678_9abc_def0, 3);
        assert_eq!(
            keys,
            vec![0xf0, (1 << 8) | 0xbc, (2 << 8) | 0x78, (3 << 8) | 0x34]
        );
        // k = 7: eight 8-bit parts.
        assert_eq!(
            simhash_core::probe::lock_keys(0x0102_0304_0506_0708, 7),
            (0..8u32).map(|p| (p << 8) | (8 - p)).collect::<Vec<_>>()
        );
        assert!(simhash_core::probe::lock_keys(u64::MAX, 63)
            .iter()
            .all(|&k| k < 64 << 8));
    }

    #[pg_test]
    fn attachment_contract() {
        use crate::attachment::{split_quoted, unquote, Attachment, Mode, RowKey};
        for mode in [Mode::None, Mode::Error, Mode::Skip, Mode::Flag] {
            assert_eq!(Mode::parse(mode.name()), Some(mode));
        }
        assert_eq!(Mode::parse("reject"), None);
        let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        // Stored distances up to 63 (0.1.0 and 0.2.0 attached them) decode; 64 does not.
        let stored = |k: &str| {
            Attachment::from_args(&strings(&[
                "body", "64", k, "none", "bigram", "1", "logtf", "true",
            ]))
        };
        assert_eq!(
            stored("63").and_then(|a| a.simhash().map(|s| s.max_distance)),
            Some(63)
        );
        assert!(stored("64").is_none());
        let att = Attachment::from_args(&strings(&[
            "body", "4", "7", "error", "bigram", "1", "logtf", "true", "auto", "", "registry",
        ]))
        .expect("a registry attachment");
        assert!(att.registry && att.scope_column.is_none());
        assert_eq!(
            (
                att.band_column(3),
                att.flag_column(),
                att.registered_column(),
                att.checked_view("t")
            ),
            (
                "body_band3".into(),
                "body_duplicate_of".into(),
                "body_registered".into(),
                "t_body_checked".into()
            )
        );
        assert_eq!(split_quoted("a, \"b, c\", d"), ["a", "\"b, c\"", "d"]);
        let key = RowKey::Columns(vec!["site".into(), "id".into()]);
        assert_eq!(key.names(), "site, id");
        assert_eq!(key.message_sql("t"), "pg_catalog.concat_ws(', ', t.site, t.id)");
        assert_eq!(key.value_sql("t"), "ROW(t.site, t.id)::pg_catalog.text");
        let ctid = RowKey::Ctid { partitioned: true };
        assert_eq!(ctid.names(), "tableoid, ctid");
        assert_eq!(
            ctid.value_sql("t"),
            "ROW(t.tableoid::pg_catalog.regclass, t.ctid)::pg_catalog.text"
        );
        assert_eq!(unquote("\"a \"\"b\"\"\""), "a \"b\"");
    }

    #[pg_test(error = "invalid value for option \"max_distance\": 17; allowed: an integer from 0 to 16")]
    fn registry_buckets_take_the_attachment_limit() {
        Spi::run("SELECT * FROM simhash_registry_buckets(0, 17)").unwrap();
    }

    #[pg_test]
    fn errors_carry_no_rust_backtrace() {
        // pgrx would append a captured backtrace to the DETAIL of errors it re-raises.
        Spi::run("SELECT simhash_probes(0, 3)").unwrap();
        assert_eq!(std::env::var("RUST_LIB_BACKTRACE").as_deref(), Ok("0"));
        assert_ne!(
            std::backtrace::Backtrace::capture().status(),
            std::backtrace::BacktraceStatus::Captured
        );
    }

    #[pg_test]
    fn sql_and_rust_decode_the_same_attachment() {
        // SQL reads an attachment through simhash_internal.attachment() (decode_attachment), the
        // trigger through Attachment::from_trigger: the same decoder, the same names.
        Spi::run("CREATE TABLE att_pair (id int PRIMARY KEY, body text, site int)").unwrap();
        Spi::run(
            "SELECT simhash_attach('att_pair', 'body', max_distance => 5, on_duplicate => 'flag', \
             tokenizer => 'word', shingle => 2, weighting => 'tf', stopwords => false, fold => 'none', scope => 'site')",
        )
        .unwrap();
        let row = "SELECT concat_ws('|', a.fingerprint_column, array_to_string(a.band_columns, ','), a.max_distance, \
                   a.on_duplicate, a.flag_column, a.scope_column, a.registry::text) \
                   FROM simhash_attachments() a WHERE a.table_name = 'att_pair'::regclass";
        let sql = Spi::get_one::<String>(row).unwrap().expect("one attachment");
        let namespace = Spi::get_one::<pg_sys::Oid>(
            "SELECT extnamespace FROM pg_extension WHERE extname = 'simhash_ext'",
        )
        .unwrap()
        .expect("the extension's schema");
        let relid = Spi::get_one::<pg_sys::Oid>("SELECT 'att_pair'::regclass::oid")
            .unwrap()
            .expect("the table");
        let att = unsafe {
            let heap = pg_sys::relation_open(relid, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
            let att = crate::attachment::find(heap, Some("body"), namespace);
            pg_sys::relation_close(heap, pg_sys::NoLock as pg_sys::LOCKMODE);
            att
        };
        let sim = *att.simhash().expect("a SimHash attachment");
        let bands: Vec<String> = (0..sim.nbands).map(|b| att.band_column(b)).collect();
        let rust = [
            att.fingerprint_column(),
            bands.join(","),
            sim.max_distance.to_string(),
            att.mode.name().to_string(),
            att.flag_column(),
            att.scope_column.clone().unwrap_or_default(),
            att.registry.to_string(),
        ]
        .join("|");
        assert_eq!(sql, rust);
        assert_eq!(
            att.derived_columns().len(),
            6,
            "fingerprint, four bands and the flag column"
        );
    }

    #[pg_test]
    fn attachment_encoder_and_decoder_agree() {
        // Every setting survives encode -> tgargs -> decode, for each kind of attachment.
        for (call, expected) in [
            (
                "'body', 'simhash', 5, NULL, 'flag', 'word', 2, 'tf', false, 'none', 'site', false, 0, false",
                "body|body_simhash|body_band0,body_band1,body_band2,body_band3|5|flag|body_duplicate_of|word|2|tf|f|none|site|f|0|simhash||f",
            ),
            (
                "'текст', NULL, 16, NULL, 'error', 'bigram', 1, 'logtf', true, 'auto', NULL, true, 300, false",
                "текст|текст_simhash|текст_band0,текст_band1,текст_band2,текст_band3|16|error||bigram|1|logtf|t|auto||t|300|simhash||f",
            ),
            (
                "'b', 'simhash', 0, NULL, 'none', 'jieba', 1, 'tfidf', true, 'simplified', NULL, false, 0, false",
                "b|b_simhash|b_band0,b_band1,b_band2,b_band3|0|none||jieba|1|tfidf|t|simplified||f|0|simhash||f",
            ),
            // NULL options and max_distance: the method's defaults.
            (
                "'b', 'simhash', NULL, NULL, 'skip', NULL, NULL, NULL, NULL, NULL, 'site', false, 200, false",
                "b|b_simhash|b_band0,b_band1,b_band2,b_band3|7|skip||bigram|1|logtf|t|auto|site|f|200|simhash||f",
            ),
            // MinHash: its own columns and defaults, no distance or weighting, the threshold.
            (
                "'b', 'minhash', NULL, NULL, 'flag', NULL, NULL, NULL, NULL, NULL, NULL, false, 0, false",
                "b|b_minhash|b_lsh||flag|b_duplicate_of|word|0||f|auto||f|0|minhash|0.5|f",
            ),
            (
                "'текст', 'minhash', NULL, 0.75, 'error', 'char', 3, NULL, true, 'none', 'site', false, 40, false",
                "текст|текст_minhash|текст_lsh||error||char|3||t|none|site|f|40|minhash|0.75|f",
            ),
            // Verification (0.11.0): by default, except with a registry; SimHash's threshold shown
            // when it verifies.
            (
                "'body', 'simhash', NULL, NULL, 'error', NULL, NULL, NULL, NULL, NULL, NULL, false, 0, NULL",
                "body|body_simhash|body_band0,body_band1,body_band2,body_band3|7|error||bigram|1|logtf|t|auto||f|0|simhash|0.4|t",
            ),
            (
                "'body', 'simhash', 5, 0.6, 'skip', NULL, NULL, NULL, NULL, NULL, 'site', false, 20, true",
                "body|body_simhash|body_band0,body_band1,body_band2,body_band3|5|skip||bigram|1|logtf|t|auto|site|f|20|simhash|0.6|t",
            ),
            (
                "'b', 'minhash', NULL, 0.6, 'skip', NULL, NULL, NULL, NULL, NULL, NULL, false, 0, NULL",
                "b|b_minhash|b_lsh||skip||word|0||f|auto||f|0|minhash|0.6|t",
            ),
            (
                "'b', 'simhash', NULL, NULL, 'error', NULL, NULL, NULL, NULL, NULL, NULL, true, 0, NULL",
                "b|b_simhash|b_band0,b_band1,b_band2,b_band3|7|error||bigram|1|logtf|t|auto||t|0|simhash||f",
            ),
        ] {
            let decoded = Spi::get_one::<String>(&format!(
                "SELECT concat_ws('|', d.text_column, d.fingerprint_column, array_to_string(d.band_columns, ','), \
                 coalesce(d.max_distance::text, ''), d.on_duplicate, coalesce(d.flag_column, ''), d.tokenizer, d.shingle, \
                 coalesce(d.weighting, ''), d.stopwords, d.fold, coalesce(d.scope_column, ''), d.registry, d.min_length, \
                 d.method, coalesce(d.threshold::text, ''), d.verify) \
                 FROM simhash_internal.decode_attachment(simhash_internal.encode_attachment({call})) d"
            ));
            assert_eq!(decoded, Ok(Some(expected.to_string())), "{call}");
        }
        // A MinHash attachment's arguments round-trip, and name the method and threshold last.
        let args: Vec<String> = [
            "body",
            "4",
            "0",
            "skip",
            "word",
            "0",
            "",
            "false",
            "auto",
            "site",
            "",
            "0",
            "minhash:128:32:4",
            "0.6",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let att = crate::attachment::Attachment::from_args(&args).expect("valid arguments");
        assert_eq!(
            att.minhash().map(|m| (m.threshold, m.lsh.bands, m.lsh.rows)),
            Some((0.6, 32, 4))
        );
        assert_eq!(att.to_args(), args);
        // A verifying SimHash attachment's arguments round-trip, with the method, threshold and
        // 'verify' last; with a registry too (decoded as recorded).
        for registry in ["", "registry"] {
            let args: Vec<String> = [
                "body", "4", "7", "error", "bigram", "1", "logtf", "true", "auto", "", registry, "0",
                "simhash", "0.4", "verify",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect();
            let att = crate::attachment::Attachment::from_args(&args).expect("valid arguments");
            assert!(att.verify);
            assert_eq!(att.simhash().map(|s| s.threshold), Some(0.4));
            assert_eq!(att.to_args(), args);
        }
        // A method argument that is not one decodes to no attachment.
        let mut bad = args.clone();
        bad[12] = "minhash:128:64:4".into();
        assert!(crate::attachment::Attachment::from_args(&bad).is_none());
        // Arguments that are not a simhash_trigger()'s decode to no attachment.
        assert_eq!(
            Spi::get_one::<i64>(
                "SELECT count(*) FROM simhash_internal.decode_attachment('\\x626f647900'::bytea)"
            ),
            Ok(Some(0))
        );
        // to_args is the inverse of from_args for the arguments 0.3.0 wrote.
        let args: Vec<String> = [
            "body", "4", "7", "skip", "bigram", "1", "logtf", "true", "auto", "", "registry",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let att = crate::attachment::Attachment::from_args(&args).expect("valid arguments");
        assert_eq!(att.to_args(), args);
        // min_length is the twelfth argument, after a scope ('' for none) and '' for no registry.
        let args: Vec<String> = [
            "body", "4", "7", "error", "bigram", "1", "logtf", "true", "auto", "", "", "300",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let att = crate::attachment::Attachment::from_args(&args).expect("valid arguments");
        assert_eq!(
            (att.min_length, att.registry, att.scope_column.is_none()),
            (300, false, true)
        );
        assert_eq!(att.to_args(), args);
        assert!(att.is_short(&"字".repeat(299)) && !att.is_short(&"字".repeat(300)));
    }

    #[pg_test]
    fn minhash_through_sql_equals_the_core() {
        use simhash_core::minhash::{self, Lsh, MinHashOptions};
        let texts = [
            "The quick brown fox jumps over the lazy dog, and the dog sleeps.",
            "我喜欢看电视，不喜欢看电影。",
            "北京地铁19号线今天开通，line 19 opens today.",
            "第十屆春茶節在龍井村開幕。",
        ];
        for text in texts {
            let quoted = text.replace('\'', "''");
            let core = minhash::minhash(text, &MinHashOptions::default()).expect("tokens");
            let sql = Spi::get_one::<Vec<u8>>(&format!("SELECT minhash('{quoted}')"));
            assert_eq!(sql, Ok(Some(core.encode())), "{text}");
            let keys = Spi::get_one::<Vec<i64>>(&format!("SELECT minhash_bands(minhash('{quoted}'))"));
            assert_eq!(
                keys,
                Ok(Some(minhash::band_keys(&core, &Lsh::default()).unwrap())),
                "{text}"
            );
            let k16 = MinHashOptions::parse("bigram", 2, true, "none", 16).unwrap();
            let sql16 = Spi::get_one::<Vec<u8>>(&format!(
                "SELECT minhash('{quoted}', 'bigram', 2, true, 'none', 16)"
            ));
            assert_eq!(
                sql16,
                Ok(Some(minhash::minhash(text, &k16).unwrap().encode())),
                "{text}"
            );
        }
        assert_eq!(Spi::get_one::<Vec<u8>>("SELECT minhash('。。 ！')"), Ok(None));
        assert_eq!(
            Spi::get_one::<f64>("SELECT minhash_similarity(minhash('a b c d'), minhash('a b c d'))"),
            Ok(Some(1.0))
        );
    }
}
