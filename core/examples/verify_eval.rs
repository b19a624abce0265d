//! Verification of sketch candidates by the exact shingle Jaccard (issue 43), for
//! bench/studies/verify/verify_eval.py: the core crate's own code (`simhash_core::verify`), no server.
//!
//!     cargo run --release -p simhash_core --example verify_eval -- pairs PAIRS
//!     cargo run --release -p simhash_core --example verify_eval -- allpairs TEXTS [--threads N]
//!     cargo run --release -p simhash_core --example verify_eval -- sizes TEXTS
//!     cargo run --release -p simhash_core --example verify_eval -- time TEXTS [--reps N]
//!
//! Every method at its defaults: SimHash `Options::default()` (fingerprint, Hamming distance);
//! MinHash `MinHashOptions::default()` with `Lsh::default()` (32 bands × 4 rows). The verification
//! similarity of a SimHash pair is `verify::Shingles` with `verify::for_simhash(&Options::default())`,
//! of a MinHash pair with the MinHash options (both are the same set with the defaults: checked).
//!
//! `pairs`: PAIRS holds `text_a<TAB>text_b` per line. Per pair one line, tab-separated:
//! `distance jv_simhash jv_minhash estimate band` — distance 65 when a text has no fingerprint;
//! `-` for the MinHash fields when a text has no signature; band `1` when the signatures share a band.
//!
//! `allpairs`: TEXTS holds one text per line. Over all pairs i < j it computes the SimHash distance,
//! whether the signatures share a band, the estimate, the verification Jaccard J (shingles) and the
//! **character 5-gram Jaccard** J5 of the texts (lowercased, whitespace removed, the set of windows
//! of 5 characters, the whole text when shorter; as bench/studies/minhash/minhash_eval.py's `j5`),
//! each 5-gram by its 64-bit hash. A pair is *unrelated* when J5 < 0.1. Prints
//! `PAIRS n`, `UNRELATED n`, then histograms over unrelated pairs of J in 200ths:
//! `HIST name bucket count` for name `all` (every unrelated pair), `sim7` (distance ≤ 7), `band`
//! (shares a band), `band_est50` (shares a band and estimate ≥ 0.5); `DIST d count` (distance
//! histogram of unrelated pairs); and every unrelated pair with distance ≤ 9, a shared band, an
//! estimate ≥ 0.3 or J ≥ 0.1: `PAIR i j distance band estimate J J5`.
//!
//! `sizes`: per text of TEXTS, the number of distinct shingles (`Shingles::len`).
//!
//! `time`: per text, the time of `Shingles::of_text` and of one `jaccard` against the next text's set,
//! next to `fingerprint` and `minhash`; prints `TIME name texts seconds_per_op` (best of --reps).

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::hint::black_box;
use std::time::Instant;

use simhash_core::minhash::{band_keys, minhash, similarity, Lsh, MinHashOptions, Signature};
use simhash_core::verify::{for_simhash, Shingles};
use simhash_core::{fingerprint, hamming, Options};

fn lines(path: &str) -> Vec<String> {
    std::fs::read_to_string(path)
        .expect("read")
        .lines()
        .map(str::to_owned)
        .collect()
}

fn distance(a: Option<u64>, b: Option<u64>) -> u32 {
    match (a, b) {
        (Some(a), Some(b)) => hamming(a, b),
        _ => 65,
    }
}

/// The sorted distinct hashes of the character 5-grams (lowercased, whitespace removed).
fn gram5(text: &str) -> Vec<u64> {
    let cs: Vec<char> = text
        .to_lowercase()
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    let h = |w: &[char]| {
        let mut s = DefaultHasher::new();
        w.hash(&mut s);
        s.finish()
    };
    let mut out: Vec<u64> = if cs.len() < 5 {
        vec![h(&cs)]
    } else {
        cs.windows(5).map(h).collect()
    };
    out.sort_unstable();
    out.dedup();
    out
}

fn jaccard_sorted(a: &[u64], b: &[u64]) -> f64 {
    let (mut i, mut j, mut n) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        let (x, y) = (a[i], b[j]);
        i += (x <= y) as usize;
        j += (y <= x) as usize;
        n += (x == y) as usize;
    }
    let u = a.len() + b.len() - n;
    if u == 0 {
        0.0
    } else {
        n as f64 / u as f64
    }
}

const BUCKETS: usize = 200;

#[derive(Clone)]
struct Acc {
    pairs: u64,
    unrelated: u64,
    hist: [[u64; BUCKETS + 1]; 4],
    dist: [u64; 66],
    out: Vec<String>,
}

fn main() {
    let mut it = std::env::args().skip(1);
    let mode = it.next().expect("mode");
    let file = it.next().expect("file");
    let mut threads = 1usize;
    let mut reps = 5usize;
    while let Some(x) = it.next() {
        let v = it.next().expect("value");
        match x.as_str() {
            "--threads" => threads = v.parse().expect("threads"),
            "--reps" => reps = v.parse().expect("reps"),
            other => panic!("unknown argument {other}"),
        }
    }
    let so = Options::default();
    let vo = for_simhash(&so);
    let mo = MinHashOptions::default();
    let lsh = Lsh::default();
    match mode.as_str() {
        "pairs" => {
            for line in lines(&file) {
                let (x, y) = line.split_once('\t').expect("text_a<TAB>text_b");
                let d = distance(fingerprint(x, &so), fingerprint(y, &so));
                let jvs = Shingles::of_text(x, &vo).jaccard(&Shingles::of_text(y, &vo));
                let mut out = vec![d.to_string(), format!("{jvs:.6}")];
                match (minhash(x, &mo), minhash(y, &mo)) {
                    (Some(sx), Some(sy)) => {
                        let jm = Shingles::of_text(x, &mo).jaccard(&Shingles::of_text(y, &mo));
                        let (kx, ky) = (band_keys(&sx, &lsh).unwrap(), band_keys(&sy, &lsh).unwrap());
                        let band = kx.iter().zip(&ky).any(|(p, q)| p == q);
                        out.push(format!("{jm:.6}"));
                        out.push(format!("{:.6}", similarity(&sx, &sy).unwrap()));
                        out.push(if band { "1" } else { "0" }.to_string());
                    }
                    _ => out.extend(["-", "-", "-"].map(String::from)),
                }
                println!("{}", out.join("\t"));
            }
        }
        "allpairs" => {
            let texts = lines(&file);
            let n = texts.len();
            let fps: Vec<Option<u64>> = texts.iter().map(|t| fingerprint(t, &so)).collect();
            let sigs: Vec<Option<Signature>> = texts.iter().map(|t| minhash(t, &mo)).collect();
            let keys: Vec<Option<Vec<i64>>> = sigs
                .iter()
                .map(|s| s.as_ref().map(|s| band_keys(s, &lsh).unwrap()))
                .collect();
            let sh: Vec<Shingles> = texts.iter().map(|t| Shingles::of_text(t, &mo)).collect();
            // The SimHash verification set is the MinHash set with the defaults.
            for t in texts.iter().take(200) {
                assert_eq!(Shingles::of_text(t, &vo), Shingles::of_text(t, &mo));
            }
            let g5: Vec<Vec<u64>> = texts.iter().map(|t| gram5(t)).collect();
            let work = |tid: usize| -> Acc {
                let mut a = Acc {
                    pairs: 0,
                    unrelated: 0,
                    hist: [[0; BUCKETS + 1]; 4],
                    dist: [0; 66],
                    out: Vec::new(),
                };
                let mut i = tid;
                while i < n {
                    for j in i + 1..n {
                        a.pairs += 1;
                        let j5 = jaccard_sorted(&g5[i], &g5[j]);
                        if j5 >= 0.1 {
                            continue;
                        }
                        a.unrelated += 1;
                        let d = distance(fps[i], fps[j]);
                        a.dist[d as usize] += 1;
                        let jv = if sh[i].is_empty() || sh[j].is_empty() {
                            0.0
                        } else {
                            sh[i].jaccard(&sh[j])
                        };
                        let b = ((jv * BUCKETS as f64).floor() as usize).min(BUCKETS);
                        let (band, est) = match (&keys[i], &keys[j], &sigs[i], &sigs[j]) {
                            (Some(x), Some(y), Some(s), Some(t)) => {
                                (x.iter().zip(y).any(|(p, q)| p == q), similarity(s, t).unwrap())
                            }
                            _ => (false, -1.0),
                        };
                        a.hist[0][b] += 1;
                        if d <= 7 {
                            a.hist[1][b] += 1;
                        }
                        if band {
                            a.hist[2][b] += 1;
                            if est >= 0.5 {
                                a.hist[3][b] += 1;
                            }
                        }
                        if d <= 9 || band || est >= 0.3 || jv >= 0.1 {
                            a.out.push(format!(
                                "PAIR\t{i}\t{j}\t{d}\t{}\t{est:.6}\t{jv:.6}\t{j5:.6}",
                                band as u8
                            ));
                        }
                    }
                    i += threads;
                }
                a
            };
            let accs: Vec<Acc> = std::thread::scope(|s| {
                let hs: Vec<_> = (0..threads).map(|t| s.spawn(move || work(t))).collect();
                hs.into_iter().map(|h| h.join().unwrap()).collect()
            });
            let pairs: u64 = accs.iter().map(|a| a.pairs).sum();
            assert_eq!(pairs as usize, n * n.saturating_sub(1) / 2);
            println!("PAIRS\t{pairs}");
            println!("UNRELATED\t{}", accs.iter().map(|a| a.unrelated).sum::<u64>());
            for (k, name) in ["all", "sim7", "band", "band_est50"].iter().enumerate() {
                for b in 0..=BUCKETS {
                    let c: u64 = accs.iter().map(|a| a.hist[k][b]).sum();
                    if c > 0 {
                        println!("HIST\t{name}\t{b}\t{c}");
                    }
                }
            }
            for d in 0..66 {
                let c: u64 = accs.iter().map(|a| a.dist[d]).sum();
                if c > 0 {
                    println!("DIST\t{d}\t{c}");
                }
            }
            for a in &accs {
                for l in &a.out {
                    println!("{l}");
                }
            }
        }
        "sizes" => {
            for t in lines(&file) {
                println!("{}", Shingles::of_text(&t, &vo).len());
            }
        }
        "time" => {
            let texts = lines(&file);
            let n = texts.len();
            let best = |f: &mut dyn FnMut()| -> f64 {
                let mut b = f64::INFINITY;
                for _ in 0..reps {
                    let t0 = Instant::now();
                    f();
                    b = b.min(t0.elapsed().as_secs_f64());
                }
                b / n as f64
            };
            let sets: Vec<Shingles> = texts.iter().map(|t| Shingles::of_text(t, &vo)).collect();
            let t_sh = best(&mut || {
                for t in &texts {
                    black_box(Shingles::of_text(black_box(t), &vo));
                }
            });
            let t_j = best(&mut || {
                for i in 0..n {
                    black_box(sets[i].jaccard(&sets[(i + 1) % n]));
                }
            });
            let t_fp = best(&mut || {
                for t in &texts {
                    black_box(fingerprint(black_box(t), &so));
                }
            });
            let t_mh = best(&mut || {
                for t in &texts {
                    black_box(minhash(black_box(t), &mo));
                }
            });
            let bytes: usize = texts.iter().map(String::len).sum();
            let chars: usize = texts.iter().map(|t| t.chars().count()).sum();
            let shingles: usize = sets.iter().map(Shingles::len).sum();
            println!("TEXTS\t{n}\t{}\t{}\t{}", bytes / n, chars / n, shingles / n);
            println!("TIME\tshingles\t{t_sh:.9}");
            println!("TIME\tjaccard\t{t_j:.9}");
            println!("TIME\tfingerprint\t{t_fp:.9}");
            println!("TIME\tminhash\t{t_mh:.9}");
        }
        other => panic!("unknown mode {other}"),
    }
}
