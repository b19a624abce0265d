//! MinHash signatures and their LSH band keys (issue 25): the second method beside SimHash, for
//! near-duplicates that share most of their shingles (headers and footers added, heavier edits).
//!
//! # The signature
//!
//! 1. **Tokens**: the text pipeline of SimHash — normalization (NFKC, lowercase), folding of
//!    traditional Chinese to simplified, a tokenizer, `keep` (an alphanumeric character; stop words
//!    dropped only when asked) — chunk by chunk, so a long text is never normalized whole.
//! 2. **Shingles**: windows of consecutive kept tokens ([`Shingle`]). The default, `Auto`, sizes each
//!    window by the token it ends at: 3 tokens after a token that is one Han character, 2 after any
//!    other token. A text with tokens but no full window gives one shingle of all its tokens.
//! 3. **Shingle hash**: the tokens' feature hashes ([`crate::hash::feature_hash`], FNV-1a 64 then
//!    fmix64) combined in order by [`shingle_hash`].
//! 4. **One-permutation hashing** (Li, Owen and Zhang 2012): the shingle hash `s` falls into bin
//!    `⌊(s >> 32) · k / 2^32⌋` and its low 32 bits compete for that bin's minimum. Each shingle costs
//!    one hash and one comparison, whatever `k`.
//! 5. **Densification** (optimal densification, Shrivastava 2017, in its scattering form, "fast
//!    densification" of Mai et al. 2019, with a bounded number of rounds): each empty bin takes the
//!    value of the non-empty bin that reaches it first in a pseudo-random order of events fixed for
//!    all texts, or after [`MAX_ROUNDS`] rounds the next non-empty bin ([`densify`]); so the
//!    probability that a bin agrees between two texts stays the Jaccard similarity of their shingle
//!    sets, and the work is at most `MAX_ROUNDS` steps per non-empty bin and one sweep of the bins.
//!    The targets of the scatter depend on `k` alone: the fast path reads them from a table computed
//!    once per `k` and process, so a step is a few loads, a comparison and a store.
//!
//! A text without any kept token has no signature (`None`, SQL NULL), as it has no SimHash.
//!
//! # Mixed text
//!
//! Chinese is compared by character 3-shingles and English by word 2-shingles (issue 25's measured
//! choices); a text that mixes both gets both, with no decision per text that a few added words
//! could flip. Every window ending at a Han character has 3 tokens and every window ending at a word
//! 2, so a Chinese passage in an English text is shingled as Chinese and the English around it as
//! English, and the windows across the border join the last tokens of one with the first of the
//! other, as a plain shingle would. Kana and Hangul are not Han: their tokens (UAX #29 words or
//! single characters) end windows of 2.
//!
//! # Stored form
//!
//! [`Signature::encode`]: a 4-byte header (format version 1; the 24-bit [`MinHashOptions::tag`] of
//! the options, little-endian) and the `k` values as 32-bit little-endian integers: 516 bytes at
//! `k = 128`. [`Signature::decode`] refuses anything else. The golden vectors in the tests pin the
//! encoded signatures and band keys of fixed texts.
//!
//! # For the SQL layer
//!
//! | SQL (planned) | here |
//! | --- | --- |
//! | `minhash(text, tokenizer, shingle, stopwords, fold, k)` → `bytea` | [`MinHashOptions::parse`], then [`try_minhash_with`] (chunking, interrupt check; `Ok(None)` is NULL) and [`Signature::encode`] |
//! | `minhash_similarity(bytea, bytea)` → `float8` | [`similarity_encoded`] |
//! | `minhash_bands(bytea, bands, rows)` → `int8[]` | [`Lsh::parse`] (with the signature's k), [`band_keys_encoded`] |
//! | the lookup contract | [`is_match`]: shares a band and estimate ≥ threshold ([`parse_threshold`]) |
//! | all pairs and clusters of a table (planned, the counterpart of `simhash_pairs`, `simhash_clusters`) | [`pairs::band_key_table`], [`pairs::match_pairs`] or [`pairs::for_each_group_match`], [`pairs::cluster_matches`] |
//!
//! Errors are values: [`crate::error::OptionError`] for options (SQLSTATE 22023),
//! [`MinHashError::Malformed`] for bytes that are not a signature, [`MinHashError::Mismatch`] for
//! signatures of different k or options or bands that do not fit; no input panics.

mod options;
pub mod pairs;
pub mod reference;

use std::fmt;
use std::sync::OnceLock;

pub use options::{
    parse_threshold, Lsh, MinHashOptions, Shingle, DEFAULT_BANDS, DEFAULT_K, DEFAULT_ROWS, DEFAULT_THRESHOLD,
    MAX_K, MIN_K,
};

use crate::error::{OptionError, OutOfMemory};
use crate::fast;
use crate::hash::fmix64;
use crate::normalize::Chunking;
use crate::options::{Fold, Tokenizer, MAX_SHINGLE};

/// The format version written in byte 0 of every encoded signature.
pub const FORMAT_VERSION: u8 = 1;
/// Bytes of the header of an encoded signature.
pub const HEADER_BYTES: usize = 4;

const SHINGLE_SEED: u64 = 0x6d69_6e68_6173_6831; // "minhash1"
const SHINGLE_MUL: u64 = 0x9e37_79b9_7f4a_7c15;
const SCATTER_SEED: u64 = 0x6465_6e73_6966_7931; // "densify1"
const BAND_SEED: u64 = 0x6c73_685f_6261_6e64; // "lsh_band"
/// Rounds of the scatter of [`densify`] before the empty bins left take the next non-empty bin:
/// 32 measured against 16 and 4096 (bench/README.md, section 9) as the cost of short texts against
/// their precision.
pub const MAX_ROUNDS: u32 = 32;

/// Errors of the MinHash functions other than memory (SQLSTATE 22023 for options, 22P03 for
/// malformed signatures, 22000 for mismatched ones in SQL).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MinHashError {
    /// An option outside its allowed values.
    Option(OptionError),
    /// Bytes that are not an encoded signature.
    Malformed(String),
    /// Two signatures that cannot be compared, or bands that do not fit a signature.
    Mismatch(String),
}

impl fmt::Display for MinHashError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MinHashError::Option(e) => e.fmt(f),
            MinHashError::Malformed(why) => write!(f, "malformed MinHash signature: {why}"),
            MinHashError::Mismatch(why) => write!(f, "MinHash signatures do not match: {why}"),
        }
    }
}

impl std::error::Error for MinHashError {}

impl From<OptionError> for MinHashError {
    fn from(e: OptionError) -> Self {
        MinHashError::Option(e)
    }
}

/// A MinHash signature: `k` 32-bit values and the tag of the options that made it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    tag: u32,
    values: Vec<u32>,
}

impl Signature {
    /// The values, one per bin.
    pub fn values(&self) -> &[u32] {
        &self.values
    }

    /// The [`MinHashOptions::tag`] of the options that computed it.
    pub fn tag(&self) -> u32 {
        self.tag
    }

    pub fn k(&self) -> usize {
        self.values.len()
    }

    /// The stored form: header (version, tag) and the values, little-endian.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_BYTES + 4 * self.values.len());
        out.push(FORMAT_VERSION);
        out.extend_from_slice(&self.tag.to_le_bytes()[..3]);
        for v in &self.values {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out
    }

    /// Reads [`Signature::encode`]'s bytes, refusing any other length or version.
    pub fn decode(bytes: &[u8]) -> Result<Signature, MinHashError> {
        let Some((header, body)) = bytes.split_first_chunk::<HEADER_BYTES>() else {
            return Err(MinHashError::Malformed(format!(
                "{} bytes, shorter than the {HEADER_BYTES}-byte header",
                bytes.len()
            )));
        };
        if header[0] != FORMAT_VERSION {
            return Err(MinHashError::Malformed(format!(
                "format version {}, expected {FORMAT_VERSION}",
                header[0]
            )));
        }
        if body.len() % 4 != 0 {
            return Err(MinHashError::Malformed(format!(
                "{} bytes of values, not a multiple of 4",
                body.len()
            )));
        }
        let k = body.len() / 4;
        if !(MIN_K as usize..=MAX_K as usize).contains(&k) {
            return Err(MinHashError::Malformed(format!(
                "{k} values, expected {MIN_K} to {MAX_K}"
            )));
        }
        let tag = u32::from_le_bytes([header[1], header[2], header[3], 0]);
        let values = body
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        Ok(Signature { tag, values })
    }

    pub(crate) fn from_parts(tag: u32, values: Vec<u32>) -> Signature {
        Signature { tag, values }
    }
}

/// The signature of `text`, or `None` when it has no kept token.
pub fn minhash(text: &str, options: &MinHashOptions) -> Option<Signature> {
    try_minhash_with(text, options, Chunking::default(), &mut || {}).unwrap_or_else(|e| e.abort())
}

/// [`minhash`] with explicit chunking and an interrupt check run between chunks; reports a
/// process short of memory ([`crate::error::memory_low`]) instead of going on. Takes the fast path
/// for the 'word' tokenizer and the reference pipeline ([`reference::reference_minhash`]) for the
/// others; both give the same signatures.
pub fn try_minhash_with(
    text: &str,
    options: &MinHashOptions,
    chunking: Chunking,
    interrupt: &mut dyn FnMut(),
) -> Result<Option<Signature>, OutOfMemory> {
    match try_minhash_fast(text, options, chunking, interrupt) {
        Some(r) => r,
        None => try_minhash_streaming(text, options, chunking, interrupt),
    }
}

/// The path of the tokenizers that the fast path leaves out: the reference pipeline's tokens
/// (chunk by chunk, as [`reference::reference_tokens`] has them), shingled and binned as they come,
/// in memory bounded by the chunk size.
pub fn try_minhash_streaming(
    text: &str,
    options: &MinHashOptions,
    chunking: Chunking,
    interrupt: &mut dyn FnMut(),
) -> Result<Option<Signature>, OutOfMemory> {
    let options = &options.sanitized();
    let mut bins = Bins::new(options.k);
    let mut shingler = StreamShingler::new(options.shingle);
    for chunk in crate::normalize::chunks(text, chunking) {
        interrupt();
        if crate::error::memory_low() {
            return Err(OutOfMemory { features: 0 });
        }
        let mut normalized = crate::normalize::normalize(chunk);
        if options.fold == Fold::Simplified {
            normalized = crate::fold::to_simplified(&normalized);
        }
        crate::tokenize::for_each_token(&normalized, options.tokenizer, |t| {
            if crate::tokenize::keep(t, options.stopwords) {
                if let Some(s) = shingler.push(crate::hash::feature_hash(t), one_han(t)) {
                    bins.add(s);
                }
            }
        });
    }
    if let Some(s) = shingler.finish() {
        bins.add(s);
    }
    Ok(bins.finish().map(|v| Signature::from_parts(options.tag(), v)))
}

/// Whether the fast path computes signatures for these options: the 'word' tokenizer.
pub fn minhash_fast_path_supports(options: &MinHashOptions) -> bool {
    options.tokenizer == Tokenizer::Word
}

/// The fast path alone; `None` when [`minhash_fast_path_supports`] says no. The differential test
/// compares it with [`reference::reference_minhash`].
pub fn try_minhash_fast(
    text: &str,
    options: &MinHashOptions,
    chunking: Chunking,
    interrupt: &mut dyn FnMut(),
) -> Option<Result<Option<Signature>, OutOfMemory>> {
    if !minhash_fast_path_supports(options) {
        return None;
    }
    let options = &options.sanitized();
    let mut bins = Bins::new(options.k);
    let mut shingler = StreamShingler::new(options.shingle);
    let fold = options.fold == Fold::Simplified;
    let r = fast::for_each_word_token(text, options.stopwords, fold, chunking, interrupt, |h, han| {
        if let Some(s) = shingler.push(h, han) {
            bins.add(s);
        }
    });
    Some(r.map(|()| {
        if let Some(s) = shingler.finish() {
            bins.add(s);
        }
        bins.finish().map(|v| Signature::from_parts(options.tag(), v))
    }))
}

/// The shingle hashes of `text` by the fast path, in order and with repeats (`None` when the fast
/// path does not support the options): compared with [`reference::reference_shingle_hashes`].
pub fn fast_shingle_hashes(text: &str, options: &MinHashOptions, chunking: Chunking) -> Option<Vec<u64>> {
    if !minhash_fast_path_supports(options) {
        return None;
    }
    let options = &options.sanitized();
    let mut out = Vec::new();
    let mut shingler = StreamShingler::new(options.shingle);
    let fold = options.fold == Fold::Simplified;
    fast::for_each_word_token(text, options.stopwords, fold, chunking, &mut || {}, |h, han| {
        out.extend(shingler.push(h, han));
    })
    .ok()?;
    out.extend(shingler.finish());
    Some(out)
}

/// Calls `sink` with the hash of every shingle of `text`, in order and with repeats, by the fast
/// path where it supports the options and the streaming pipeline elsewhere, calling `interrupt`
/// between chunks; reports a process short of memory instead of going on.
pub fn try_for_each_shingle(
    text: &str,
    options: &MinHashOptions,
    chunking: Chunking,
    interrupt: &mut dyn FnMut(),
    mut sink: impl FnMut(u64),
) -> Result<(), OutOfMemory> {
    let options = &options.sanitized();
    let mut emitted = 0usize;
    let mut shingler = StreamShingler::new(options.shingle);
    let fold = options.fold == Fold::Simplified;
    if minhash_fast_path_supports(options) {
        fast::for_each_word_token(text, options.stopwords, fold, chunking, interrupt, |h, han| {
            if let Some(s) = shingler.push(h, han) {
                sink(s);
            }
        })?;
    } else {
        for chunk in crate::normalize::chunks(text, chunking) {
            interrupt();
            if crate::error::memory_low() {
                return Err(OutOfMemory { features: emitted });
            }
            let mut normalized = crate::normalize::normalize(chunk);
            if fold {
                normalized = crate::fold::to_simplified(&normalized);
            }
            crate::tokenize::for_each_token(&normalized, options.tokenizer, |t| {
                if crate::tokenize::keep(t, options.stopwords) {
                    if let Some(s) = shingler.push(crate::hash::feature_hash(t), one_han(t)) {
                        emitted += 1;
                        sink(s);
                    }
                }
            });
        }
    }
    if let Some(s) = shingler.finish() {
        sink(s);
    }
    Ok(())
}

/// The hash of one shingle from the feature hashes of its tokens, oldest first: a multiply-rotate
/// chain seeded with the number of tokens, then fmix64.
#[inline(always)]
pub fn shingle_hash(tokens: impl IntoIterator<Item = u64>, len: usize) -> u64 {
    let mut acc = SHINGLE_SEED ^ len as u64;
    for t in tokens {
        acc = (acc ^ t).wrapping_mul(SHINGLE_MUL).rotate_left(31);
    }
    fmix64(acc)
}

/// The bin of a shingle hash among `k`: its high 32 bits scaled to `0..k`.
#[inline(always)]
pub fn bin_of(s: u64, k: usize) -> usize {
    (((s >> 32) * k as u64) >> 32) as usize
}

/// The value a shingle hash competes with in its bin: its low 32 bits.
#[inline(always)]
pub fn value_of(s: u64) -> u32 {
    s as u32
}

/// The target of the non-empty bin `j` in round `round` (from 0) of the scatter of [`densify`]:
/// a 64-bit linear congruential generator (Knuth's MMIX constants) started at
/// `fmix64(SCATTER_SEED ^ j)` and stepped once per round; each state's high 32 bits pick the bin as
/// [`bin_of`] does. It depends on `j` and the round alone, never on the text.
pub fn scatter_target(j: usize, round: u32, k: usize) -> usize {
    let mut x = fmix64(SCATTER_SEED ^ j as u64);
    for _ in 0..=round {
        x = lcg(x);
    }
    bin_of(x, k)
}

#[inline(always)]
fn lcg(x: u64) -> u64 {
    x.wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407)
}

/// Densification: `mins[i]` is the minimum of bin `i`, `None` when empty; `None` when every bin
/// is empty. An empty bin takes the value of a non-empty one, chosen by an order that does not
/// depend on the text — the first event `(round, j)`, in the order of rounds and then of `j`, at
/// which a non-empty bin `j` targets it ([`scatter_target`]), or, if none does within
/// [`MAX_ROUNDS`] rounds, the next non-empty bin after it, cyclically. Since the order is the same
/// for every text, an empty bin of two texts agrees exactly when the first candidate in that order
/// that is non-empty in either text is non-empty in both and holds the same minimum: the
/// probability that a bin agrees stays the Jaccard similarity. This is optimal densification
/// (Shrivastava 2017) in the form that scatters from the non-empty bins instead of probing from the
/// empty ones (Mai et al. 2019, "fast densification"): with `m` non-empty bins, a round fills an
/// empty bin with probability about `m / k`, so texts of more than about 20 distinct shingles (at
/// k = 128) fill every bin within the rounds, and shorter ones leave a few bins to the cyclic rule,
/// whose neighbouring bins share a source (a somewhat noisier estimate, measured in
/// bench/studies/minhash/minhash_accuracy.md). [`reference::reference_densify`] computes the same values
/// event by event. The work is at most [`MAX_ROUNDS`] steps per non-empty bin
/// and one sweep of the `k` bins, where probing takes `k / m` steps per empty bin.
pub fn densify(mins: &[Option<u32>]) -> Option<Vec<u32>> {
    densify_raw(mins.iter().map(|m| m.map_or(EMPTY, u64::from)).collect())
}

/// An empty bin in [`densify_raw`]'s input: every value is 32 bits.
const EMPTY: u64 = u64::MAX;

/// [`densify`] over minima kept as `u64`, [`EMPTY`] for an empty bin, filled in place. The
/// scatter reads its targets from a table per `k` ([`cached_scatter_rows`]) instead of stepping a
/// generator per non-empty bin and round.
fn densify_raw(mut out: Vec<u64>) -> Option<Vec<u32>> {
    let k = out.len();
    // The non-empty bins in order, each with its value (written without a branch per bin: the
    // slot after the last kept one is overwritten until a non-empty bin keeps it).
    let mut sources = vec![(0usize, 0u64); k];
    let mut n = 0;
    for (j, &m) in out.iter().enumerate() {
        if let Some(s) = sources.get_mut(n) {
            *s = (j, m);
        }
        n += usize::from(m != EMPTY);
    }
    sources.truncate(n);
    let &(_, first) = sources.first()?;
    let mut missing = k - sources.len();
    if missing > 0 {
        missing = match cached_scatter_rows(k) {
            Some(rows) => scatter(&mut out, &sources, rows, missing, |&t| usize::from(t)),
            None => scatter(&mut out, &sources, &scatter_rows::<u32>(k), missing, |&t| {
                t as usize
            }),
        };
    }
    if missing > 0 {
        // The next non-empty bin after each bin still empty, cyclically: the first source after
        // it, or the first source when none follows (few bins are left, so the test rarely holds).
        for (i, slot) in out.iter_mut().enumerate() {
            if *slot == EMPTY {
                let after = sources.partition_point(|&(j, _)| j <= i);
                *slot = sources.get(after).map_or(first, |&(_, v)| v);
            }
        }
    }
    Some(out.into_iter().map(|m| m as u32).collect())
}

/// The scatter of [`densify`]: round after round, every non-empty bin `j` (with its value `v`)
/// fills the bin `rows[round · k + j]` if that bin is still empty, until no bin is or the rounds are
/// over. Returns the bins left empty.
#[inline(always)]
fn scatter<T>(
    out: &mut [u64],
    sources: &[(usize, u64)],
    rows: &[T],
    mut missing: usize,
    target: impl Fn(&T) -> usize,
) -> usize {
    let k = out.len();
    for row in rows.chunks_exact(k) {
        for &(j, v) in sources {
            // `j` is below k and every target is below k: in bounds.
            if let Some(slot) = row.get(j).and_then(|t| out.get_mut(target(t))) {
                // The first event wins: a bin already filled (or non-empty) keeps its value.
                let fill = *slot == EMPTY;
                *slot = if fill { v } else { *slot };
                missing -= usize::from(fill);
            }
        }
        if missing == 0 {
            break;
        }
    }
    missing
}

/// The targets of the scatter for `k` bins: [`MAX_ROUNDS`] rows of `k`, row `r` holding
/// [`scatter_target`]`(j, r, k)` at `j`, computed by stepping each bin's generator.
fn scatter_rows<T: TryFrom<usize> + Copy + Default>(k: usize) -> Vec<T> {
    let mut rows = vec![T::default(); k * MAX_ROUNDS as usize];
    for j in 0..k {
        let mut x = fmix64(SCATTER_SEED ^ j as u64);
        for r in 0..MAX_ROUNDS as usize {
            x = lcg(x);
            // The caller picks a `T` that holds every bin below k.
            rows[r * k + j] = T::try_from(bin_of(x, k)).unwrap_or_default();
        }
    }
    rows
}

/// [`scatter_rows`] for each `k` from 1 to [`MAX_K`] (all a signature can have), computed once
/// per process on first use and kept: `k · MAX_ROUNDS` entries of 16 bits, 8 KiB at k = 128 and
/// 64 KiB at k = 1024 (only the `k` values a process uses are computed).
/// `None` for a larger `k` (only [`densify`] takes one), whose rows are computed per call.
fn cached_scatter_rows(k: usize) -> Option<&'static [u16]> {
    const CACHED: usize = MAX_K as usize + 1;
    static ROWS: [OnceLock<Box<[u16]>>; CACHED] = [const { OnceLock::new() }; CACHED];
    let cell = ROWS.get(k)?;
    Some(cell.get_or_init(|| scatter_rows::<u16>(k).into_boxed_slice()))
}

/// The minimum per bin, as the fast path keeps it: `u64::MAX` marks an empty bin (a value is 32
/// bits).
struct Bins {
    mins: Vec<u64>,
}

impl Bins {
    fn new(k: usize) -> Self {
        Bins { mins: vec![EMPTY; k] }
    }

    #[inline(always)]
    fn add(&mut self, s: u64) {
        let k = self.mins.len();
        let b = bin_of(s, k);
        let v = u64::from(value_of(s));
        // `bin_of` is below k: the index is always in bounds.
        if let Some(m) = self.mins.get_mut(b) {
            if v < *m {
                *m = v;
            }
        }
    }

    fn finish(self) -> Option<Vec<u32>> {
        densify_raw(self.mins)
    }
}

/// The shingles of a stream of tokens, by the feature hashes of the last [`MAX_SHINGLE`] tokens in
/// a ring.
struct StreamShingler {
    shingle: Shingle,
    ring: [u64; RING],
    /// Tokens seen; the last one is at `(seen − 1) % RING`.
    seen: usize,
    emitted: bool,
}

const RING: usize = 64;
const _: () = assert!(RING >= MAX_SHINGLE as usize && RING.is_power_of_two());

impl StreamShingler {
    fn new(shingle: Shingle) -> Self {
        StreamShingler {
            shingle,
            ring: [0; RING],
            seen: 0,
            emitted: false,
        }
    }

    #[inline(always)]
    fn push(&mut self, h: u64, han: bool) -> Option<u64> {
        self.ring[self.seen % RING] = h;
        self.seen += 1;
        let w = self.shingle.width(han);
        (self.seen >= w).then(|| {
            self.emitted = true;
            self.window(self.seen - w, w)
        })
    }

    #[inline(always)]
    fn window(&self, from: usize, w: usize) -> u64 {
        shingle_hash((from..from + w).map(|i| self.ring[i % RING]), w)
    }

    /// Tokens but no full window: one shingle of all of them (fewer than [`MAX_SHINGLE`]).
    fn finish(&self) -> Option<u64> {
        (!self.emitted && self.seen > 0).then(|| self.window(0, self.seen))
    }
}

/// The estimated Jaccard similarity of the shingle sets of two texts: the share of bins whose
/// values are equal. Refuses signatures of different sizes or options.
pub fn similarity(a: &Signature, b: &Signature) -> Result<f64, MinHashError> {
    check_pair(a, b)?;
    let equal = a.values.iter().zip(&b.values).filter(|(x, y)| x == y).count();
    Ok(equal as f64 / a.values.len() as f64)
}

/// [`similarity`] of two encoded signatures.
pub fn similarity_encoded(a: &[u8], b: &[u8]) -> Result<f64, MinHashError> {
    similarity(&Signature::decode(a)?, &Signature::decode(b)?)
}

fn check_pair(a: &Signature, b: &Signature) -> Result<(), MinHashError> {
    if a.values.len() != b.values.len() {
        return Err(MinHashError::Mismatch(format!(
            "{} values against {}",
            a.values.len(),
            b.values.len()
        )));
    }
    if a.tag != b.tag {
        return Err(MinHashError::Mismatch(format!(
            "computed with different options (tags {:06x} and {:06x})",
            a.tag, b.tag
        )));
    }
    Ok(())
}

/// One key per band: band `i` hashes its index, the rows, the signature's tag and the values
/// `i·rows .. (i+1)·rows`. Two signatures share band `i` iff their keys at `i` are equal (up to
/// 64-bit collisions); keys of different bands never meet by construction of the index in the hash.
pub fn band_keys(sig: &Signature, lsh: &Lsh) -> Result<Vec<i64>, MinHashError> {
    let mut keys = Vec::with_capacity(lsh.bands.min(sig.values.len()));
    push_band_keys(sig.tag, &sig.values, lsh, &mut keys)?;
    Ok(keys)
}

/// Appends the [`band_keys`] of the values of a signature of options `tag` to `out`: the one
/// definition of a key, shared with the all-pairs search ([`pairs::band_key_table`]).
pub(crate) fn push_band_keys(
    tag: u32,
    values: &[u32],
    lsh: &Lsh,
    out: &mut Vec<i64>,
) -> Result<(), MinHashError> {
    if lsh.bands == 0 || lsh.rows == 0 || lsh.bands.saturating_mul(lsh.rows) > values.len() {
        return Err(MinHashError::Mismatch(format!(
            "{} bands of {} rows need {} values, the signature has {}",
            lsh.bands,
            lsh.rows,
            lsh.bands.saturating_mul(lsh.rows),
            values.len()
        )));
    }
    out.extend(
        values
            .chunks_exact(lsh.rows)
            .take(lsh.bands)
            .enumerate()
            .map(|(i, rows)| band_key(tag, i, rows)),
    );
    Ok(())
}

/// [`band_keys`] of an encoded signature.
pub fn band_keys_encoded(sig: &[u8], lsh: &Lsh) -> Result<Vec<i64>, MinHashError> {
    band_keys(&Signature::decode(sig)?, lsh)
}

fn band_key(tag: u32, band: usize, rows: &[u32]) -> i64 {
    let mut acc = BAND_SEED ^ (u64::from(tag) << 40) ^ ((rows.len() as u64) << 20) ^ band as u64;
    for &v in rows {
        acc = (acc ^ u64::from(v)).wrapping_mul(SHINGLE_MUL).rotate_left(29);
    }
    fmix64(acc) as i64
}

/// The contract of a lookup: the two signatures share a band and their estimated similarity is at
/// least `threshold`.
pub fn is_match(a: &Signature, b: &Signature, lsh: &Lsh, threshold: f64) -> Result<bool, MinHashError> {
    let s = similarity(a, b)?;
    if s < threshold {
        return Ok(false);
    }
    let (ka, kb) = (band_keys(a, lsh)?, band_keys(b, lsh)?);
    Ok(ka.iter().zip(&kb).any(|(x, y)| x == y))
}

/// Whether a token is one Han character.
pub(crate) fn one_han(token: &str) -> bool {
    let mut chars = token.chars();
    matches!((chars.next(), chars.next()), (Some(c), None) if crate::tokenize::is_han(c))
}

#[cfg(test)]
mod tests;
