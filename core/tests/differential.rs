//! Differential fuzzing of the fast path (issue 10): for random Unicode weighted towards the hard
//! cases, and for every option set, the fast path must return exactly what the reference pipeline
//! returns, with default, small and hard-cut chunking, and the same stream of feature hashes (a
//! fingerprint can hide one wrong feature among many). Its parts are compared on their own as well:
//! the fast normalization with `normalize`, the word scanner with `split_word_bounds`.
//!
//! The test suite runs a short pass (150 texts, each with every option set and three chunkings). A
//! long run:
//!
//! ```sh
//! FUZZ_SECONDS=600 cargo test --release -p simhash_core --test differential -- --nocapture
//! ```
//!
//! Long runs on branch `speed` (issue 10), no difference found: 7,950 texts in 675 s (commit bc69453,
//! fingerprints only), 11,100 texts in 722 s (fc6b842, fingerprints only), and at 78a4dc3 with the
//! feature streams compared too: 16,650 texts in 601 s; each text with all 72 option sets and three
//! chunkings.
//!
//! Long runs on branch `fastv2` (the v2 option values on the fast path), no difference found, each
//! text with all 134 option sets (100 on the fast path) and three chunkings, feature streams
//! compared: 20,100 texts in 661 s (commit d134226), 14,250 texts in 602 s (5a1ff90).

use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use simhash_core::fast::{for_each_word, normalize_into, normalize_into_checking_fold};
use simhash_core::fingerprint::{fast_feature_hashes, fast_path_supports, try_fingerprint_fast};
use simhash_core::normalize::normalize;
use simhash_core::reference::{reference_feature_hashes, reference_try_fingerprint_with};
use simhash_core::tokenize::keep;
use simhash_core::{try_fingerprint_with, Chunking, Fold, Options, Tokenizer, Weighting};
use unicode_segmentation::UnicodeSegmentation;

/// Single characters that stress a step: NFKC expansions and compositions (full-width forms,
/// ligatures, Hangul jamo, combining marks), case mappings (Σ, İ, ß, ẞ, ǅ), the UAX #29 classes
/// around ASCII (mid-word and mid-number punctuation, quotes, Hebrew letters, Katakana,
/// ExtendNumLet, WSegSpace), Extend/Format/ZWJ, regional indicators, emoji, line breaks.
const TRICKY: &[char] = &[
    'a',
    'b',
    'Z',
    'Q',
    '0',
    '9',
    '_',
    ' ',
    ' ',
    ' ',
    '\t',
    '\n',
    '\r',
    '\u{b}',
    '\u{c}',
    '\u{85}',
    '\u{a0}',
    '\u{2028}',
    '\u{3000}',
    '\u{2003}',
    '\u{1680}',
    '.',
    ',',
    ';',
    ':',
    '\'',
    '"',
    '!',
    '-',
    '(',
    '/',
    '。',
    '、',
    '！',
    '？',
    '，',
    '：',
    '；',
    '．',
    '＇',
    '＂',
    '（',
    '“',
    '”',
    '‘',
    '’',
    '《',
    '》',
    '—',
    '…',
    '·',
    '\u{2024}',
    '\u{fe52}',
    '\u{ff0e}',
    '的',
    '了',
    '是',
    '我',
    '喜',
    '欢',
    '北',
    '京',
    '新',
    '闻',
    '中',
    '文',
    '㐀',
    '䶿',
    '鿿',
    '電',
    '視',
    '後',
    '髮',
    '龍',
    '屆',
    '節',
    '著',
    '乾',
    '\u{f900}',
    '\u{2f800}',
    'ガ',
    'ア',
    'ｶ',
    'ﾞ',
    'ー',
    'ひ',
    '\u{3099}',
    '\u{309a}',
    '\u{301}',
    '\u{308}',
    '\u{345}',
    '\u{5b4}',
    '\u{5d0}',
    '\u{5d1}',
    '\u{5f3}',
    'Σ',
    'σ',
    'ς',
    'İ',
    'ı',
    'ß',
    'ẞ',
    'ﬁ',
    'ﬃ',
    'ǅ',
    'ŉ',
    'ΐ',
    'Å',
    'Å',
    'Ω',
    'Ω',
    'K',
    '\u{fdfa}',
    '\u{3300}',
    '½',
    'µ',
    '²',
    'Ⅻ',
    '①',
    '㊀',
    '가',
    '힣',
    '\u{1100}',
    '\u{1161}',
    '\u{11a8}',
    '\u{3131}',
    'ａ',
    'Ａ',
    'ｚ',
    '１',
    '＿',
    '😀',
    '👩',
    '💻',
    '🏽',
    '\u{200d}',
    '\u{fe0f}',
    '\u{200b}',
    '\u{200c}',
    '\u{feff}',
    '\u{ad}',
    '\u{1f1e8}',
    '\u{1f1f3}',
    '\u{e0067}',
    '\u{0}',
    '\u{1}',
    '\u{7f}',
    '\u{e000}',
    '\u{fffd}',
    '\u{10ffff}',
    'é',
    'ñ',
    'ø',
    'Ж',
    'ж',
    'א',
    'ب',
    'ก',
    'ำ',
    '\u{e33}',
    'क',
    '\u{94d}',
];

/// Fragments: words, numbers with separators (UAX #29 MidNum / MidNumLet), apostrophes
/// (MidLetter), emoji ZWJ sequences, flags, decomposed letters, Chinese sentences.
const FRAGMENTS: &[&str] = &[
    "the",
    "The",
    "OF",
    "and",
    "can't",
    "don’t",
    "l'été",
    "3.14",
    "1,000",
    "1,000.5",
    "v2.0",
    "a.b.c",
    "e.g.",
    "x:y",
    "foo_bar",
    "_x_",
    "ΣΑΣ",
    "ΟΔΟΣ.",
    "İstanbul",
    "STRASSE",
    "straße",
    "Ǆemal",
    "👩\u{200d}💻",
    "👨\u{200d}👩\u{200d}👧",
    "👍🏽",
    "🇨🇳🇺🇸",
    "e\u{301}",
    "A\u{30a}",
    "ᄀ\u{1161}\u{11a8}",
    "我喜欢看电视",
    "，不喜欢看电影。",
    "2024年",
    "第3.5版",
    "“数据”显示",
    "《新闻》",
    "ＡＢＣ１２３",
    "ｶﾞｷﾞ",
    "한국어 텍스트",
    "カタカナ",
    "\u{5d0}\"\u{5d1}",
    "\u{5d0}'",
    "  \u{301}",
    "\r\n",
    " \u{3000} ",
];

fn text() -> impl Strategy<Value = String> {
    let tricky =
        prop::collection::vec(prop::sample::select(TRICKY), 0..150).prop_map(|v| v.into_iter().collect());
    let fragments = prop::collection::vec(
        prop_oneof![
            4 => prop::sample::select(FRAGMENTS).prop_map(str::to_owned),
            2 => prop::sample::select(TRICKY).prop_map(String::from),
            2 => "[a-zA-Z]{1,8}",
            1 => "[0-9]{1,4}([.,][0-9]{1,3})?",
            2 => "[一-龥]{1,4}",
            2 => "[ \t\n。，！？.,;:'\"-]{1,2}",
        ],
        0..60,
    )
    .prop_map(|v| v.concat());
    let any_chars = prop::collection::vec(any::<char>(), 0..80).prop_map(|v| v.into_iter().collect());
    prop_oneof![4 => fragments, 3 => tricky, 1 => any_chars]
}

/// Every option set: each tokenizer, shingle 1–3 and 5, each weighting, stop words on and off
/// (`'tfidf'` with shingle > 1 is refused by `Options::parse` but built here too: it must fall back).
fn all_options() -> Vec<Options> {
    let mut out = Vec::new();
    for tokenizer in [Tokenizer::Word, Tokenizer::Char, Tokenizer::Jieba] {
        for shingle in [1, 2, 3, 5] {
            for weighting in [Weighting::Tf, Weighting::Binary, Weighting::TfIdf] {
                for stopwords in [false, true] {
                    // A field added to Options later keeps its default here; `fast_path_supports`
                    // turns the fast path off until it is extended (the count below then fails).
                    #[allow(clippy::needless_update)]
                    out.push(Options {
                        tokenizer,
                        shingle,
                        weighting,
                        stopwords,
                        fold: Fold::None,
                        ..Options::default()
                    });
                }
            }
        }
    }
    // Algorithm v2's option values. 'bigram' with every shingle, weighting and stop-word setting,
    // folded (the default) ...
    for shingle in [1, 2, 3, 5] {
        for weighting in [
            Weighting::Tf,
            Weighting::Binary,
            Weighting::TfIdf,
            Weighting::LogTf,
            Weighting::LogTfIdf,
            Weighting::LogTfEdge,
        ] {
            for stopwords in [false, true] {
                out.push(Options {
                    tokenizer: Tokenizer::Bigram,
                    shingle,
                    weighting,
                    stopwords,
                    fold: Fold::Simplified,
                });
            }
        }
    }
    // ... and unfolded; the other tokenizers with the log weightings, folded or not.
    for (tokenizer, shingles) in [
        (Tokenizer::Bigram, &[1, 3][..]),
        (Tokenizer::Word, &[1, 2][..]),
        (Tokenizer::Char, &[1, 2][..]),
        (Tokenizer::Jieba, &[1, 2][..]),
    ] {
        for &shingle in shingles {
            for weighting in [Weighting::LogTf, Weighting::LogTfIdf, Weighting::LogTfEdge] {
                for fold in [Fold::None, Fold::Simplified] {
                    if tokenizer == Tokenizer::Bigram && fold == Fold::Simplified {
                        continue; // above
                    }
                    if tokenizer != Tokenizer::Bigram && fold == Fold::None && shingle > 1 {
                        continue;
                    }
                    out.push(Options {
                        tokenizer,
                        shingle,
                        weighting,
                        stopwords: true,
                        fold,
                    });
                }
            }
        }
    }
    assert_eq!(out.len(), 153);
    assert!(out.contains(&Options::default()));
    out
}

fn check(text: &str, target: usize, all: &[Options]) -> Result<(), TestCaseError> {
    // Step 1 alone.
    let mut buf = String::new();
    normalize_into(text, &mut buf);
    let want = normalize(text);
    prop_assert_eq!(&buf, &want, "normalize_into");
    // With the check for folding: the same text, and "nothing to fold" only when nothing folds.
    let may_fold = normalize_into_checking_fold(text, &mut buf);
    prop_assert_eq!(&buf, &want, "normalize_into_checking_fold");
    prop_assert!(
        may_fold || simhash_core::fold::to_simplified(&want) == want,
        "{:?}: folds, but the check said no",
        want
    );
    // Step 2 ('word') alone, on the normalized text: the kept tokens in order.
    let mut fast_words = Vec::new();
    for_each_word(&want, |t| {
        if keep(t, false) {
            fast_words.push(t)
        }
    });
    let ref_words: Vec<&str> = want.split_word_bounds().filter(|t| keep(t, false)).collect();
    prop_assert_eq!(fast_words, ref_words, "word tokens of {:?}", want);

    for options in all {
        for chunking in [
            Chunking::default(),
            Chunking {
                target,
                limit: usize::MAX / 2,
            },
            Chunking { target, limit: 2 },
        ] {
            let reference = reference_try_fingerprint_with(text, options, chunking, &mut || {})
                .map_err(|e| TestCaseError::fail(format!("{e}")))?;
            // The feature streams first: a fingerprint can hide a wrong feature among many.
            if let Some(fast_features) = fast_feature_hashes(text, options, chunking) {
                prop_assert_eq!(
                    fast_features,
                    reference_feature_hashes(text, options, chunking),
                    "features {:?} {:?}",
                    options,
                    chunking
                );
            }
            let fast = try_fingerprint_fast(text, options, chunking, &mut || {});
            prop_assert_eq!(fast.is_some(), fast_path_supports(options));
            let fast = match fast {
                Some(r) => r.map_err(|e| TestCaseError::fail(format!("{e}")))?,
                None => reference,
            };
            prop_assert_eq!(fast, reference, "{:?} {:?}", options, chunking);
            if chunking.target == Chunking::default().target {
                let public = try_fingerprint_with(text, options, chunking, &mut || {})
                    .map_err(|e| TestCaseError::fail(format!("{e}")))?;
                prop_assert_eq!(public, reference);
            }
        }
    }
    Ok(())
}

#[test]
fn fast_path_equals_reference() {
    let env = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok());
    let cases = env("FUZZ_CASES").unwrap_or(150) as u32;
    let deadline = env("FUZZ_SECONDS").map(Duration::from_secs);
    let all = all_options();
    // Not supported: an IDF weighting ('tfidf', 'logtfidf') with shingle > 1, which the reference
    // computes from the joined shingle text.
    assert_eq!(all.iter().filter(|o| fast_path_supports(o)).count(), 119);
    let start = Instant::now();
    let ran = std::cell::Cell::new(0u64);
    let mut batches = 0;
    loop {
        let mut runner = TestRunner::new(Config {
            cases,
            failure_persistence: None,
            ..Config::default()
        });
        let result = runner.run(&(text(), 1usize..24), |(text, target)| {
            ran.set(ran.get() + 1);
            check(&text, target, &all)
        });
        if let Err(e) = result {
            panic!("differential failure after {} inputs: {e}", ran.get());
        }
        batches += 1;
        match deadline {
            Some(d) if start.elapsed() < d => continue,
            _ => break,
        }
    }
    println!(
        "differential: {} texts x {} option sets x 3 chunkings in {batches} batch(es), {:.1} s, no difference",
        ran.get(),
        all.len(),
        start.elapsed().as_secs_f64()
    );
}

/// Long real texts, whole and in small chunks, feature by feature; the longest (53 kB) makes the shingle buffer of the
/// fast path compact itself several times.
#[test]
fn long_documents_agree() {
    let zh = include_str!("../../tests/data/long_zh.txt");
    let en = include_str!("../../tests/data/long_en.txt");
    let mixed = [zh, en].concat().repeat(3);
    for text in [zh, en, mixed.as_str()] {
        for options in all_options() {
            for chunking in [
                Chunking::default(),
                Chunking {
                    target: 100,
                    limit: 1000,
                },
            ] {
                if let Some(fast_features) = fast_feature_hashes(text, &options, chunking) {
                    let reference = reference_feature_hashes(text, &options, chunking);
                    assert!(fast_features == reference, "features {options:?} {chunking:?}");
                }
                let reference = reference_try_fingerprint_with(text, &options, chunking, &mut || {}).unwrap();
                let public = try_fingerprint_with(text, &options, chunking, &mut || {}).unwrap();
                assert_eq!(public, reference, "{options:?} {chunking:?}");
            }
        }
    }
}
