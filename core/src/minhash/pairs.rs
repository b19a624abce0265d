//! All matching pairs of a collection of MinHash signatures, and their clusters: the MinHash
//! counterpart of [`crate::pairs`] (docs/ARCHITECTURE.md §9).
//!
//! A pair of rows matches when it passes the lookup contract of [`super::is_match`]: the two rows
//! share an LSH band (their band keys at the same band position are equal) and their estimated
//! similarity (the share of equal values over all `k`, as [`super::similarity`] computes it) is at
//! least the threshold.
//!
//! # The search
//!
//! 1. Rows with identical signatures are grouped first ([`group_identical`]), as docs/ARCHITECTURE.md
//!    §9.1 does with identical fingerprints: a pair inside a group has similarity 1 and shares every
//!    band, so it needs no comparison, and the search runs over one row per group. Without this, the
//!    thousands of copies of one text that real tables hold would fill one bucket of every band and
//!    cost their number squared, once per band.
//! 2. For each band position `b` in turn, the `(key, row)` pairs of that band are sorted by key; a
//!    run of equal keys with two or more rows is a bucket, whose rows all share band `b`.
//! 3. Each pair of a bucket is compared value by value, unless the two rows also have equal keys at
//!    an earlier position `b' < b`.
//!
//! # Why each pair is reported once
//!
//! The band positions that two rows share are a fixed set. A pair is visited in the bucket of every
//! band of that set, and handled only in the bucket of the first band of the set — the rule of
//! docs/ARCHITECTURE.md §9.1, step 4, with bands in place of parts. So a pair is compared at most
//! once, and a matching pair shares at least one band and is therefore compared, and emitted, exactly
//! once. Pairs of rows in different identical groups are found once between the groups' first rows
//! and expanded to the members' pairs; pairs inside a group come from the group alone.
//!
//! # Costs
//!
//! Per band, a sort of `n` entries of 16 bytes: about `bands · n log n` in all, for a table where no
//! two rows share a band. Beyond that, one comparison of `k` values for every pair of distinct
//! signatures that shares a band (pairs that share several bands are skipped after a comparison of at
//! most `bands` keys in the later ones). Memory beside the signatures and the caller's keys
//! (`8 · bands` bytes a row): 16 bytes a row for the sort buffer and about 16 for the groups.
//! Clusters are merged as the pairs come (union-find, docs/ARCHITECTURE.md §9.2): none is stored.

use super::{push_band_keys, Lsh, MinHashError};
use crate::hash::fmix64;
use crate::pairs::{Clusters, Progress};

/// Pairs visited (compared or skipped) between two calls of the progress and cancellation callback.
const TICK_EVERY: u64 = 4096;

/// The [`super::band_keys`] of every row, row after row: the keys of row `i` are
/// `table[i · lsh.bands .. (i + 1) · lsh.bands]`, the layout that [`for_each_match`] reads. `tag` is
/// the [`super::MinHashOptions::tag`] of the options that computed the values. Refuses bands that do
/// not fit the signatures and signatures of different sizes.
pub fn band_key_table(sigs: &[&[u32]], tag: u32, lsh: &Lsh) -> Result<Vec<i64>, MinHashError> {
    let Some(k) = sigs.first().map(|s| s.len()) else {
        return Ok(Vec::new());
    };
    let mut table = Vec::with_capacity(sigs.len().saturating_mul(lsh.bands.min(k)));
    for (i, values) in sigs.iter().enumerate() {
        if values.len() != k {
            return Err(MinHashError::Mismatch(format!(
                "row {i} has {} values, row 0 has {k}",
                values.len()
            )));
        }
        push_band_keys(tag, values, lsh, &mut table)?;
    }
    Ok(table)
}

/// Rows sorted into groups of identical signatures. Groups are numbered in the order of their first
/// (smallest) row; the rows of group `g` are `rows[start[g] .. start[g + 1]]`, in increasing order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Groups {
    /// `group[i]`: the group of row `i`.
    pub group: Vec<u32>,
    /// Where each group begins in `rows`, and one entry more: the end of the last group.
    pub start: Vec<u32>,
    /// The rows, group after group.
    pub rows: Vec<u32>,
}

impl Groups {
    /// The number of groups: of distinct signatures.
    pub fn len(&self) -> usize {
        self.start.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The rows of group `g`, smallest first.
    pub fn members(&self, g: u32) -> &[u32] {
        &self.rows[self.start[g as usize] as usize..self.start[g as usize + 1] as usize]
    }

    /// The smallest row of group `g`: the one that stands for the group in the search.
    pub fn first(&self, g: u32) -> u32 {
        self.rows[self.start[g as usize] as usize]
    }
}

/// Collapses identical signatures (docs/ARCHITECTURE.md §9.1, step 1), so that exact duplicates cost
/// nothing in the pair search: a sort of a 64-bit hash of each signature, with the values compared
/// where hashes are equal, so a collision never joins different signatures.
pub fn group_identical(sigs: &[&[u32]]) -> Groups {
    let n = sigs.len();
    assert!(n <= u32::MAX as usize, "{n} rows do not fit 32-bit row numbers");
    let mut order: Vec<(u64, u32)> = sigs
        .iter()
        .enumerate()
        .map(|(i, s)| (content_hash(s), i as u32))
        .collect();
    order.sort_unstable_by(|a, b| {
        a.0.cmp(&b.0)
            .then_with(|| sigs[a.1 as usize].cmp(sigs[b.1 as usize]))
            .then(a.1.cmp(&b.1))
    });
    // `group[i]` holds the first row of `i`'s group until it is numbered below.
    let mut group = vec![0u32; n];
    let mut s = 0;
    while s < n {
        let (hash, head) = order[s];
        let e = s + order[s..]
            .iter()
            .take_while(|&&(h, r)| h == hash && sigs[r as usize] == sigs[head as usize])
            .count();
        for &(_, r) in &order[s..e] {
            group[r as usize] = head;
        }
        s = e;
    }
    drop(order);
    // Number the groups by first row; a row's first row is never after it, so it is numbered already.
    let mut start = vec![0u32];
    for i in 0..n {
        let head = group[i] as usize;
        group[i] = if head == i {
            start.push(0);
            (start.len() - 2) as u32
        } else {
            group[head]
        };
        start[group[i] as usize + 1] += 1;
    }
    for g in 1..start.len() {
        start[g] += start[g - 1];
    }
    let mut next = start.clone();
    let mut rows = vec![0u32; n];
    for (i, &g) in group.iter().enumerate() {
        rows[next[g as usize] as usize] = i as u32;
        next[g as usize] += 1;
    }
    Groups { group, start, rows }
}

/// A 64-bit hash of a signature's values, for [`group_identical`] alone.
fn content_hash(values: &[u32]) -> u64 {
    let mut acc = 0x6964_656e_7469_6361 ^ values.len() as u64; // "identica"
    for two in values.chunks(2) {
        let word = u64::from(two[0]) | two.get(1).map_or(0, |&v| u64::from(v) << 32);
        acc = (acc ^ word).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(27);
    }
    fmix64(acc)
}

/// Every matching pair `(i, j, similarity)`, `i < j`, of the rows `sigs` (the values of signatures
/// of one `k` and one tag) whose band keys are `keys` ([`band_key_table`]'s layout), each handed to
/// `emit` exactly once, in no particular order. A pair matches when the two rows share a band of
/// `lsh` and their similarity is at least `threshold`: [`super::is_match`]. `tick` runs every few
/// thousand pairs visited and at the end of every band, to check for cancellation and report
/// progress.
///
/// Identical signatures are searched as they come: where they may be many, collapse them first
/// ([`group_identical`], [`for_each_group_match`]), as [`match_pairs`] and [`cluster_matches`] do.
///
/// Panics if `keys` does not hold `lsh.bands` keys a row or the signatures differ in size: the
/// caller's guarantee, like the keys being the band keys of the values.
pub fn for_each_match(
    sigs: &[&[u32]],
    keys: &[i64],
    lsh: &Lsh,
    threshold: f64,
    tick: &mut dyn FnMut(&Progress),
    emit: &mut dyn FnMut(u32, u32, f64),
) {
    let rows: Vec<u32> = (0..sigs.len() as u32).collect();
    search(sigs, keys, lsh, threshold, &rows, tick, emit);
}

/// [`for_each_match`] between groups of identical signatures: every pair of groups `(g, h, similarity)`,
/// `g < h`, whose signatures match, each once, searched by the groups' first rows. Every pair of a
/// row of `g` and a row of `h` matches with that similarity; pairs inside a group match with
/// similarity 1 whenever identical signatures match at all ([`identical_rows_match`]).
pub fn for_each_group_match(
    sigs: &[&[u32]],
    keys: &[i64],
    lsh: &Lsh,
    threshold: f64,
    groups: &Groups,
    tick: &mut dyn FnMut(&Progress),
    emit: &mut dyn FnMut(u32, u32, f64),
) {
    let firsts: Vec<u32> = (0..groups.len() as u32).map(|g| groups.first(g)).collect();
    // Groups are numbered in the order of their first rows: the smaller row has the smaller group.
    search(sigs, keys, lsh, threshold, &firsts, tick, &mut |a, b, s| {
        emit(groups.group[a as usize], groups.group[b as usize], s)
    });
}

/// Whether two rows of identical signatures match: they share every band when there is one, and
/// their similarity, 1, must not be below `threshold` (as in [`super::is_match`]).
pub fn identical_rows_match(lsh: &Lsh, threshold: f64) -> bool {
    lsh.bands > 0 && not_below(1.0, threshold)
}

/// The similarity test of [`super::is_match`], which refuses a pair only when its similarity is
/// below the threshold: the same answer for every threshold, NaN (refused by
/// [`super::parse_threshold`]) included.
fn not_below(similarity: f64, threshold: f64) -> bool {
    similarity.partial_cmp(&threshold) != Some(std::cmp::Ordering::Less)
}

/// Every matching pair of [`for_each_match`], sorted by `(i, j)`; identical signatures are collapsed
/// for the search and their pairs added without comparison. `Progress::pairs` counts the pairs
/// found between groups, before they are expanded to their rows.
pub fn match_pairs(
    sigs: &[&[u32]],
    keys: &[i64],
    lsh: &Lsh,
    threshold: f64,
    tick: &mut dyn FnMut(&Progress),
) -> Vec<(u32, u32, f64)> {
    let groups = group_identical(sigs);
    let mut out = Vec::new();
    if identical_rows_match(lsh, threshold) {
        for g in 0..groups.len() as u32 {
            let m = groups.members(g);
            for (x, &a) in m.iter().enumerate() {
                out.extend(m[x + 1..].iter().map(|&b| (a, b, 1.0)));
            }
        }
    }
    for_each_group_match(sigs, keys, lsh, threshold, &groups, tick, &mut |g, h, s| {
        for &a in groups.members(g) {
            out.extend(groups.members(h).iter().map(|&b| (a.min(b), a.max(b), s)));
        }
    });
    out.sort_unstable_by_key(|&(a, b, _)| (a, b));
    out
}

/// The representative (smallest row) of every row's cluster: the connected components of the
/// matching pairs (docs/ARCHITECTURE.md §9.2), found by union-find as the pairs come, none stored.
/// Identical signatures are joined without comparison and searched once, so 10,000 copies of one
/// signature cost a sort, not 50 million comparisons.
pub fn cluster_matches(
    sigs: &[&[u32]],
    keys: &[i64],
    lsh: &Lsh,
    threshold: f64,
    tick: &mut dyn FnMut(&Progress),
) -> Vec<u32> {
    let groups = group_identical(sigs);
    let mut clusters = Clusters::new(sigs.len());
    if identical_rows_match(lsh, threshold) {
        for g in 0..groups.len() as u32 {
            let m = groups.members(g);
            for &r in &m[1..] {
                clusters.union(m[0], r);
            }
        }
    }
    for_each_group_match(sigs, keys, lsh, threshold, &groups, tick, &mut |g, h, _| {
        clusters.union(groups.first(g), groups.first(h))
    });
    (0..sigs.len() as u32).map(|i| clusters.find(i)).collect()
}

/// The search of the module documentation over the rows `rows` (in increasing order) of `sigs`.
fn search(
    sigs: &[&[u32]],
    keys: &[i64],
    lsh: &Lsh,
    threshold: f64,
    rows: &[u32],
    tick: &mut dyn FnMut(&Progress),
    emit: &mut dyn FnMut(u32, u32, f64),
) {
    let n = sigs.len();
    assert!(n <= u32::MAX as usize, "{n} rows do not fit 32-bit row numbers");
    assert_eq!(
        keys.len(),
        n * lsh.bands,
        "{n} rows of {} bands need {} keys",
        lsh.bands,
        n * lsh.bands
    );
    let k = sigs.first().map_or(0, |s| s.len());
    assert!(sigs.iter().all(|s| s.len() == k), "signatures of different sizes");
    let mut search = Search {
        sigs,
        keys,
        bands: lsh.bands,
        k,
        min_equal: min_equal(k, threshold),
        progress: Progress {
            parts: lsh.bands,
            ..Progress::default()
        },
        since_tick: 0,
        tick,
        emit,
    };
    let mut entries: Vec<(i64, u32)> = Vec::with_capacity(rows.len());
    for band in 0..lsh.bands {
        entries.clear();
        entries.extend(rows.iter().map(|&r| (keys[r as usize * lsh.bands + band], r)));
        entries.sort_unstable_by_key(|&(key, _)| key);
        let mut s = 0;
        while s < entries.len() {
            let key = entries[s].0;
            let e = s + entries[s..].iter().take_while(|&&(k, _)| k == key).count();
            if e - s >= 2 {
                search.bucket(&entries[s..e], band);
            }
            s = e;
        }
        search.progress.parts_done = band + 1;
        (search.tick)(&search.progress);
    }
}

/// The fewest equal values out of `k` whose share, computed as [`super::similarity`] does, is not
/// below `threshold` (the test of [`super::is_match`]); `k + 1` when none is (a threshold above 1).
fn min_equal(k: usize, threshold: f64) -> usize {
    (0..=k)
        .find(|&e| not_below(e as f64 / k as f64, threshold))
        .unwrap_or(k + 1)
}

struct Search<'a> {
    sigs: &'a [&'a [u32]],
    keys: &'a [i64],
    bands: usize,
    k: usize,
    /// A pair matches iff at least this many of its values are equal (the share is monotone in it).
    min_equal: usize,
    progress: Progress,
    since_tick: u64,
    tick: &'a mut dyn FnMut(&Progress),
    emit: &'a mut dyn FnMut(u32, u32, f64),
}

impl Search<'_> {
    /// Compares the pairs of a bucket of band `band`, leaving those that share an earlier band to
    /// the bucket of that band (docs/ARCHITECTURE.md §9.1, step 4).
    fn bucket(&mut self, entries: &[(i64, u32)], band: usize) {
        for (x, &(_, a)) in entries.iter().enumerate() {
            let at = a as usize * self.bands;
            let earlier_a = &self.keys[at..at + band];
            let values_a = self.sigs[a as usize];
            for &(_, b) in &entries[x + 1..] {
                let bt = b as usize * self.bands;
                let earlier_b = &self.keys[bt..bt + band];
                if earlier_a.iter().zip(earlier_b).any(|(p, q)| p == q) {
                    continue;
                }
                let equal: usize = values_a
                    .iter()
                    .zip(self.sigs[b as usize])
                    .map(|(p, q)| usize::from(p == q))
                    .sum();
                self.progress.compared += 1;
                if equal >= self.min_equal {
                    (self.emit)(a.min(b), a.max(b), equal as f64 / self.k as f64);
                    self.progress.pairs += 1;
                }
            }
            self.since_tick += (entries.len() - x - 1) as u64;
            if self.since_tick >= TICK_EVERY {
                self.since_tick = 0;
                (self.tick)(&self.progress);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{band_keys, is_match, Signature};
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    const TAG: u32 = 0x00ab_cdef;

    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    fn views(rows: &[Vec<u32>]) -> Vec<&[u32]> {
        rows.iter().map(|r| r.as_slice()).collect()
    }

    fn table(sigs: &[&[u32]], lsh: &Lsh) -> Vec<i64> {
        band_key_table(sigs, TAG, lsh).expect("bands that fit")
    }

    /// Brute force over all pairs with the lookup contract itself: [`is_match`] and [`similarity`].
    fn oracle(sigs: &[&[u32]], lsh: &Lsh, threshold: f64) -> Vec<(u32, u32, f64)> {
        let sigs: Vec<Signature> = sigs
            .iter()
            .map(|v| Signature::from_parts(TAG, v.to_vec()))
            .collect();
        let mut out = Vec::new();
        for i in 0..sigs.len() {
            for j in i + 1..sigs.len() {
                if is_match(&sigs[i], &sigs[j], lsh, threshold).unwrap() {
                    let s = super::super::similarity(&sigs[i], &sigs[j]).unwrap();
                    out.push((i as u32, j as u32, s));
                }
            }
        }
        out
    }

    /// The smallest row of every row's component, by label propagation over the pairs.
    fn oracle_clusters(n: usize, pairs: &[(u32, u32, f64)]) -> Vec<u32> {
        let mut label: Vec<u32> = (0..n as u32).collect();
        loop {
            let mut changed = false;
            for &(a, b, _) in pairs {
                let m = label[a as usize].min(label[b as usize]);
                for r in [a, b] {
                    if label[r as usize] != m {
                        label[r as usize] = m;
                        changed = true;
                    }
                }
            }
            if !changed {
                return label;
            }
        }
    }

    /// Checks every entry point against the oracle; returns the oracle's pairs.
    fn check(sigs: &[&[u32]], lsh: &Lsh, threshold: f64) -> Vec<(u32, u32, f64)> {
        let keys = table(sigs, lsh);
        let want = oracle(sigs, lsh, threshold);
        let what = format!("{} rows, {lsh:?}, threshold {threshold}", sigs.len());

        let mut raw = Vec::new();
        for_each_match(sigs, &keys, lsh, threshold, &mut |_| {}, &mut |a, b, s| {
            raw.push((a, b, s))
        });
        let distinct: BTreeSet<(u32, u32)> = raw.iter().map(|&(a, b, _)| (a, b)).collect();
        assert_eq!(distinct.len(), raw.len(), "a pair was emitted twice: {what}");
        raw.sort_unstable_by_key(|&(a, b, _)| (a, b));
        assert_eq!(raw, want, "for_each_match: {what}");

        assert_eq!(
            match_pairs(sigs, &keys, lsh, threshold, &mut |_| {}),
            want,
            "match_pairs: {what}"
        );
        assert_eq!(
            cluster_matches(sigs, &keys, lsh, threshold, &mut |_| {}),
            oracle_clusters(sigs.len(), &want),
            "cluster_matches: {what}"
        );
        want
    }

    /// Random signatures of `k` values with planted near-duplicates: copies of earlier rows (some
    /// of them copies themselves, so clusters chain) with a share of their values replaced, spread
    /// around a similarity of 0.5; a few copies are exact.
    fn planted(seed: u64, n: usize, k: usize) -> Vec<Vec<u32>> {
        let mut rng = Rng(seed | 1);
        let mut rows: Vec<Vec<u32>> = Vec::with_capacity(n);
        while rows.len() < n {
            if rows.is_empty() || rng.below(3) == 0 {
                rows.push((0..k).map(|_| rng.next() as u32).collect());
            } else {
                let mut copy = rows[rng.below(rows.len())].clone();
                let changed = [0.0, 0.05, 0.3, 0.4, 0.45, 0.48, 0.5, 0.52, 0.55, 0.6, 0.7][rng.below(11)];
                for _ in 0..(changed * k as f64) as usize {
                    let at = rng.below(k);
                    copy[at] = rng.next() as u32;
                }
                rows.push(copy);
            }
        }
        rows
    }

    #[test]
    fn the_key_table_holds_band_keys() {
        let rows = planted(7, 50, 128);
        let sigs = views(&rows);
        for lsh in [
            Lsh::default(),
            Lsh { bands: 5, rows: 3 },
            Lsh { bands: 128, rows: 1 },
        ] {
            let keys = table(&sigs, &lsh);
            for (i, v) in rows.iter().enumerate() {
                let want = band_keys(&Signature::from_parts(TAG, v.clone()), &lsh).unwrap();
                assert_eq!(keys[i * lsh.bands..(i + 1) * lsh.bands], want[..]);
            }
        }
        assert!(band_key_table(&sigs, TAG, &Lsh { bands: 33, rows: 4 }).is_err());
        assert!(band_key_table(
            &sigs,
            TAG,
            &Lsh {
                bands: usize::MAX,
                rows: 2
            }
        )
        .is_err());
        let uneven = [&rows[0][..], &rows[1][..64]];
        assert!(band_key_table(&uneven, TAG, &Lsh::default()).is_err());
        assert_eq!(
            band_key_table(&[], TAG, &Lsh::default()).unwrap(),
            Vec::<i64>::new()
        );
    }

    #[test]
    fn minhash_pairs_of_planted_near_duplicates_match_the_oracle() {
        let lshs = [
            Lsh::default(),
            Lsh { bands: 16, rows: 8 },
            Lsh { bands: 64, rows: 2 },
            Lsh { bands: 128, rows: 1 },
            Lsh { bands: 3, rows: 5 },
        ];
        for (s, lsh) in lshs.iter().enumerate() {
            let rows = planted(s as u64 * 977 + 3, 400, 128);
            let sigs = views(&rows);
            for threshold in [0.0, 0.3, 0.45, 0.5, 0.55, 0.8, 1.0] {
                let found = check(&sigs, lsh, threshold);
                if threshold == 0.5 && lsh.bands >= 16 {
                    // The planted copies make the test meaningful: many pairs, some near the line.
                    assert!(found.len() > 100, "{lsh:?}: only {} pairs", found.len());
                    assert!(found.iter().any(|&(_, _, s)| s < 0.6), "{lsh:?}");
                }
            }
        }
    }

    #[test]
    fn minhash_pairs_need_a_shared_band_and_the_threshold() {
        // Rows 0 and 1 share band 1 at similarity 0.75; rows 0 and 2 are 0.5 similar but share no band.
        let lsh = Lsh { bands: 2, rows: 2 };
        let a = vec![1, 2, 3, 4];
        let b = vec![9, 2, 3, 4];
        let c = vec![1, 9, 3, 9];
        let rows = vec![a, b, c];
        let sigs = views(&rows);
        let keys = table(&sigs, &lsh);
        let got = match_pairs(&sigs, &keys, &lsh, 0.5, &mut |_| {});
        assert_eq!(got, vec![(0, 1, 0.75)]);
        assert_eq!(match_pairs(&sigs, &keys, &lsh, 0.8, &mut |_| {}), vec![]);
        assert_eq!(
            cluster_matches(&sigs, &keys, &lsh, 0.5, &mut |_| {}),
            vec![0, 0, 2]
        );
        check(&sigs, &lsh, 0.5);
    }

    #[test]
    fn minhash_pairs_of_many_identical_signatures_match_the_oracle() {
        let mut rows = planted(11, 150, 64);
        let copied = rows[0].clone();
        let mut rng = Rng(99);
        for _ in 0..600 {
            let at = rng.below(rows.len() + 1);
            rows.insert(at, copied.clone());
        }
        let sigs = views(&rows);
        for threshold in [0.0, 0.5, 1.0] {
            let found = check(&sigs, &Lsh { bands: 16, rows: 4 }, threshold);
            assert!(found.len() >= 600 * 599 / 2);
        }
        let groups = group_identical(&sigs);
        let big = groups.group[rows.iter().position(|r| *r == copied).unwrap()];
        assert!(groups.members(big).len() >= 601);
    }

    #[test]
    fn minhash_clusters_of_ten_thousand_identical_rows_cost_no_comparison() {
        let mut rng = Rng(5);
        let same: Vec<u32> = (0..128).map(|_| rng.next() as u32).collect();
        let mut rows = Vec::new();
        for i in 0..20_000 {
            if i % 2 == 1 {
                rows.push(same.clone());
            } else {
                rows.push((0..128).map(|_| rng.next() as u32).collect());
            }
        }
        let sigs = views(&rows);
        let lsh = Lsh::default();
        let keys = table(&sigs, &lsh);
        let mut last = Progress::default();
        let reps = cluster_matches(&sigs, &keys, &lsh, 0.5, &mut |p| last = *p);
        for (i, &r) in reps.iter().enumerate() {
            assert_eq!(r, if i % 2 == 1 { 1 } else { i as u32 }, "row {i}");
        }
        assert_eq!(last.parts_done, 32);
        assert_eq!(last.compared, 0, "identical rows were compared");
        let pairs = match_pairs(&sigs[..4_000], &keys[..4_000 * 32], &lsh, 0.5, &mut |p| last = *p);
        assert_eq!(pairs.len(), 2_000 * 1_999 / 2);
        assert!(pairs.windows(2).all(|w| (w[0].0, w[0].1) < (w[1].0, w[1].1)));
        assert_eq!(last.compared, 0);
    }

    #[test]
    fn minhash_pairs_of_no_row_and_one_row() {
        let lsh = Lsh::default();
        let mut ticks = Vec::new();
        assert_eq!(match_pairs(&[], &[], &lsh, 0.5, &mut |p| ticks.push(*p)), vec![]);
        assert_eq!(
            cluster_matches(&[], &[], &lsh, 0.5, &mut |_| {}),
            Vec::<u32>::new()
        );
        assert_eq!(ticks.last().map(|p| (p.parts_done, p.parts)), Some((32, 32)));
        assert_eq!(group_identical(&[]).len(), 0);
        let one = planted(1, 1, 128);
        let sigs = views(&one);
        let keys = table(&sigs, &lsh);
        for threshold in [0.0, 1.0] {
            assert_eq!(match_pairs(&sigs, &keys, &lsh, threshold, &mut |_| {}), vec![]);
            assert_eq!(
                cluster_matches(&sigs, &keys, &lsh, threshold, &mut |_| {}),
                vec![0]
            );
        }
    }

    #[test]
    fn minhash_thresholds_zero_and_one() {
        let rows = planted(23, 300, 32);
        let sigs = views(&rows);
        let lsh = Lsh { bands: 8, rows: 4 };
        let keys = table(&sigs, &lsh);
        // At 0, a match is sharing a band; at 1, being identical.
        let sharing: Vec<(u32, u32)> = (0..rows.len())
            .flat_map(|i| (i + 1..rows.len()).map(move |j| (i, j)))
            .filter(|&(i, j)| (0..8).any(|b| keys[i * 8 + b] == keys[j * 8 + b]))
            .map(|(i, j)| (i as u32, j as u32))
            .collect();
        let identical: Vec<(u32, u32)> = (0..rows.len())
            .flat_map(|i| (i + 1..rows.len()).map(move |j| (i, j)))
            .filter(|&(i, j)| rows[i] == rows[j])
            .map(|(i, j)| (i as u32, j as u32))
            .collect();
        assert!(!identical.is_empty() && sharing.len() > identical.len());
        let only_pairs = |v: Vec<(u32, u32, f64)>| v.into_iter().map(|(a, b, _)| (a, b)).collect::<Vec<_>>();
        assert_eq!(only_pairs(check(&sigs, &lsh, 0.0)), sharing);
        assert_eq!(only_pairs(check(&sigs, &lsh, 1.0)), identical);
        // Above 1 nothing matches, not even identical rows; a NaN threshold (which
        // `parse_threshold` refuses) is never "above" a similarity, as in `is_match`.
        assert_eq!(check(&sigs, &lsh, 1.5), vec![]);
        assert_eq!(only_pairs(check(&sigs, &lsh, f64::NAN)), sharing);
    }

    #[test]
    fn minhash_progress_reports_bands_pairs_and_work_within_a_band() {
        let same: Vec<u32> = (0..16).collect();
        let rows = vec![same; 3_000];
        let sigs = views(&rows);
        let lsh = Lsh { bands: 4, rows: 4 };
        let keys = table(&sigs, &lsh);
        let mut ticks = Vec::new();
        let mut found = 0u64;
        for_each_match(
            &sigs,
            &keys,
            &lsh,
            0.5,
            &mut |p| ticks.push(*p),
            &mut |_, _, _| found += 1,
        );
        let last = *ticks.last().unwrap();
        assert_eq!((last.parts_done, last.parts), (4, 4));
        assert_eq!((last.pairs, last.compared), (found, found));
        assert_eq!(found, 3_000 * 2_999 / 2);
        assert!(
            ticks.iter().filter(|p| p.parts_done == 0).count() > 100,
            "no tick inside band 0"
        );
        assert!(ticks
            .windows(2)
            .all(|w| w[0].parts_done <= w[1].parts_done && w[0].pairs <= w[1].pairs));
    }

    #[test]
    fn minhash_identical_signatures_form_groups() {
        let rows = vec![
            vec![5, 1],
            vec![3, 1],
            vec![5, 1],
            vec![9, 9],
            vec![3, 1],
            vec![5, 1],
        ];
        let g = group_identical(&views(&rows));
        assert_eq!(g.group, vec![0, 1, 0, 2, 1, 0]);
        assert_eq!(g.start, vec![0, 3, 5, 6]);
        assert_eq!(g.rows, vec![0, 2, 5, 1, 4, 3]);
        assert_eq!((g.members(1), g.first(2)), (&[1, 4][..], 3));
    }

    proptest! {
        /// Small alphabets make rows share many bands, so the once-only rule is tested hard.
        #[test]
        fn minhash_any_small_signatures_match_the_oracle(
            k in 1usize..12,
            raw in proptest::collection::vec(proptest::collection::vec(0u32..3, 12), 0..40),
            copies in proptest::collection::vec(0usize..40, 0..15),
            rows_seed in 0usize..100,
            bands_seed in 0usize..100,
            threshold in prop_oneof![Just(0.0), Just(1.0), 0.0f64..=1.0],
        ) {
            let mut rows: Vec<Vec<u32>> = raw.into_iter().map(|mut r| { r.truncate(k); r }).collect();
            for c in copies {
                if !rows.is_empty() {
                    let copy = rows[c % rows.len()].clone();
                    rows.push(copy);
                }
            }
            let per_band = 1 + rows_seed % k;
            let lsh = Lsh { bands: 1 + bands_seed % (k / per_band), rows: per_band };
            check(&views(&rows), &lsh, threshold);
        }
    }

    /// The speed check of a million rows (not a timed test): run with
    /// `cargo test --release minhash_pairs_of_a_million_rows -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn minhash_pairs_of_a_million_rows() {
        use std::time::Instant;
        const N: usize = 1_000_000;
        const K: usize = 128;
        let lsh = Lsh::default();
        let started = Instant::now();
        let mut rng = Rng(0x5eed);
        let mut values = vec![0u32; N * K];
        for v in values.iter_mut() {
            *v = rng.next() as u32;
        }
        // About 1% of the rows are near-duplicates of another: 0 to 70% of their values replaced.
        let planted = N / 100;
        for _ in 0..planted {
            let (from, to) = (rng.below(N), rng.below(N));
            if from == to {
                continue;
            }
            values.copy_within(from * K..(from + 1) * K, to * K);
            let changed = rng.below(71) * K / 100;
            for _ in 0..changed {
                values[to * K + rng.below(K)] = rng.next() as u32;
            }
        }
        let sigs: Vec<&[u32]> = values.chunks_exact(K).collect();
        println!("{N} signatures of k = {K} made in {:.2?}", started.elapsed());

        let t = Instant::now();
        let keys = band_key_table(&sigs, TAG, &lsh).unwrap();
        println!("band_key_table ({} keys): {:.2?}", keys.len(), t.elapsed());

        let t = Instant::now();
        let mut last = Progress::default();
        let pairs = match_pairs(&sigs, &keys, &lsh, 0.5, &mut |p| last = *p);
        println!(
            "match_pairs: {:.2?}, {} pairs ({} compared)",
            t.elapsed(),
            pairs.len(),
            last.compared
        );
        let t = Instant::now();
        let reps = cluster_matches(&sigs, &keys, &lsh, 0.5, &mut |p| last = *p);
        let clustered = reps.iter().enumerate().filter(|&(i, &r)| r != i as u32).count();
        println!(
            "cluster_matches: {:.2?}, {clustered} rows joined to an earlier one",
            t.elapsed()
        );

        let mb = |b: usize| b as f64 / (1 << 20) as f64;
        let estimate = [
            N * K * 4,         // the values
            N * 16,            // the slices
            N * lsh.bands * 8, // the key table
            N * 16,            // the sort buffer of a band
            N * 16 + N * 12,   // group_identical: its sort, then group, start, rows
            pairs.len() * 16,  // the pairs
        ];
        println!(
            "memory estimate: {:.0} MiB ({:.0} of it the search's own: sort buffer and groups)",
            mb(estimate.iter().sum()),
            mb(N * 16 + N * 16 + N * 12)
        );
        if let Ok(status) = std::fs::read_to_string("/proc/self/status") {
            for line in status.lines().filter(|l| l.starts_with("VmHWM")) {
                println!("peak resident memory of the test process: {line}");
            }
        }
        assert!(pairs.len() as u64 >= last.pairs);
    }
}
