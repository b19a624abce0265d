//! Tokenizers (docs/ARCHITECTURE.md §2.4) and the token filter (docs/ARCHITECTURE.md §2.5).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use jieba_rs::Jieba;
use unicode_segmentation::UnicodeSegmentation;

use crate::options::Tokenizer;
use crate::stopwords::is_stop_word;

static JIEBA: OnceLock<Jieba> = OnceLock::new();
static JIEBA_LOADS: AtomicUsize = AtomicUsize::new(0);

/// The jieba-rs segmenter with its built-in dictionary, built on first use (a few hundred ms).
pub fn jieba() -> &'static Jieba {
    JIEBA.get_or_init(|| {
        JIEBA_LOADS.fetch_add(1, Ordering::Relaxed);
        Jieba::new()
    })
}

/// Whether this process has built the jieba dictionary yet.
pub fn jieba_loaded() -> bool {
    JIEBA.get().is_some()
}

/// How many times this process has built the jieba dictionary: 0 or 1.
pub fn jieba_loads() -> usize {
    JIEBA_LOADS.load(Ordering::Relaxed)
}

/// Calls `f` with every token of an already normalized text, in order, before filtering.
pub fn for_each_token<'t>(text: &'t str, tokenizer: Tokenizer, mut f: impl FnMut(&'t str)) {
    match tokenizer {
        Tokenizer::Jieba => jieba().cut(text, true).into_iter().for_each(|t| f(t.word)),
        Tokenizer::Word => text.split_word_bounds().for_each(f),
        Tokenizer::Char => text
            .char_indices()
            .for_each(|(i, c)| f(&text[i..i + c.len_utf8()])),
        Tokenizer::Bigram => han_bigrams(text, f),
    }
}

/// Whether a character is a Han ideograph (the blocks jieba and the IDF tables know).
pub fn is_han(c: char) -> bool {
    matches!(c, '\u{4E00}'..='\u{9FFF}' | '\u{3400}'..='\u{4DBF}' | '\u{F900}'..='\u{FAFF}' | '\u{20000}'..='\u{3134F}')
}

/// `'bigram'`: UAX #29 words, where a run of Han characters (UAX #29 makes each one a word; any other
/// token, a space included, ends the run) gives each pair of neighbours, or the character itself
/// when the run has one. Every pair is a slice of the text, so chunking cannot change it: a chunk
/// ends after a space or a CJK stop, which ends a run too.
fn han_bigrams<'t>(text: &'t str, mut f: impl FnMut(&'t str)) {
    // Byte range of the current run, and whether it has emitted a pair yet.
    let mut run: Option<(usize, usize)> = None;
    let mut prev: Option<usize> = None; // start of the run's last character
    let mut paired = false;
    let flush = |run: &mut Option<(usize, usize)>, paired: &mut bool, f: &mut dyn FnMut(&'t str)| {
        if let Some((start, end)) = run.take() {
            if !*paired {
                f(&text[start..end]);
            }
        }
        *paired = false;
    };
    for (i, token) in text.split_word_bound_indices() {
        let mut chars = token.chars();
        let single_han = matches!((chars.next(), chars.next()), (Some(c), None) if is_han(c));
        if single_han {
            let end = i + token.len();
            match (run, prev) {
                (Some((start, _)), Some(p)) => {
                    f(&text[p..end]);
                    paired = true;
                    run = Some((start, end));
                }
                _ => run = Some((i, end)),
            }
            prev = Some(i);
        } else {
            flush(&mut run, &mut paired, &mut f);
            prev = None;
            f(token);
        }
    }
    flush(&mut run, &mut paired, &mut f);
}

/// Step 3: a token is kept when it has an alphanumeric character and is not a dropped stop word.
#[inline]
pub fn keep(token: &str, stopwords: bool) -> bool {
    token.chars().any(char::is_alphanumeric) && !(stopwords && is_stop_word(token))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(text: &str, tokenizer: Tokenizer, stopwords: bool) -> Vec<&str> {
        let mut out = Vec::new();
        for_each_token(text, tokenizer, |t| {
            if keep(t, stopwords) {
                out.push(t)
            }
        });
        out
    }

    #[test]
    fn jieba_cuts_chinese_words_and_latin_words() {
        assert_eq!(
            kept("我们去北京看电影, version 2.0 released", Tokenizer::Jieba, false),
            vec!["我们", "去", "北京", "看", "电影", "version", "2.0", "released"]
        );
    }

    #[test]
    fn word_follows_uax29() {
        assert_eq!(
            kept("the cat's 3.14 naïve-words", Tokenizer::Word, false),
            vec!["the", "cat's", "3.14", "naïve", "words"]
        );
    }

    #[test]
    fn char_gives_scalar_values_and_filters_punctuation() {
        assert_eq!(kept("a,b 中!", Tokenizer::Char, false), vec!["a", "b", "中"]);
    }

    #[test]
    fn bigram_pairs_han_runs_and_keeps_words() {
        assert_eq!(
            kept("我们去北京, version 2.0 天 好的", Tokenizer::Bigram, false),
            vec!["我们", "们去", "去北", "北京", "version", "2.0", "天", "好的"]
        );
        // Punctuation and spaces end a run; Latin text inside Chinese stays one word.
        assert_eq!(
            kept("中文，English中文", Tokenizer::Bigram, false),
            vec!["中文", "English", "中文"]
        );
        assert_eq!(kept("", Tokenizer::Bigram, false), Vec::<&str>::new());
        assert_eq!(kept("字", Tokenizer::Bigram, false), vec!["字"]);
    }

    #[test]
    fn stop_words_are_dropped_only_when_asked() {
        assert_eq!(
            kept("the news of the day", Tokenizer::Word, true),
            vec!["news", "day"]
        );
        assert_eq!(kept("the news", Tokenizer::Word, false), vec!["the", "news"]);
    }
}
