//! All near-duplicate pairs of a collection of fingerprints, and their clusters.
//!
//! Pairs within distance k are found by equality of parts (multi-index hashing): split the 64 bits
//! into at least k+1 parts and two fingerprints within distance k agree on one part (pigeonhole). The
//! first level uses the bands of docs/ARCHITECTURE.md §4.1. A bucket of fingerprints that agree on a part but is still large
//! (a band value that boilerplate-heavy text makes common) is split again on its remaining bits into
//! k+1 parts, recursively, so a skewed bucket costs about its size times the depth instead of its size
//! squared, unless its members really are near each other. Each pair is reported once: at every level
//! only in the bucket of the first part on which the two fingerprints agree.

use crate::bands::{band_bits, hamming};

/// Buckets at most this big are compared pair by pair.
const LEAF: usize = 24;

/// Levels of splitting below the first: each level can visit a pair in up to k+1 buckets.
const MAX_DEPTH: usize = 3;

/// Fingerprints handled between two calls of the progress and cancellation callback.
const TICK_EVERY: u64 = 4096;

/// Largest distance `near_pairs` accepts: beyond it parts get so narrow that buckets stop shrinking.
pub const MAX_PAIR_DISTANCE: u32 = 16;

/// Work done so far, for progress reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    /// First-level parts (bands) finished, out of `parts`.
    pub parts_done: usize,
    pub parts: usize,
    /// Fingerprint pairs compared bit by bit.
    pub compared: u64,
    /// Pairs within the distance found.
    pub pairs: u64,
}

/// Fingerprints sorted into groups of identical value: `distinct[g]` is the value of group `g`, and
/// `group[i]` the group of input `i`.
pub struct Groups {
    pub distinct: Vec<u64>,
    pub group: Vec<u32>,
}

impl Groups {
    /// The inputs of each group: `members(&ids)[g]` lists `ids[i]` for every input `i` of group `g`,
    /// in input order.
    pub fn members(&self, ids: &[u32]) -> Vec<Vec<u32>> {
        let mut members: Vec<Vec<u32>> = vec![Vec::new(); self.distinct.len()];
        for (i, &g) in self.group.iter().enumerate() {
            members[g as usize].push(ids[i]);
        }
        members
    }
}

/// Collapses identical fingerprints, so that exact duplicates cost nothing in the pair search.
pub fn group_identical(fps: &[u64]) -> Groups {
    let mut order: Vec<u32> = (0..fps.len() as u32).collect();
    order.sort_unstable_by_key(|&i| fps[i as usize]);
    let mut distinct = Vec::new();
    let mut group = vec![0u32; fps.len()];
    for &i in &order {
        let fp = fps[i as usize];
        if distinct.last() != Some(&fp) {
            distinct.push(fp);
        }
        group[i as usize] = (distinct.len() - 1) as u32;
    }
    Groups { distinct, group }
}

/// The masks of the first-level parts: the bands (docs/ARCHITECTURE.md §4.1) when there are enough of them for `k`,
/// otherwise k+1 parts of the 64 bits.
fn top_level_parts(k: u32, nbands: u32) -> Vec<u64> {
    if nbands > k {
        (0..nbands)
            .map(|i| {
                let (start, end) = band_bits(i, nbands);
                mask_of_range(start, end)
            })
            .collect()
    } else {
        split_bits(u64::MAX, k + 1)
    }
}

fn mask_of_range(start: u32, end: u32) -> u64 {
    let width = end - start;
    if width == 64 {
        u64::MAX
    } else {
        ((1u64 << width) - 1) << start
    }
}

/// Splits the set bits of `free` into `parts` groups of consecutive set bits, as even as possible.
fn split_bits(free: u64, parts: u32) -> Vec<u64> {
    let bits: Vec<u32> = (0..64).filter(|b| free >> b & 1 == 1).collect();
    let n = bits.len() as u32;
    (0..parts)
        .map(|p| {
            let (lo, hi) = ((n * p / parts) as usize, (n * (p + 1) / parts) as usize);
            bits[lo..hi].iter().fold(0u64, |m, &b| m | 1 << b)
        })
        .collect()
}

/// Every pair `(i, j, distance)`, `i < j`, of `fps` (which should hold distinct values) within
/// distance `k`. `tick` runs often enough to check for cancellation and report progress.
pub fn near_pairs(fps: &[u64], k: u32, nbands: u32, tick: &mut dyn FnMut(&Progress)) -> Vec<(u32, u32, u32)> {
    let mut out = Vec::new();
    for_each_near_pair(fps, k, nbands, tick, &mut |i, j, d| out.push((i, j, d)));
    out
}

/// [`near_pairs`], handing each pair to `emit` instead of collecting them: clusters need no list.
pub fn for_each_near_pair(
    fps: &[u64],
    k: u32,
    nbands: u32,
    tick: &mut dyn FnMut(&Progress),
    emit: &mut dyn FnMut(u32, u32, u32),
) {
    let mut search = Search {
        fps,
        k,
        emit,
        path: Vec::new(),
        progress: Progress::default(),
        since_tick: 0,
        tick,
    };
    let parts = top_level_parts(k, nbands);
    search.progress.parts = parts.len();
    let mut ids: Vec<u32> = (0..fps.len() as u32).collect();
    search.partition(&mut ids, u64::MAX, parts, true);
}

struct Search<'a> {
    fps: &'a [u64],
    k: u32,
    emit: &'a mut dyn FnMut(u32, u32, u32),
    /// The parts (masks) of every level above, with the part each bucket came from.
    path: Vec<(Vec<u64>, usize)>,
    progress: Progress,
    since_tick: u64,
    tick: &'a mut dyn FnMut(&Progress),
}

impl Search<'_> {
    /// Looks for pairs among `ids`, which agree on every bit outside `free`.
    /// `parent` is the size of the bucket this one was cut from (`usize::MAX` under the first level).
    fn bucket(&mut self, ids: &mut [u32], free: u64, parent: usize) {
        // Splitting again pays only while it shrinks buckets: a bucket of fingerprints that agree on
        // nearly every bit (reposts with tiny edits) would otherwise be re-split k+1 ways per level.
        let shrinking = ids.len() <= parent / 2;
        if ids.len() <= LEAF || free.count_ones() <= self.k || self.path.len() > MAX_DEPTH || !shrinking {
            return self.compare_all(ids);
        }
        let parts = split_bits(free, self.k + 1);
        self.partition(ids, free, parts, false);
    }

    /// Buckets `ids` by each part in turn and searches every bucket of two or more.
    fn partition(&mut self, ids: &mut [u32], free: u64, parts: Vec<u64>, top: bool) {
        for (p, &mask) in parts.iter().enumerate() {
            let fps = self.fps;
            ids.sort_unstable_by_key(|&i| fps[i as usize] & mask);
            self.path.push((parts.clone(), p));
            let mut start = 0;
            while start < ids.len() {
                let value = fps[ids[start] as usize] & mask;
                let end = start
                    + ids[start..]
                        .iter()
                        .take_while(|&&i| fps[i as usize] & mask == value)
                        .count();
                if end - start >= 2 {
                    // Sorting a sub-slice in place is safe: the next part re-sorts the whole slice.
                    let parent = if top { usize::MAX } else { ids.len() };
                    self.bucket(&mut ids[start..end], free & !mask, parent);
                }
                start = end;
            }
            self.path.pop();
            if top {
                self.progress.parts_done = p + 1;
                (self.tick)(&self.progress);
            }
        }
    }

    fn compare_all(&mut self, ids: &[u32]) {
        for (x, &a) in ids.iter().enumerate() {
            for &b in &ids[x + 1..] {
                let (fa, fb) = (self.fps[a as usize], self.fps[b as usize]);
                let d = hamming(fa, fb);
                if d <= self.k && self.is_canonical(fa, fb) {
                    (self.emit)(a.min(b), a.max(b), d);
                    self.progress.pairs += 1;
                }
            }
            self.progress.compared += (ids.len() - x - 1) as u64;
        }
        self.since_tick += ids.len() as u64;
        if self.since_tick >= TICK_EVERY {
            self.since_tick = 0;
            (self.tick)(&self.progress);
        }
    }

    /// Whether this is the bucket where the pair is reported: at every level, the first part on which
    /// the two agree is the part this bucket came from.
    fn is_canonical(&self, a: u64, b: u64) -> bool {
        self.path
            .iter()
            .all(|(parts, p)| parts.iter().position(|&m| a & m == b & m) == Some(*p))
    }
}

/// Union-find over rows: `parent[i]` leads to the cluster's representative, its smallest row index.
pub struct Clusters {
    parent: Vec<u32>,
}

impl Clusters {
    pub fn new(rows: usize) -> Self {
        Clusters {
            parent: (0..rows as u32).collect(),
        }
    }

    pub fn find(&mut self, mut i: u32) -> u32 {
        while self.parent[i as usize] != i {
            let grand = self.parent[self.parent[i as usize] as usize];
            self.parent[i as usize] = grand;
            i = grand;
        }
        i
    }

    pub fn union(&mut self, a: u32, b: u32) {
        let (ra, rb) = (self.find(a), self.find(b));
        // The smaller index wins, so the representative is the first row of the cluster.
        let (keep, join) = if ra < rb { (ra, rb) } else { (rb, ra) };
        self.parent[join as usize] = keep;
    }
}

/// The representative (smallest row index) of every row's cluster, for rows linked by identical
/// fingerprints or by pairs between groups (`rows_of_group[g]` lists the rows of group `g`, which
/// holds `distinct[g]`). Pairs are found and merged as they come: none is stored.
pub fn cluster_rows(
    rows: usize,
    rows_of_group: &[Vec<u32>],
    distinct: &[u64],
    k: u32,
    nbands: u32,
    tick: &mut dyn FnMut(&Progress),
) -> Vec<u32> {
    let mut clusters = Clusters::new(rows);
    for members in rows_of_group {
        for &m in members.iter().skip(1) {
            clusters.union(members[0], m);
        }
    }
    if k > 0 {
        for_each_near_pair(distinct, k, nbands, tick, &mut |ga, gb, _| {
            clusters.union(rows_of_group[ga as usize][0], rows_of_group[gb as usize][0]);
        });
    }
    (0..rows as u32).map(|i| clusters.find(i)).collect()
}

/// One bucket of a search split across machines: `fps` are the fingerprints (in any order, repeats
/// allowed) that share the value of part `part` of the k+1 parts of
/// [`crate::probe::registry_buckets`]. Returns every pair `(i, j, distance)`, `i < j`, within
/// distance `k` whose first shared part is `part`: over the k+1 · 2^w buckets of a collection each
/// pair within k comes from exactly one bucket (two fingerprints within k share a part; the first
/// one they share names the bucket). Identical fingerprints share part 0.
pub fn bucket_pairs(fps: &[u64], part: u32, k: u32, nbands: u32) -> Vec<(u32, u32, u32)> {
    let groups = group_identical(fps);
    let rows_of_group = groups.members(&(0..fps.len() as u32).collect::<Vec<_>>());
    let parts: Vec<Vec<u64>> = groups
        .distinct
        .iter()
        .map(|&fp| {
            crate::probe::registry_buckets(fp, k)
                .into_iter()
                .map(|(_, v)| v)
                .collect()
        })
        .collect();
    let first_shared = |ga: usize, gb: usize| (0..parts[ga].len()).find(|&p| parts[ga][p] == parts[gb][p]);
    let mut out = Vec::new();
    if part == 0 {
        for members in &rows_of_group {
            for (x, &a) in members.iter().enumerate() {
                out.extend(members[x + 1..].iter().map(|&b| (a, b, 0)));
            }
        }
    }
    if k > 0 {
        for_each_near_pair(&groups.distinct, k, nbands, &mut |_| {}, &mut |ga, gb, d| {
            let (ga, gb) = (ga as usize, gb as usize);
            if first_shared(ga, gb) != Some(part as usize) {
                return;
            }
            for &a in &rows_of_group[ga] {
                out.extend(rows_of_group[gb].iter().map(|&b| (a.min(b), a.max(b), d)));
            }
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    fn brute(fps: &[u64], k: u32) -> BTreeSet<(u32, u32, u32)> {
        let mut out = BTreeSet::new();
        for i in 0..fps.len() {
            for j in i + 1..fps.len() {
                let d = hamming(fps[i], fps[j]);
                if d <= k {
                    out.insert((i as u32, j as u32, d));
                }
            }
        }
        out
    }

    fn pairs(fps: &[u64], k: u32, nbands: u32) -> Vec<(u32, u32, u32)> {
        near_pairs(fps, k, nbands, &mut |_| {})
    }

    /// Random fingerprints with planted neighbours at distances 0..=k+1.
    fn planted(seed: u64, n: usize, k: u32) -> Vec<u64> {
        let mut x = seed | 1;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut fps = Vec::new();
        while fps.len() < n {
            let base = next();
            fps.push(base);
            for d in 1..=k + 1 {
                let mut v = base;
                while hamming(v, base) < d {
                    v ^= 1 << (next() % 64);
                }
                fps.push(v);
            }
        }
        let groups = group_identical(&fps);
        groups.distinct
    }

    #[test]
    fn finds_exactly_the_brute_force_pairs() {
        for k in [1, 3, 5, 8] {
            for nbands in [4, 6, 9] {
                let fps = planted(k as u64 * 31 + nbands as u64, 1500, k);
                let got = pairs(&fps, k, nbands);
                let set: BTreeSet<_> = got.iter().copied().collect();
                assert_eq!(
                    set.len(),
                    got.len(),
                    "a pair was reported twice (k {k}, nbands {nbands})"
                );
                assert_eq!(set, brute(&fps, k), "k {k}, nbands {nbands}");
            }
        }
    }

    #[test]
    fn a_skewed_band_is_split_not_compared_quadratically() {
        // 20,000 fingerprints sharing band 0 (as boilerplate makes them) but otherwise random.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let fps: Vec<u64> = (0..20_000)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (x & !0xffff) | 0x1234
            })
            .collect();
        let fps = group_identical(&fps).distinct;
        let mut progress = Progress::default();
        let got = near_pairs(&fps, 3, 4, &mut |p| progress = *p);
        assert_eq!(got.iter().copied().collect::<BTreeSet<_>>(), brute(&fps, 3));
        let quadratic = (fps.len() * fps.len() / 2) as u64;
        assert!(
            progress.compared < quadratic / 100,
            "compared {} pairs, quadratic would be {quadratic}",
            progress.compared
        );
    }

    #[test]
    fn a_dense_cluster_of_reposts_stays_cheap() {
        // 2,000 fingerprints within 2 bits of one another: every pair is a result, none is repeated.
        let base = 0x0123_4567_89ab_cdefu64;
        let mut fps = vec![base];
        for a in 0..64 {
            fps.push(base ^ 1 << a);
            for b in a + 1..64 {
                fps.push(base ^ 1 << a ^ 1 << b);
            }
        }
        let fps = group_identical(&fps).distinct;
        let started = std::time::Instant::now();
        let got = pairs(&fps, 3, 4);
        assert_eq!(got.iter().copied().collect::<BTreeSet<_>>(), brute(&fps, 3));
        assert!(started.elapsed().as_secs() < 20, "took {:?}", started.elapsed());
    }

    #[test]
    fn identical_fingerprints_form_groups() {
        let g = group_identical(&[5, 3, 5, 9, 3]);
        assert_eq!(g.distinct, vec![3, 5, 9]);
        assert_eq!(g.group, vec![1, 0, 1, 2, 0]);
    }

    #[test]
    fn clusters_are_transitive_and_keep_the_first_row() {
        // Rows 0..5; groups: {0, 3} identical, {1}, {2}, {4}. Group 1 is 2 bits from group 3, which is
        // 1 bit from group 0: one cluster by chaining; group 2 is far from all.
        let distinct = [0b0000u64, 0b1110, u64::MAX, 0b1000];
        let rows_of_group = vec![vec![0, 3], vec![1], vec![2], vec![4]];
        let reps = cluster_rows(5, &rows_of_group, &distinct, 2, 4, &mut |_| {});
        assert_eq!(reps, vec![0, 0, 2, 0, 0]);
        let exact_only = cluster_rows(5, &rows_of_group, &distinct, 0, 4, &mut |_| {});
        assert_eq!(exact_only, vec![0, 1, 2, 0, 4]);
    }

    #[test]
    fn splitting_bits_covers_them_once() {
        let free = 0xf0f0_0000_ffff_0001u64;
        let parts = split_bits(free, 5);
        assert_eq!(parts.iter().fold(0, |m, p| m | p), free);
        assert_eq!(
            parts.iter().map(|p| p.count_ones()).sum::<u32>(),
            free.count_ones()
        );
        assert_eq!(top_level_parts(3, 4)[3], 0xffff_0000_0000_0000);
        assert_eq!(top_level_parts(5, 4).len(), 6);
    }

    proptest! {
        #[test]
        fn any_fingerprints_any_distance(fps in proptest::collection::vec(any::<u64>(), 0..200),
                                         flips in proptest::collection::vec((0usize..200, 0u32..64), 0..300),
                                         k in 0u32..10, nbands in 3u32..12) {
            let mut fps = fps;
            let n = fps.len();
            for (i, bit) in flips {
                if n > 0 {
                    let v = fps[i % n] ^ (1 << bit);
                    fps.push(v);
                }
            }
            let fps = group_identical(&fps).distinct;
            let got = pairs(&fps, k, nbands);
            prop_assert_eq!(got.iter().copied().collect::<BTreeSet<_>>(), brute(&fps, k));
        }
    }

    /// The buckets of a collection, each searched alone, give every pair within k once.
    fn buckets_equal_brute(fps: &[u64], k: u32) {
        let mut buckets: std::collections::BTreeMap<(u32, u64), Vec<u32>> = Default::default();
        for (i, &fp) in fps.iter().enumerate() {
            for (p, (_, v)) in crate::probe::registry_buckets(fp, k).into_iter().enumerate() {
                buckets.entry((p as u32, v)).or_default().push(i as u32);
            }
        }
        let mut found = Vec::new();
        for ((part, _), rows) in &buckets {
            let members: Vec<u64> = rows.iter().map(|&i| fps[i as usize]).collect();
            for (a, b, d) in bucket_pairs(&members, *part, k, 4) {
                let (a, b) = (rows[a as usize], rows[b as usize]);
                found.push((a.min(b), a.max(b), d));
            }
        }
        let unique: BTreeSet<_> = found.iter().copied().collect();
        assert_eq!(
            unique.len(),
            found.len(),
            "a pair came from two buckets at k = {k}"
        );
        assert_eq!(unique, brute(fps, k), "k = {k}");
    }

    #[test]
    fn buckets_give_every_pair_once() {
        for k in [0, 1, 3, 5, 7, 8, 12, 16] {
            let mut fps = planted(k as u64 * 7919 + 3, 300, k);
            // Exact duplicates too, which share every part.
            fps.extend(fps[..20].to_vec());
            buckets_equal_brute(&fps, k);
        }
    }
}
