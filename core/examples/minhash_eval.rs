//! MinHash signatures, estimates and band matches for the MinHash benchmark
//! (bench/studies/minhash/minhash_eval.py), computed with the core crate directly, next to SimHash
//! with the default options.
//!
//!     cargo run --release -p simhash_core --example minhash_eval -- pairs PAIRS --config SPEC... --lsh BxR...
//!     cargo run --release -p simhash_core --example minhash_eval -- allpairs TEXTS --config SPEC... --lsh BxR... [--min S]
//!     cargo run --release -p simhash_core --example minhash_eval -- throughput TEXTS --config SPEC... [--reps N]
//!     cargo run --release -p simhash_core --example minhash_eval -- sig TEXTS --config SPEC
//!
//! A SPEC is `tokenizer:shingle:stopwords:fold:k` as [`MinHashOptions::parse`] takes them, e.g.
//! `word:0:false:simplified:128` (the defaults; shingle 0 = per script). `BxR` is bands × rows, e.g.
//! `32x4`; every `--lsh` must fit every SPEC's k.
//!
//! `pairs`: PAIRS holds one pair per line, `text_a<TAB>text_b`. Per pair one line, tab-separated:
//! the SimHash distance with default options (`65` when a text has no fingerprint), then per SPEC
//! `exact_jaccard estimate bands` where `bands` is one character per `--lsh`, `1` when the two
//! signatures share a band (`-` for all three when a text has no signature).
//!
//! `allpairs`: TEXTS holds one text per line, a population of (mostly) unrelated texts. Prints
//! `PAIRS n`, then per SPEC a histogram `HIST spec_index bucket pairs` of estimates in 20ths, and
//! every pair with an estimate ≥ `--min` (default 0.3) or a SimHash distance ≤ 7:
//! `PAIR i j simhash_distance estimate_per_spec... bands_per_spec...`.
//!
//! `throughput`: per round, over all texts in this one thread, the default `simhash()` and then
//! `minhash()` per SPEC, interleaved for `--reps` rounds (default 5), each over the texts `--loops`
//! times (default 1); prints
//! `ROUND r name bytes cpu_seconds wall_seconds` per measurement (CPU time of this thread from
//! /proc/thread-self/stat, 10 ms ticks).
//!
//! `sig`: the encoded signature of each text as hex, and its band keys at `--lsh`.

use std::hint::black_box;
use std::time::Instant;

use simhash_core::minhash::reference::exact_jaccard;
use simhash_core::minhash::{band_keys, minhash, similarity, Lsh, MinHashOptions, Signature};
use simhash_core::{fingerprint, hamming, Options};

fn parse_spec(spec: &str) -> MinHashOptions {
    let p: Vec<&str> = spec.split(':').collect();
    assert_eq!(
        p.len(),
        5,
        "SPEC is tokenizer:shingle:stopwords:fold:k, got {spec:?}"
    );
    MinHashOptions::parse(
        p[0],
        p[1].parse().expect("shingle"),
        p[2].parse().expect("stopwords"),
        p[3],
        p[4].parse().expect("k"),
    )
    .unwrap_or_else(|e| panic!("{spec}: {e}"))
}

fn parse_lsh(s: &str, k: usize) -> Lsh {
    let (b, r) = s.split_once('x').expect("BxR");
    Lsh::parse(b.parse().expect("bands"), r.parse().expect("rows"), k).unwrap_or_else(|e| panic!("{s}: {e}"))
}

struct Args {
    mode: String,
    file: String,
    specs: Vec<(String, MinHashOptions)>,
    lsh: Vec<String>,
    reps: usize,
    loops: usize,
    min: f64,
}

fn args() -> Args {
    let mut it = std::env::args().skip(1);
    let mode = it.next().expect("mode");
    let file = it.next().expect("file");
    let mut a = Args {
        mode,
        file,
        specs: Vec::new(),
        lsh: Vec::new(),
        reps: 5,
        loops: 1,
        min: 0.3,
    };
    while let Some(x) = it.next() {
        let v = it.next().expect("value");
        match x.as_str() {
            "--config" => a.specs.push((v.clone(), parse_spec(&v))),
            "--lsh" => a.lsh.push(v),
            "--reps" => a.reps = v.parse().expect("reps"),
            "--loops" => a.loops = v.parse().expect("loops"),
            "--min" => a.min = v.parse().expect("min"),
            other => panic!("unknown argument {other}"),
        }
    }
    a
}

fn lines(path: &str) -> Vec<String> {
    std::fs::read_to_string(path)
        .expect("read")
        .lines()
        .map(str::to_owned)
        .collect()
}

fn shared(a: &Signature, b: &Signature, lsh: &Lsh) -> bool {
    let (ka, kb) = (band_keys(a, lsh).unwrap(), band_keys(b, lsh).unwrap());
    ka.iter().zip(&kb).any(|(x, y)| x == y)
}

fn distance(a: Option<u64>, b: Option<u64>) -> u32 {
    match (a, b) {
        (Some(a), Some(b)) => hamming(a, b),
        _ => 65,
    }
}

fn main() {
    let a = args();
    let simhash_opts = Options::default();
    match a.mode.as_str() {
        "pairs" => {
            for line in lines(&a.file) {
                let (x, y) = line.split_once('\t').expect("text_a<TAB>text_b");
                let d = distance(fingerprint(x, &simhash_opts), fingerprint(y, &simhash_opts));
                let mut out = vec![d.to_string()];
                for (_, o) in &a.specs {
                    let lsh: Vec<Lsh> = a.lsh.iter().map(|s| parse_lsh(s, o.k)).collect();
                    match (minhash(x, o), minhash(y, o)) {
                        (Some(sx), Some(sy)) => {
                            out.push(format!("{:.6}", exact_jaccard(x, y, o)));
                            out.push(format!("{:.6}", similarity(&sx, &sy).unwrap()));
                            out.push(
                                lsh.iter()
                                    .map(|l| if shared(&sx, &sy, l) { '1' } else { '0' })
                                    .collect(),
                            );
                        }
                        _ => out.extend(["-".to_string(), "-".to_string(), "-".to_string()]),
                    }
                }
                println!("{}", out.join("\t"));
            }
        }
        "allpairs" => {
            let texts = lines(&a.file);
            let fps: Vec<Option<u64>> = texts.iter().map(|t| fingerprint(t, &simhash_opts)).collect();
            let sigs: Vec<Vec<Option<Signature>>> = a
                .specs
                .iter()
                .map(|(_, o)| texts.iter().map(|t| minhash(t, o)).collect())
                .collect();
            let keys: Vec<Vec<Vec<Option<Vec<i64>>>>> = a
                .specs
                .iter()
                .enumerate()
                .map(|(si, (_, o))| {
                    a.lsh
                        .iter()
                        .map(|l| {
                            let l = parse_lsh(l, o.k);
                            sigs[si]
                                .iter()
                                .map(|s| s.as_ref().map(|s| band_keys(s, &l).unwrap()))
                                .collect()
                        })
                        .collect()
                })
                .collect();
            let n = texts.len();
            println!("PAIRS\t{}", n * n.saturating_sub(1) / 2);
            let mut hist = vec![[0u64; 21]; a.specs.len()];
            for i in 0..n {
                for j in i + 1..n {
                    let d = distance(fps[i], fps[j]);
                    let mut ests = Vec::new();
                    let mut bands = Vec::new();
                    let mut keep = d <= 7;
                    for si in 0..a.specs.len() {
                        let e = match (&sigs[si][i], &sigs[si][j]) {
                            (Some(x), Some(y)) => similarity(x, y).unwrap(),
                            _ => -1.0,
                        };
                        if e >= 0.0 {
                            hist[si][(e * 20.0).floor() as usize] += 1;
                        }
                        if e >= a.min {
                            keep = true;
                        }
                        ests.push(e);
                        let b: String = keys[si]
                            .iter()
                            .map(|per| match (&per[i], &per[j]) {
                                (Some(x), Some(y)) if x.iter().zip(y).any(|(p, q)| p == q) => '1',
                                _ => '0',
                            })
                            .collect();
                        bands.push(b);
                    }
                    if keep {
                        let es: Vec<String> = ests.iter().map(|e| format!("{e:.6}")).collect();
                        println!("PAIR\t{i}\t{j}\t{d}\t{}\t{}", es.join("\t"), bands.join("\t"));
                    }
                }
            }
            for (si, h) in hist.iter().enumerate() {
                for (b, c) in h.iter().enumerate() {
                    println!("HIST\t{si}\t{b}\t{c}");
                }
            }
        }
        "throughput" => {
            let one = lines(&a.file);
            let texts: Vec<String> = (0..a.loops).flat_map(|_| one.iter().cloned()).collect();
            let bytes: usize = texts.iter().map(String::len).sum();
            for r in 0..a.reps {
                let (c0, w0) = (cpu(), Instant::now());
                let mut sum = 0u64;
                for t in &texts {
                    sum = sum.wrapping_add(black_box(fingerprint(black_box(t), &simhash_opts)).unwrap_or(0));
                }
                black_box(sum);
                println!(
                    "ROUND\t{r}\tsimhash\t{bytes}\t{:.3}\t{:.4}",
                    cpu() - c0,
                    w0.elapsed().as_secs_f64()
                );
                for (name, o) in &a.specs {
                    let (c0, w0) = (cpu(), Instant::now());
                    let mut sum = 0u64;
                    for t in &texts {
                        if let Some(s) = black_box(minhash(black_box(t), o)) {
                            sum = sum.wrapping_add(u64::from(s.values()[0]));
                        }
                    }
                    black_box(sum);
                    println!(
                        "ROUND\t{r}\tminhash {name}\t{bytes}\t{:.3}\t{:.4}",
                        cpu() - c0,
                        w0.elapsed().as_secs_f64()
                    );
                }
            }
        }
        "sig" => {
            let (_, o) = &a.specs[0];
            for t in lines(&a.file) {
                match minhash(&t, o) {
                    Some(s) => {
                        let hex: String = s.encode().iter().map(|b| format!("{b:02x}")).collect();
                        let keys: Vec<String> = a
                            .lsh
                            .iter()
                            .map(|l| format!("{:?}", band_keys(&s, &parse_lsh(l, o.k)).unwrap()))
                            .collect();
                        println!("{hex}\t{}", keys.join("\t"));
                    }
                    None => println!("NULL"),
                }
            }
        }
        other => panic!("unknown mode {other}"),
    }
}

/// CPU time used so far by this thread (utime + stime from /proc/thread-self/stat, 10 ms ticks).
fn cpu() -> f64 {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |x| x.1)
        .split_whitespace()
        .collect();
    let tick = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
    (tick(11) + tick(12)) as f64 / 100.0
}
