//! The SimHash fingerprint (SPEC §2 steps 4–9): shingles, weights, accumulation, sign.

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::{BuildHasher, Hash};

use crate::error::{memory_low, OutOfMemory};
use crate::fold::to_simplified;
use crate::hash::{fmix64, Fnv1a64};
use crate::idf::{idf_v2, IdfTable};
use crate::normalize::{chunks, normalize, Chunking};
use crate::options::{Fold, Options, Weighting};
use crate::tokenize::{for_each_token, keep};

/// One feature, as `simhash_features()` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Feature {
    pub text: String,
    pub weight: f64,
    pub hash: u64,
}

/// A feature as the pipeline hands it over: one token, or a window of `shingle` tokens.
enum FeatureRef<'a> {
    Token(&'a str),
    Shingle(&'a VecDeque<String>, &'static str),
}

impl FeatureRef<'_> {
    fn hash(&self) -> u64 {
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

    fn text(&self) -> String {
        match self {
            FeatureRef::Token(t) => (*t).to_owned(),
            FeatureRef::Shingle(window, sep) => {
                window.iter().map(String::as_str).collect::<Vec<_>>().join(sep)
            }
        }
    }

    /// The feature's text in a string allocated fallibly: one of these is kept per distinct feature.
    fn try_text(&self, features: usize) -> Result<String, OutOfMemory> {
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
    fn text_eq(&self, text: &str) -> bool {
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

/// Makes room for one more element in a vector that grows with the number of distinct features,
/// reporting an allocation failure instead of aborting.
pub(crate) fn grow_vec<T>(v: &mut Vec<T>) -> Result<(), OutOfMemory> {
    if memory_low() {
        return Err(OutOfMemory { features: v.len() });
    }
    if v.len() == v.capacity() {
        v.try_reserve(1).map_err(|_| OutOfMemory { features: v.len() })?;
    }
    Ok(())
}

pub(crate) fn grow_map<K: Eq + Hash, V, S: BuildHasher>(m: &mut HashMap<K, V, S>) -> Result<(), OutOfMemory> {
    if memory_low() {
        return Err(OutOfMemory { features: m.len() });
    }
    if m.len() == m.capacity() {
        m.try_reserve(1).map_err(|_| OutOfMemory { features: m.len() })?;
    }
    Ok(())
}

pub(crate) fn grow_set<K: Eq + Hash, S: BuildHasher>(s: &mut HashSet<K, S>) -> Result<(), OutOfMemory> {
    if memory_low() {
        return Err(OutOfMemory { features: s.len() });
    }
    if s.len() == s.capacity() {
        s.try_reserve(1).map_err(|_| OutOfMemory { features: s.len() })?;
    }
    Ok(())
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
fn for_each_feature(
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
/// Runs the fast path ([`crate::fast`]) when it supports the options, otherwise the reference
/// pipeline [`reference_try_fingerprint_with`]; both give the same fingerprints.
pub fn try_fingerprint_with(
    text: &str,
    options: &Options,
    chunking: Chunking,
    interrupt: &mut dyn FnMut(),
) -> Result<Option<u64>, OutOfMemory> {
    match crate::fast::try_fingerprint_fast(text, options, chunking, interrupt) {
        Some(result) => result,
        None => reference_try_fingerprint_with(text, options, chunking, interrupt),
    }
}

/// The reference pipeline of [`try_fingerprint_with`]: the straightforward steps of SPEC §2, kept as
/// the definition that the fast path is tested against.
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
        // Float weights: summed per distinct feature in order of first occurrence, as SPEC §2 says.
        Weighting::TfIdf | Weighting::LogTf | Weighting::LogTfIdf | Weighting::LogTfEdge => {
            let weighting = options.weighting;
            let mut index: HashMap<u64, usize> = HashMap::new();
            let mut distinct: Vec<(u64, u64, f64)> = Vec::new();
            let mut edges = EdgeSums::new(weighting);
            for_each_feature(text, options, chunking, interrupt, |f| {
                let h = f.hash();
                let i = match index.get(&h) {
                    Some(&i) => i,
                    None => {
                        grow_map(&mut index)?;
                        grow_vec(&mut distinct)?;
                        let idf = match &f {
                            FeatureRef::Token(t) => token_idf(weighting, t),
                            FeatureRef::Shingle(..)
                                if matches!(weighting, Weighting::LogTf | Weighting::LogTfEdge) =>
                            {
                                1.0
                            }
                            FeatureRef::Shingle(..) => token_idf(weighting, &f.text()),
                        };
                        distinct.push((h, 0, idf));
                        index.insert(h, distinct.len() - 1);
                        distinct.len() - 1
                    }
                };
                distinct[i].1 += 1;
                edges.push(i)
            })?;
            edges.finish();
            (!distinct.is_empty()).then(|| {
                accumulate(distinct.iter().enumerate().map(|(i, &(h, tf, idf))| {
                    (h, float_weight(weighting, tf as f64, edges.factor(i, tf, idf)))
                }))
            })
        }
    })
}

/// Occurrences this close to either end of the text (counted in features) weigh less under
/// `'logtfedge'`; from this distance on they weigh fully.
pub const EDGE_SPAN: u64 = 60;
/// The weight of an occurrence at the very start or end of the text under `'logtfedge'`.
pub const EDGE_FLOOR: f64 = 0.2;

/// `'logtfedge'`: the factor of an occurrence `distance` features from the nearer end of the text
/// (0 for the first and the last feature), rising linearly from [`EDGE_FLOOR`] to 1 at
/// [`EDGE_SPAN`]. Site chrome (headers, footers, signatures) sits at the ends: a header added to a
/// text then weighs less, and the text's own first and last features count less in both versions.
pub fn edge_factor(distance: u64) -> f64 {
    if distance >= EDGE_SPAN {
        1.0
    } else {
        EDGE_FLOOR + (1.0 - EDGE_FLOOR) * distance as f64 / EDGE_SPAN as f64
    }
}

/// The sum of [`edge_factor`] over the occurrences of each distinct feature, in one pass: the
/// distance from the end is known once [`EDGE_SPAN`] more features have come or the text has ended,
/// so only the last `EDGE_SPAN` occurrences wait. Each feature's factors are added in order of
/// occurrence (the reference and the fast path share this code, so their sums are the same bits).
/// For the other weightings it does nothing and every factor is the given IDF factor.
pub(crate) struct EdgeSums {
    on: bool,
    /// (distinct feature, occurrence number) of the occurrences whose distance from the end is
    /// not known yet.
    waiting: VecDeque<(usize, u64)>,
    seen: u64,
    sums: Vec<f64>,
}

impl EdgeSums {
    pub(crate) fn new(weighting: Weighting) -> Self {
        EdgeSums {
            on: weighting == Weighting::LogTfEdge,
            waiting: VecDeque::new(),
            seen: 0,
            sums: Vec::new(),
        }
    }

    /// One more occurrence of distinct feature `i` (numbered from 0 in order of first occurrence).
    pub(crate) fn push(&mut self, i: usize) -> Result<(), OutOfMemory> {
        if !self.on {
            return Ok(());
        }
        if i == self.sums.len() {
            grow_vec(&mut self.sums)?;
            self.sums.push(0.0);
        }
        if self.waiting.len() as u64 == EDGE_SPAN {
            // EDGE_SPAN occurrences follow this one: only its distance from the start counts.
            let (j, n) = self.waiting.pop_front().expect("EDGE_SPAN > 0");
            self.sums[j] += edge_factor(n);
        }
        if self.waiting.len() == self.waiting.capacity() {
            self.waiting.try_reserve(1).map_err(|_| OutOfMemory {
                features: self.sums.len(),
            })?;
        }
        self.waiting.push_back((i, self.seen));
        self.seen += 1;
        Ok(())
    }

    /// The text has ended: the waiting occurrences know their distance from the end.
    pub(crate) fn finish(&mut self) {
        let total = self.seen;
        while let Some((j, n)) = self.waiting.pop_front() {
            self.sums[j] += edge_factor(n.min(total - 1 - n));
        }
    }

    /// The factor that [`float_weight`] multiplies by for distinct feature `i` seen `tf` times: the
    /// mean edge factor of its occurrences, or `idf` for the other weightings.
    pub(crate) fn factor(&self, i: usize, tf: u64, idf: f64) -> f64 {
        if self.on {
            self.sums[i] / tf as f64
        } else {
            idf
        }
    }
}

/// The IDF factor of one token under a float weighting (1 for `'logtf'`).
pub(crate) fn token_idf(weighting: Weighting, token: &str) -> f64 {
    match weighting {
        Weighting::TfIdf => IdfTable::get().idf(token),
        Weighting::LogTfIdf => idf_v2(token),
        Weighting::Tf | Weighting::Binary | Weighting::LogTf | Weighting::LogTfEdge => 1.0,
    }
}

/// The weight of a feature seen `tf` times whose IDF factor is `idf`. The same arithmetic serves
/// [`fingerprint`] and [`features`], so that the features shown always add up to the fingerprint.
pub(crate) fn float_weight(weighting: Weighting, tf: f64, idf: f64) -> f64 {
    match weighting {
        Weighting::LogTf | Weighting::LogTfIdf | Weighting::LogTfEdge => (1.0 + tf.ln()) * idf,
        Weighting::Tf | Weighting::Binary | Weighting::TfIdf => tf * idf,
    }
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

/// The distinct features of `text` with their weights and hashes, in order of first occurrence.
pub fn features(text: &str, options: &Options, interrupt: &mut dyn FnMut()) -> Vec<Feature> {
    try_features(text, options, interrupt).unwrap_or_else(|e| e.abort())
}

/// [`features`] that reports an allocation failure of the result instead of aborting.
pub fn try_features(
    text: &str,
    options: &Options,
    interrupt: &mut dyn FnMut(),
) -> Result<Vec<Feature>, OutOfMemory> {
    // Distinct features by hash; features whose hashes collide but whose texts differ (never seen
    // with a 64-bit hash, but possible) are told apart by text.
    let mut by_hash: HashMap<u64, usize> = HashMap::new();
    let mut collided: HashMap<String, usize> = HashMap::new();
    let mut out: Vec<Feature> = Vec::new();
    let mut edges = EdgeSums::new(options.weighting);
    for_each_feature(text, options, Chunking::default(), interrupt, |f| {
        let hash = f.hash();
        let existing = match by_hash.get(&hash) {
            Some(&i) if f.text_eq(&out[i].text) => Some(i),
            Some(_) => collided.get(f.text().as_str()).copied(),
            None => None,
        };
        edges.push(existing.unwrap_or(out.len()))?;
        match existing {
            Some(i) => out[i].weight += 1.0,
            None => {
                let text = f.try_text(out.len())?;
                grow_vec(&mut out)?;
                if by_hash.contains_key(&hash) {
                    grow_map(&mut collided)?;
                    collided.insert(text.clone(), out.len());
                } else {
                    grow_map(&mut by_hash)?;
                    by_hash.insert(hash, out.len());
                }
                out.push(Feature {
                    hash,
                    text,
                    weight: 1.0,
                });
            }
        }
        Ok(())
    })?;
    match options.weighting {
        Weighting::Tf => {}
        Weighting::Binary => out.iter_mut().for_each(|f| f.weight = 1.0),
        Weighting::TfIdf | Weighting::LogTf | Weighting::LogTfIdf | Weighting::LogTfEdge => {
            let w = options.weighting;
            edges.finish();
            for (i, f) in out.iter_mut().enumerate() {
                let factor = edges.factor(i, f.weight as u64, token_idf(w, &f.text));
                f.weight = float_weight(w, f.weight, factor);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bands::hamming;
    use crate::options::Tokenizer;
    use proptest::prelude::*;

    /// The defaults of 0.2.0, spelled out: the golden vectors of SPEC §2 were taken with them, and
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

    /// The README's quick start shows these features and values.
    #[test]
    fn readme_quick_start_values() {
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
        let mut out = Vec::new();
        for tokenizer in [
            Tokenizer::Jieba,
            Tokenizer::Word,
            Tokenizer::Char,
            Tokenizer::Bigram,
        ] {
            for (shingle, weighting) in [
                (1, Weighting::Tf),
                (1, Weighting::Binary),
                (1, Weighting::TfIdf),
                (3, Weighting::Tf),
                (2, Weighting::Binary),
            ] {
                for stopwords in [false, true] {
                    out.push(Options {
                        tokenizer,
                        shingle,
                        weighting,
                        stopwords,
                        fold: Fold::None,
                    });
                }
            }
            for (shingle, weighting) in [
                (1, Weighting::LogTf),
                (2, Weighting::LogTf),
                (1, Weighting::LogTfIdf),
                (1, Weighting::LogTfEdge),
                (2, Weighting::LogTfEdge),
            ] {
                for (stopwords, fold) in [(false, Fold::None), (true, Fold::Simplified)] {
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
}
