//! Steps 7–9 on the fast path: the per-bit sums of the features, counted eight bits to a word for
//! integer weights, and summed with sign-bit flips instead of branches for float weights.

const LOW_BITS: u64 = 0x0101_0101_0101_0101;

/// Per-bit counts of one bits, eight bits at a time: `lanes[j]` holds, in its byte k, the count of
/// features whose bit `8k + j` is set since the last flush. A byte counts at most 255, so the lanes
/// are flushed into `ones` every 255 features.
pub(super) struct SwarCounts {
    lanes: [u64; 8],
    pending: u32,
    /// Per bit, the features with that bit set, as of the last flush.
    pub(super) ones: [u64; 64],
    /// The features counted, as of the last flush.
    pub(super) total: u64,
}

impl SwarCounts {
    pub(super) fn new() -> Self {
        SwarCounts {
            lanes: [0; 8],
            pending: 0,
            ones: [0; 64],
            total: 0,
        }
    }

    #[inline]
    pub(super) fn add(&mut self, hash: u64) {
        for (j, lane) in self.lanes.iter_mut().enumerate() {
            *lane += (hash >> j) & LOW_BITS;
        }
        self.pending += 1;
        if self.pending == 255 {
            self.flush();
        }
    }

    pub(super) fn flush(&mut self) {
        if self.pending == 0 {
            return;
        }
        for (j, lane) in self.lanes.iter_mut().enumerate() {
            for k in 0..8 {
                self.ones[8 * k + j] += (*lane >> (8 * k)) & 0xFF;
            }
            *lane = 0;
        }
        self.total += u64::from(self.pending);
        self.pending = 0;
    }

    /// Bit i set iff `v[i] = 2·ones[i] − total > 0`.
    pub(super) fn fingerprint(mut self) -> Option<u64> {
        self.flush();
        (self.total > 0).then(|| self.bits())
    }

    /// [`Self::fingerprint`] after a flush, whatever the total.
    pub(super) fn bits(&self) -> u64 {
        (0..64).fold(0u64, |fp, i| fp | (u64::from(2 * self.ones[i] > self.total) << i))
    }
}

/// The per-bit sums of [`crate::reference::accumulate`], bit for bit: for each feature in the
/// given order, `v[i] += w` or `v[i] -= w`. IEEE 754 defines `x - w` as `x + (-w)`, and `-w` is `w`
/// with its sign bit flipped, so adding `w` with the sign bit set from the hash bit is the same
/// operation, without a branch per bit (test `signed_sums_equal_reference_sums`).
pub(super) fn float_sums(features: impl IntoIterator<Item = (u64, f64)>) -> [f64; 64] {
    let mut v = [0f64; 64];
    for (hash, w) in features {
        add_signed(&mut v, hash, w);
    }
    v
}

/// One step of [`float_sums`]: `v[i] += w` where bit i of `hash` is set, `v[i] -= w` elsewhere.
#[inline]
pub(super) fn add_signed(v: &mut [f64; 64], hash: u64, w: f64) {
    let bits = w.to_bits();
    for (i, vi) in v.iter_mut().enumerate() {
        let negative = (!hash >> i) & 1;
        *vi += f64::from_bits(bits ^ (negative << 63));
    }
}

/// Bit i set iff `v[i] > 0`, as in the reference.
pub(super) fn float_fingerprint(features: impl IntoIterator<Item = (u64, f64)>) -> u64 {
    let v = float_sums(features);
    (0..64).fold(0u64, |fp, i| fp | (u64::from(v[i] > 0.0) << i))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::fmix64;
    use crate::reference::accumulate;

    /// The reference's sums, written as it writes them.
    fn reference_sums(features: &[(u64, f64)]) -> [f64; 64] {
        let mut v = [0f64; 64];
        for &(hash, w) in features {
            for (i, vi) in v.iter_mut().enumerate() {
                if (hash >> i) & 1 == 1 {
                    *vi += w;
                } else {
                    *vi -= w;
                }
            }
        }
        v
    }

    #[test]
    fn signed_sums_equal_reference_sums() {
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut next = || {
            x = fmix64(x.wrapping_add(0x9E37_79B9_7F4A_7C15));
            x
        };
        let specials = [
            0.0,
            -0.0,
            1.0,
            f64::MIN_POSITIVE,
            f64::MIN_POSITIVE / 3.0,
            f64::MAX,
            f64::INFINITY,
            f64::NAN,
            1e-300,
            (1.0 + 2f64.ln()) * 7.3,
        ];
        for round in 0..300 {
            let features: Vec<(u64, f64)> = (0..(round % 40) + 1)
                .map(|k| {
                    let h = next();
                    let w = if round % 5 == 0 {
                        specials[(h as usize + k) % specials.len()]
                    } else {
                        // Weights of every magnitude, both signs.
                        f64::from_bits(next() & !(0x7FFu64 << 52) | ((next() % 2047) << 52))
                    };
                    (h, w)
                })
                .collect();
            let (fast, reference) = (float_sums(features.iter().copied()), reference_sums(&features));
            for i in 0..64 {
                assert!(
                    fast[i].to_bits() == reference[i].to_bits()
                        || (fast[i].is_nan() && reference[i].is_nan()),
                    "{round} {i}: {} {}",
                    fast[i],
                    reference[i]
                );
            }
            assert_eq!(
                float_fingerprint(features.iter().copied()),
                accumulate(features.iter().copied())
            );
        }
    }

    #[test]
    fn swar_counts_equal_plain_counts() {
        let mut fast = SwarCounts::new();
        let mut ones = [0u64; 64];
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for n in 1..=2000u64 {
            x = fmix64(x.wrapping_add(n));
            // Skewed bits too: all-ones words make every lane count to the flush limit.
            let h = if n % 3 == 0 { u64::MAX } else { x };
            fast.add(h);
            for (i, o) in ones.iter_mut().enumerate() {
                *o += (h >> i) & 1;
            }
        }
        fast.flush();
        assert_eq!(fast.ones, ones);
        assert_eq!(fast.total, 2000);
    }
}
