//! The SimHash fingerprint (SPEC §2 steps 4–9): shingles, weights, accumulation, sign.

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::Hash;

use crate::error::{memory_low, OutOfMemory};
use crate::hash::{fmix64, Fnv1a64};
use crate::idf::IdfTable;
use crate::normalize::{chunks, normalize, Chunking};
use crate::options::{Options, Weighting};
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
fn grow_vec<T>(v: &mut Vec<T>) -> Result<(), OutOfMemory> {
    if memory_low() {
        return Err(OutOfMemory { features: v.len() });
    }
    if v.len() == v.capacity() {
        v.try_reserve(1).map_err(|_| OutOfMemory { features: v.len() })?;
    }
    Ok(())
}

fn grow_map<K: Eq + Hash, V>(m: &mut HashMap<K, V>) -> Result<(), OutOfMemory> {
    if memory_low() {
        return Err(OutOfMemory { features: m.len() });
    }
    if m.len() == m.capacity() {
        m.try_reserve(1).map_err(|_| OutOfMemory { features: m.len() })?;
    }
    Ok(())
}

fn grow_set<K: Eq + Hash>(s: &mut HashSet<K>) -> Result<(), OutOfMemory> {
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
        let normalized = normalize(chunk);
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
        Weighting::TfIdf => {
            let idf = IdfTable::get();
            let mut index: HashMap<u64, usize> = HashMap::new();
            let mut distinct: Vec<(u64, u64, f64)> = Vec::new();
            for_each_feature(text, options, chunking, interrupt, |f| {
                let h = f.hash();
                let i = match index.get(&h) {
                    Some(&i) => i,
                    None => {
                        grow_map(&mut index)?;
                        grow_vec(&mut distinct)?;
                        let token = match &f {
                            FeatureRef::Token(t) => idf.idf(t),
                            FeatureRef::Shingle(..) => idf.idf(&f.text()),
                        };
                        distinct.push((h, 0, token));
                        index.insert(h, distinct.len() - 1);
                        distinct.len() - 1
                    }
                };
                distinct[i].1 += 1;
                Ok(())
            })?;
            (!distinct.is_empty())
                .then(|| accumulate(distinct.iter().map(|&(h, tf, idf)| (h, tf as f64 * idf))))
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
    for_each_feature(text, options, Chunking::default(), interrupt, |f| {
        let hash = f.hash();
        let existing = match by_hash.get(&hash) {
            Some(&i) if f.text_eq(&out[i].text) => Some(i),
            Some(_) => collided.get(f.text().as_str()).copied(),
            None => None,
        };
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
        Weighting::TfIdf => {
            let idf = IdfTable::get();
            out.iter_mut().for_each(|f| f.weight *= idf.idf(&f.text));
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

    fn char_opts(shingle: usize) -> Options {
        Options {
            tokenizer: Tokenizer::Char,
            shingle,
            stopwords: false,
            ..Options::default()
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

    #[test]
    fn no_features_means_no_fingerprint() {
        let char_stop = Options {
            tokenizer: Tokenizer::Char,
            stopwords: true,
            ..Options::default()
        };
        let jieba_stop = Options {
            tokenizer: Tokenizer::Jieba,
            stopwords: true,
            ..Options::default()
        };
        assert_eq!(fingerprint("!!!", &char_stop), None);
        assert_eq!(fingerprint("", &Options::default()), None);
        assert_eq!(fingerprint("，。！", &Options::default()), None);
        assert_eq!(fingerprint("的了是", &jieba_stop), None);
        assert_eq!(fingerprint("the of and", &jieba_stop), None);
        assert!(
            fingerprint("the of and", &Options::default()).is_some(),
            "stop words are kept by default"
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
                ..Options::default()
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
            ..Options::default()
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
                ..Options::default()
            },
            &mut || {},
        );
        assert_eq!(tf.iter().map(|f| f.weight).collect::<Vec<_>>(), vec![2.0, 1.0]);
        let bin = Options {
            tokenizer: Tokenizer::Word,
            weighting: Weighting::Binary,
            stopwords: false,
            ..Options::default()
        };
        assert!(features("a b a", &bin, &mut || {})
            .iter()
            .all(|f| f.weight == 1.0));
        let tfidf = Options {
            tokenizer: Tokenizer::Jieba,
            weighting: Weighting::TfIdf,
            ..Options::default()
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
        for tokenizer in [Tokenizer::Jieba, Tokenizer::Word, Tokenizer::Char] {
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
        for opts in [
            Options::default(),
            Options {
                tokenizer: Tokenizer::Word,
                ..Options::default()
            },
        ] {
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
