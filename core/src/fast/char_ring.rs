//! Shingles of the 'char' tokenizer on the fast path (step 4): the last `n` kept characters, hashed
//! through their UTF-8 bytes without joining them.

use super::hashing::{chars_hash, fnv_low_bytes};
use crate::hash::fmix64;

/// [`Ring`](super::shingle::Ring) for the 'char' tokenizer, whose shingles are `n` characters
/// joined by "": the last `n` kept characters, hashed through their UTF-8 bytes.
///
/// Shingles of up to [`SHORT_SHINGLE`] characters (the common ones) keep the last characters in a
/// fixed ring and the last eight bytes of their UTF-8 in `recent`, so that a window of at most
/// eight bytes (three ASCII characters, or two ideographs) is hashed from `recent` without
/// encoding its characters again; longer shingles keep the last `n` characters in `long`.
pub(super) struct CharRing {
    n: usize,
    kept: usize,
    /// The last kept characters, the one kept k-th (from 0) at `k % SHORT_SHINGLE`.
    short: [char; SHORT_SHINGLE],
    /// The UTF-8 bytes of the kept characters, the newest in the low byte: the last eight of them.
    recent: u64,
    /// The UTF-8 length of each of the last kept characters, the newest in the low byte.
    lens: u64,
    /// How many bytes of UTF-8 the last `n` kept characters take.
    window_bytes: usize,
    /// For `n` > [`SHORT_SHINGLE`]: the last `n` characters, the oldest at `head` once full.
    long: Vec<char>,
    head: usize,
}

const SHORT_SHINGLE: usize = 8;

impl CharRing {
    pub(super) fn new(n: usize) -> Self {
        CharRing {
            n: n.max(1),
            kept: 0,
            short: ['\0'; SHORT_SHINGLE],
            recent: 0,
            lens: 0,
            window_bytes: 0,
            long: Vec::new(),
            head: 0,
        }
    }

    #[inline(always)]
    pub(super) fn push(&mut self, c: char) -> Option<u64> {
        if self.n > SHORT_SHINGLE {
            return self.push_long(c);
        }
        let v = u32::from(c);
        let len = if v < 0x80 {
            self.recent = (self.recent << 8) | u64::from(v);
            1
        } else {
            let mut utf8 = [0u8; 4];
            let bytes = c.encode_utf8(&mut utf8).as_bytes();
            for &b in bytes {
                self.recent = (self.recent << 8) | u64::from(b);
            }
            bytes.len()
        };
        let n = self.n;
        // The character that leaves the window: the one kept n places back.
        let leaving = if self.kept >= n {
            ((self.lens >> (8 * (n - 1))) & 0xFF) as usize
        } else {
            0
        };
        self.lens = (self.lens << 8) | len as u64;
        self.window_bytes = self.window_bytes + len - leaving;
        self.short[self.kept % SHORT_SHINGLE] = c;
        self.kept += 1;
        if self.kept < n {
            return None;
        }
        if self.window_bytes <= 8 {
            return Some(fmix64(fnv_low_bytes(self.recent, self.window_bytes)));
        }
        let from = self.kept - n;
        Some(chars_hash(
            (from..self.kept).map(|k| &self.short[k % SHORT_SHINGLE]),
        ))
    }

    #[cold]
    fn push_long(&mut self, c: char) -> Option<u64> {
        self.kept += 1;
        if self.long.len() < self.n {
            self.long.push(c);
            if self.long.len() < self.n {
                return None;
            }
        } else {
            self.long[self.head] = c;
            self.head += 1;
            if self.head == self.n {
                self.head = 0;
            }
        }
        let (newer, older) = self.long.split_at(self.head);
        Some(chars_hash(older.iter().chain(newer)))
    }

    /// Fewer than n kept characters: all of them, in order.
    pub(super) fn finish(&self) -> Option<u64> {
        if !(self.n > 1 && self.kept > 0 && self.kept < self.n) {
            return None;
        }
        Some(if self.n > SHORT_SHINGLE {
            chars_hash(self.long.iter())
        } else {
            chars_hash(self.short[..self.kept].iter())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fast::test_support::all_chars;

    /// Every window of every shingle length (the fixed ring up to `SHORT_SHINGLE`, the long one
    /// past it), over characters of one to four bytes in runs and mixed, whose windows fall on
    /// both sides of eight bytes: the hash of the window's characters joined.
    #[test]
    fn char_ring_hashes_each_window_as_its_text() {
        let text: Vec<char> = "abcdefghijklmnop é中文字a😀bc\u{7ff}\u{800}xyz\u{10ffff}qq中中中中中中中中ab"
            .chars()
            .chain(all_chars().step_by(7919).take(40))
            .collect();
        let joined = |w: &[char]| fmix64(crate::hash::fnv1a64(w.iter().collect::<String>().as_bytes()));
        for n in 1..=SHORT_SHINGLE + 4 {
            let mut ring = CharRing::new(n);
            for (i, &c) in text.iter().enumerate() {
                let expected = (i + 1 >= n).then(|| joined(&text[i + 1 - n..=i]));
                assert_eq!(ring.push(c), expected, "n = {n}, at {i}");
            }
            assert_eq!(ring.finish(), None, "n = {n}");
            // Fewer characters than n: one feature of all of them.
            let mut short = CharRing::new(n);
            let few = &text[20..20 + (n - 1).min(5)];
            for &c in few {
                assert_eq!(short.push(c), None);
            }
            let expected = (n > 1 && !few.is_empty()).then(|| joined(few));
            assert_eq!(short.finish(), expected, "n = {n}, {} characters", few.len());
        }
    }
}
