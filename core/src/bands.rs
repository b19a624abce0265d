//! Cutting a fingerprint into bands (docs/ARCHITECTURE.md §4.1). With n bands, two fingerprints within Hamming
//! distance n-1 agree on at least one band (pigeonhole), so equal bands find every such pair.

use crate::error::OptionError;

pub const MIN_BANDS: i32 = 3;
pub const MAX_BANDS: i32 = 64;

/// Number of differing bits between two fingerprints, 0..=64.
#[inline]
pub fn hamming(a: u64, b: u64) -> u32 {
    (a ^ b).count_ones()
}

/// Checks `nbands` and returns it as a count.
pub fn check_nbands(nbands: i32) -> Result<u32, OptionError> {
    if (MIN_BANDS..=MAX_BANDS).contains(&nbands) {
        Ok(nbands as u32)
    } else {
        Err(OptionError::new(
            "nbands",
            nbands.to_string(),
            format!("an integer from {MIN_BANDS} to {MAX_BANDS}"),
        ))
    }
}

/// Bits `[start, end)` covered by band `band` of `nbands`: `[⌊64i/n⌋, ⌊64(i+1)/n⌋)`.
#[inline]
pub fn band_bits(band: u32, nbands: u32) -> (u32, u32) {
    (64 * band / nbands, 64 * (band + 1) / nbands)
}

/// Value of one band, unsigned; at most 22 bits wide since `nbands >= 3`, so it fits an `int`.
pub fn band(fp: u64, band: i32, nbands: i32) -> Result<i32, OptionError> {
    let n = check_nbands(nbands)?;
    if band < 0 || band >= nbands {
        return Err(OptionError::new(
            "band",
            band.to_string(),
            format!("an integer from 0 to {} (nbands - 1)", nbands - 1),
        ));
    }
    Ok(band_value(fp, band as u32, n))
}

#[inline]
fn band_value(fp: u64, band: u32, nbands: u32) -> i32 {
    let (start, end) = band_bits(band, nbands);
    let mask = (1u64 << (end - start)) - 1;
    ((fp >> start) & mask) as i32
}

/// All bands of a fingerprint, band 0 (the least significant bits) first.
pub fn bands(fp: u64, nbands: i32) -> Result<Vec<i32>, OptionError> {
    let n = check_nbands(nbands)?;
    Ok((0..n).map(|i| band_value(fp, i, n)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn four_bands_are_16_bit_words() {
        let fp = 0x1234_5678_9abc_def0u64;
        assert_eq!(bands(fp, 4).unwrap(), vec![0xdef0, 0x9abc, 0x5678, 0x1234]);
        assert_eq!(band(fp, 3, 4).unwrap(), 0x1234);
    }

    #[test]
    fn band_widths_cover_64_bits() {
        for n in 3..=64u32 {
            let widths: Vec<u32> = (0..n).map(|i| band_bits(i, n)).map(|(s, e)| e - s).collect();
            assert_eq!(widths.iter().sum::<u32>(), 64);
            assert!(widths.iter().all(|&w| w == 64 / n || w == 64 / n + 1));
        }
        assert_eq!(
            bands(u64::MAX, 3).unwrap(),
            vec![(1 << 21) - 1, (1 << 21) - 1, (1 << 22) - 1]
        );
        assert_eq!(bands(u64::MAX, 64).unwrap(), vec![1; 64]);
    }

    #[test]
    fn bad_options_name_the_option() {
        assert_eq!(bands(0, 2).unwrap_err().option, "nbands");
        assert_eq!(bands(0, 65).unwrap_err().option, "nbands");
        assert_eq!(band(0, 4, 4).unwrap_err().option, "band");
        assert_eq!(band(0, -1, 4).unwrap_err().option, "band");
        assert!(band(0, 0, 4).is_ok());
    }

    #[test]
    fn hamming_counts_bits() {
        assert_eq!(hamming(0, 0), 0);
        assert_eq!(hamming(0, u64::MAX), 64);
        assert_eq!(hamming(0b1011, 0b0001), 2);
    }

    proptest! {
        // The property the band index rests on.
        #[test]
        fn pigeonhole_holds(a: u64, flips in proptest::collection::vec(0u32..64, 0..8), n in 3i32..=8) {
            let mut b = a;
            for f in flips { b ^= 1 << f; }
            if hamming(a, b) < n as u32 {
                let (ba, bb) = (bands(a, n).unwrap(), bands(b, n).unwrap());
                prop_assert!(ba.iter().zip(&bb).any(|(x, y)| x == y));
            }
        }
    }
}
