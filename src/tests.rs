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
                "simhash('abc', tokenizer=>'char', stopwords=>false)",
                Some(7359782673178083930),
            ),
            (
                "simhash('ＡＢＣ', tokenizer=>'char', stopwords=>false)",
                Some(7359782673178083930),
            ),
            (
                "simhash('aab', tokenizer=>'char', stopwords=>false)",
                Some(-9033471704281723301),
            ),
            (
                "simhash('Hello, World!', tokenizer=>'char', stopwords=>false)",
                Some(4720314355354338905),
            ),
            (
                "simhash('我喜欢看电视，不喜欢看电影。', tokenizer=>'char', stopwords=>false)",
                Some(-8300616725021068736),
            ),
            (
                "simhash('我喜欢看电视，不喜欢看电影。', tokenizer=>'char', shingle=>3, stopwords=>false)",
                Some(-8534240120405747014),
            ),
            (
                "simhash('abcdef', tokenizer=>'char', shingle=>3, stopwords=>false)",
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
        ];
        let wrong = Spi::get_one::<i64>(
            "SELECT count(*) FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.deptype = 'e'
             JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'simhash_ext'
             WHERE p.prokind = 'f' AND NOT (p.provolatile = 'i' AND p.proisstrict AND p.proparallel = 's')
               AND p.proname = ANY(ARRAY['simhash','simhash_features','hamming','simhash_bands','simhash_band'])",
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
        fp("SELECT simhash('他们来上海')");
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

    #[pg_test(error = "invalid value for option \"tokenizer\": 'bpe'; allowed: 'jieba', 'word', 'char'")]
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
}
