//! Finding a key among the items of a locked leaf page: the first item not below a probed value,
//! by interpolation between known keys with the cache misses of each round overlapping
//! (docs/ARCHITECTURE.md §5.2), and the CPU prefetch hint the reads around it use.

use pgrx::prelude::*;

use super::btree_page::{Page, MINUS_INFINITY, NULL_KEY};

/// The offset of the first item of a leaf page whose key is not below `value` (`last + 1` if none),
/// given bounds on the keys of the page: `low` below `value`, `high` at or above it.
///
/// The items are in key order but their tuples lie scattered over the page, so each key read is a
/// cache miss, and a plain binary search waits for memory eight or nine times in a row on a page
/// of 300 entries. Instead each round reads up to three keys at once (their line pointers, then
/// their tuples, requested together so the misses overlap): around the position that interpolation
/// between the known keys predicts (band values are close to uniform, so the true position is
/// within a few square roots of the range), or at the quartiles when it cannot predict. Two or
/// three rounds find the item on a uniform page; a skewed page costs at most as many rounds as a
/// binary search has steps. None if an item read is not a whole leaf item.
pub(super) fn first_not_below(
    page: &Page,
    first: pg_sys::OffsetNumber,
    last: pg_sys::OffsetNumber,
    value: i64,
    low: i64,
    high: i64,
) -> Option<pg_sys::OffsetNumber> {
    // Invariant: the key at `lo` is below `value`, the key at `hi` is not; `first - 1` and
    // `last + 1` stand for the page's bounds.
    let (mut lo, mut hi) = (i64::from(first) - 1, i64::from(last) + 1);
    let (mut klo, mut khi) = (low, high);
    while hi - lo > 1 {
        if hi - lo <= SCAN_WIDTH {
            // A few items left: read all their keys at once (the misses overlap) rather than in
            // two or three rounds that each wait for the last.
            let mut scan = [None; SCAN_WIDTH as usize];
            for (slot, p) in scan.iter_mut().zip(lo + 1..hi) {
                let tuple = page.tuple(p as u16)?;
                prefetch_line(tuple.address());
                *slot = Some(tuple);
            }
            for (slot, p) in scan.iter().zip(lo + 1..hi) {
                if (*slot)?.key(false)? >= value {
                    return Some(p as u16);
                }
            }
            return Some(hi as u16);
        }
        let pivots = round_pivots(lo, hi, klo, khi, value);
        for &p in &pivots {
            prefetch_line(page.line_pointer(p as u16)?.cast());
        }
        let mut tuples = [None; 3];
        for (t, &p) in tuples.iter_mut().zip(&pivots) {
            let tuple = page.tuple(p as u16)?;
            prefetch_line(tuple.address());
            *t = Some(tuple);
        }
        for (&t, &p) in tuples.iter().zip(&pivots) {
            if p <= lo {
                continue;
            }
            let key = t?.key(false)?;
            if key < value {
                lo = p;
                klo = key;
            } else {
                hi = p;
                khi = key;
                break;
            }
        }
    }
    Some(hi as u16)
}

/// Ranges of at most this many positions (between two known ones) are read whole.
const SCAN_WIDTH: i64 = 17;

/// The keys one round of [`first_not_below`] reads, between positions `lo` and `hi` (exclusive)
/// whose keys are `klo` below the value and `khi` not below it: all of them when at most three,
/// else around the interpolated position (a spread of half the square root of the range, about the
/// error of interpolation on uniform keys), else at the quartiles. Always inside the range.
pub(super) fn round_pivots(lo: i64, hi: i64, klo: i64, khi: i64, value: i64) -> [i64; 3] {
    let width = hi - lo;
    if width <= 4 {
        return [1, 2, 3].map(|i| (lo + i).min(hi - 1));
    }
    if let Some(guess) = interpolate(lo, hi, klo, khi, value) {
        // About half the square root of the width, without floating point.
        let spread = 1i64 << ((64 - width.leading_zeros()) / 2).saturating_sub(1);
        return [guess - spread, guess, guess + spread].map(|p| p.clamp(lo + 1, hi - 1));
    }
    [1, 2, 3].map(|q| lo + width * q / 4)
}

/// The position between `lo` and `hi` (exclusive) that linear interpolation between their keys
/// `klo` and `khi` predicts for `value`, when both keys are known.
#[inline]
fn interpolate(lo: i64, hi: i64, klo: i64, khi: i64, value: i64) -> Option<i64> {
    if klo == MINUS_INFINITY || khi == NULL_KEY || khi <= klo {
        return None;
    }
    let width = hi - lo;
    // Band values are below 2^16 and widths (item counts) below 2^11: a 32-bit division, cheaper
    // than a 64-bit one, when the bounds fit (they always do for band indexes).
    let step = match (
        u32::try_from(value - klo),
        u32::try_from(width),
        u32::try_from(khi - klo),
    ) {
        (Ok(a), Ok(w), Ok(d)) if a < 1 << 20 => i64::from(a * w / d),
        _ => (value - klo) * width / (khi - klo),
    };
    Some((lo + step).clamp(lo + 1, hi - 1))
}

/// Asks the CPU to bring in the cache line at `address` (a hint: no fault, no effect on results).
#[inline(always)]
pub(super) fn prefetch_line(address: *const u8) {
    #[cfg(target_arch = "x86_64")]
    unsafe {
        std::arch::x86_64::_mm_prefetch(address as *const i8, std::arch::x86_64::_MM_HINT_T0);
    }
}
