//! Steps 3–6 for the tokens of any tokenizer on the fast path: keep, shingle and hash each token,
//! and hand every feature to the sink.

use super::hashing::token_hash;
use super::keep::{has_alnum, StopHashes};
use super::shingle::Ring;
use crate::error::OutOfMemory;
use crate::options::Options;

/// Where the features go: `sink(hash, token)`, the token given for `shingle = 1` only.
pub(super) trait Sink: FnMut(u64, Option<&str>) -> Result<(), OutOfMemory> {}

impl<F: FnMut(u64, Option<&str>) -> Result<(), OutOfMemory>> Sink for F {}

/// Steps 3–6 for the tokens of a tokenizer: `keep` (alphanumeric, not a stop word), shingles, the
/// feature hash, into the sink; the first error of the sink is kept and ends the chunk.
pub(super) struct Keeper<S> {
    pub(super) sink: S,
    pub(super) stops: &'static StopHashes,
    pub(super) stopwords: bool,
    /// `shingle = 1`: every kept token is a feature, hashed as it is.
    pub(super) single: bool,
    pub(super) ring: Ring,
    pub(super) failed: Option<OutOfMemory>,
}

impl<S: Sink> Keeper<S> {
    pub(super) fn new(sink: S, options: &Options) -> Self {
        Keeper {
            sink,
            stops: StopHashes::get(),
            stopwords: options.stopwords,
            single: options.shingle == 1,
            ring: Ring::new(options),
            failed: None,
        }
    }

    /// One token; `alnum` says it is known to hold an alphanumeric character.
    #[inline(always)]
    pub(super) fn token(&mut self, token: &str, alnum: bool) {
        if self.failed.is_some() || !(alnum || has_alnum(token)) {
            return;
        }
        // `keep_fast`, with the stop words looked up by the hash that a single token needs anyway.
        if self.single {
            self.hashed(token_hash(token), token);
        } else if !(self.stopwords && self.stops.contains(token_hash(token), token)) {
            if let Some(h) = self.ring.push(token) {
                self.emit(h, None);
            }
        }
    }

    /// One alphanumeric token of `shingle = 1` whose [`token_hash`] is `h`.
    #[inline(always)]
    pub(super) fn hashed(&mut self, h: u64, token: &str) {
        if self.failed.is_some() || (self.stopwords && self.stops.contains(h, token)) {
            return;
        }
        self.emit(h, Some(token));
    }

    #[inline(always)]
    fn emit(&mut self, h: u64, token: Option<&str>) {
        if let Err(e) = (self.sink)(h, token) {
            self.failed = Some(e);
        }
    }
}
