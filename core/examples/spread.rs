//! Fingerprints and all-pairs statistics for the spread benchmark (bench/spread.py), computed with
//! the core crate directly: the same code as SQL `simhash()`, without a server.
//!
//!     cargo run --release -p simhash_core --example spread -- fp TEXTS --config SPEC...
//!     cargo run --release -p simhash_core --example spread -- allpairs TEXTS [--kmax K] --config SPEC...
//!
//! TEXTS holds one text per line (UTF-8). A SPEC is `tokenizer:shingle:weighting:stopwords:fold`,
//! e.g. `word:1:tf:false:none` (the 0.2.0 defaults) or `word:1:logtfidf:true:simplified`.
//!
//! `fp` prints one line per text: the fingerprint of each SPEC as a signed 64-bit integer (what SQL
//! returns) or `NULL`, tab-separated.
//!
//! `allpairs` treats the texts as a population of unrelated documents. For each SPEC it compares
//! every pair of fingerprints and prints, tab-separated:
//!
//!     NULLS    spec  texts_without_fingerprint
//!     HIST     spec  d  pairs          (d = 0..64; pairs at distance d, related ones removed)
//!     CHECKED  spec  C                 (pairs within C were checked for copies: K, or 8 when more
//!                                       than 2,000,000 pairs lie within K)
//!     RELATED  spec  d  pairs          (d = 0..C: pairs found related and removed from HIST)
//!     BAND     spec  band  largest_bucket  rows   (4 bands of 16 bits, SPEC §3)
//!     EXAMPLE  spec  i  j  d           (a few unrelated pairs within distance 3, line numbers from 0)
//!
//! A pair within distance C is "related" when the two texts share more than 30 % of
//! their character 4-grams (lowercased, whitespace removed: evalset.py's test for mislabelled
//! negatives): packages ship copies of one another's text, and such a pair is a true near-duplicate,
//! not a false match. Pairs beyond C are not checked.

use std::collections::{HashMap, HashSet};

use simhash_core::{band, fingerprint, Options};

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
    let configs: Vec<Options> = specs.iter().map(|s| parse_config(s)).collect();
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("reading {file}: {e}"));
    let docs: Vec<&str> = text.lines().collect();
    match mode.as_str() {
        "fp" => {
            let mut out = String::new();
            for d in &docs {
                let row: Vec<String> = configs
                    .iter()
                    .map(|o| fingerprint(d, o).map_or("NULL".into(), |fp| (fp as i64).to_string()))
                    .collect();
                out.push_str(&row.join("\t"));
                out.push('\n');
            }
            print!("{out}");
        }
        "allpairs" => allpairs(&docs, &specs, &configs, kmax),
        other => panic!("unknown mode {other:?}"),
    }
}

/// Largest distance reported as a match; pairs up to `--kmax` are checked for copies while there are
/// at most `CHECK_CAP` of them, so that the tail beyond 8 that extrapolations use is clean too.
const REPORT_K: u32 = 8;
const CHECK_CAP: usize = 2_000_000;

fn allpairs(docs: &[&str], specs: &[String], configs: &[Options], kmax: u32) {
    // 4-gram sets are built on demand: only texts in some close pair need one.
    let mut grams: HashMap<usize, Vec<u64>> = HashMap::new();
    let mut related_cache: HashMap<(usize, usize), bool> = HashMap::new();
    for (spec, options) in specs.iter().zip(configs) {
        let fps: Vec<(usize, u64)> = docs
            .iter()
            .enumerate()
            .filter_map(|(i, d)| fingerprint(d, options).map(|fp| (i, fp)))
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
