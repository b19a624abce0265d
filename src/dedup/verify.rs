//! Verified dedup (issue 43, docs/ARCHITECTURE.md §9.5): the candidate pairs of a method's search,
//! kept only when the exact similarity of the two rows' texts (`simhash_core::verify`) reaches the
//! threshold.
//!
//! A search gives its candidates as groups of rows with identical stored values (every pair inside
//! a group is a candidate) and pairs of groups (every pair of a row of one and a row of the other
//! is). The texts of the rows in at least one candidate pair are read, in batches, and each is
//! shingled once; identical shingle sets are kept once, so the many copies of one text cost one
//! set and their pairs no comparison. Clusters unite rows as pairs pass, and verify a pair only
//! when its two rows are not in one cluster yet.

use std::collections::HashMap;
use std::rc::Rc;

use simhash_core::pairs::Clusters;
use simhash_core::verify::Shingles;

use crate::check::verify::Verifier;
use crate::progress::Reporter;

/// Rows whose texts are read in one statement: by ctid (a local table: each row found directly), and
/// by key (a Citus table: each statement reads every shard, so fewer, larger batches; about 40 MB of
/// texts of 2 KB).
pub const TEXT_BATCH: usize = 1_000;
pub const KEY_BATCH: usize = 20_000;

/// The candidates of a search: `groups[g]` lists rows (indexes in key order, increasing) whose
/// stored values are identical, and `pairs` the pairs of groups whose rows are candidates, each
/// with the distance of their fingerprints (SimHash; None for MinHash).
pub struct Candidates {
    pub groups: Vec<Vec<u32>>,
    /// Whether the pairs inside a group are candidates, and their distance.
    pub identical: Option<Option<i32>>,
    pub pairs: Vec<(u32, u32, Option<i32>)>,
}

impl Candidates {
    /// The rows in at least one candidate pair, in increasing order.
    pub fn rows(&self) -> Vec<u32> {
        let mut needed = vec![false; self.groups.len()];
        if self.identical.is_some() {
            for (g, members) in self.groups.iter().enumerate() {
                needed[g] = members.len() >= 2;
            }
        }
        for &(g, h, _) in &self.pairs {
            needed[g as usize] = true;
            needed[h as usize] = true;
        }
        let mut rows: Vec<u32> = needed
            .iter()
            .enumerate()
            .filter(|(_, &n)| n)
            .flat_map(|(g, _)| self.groups[g].iter().copied())
            .collect();
        rows.sort_unstable();
        rows
    }

    /// Every candidate pair of rows `(a, b, distance)`, `a < b`: the pairs inside each group, then
    /// the pairs of each pair of groups; expanded lazily.
    pub fn row_pairs(self) -> impl Iterator<Item = (u32, u32, Option<i32>)> {
        let groups = Rc::new(self.groups);
        let g = groups.clone();
        let inside = self.identical.into_iter().flat_map(move |d| {
            let g = g.clone();
            (0..g.len()).flat_map(move |grp| {
                let g = g.clone();
                let n = g[grp].len();
                (0..n).flat_map(move |x| {
                    let g = g.clone();
                    (x + 1..n).map(move |y| (g[grp][x], g[grp][y], d))
                })
            })
        });
        let between = self.pairs.into_iter().flat_map(move |(ga, gb, d)| {
            let g = groups.clone();
            let (ga, gb) = (ga as usize, gb as usize);
            (0..g[ga].len()).flat_map(move |x| {
                let g = g.clone();
                (0..g[gb].len()).map(move |y| {
                    let (a, b) = (g[ga][x], g[gb][y]);
                    (a.min(b), a.max(b), d)
                })
            })
        });
        inside.chain(between)
    }
}

/// No shingle set: the row's text was not read, is NULL, or the row is gone.
const NONE: u32 = u32::MAX;

/// The shingle sets of the candidate rows, each distinct set kept once.
pub struct ShingleSets {
    /// The set of each row of the table ([`NONE`] for a row whose text was not read).
    set_of: Vec<u32>,
    sets: Vec<Shingles>,
}

/// Reads the texts of `rows` (increasing) in batches: `fetch(batch, found)` calls `found(row,
/// text)` for each row of `batch` whose text it finds (a NULL text or a row gone is not found).
pub type Fetch<'a> = dyn FnMut(&[u32], &mut dyn FnMut(u32, &str)) + 'a;

impl ShingleSets {
    /// The shingle sets of `rows` among `nrows` rows, their texts read by `fetch` and shingled with
    /// the verifier's options.
    pub fn read(
        nrows: usize,
        rows: &[u32],
        verifier: &Verifier,
        batch_size: usize,
        fetch: &mut Fetch,
        reporter: &mut Reporter,
    ) -> ShingleSets {
        let mut set_of = vec![NONE; nrows];
        let mut sets: Vec<Shingles> = Vec::new();
        let mut by_hash: HashMap<u64, Vec<u32>> = HashMap::new();
        let mut done = 0usize;
        for batch in rows.chunks(batch_size) {
            fetch(batch, &mut |row, text| {
                let shingles = verifier.shingles_of(text);
                let hash = set_hash(&shingles);
                let same = by_hash.entry(hash).or_default();
                let id = match same.iter().find(|&&id| sets[id as usize] == shingles) {
                    Some(&id) => id,
                    None => {
                        let id = sets.len() as u32;
                        sets.push(shingles);
                        same.push(id);
                        id
                    }
                };
                set_of[row as usize] = id;
            });
            done += batch.len();
            let distinct = sets.len();
            reporter.report(|| {
                format!(
                    "verifying: read the texts of {done} of {} candidate rows ({distinct} distinct shingle sets)",
                    rows.len()
                )
            });
        }
        ShingleSets { set_of, sets }
    }

    /// The exact similarity of rows `a` and `b` (0 when either text is missing or has no shingle).
    pub fn similarity(&self, a: u32, b: u32) -> f64 {
        let (sa, sb) = (self.set_of[a as usize], self.set_of[b as usize]);
        if sa == NONE || sb == NONE {
            return 0.0;
        }
        let set = &self.sets[sa as usize];
        if sa == sb {
            return if set.is_empty() { 0.0 } else { 1.0 };
        }
        set.jaccard(&self.sets[sb as usize])
    }

    /// Whether row `row` has a shingle: a row without any is similar to none.
    fn has_shingles(&self, row: u32) -> bool {
        let s = self.set_of[row as usize];
        s != NONE && !self.sets[s as usize].is_empty()
    }

    /// The set of row `row`, for rows grouped by identical sets.
    fn set(&self, row: u32) -> u32 {
        self.set_of[row as usize]
    }
}

/// A hash of a shingle set, to find identical sets.
fn set_hash(s: &Shingles) -> u64 {
    s.hashes().iter().fold(s.len() as u64, |acc, &h| {
        (acc ^ h).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29)
    })
}

/// Pairs verified between two calls of the progress and cancellation check.
const TICK_EVERY: u64 = 65_536;

/// The verified pairs `(a, b, distance, similarity)` of `candidates`: those whose exact
/// similarity reaches `threshold`, with it; lazily, in the order of [`Candidates::row_pairs`].
pub fn verified_pairs(
    candidates: Candidates,
    sets: ShingleSets,
    threshold: f64,
    mut reporter: Reporter,
) -> impl Iterator<Item = (u32, u32, Option<i32>, f64)> {
    let (mut seen, mut kept) = (0u64, 0u64);
    candidates.row_pairs().filter_map(move |(a, b, d)| {
        seen += 1;
        if seen.is_multiple_of(TICK_EVERY) {
            reporter.report(|| format!("verified {seen} candidate pairs, {kept} kept"));
        }
        let s = sets.similarity(a, b);
        (s >= threshold).then(|| {
            kept += 1;
            (a, b, d, s)
        })
    })
}

/// The representative (first row in key order) of each of `nrows` rows' cluster: the connected
/// components of the verified pairs of `candidates`.
pub fn verified_clusters(
    nrows: usize,
    candidates: &Candidates,
    sets: &ShingleSets,
    threshold: f64,
    reporter: &mut Reporter,
) -> Vec<u32> {
    let mut clusters = Clusters::new(nrows);
    let mut verified = 0u64;
    // A row without shingles has similarity 0 to every row: it passes only a threshold of 0.
    let usable = |r: &u32| threshold <= 0.0 || sets.has_shingles(*r);
    let mut try_pair = |clusters: &mut Clusters, a: u32, b: u32| {
        if clusters.find(a) != clusters.find(b) {
            verified += 1;
            if verified.is_multiple_of(TICK_EVERY) {
                reporter.report(|| format!("verified {verified} candidate pairs"));
            }
            if sets.similarity(a, b) >= threshold {
                clusters.union(a, b);
            }
        }
    };
    // One row per distinct shingle set of each group: the rows of one set in a group are one
    // cluster already when the pairs inside a group are candidates (their similarity is 1).
    let firsts: Vec<Vec<u32>> = candidates
        .groups
        .iter()
        .map(|members| {
            if candidates.identical.is_none() {
                return members.iter().copied().filter(usable).collect();
            }
            let mut first: Vec<u32> = Vec::new();
            // A row without shingles matches none.
            for &r in members.iter().filter(|r| usable(r)) {
                let s = sets.set(r);
                match first.iter().find(|&&f| sets.set(f) == s) {
                    Some(&f) => {
                        if sets.similarity(f, r) >= threshold {
                            clusters.union(f, r)
                        }
                    }
                    None => first.push(r),
                }
            }
            first
        })
        .collect();
    if candidates.identical.is_some() {
        for first in &firsts {
            for (x, &a) in first.iter().enumerate() {
                for &b in &first[x + 1..] {
                    try_pair(&mut clusters, a, b);
                }
            }
        }
    }
    for &(g, h, _) in &candidates.pairs {
        for &a in &firsts[g as usize] {
            for &b in &firsts[h as usize] {
                try_pair(&mut clusters, a, b);
            }
        }
    }
    (0..nrows as u32).map(|i| clusters.find(i)).collect()
}
