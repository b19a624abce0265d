//! Single-threaded throughput of the pure fingerprint, next to raw jieba-rs segmentation.
//!
//!     cargo run --release -p simhash_core --example throughput -- FILE [--reps N] [--config SPEC]...
//!
//! FILE holds one document per line (UTF-8). Every measurement runs over all lines of FILE, in
//! this one thread, `--reps` times (default 3), the measurements interleaved; the fastest
//! repetition of each is reported. MB are 10^6 bytes of document text (line terminators not
//! counted), the same bytes that `octet_length(body)` sums in SQL.
//!
//! `--only SUBSTRING` keeps the measurements whose name contains it (for a profiler).
//!
//! A SPEC is `tokenizer[:shingle[:weighting[:stopwords[:fold]]]]`, e.g. `jieba`, `char:3`,
//! `word:1:binary:false`, `word:1:logtf:true:none` (fold `auto` when not given). Without `--config` the three SQL variants of the benchmark are measured:
//! `jieba`, `word` (the SQL defaults) and `char:3`. Each configuration is measured twice: `fingerprint`
//! (the public function: the fast path where it applies) and `reference` (the straightforward
//! pipeline the fast path is tested against); their checksums must be equal.
//!
//! Output: one tab-separated line per measurement,
//!
//!     RESULT  name  bytes  docs  best_seconds  MB/s  checksum  best_cpu_seconds
//!
//! where best_seconds is wall-clock time and best_cpu_seconds the CPU time of this thread
//! (10 ms resolution), the figure that other processes on a busy machine cannot inflate;
//! `checksum` is the exact sum of the fingerprints read as signed 64-bit integers (NULLs
//! skipped), the same number as SQL's `sum(simhash(body, ...))`: the two paths agree bit for bit
//! when the checksums match. For `jieba-rs-cut` the checksum is the number of tokens, for
//! `normalize` (NFKC + lowercase alone) the number of bytes it returns.

use std::hint::black_box;
use std::time::Instant;

use simhash_core::reference::reference_try_fingerprint_with;
use simhash_core::{fingerprint, Chunking, Options};

struct Config {
    name: String,
    options: Options,
}

fn parse_config(spec: &str) -> Config {
    let parts: Vec<&str> = spec.split(':').collect();
    let tokenizer = parts.first().copied().unwrap_or("jieba");
    let shingle: i32 = parts
        .get(1)
        .map_or(1, |s| s.parse().expect("shingle must be an integer"));
    let weighting = parts.get(2).copied().unwrap_or("tf");
    let stopwords = parts
        .get(3)
        .is_none_or(|s| s.parse().expect("stopwords must be true/false"));
    let fold = parts.get(4).copied().unwrap_or("auto");
    let options = Options::parse_with_fold(tokenizer, shingle, weighting, stopwords, fold)
        .unwrap_or_else(|e| panic!("bad --config {spec:?}: {e}"));
    let fold_part = parts.get(4).map_or(String::new(), |f| format!(":{f}"));
    Config {
        name: format!("fingerprint {tokenizer}:{shingle}:{weighting}:{stopwords}{fold_part}"),
        options,
    }
}

/// One measurement: a name and the work it times over the whole input (returns a checksum).
struct Case<'a> {
    name: String,
    work: Box<dyn Fn() -> i128 + 'a>,
}

/// CPU time used so far by the calling thread, from /proc/thread-self/stat (utime + stime, in the
/// kernel's USER_HZ = 100 ticks per second); None where /proc is missing.
fn thread_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(ticks as f64 / 100.0)
}

/// The best (smallest) wall-clock time and thread CPU time of one case, and its checksum.
struct Best {
    wall: f64,
    cpu: f64,
    checksum: i128,
}

/// Runs every case `reps` times, the cases interleaved (case 1, case 2, ..., case 1, ...) so that
/// a burst of foreign load on the machine hits all cases alike.
fn best_of_interleaved(reps: usize, cases: &[Case<'_>]) -> Vec<Best> {
    let mut out: Vec<Best> = cases
        .iter()
        .map(|_| Best {
            wall: f64::INFINITY,
            cpu: f64::INFINITY,
            checksum: 0,
        })
        .collect();
    for _ in 0..reps {
        for (case, best) in cases.iter().zip(out.iter_mut()) {
            let cpu = thread_cpu_seconds();
            let start = Instant::now();
            best.checksum = black_box((case.work)());
            best.wall = best.wall.min(start.elapsed().as_secs_f64());
            if let (Some(before), Some(after)) = (cpu, thread_cpu_seconds()) {
                best.cpu = best.cpu.min(after - before);
            }
        }
    }
    out
}

fn report(name: &str, bytes: usize, docs: usize, best: &Best) {
    let mbps = bytes as f64 / 1e6 / best.wall;
    let (wall, cpu, checksum) = (best.wall, best.cpu, best.checksum);
    println!("RESULT\t{name}\t{bytes}\t{docs}\t{wall:.4}\t{mbps:.2}\t{checksum}\t{cpu:.2}");
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut file = None;
    let mut reps = 3usize;
    let mut configs = Vec::new();
    let mut only: Option<String> = None;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--only" => only = Some(args.next().expect("--only SUBSTRING")),
            "--reps" => reps = args.next().and_then(|s| s.parse().ok()).expect("--reps N"),
            "--config" => configs.push(parse_config(&args.next().expect("--config SPEC"))),
            "-h" | "--help" => {
                eprintln!("usage: throughput FILE [--reps N] [--config tokenizer[:shingle[:weighting[:stopwords[:fold]]]]]...");
                return;
            }
            _ if file.is_none() => file = Some(arg),
            _ => panic!("unexpected argument {arg:?}"),
        }
    }
    let file = file.expect("usage: throughput FILE [--reps N] [--config SPEC]...");
    if configs.is_empty() {
        configs = ["jieba", "word", "char:3"]
            .iter()
            .map(|s| parse_config(s))
            .collect();
    }

    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("reading {file}: {e}"));
    let docs: Vec<&str> = text.lines().collect();
    let bytes: usize = docs.iter().map(|d| d.len()).sum();
    eprintln!(
        "{file}: {} documents, {:.1} MB, best of {reps}",
        docs.len(),
        bytes as f64 / 1e6
    );

    // Build the dictionary before any clock starts: a backend pays this once, not per row.
    let jieba = simhash_core::tokenize::jieba();
    black_box(fingerprint("预热 warm-up", &Options::default()));

    let mut cases: Vec<Case<'_>> = Vec::new();
    // The floor of this design: jieba-rs segmentation alone, on the raw (unnormalized) text.
    cases.push(Case {
        name: "jieba-rs-cut".into(),
        work: Box::new(|| {
            docs.iter()
                .map(|d| jieba.cut(black_box(d), true).len() as i128)
                .sum()
        }),
    });
    // Step 1 alone (NFKC + lowercase), for the breakdown of where the time goes.
    cases.push(Case {
        name: "normalize".into(),
        work: Box::new(|| {
            docs.iter()
                .map(|d| simhash_core::normalize::normalize(black_box(d)).len() as i128)
                .sum()
        }),
    });
    // The fast normalization alone (what the fast path does instead of `normalize`).
    cases.push(Case {
        name: "normalize-fast".into(),
        work: Box::new(|| {
            let mut buf = String::new();
            docs.iter()
                .map(|d| {
                    simhash_core::fast::normalize_into(black_box(d), &mut buf);
                    buf.len() as i128
                })
                .sum()
        }),
    });
    for config in &configs {
        cases.push(Case {
            name: config.name.clone(),
            work: Box::new(|| {
                docs.iter()
                    .filter_map(|d| fingerprint(black_box(d), &config.options))
                    .map(|fp| fp as i64 as i128)
                    .sum()
            }),
        });
        cases.push(Case {
            name: config.name.replacen("fingerprint", "reference", 1),
            work: Box::new(|| {
                docs.iter()
                    .filter_map(|d| {
                        reference_try_fingerprint_with(
                            black_box(d),
                            &config.options,
                            Chunking::default(),
                            &mut || {},
                        )
                        .unwrap_or_else(|e| e.abort())
                    })
                    .map(|fp| fp as i64 as i128)
                    .sum()
            }),
        });
    }
    if let Some(only) = &only {
        cases.retain(|c| c.name.contains(only.as_str()));
    }
    for (case, best) in cases.iter().zip(best_of_interleaved(reps, &cases)) {
        report(&case.name, bytes, docs.len(), &best);
    }
}
