//! Fuzzing the pure core (issue 4): arbitrary Unicode text and arbitrary option values go through
//! `Options::parse`, `fingerprint`, `features`, the chunked pipeline and the bands. No input may
//! panic, and the results must agree with each other and with docs/ARCHITECTURE.md §2.
//!
//! The test suite runs a short pass. A long run, printing how many inputs ran and for how long:
//!
//! ```sh
//! FUZZ_CASES=1000000 cargo test --release -p simhash_core --test fuzz -- --nocapture
//! ```
//!
//! (`FUZZ_SECONDS=N` instead keeps drawing new batches of random inputs for N seconds.)

use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use simhash_core::hash::{fmix64, fnv1a64};
use simhash_core::{
    accumulate, band, bands, features, fingerprint, try_features, try_fingerprint_with, Chunking, Options,
};

/// Characters chosen to stress each step: NFKC expansions and compositions, case mappings that
/// change length, Greek final sigma, combining marks, CJK (jieba), Hangul, emoji and ZWJ sequences,
/// every kind of space and line break (chunk boundaries), controls, private use, noncharacters.
const TRICKY: &[char] = &[
    'a',
    'Z',
    '0',
    '9',
    ' ',
    '\t',
    '\n',
    '\r',
    '\u{85}',
    '\u{a0}',
    '\u{2028}',
    '\u{3000}',
    '.',
    ',',
    '!',
    '-',
    '\'',
    '。',
    '、',
    '！',
    '？',
    '，',
    '的',
    '了',
    '是',
    '我',
    '喜',
    '欢',
    '北',
    '京',
    '天',
    '气',
    '新',
    '闻',
    '中',
    '文',
    '電',
    '視',
    'ガ',
    'ｶ',
    'ﾞ',
    '\u{3099}',
    '\u{301}',
    '\u{308}',
    '\u{345}',
    'Σ',
    'σ',
    'ς',
    'İ',
    'ß',
    'ẞ',
    'ﬁ',
    'ﬃ',
    '\u{fdfa}',
    '\u{3300}',
    '\u{33ff}',
    '½',
    'µ',
    'Å',
    'Å',
    'Ω',
    'Ω',
    '가',
    '\u{1100}',
    '\u{1161}',
    '\u{11a8}',
    '😀',
    '👩',
    '\u{200d}',
    '💻',
    '\u{fe0f}',
    '\u{200b}',
    '\u{feff}',
    '\u{0}',
    '\u{1}',
    '\u{7f}',
    '\u{e000}',
    '\u{fffe}',
    '\u{ffff}',
    '\u{10ffff}',
    'Ａ',
    'ｚ',
    '１',
    '²',
    'Ⅻ',
    '①',
    '㊀',
    'ǅ',
    'ŉ',
    'ΐ',
    '\u{1e9e}',
];

fn text() -> impl Strategy<Value = String> {
    let any_chars = prop::collection::vec(any::<char>(), 0..200).prop_map(|v| v.into_iter().collect());
    let tricky = prop::collection::vec(prop::sample::select(TRICKY), 0..400)
        .prop_map(|v| v.into_iter().collect::<String>());
    let words = prop::collection::vec(
        prop_oneof![
            "[a-zA-Z]{1,12}",
            "[0-9]{1,6}",
            "[一-龥]{1,4}",
            "(the|of|and|a|的|了|是|在)",
            "[ \t\n。，！？.,;:]{1,3}",
        ],
        0..120,
    )
    .prop_map(|v| v.concat());
    prop_oneof![any_chars, tricky, words, any::<String>()]
}

fn tokenizer() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(vec!["jieba", "word", "char", "bigram"]).prop_map(str::to_owned),
        1 => any::<String>(),
        1 => "(jieba|word|char|bigram)[ A-Z]?",
    ]
}

fn weighting() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(vec!["tf", "binary", "tfidf", "logtf", "logtfidf"]).prop_map(str::to_owned),
        1 => any::<String>(),
    ]
}

fn shingle() -> impl Strategy<Value = i32> {
    prop_oneof![4 => 1i32..=4, 1 => 1i32..=64, 1 => any::<i32>()]
}

type Input = (String, String, i32, String, bool, usize, i32, i32);

fn inputs() -> impl Strategy<Value = Input> {
    (
        text(),
        tokenizer(),
        shingle(),
        weighting(),
        any::<bool>(),
        1usize..64,
        any::<i32>(),
        prop_oneof![3i32..=8, any::<i32>()],
    )
}

fn check(input: Input) -> Result<(), TestCaseError> {
    let (text, tokenizer, shingle, weighting, stopwords, target, band_no, nbands) = input;
    let options = match Options::parse(&tokenizer, shingle, &weighting, stopwords) {
        Ok(options) => options,
        Err(e) => {
            // A refused option names itself and shows a bounded excerpt of the value.
            prop_assert!(["tokenizer", "shingle", "weighting"].contains(&e.option));
            prop_assert!(e.to_string().contains(e.option));
            prop_assert!(e.value.chars().count() <= 60 || e.option == "weighting");
            return Ok(());
        }
    };

    let mut interrupts = 0;
    let fp = try_fingerprint_with(&text, &options, Chunking::default(), &mut || interrupts += 1)
        .map_err(|e| TestCaseError::fail(format!("{e}")))?;
    prop_assert_eq!(fp, fingerprint(&text, &options));
    prop_assert_eq!(interrupts > 0, !text.is_empty());

    // Chunking at safe breaks only (no hard cut) never changes the result.
    let chunked = try_fingerprint_with(
        &text,
        &options,
        Chunking {
            target,
            limit: usize::MAX / 2,
        },
        &mut || {},
    )
    .map_err(|e| TestCaseError::fail(format!("{e}")))?;
    prop_assert_eq!(chunked, fp, "chunk target {}", target);
    // Hard cuts anywhere may change the result but must not fail.
    let _ = try_fingerprint_with(&text, &options, Chunking { target, limit: 1 }, &mut || {});

    let feats = try_features(&text, &options, &mut || {}).map_err(|e| TestCaseError::fail(format!("{e}")))?;
    prop_assert_eq!(&feats, &features(&text, &options, &mut || {}));
    prop_assert_eq!(fp.is_none(), feats.is_empty());
    for f in &feats {
        prop_assert!(!f.text.is_empty());
        prop_assert!(f.weight > 0.0 && f.weight.is_finite(), "weight {}", f.weight);
        prop_assert_eq!(f.hash, fmix64(fnv1a64(f.text.as_bytes())), "hash of {:?}", f.text);
        prop_assert!(f.text.chars().any(char::is_alphanumeric), "feature {:?}", f.text);
    }
    if let Some(fp) = fp {
        prop_assert_eq!(fp, accumulate(feats.iter().map(|f| (f.hash, f.weight))));
        let all = bands(fp, nbands);
        let one = band(fp, band_no, nbands);
        prop_assert_eq!(all.is_ok(), (3..=64).contains(&nbands));
        prop_assert_eq!(one.is_ok(), all.is_ok() && (0..nbands).contains(&band_no));
        if let (Ok(all), Ok(one)) = (all, one) {
            prop_assert_eq!(all[band_no as usize], one);
        }
    }
    Ok(())
}

#[test]
fn arbitrary_unicode_and_options_never_fail() {
    let env = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok());
    let cases = env("FUZZ_CASES").unwrap_or(5000) as u32;
    let deadline = env("FUZZ_SECONDS").map(Duration::from_secs);
    let start = Instant::now();
    let ran = std::cell::Cell::new(0u64);
    let mut batches = 0;
    loop {
        let mut runner = TestRunner::new(Config {
            cases,
            failure_persistence: None,
            ..Config::default()
        });
        let result = runner.run(&inputs(), |input| {
            ran.set(ran.get() + 1);
            check(input)
        });
        if let Err(e) = result {
            panic!("fuzz failure after {} inputs: {e}", ran.get());
        }
        batches += 1;
        match deadline {
            Some(d) if start.elapsed() < d => continue,
            _ => break,
        }
    }
    println!(
        "fuzz: {} inputs in {batches} batch(es), {:.1} s, no failure",
        ran.get(),
        start.elapsed().as_secs_f64()
    );
}
