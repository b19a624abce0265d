//! The kept tokens of the 'word' tokenizer as a stream of token hashes, for MinHash
//! ([`crate::minhash`]): steps 1–3 of the fast path (normalize, fold, the word scanner, `keep`),
//! with each token handed over as its feature hash and whether it is one Han character. MinHash
//! builds its shingles from these hashes, so no token is copied.

use super::hashing::{bytes_hash, token_hash};
use super::keep::{has_alnum, StopHashes};
use super::pipeline::normalize_chunk;
use super::words::{scan_words_into, Words};
use crate::error::{memory_low, OutOfMemory};
use crate::normalize::{chunks, Chunking};
use crate::tokenize::is_han;

/// Calls `sink(hash, han)` for every token of `text` that the 'word' tokenizer gives and `keep`
/// keeps (an alphanumeric character; not a stop word when `stopwords`), in order, chunk by chunk
/// like the reference, calling `interrupt` between chunks. `hash` is the token's feature hash
/// ([`crate::hash::feature_hash`]), `han` whether the token is one Han character
/// ([`crate::tokenize::is_han`]).
pub(crate) fn for_each_word_token(
    text: &str,
    stopwords: bool,
    fold: bool,
    chunking: Chunking,
    interrupt: &mut dyn FnMut(),
    sink: impl FnMut(u64, bool),
) -> Result<(), OutOfMemory> {
    let mut tokens = Tokens {
        sink,
        stops: StopHashes::get(),
        stopwords,
    };
    let mut buf = String::new();
    let mut folded = String::new();
    for chunk in chunks(text, chunking) {
        interrupt();
        if memory_low() {
            return Err(OutOfMemory { features: 0 });
        }
        let normalized = normalize_chunk(chunk, fold, &mut buf, &mut folded);
        scan_words_into(normalized, &mut tokens);
    }
    Ok(())
}

struct Tokens<F> {
    sink: F,
    stops: &'static StopHashes,
    stopwords: bool,
}

impl<'t, F: FnMut(u64, bool)> Words<'t> for Tokens<F> {
    #[inline(always)]
    fn word(&mut self, token: &'t str, alnum: bool) {
        if !(alnum || has_alnum(token)) {
            return;
        }
        let h = token_hash(token);
        if self.stopwords && self.stops.contains(h, token) {
            return;
        }
        let mut chars = token.chars();
        let han = matches!((chars.next(), chars.next()), (Some(c), None) if is_han(c));
        (self.sink)(h, han);
    }

    /// An ideograph of the scanner (U+3400–U+9FFF) is one Han character.
    #[inline(always)]
    fn ideograph(&mut self, text: &'t str, p: usize) {
        let token = &text[p..p + 3];
        let h = match token.as_bytes() {
            &[a, b, c] => bytes_hash(&[a, b, c]),
            _ => token_hash(token),
        };
        if self.stopwords && self.stops.contains(h, token) {
            return;
        }
        (self.sink)(h, true);
    }
}
