//! The project's stop-word lists (docs/ARCHITECTURE.md §2.5). They are part of the fingerprint contract: a change
//! to either file changes stored fingerprints, so they are versioned with the extension.

use std::collections::HashSet;
use std::sync::LazyLock;

const ENGLISH: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../data/stopwords/en.txt"));
const CHINESE: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../data/stopwords/zh.txt"));

static STOP_WORDS: LazyLock<HashSet<&'static str>> = LazyLock::new(|| {
    ENGLISH
        .lines()
        .chain(CHINESE.lines())
        .map(str::trim)
        .filter(|w| !w.is_empty())
        .collect()
});

/// Whether a normalized token is a stop word.
pub fn is_stop_word(token: &str) -> bool {
    STOP_WORDS.contains(token)
}

/// Every stop word, for documentation and tests.
pub fn all() -> impl Iterator<Item = &'static str> {
    ENGLISH
        .lines()
        .chain(CHINESE.lines())
        .map(str::trim)
        .filter(|w| !w.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::normalize::normalize;

    #[test]
    fn lists_hold_common_function_words() {
        for w in ["the", "and", "of", "的", "了", "是"] {
            assert!(is_stop_word(w), "{w}");
        }
        assert!(!is_stop_word("simhash"));
        assert!(!is_stop_word("新闻"));
    }

    #[test]
    fn every_entry_is_already_normalized() {
        // An entry that normalization would change could never match a token.
        for w in all() {
            assert_eq!(normalize(w), w, "stop word {w:?} is not in normalized form");
            assert!(w.chars().any(char::is_alphanumeric), "{w:?}");
        }
    }
}
