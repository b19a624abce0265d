//! Fingerprints and all-pairs statistics for the spread benchmark (bench/studies/spread/spread.py),
//! computed with the core crate directly: the same code as SQL `simhash()`, without a server.
//!
//!     cargo run --release -p simhash_core --example spread -- fp TEXTS --config SPEC...
//!     cargo run --release -p simhash_core --example spread -- allpairs TEXTS [--kmax K] --config SPEC...
//!     cargo run --release -p simhash_core --example spread -- df TEXTS --config x:SPEC > DF
//!     cargo run --release -p simhash_core --example spread -- bpdf TEXTS --config x:SPEC > BP
//!
//! TEXTS holds one text per line (UTF-8). A SPEC is `tokenizer:shingle:weighting:stopwords:fold`,
//! e.g. `word:1:tf:false:none` (the 0.2.0 defaults) or `word:1:logtfidf:true:simplified`, or a
//! prototype `x:key=value,...` of a fingerprint the extension does not offer (module `proto` at the
//! end of this file).
//!
//! `fp` prints one line per text: the fingerprint of each SPEC as a signed 64-bit integer (what SQL
//! returns) or `NULL`, tab-separated.
//!
//! `df` prints the document frequencies of the prototype's features over TEXTS (a table's rows):
//! the number of texts on the first line, then `feature_hash<TAB>texts_containing_it` per line; a
//! prototype with `df=DF` weighs its features by them (see `proto`). `bpdf` prints, the same way,
//! in how many texts each window of the prototype's `bpw` kept tokens occurs, for `bp=BP`.
//!
//! `allpairs` treats the texts as a population of unrelated documents. For each SPEC it compares
//! every pair of fingerprints and prints, tab-separated:
//!
//!     NULLS    spec  texts_without_fingerprint
//!     HIST     spec  d  pairs          (d = 0..64; pairs at distance d, related ones removed)
//!     CHECKED  spec  C                 (pairs within C were checked for copies: K, or 8 when more
//!                                       than 2,000,000 pairs lie within K)
//!     RELATED  spec  d  pairs          (d = 0..C: pairs found related and removed from HIST)
//!     BAND     spec  band  largest_bucket  rows   (4 bands of 16 bits, docs/ARCHITECTURE.md §4.1)
//!     EXAMPLE  spec  i  j  d           (a few unrelated pairs within distance 3, line numbers from 0)
//!
//! A pair within distance C is "related" when the two texts share more than 30 % of
//! their character 4-grams (lowercased, whitespace removed: evalset.py's test for mislabelled
//! negatives): packages ship copies of one another's text, and such a pair is a true near-duplicate,
//! not a false match. Pairs beyond C are not checked.

use std::collections::{HashMap, HashSet};

use simhash_core::{band, fingerprint, Options};

// `proto` is at the end of this file.

/// A configuration: one of the extension's option sets, or a prototype (`x:...`, see `proto.rs`)
/// measured before it is worth an option value.
enum Config {
    Core(Options),
    Proto(proto::Spec),
}

impl Config {
    fn fingerprint(&self, text: &str) -> Option<u64> {
        match self {
            Config::Core(o) => fingerprint(text, o),
            Config::Proto(p) => p.fingerprint(text),
        }
    }
}

fn parse_any(spec: &str) -> Config {
    match spec.strip_prefix("x:") {
        Some(rest) => Config::Proto(proto::Spec::parse(rest)),
        None => Config::Core(parse_config(spec)),
    }
}

fn parse_config(spec: &str) -> Options {
    let parts: Vec<&str> = spec.split(':').collect();
    if parts.len() != 5 {
        panic!("a SPEC is tokenizer:shingle:weighting:stopwords:fold, got {spec:?}");
    }
    let shingle: i32 = parts[1].parse().expect("shingle must be an integer");
    let stopwords: bool = parts[3].parse().expect("stopwords must be true or false");
    Options::parse_with_fold(parts[0], shingle, parts[2], stopwords, parts[4])
        .unwrap_or_else(|e| panic!("bad SPEC {spec:?}: {e}"))
}

/// The character 4-grams of a text (lowercased, whitespace removed), hashed, sorted, distinct.
fn char4(text: &str) -> Vec<u64> {
    let chars: Vec<char> = text
        .chars()
        .flat_map(char::to_lowercase)
        .filter(|c| !c.is_whitespace())
        .collect();
    let mut out: Vec<u64> = if chars.len() < 4 {
        vec![hash_chars(&chars)]
    } else {
        chars.windows(4).map(hash_chars).collect()
    };
    out.sort_unstable();
    out.dedup();
    out
}

fn hash_chars(chars: &[char]) -> u64 {
    let mut h = 0xcbf29ce484222325u64;
    for &c in chars {
        for b in (c as u32).to_le_bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x100000001b3);
        }
    }
    h
}

fn jaccard(a: &[u64], b: &[u64]) -> f64 {
    let (mut i, mut j, mut both) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                both += 1;
                i += 1;
                j += 1;
            }
        }
    }
    both as f64 / (a.len() + b.len() - both).max(1) as f64
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mode = args.next().expect("mode: fp or allpairs");
    let file = args.next().expect("TEXTS file");
    let mut kmax = 8u32;
    let mut specs: Vec<String> = Vec::new();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--kmax" => kmax = args.next().and_then(|s| s.parse().ok()).expect("--kmax K"),
            "--config" => specs.push(args.next().expect("--config SPEC")),
            other => panic!("unexpected argument {other:?}"),
        }
    }
    let configs: Vec<Config> = specs.iter().map(|s| parse_any(s)).collect();
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("reading {file}: {e}"));
    let docs: Vec<&str> = text.lines().collect();
    match mode.as_str() {
        "fp" => {
            let mut out = String::new();
            for d in &docs {
                let row: Vec<String> = configs
                    .iter()
                    .map(|o| {
                        o.fingerprint(d)
                            .map_or("NULL".into(), |fp| (fp as i64).to_string())
                    })
                    .collect();
                out.push_str(&row.join("\t"));
                out.push('\n');
            }
            print!("{out}");
        }
        "allpairs" => allpairs(&docs, &specs, &configs, kmax),
        "df" => {
            let Some(Config::Proto(p)) = configs.first() else {
                panic!("df needs one prototype --config x:...");
            };
            print!("{}", p.document_frequencies(&docs));
        }
        "bpdf" => {
            let Some(Config::Proto(p)) = configs.first() else {
                panic!("bpdf needs one prototype --config x:...");
            };
            print!("{}", p.window_frequencies(&docs));
        }
        other => panic!("unknown mode {other:?}"),
    }
}

/// Largest distance reported as a match; pairs up to `--kmax` are checked for copies while there are
/// at most `CHECK_CAP` of them, so that the tail beyond 8 that extrapolations use is clean too.
const REPORT_K: u32 = 8;
const CHECK_CAP: usize = 2_000_000;

fn allpairs(docs: &[&str], specs: &[String], configs: &[Config], kmax: u32) {
    // 4-gram sets are built on demand: only texts in some close pair need one.
    let mut grams: HashMap<usize, Vec<u64>> = HashMap::new();
    let mut related_cache: HashMap<(usize, usize), bool> = HashMap::new();
    for (spec, options) in specs.iter().zip(configs) {
        let fps: Vec<(usize, u64)> = docs
            .iter()
            .enumerate()
            .filter_map(|(i, d)| options.fingerprint(d).map(|fp| (i, fp)))
            .collect();
        println!("NULLS\t{spec}\t{}", docs.len() - fps.len());
        let mut hist = [0u64; 65];
        let mut close: Vec<(usize, usize, u32)> = Vec::new();
        let mut checked = kmax;
        let values: Vec<u64> = fps.iter().map(|&(_, fp)| fp).collect();
        for i in 0..values.len() {
            let a = values[i];
            for (j, &b) in values.iter().enumerate().skip(i + 1) {
                let d = (a ^ b).count_ones();
                hist[d as usize] += 1;
                if d <= checked {
                    close.push((i, j, d));
                    // Checking copies costs a 4-gram comparison per pair: past the cap, only the
                    // pairs within the distances that are reported as matches (≤ 8) are checked.
                    if close.len() > CHECK_CAP && checked > REPORT_K {
                        checked = REPORT_K;
                        close.retain(|&(_, _, d)| d <= checked);
                    }
                }
            }
        }
        println!("CHECKED\t{spec}\t{checked}");
        let mut related = vec![0u64; checked as usize + 1];
        let mut examples = 0;
        for &(i, j, d) in &close {
            let (di, dj) = (fps[i].0, fps[j].0);
            let is_related = *related_cache.entry((di, dj)).or_insert_with(|| {
                for k in [di, dj] {
                    grams.entry(k).or_insert_with(|| char4(docs[k]));
                }
                jaccard(&grams[&di], &grams[&dj]) > 0.3
            });
            if is_related {
                related[d as usize] += 1;
                hist[d as usize] -= 1;
            } else if d <= 3 && examples < 5 {
                println!("EXAMPLE\t{spec}\t{di}\t{dj}\t{d}");
                examples += 1;
            }
        }
        for (d, n) in hist.iter().enumerate() {
            println!("HIST\t{spec}\t{d}\t{n}");
        }
        for (d, n) in related.iter().enumerate() {
            println!("RELATED\t{spec}\t{d}\t{n}");
        }
        for b in 0..4 {
            let mut buckets: HashMap<i32, u64> = HashMap::new();
            for &fp in &values {
                *buckets.entry(band(fp, b, 4).expect("4 bands")).or_default() += 1;
            }
            let largest = buckets.values().copied().max().unwrap_or(0);
            println!("BAND\t{spec}\t{b}\t{largest}\t{}", values.len());
        }
        let distinct: HashSet<u64> = values.iter().copied().collect();
        println!("DISTINCT\t{spec}\t{}", distinct.len());
    }
}

/// Prototypes of fingerprints that the extension does not offer (yet), built from the core crate's
/// public pieces (normalize, fold, tokenize, stop words, feature hash, accumulate), so that
/// bench/studies/spread/spread.py can measure an idea with the same method before it becomes an
/// option value.
///
/// A prototype SPEC is `x:` followed by comma-separated `key=value` settings:
///
/// - `tok`: tokenizer, `bigram` (default), `word`, `jieba` or `char`;
/// - `sh`: shingle of kept tokens (default 1);
/// - `stop`: `1` (default) drops stop words, `0` keeps them;
/// - `w`: weight of a feature seen `tf` times: `logtf` (default, `1 + ln tf`), `tf`, `binary`,
///   `sqrt` (`√tf`), `capN` (`min(tf, N)`), `logtfidf` (`(1 + ln tf) × idf_v2`, single tokens);
/// - `taper`, `floor`: position weighting: a feature occurring within `taper × length` bytes of the
///   start or the end of the text weighs `floor + (1 − floor) × distance / (taper × length)` (its
///   mean over its occurrences multiplies the weight); `taper=0` (default) is off;
/// - `spot`, `spotmin`, `base`: SpotSigs-style features (Theobald et al., 2008): an antecedent
///   (an English function word, or a Chinese function character) followed by its next `spot`
///   non-stop words (English) or characters (Chinese). With `base=0` (default) only the spots are
///   features, and a text with fewer than `spotmin` (default 5) spots falls back to the ordinary
///   features; with `base=B > 0` both are features, the ordinary ones weighted B;
/// - `df=DF` (a file written by mode `df`), `dfcut`, `dflow`: weights from the document frequencies
///   of a table: × ln((N + 1) / df), or with `dfcut=P`, × `dflow` for a feature in more than a
///   share P of the table's texts (bench/studies/spread/spread_df.py);
/// - `bp=BP` (a file written by mode `bpdf`), `bpw`, `bpmin`: boilerplate removal: the tokens of
///   every window of `bpw` (default 8) consecutive kept tokens that at least `bpmin` (default 5) of
///   the table's texts contain are dropped before stop words, shingles and weights.
mod proto {
    use std::collections::HashMap;

    use simhash_core::accumulate;
    use simhash_core::fold::to_simplified;
    use simhash_core::hash::feature_hash;
    use simhash_core::idf::idf_v2;
    use simhash_core::normalize::normalize;
    use simhash_core::stopwords::is_stop_word;
    use simhash_core::tokenize::{for_each_token, is_han, keep};
    use simhash_core::Tokenizer;

    /// English antecedents: articles, auxiliaries and common prepositions (SpotSigs used a few such
    /// words; more of them give more spots).
    const EN_ANTECEDENTS: &[&str] = &[
        "a", "an", "the", "is", "are", "was", "were", "be", "been", "has", "have", "had", "it", "this",
        "that", "these", "those", "there", "can", "will", "would", "should", "may", "must", "not", "of",
        "to", "in", "on", "for", "with", "by", "from", "as", "at", "if", "when", "which",
    ];
    /// Chinese antecedents: function characters.
    const ZH_ANTECEDENTS: &str = "的了是在和与及或把被对从将为以等这那不也都就而并但所其之于由向到";

    #[derive(Clone, Copy, PartialEq)]
    enum W {
        Tf,
        LogTf,
        Binary,
        Sqrt,
        Cap(f64),
        LogTfIdf,
    }

    pub struct Spec {
        tok: Tokenizer,
        shingle: usize,
        stop: bool,
        w: W,
        taper: f64,
        floor: f64,
        spot: usize,
        spot_min: usize,
        base: f64,
        edge: f64,
        by_token: bool,
        df: Option<Df>,
        df_cut: f64,
        df_low: f64,
        /// Boilerplate removal: document frequencies of windows of `bp_window` kept tokens, and the
        /// count from which a window's tokens are dropped.
        bp: Option<Df>,
        bp_window: usize,
        bp_min: u32,
    }

    /// Document frequencies of features in a table's rows (mode `df`).
    pub struct Df {
        texts: f64,
        counts: HashMap<u64, u32>,
    }

    impl Df {
        fn load(path: &str) -> Df {
            let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
            let mut lines = text.lines();
            let texts: f64 = lines
                .next()
                .expect("DF: the number of texts")
                .parse()
                .expect("DF texts");
            let counts = lines
                .map(|l| {
                    let (h, n) = l.split_once('\t').expect("DF line: hash TAB count");
                    (h.parse().expect("DF hash"), n.parse().expect("DF count"))
                })
                .collect();
            Df { texts, counts }
        }
    }

    /// The number of texts, then `hash<TAB>texts containing it` for every hash that `hashes`
    /// gives for some text (counted once per text): the format `Df::load` reads.
    fn frequencies(docs: &[&str], mut hashes: impl FnMut(&str) -> Vec<u64>) -> String {
        let mut counts: HashMap<u64, u32> = HashMap::new();
        for d in docs {
            let mut seen = hashes(d);
            seen.sort_unstable();
            seen.dedup();
            for h in seen {
                *counts.entry(h).or_default() += 1;
            }
        }
        let mut out = format!("{}\n", docs.len());
        for (h, n) in counts {
            out.push_str(&format!("{h}\t{n}\n"));
        }
        out
    }

    impl Spec {
        pub fn parse(s: &str) -> Spec {
            let mut p = Spec {
                tok: Tokenizer::Bigram,
                shingle: 1,
                stop: true,
                w: W::LogTf,
                taper: 0.0,
                floor: 0.2,
                spot: 0,
                spot_min: 5,
                base: 0.0,
                edge: 0.0,
                by_token: false,
                df: None,
                df_cut: 0.0,
                df_low: 0.0,
                bp: None,
                bp_window: 8,
                bp_min: 5,
            };
            for kv in s.split(',').filter(|kv| !kv.is_empty()) {
                let (k, v) = kv
                    .split_once('=')
                    .unwrap_or_else(|| panic!("key=value, got {kv:?}"));
                match k {
                    "tok" => p.tok = Tokenizer::parse(v).expect("tokenizer"),
                    "sh" => p.shingle = v.parse().expect("sh"),
                    "stop" => p.stop = v == "1",
                    "w" => {
                        p.w = match v {
                            "tf" => W::Tf,
                            "logtf" => W::LogTf,
                            "binary" => W::Binary,
                            "sqrt" => W::Sqrt,
                            "logtfidf" => W::LogTfIdf,
                            c if c.starts_with("cap") => {
                                W::Cap(c.trim_start_matches("cap").parse().expect("capN"))
                            }
                            other => panic!("weight {other:?}"),
                        }
                    }
                    "taper" => p.taper = v.parse().expect("taper"),
                    "floor" => p.floor = v.parse().expect("floor"),
                    "spot" => p.spot = v.parse().expect("spot"),
                    "spotmin" => p.spot_min = v.parse().expect("spotmin"),
                    "base" => p.base = v.parse().expect("base"),
                    "edge" => p.edge = v.parse().expect("edge"),
                    "unit" => p.by_token = v == "tok",
                    "df" => p.df = Some(Df::load(v)),
                    "dfcut" => p.df_cut = v.parse().expect("dfcut"),
                    "dflow" => p.df_low = v.parse().expect("dflow"),
                    "bp" => p.bp = Some(Df::load(v)),
                    "bpw" => p.bp_window = v.parse().expect("bpw"),
                    "bpmin" => p.bp_min = v.parse().expect("bpmin"),
                    other => panic!("unknown prototype setting {other:?}"),
                }
            }
            p
        }

        /// Every distinct feature of `text` in order of first occurrence: (feature, tf, sum of
        /// position weights, factor).
        fn distinct(&self, text: &str) -> Vec<(String, f64, f64, f64)> {
            let norm = to_simplified(&normalize(text));
            let len = norm.len().max(1) as f64;
            let mut tokens = self.kept_tokens(&norm);
            if let Some(bp) = &self.bp {
                // Drop every token that a window found in at least `bp_min` texts covers.
                let mut covered = vec![false; tokens.len()];
                for (start, h) in self.windows(&tokens) {
                    if bp.counts.get(&h).is_some_and(|&n| n >= self.bp_min) {
                        covered[start..start + self.bp_window]
                            .iter_mut()
                            .for_each(|c| *c = true);
                    }
                }
                let mut i = 0;
                tokens.retain(|_| {
                    i += 1;
                    !covered[i - 1]
                });
            }
            // (feature, position, extra factor) in order of occurrence.
            let mut occ: Vec<(String, usize, f64)> = Vec::new();
            let ordinary = |occ: &mut Vec<(String, usize, f64)>, factor: f64| {
                let kept: Vec<&(&str, usize)> = tokens
                    .iter()
                    .filter(|(t, _)| !(self.stop && is_stop_word(t)))
                    .collect();
                if kept.is_empty() {
                    return;
                }
                if self.shingle <= 1 || kept.len() < self.shingle {
                    if self.shingle > 1 {
                        let joined: Vec<&str> = kept.iter().map(|(t, _)| *t).collect();
                        occ.push((joined.join(" "), kept[0].1, factor));
                    } else {
                        occ.extend(kept.iter().map(|(t, o)| ((*t).to_owned(), *o, factor)));
                    }
                    return;
                }
                for w in kept.windows(self.shingle) {
                    let joined: Vec<&str> = w.iter().map(|(t, _)| *t).collect();
                    occ.push((joined.join(" "), w[0].1, factor));
                }
            };
            if self.spot > 0 {
                let spots = self.spots(&norm, &tokens);
                if self.base > 0.0 {
                    occ.extend(spots.into_iter().map(|(f, o)| (f, o, 1.0)));
                    ordinary(&mut occ, self.base);
                    occ.sort_by_key(|&(_, o, _)| o);
                } else if spots.len() >= self.spot_min {
                    occ.extend(spots.into_iter().map(|(f, o)| (f, o, 1.0)));
                } else {
                    ordinary(&mut occ, 1.0);
                }
            } else {
                ordinary(&mut occ, 1.0);
            }
            // Distinct features in order of first occurrence: count, sum of position weights, factor.
            let mut index: HashMap<&str, usize> = HashMap::new();
            let mut distinct: Vec<(String, f64, f64, f64)> = Vec::new();
            let n_occ = occ.len();
            for (i, (f, o, factor)) in occ.iter().enumerate() {
                let (o, len) = if self.by_token {
                    (i as f64, n_occ as f64)
                } else {
                    (*o as f64, len)
                };
                let pos = if self.taper > 0.0 || self.edge > 0.0 {
                    let d = o.min(len - 1.0 - o).max(0.0);
                    let span = if self.edge > 0.0 {
                        self.edge
                    } else {
                        self.taper * len
                    };
                    (self.floor + (1.0 - self.floor) * d / span).min(1.0)
                } else {
                    1.0
                };
                let i = *index.entry(f.as_str()).or_insert_with(|| {
                    distinct.push((f.clone(), 0.0, 0.0, *factor));
                    distinct.len() - 1
                });
                distinct[i].1 += 1.0;
                distinct[i].2 += pos;
            }
            distinct
        }

        /// The windows of `bp_window` consecutive tokens: (first token, hash of the window).
        fn windows(&self, tokens: &[(&str, usize)]) -> Vec<(usize, u64)> {
            tokens
                .windows(self.bp_window)
                .enumerate()
                .map(|(i, w)| {
                    let joined: Vec<&str> = w.iter().map(|(t, _)| *t).collect();
                    (i, feature_hash(&joined.join(" ")))
                })
                .collect()
        }

        /// The kept tokens of a normalized text with their byte offsets.
        fn kept_tokens<'n>(&self, norm: &'n str) -> Vec<(&'n str, usize)> {
            let mut tokens = Vec::new();
            for_each_token(norm, self.tok, |t| {
                if keep(t, false) {
                    tokens.push((t, t.as_ptr() as usize - norm.as_ptr() as usize));
                }
            });
            tokens
        }

        /// `bpdf` mode: in how many of `docs` each window of `bp_window` kept tokens occurs.
        pub fn window_frequencies(&self, docs: &[&str]) -> String {
            frequencies(docs, |d| {
                let norm = to_simplified(&normalize(d));
                let tokens = self.kept_tokens(&norm);
                self.windows(&tokens).into_iter().map(|(_, h)| h).collect()
            })
        }

        /// `df` mode: in how many of `docs` each feature occurs.
        pub fn document_frequencies(&self, docs: &[&str]) -> String {
            frequencies(docs, |d| {
                self.distinct(d).iter().map(|(f, ..)| feature_hash(f)).collect()
            })
        }

        /// The factor of a feature's weight from its document frequency: with `dfcut=P`, `dflow`
        /// for a feature in more than a share P of the texts and 1 otherwise; without it,
        /// ln((N + 1) / df) (a feature the table lacks counts as df = 1).
        fn df_factor(&self, h: u64) -> f64 {
            let Some(df) = &self.df else { return 1.0 };
            let n = f64::from(df.counts.get(&h).copied().unwrap_or(1));
            if self.df_cut > 0.0 {
                if n > self.df_cut * df.texts {
                    self.df_low
                } else {
                    1.0
                }
            } else {
                ((df.texts + 1.0) / n).ln()
            }
        }

        pub fn fingerprint(&self, text: &str) -> Option<u64> {
            let distinct = self.distinct(text);
            if distinct.is_empty() {
                return None;
            }
            Some(accumulate(distinct.iter().map(|(f, tf, pos, factor)| {
                let (f, tf, pos, factor) = (f.as_str(), *tf, *pos, *factor);
                let w = match self.w {
                    W::Tf => tf,
                    W::LogTf => 1.0 + tf.ln(),
                    W::Binary => 1.0,
                    W::Sqrt => tf.sqrt(),
                    W::Cap(c) => tf.min(c),
                    W::LogTfIdf => (1.0 + tf.ln()) * idf_v2(f),
                };
                let h = feature_hash(f);
                (h, w * factor * pos / tf * self.df_factor(h))
            })))
        }

        /// SpotSigs-style features with their byte offsets, in order.
        fn spots(&self, norm: &str, tokens: &[(&str, usize)]) -> Vec<(String, usize)> {
            let mut out: Vec<(String, usize)> = Vec::new();
            // English (and any non-Han token): an antecedent and the next `spot` non-stop tokens.
            let words: Vec<&(&str, usize)> = tokens.iter().filter(|(t, _)| !t.chars().any(is_han)).collect();
            for (i, (t, o)) in words.iter().enumerate() {
                if !EN_ANTECEDENTS.contains(t) {
                    continue;
                }
                let chain: Vec<&str> = words[i + 1..]
                    .iter()
                    .map(|(w, _)| *w)
                    .filter(|w| !is_stop_word(w))
                    .take(self.spot)
                    .collect();
                if chain.len() == self.spot {
                    out.push((format!("{t}:{}", chain.join(":")), *o));
                }
            }
            // Chinese: a function character followed by `spot` Han characters of the same run.
            let chars: Vec<(usize, char)> = norm.char_indices().collect();
            for (i, &(o, c)) in chars.iter().enumerate() {
                if !ZH_ANTECEDENTS.contains(c) {
                    continue;
                }
                let next: String = chars[i + 1..]
                    .iter()
                    .take(self.spot)
                    .take_while(|(_, c)| is_han(*c))
                    .map(|&(_, c)| c)
                    .collect();
                if next.chars().count() == self.spot {
                    out.push((format!("{c}{next}"), o));
                }
            }
            out.sort_by_key(|&(_, o)| o);
            out
        }
    }
}
