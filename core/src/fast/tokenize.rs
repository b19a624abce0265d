//! Step 2 on the fast path, per tokenizer: the tokens of one normalized chunk, handed to the keeper
//! (steps 3–6), or for 'char' shingles straight to the ring of characters.

use super::bigram::Bigrams;
use super::char_ring::CharRing;
use super::hashing::bytes_hash;
use super::jieba::jieba_tokens;
use super::keep::char_is_alnum;
use super::keeper::{Keeper, Sink};
use super::words::{scan_words_into, Words};
use crate::error::OutOfMemory;
use crate::options::Tokenizer;

/// Hands the tokens of the normalized chunk `text` to `keeper`, or under 'char' with shingles of
/// more than one character to `char_ring`. Stops at the first error of the sink that the ring
/// feeds; the keeper keeps its own.
#[inline]
pub(super) fn tokenize_chunk<S: Sink>(
    text: &str,
    tokenizer: Tokenizer,
    keeper: &mut Keeper<S>,
    char_ring: &mut CharRing,
) -> Result<(), OutOfMemory> {
    match tokenizer {
        Tokenizer::Word => scan_words_into(text, &mut Unigrams(keeper)),
        Tokenizer::Char if !keeper.single => char_shingles(text, keeper, char_ring)?,
        Tokenizer::Char => char_tokens(text, keeper),
        Tokenizer::Jieba => jieba_tokens(text, |token| keeper.token(token, false)),
        Tokenizer::Bigram => {
            let mut bigrams = Bigrams::new(text, keeper);
            scan_words_into(text, &mut bigrams);
            bigrams.finish();
        }
        // A tokenizer added later: `fast_path_supports` sends it to the reference.
        #[allow(unreachable_patterns)]
        _ => unreachable!("the fast path was given a tokenizer it does not know"),
    }
    Ok(())
}

/// The tokens of the 'word' tokenizer, as a [`Words`]: an ideograph's three bytes are hashed here.
struct Unigrams<'k, S>(&'k mut Keeper<S>);

impl<'t, S: Sink> Words<'t> for Unigrams<'_, S> {
    #[inline(always)]
    fn word(&mut self, t: &'t str, alnum: bool) {
        self.0.token(t, alnum);
    }

    #[inline(always)]
    fn ideograph(&mut self, text: &'t str, p: usize) {
        let token = &text[p..p + 3];
        match token.as_bytes() {
            &[a, b, c] if self.0.single => self.0.hashed(bytes_hash(&[a, b, c]), token),
            _ => self.0.token(token, true),
        }
    }
}

/// 'char' with shingles: every kept character straight into the ring, without the keeper's steps
/// for tokens of any length (the same checks: alphanumeric, not a stop word).
#[inline]
fn char_shingles<S: Sink>(
    text: &str,
    keeper: &mut Keeper<S>,
    ring: &mut CharRing,
) -> Result<(), OutOfMemory> {
    for (i, c) in text.char_indices() {
        if !char_is_alnum(c)
            || (keeper.stopwords && keeper.stops.contains_char(c, &text[i..i + c.len_utf8()]))
        {
            continue;
        }
        if let Some(h) = ring.push(c) {
            (keeper.sink)(h, None)?;
        }
    }
    Ok(())
}

/// 'char' without shingles: every alphanumeric character is a token for the keeper.
#[inline]
fn char_tokens<S: Sink>(text: &str, keeper: &mut Keeper<S>) {
    for (i, c) in text.char_indices() {
        if char_is_alnum(c) {
            keeper.token(&text[i..i + c.len_utf8()], true);
        }
    }
}
