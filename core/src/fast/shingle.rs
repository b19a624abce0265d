//! Shingles of tokens on the fast path (step 4): the last `n` kept tokens joined in one reused byte
//! buffer, so that every window is hashed from one slice, without a string per window.

use crate::hash::{fmix64, Fnv1a64};
use crate::options::Options;

/// The last `n` kept tokens, stored joined by the separator in one reused byte buffer, so that the
/// window is always one contiguous slice: the exact bytes the reference joins and hashes.
pub(super) struct Ring {
    n: usize,
    sep: &'static [u8],
    /// `…sep token sep token`: the kept tokens since the last compaction.
    buf: Vec<u8>,
    /// Start in `buf` of each of the last `n` tokens; `starts[head]` is the oldest once full.
    starts: Vec<usize>,
    head: usize,
    kept: usize,
}

/// Appends `bytes`: one by one when few (a call to `memcpy` costs more than a character's bytes).
#[inline]
fn push_bytes(buf: &mut Vec<u8>, bytes: &[u8]) {
    if bytes.len() <= 4 {
        buf.reserve(4);
        bytes.iter().for_each(|&b| buf.push(b));
    } else {
        buf.extend_from_slice(bytes);
    }
}

/// `buf` is compacted (the bytes before the window dropped) when it grows past this.
const RING_COMPACT_AT: usize = 1 << 14;

impl Ring {
    pub(super) fn new(options: &Options) -> Self {
        Ring {
            n: options.shingle.max(1),
            sep: options.tokenizer.shingle_separator().as_bytes(),
            buf: Vec::new(),
            starts: Vec::new(),
            head: 0,
            kept: 0,
        }
    }

    /// Adds a kept token; returns the hash of the full window if there is one.
    #[inline]
    pub(super) fn push(&mut self, token: &str) -> Option<u64> {
        if self.starts.len() == self.n && self.buf.len() > RING_COMPACT_AT {
            let from = self.starts[self.head];
            self.buf.drain(..from);
            self.starts.iter_mut().for_each(|s| *s -= from);
        }
        if self.kept > 0 {
            push_bytes(&mut self.buf, self.sep);
        }
        let start = self.buf.len();
        push_bytes(&mut self.buf, token.as_bytes());
        self.kept += 1;
        if self.starts.len() < self.n {
            self.starts.push(start);
            if self.starts.len() < self.n {
                return None;
            }
        } else {
            self.starts[self.head] = start;
            self.head += 1;
            if self.head == self.n {
                self.head = 0;
            }
        }
        Some(self.window_hash())
    }

    /// FNV-1a of the window's bytes (oldest token to the end), then fmix64.
    #[inline]
    fn window_hash(&self) -> u64 {
        let from = self.starts.get(self.head).copied().unwrap_or(0);
        let mut h = Fnv1a64::default();
        h.write(self.buf.get(from..).unwrap_or_default());
        fmix64(h.finish())
    }

    /// A text with fewer than n kept tokens gives one feature: all of them joined (`buf` was never
    /// compacted, it holds exactly those).
    pub(super) fn finish(&self) -> Option<u64> {
        (self.n > 1 && self.kept > 0 && self.kept < self.n).then(|| {
            let mut h = Fnv1a64::default();
            h.write(&self.buf);
            fmix64(h.finish())
        })
    }
}
