//! Steps 1–6 on the fast path, chunk by chunk like the reference: normalize, fold, tokenize, keep,
//! shingle and hash, and hand every feature hash to a sink.

use super::char_ring::CharRing;
use super::fold::fold_into;
use super::keeper::Keeper;
use super::normalize::{is_normalized_quick, normalize_into, normalize_into_checking_fold};
use super::tokenize::tokenize_chunk;
use crate::error::{memory_low, OutOfMemory};
use crate::normalize::{chunks, Chunking};
use crate::options::{Fold, Options, Tokenizer};

/// Calls `sink(hash, token)` for every feature of `text` (the token is given for `shingle = 1`
/// only), chunk by chunk like the reference, calling `interrupt` between chunks.
pub(super) fn for_each_feature_hash(
    text: &str,
    options: &Options,
    chunking: Chunking,
    interrupt: &mut dyn FnMut(),
    sink: impl FnMut(u64, Option<&str>) -> Result<(), OutOfMemory>,
) -> Result<(), OutOfMemory> {
    let mut keeper = Keeper::new(sink, options);
    // 'char' shingles (tokens of one character, joined by ""): a ring of characters.
    let mut char_ring = CharRing::new(options.shingle);
    let mut buf = String::new();
    let mut folded = String::new();
    let fold = options.fold == Fold::Simplified;
    for chunk in chunks(text, chunking) {
        interrupt();
        if memory_low() {
            return Err(OutOfMemory { features: 0 });
        }
        let normalized = normalize_chunk(chunk, fold, &mut buf, &mut folded);
        tokenize_chunk(normalized, options.tokenizer, &mut keeper, &mut char_ring)?;
        if let Some(e) = keeper.failed.take() {
            return Err(e);
        }
    }
    let last = if options.tokenizer == Tokenizer::Char {
        char_ring.finish()
    } else {
        keeper.ring.finish()
    };
    if let Some(h) = last {
        (keeper.sink)(h, None)?;
    }
    Ok(())
}

/// Step 1 and, with `fold`, folding of one chunk: the chunk itself when it is already normal and
/// nothing is to be folded, else the text written into `buf` or `folded`.
#[inline]
pub(super) fn normalize_chunk<'a>(
    chunk: &'a str,
    fold: bool,
    buf: &'a mut String,
    folded: &'a mut String,
) -> &'a str {
    let may_fold = if fold {
        normalize_into_checking_fold(chunk, buf)
    } else if is_normalized_quick(chunk) {
        return chunk;
    } else {
        normalize_into(chunk, buf);
        false
    };
    let normalized: &'a str = buf;
    // Folding, where the reference does it: on the whole normalized chunk, before tokenizing.
    // The chunk was cut in the raw text by the same `chunks` as the reference's, and the
    // tokenizers take any text, so nothing here depends on what a folded character is.
    if may_fold && fold_into(normalized, folded) {
        folded
    } else {
        normalized
    }
}
