//! Differential fuzzing of MinHash (issue 25): for random text weighted towards the hard cases
//! (mixed scripts, full-width forms, combining marks, traditional characters, stop words) and for
//! every option set, the fast path (the 'word' tokenizer) and the streaming path (the others) must
//! return exactly the signature of the reference ([`reference_minhash`]: every shingle hash in a
//! set, the minimum of each bin by definition, the densification replayed event by event), with
//! default, small and hard-cut chunking; the fast path's stream of shingle hashes must equal the
//! reference's too.
//!
//! The test suite runs a short pass (120 texts). A long run:
//!
//! ```sh
//! FUZZ_SECONDS=600 cargo test --release -p simhash_core --test minhash_differential -- --nocapture
//! ```
//!
//! Long run on branch `minhash-core` (commit 3cfe457, scatter densification), no difference found:
//! 24,360 texts in 301 s, each with all 96 option sets and three chunkings.
//! Again at commit 876e10b (32 scatter rounds, then the sweep): 16,200 texts in 151 s.
//! Again on branch `minhash-speed` at commit 59b3411 (scatter targets from a table per k, the
//! reference's own `reference_densify`): 17,400 texts in 301 s.

use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use simhash_core::minhash::reference::{reference_minhash, reference_shingle_hashes};
use simhash_core::minhash::{
    fast_shingle_hashes, minhash_fast_path_supports, try_minhash_fast, try_minhash_streaming,
    try_minhash_with, MinHashOptions, Shingle,
};
use simhash_core::{Chunking, Fold, Tokenizer};

/// Pieces that each stress one step: normalization (full-width, ligatures, combining marks, Σ),
/// folding (traditional characters), UAX #29 around ASCII and CJK, Han outside the BMP and in the
/// compatibility block, kana and Hangul, stop words of both lists, punctuation of both widths.
const PIECES: &[&str] = &[
    "a",
    "Z",
    "0",
    "9",
    "_",
    " ",
    "  ",
    "\t",
    "\n",
    "\r\n",
    "\u{3000}",
    "\u{a0}",
    ".",
    ",",
    "'",
    "\"",
    "-",
    "。",
    "，",
    "、",
    "！",
    "“",
    "”",
    "《",
    "》",
    "ＡＢＣ",
    "１２３",
    "ﬁ",
    "e\u{301}",
    "\u{301}",
    "Σ",
    "ς",
    "İ",
    "ß",
    "the",
    "of",
    "and",
    "The",
    "的",
    "了",
    "是",
    "我们",
    "龍",
    "開",
    "節",
    "門",
    "体",
    "體",
    "𠀀",
    "𪜀",
    "\u{f900}",
    "\u{fa0e}",
    "カタカナ",
    "ひらがな",
    "한국어",
    "ｶﾞ",
    "3.14",
    "1,000",
    "can't",
    "e-mail",
    "U.S.A.",
    "😀",
    "🇨🇳",
    "\u{200d}",
    "\u{feff}",
    "新闻",
    "天气",
    "北京地铁",
    "hello",
    "world",
    "minhash",
];

fn text() -> impl Strategy<Value = String> {
    let pieces = prop::collection::vec(
        prop_oneof![
            5 => prop::sample::select(PIECES).prop_map(str::to_owned),
            2 => "[a-zA-Z]{1,7}",
            3 => "[一-龥]{1,5}",
            1 => "[ \n。，.,;]{1,2}",
        ],
        0..80,
    )
    .prop_map(|v| v.concat());
    let any_chars = prop::collection::vec(any::<char>(), 0..60).prop_map(|v| v.into_iter().collect());
    prop_oneof![5 => pieces, 1 => any_chars]
}

/// Every tokenizer with auto and fixed shingles, stop words on and off, folded or not, and a few
/// signature sizes (one that cannot fill its bins from a short text).
fn all_options() -> Vec<MinHashOptions> {
    let mut out = Vec::new();
    for tokenizer in [
        Tokenizer::Word,
        Tokenizer::Char,
        Tokenizer::Bigram,
        Tokenizer::Jieba,
    ] {
        for shingle in [
            Shingle::Auto,
            Shingle::Fixed(1),
            Shingle::Fixed(2),
            Shingle::Fixed(5),
        ] {
            for (stopwords, fold) in [
                (false, Fold::Simplified),
                (true, Fold::Simplified),
                (false, Fold::None),
            ] {
                for k in [128, 7] {
                    out.push(MinHashOptions {
                        tokenizer,
                        shingle,
                        stopwords,
                        fold,
                        k,
                    });
                }
            }
        }
    }
    assert!(out.contains(&MinHashOptions::default()));
    out
}

fn check(text: &str, target: usize, all: &[MinHashOptions]) -> Result<(), TestCaseError> {
    for options in all {
        for chunking in [
            Chunking::default(),
            Chunking {
                target,
                limit: usize::MAX / 2,
            },
            Chunking { target, limit: 2 },
        ] {
            let fail = |e: simhash_core::OutOfMemory| TestCaseError::fail(e.to_string());
            let reference = reference_minhash(text, options, chunking, &mut || {}).map_err(fail)?;
            if let Some(fast) = fast_shingle_hashes(text, options, chunking) {
                prop_assert_eq!(
                    fast,
                    reference_shingle_hashes(text, options, chunking),
                    "shingles {:?} {:?}",
                    options,
                    chunking
                );
            }
            let fast = try_minhash_fast(text, options, chunking, &mut || {});
            prop_assert_eq!(fast.is_some(), minhash_fast_path_supports(options));
            if let Some(fast) = fast {
                prop_assert_eq!(
                    fast.map_err(fail)?,
                    reference.clone(),
                    "fast {:?} {:?}",
                    options,
                    chunking
                );
            }
            let streaming = try_minhash_streaming(text, options, chunking, &mut || {}).map_err(fail)?;
            prop_assert_eq!(&streaming, &reference, "streaming {:?} {:?}", options, chunking);
            let public = try_minhash_with(text, options, chunking, &mut || {}).map_err(fail)?;
            prop_assert_eq!(public, reference);
        }
    }
    Ok(())
}

#[test]
fn fast_and_streaming_paths_equal_reference() {
    let env = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok());
    let cases = env("FUZZ_CASES").unwrap_or(120) as u32;
    let deadline = env("FUZZ_SECONDS").map(Duration::from_secs);
    let all = all_options();
    let start = Instant::now();
    let ran = std::cell::Cell::new(0u64);
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
        match deadline {
            Some(d) if start.elapsed() < d => continue,
            _ => break,
        }
    }
    println!(
        "minhash differential: {} texts x {} option sets x 3 chunkings, {:.1} s, no difference",
        ran.get(),
        all.len(),
        start.elapsed().as_secs_f64()
    );
}

/// Long real texts, whole and in small chunks: many shingles per bin, the ring of the fast path
/// wrapping many times.
#[test]
fn long_documents_agree() {
    let zh = include_str!("../../tests/data/long_zh.txt");
    let en = include_str!("../../tests/data/long_en.txt");
    let mixed = [zh, en].concat();
    for text in [zh, en, mixed.as_str()] {
        for options in all_options()
            .into_iter()
            .filter(|o| o.k == 128 && o.tokenizer != Tokenizer::Jieba)
        {
            for chunking in [
                Chunking::default(),
                Chunking {
                    target: 100,
                    limit: 1000,
                },
            ] {
                let reference = reference_minhash(text, &options, chunking, &mut || {}).unwrap();
                let public = try_minhash_with(text, &options, chunking, &mut || {}).unwrap();
                assert_eq!(public, reference, "{options:?} {chunking:?}");
                if let Some(fast) = fast_shingle_hashes(text, &options, chunking) {
                    assert!(
                        fast == reference_shingle_hashes(text, &options, chunking),
                        "{options:?}"
                    );
                }
            }
        }
    }
}
