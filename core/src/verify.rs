//! Verification of candidates (issue 43): the exact similarity of two texts, which a candidate
//! found by a sketch (a SimHash fingerprint within `max_distance`, a MinHash signature sharing an
//! LSH band) must reach before the extension acts on it or returns it.
//!
//! # The measure
//!
//! The Jaccard similarity of the two texts' **shingle sets**, the shingles MinHash hashes
//! ([`crate::minhash`]: the 'word' tokenizer's tokens after normalization and folding, windows of 3
//! tokens ending at a Han character and of 2 ending at any other token), each shingle as its 64-bit
//! hash ([`crate::minhash::shingle_hash`]). It is the quantity a MinHash signature estimates, so a
//! MinHash attachment's verified similarity is the exact value of what its `threshold` meant, with
//! the attachment's own options; a SimHash attachment is verified with [`for_simhash`]'s options
//! (MinHash's defaults, folding as the SimHash options fold). Two texts whose shingle sets are both
//! empty have similarity 0 (they have no fingerprint or signature, so they are never candidates).
//!
//! The hashes stand for the shingles: two distinct shingles of the two texts collide with
//! probability about `n² / 2⁶⁴`, far below anything a similarity of two decimals can show.
//!
//! # Cost
//!
//! One pass of the text pipeline per text (the fast path for the 'word' tokenizer, the streaming
//! reference pipeline for the others), a sort of the shingle hashes, and a merge of the two sorted
//! sets: `O(n log n)` in the text's length. Memory is proportional to the distinct shingles, not to
//! the text: repeats are dropped as the hashes are collected, so a set holds at most 16 bytes per
//! distinct shingle, or 512 kB, whichever is more (`DistinctHashes`). The SQL layer
//! computes the written or looked-up text's set once and each candidate's once.

use crate::error::OutOfMemory;
use crate::minhash::{try_for_each_shingle, MinHashOptions};
use crate::normalize::Chunking;
use crate::options::Options;

/// The least verified similarity of a SimHash near-duplicate when an attachment or call names
/// none: chosen by bench/studies/verify/verify_eval.py (docs/accuracy.md, "Verification").
pub const DEFAULT_SIMHASH_THRESHOLD: f64 = 0.4;

/// How far below the threshold a MinHash candidate's estimated similarity may be and its text still
/// be read to verify it: 0.2 is 4.5 standard deviations of the estimate of 128 values at a true
/// similarity of 0.5 (σ = √(J(1−J)/128) ≤ 0.0442), so a candidate that reaches the threshold is
/// passed over with probability below 10⁻⁵, and the many weak candidates are never read.
pub const ESTIMATE_MARGIN: f64 = 0.2;

/// The most bytes (UTF-8) of a text that verification reads: the measure is the Jaccard similarity of
/// the shingle sets of the two texts' first `VERIFY_PREFIX_BYTES` bytes (cut back to a character
/// boundary). It bounds the work a row can make another session's check, lookup or dedup do (issue
/// 49): a text of 1 GB is read as its first MiB. Texts at most this long (every text of the accuracy
/// sets) are verified whole.
pub const VERIFY_PREFIX_BYTES: usize = 1 << 20;

/// The part of `text` that verification reads: its first [`VERIFY_PREFIX_BYTES`] bytes, cut back to
/// a character boundary.
pub fn verified_prefix(text: &str) -> &str {
    if text.len() <= VERIFY_PREFIX_BYTES {
        return text;
    }
    let mut end = VERIFY_PREFIX_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The fewest hashes collected before repeats are dropped (512 kB).
const COMPACT_AT: usize = 64 * 1024;

/// Shingle hashes collected with their repeats dropped from time to time: whenever they reach
/// twice the distinct hashes of the last pass (and at least COMPACT_AT), so memory stays within
/// twice the distinct hashes, and the passes cost O(n log n) in all (each sorts at most twice what
/// the one before kept, or COMPACT_AT new hashes).
#[derive(Default)]
struct DistinctHashes {
    hashes: Vec<u64>,
    /// The length at which the next pass drops repeats.
    next: usize,
}

impl DistinctHashes {
    fn push(&mut self, hash: u64) {
        self.hashes.push(hash);
        if self.hashes.len() >= self.next.max(COMPACT_AT) {
            self.compact();
        }
    }

    fn compact(&mut self) {
        self.hashes.sort_unstable();
        self.hashes.dedup();
        self.hashes.shrink_to(self.hashes.len() * 2);
        self.next = self.hashes.len() * 2;
    }
}

/// The distinct shingle hashes of a text, sorted.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Shingles(Vec<u64>);

impl Shingles {
    /// The shingle set of `text`'s [`verified_prefix`] with `options` (only the options that decide
    /// the shingles count: tokenizer, shingle, stop words, fold; `k` is ignored), calling `interrupt`
    /// between chunks; reports a process short of memory instead of going on.
    pub fn of(
        text: &str,
        options: &MinHashOptions,
        chunking: Chunking,
        interrupt: &mut dyn FnMut(),
    ) -> Result<Shingles, OutOfMemory> {
        let mut set = DistinctHashes::default();
        try_for_each_shingle(verified_prefix(text), options, chunking, interrupt, |s| {
            set.push(s)
        })?;
        set.compact();
        Ok(Shingles(set.hashes))
    }

    /// [`Shingles::of`] with the default chunking and no interrupt check.
    pub fn of_text(text: &str, options: &MinHashOptions) -> Shingles {
        Shingles::of(text, options, Chunking::default(), &mut || {}).unwrap_or_else(|e| e.abort())
    }

    /// The number of distinct shingles.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The sorted distinct hashes.
    pub fn hashes(&self) -> &[u64] {
        &self.0
    }

    /// The number of shingles both sets hold (a merge of the sorted sets).
    pub fn common(&self, other: &Shingles) -> usize {
        let (a, b) = (&self.0, &other.0);
        let (mut i, mut j, mut n) = (0, 0, 0);
        while i < a.len() && j < b.len() {
            match a[i].cmp(&b[j]) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
                std::cmp::Ordering::Equal => {
                    n += 1;
                    i += 1;
                    j += 1;
                }
            }
        }
        n
    }

    /// The Jaccard similarity |A ∩ B| / |A ∪ B|; 0 when both are empty.
    pub fn jaccard(&self, other: &Shingles) -> f64 {
        let common = self.common(other);
        let union = self.len() + other.len() - common;
        if union == 0 {
            0.0
        } else {
            common as f64 / union as f64
        }
    }
}

/// The shingle options a SimHash attachment is verified with: MinHash's defaults (the 'word'
/// tokenizer, shingles per script), folding traditional Chinese when the SimHash options fold, and
/// dropping stop words when the SimHash options drop them: what the fingerprint does not see, the
/// verification does not count either, so that padding a probe with stop words cannot move the
/// verified similarity while the fingerprint stays within reach (issue 49: a step oracle).
pub fn for_simhash(options: &Options) -> MinHashOptions {
    MinHashOptions {
        fold: options.fold,
        stopwords: options.stopwords,
        ..MinHashOptions::default()
    }
}

/// The exact similarity of two texts with `options` (both sets computed here): what the SQL
/// function `simhash_similarity(text, text)` returns.
pub fn similarity(a: &str, b: &str, options: &MinHashOptions) -> f64 {
    Shingles::of_text(a, options).jaccard(&Shingles::of_text(b, options))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::minhash::reference::{exact_jaccard, reference_shingle_hashes};
    use crate::options::{Fold, Tokenizer};

    fn texts() -> Vec<&'static str> {
        vec![
            "The quick brown fox jumps over the lazy dog near the river bank.",
            "The quick brown fox jumped over the lazy dog near the river bank!",
            "A completely different sentence about databases and indexes.",
            "今天天气很好，我们去公园散步吧。",
            "今天天氣很好，我們去公園散步吧。",
            "数据库索引可以加快查询速度，但会减慢写入。",
            "word",
            "",
            "!!! ???",
            "Mixed 中文 and English 文本 together in one text.",
        ]
    }

    #[test]
    fn shingles_are_the_reference_shingles() {
        for tokenizer in [Tokenizer::Word, Tokenizer::Bigram, Tokenizer::Jieba] {
            for stopwords in [false, true] {
                let options = MinHashOptions {
                    tokenizer,
                    stopwords,
                    ..MinHashOptions::default()
                };
                for t in texts() {
                    let mut expected = reference_shingle_hashes(t, &options, Chunking::default());
                    expected.sort_unstable();
                    expected.dedup();
                    assert_eq!(Shingles::of_text(t, &options).hashes(), &expected[..], "{t:?}");
                }
            }
        }
    }

    #[test]
    fn jaccard_is_the_reference_jaccard() {
        let options = MinHashOptions::default();
        for a in texts() {
            for b in texts() {
                let got = similarity(a, b, &options);
                assert_eq!(got, exact_jaccard(a, b, &options), "{a:?} {b:?}");
                assert_eq!(got, similarity(b, a, &options));
            }
        }
    }

    #[test]
    fn repeats_are_dropped_as_they_come() {
        // 10 million hashes of 1,000 distinct values: the collection never holds more than the
        // least compaction size, and ends as the sorted distinct values.
        let mut set = DistinctHashes::default();
        let mut most = 0;
        for i in 0..10_000_000u64 {
            set.push((i % 1000).wrapping_mul(0x9E37_79B9_7F4A_7C15));
            most = most.max(set.hashes.capacity());
        }
        set.compact();
        assert!(most <= 2 * COMPACT_AT, "{most}");
        let mut expected: Vec<u64> = (0..1000u64)
            .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
            .collect();
        expected.sort_unstable();
        assert_eq!(set.hashes, expected);
        // All distinct: every value kept, the capacity within twice their number.
        let mut set = DistinctHashes::default();
        for i in 0..1_000_000u64 {
            set.push(i.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        }
        set.compact();
        assert_eq!(set.hashes.len(), 1_000_000);
        assert!(set.hashes.capacity() <= 2_000_000);
    }

    #[test]
    fn a_repeated_text_is_the_set_of_two_copies() {
        let options = MinHashOptions::default();
        let one = "The quick brown fox jumps over the lazy dog near the river bank. ";
        // 650 kB: within the prefix verification reads.
        let many = one.repeat(10_000);
        assert!(many.len() <= VERIFY_PREFIX_BYTES);
        let twice = one.repeat(2);
        assert_eq!(
            Shingles::of_text(&many, &options),
            Shingles::of_text(&twice, &options)
        );
        let mut expected = reference_shingle_hashes(&many, &options, Chunking::default());
        expected.sort_unstable();
        expected.dedup();
        assert_eq!(Shingles::of_text(&many, &options).hashes(), &expected[..]);
    }

    #[test]
    fn bounds_and_folding() {
        let o = MinHashOptions::default();
        let t = texts();
        assert_eq!(similarity(t[0], t[0], &o), 1.0);
        assert_eq!(similarity("", "", &o), 0.0);
        assert!(similarity(t[0], t[1], &o) > 0.5);
        assert_eq!(similarity(t[0], t[2], &o), 0.0);
        // Folded: the traditional text is the simplified one.
        assert_eq!(similarity(t[3], t[4], &for_simhash(&Options::default())), 1.0);
        let unfolded = for_simhash(&Options {
            fold: Fold::None,
            ..Options::default()
        });
        assert!(similarity(t[3], t[4], &unfolded) < 1.0);
    }

    #[test]
    fn the_prefix_ends_at_a_character_boundary() {
        let short = "é".repeat(1000);
        assert_eq!(verified_prefix(&short), short);
        // One ASCII byte, then two-byte characters: the cap falls inside a character.
        let long = format!("a{}", "é".repeat(VERIFY_PREFIX_BYTES / 2 + 10));
        let p = verified_prefix(&long);
        assert_eq!(p.len(), VERIFY_PREFIX_BYTES - 1);
        assert!(long.starts_with(p));
    }

    #[test]
    fn a_long_text_is_verified_on_its_prefix() {
        let o = MinHashOptions::default();
        // Distinct words past the cap: the two texts differ only after their first MiB.
        let base: String = (0..VERIFY_PREFIX_BYTES / 6).map(|i| format!("w{i} ")).collect();
        assert!(base.len() > VERIFY_PREFIX_BYTES);
        let a = format!("{base}the first ending of this text");
        let b = format!("{base}another ending altogether, longer than the first");
        assert_eq!(similarity(&a, &b, &o), 1.0);
        let mut expected = reference_shingle_hashes(verified_prefix(&a), &o, Chunking::default());
        expected.sort_unstable();
        expected.dedup();
        assert_eq!(Shingles::of_text(&a, &o).hashes(), &expected[..]);
        // A text within the cap is read whole.
        let c = &base[..VERIFY_PREFIX_BYTES / 2];
        assert!(similarity(c, &format!("{c} and more words here"), &o) < 1.0);
    }

    #[test]
    fn chunking_does_not_change_the_set() {
        let long: String = texts().join(" ").repeat(50);
        let o = MinHashOptions::default();
        let small = Shingles::of(
            &long,
            &o,
            Chunking {
                target: 64,
                limit: 256,
            },
            &mut || {},
        )
        .unwrap();
        assert_eq!(small, Shingles::of_text(&long, &o));
    }
}
