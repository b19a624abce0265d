//! Feature hashes (FNV-1a, then fmix64) computed on the fast path from the bytes or characters at
//! hand, and the pass-through hasher of the maps keyed by feature hashes.

use crate::hash::{fmix64, Fnv1a64};

/// The feature hash of one token: FNV-1a of its bytes, then fmix64.
#[inline]
pub(super) fn token_hash(token: &str) -> u64 {
    let mut h = Fnv1a64::default();
    h.write(token.as_bytes());
    fmix64(h.finish())
}

/// [`token_hash`] of a token of `N` bytes, the loop unrolled for that length.
#[inline(always)]
pub(super) fn bytes_hash<const N: usize>(bytes: &[u8; N]) -> u64 {
    let mut h = Fnv1a64::default();
    for &b in bytes {
        h.write_u8(b);
    }
    fmix64(h.finish())
}

/// FNV-1a of the `len` (at most 8) low bytes of `x`, the highest of them first.
#[inline]
pub(super) fn fnv_low_bytes(x: u64, len: usize) -> u64 {
    let mut h = Fnv1a64::default();
    if len > 0 {
        // The first byte to the top.
        let mut x = x << (8 * (8 - len.min(8)));
        for _ in 0..len.min(8) {
            h.write_u8((x >> 56) as u8);
            x <<= 8;
        }
    }
    h.finish()
}

/// FNV-1a and fmix64 of the characters' UTF-8 encoding (RFC 3629, written out: one to four bytes).
#[inline]
pub(super) fn chars_hash<'a>(chars: impl Iterator<Item = &'a char>) -> u64 {
    let mut h = Fnv1a64::default();
    for &c in chars {
        let v = u32::from(c);
        let cont = |shift: u32| 0x80 | ((v >> shift) & 0x3F) as u8;
        match v {
            0..=0x7F => h.write(&[v as u8]),
            0x80..=0x7FF => h.write(&[0xC0 | (v >> 6) as u8, cont(0)]),
            0x800..=0xFFFF => h.write(&[0xE0 | (v >> 12) as u8, cont(6), cont(0)]),
            _ => h.write(&[0xF0 | (v >> 18) as u8, cont(12), cont(6), cont(0)]),
        }
    }
    fmix64(h.finish())
}

/// A hasher for keys that are already feature hashes (FNV-1a through fmix64, well mixed): the key
/// itself. Only which features are distinct depends on the map, never their order (kept in a
/// vector), so the hasher cannot change a fingerprint.
#[derive(Default)]
pub(super) struct PassHasher(u64);

impl std::hash::Hasher for PassHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }

    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

pub(super) type PassBuild = std::hash::BuildHasherDefault<PassHasher>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fast::test_support::all_chars;

    #[test]
    fn chars_hash_is_the_hash_of_the_utf8() {
        let chars: Vec<char> = [
            'a',
            '\u{7f}',
            '\u{80}',
            'é',
            '\u{7ff}',
            '\u{800}',
            '中',
            '\u{ffff}',
            '😀',
            '\u{10ffff}',
        ]
        .into_iter()
        .chain(all_chars().step_by(4099))
        .collect();
        for w in chars.windows(3) {
            let s: String = w.iter().collect();
            assert_eq!(
                chars_hash(w.iter()),
                fmix64(crate::hash::fnv1a64(s.as_bytes())),
                "{s:?}"
            );
        }
    }
}
