//! The 'logtf' weighting (the default) on the fast path: the fingerprint from the term counts, the
//! features seen once or a few times counted as integers, with a margin that sends a sum too close
//! to zero to the reference's order of summation.

use super::bits::{add_signed, float_fingerprint, SwarCounts};
use super::term_counts::TermCounts;
use crate::options::Weighting;
use crate::weight::float_weight;

/// [`logtf_fingerprint`], or where a sum is too close to zero, the reference's order of summation.
pub(super) fn logtf_or_reference(counts: &TermCounts) -> u64 {
    logtf_fingerprint(counts).unwrap_or_else(|| {
        float_fingerprint(
            counts
                .iter()
                .map(|(h, tf)| (h, float_weight(Weighting::LogTf, f64::from(tf), 1.0))),
        )
    })
}

/// Term frequencies up to this one are counted per frequency by [`logtf_fingerprint`].
const TF_CLASSES: usize = 8;

/// The fingerprint under `'logtf'` of the distinct features counted in `counts` (at least one), or
/// `None` when the reference's order of summation must decide.
///
/// The reference adds the weights `float_weight(LogTf, tf, 1.0)` = 1 + ln tf of the distinct
/// features in order of first occurrence, rounding at every step. Here the features seen tf times
/// all weigh the same w(tf), so for tf up to [`TF_CLASSES`] their signs are counted exactly by one
/// [`SwarCounts`] per tf, and each bit's sum is F[i] = Σ_tf w(tf)·(2·ones_tf[i] − n_tf), plus the
/// rarer features seen more often summed as floats. F[i] need not be the reference's bits, but
/// both are close to the exact sum T[i] of the same weights: with n distinct features of total
/// weight W and u = 2^-53, a sum of n terms in any order is off by at most about (n − 1)·u·W
/// (Higham, *Accuracy and Stability of Numerical Algorithms*, §4.2), and F, a sum of at most n + 1
/// rounded products and sums, by at most about (n + 2)·u·W. Where |F[i]| exceeds
/// `margin` = 8·(n + 4)·u·W, more than both errors together, T[i] and the reference's sum have the
/// sign of F[i], and the bit is the reference's. Where some |F[i]| does not (a sum that cancels or
/// nearly), `None`. When every feature is seen once, every sum is an exact integer and needs no
/// margin. (Test `logtf_fingerprint_equals_reference_sums`.)
fn logtf_fingerprint(counts: &TermCounts) -> Option<u64> {
    let mut classes: [SwarCounts; TF_CLASSES] = std::array::from_fn(|_| SwarCounts::new());
    let mut floats = [0f64; 64];
    let mut rare_weight = 0f64;
    for (h, tf) in counts.iter() {
        match classes.get_mut((tf as usize).wrapping_sub(1)) {
            Some(class) => class.add(h),
            None => {
                let w = float_weight(Weighting::LogTf, f64::from(tf), 1.0);
                add_signed(&mut floats, h, w);
                rare_weight += w;
            }
        }
    }
    let mut weights = [0f64; TF_CLASSES];
    let mut weight = rare_weight;
    let mut only_once = rare_weight == 0.0;
    for (t, class) in classes.iter_mut().enumerate() {
        class.flush();
        if class.total > 0 {
            weights[t] = float_weight(Weighting::LogTf, (t + 1) as f64, 1.0);
            weight += weights[t] * class.total as f64;
            only_once &= t == 0;
        }
    }
    if only_once {
        return Some(classes[0].bits());
    }
    let margin = 8.0 * (counts.len() as f64 + 4.0) * weight * (f64::EPSILON / 2.0);
    // Each bit's sum: the rare features' floats, then each tf's count times its weight, in order.
    let mut sums = floats;
    for (class, &w) in classes.iter().zip(&weights).filter(|(class, _)| class.total > 0) {
        let total = class.total as f64;
        for (sum, &ones) in sums.iter_mut().zip(&class.ones) {
            // 2·ones − total: the sum of ±1 over the features of this tf, exact in an f64.
            *sum += w * (2.0 * ones as f64 - total);
        }
    }
    let mut fp = 0u64;
    for (i, &sum) in sums.iter().enumerate() {
        if sum.abs() <= margin {
            return None;
        }
        fp |= u64::from(sum > 0.0) << i;
    }
    Some(fp)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::fmix64;
    use crate::reference::accumulate;
    use std::collections::HashMap;

    /// The 'logtf' fingerprint as the reference computes it: its `accumulate` over the distinct
    /// features in order of first occurrence, weights by its `float_weight`.
    fn logtf_reference(stream: &[u64]) -> u64 {
        let mut order: Vec<u64> = Vec::new();
        let mut tf: HashMap<u64, u64> = HashMap::new();
        for &h in stream {
            *tf.entry(h).or_insert_with(|| {
                order.push(h);
                0
            }) += 1;
        }
        accumulate(
            order
                .iter()
                .map(|h| (*h, float_weight(Weighting::LogTf, tf[h] as f64, 1.0))),
        )
    }

    /// What `run` does with a stream of feature hashes under 'logtf'; also whether the margin
    /// sent it to the reference's order.
    fn logtf_fast(stream: &[u64], bytes: usize) -> (u64, bool) {
        let mut counts = TermCounts::take(bytes);
        for &h in stream {
            counts.add(h).unwrap();
        }
        let result = (logtf_or_reference(&counts), logtf_fingerprint(&counts).is_none());
        counts.give_back();
        result
    }

    #[test]
    fn logtf_fingerprint_equals_reference_sums() {
        let mut x = 0x1234_5678u64;
        let mut next = || {
            x = fmix64(x.wrapping_add(0x9E37_79B9_7F4A_7C15));
            x
        };
        let mut decided_by_reference = 0;
        for round in 0..3000 {
            let n = 1 + (next() % 300) as usize;
            let distinct: Vec<u64> = (0..n).map(|_| next()).collect();
            let mut stream: Vec<u64> = Vec::new();
            for (k, &h) in distinct.iter().enumerate() {
                // tf 1 mostly, 2..=8 often, some beyond the classes.
                let tf = match next() % 10 {
                    0..=5 => 1,
                    6..=8 => 2 + next() % 7,
                    _ => 9 + next() % 40,
                };
                for _ in 0..tf {
                    stream.push(h);
                }
                if round % 3 == 0 || (round % 3 == 1 && k % 2 == 0) {
                    // Its complement with the same tf: sums that cancel exactly in every bit (every
                    // third round: all features), where the reference's rounding decides (the
                    // margin must send these to it), or in part.
                    for _ in 0..tf {
                        stream.push(!h);
                    }
                }
            }
            // The order of first occurrence matters to the reference: shuffle the occurrences.
            for i in (1..stream.len()).rev() {
                stream.swap(i, (next() % (i as u64 + 1)) as usize);
            }
            let (fast, by_reference) = logtf_fast(&stream, stream.len());
            assert_eq!(fast, logtf_reference(&stream), "round {round}");
            decided_by_reference += usize::from(by_reference);
        }
        // Both branches ran.
        assert!(decided_by_reference >= 900, "{decided_by_reference}");
        assert!(decided_by_reference < 2000, "{decided_by_reference}");
        // All features seen once: integer sums, decided without the reference's order, even at 0.
        assert_eq!(logtf_fast(&[5, !5], 2), (logtf_reference(&[5, !5]), false));
    }
}
