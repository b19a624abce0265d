//! The public fingerprint functions, and the one place that decides how a fingerprint is computed:
//! by the fast path ([`crate::fast`]) where it supports the options, otherwise by the reference
//! pipeline ([`crate::reference`]). Both give the same fingerprints, bit for bit; the golden
//! vectors in the tests below pin them.

use std::sync::OnceLock;

use crate::error::OutOfMemory;
use crate::fast;
use crate::normalize::Chunking;
use crate::options::{Fold, Options, Tokenizer, Weighting};
use crate::reference::reference_try_fingerprint_with;

/// The fingerprint of `text`, or `None` when it has no features (step 9).
pub fn fingerprint(text: &str, options: &Options) -> Option<u64> {
    fingerprint_with(text, options, Chunking::default(), &mut || {})
}

/// [`fingerprint`] with explicit chunking and an interrupt check run between chunks. An allocation
/// failure aborts, as it does anywhere in the standard library; see [`try_fingerprint_with`].
pub fn fingerprint_with(
    text: &str,
    options: &Options,
    chunking: Chunking,
    interrupt: &mut dyn FnMut(),
) -> Option<u64> {
    try_fingerprint_with(text, options, chunking, interrupt).unwrap_or_else(|e| e.abort())
}

/// [`fingerprint_with`] that reports a failure to allocate the collections growing with the number of
/// distinct features (`'binary'` and `'tfidf'` weighting; `'tf'` needs none) instead of aborting.
///
/// Runs the fast path ([`crate::fast`]) when it supports the options ([`fast_path_supports`]),
/// otherwise the reference pipeline [`reference_try_fingerprint_with`]; both give the same
/// fingerprints.
pub fn try_fingerprint_with(
    text: &str,
    options: &Options,
    chunking: Chunking,
    interrupt: &mut dyn FnMut(),
) -> Result<Option<u64>, OutOfMemory> {
    if fast_path_supports(options) {
        fast::try_fingerprint(text, options, chunking, interrupt)
    } else {
        reference_try_fingerprint_with(text, options, chunking, interrupt)
    }
}

/// The fast path alone, as [`try_fingerprint_with`] runs it; `None` when [`fast_path_supports`]
/// says no. The differential test compares it with [`reference_try_fingerprint_with`].
pub fn try_fingerprint_fast(
    text: &str,
    options: &Options,
    chunking: Chunking,
    interrupt: &mut dyn FnMut(),
) -> Option<Result<Option<u64>, OutOfMemory>> {
    fast_path_supports(options).then(|| fast::try_fingerprint(text, options, chunking, interrupt))
}

/// The hash of every feature of `text`, in order and with repeats, by the fast path (`None` when
/// [`fast_path_supports`] says no, or memory ran low): compared with
/// [`crate::reference::reference_feature_hashes`] by the differential test.
pub fn fast_feature_hashes(text: &str, options: &Options, chunking: Chunking) -> Option<Vec<u64>> {
    if !fast_path_supports(options) {
        return None;
    }
    fast::feature_hashes(text, options, chunking).ok()
}

/// Whether [`try_fingerprint_fast`] handles these options. It matches explicitly on the values it
/// knows, so that a tokenizer or weighting added later takes the reference path until someone
/// extends the fast path (and its differential test). A field added to [`Options`] later does the
/// same: [`options_fields_known`] sees it and turns the fast path off altogether.
pub fn fast_path_supports(options: &Options) -> bool {
    let tokenizer = matches!(
        options.tokenizer,
        Tokenizer::Word | Tokenizer::Char | Tokenizer::Jieba | Tokenizer::Bigram
    );
    let weighting = match options.weighting {
        Weighting::Tf | Weighting::Binary | Weighting::LogTf | Weighting::LogTfEdge => true,
        // The reference looks up the IDF of the joined shingle text; only single tokens here.
        Weighting::TfIdf | Weighting::LogTfIdf => options.shingle == 1,
        #[allow(unreachable_patterns)]
        _ => false,
    };
    let fold = matches!(options.fold, Fold::None | Fold::Simplified);
    tokenizer && weighting && fold && options.shingle >= 1 && options_fields_known()
}

/// The fields of [`Options`] this fast path was written for. `Debug` names every field, so a field
/// added later (say, a folding flag) is noticed here without any edit to this file, and every call
/// then takes the reference path: slower, never wrong.
const KNOWN_FIELDS: [&str; 5] = ["tokenizer", "shingle", "weighting", "stopwords", "fold"];

pub fn options_fields_known() -> bool {
    static KNOWN: OnceLock<bool> = OnceLock::new();
    *KNOWN.get_or_init(|| {
        let shown = format!("{:?}", Options::default());
        let Some(inner) = shown.strip_prefix("Options {").and_then(|s| s.strip_suffix('}')) else {
            return false;
        };
        let names: Vec<&str> = inner
            .split(',')
            .filter_map(|field| field.split(':').next())
            .map(str::trim)
            .filter(|name| !name.is_empty())
            .collect();
        names == KNOWN_FIELDS
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bands::hamming;
    use crate::features::features;
    use crate::idf::IdfTable;
    use crate::reference::accumulate;
    use crate::weight::{edge_factor, EDGE_FLOOR, EDGE_SPAN};
    use proptest::prelude::*;

    /// The defaults of 0.2.0, spelled out: the golden vectors (docs/ARCHITECTURE.md §3.3) were taken with them, and
    /// a change of `Options::default()` must not move them.
    fn v1() -> Options {
        Options {
            tokenizer: Tokenizer::Word,
            shingle: 1,
            weighting: Weighting::Tf,
            stopwords: false,
            fold: Fold::None,
        }
    }

    fn char_opts(shingle: usize) -> Options {
        Options {
            tokenizer: Tokenizer::Char,
            shingle,
            stopwords: false,
            ..v1()
        }
    }

    fn signed(fp: Option<u64>) -> Option<i64> {
        fp.map(|v| v as i64)
    }

    #[test]
    fn accumulate_golden_vector() {
        assert_eq!(accumulate([(0b100101, 4.0), (0b101011, 5.0)]), 43);
    }

    #[test]
    fn spec_golden_fingerprints() {
        let c1 = char_opts(1);
        let c3 = char_opts(3);
        let cases: [(&str, &Options, i64); 7] = [
            ("abc", &c1, 7359782673178083930),
            ("ＡＢＣ", &c1, 7359782673178083930),
            ("aab", &c1, -9033471704281723301),
            ("Hello, World!", &c1, 4720314355354338905),
            ("我喜欢看电视，不喜欢看电影。", &c1, -8300616725021068736),
            ("我喜欢看电视，不喜欢看电影。", &c3, -8534240120405747014),
            ("abcdef", &c3, 4704172577261246261),
        ];
        for (text, opts, want) in cases {
            assert_eq!(signed(fingerprint(text, opts)), Some(want), "{text:?} {opts:?}");
        }
    }

    /// Golden vectors of the option values added by algorithm v2 (0.3.0). A change to any of these
    /// breaks stored fingerprints: only a new option value may bring a new result.
    #[test]
    fn v2_golden_fingerprints() {
        let opts = |spec: &str| {
            let p: Vec<&str> = spec.split(':').collect();
            Options::parse_with_fold(p[0], p[1].parse().unwrap(), p[2], p[3] == "true", p[4]).unwrap()
        };
        let fox = "The quick brown fox jumps over the lazy dog, and the dog sleeps.";
        let tea_trad = "第十屆春茶節在龍井村開幕。";
        let tea_simp = "第十届春茶节在龙井村开幕。";
        let cases: [(&str, &str, i64); 14] = [
            ("abc", "word:1:logtf:false:none", 3741276987793851837),
            (
                "我喜欢看电视，不喜欢看电影。",
                "word:1:logtf:true:simplified",
                -8228559130983144955,
            ),
            (
                "我喜欢看电视，不喜欢看电影。",
                "char:3:logtf:false:none",
                -8534240120405747014,
            ),
            (
                "我喜欢看电视，不喜欢看电影。",
                "word:1:logtfidf:false:none",
                -8300581540447653312,
            ),
            (
                "我喜欢看电视，不喜欢看电影。",
                "jieba:1:logtfidf:true:simplified",
                -6181564507010977947,
            ),
            (fox, "word:1:logtf:false:none", -5028607265909118662),
            (fox, "char:3:logtf:false:none", 266433100919334960),
            (fox, "word:1:logtfidf:false:none", -5574248148229225158),
            (fox, "word:1:logtfidf:true:simplified", -5569744549541378790),
            (
                "Hello, World!",
                "word:1:logtfidf:true:simplified",
                -1601765511430786492,
            ),
            (tea_trad, "word:1:tf:false:none", -4080185561920289520),
            (tea_trad, "word:1:tf:false:simplified", 8025455009154221312),
            (tea_simp, "word:1:tf:false:none", 8025455009154221312),
            (tea_trad, "word:1:logtfidf:true:simplified", 8027707977199011084),
        ];
        for (text, spec, want) in cases {
            assert_eq!(
                signed(fingerprint(text, &opts(spec))),
                Some(want),
                "{text:?} {spec}"
            );
        }
        let zh = "我喜欢看电视，不喜欢看电影。";
        let bigram: [(&str, &str, i64); 8] = [
            (zh, "bigram:1:tf:false:none", -8608658960352276736),
            (zh, "bigram:1:logtf:true:simplified", -8608658943172268287),
            (zh, "bigram:1:logtfidf:false:simplified", -8604157559748161663),
            (zh, "bigram:2:logtf:false:none", -6864540741754487112),
            (fox, "bigram:1:tf:false:none", -344863516004849358),
            (tea_trad, "bigram:1:tf:false:none", -6552390274595274174),
            (tea_trad, "bigram:1:logtf:true:simplified", -114935098876941618),
            ("天", "bigram:1:logtfidf:false:simplified", 7589986550266253871),
        ];
        for (text, spec, want) in bigram {
            assert_eq!(
                signed(fingerprint(text, &opts(spec))),
                Some(want),
                "{text:?} {spec}"
            );
        }
        // 'logtfedge': short texts lie wholly within the edges (every weight is damped, by position);
        // the long one damps its first and last 60 features.
        let long: String = std::iter::once("alpha".to_string())
            .chain((0..150).map(|i| format!("w{i}")))
            .chain(["alpha".to_string(), "omega".to_string()])
            .collect::<Vec<_>>()
            .join(" ");
        let edge: [(&str, &str, i64); 6] = [
            (zh, "bigram:1:logtfedge:true:simplified", -8608658943172268287),
            (fox, "bigram:1:logtfedge:true:simplified", -5574243758638429894),
            (
                tea_trad,
                "bigram:1:logtfedge:true:simplified",
                -114935098876941618,
            ),
            (zh, "word:2:logtfedge:false:none", -2670867488447864001),
            (&long, "word:1:logtfedge:false:none", -4830614654168520790),
            (&long, "bigram:3:logtfedge:true:simplified", 4651090761881956613),
        ];
        for (text, spec, want) in edge {
            assert_eq!(
                signed(fingerprint(text, &opts(spec))),
                Some(want),
                "{text:?} {spec}"
            );
        }
        // 'auto' folds with the weightings of v2 only; explicit 0.2.0 options never fold.
        assert_eq!(opts("word:1:logtf:false:auto").fold, Fold::Simplified);
        assert_eq!(opts("word:1:tf:false:auto").fold, Fold::None);
        assert_eq!(opts("word:1:tfidf:false:auto").fold, Fold::None);
        assert_eq!(
            signed(fingerprint(
                tea_trad,
                &Options::parse("word", 1, "tf", false).unwrap()
            )),
            Some(-4080185561920289520)
        );
    }

    /// The defaults of 0.3.0 (algorithm v2): `simhash(doc)` with no option. Frozen from 1.0 on.
    #[test]
    fn v2_default_golden_fingerprints() {
        let d = Options::default();
        let cases: [(&str, i64); 6] = [
            ("我喜欢看电视，不喜欢看电影。", -8608658943172268287),
            (
                "The quick brown fox jumps over the lazy dog, and the dog sleeps.",
                -5569740159011059398,
            ),
            ("第十屆春茶節在龍井村開幕。", -114935098876941618),
            ("第十届春茶节在龙井村开幕。", -114935098876941618),
            ("Hello, World!", -9096919401391583228),
            ("abc", 3741276987793851837),
        ];
        for (text, want) in cases {
            assert_eq!(signed(fingerprint(text, &d)), Some(want), "{text:?}");
        }
        assert_eq!(fingerprint("，。！", &d), None);
        assert_eq!(fingerprint("the of and", &d), None, "stop words are dropped");
    }

    /// Golden features of an English sentence (stop words dropped, a repeated word weighted 1 + ln 2).
    #[test]
    fn english_sentence_features() {
        let d = Options::default();
        let f = features(
            "The quick brown fox jumps over the lazy dog; the fox!",
            &d,
            &mut || {},
        );
        let shown: Vec<(&str, f64, i64)> = f
            .iter()
            .map(|f| (f.text.as_str(), f.weight, f.hash as i64))
            .collect();
        assert_eq!(
            shown,
            vec![
                ("quick", 1.0, 9148514269595912874),
                ("brown", 1.0, -995118609851735781),
                ("fox", 1.6931471805599454, -7854895320768903824),
                ("jumps", 1.0, -9077710534139511880),
                ("lazy", 1.0, 4297505708964522031),
                ("dog", 1.0, -900618828345260778),
            ]
        );
        let zh = "北京地铁19号线今天开通，全长22公里。";
        assert_eq!(signed(fingerprint(zh, &d)), Some(8232711524962543625));
        assert_eq!(
            fingerprint(zh, &d),
            fingerprint("北京地铁19号线今天开通！全长22公里。", &d)
        );
    }

    #[test]
    fn logtf_weights_are_sublinear() {
        let o = Options::parse_with_fold("word", 1, "logtf", false, "none").unwrap();
        let f = features("a a a a b", &o, &mut || {});
        assert_eq!(f[0].weight, 1.0 + 4f64.ln());
        assert_eq!(f[1].weight, 1.0);
        let o = Options::parse_with_fold("word", 1, "logtfidf", false, "none").unwrap();
        let f = features("the the socket", &o, &mut || {});
        assert_eq!(f[0].weight, (1.0 + 2f64.ln()) * crate::idf::idf_v2("the"));
        assert!(
            f[0].weight < f[1].weight,
            "a frequent word weighs less than a rare one"
        );
    }

    #[test]
    fn logtfedge_damps_the_first_and_last_features() {
        assert_eq!(edge_factor(0), EDGE_FLOOR);
        assert!((edge_factor(30) - 0.6).abs() < 1e-12);
        assert_eq!(edge_factor(EDGE_SPAN), 1.0);
        assert_eq!(edge_factor(1000), 1.0);
        let o = Options::parse_with_fold("word", 1, "logtfedge", false, "none").unwrap();
        // 130 features: a0 at 0 and 65, then b1..b128; the last one is 0 from the end.
        let mut words = vec!["a0".to_string()];
        words.extend((1..65).map(|i| format!("b{i}")));
        words.push("a0".into());
        words.extend((65..129).map(|i| format!("b{i}")));
        let f = features(&words.join(" "), &o, &mut || {});
        assert_eq!(f.len(), 129);
        assert_eq!(f[0].text, "a0");
        assert_eq!(f[0].weight, (1.0 + 2f64.ln()) * ((EDGE_FLOOR + 1.0) / 2.0));
        assert_eq!(f[1].weight, edge_factor(1));
        assert_eq!(f[64].weight, 1.0, "b64 is 64 features from the start");
        assert_eq!(f[128].weight, EDGE_FLOOR, "the last feature");
        assert_eq!(f[127].weight, edge_factor(1));
        // The features shown add up to the fingerprint.
        let fp = fingerprint(&words.join(" "), &o).unwrap();
        assert_eq!(fp, accumulate(f.iter().map(|f| (f.hash, f.weight))));
    }

    #[test]
    fn no_features_means_no_fingerprint() {
        let char_stop = Options {
            tokenizer: Tokenizer::Char,
            stopwords: true,
            ..v1()
        };
        let jieba_stop = Options {
            tokenizer: Tokenizer::Jieba,
            stopwords: true,
            ..v1()
        };
        assert_eq!(fingerprint("!!!", &char_stop), None);
        assert_eq!(fingerprint("", &Options::default()), None);
        assert_eq!(fingerprint("，。！", &Options::default()), None);
        assert_eq!(fingerprint("", &v1()), None);
        assert_eq!(fingerprint("的了是", &jieba_stop), None);
        assert_eq!(fingerprint("the of and", &jieba_stop), None);
        assert!(
            fingerprint("the of and", &v1()).is_some(),
            "stop words are kept unless asked"
        );
    }

    #[test]
    fn short_text_gives_one_joined_feature() {
        let f = features("ab", &char_opts(3), &mut || {});
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].text, "ab");
        let w = features(
            "hello world",
            &Options {
                tokenizer: Tokenizer::Word,
                shingle: 3,
                ..v1()
            },
            &mut || {},
        );
        assert_eq!(w[0].text, "hello world");
    }

    #[test]
    fn shingles_are_joined_by_the_tokenizer_separator() {
        let words = Options {
            tokenizer: Tokenizer::Word,
            shingle: 2,
            stopwords: false,
            ..v1()
        };
        let texts: Vec<String> = features("one two three", &words, &mut || {})
            .into_iter()
            .map(|f| f.text)
            .collect();
        assert_eq!(texts, vec!["one two", "two three"]);
        let texts: Vec<String> = features("abcd", &char_opts(2), &mut || {})
            .into_iter()
            .map(|f| f.text)
            .collect();
        assert_eq!(texts, vec!["ab", "bc", "cd"]);
    }

    #[test]
    fn weights_follow_the_weighting() {
        let tf = features(
            "a b a",
            &Options {
                tokenizer: Tokenizer::Word,
                stopwords: false,
                ..v1()
            },
            &mut || {},
        );
        assert_eq!(tf.iter().map(|f| f.weight).collect::<Vec<_>>(), vec![2.0, 1.0]);
        let bin = Options {
            tokenizer: Tokenizer::Word,
            weighting: Weighting::Binary,
            stopwords: false,
            ..v1()
        };
        assert!(features("a b a", &bin, &mut || {})
            .iter()
            .all(|f| f.weight == 1.0));
        let tfidf = Options {
            tokenizer: Tokenizer::Jieba,
            weighting: Weighting::TfIdf,
            ..v1()
        };
        let f = features("新闻 新闻 天气", &tfidf, &mut || {});
        assert_eq!(f[0].weight, 2.0 * IdfTable::get().idf("新闻"));
    }

    #[test]
    fn interrupt_runs_once_per_chunk() {
        let text = "word ".repeat(100);
        let mut calls = 0;
        fingerprint_with(
            &text,
            &Options::default(),
            Chunking {
                target: 50,
                limit: 10,
            },
            &mut || calls += 1,
        );
        assert!(calls >= 10, "{calls}");
    }

    fn all_options() -> Vec<Options> {
        // 0.2.0's weightings with and without stop words, never folded; v2's as 0.3.0 resolves them.
        let v1 = [
            (1, Weighting::Tf),
            (1, Weighting::Binary),
            (1, Weighting::TfIdf),
            (3, Weighting::Tf),
            (2, Weighting::Binary),
        ];
        let v2 = [
            (1, Weighting::LogTf),
            (2, Weighting::LogTf),
            (1, Weighting::LogTfIdf),
            (1, Weighting::LogTfEdge),
            (2, Weighting::LogTfEdge),
        ];
        let v1_filters = [(false, Fold::None), (true, Fold::None)];
        let v2_filters = [(false, Fold::None), (true, Fold::Simplified)];
        let mut out = Vec::new();
        for tokenizer in [
            Tokenizer::Jieba,
            Tokenizer::Word,
            Tokenizer::Char,
            Tokenizer::Bigram,
        ] {
            for (weightings, filters) in [(&v1, &v1_filters), (&v2, &v2_filters)] {
                for &(shingle, weighting) in weightings {
                    for &(stopwords, fold) in filters {
                        out.push(Options {
                            tokenizer,
                            shingle,
                            weighting,
                            stopwords,
                            fold,
                        });
                    }
                }
            }
        }
        out
    }

    #[test]
    fn small_edit_moves_few_bits_unrelated_texts_are_far() {
        let zh = include_str!("../../tests/data/long_zh.txt");
        let en = include_str!("../../tests/data/long_en.txt");
        for opts in [v1(), Options::default()] {
            for doc in [zh, en] {
                let edited = doc
                    .replacen("。", "，据报道。", 1)
                    .replacen(". ", ", it is said. ", 1);
                let d = hamming(
                    fingerprint(doc, &opts).unwrap(),
                    fingerprint(&edited, &opts).unwrap(),
                );
                assert!(d <= 3, "a one-clause edit moved {d} bits with {opts:?}");
            }
            let d = hamming(fingerprint(zh, &opts).unwrap(), fingerprint(en, &opts).unwrap());
            assert!((20..=44).contains(&d), "unrelated documents are {d} bits apart");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        // Streaming and chunking are an implementation detail: they must not change any result.
        #[test]
        fn chunking_never_changes_the_fingerprint(
            text in "[ a-zA-Z0-9Σσ。、！？，.\n中文天气新闻我们的是了]{0,120}",
            target in 1usize..16,
        ) {
            for opts in all_options() {
                let whole = fingerprint_with(&text, &opts, Chunking { target: usize::MAX, limit: 0 }, &mut || {});
                let small = fingerprint_with(&text, &opts, Chunking { target, limit: 1 << 20 }, &mut || {});
                prop_assert_eq!(whole, small, "{:?}", opts);
            }
        }

        #[test]
        fn fingerprint_equals_accumulated_features(text in "\\PC{0,80}") {
            for opts in all_options() {
                let feats = features(&text, &opts, &mut || {});
                let fp = fingerprint(&text, &opts);
                prop_assert_eq!(fp.is_none(), feats.is_empty());
                if let Some(fp) = fp {
                    prop_assert_eq!(fp, accumulate(feats.iter().map(|f| (f.hash, f.weight))), "{:?}", opts);
                }
            }
        }

        #[test]
        fn any_unicode_and_any_options_never_panic(text in "\\PC{0,200}", shingle in -3i32..80, tok in "[a-z]{0,6}", w in "[a-z]{0,7}", stop: bool) {
            if let Ok(opts) = Options::parse(&tok, shingle, &w, stop) {
                let _ = fingerprint(&text, &opts);
            }
        }
    }

    #[test]
    fn current_options_take_the_fast_path() {
        // Fails when Options gains a field: extend KNOWN_FIELDS and the fast path (or decide that
        // the new field's non-default values fall back), then the differential test.
        assert!(options_fields_known(), "{:?}", Options::default());
        let word = Options {
            tokenizer: Tokenizer::Word,
            weighting: Weighting::Tf,
            fold: crate::options::Fold::None,
            ..Options::default()
        };
        assert!(fast_path_supports(&word));
        // The v2 defaults (bigram, logtf, stop words, folding) take it.
        let defaults = Options::default();
        assert_eq!(
            (
                defaults.tokenizer,
                defaults.shingle,
                defaults.weighting,
                defaults.fold
            ),
            (
                Tokenizer::Bigram,
                1,
                Weighting::LogTf,
                crate::options::Fold::Simplified
            )
        );
        assert!(fast_path_supports(&defaults));
        for tokenizer in [
            Tokenizer::Word,
            Tokenizer::Char,
            Tokenizer::Jieba,
            Tokenizer::Bigram,
        ] {
            for shingle in [1, 3] {
                let o = Options {
                    tokenizer,
                    shingle,
                    ..defaults
                };
                assert!(fast_path_supports(&o), "{o:?}");
            }
        }
        // IDF of a joined shingle: the reference's.
        for weighting in [Weighting::TfIdf, Weighting::LogTfIdf] {
            let o = Options {
                shingle: 3,
                weighting,
                ..word
            };
            assert!(!fast_path_supports(&o), "{o:?}");
            assert!(fast_path_supports(&Options { shingle: 1, ..o }));
        }
    }
}
