//! Normalization (docs/ARCHITECTURE.md §2.2) and the cutting of long texts into chunks that are normalized and
//! tokenized one at a time, so a 100 MB text never exists as a whole normalized copy.

use unicode_normalization::UnicodeNormalization;

/// NFKC, then full Unicode lowercase: `ＡＢＣ` and `abc` become the same text.
pub fn normalize(text: &str) -> String {
    let nfkc: String = text.nfkc().collect();
    nfkc.to_lowercase()
}

/// Where chunks are cut. The defaults suit production; tests use tiny sizes to prove that chunking
/// never changes a fingerprint.
#[derive(Debug, Clone, Copy)]
pub struct Chunking {
    /// A chunk ends at the first safe break at or after this many bytes.
    pub target: usize,
    /// With no safe break this far past `target`, the chunk is cut at a character boundary anyway.
    pub limit: usize,
}

impl Default for Chunking {
    fn default() -> Self {
        Chunking {
            target: 64 * 1024,
            limit: 1024 * 1024,
        }
    }
}

/// A break after `c` is invisible to every step: `c` is a starter that composes with nothing under
/// NFKC, it is not case-ignorable (Greek final sigma looks across case-ignorable characters), it is
/// neither a word character for jieba nor part of a UAX #29 word, and the next character cannot
/// attach to it as an Extend/Format mark. The next character is not whitespace either: UAX #29
/// keeps a run of spaces together (WB3d), and a combining mark after the run makes the whole run one
/// token with a letter in it (found by the fuzz test in `tests/fuzz.rs`).
fn is_safe_break(c: char, next: char) -> bool {
    let after = c.is_whitespace() || matches!(c, '。' | '、' | '！' | '？');
    let before = (next.is_ascii() && !next.is_whitespace())
        || matches!(next, '\u{4E00}'..='\u{9FFF}' | '\u{3400}'..='\u{4DBF}' | '\u{AC00}'..='\u{D7A3}');
    after && c != '\r' && before
}

/// Splits `text` into consecutive chunks whose concatenation is `text`.
pub fn chunks(text: &str, chunking: Chunking) -> Chunks<'_> {
    Chunks { rest: text, chunking }
}

pub struct Chunks<'a> {
    rest: &'a str,
    chunking: Chunking,
}

impl<'a> Iterator for Chunks<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        if self.rest.is_empty() {
            return None;
        }
        let end = chunk_end(self.rest, self.chunking);
        let (chunk, rest) = self.rest.split_at(end);
        self.rest = rest;
        Some(chunk)
    }
}

fn chunk_end(text: &str, chunking: Chunking) -> usize {
    if text.len() <= chunking.target {
        return text.len();
    }
    let start = floor_char_boundary(text, chunking.target.max(1));
    let hard_end = floor_char_boundary(text, start.saturating_add(chunking.limit).min(text.len()));
    let mut iter = text[start..].char_indices().peekable();
    while let Some((i, c)) = iter.next() {
        let at = start + i + c.len_utf8();
        if at > hard_end {
            break;
        }
        match iter.peek() {
            Some(&(_, next)) if is_safe_break(c, next) => return at,
            Some(_) => {}
            None => return text.len(),
        }
    }
    hard_end.max(start).max(next_char_end(text, 0))
}

fn floor_char_boundary(text: &str, mut at: usize) -> usize {
    if at >= text.len() {
        return text.len();
    }
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn next_char_end(text: &str, at: usize) -> usize {
    text[at..].chars().next().map_or(at, |c| at + c.len_utf8())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn width_and_case_fold_together() {
        assert_eq!(normalize("ＡＢＣ"), "abc");
        assert_eq!(normalize("Straße ΣΑΣ"), "straße σας");
        assert_eq!(normalize("ｶﾞ"), "ガ");
    }

    #[test]
    fn chunks_break_after_spaces_and_cjk_stops() {
        let small = Chunking {
            target: 4,
            limit: 100,
        };
        let parts: Vec<&str> = chunks("abcdef ghij。中文", small).collect();
        assert_eq!(parts, vec!["abcdef ", "ghij。", "中文"]);
    }

    #[test]
    fn no_break_inside_a_run_of_spaces() {
        // "\u{3000} \u{345}" is one UAX #29 token with a letter in it: a break between the two spaces
        // would change it.
        let text = "。。a\u{85}\u{3000} \u{345}";
        let small = Chunking {
            target: 1,
            limit: 100,
        };
        for part in chunks(text, small) {
            assert!(
                !part.starts_with(' '),
                "{:?}",
                chunks(text, small).collect::<Vec<_>>()
            );
        }
    }

    #[test]
    fn chunks_are_cut_anyway_past_the_limit() {
        let small = Chunking { target: 3, limit: 5 };
        let parts: Vec<&str> = chunks("汉汉汉汉汉汉", small).collect();
        assert_eq!(parts.concat(), "汉汉汉汉汉汉");
        assert!(parts.len() > 1);
    }

    proptest! {
        #[test]
        fn chunks_concatenate_to_the_text(text in "\\PC{0,200}", target in 1usize..20, limit in 0usize..20) {
            let parts: Vec<&str> = chunks(&text, Chunking { target, limit }).collect();
            prop_assert_eq!(parts.concat(), text.clone());
            prop_assert!(parts.iter().all(|p| !p.is_empty()));
        }

        #[test]
        fn normalizing_by_chunks_equals_normalizing_whole(text in "[ a-zA-ZΣσς。、！？ｶﾞ\u{301}\u{3099}中文\n\r\t]{0,80}") {
            let whole = normalize(&text);
            let parts: String = chunks(&text, Chunking { target: 1, limit: 1000 }).map(normalize).collect();
            prop_assert_eq!(parts, whole);
        }
    }
}
