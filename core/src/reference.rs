//! The SimHash fingerprint (docs/ARCHITECTURE.md §2.6–2.9): shingles, weights, accumulation, sign.
//!
//! The reference pipeline: the steps of the fingerprint written as plainly as they are defined, kept
//! as the oracle that the fast path ([`crate::fast`]) is tested against, bit for bit.

use std::collections::hash_map::RandomState;
use std::collections::{HashSet, VecDeque};

use crate::error::{memory_low, OutOfMemory};
use crate::fold::to_simplified;
use crate::grow::grow_set;
use crate::hash::{fmix64, Fnv1a64};
use crate::normalize::{chunks, normalize, Chunking};
use crate::options::{Fold, Options, Weighting};
use crate::tokenize::{for_each_token, keep};
use crate::weight::{token_idf, DistinctFeatures};

/// A feature as the pipeline hands it over: one token, or a window of `shingle` tokens.
pub(crate) enum FeatureRef<'a> {
    Token(&'a str),
    Shingle(&'a VecDeque<String>, &'static str),
}

impl FeatureRef<'_> {
    pub(crate) fn hash(&self) -> u64 {
        let mut h = Fnv1a64::default();
        match self {
            FeatureRef::Token(t) => h.write(t.as_bytes()),
            FeatureRef::Shingle(window, sep) => {
                for (i, t) in window.iter().enumerate() {
                    if i > 0 {
                        h.write(sep.as_bytes());
                    }
                    h.write(t.as_bytes());
                }
            }
        }
        fmix64(h.finish())
    }

    pub(crate) fn text(&self) -> String {
        match self {
            FeatureRef::Token(t) => (*t).to_owned(),
            FeatureRef::Shingle(window, sep) => {
                window.iter().map(String::as_str).collect::<Vec<_>>().join(sep)
            }
        }
    }

    /// The feature's text in a string allocated fallibly: one of these is kept per distinct feature.
    pub(crate) fn try_text(&self, features: usize) -> Result<String, OutOfMemory> {
        let len = match self {
            FeatureRef::Token(t) => t.len(),
            FeatureRef::Shingle(window, sep) => {
                window.iter().map(String::len).sum::<usize>() + sep.len() * window.len().saturating_sub(1)
            }
        };
        let mut out = String::new();
        out.try_reserve_exact(len).map_err(|_| OutOfMemory { features })?;
        match self {
            FeatureRef::Token(t) => out.push_str(t),
            FeatureRef::Shingle(window, sep) => {
                for (i, t) in window.iter().enumerate() {
                    if i > 0 {
                        out.push_str(sep);
                    }
                    out.push_str(t);
                }
            }
        }
        Ok(out)
    }

    /// Whether the feature's text is `text`, without building it.
    pub(crate) fn text_eq(&self, text: &str) -> bool {
        match self {
            FeatureRef::Token(t) => *t == text,
            FeatureRef::Shingle(window, sep) => {
                let mut rest = text;
                for (i, t) in window.iter().enumerate() {
                    if i > 0 {
                        let Some(r) = rest.strip_prefix(*sep) else {
                            return false;
                        };
                        rest = r;
                    }
                    let Some(r) = rest.strip_prefix(t.as_str()) else {
                        return false;
                    };
                    rest = r;
                }
                rest.is_empty()
            }
        }
    }
}

/// Turns the stream of kept tokens into features (step 4), across chunk boundaries.
struct Shingler {
    n: usize,
    sep: &'static str,
    window: VecDeque<String>,
    kept: usize,
}

impl Shingler {
    fn new(options: &Options) -> Self {
        Shingler {
            n: options.shingle,
            sep: options.tokenizer.shingle_separator(),
            window: VecDeque::with_capacity(options.shingle),
            kept: 0,
        }
    }

    fn push(&mut self, token: &str, sink: &mut impl FnMut(FeatureRef<'_>)) {
        self.kept += 1;
        if self.n == 1 {
            return sink(FeatureRef::Token(token));
        }
        if self.window.len() == self.n {
            self.window.pop_front();
        }
        self.window.push_back(token.to_owned());
        if self.window.len() == self.n {
            sink(FeatureRef::Shingle(&self.window, self.sep));
        }
    }

    /// A text with fewer than n kept tokens gives one feature: all of them joined.
    fn finish(&mut self, sink: &mut impl FnMut(FeatureRef<'_>)) {
        if self.n > 1 && self.kept > 0 && self.kept < self.n {
            sink(FeatureRef::Shingle(&self.window, self.sep));
        }
    }
}

/// Runs steps 1–4 over `text`, chunk by chunk, calling `interrupt` between chunks. Stops at the first
/// error of `sink`.
pub(crate) fn for_each_feature(
    text: &str,
    options: &Options,
    chunking: Chunking,
    interrupt: &mut dyn FnMut(),
    mut sink: impl FnMut(FeatureRef<'_>) -> Result<(), OutOfMemory>,
) -> Result<(), OutOfMemory> {
    let mut shingler = Shingler::new(options);
    let mut failed: Option<OutOfMemory> = None;
    for chunk in chunks(text, chunking) {
        interrupt();
        if memory_low() {
            failed = Some(OutOfMemory { features: 0 });
            break;
        }
        let mut normalized = normalize(chunk);
        if options.fold == Fold::Simplified {
            normalized = to_simplified(&normalized);
        }
        for_each_token(&normalized, options.tokenizer, |token| {
            if failed.is_none() && keep(token, options.stopwords) {
                shingler.push(token, &mut |f| {
                    if failed.is_none() {
                        failed = sink(f).err();
                    }
                });
            }
        });
        if failed.is_some() {
            break;
        }
    }
    if failed.is_none() {
        shingler.finish(&mut |f| failed = sink(f).err());
    }
    failed.map_or(Ok(()), Err)
}

/// Per-bit counts of one bits over features of integer weight: `v[i] = 2·ones[i] − total`.
struct BitCounts {
    ones: [u64; 64],
    total: u64,
}

impl BitCounts {
    fn new() -> Self {
        BitCounts {
            ones: [0; 64],
            total: 0,
        }
    }

    #[inline]
    fn add(&mut self, hash: u64) {
        for (i, ones) in self.ones.iter_mut().enumerate() {
            *ones += (hash >> i) & 1;
        }
        self.total += 1;
    }

    fn fingerprint(&self) -> Option<u64> {
        (self.total > 0)
            .then(|| (0..64).fold(0u64, |fp, i| fp | (u64::from(2 * self.ones[i] > self.total) << i)))
    }
}

/// Step 7–8 for explicit weights: `v[i] ± w` per feature, in the order given; bit i set iff `v[i] > 0`.
pub fn accumulate(features: impl IntoIterator<Item = (u64, f64)>) -> u64 {
    let mut v = [0f64; 64];
    for (hash, w) in features {
        for (i, vi) in v.iter_mut().enumerate() {
            if (hash >> i) & 1 == 1 {
                *vi += w;
            } else {
                *vi -= w;
            }
        }
    }
    (0..64).fold(0u64, |fp, i| fp | (u64::from(v[i] > 0.0) << i))
}

/// The reference pipeline of [`try_fingerprint_with`](crate::try_fingerprint_with): the
/// straightforward steps of docs/ARCHITECTURE.md §2, kept as the definition that the fast path is tested against.
pub fn reference_try_fingerprint_with(
    text: &str,
    options: &Options,
    chunking: Chunking,
    interrupt: &mut dyn FnMut(),
) -> Result<Option<u64>, OutOfMemory> {
    Ok(match options.weighting {
        // Integer weights: summing per occurrence equals summing tf per distinct feature.
        Weighting::Tf => {
            let mut counts = BitCounts::new();
            for_each_feature(text, options, chunking, interrupt, |f| {
                counts.add(f.hash());
                Ok(())
            })?;
            counts.fingerprint()
        }
        Weighting::Binary => {
            let mut counts = BitCounts::new();
            let mut seen = HashSet::new();
            for_each_feature(text, options, chunking, interrupt, |f| {
                let h = f.hash();
                grow_set(&mut seen)?;
                if seen.insert(h) {
                    counts.add(h);
                }
                Ok(())
            })?;
            counts.fingerprint()
        }
        // Float weights: summed per distinct feature in order of first occurrence, as docs/ARCHITECTURE.md §2.9 says.
        Weighting::TfIdf | Weighting::LogTf | Weighting::LogTfIdf | Weighting::LogTfEdge => {
            let weighting = options.weighting;
            let mut distinct = DistinctFeatures::<RandomState>::new(weighting);
            for_each_feature(text, options, chunking, interrupt, |f| {
                distinct.add(f.hash(), || match &f {
                    FeatureRef::Token(t) => token_idf(weighting, t),
                    FeatureRef::Shingle(..)
                        if matches!(weighting, Weighting::LogTf | Weighting::LogTfEdge) =>
                    {
                        1.0
                    }
                    FeatureRef::Shingle(..) => token_idf(weighting, &f.text()),
                })
            })?;
            distinct.finish().map(accumulate)
        }
    })
}

/// The hash of every feature of `text`, in order and with repeats, by the reference pipeline: the
/// stream that the differential test compares the fast path's with.
pub fn reference_feature_hashes(text: &str, options: &Options, chunking: Chunking) -> Vec<u64> {
    let mut out = Vec::new();
    let _ = for_each_feature(text, options, chunking, &mut || {}, |f| {
        out.push(f.hash());
        Ok(())
    });
    out
}
