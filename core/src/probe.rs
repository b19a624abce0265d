//! The probe plan of a lookup: which band values to look up in the band indexes so that every
//! fingerprint within distance k of the query is found, with any number of bands.
//!
//! Generalized pigeonhole (multi-index hashing; Norouzi, Punjani and Fleet, CVPR 2012; Qin et al.,
//! GPH, ICDE 2018): cut 64 bits into n bands and give band i a radius t_i >= -1 with
//! Σ t_i = k - n + 1. If two fingerprints differ in d_i bits of band i and Σ d_i <= k, then some band
//! has d_i <= t_i: otherwise Σ d_i >= Σ (t_i + 1) = k + 1. So probing band i at every value within
//! t_i bits of the query's band i (radius -1: not at all) finds every fingerprint within k. A
//! candidate found through several bands is reported only through the first band within its
//! radius, so every match is reported exactly once.

use crate::bands::{band_bits, check_nbands, hamming};
use crate::error::OptionError;

/// Largest lookup distance accepted (every bit may differ).
pub const MAX_LOOKUP_DISTANCE: i32 = 64;

/// Probing stops paying when it would read more than this share of a table: then a scan is exact
/// and cheaper.
const MAX_PROBED_SHARE: f64 = 0.125;

/// The radii t_i of `nbands` bands for distance `k`: k+1 units dealt out as evenly as possible
/// (earlier bands first), radius = units - 1.
pub fn radii(k: u32, nbands: u32) -> Vec<i32> {
    let units = k + 1;
    (0..nbands)
        .map(|i| (units / nbands + u32::from(i < units % nbands)) as i32 - 1)
        .collect()
}

/// Number of values within `radius` bits of a value of `width` bits: Σ_{r<=radius} C(width, r).
pub fn ball_size(width: u32, radius: i32) -> u64 {
    let mut total = 0u64;
    let mut binom = 1u64;
    for r in 0..=radius.min(width as i32) {
        if r > 0 {
            binom = binom * (width as u64 - r as u64 + 1) / r as u64;
        }
        total += binom;
    }
    total
}

/// Every value of `width` bits within `radius` bits of `value`, sorted ascending.
pub fn neighbours(value: u32, width: u32, radius: i32) -> Vec<i32> {
    let mut out = Vec::with_capacity(ball_size(width, radius) as usize);
    if radius == 1 {
        // In order without sorting (the duplicate trigger's plan at the default distance): a set
        // bit flipped gives a smaller value, the larger the bit the smaller; a clear bit a larger.
        out.extend(
            (0..width)
                .rev()
                .filter(|b| value >> b & 1 == 1)
                .map(|b| (value ^ 1 << b) as i32),
        );
        out.push(value as i32);
        out.extend(
            (0..width)
                .filter(|b| value >> b & 1 == 0)
                .map(|b| (value ^ 1 << b) as i32),
        );
        return out;
    }
    if radius >= 0 {
        flip(value, width, 0, radius as u32, &mut out);
    }
    out.sort_unstable();
    out
}

fn flip(value: u32, width: u32, from: u32, left: u32, out: &mut Vec<i32>) {
    out.push(value as i32);
    if left == 0 {
        return;
    }
    for bit in from..width {
        flip(value ^ (1 << bit), width, bit + 1, left - 1, out);
    }
}

/// The band values to probe, band by band.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BandProbe {
    pub band: u32,
    pub radius: i32,
    /// Sorted; empty when the radius is -1.
    pub values: Vec<i32>,
}

/// Band i of `query` probed at every value within `radii[i]` bits.
fn band_probes(query: u64, nbands: u32, radii: &[i32]) -> Vec<BandProbe> {
    radii
        .iter()
        .enumerate()
        .map(|(i, &t)| {
            let (start, end) = band_bits(i as u32, nbands);
            let width = end - start;
            let value = ((query >> start) & ((1u64 << width) - 1)) as u32;
            BandProbe {
                band: i as u32,
                radius: t,
                values: neighbours(value, width, t),
            }
        })
        .collect()
}

/// Checks the distance and the band count of a plan.
fn check_plan(k: i32, nbands: i32) -> Result<(u32, u32), OptionError> {
    let n = check_nbands(nbands)?;
    if !(0..=MAX_LOOKUP_DISTANCE).contains(&k) {
        return Err(OptionError::new(
            "max_distance",
            k.to_string(),
            format!("an integer from 0 to {MAX_LOOKUP_DISTANCE}"),
        ));
    }
    Ok((k as u32, n))
}

/// Whether probing `radii` reads at most [`MAX_PROBED_SHARE`] of a table (else a scan is cheaper).
fn probing_pays(radii: &[i32], nbands: u32) -> bool {
    let share: f64 = radii
        .iter()
        .enumerate()
        .map(|(i, &t)| {
            let (start, end) = band_bits(i as u32, nbands);
            ball_size(end - start, t) as f64 / (1u64 << (end - start)) as f64
        })
        .sum();
    share <= MAX_PROBED_SHARE
}

/// How a lookup within distance k finds its candidates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbePlan {
    pub query: u64,
    pub k: u32,
    pub nbands: u32,
    pub radii: Vec<i32>,
    /// None when probing would read so much of the table that a scan is cheaper.
    pub probes: Option<Vec<BandProbe>>,
}

impl ProbePlan {
    /// The plan for the fingerprint `query` within distance `k` over `nbands` bands (docs/ARCHITECTURE.md §4
    /// layout: band i covers bits `[⌊64i/n⌋, ⌊64(i+1)/n⌋)`).
    pub fn new(query: u64, k: i32, nbands: i32) -> Result<ProbePlan, OptionError> {
        let (k, n) = check_plan(k, nbands)?;
        let even = radii(k, n);
        let probe = probing_pays(&even, n);
        Ok(ProbePlan::assemble(query, k, n, even, probe))
    }

    /// The plan with the given radii (any radii >= -1 that sum to k - n + 1 are exact), for the
    /// lookups that choose them from the bucket sizes ([`choose_radii`]). Whether to probe at all is
    /// decided on the even radii, as [`ProbePlan::new`] does.
    pub fn with_radii(query: u64, k: i32, nbands: i32, radii: &[i32]) -> Result<ProbePlan, OptionError> {
        let (k, n) = check_plan(k, nbands)?;
        if radii.len() != n as usize
            || radii.iter().any(|&t| t < -1)
            || radii.iter().sum::<i32>() != k as i32 - n as i32 + 1
        {
            return Err(OptionError::new(
                "radii",
                format!("{radii:?}"),
                format!("{n} integers >= -1 summing to max_distance - {}", n - 1),
            ));
        }
        let probe = probing_pays(&self::radii(k, n), n);
        Ok(ProbePlan::assemble(query, k, n, radii.to_vec(), probe))
    }

    fn assemble(query: u64, k: u32, nbands: u32, radii: Vec<i32>, probe: bool) -> ProbePlan {
        ProbePlan {
            query,
            k,
            nbands,
            probes: probe.then(|| band_probes(query, nbands, &radii)),
            radii,
        }
    }

    /// Total band values probed (0 for a scan).
    pub fn probe_count(&self) -> usize {
        self.probes
            .as_ref()
            .map_or(0, |p| p.iter().map(|b| b.values.len()).sum())
    }

    /// The first band through which `fp` is reached: the first band within its radius of the
    /// query's. A candidate read from band i's index is reported only when this is i.
    pub fn first_band(&self, fp: u64) -> Option<u32> {
        (0..self.nbands).find(|&i| {
            let (start, end) = band_bits(i, self.nbands);
            let mask = (1u64 << (end - start)) - 1;
            let d = hamming((fp >> start) & mask, (self.query >> start) & mask);
            (d as i32) <= self.radii[i as usize]
        })
    }

    /// Whether a candidate read from band `band`'s index is a match to report there.
    #[inline]
    pub fn accepts(&self, band: u32, fp: u64) -> Option<u32> {
        let d = hamming(fp, self.query);
        (d <= self.k && self.first_band(fp) == Some(band)).then_some(d)
    }
}

/// Largest number of bands for which [`choose_radii`] weighs every allocation of the radii.
pub const MAX_CHOSEN_BANDS: u32 = 4;

/// Radii chosen from the bucket sizes (GPH, Qin et al.): `centers[i]` is the number of rows whose
/// band i equals the query's, `average` the rows per band value of the table, `probe_cost` the cost of
/// one index descent counted in index entries. The expected cost of band i at radius t is its centre
/// bucket plus `average` for each other value of the ball, plus a descent per value; the allocation
/// of the k+1 units with the least total wins, the even one on a tie. A crowded band then takes
/// radius -1 and its neighbours a larger one. Only for up to [`MAX_CHOSEN_BANDS`] bands.
pub fn choose_radii(k: u32, nbands: u32, centers: &[f64], average: f64, probe_cost: f64) -> Vec<i32> {
    let even = radii(k, nbands);
    if nbands > MAX_CHOSEN_BANDS || centers.len() != nbands as usize {
        return even;
    }
    let cost = |t: &[i32]| -> f64 {
        t.iter()
            .enumerate()
            .filter(|(_, &r)| r >= 0)
            .map(|(i, &r)| {
                let (start, end) = band_bits(i as u32, nbands);
                let ball = ball_size(end - start, r) as f64;
                centers[i] + (ball - 1.0) * average + ball * probe_cost
            })
            .sum()
    };
    let mut best = (cost(&even), even);
    let mut t = vec![0i32; nbands as usize];
    allocate(k as i32 + 1, 0, &mut t, &mut |t| {
        let c = cost(t);
        if c < best.0 {
            best = (c, t.to_vec());
        }
    });
    best.1
}

/// Calls `f` with every way of dealing `units` to the remaining bands (radius = units - 1).
fn allocate(units: i32, band: usize, t: &mut Vec<i32>, f: &mut dyn FnMut(&[i32])) {
    if band + 1 == t.len() {
        t[band] = units - 1;
        return f(t);
    }
    for u in 0..=units {
        t[band] = u - 1;
        allocate(units - u, band + 1, t, f);
    }
}

/// Advisory lock keys of a write with duplicate check at distance k: k+1 parts of the 64 bits
/// (pigeonhole: two fingerprints within k agree on one part), key = part << 8 | value mod 256,
/// sorted and distinct. Every writer of a table uses the same k, so two near-duplicate writes always
/// share a key; the keys of one table are at most 256·(k+1).
pub fn lock_keys(fp: u64, k: u32) -> Vec<u32> {
    // One key per part, already sorted and distinct: the part number is in the high bits.
    registry_buckets(fp, k).into_iter().map(|(key, _)| key).collect()
}

/// The buckets of a fingerprint in a near-duplicate registry at distance k (issue 12): for each of
/// the k+1 parts of [`lock_keys`], (that part's lock key, the part's value). Two fingerprints within
/// k share a part's value (pigeonhole), so a registry that files every fingerprint under its buckets
/// finds each near-duplicate in one of the query's buckets, and two near-duplicate writers share
/// that bucket's lock key. Sorted by lock key.
pub fn registry_buckets(fp: u64, k: u32) -> Vec<(u32, u64)> {
    let parts = k + 1;
    (0..parts)
        .map(|p| {
            let (start, end) = band_bits(p, parts);
            let width = end - start;
            let mask = if width >= 64 {
                u64::MAX
            } else {
                (1u64 << width) - 1
            };
            let value = (fp >> start) & mask;
            ((p << 8) | (value as u32 & 0xff), value)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn registry_buckets_are_the_lock_keys_and_shared_by_near_duplicates(
            fp in any::<u64>(), k in 0u32..=16, flips in proptest::collection::vec(0u32..64, 0..=16)
        ) {
            let buckets = registry_buckets(fp, k);
            let keys: Vec<u32> = buckets.iter().map(|b| b.0).collect();
            prop_assert_eq!(&keys, &lock_keys(fp, k));
            let mut other = fp;
            for f in flips.iter().take(k as usize) {
                other ^= 1u64 << f;
            }
            if (fp ^ other).count_ones() <= k {
                let theirs = registry_buckets(other, k);
                prop_assert!(buckets.iter().any(|b| theirs.contains(b)));
            }
        }
    }

    #[test]
    fn radii_sum_to_k_minus_n_plus_one() {
        for n in 3..=64u32 {
            for k in 0..=64u32 {
                let r = radii(k, n);
                assert_eq!(r.iter().sum::<i32>(), k as i32 - n as i32 + 1, "k {k} n {n}");
                assert!(r.iter().all(|&t| t >= -1));
                let (lo, hi) = (r.iter().min().unwrap(), r.iter().max().unwrap());
                assert!(hi - lo <= 1, "radii are even: {r:?}");
            }
        }
        assert_eq!(radii(7, 4), vec![1, 1, 1, 1]);
        assert_eq!(radii(8, 4), vec![2, 1, 1, 1]);
        assert_eq!(radii(3, 4), vec![0, 0, 0, 0]);
        assert_eq!(radii(0, 4), vec![0, -1, -1, -1]);
        assert_eq!(radii(7, 8), vec![0; 8], "0.2.0's k+1 bands: exact equality");
    }

    #[test]
    fn probe_counts_per_k_on_four_bands() {
        let counts: Vec<usize> = (0..=8)
            .map(|k| ProbePlan::new(0x0123_4567_89ab_cdef, k, 4).unwrap().probe_count())
            .collect();
        assert_eq!(counts, vec![1, 2, 3, 4, 20, 36, 52, 68, 188]);
    }

    #[test]
    fn neighbours_are_the_hamming_ball() {
        for width in [1u32, 3, 8, 16] {
            for (radius, value) in (-1..=3).flat_map(|r| [0, 0b1011, 0x5a5a, 0x8001, 0xffff].map(|v| (r, v)))
            {
                let value = value & ((1 << width) - 1);
                let got = neighbours(value, width, radius);
                let want: Vec<i32> = (0..1u32 << width)
                    .filter(|&v| ((v ^ value).count_ones() as i32) <= radius)
                    .map(|v| v as i32)
                    .collect();
                assert_eq!(got, want, "width {width} radius {radius} value {value}");
                assert_eq!(got.len() as u64, ball_size(width, radius));
            }
        }
    }

    #[test]
    fn far_lookups_scan() {
        assert!(ProbePlan::new(0, 16, 4).unwrap().probes.is_some());
        assert!(ProbePlan::new(0, 24, 4).unwrap().probes.is_none());
        assert!(ProbePlan::new(0, 64, 4).unwrap().probes.is_none());
        assert_eq!(ProbePlan::new(0, 65, 4).unwrap_err().option, "max_distance");
        assert_eq!(ProbePlan::new(0, -1, 4).unwrap_err().option, "max_distance");
        assert_eq!(ProbePlan::new(0, 3, 2).unwrap_err().option, "nbands");
    }

    #[test]
    fn lock_keys_are_bounded_and_shared_by_near_duplicates() {
        assert_eq!(lock_keys(u64::MAX, 0), vec![0xff]);
        assert_eq!(lock_keys(0, 7).len(), 8);
        let mut all = std::collections::HashSet::new();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..20_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            all.extend(lock_keys(x, 8));
        }
        assert!(all.len() <= 256 * 9);
    }

    #[test]
    fn a_crowded_band_is_skipped() {
        let even = choose_radii(7, 4, &[15.0; 4], 15.0, 5.0);
        assert_eq!(even, vec![1, 1, 1, 1]);
        let skewed = choose_radii(7, 4, &[15.0, 15.0, 20_000.0, 15.0], 15.0, 5.0);
        assert_eq!(skewed[2], -1, "{skewed:?}");
        assert_eq!(skewed.iter().sum::<i32>(), 4);
        // k = 3: a crowded band costs more than 17 probes of another band at radius 1.
        assert_eq!(choose_radii(3, 4, &[15.0, 15.0, 15.0, 5_000.0], 15.0, 5.0)[3], -1);
        assert_eq!(
            choose_radii(3, 4, &[15.0, 15.0, 15.0, 40.0], 15.0, 5.0),
            vec![0; 4]
        );
        assert_eq!(
            choose_radii(7, 8, &[1.0; 8], 1.0, 1.0),
            radii(7, 8),
            "more than 4 bands: even"
        );
        assert!(ProbePlan::with_radii(0, 7, 4, &[1, 1, 1]).is_err());
        assert!(ProbePlan::with_radii(0, 7, 4, &[2, 2, 2, -2]).is_err());
        assert!(ProbePlan::with_radii(0, 7, 4, &[3, 1, 1, -1]).is_ok());
    }

    fn flipped(a: u64, flips: &[u32]) -> u64 {
        flips.iter().fold(a, |b, &f| b ^ (1 << f))
    }

    proptest! {
        // The property the lookup rests on: every fingerprint within k is reached through exactly
        // one band, whose probe values hold its band value; none beyond k is accepted.
        #[test]
        fn probes_find_every_match_once(q: u64, flips in proptest::collection::vec(0u32..64, 0..12),
                                        k in 0i32..=16, n in 3i32..=9) {
            let fp = flipped(q, &flips);
            let plan = ProbePlan::new(q, k, n).unwrap();
            let Some(probes) = plan.probes.as_ref() else { return Ok(()) };
            let d = hamming(fp, q);
            let reached: Vec<u32> = probes.iter().filter(|p| {
                let (s, e) = band_bits(p.band, plan.nbands);
                let v = ((fp >> s) & ((1u64 << (e - s)) - 1)) as i32;
                p.values.binary_search(&v).is_ok() && plan.accepts(p.band, fp).is_some()
            }).map(|p| p.band).collect();
            if d <= k as u32 {
                prop_assert_eq!(reached.len(), 1, "d {} k {} n {}", d, k, n);
            } else {
                prop_assert!(reached.is_empty());
            }
        }

        // Any radii chosen from bucket sizes keep the lookup exact.
        #[test]
        fn chosen_radii_find_every_match_once(q: u64, flips in proptest::collection::vec(0u32..64, 0..12),
                                              k in 0i32..=12, centers in proptest::collection::vec(0.0f64..50_000.0, 4)) {
            let fp = flipped(q, &flips);
            let radii = choose_radii(k as u32, 4, &centers, 15.0, 5.0);
            let plan = ProbePlan::with_radii(q, k, 4, &radii).unwrap();
            let Some(probes) = plan.probes.as_ref() else { return Ok(()) };
            let reached = probes.iter().filter(|p| {
                let (s, e) = band_bits(p.band, 4);
                let v = ((fp >> s) & ((1u64 << (e - s)) - 1)) as i32;
                p.values.binary_search(&v).is_ok() && plan.accepts(p.band, fp).is_some()
            }).count();
            prop_assert_eq!(reached, usize::from(hamming(fp, q) <= k as u32));
        }

        #[test]
        fn near_duplicate_writes_share_a_lock(a: u64, flips in proptest::collection::vec(0u32..64, 0..9),
                                              k in 0u32..=16) {
            let b = flipped(a, &flips);
            if hamming(a, b) <= k {
                let (ka, kb) = (lock_keys(a, k), lock_keys(b, k));
                prop_assert!(ka.iter().any(|x| kb.contains(x)));
            }
        }
    }
}
