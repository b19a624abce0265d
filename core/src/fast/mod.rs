//! The fast path of the fingerprint (issue 10): the same fingerprints as the reference pipeline of
//! [`crate::reference`], bit for bit, in less time. It differs from the reference only in how it
//! gets there:
//!
//! - **Normalization** ([`normalize_into`]) copies runs of characters that NFKC and lowercasing leave
//!   alone (ASCII, lowercased byte-wise; CJK ideographs; Hangul syllables; a few CJK punctuation
//!   marks) and sends only the rest through NFKC and lowercasing. See [`is_stable`] for why the text
//!   may be cut before such a character.
//! - **Word segmentation** ([`for_each_word`]) scans ASCII and CJK-ideograph runs itself, with the
//!   UAX #29 rules that can apply there, and hands every other stretch of text, cut at positions
//!   where UAX #29 always breaks, to `unicode-segmentation`. It reports an ideograph by its
//!   position (`Words::ideograph`), so that 'word' hashes it, and 'bigram' a pair of them, from
//!   the bytes without the general per-token steps (`Keeper`).
//! - **Shingles** are hashed from a ring of reused byte buffers: no string per window.
//! - **Folding** (`fold => 'simplified'`) maps the normalized chunk through a dense table of
//!   [`crate::fold::simplified_char`] over the BMP, copying nothing when no character changes.
//! - **'bigram'** pairs the Han characters of the word scanner's tokens: the reference's runs, with
//!   neighbours told by byte offsets, since the scanner leaves out tokens that end a run.
//! - **Float weightings** ('tfidf', 'logtf', 'logtfidf', 'logtfedge') keep the reference's order and
//!   arithmetic (distinct features in order of first occurrence, the weights and edge factors of
//!   [`crate::weight`], which both use), with a pass-through hasher for the map of distinct
//!   features and sign-bit flips instead of branches in the sums.
//! - **Accumulation** counts eight bits per byte lane of a `u64` (eight 8-bit counters per word,
//!   flushed before they can overflow) instead of one counter per bit per feature.
//!
//! It is reached only through [`crate::fingerprint`](mod@crate::fingerprint), which sends it the options that
//! `fast_path_supports` accepts and all others to the reference; nothing here checks options again.
//!
//! One file a stage, in the order a chunk of text goes through them:
//!
//! | file | stage |
//! | --- | --- |
//! | `pipeline.rs` | steps 1–6 chunk by chunk: normalize, fold, tokenize, keep, hash, into a sink |
//! | `classes.rs` | character classes and UTF-8 decoding without the Unicode tables |
//! | `normalize.rs` | step 1: NFKC and lowercasing of what is not already normal |
//! | `fold.rs` | folding to simplified Chinese through a table of the BMP |
//! | `tokenize.rs` | step 2: the tokens of a chunk, per tokenizer, into the keeper |
//! | `words.rs` | the UAX #29 word scanner of 'word' and 'bigram' |
//! | `bigram.rs` | 'bigram': pairs of Han characters over the scanner's tokens |
//! | `jieba.rs` | 'jieba': jieba-rs with its ASCII-only blocks cut here |
//! | `keep.rs` | step 3: alphanumeric check and stop words by hash |
//! | `keeper.rs` | steps 3–6 per token: keep, shingle, hash, hand to the sink |
//! | `shingle.rs` | step 4: windows of tokens in a reused buffer |
//! | `char_ring.rs` | step 4 for 'char': windows of characters in a ring |
//! | `hashing.rs` | step 6: feature hashes of bytes at hand; the pass-through hasher |
//! | `term_counts.rs` | distinct features and their counts, in order of first occurrence |
//! | `logtf.rs` | 'logtf' from the term counts, integers where the weights allow |
//! | `minhash_tokens.rs` | the kept 'word' tokens of a text by hash, for MinHash ([`crate::minhash`]) |
//! | `bits.rs` | steps 7–9: per-bit counts and float sums |
//! | `mod.rs` | the entry points: one driver per weighting |

mod bigram;
mod bits;
mod char_ring;
mod classes;
mod fold;
mod hashing;
mod jieba;
mod keep;
mod keeper;
mod logtf;
mod minhash_tokens;
mod normalize;
mod pipeline;
mod shingle;
mod term_counts;
#[cfg(test)]
mod test_support;
mod tokenize;
mod words;

use std::collections::HashSet;

use crate::error::OutOfMemory;
use crate::grow::grow_set;
use crate::normalize::Chunking;
use crate::options::{Options, Weighting};
use crate::weight::{token_idf, DistinctFeatures};
use bits::{float_fingerprint, SwarCounts};
use hashing::PassBuild;
use logtf::logtf_or_reference;
use pipeline::for_each_feature_hash;
use term_counts::TermCounts;

pub use classes::{is_cjk_punctuation, is_ideograph};
pub(crate) use minhash_tokens::for_each_word_token;
pub use normalize::{
    fullwidth_ascii, is_normalized_quick, is_stable, normalize_into, normalize_into_checking_fold,
};
pub use words::for_each_word;

/// The hash of every feature of `text`, in order and with repeats, by the fast path: compared with
/// [`crate::reference::reference_feature_hashes`] by the differential test.
pub(crate) fn feature_hashes(
    text: &str,
    options: &Options,
    chunking: Chunking,
) -> Result<Vec<u64>, OutOfMemory> {
    let mut out = Vec::new();
    for_each_feature_hash(text, options, chunking, &mut || {}, |h, _| {
        out.push(h);
        Ok(())
    })?;
    Ok(out)
}

/// The fast path of [`crate::try_fingerprint_with`]: one driver per weighting over the stream of
/// feature hashes.
pub(crate) fn try_fingerprint(
    text: &str,
    options: &Options,
    chunking: Chunking,
    interrupt: &mut dyn FnMut(),
) -> Result<Option<u64>, OutOfMemory> {
    Ok(match options.weighting {
        Weighting::Tf => {
            let mut counts = SwarCounts::new();
            for_each_feature_hash(text, options, chunking, interrupt, |h, _| {
                counts.add(h);
                Ok(())
            })?;
            counts.fingerprint()
        }
        // The reference keeps distinct features by hash too: the same set, the same counts.
        Weighting::Binary => {
            let mut counts = SwarCounts::new();
            let mut seen: HashSet<u64, PassBuild> = HashSet::default();
            for_each_feature_hash(text, options, chunking, interrupt, |h, _| {
                grow_set(&mut seen)?;
                if seen.insert(h) {
                    counts.add(h);
                }
                Ok(())
            })?;
            counts.fingerprint()
        }
        // 'logtf', the default: its weights are 1 for every feature seen once, so most of the sum
        // is counted with integers; see `logtf_fingerprint`.
        Weighting::LogTf => {
            let mut counts = TermCounts::take(text.len());
            for_each_feature_hash(text, options, chunking, interrupt, |h, _| counts.add(h))?;
            let fp = (counts.len() > 0).then(|| logtf_or_reference(&counts));
            counts.give_back();
            fp
        }
        weighting @ (Weighting::TfIdf | Weighting::LogTfIdf | Weighting::LogTfEdge) => {
            float_weighted(text, options, chunking, interrupt, weighting)?
        }
        // A weighting added later: `fast_path_supports` sends it to the reference.
        #[allow(unreachable_patterns)]
        _ => unreachable!("the fast path was given a weighting it does not know"),
    })
}

/// The other float weightings. Float sums depend on order: the reference's exact steps (its
/// [`DistinctFeatures`], summed in its order), only with the faster tokens and a map that does not
/// hash feature hashes again. `token` is given for shingle 1 only, the one case with an IDF lookup ('logtf'
/// shingles take the factor 1, as in the reference).
fn float_weighted(
    text: &str,
    options: &Options,
    chunking: Chunking,
    interrupt: &mut dyn FnMut(),
    weighting: Weighting,
) -> Result<Option<u64>, OutOfMemory> {
    let mut distinct = DistinctFeatures::<PassBuild>::new(weighting);
    for_each_feature_hash(text, options, chunking, interrupt, |h, token| {
        distinct.add(h, || token_idf(weighting, token.unwrap_or_default()))
    })?;
    Ok(distinct.finish().map(float_fingerprint))
}
