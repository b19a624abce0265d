//! Step 3 on the fast path: `keep` (an alphanumeric character, not a dropped stop word) with ASCII
//! and ideographs tested without the Unicode tables and the stop words looked up by feature hash.

use std::collections::HashMap;
use std::sync::OnceLock;

use super::classes::{char_at, is_cjk_punctuation, is_ideograph};
use super::hashing::{token_hash, PassBuild};

/// `keep(token, stopwords)` (step 3) with cheaper checks: `alnum` says the caller already knows that
/// the token has an alphanumeric character; ASCII and CJK ideographs are tested without the Unicode
/// tables (every character of the two ideograph blocks is alphabetic: test
/// `ideographs_are_alphanumeric`); stop words are looked up by the token's feature hash
/// ([`StopHashes`]). The pipeline does the same steps inline, reusing the hash of a single token.
#[cfg(test)]
fn keep_fast(token: &str, stopwords: bool, alnum: bool) -> bool {
    (alnum || has_alnum(token)) && !(stopwords && StopHashes::get().contains(token_hash(token), token))
}

#[inline(always)]
pub(super) fn has_alnum(token: &str) -> bool {
    // Most tokens are decided by their first character: an ASCII letter or digit, an ideograph.
    match token.as_bytes().first() {
        Some(b) if b.is_ascii_alphanumeric() => return true,
        // A space or punctuation mark alone (jieba gives each one as a token).
        Some(&b) if b < 0x80 && token.len() == 1 => return false,
        // U+5000–U+9FFF: ideographs, without decoding.
        Some(0xE5..=0xE9) => return true,
        Some(&b) if b >= 0x80 && char_at(token, 0).is_some_and(is_ideograph) => return true,
        _ => {}
    }
    token.chars().any(|c| {
        if c.is_ascii() {
            c.is_ascii_alphanumeric()
        } else {
            // CJK punctuation is not alphanumeric (test `ideographs_are_alphanumeric`).
            !is_cjk_punctuation(c) && (is_ideograph(c) || c.is_alphanumeric())
        }
    })
}

/// The check of `keep` on one decoded character (a `'char'` token), without the Unicode tables
/// for ASCII and ideographs.
#[inline]
pub(super) fn char_is_alnum(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_alphanumeric()
    } else {
        is_ideograph(c) || c.is_alphanumeric()
    }
}

/// The stop words by their feature hash ([`token_hash`]), for tokens whose hash is computed anyway
/// (`shingle = 1`): a bitmap of the hashes' top 16 bits rejects most tokens with one load, and a
/// hit is confirmed by the word itself, so a hash collision cannot drop a token.
pub(super) struct StopHashes {
    bits: Box<[u64; 1024]>,
    words: HashMap<u64, &'static str, PassBuild>,
    /// The stop words of one character of the BMP, by code point (for the 'char' tokenizer).
    chars: Box<[u64; 1024]>,
}

impl StopHashes {
    pub(super) fn get() -> &'static StopHashes {
        static STOPS: OnceLock<StopHashes> = OnceLock::new();
        STOPS.get_or_init(|| {
            let mut bits = Box::new([0u64; 1024]);
            let mut chars = Box::new([0u64; 1024]);
            let mut words = HashMap::default();
            for w in crate::stopwords::all() {
                let h = token_hash(w);
                bits[(h >> 54) as usize] |= 1 << ((h >> 48) & 63);
                // Two stop words with one hash would need a list here; the test
                // `stop_hashes_equal_stop_words` would see the second one lost.
                words.insert(h, w);
                let mut it = w.chars();
                if let (Some(c), None) = (it.next(), it.next()) {
                    if let Ok(u) = u16::try_from(u32::from(c)) {
                        chars[usize::from(u >> 6)] |= 1 << (u & 63);
                    }
                }
            }
            StopHashes { bits, words, chars }
        })
    }

    /// Whether `token`, whose [`token_hash`] is `h`, is a stop word.
    #[inline]
    pub(super) fn contains(&self, h: u64, token: &str) -> bool {
        self.bits[(h >> 54) as usize] & (1 << ((h >> 48) & 63)) != 0 && self.words.get(&h) == Some(&token)
    }

    /// Whether the one-character token `token`, the character `c`, is a stop word: by code point
    /// in the BMP, by hash beyond it.
    #[inline(always)]
    pub(super) fn contains_char(&self, c: char, token: &str) -> bool {
        match u16::try_from(u32::from(c)) {
            Ok(u) => self.chars[usize::from(u >> 6)] & (1 << (u & 63)) != 0,
            Err(_) => self.contains(token_hash(token), token),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fast::test_support::all_chars;
    use crate::fast::words::scan_words;
    use crate::stopwords::is_stop_word;
    use crate::tokenize::keep;
    use std::collections::HashSet;

    #[test]
    fn stop_hashes_equal_stop_words() {
        let stops = StopHashes::get();
        let all: Vec<&str> = crate::stopwords::all().collect();
        assert_eq!(stops.words.len(), all.iter().collect::<HashSet<_>>().len());
        for w in all {
            assert!(stops.contains(token_hash(w), w), "{w:?}");
        }
        // Not a stop word, whatever its hash; a stop word's hash with another token.
        for w in ["simhash", "新闻", "thee", "的的", "", "The"] {
            assert!(!stops.contains(token_hash(w), w), "{w:?}");
        }
        assert!(!stops.contains(token_hash("the"), "thee"));
        // Every character, as a one-character token.
        for c in all_chars() {
            let w = c.to_string();
            assert_eq!(stops.contains_char(c, &w), is_stop_word(&w), "{w:?}");
        }
        for c in all_chars().step_by(11) {
            let w = c.to_string();
            assert_eq!(stops.contains(token_hash(&w), &w), is_stop_word(&w), "{w:?}");
        }
    }

    #[test]
    fn keep_fast_equals_keep() {
        let mut words: Vec<String> = crate::stopwords::all().map(str::to_owned).collect();
        words.extend(
            [
                "", "_", "__", "a", "_a", "中", "。", "，", "x1", "...", "Ⅻ", "①", "the", "The", "的了",
            ]
            .map(String::from),
        );
        words.extend(all_chars().step_by(7).map(String::from));
        for w in &words {
            for stopwords in [false, true] {
                assert_eq!(keep_fast(w, stopwords, false), keep(w, stopwords), "{w:?}");
            }
        }
        // Tokens the scanner vouches for.
        for t in ["abc", "a.b", "1,000", "x_1", "中"] {
            assert!(keep(t, false));
            let mut seen = Vec::new();
            scan_words(t, |t, alnum| seen.push((t, alnum)));
            assert_eq!(seen, vec![(t, true)]);
        }
    }
}
