//! Step 2 on the fast path: the UAX #29 word scanner under the 'word' and 'bigram' tokenizers. It
//! scans runs of ASCII and of CJK ideographs itself, with the rules that can apply there, and hands
//! every other stretch of text, cut where UAX #29 always breaks, to unicode-segmentation.

use unicode_segmentation::UnicodeSegmentation;

use super::classes::{char_at, is_ideograph, is_plain_other};

/// UAX #29 word-break classes of the ASCII characters (Unicode 16, as in unicode-segmentation
/// 1.13.3; the test `ascii_scanner_matches_uax29_exhaustively` checks them against the crate).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ascii {
    Letter,      // A-Z a-z: ALetter
    Digit,       // 0-9: Numeric
    Underscore,  // _: ExtendNumLet
    MidLetter,   // ':'
    MidNum,      // ',' ';'
    MidNumLetQ,  // '.' (MidNumLet) and '\'' (Single_Quote)
    Space,       // ' ': WSegSpace
    Cr,          // '\r'
    Newline,     // '\n', VT, FF: LF / Newline
    DoubleQuote, // '"'
    Other,       // everything else
}

/// [`class_of`] for the 128 ASCII bytes, looked up instead of branched on.
const ASCII_CLASSES: [Ascii; 128] = {
    let mut table = [Ascii::Other; 128];
    let mut b = 0;
    while b < 128 {
        table[b] = class_of(b as u8);
        b += 1;
    }
    table
};

#[inline]
fn ascii_class(b: u8) -> Ascii {
    ASCII_CLASSES[usize::from(b & 0x7F)]
}

/// Whether `b` is an ASCII letter, digit or `_` (the bytes of a word that join without context).
#[inline]
fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

const fn class_of(b: u8) -> Ascii {
    match b {
        b'a'..=b'z' | b'A'..=b'Z' => Ascii::Letter,
        b'0'..=b'9' => Ascii::Digit,
        b'_' => Ascii::Underscore,
        b':' => Ascii::MidLetter,
        b',' | b';' => Ascii::MidNum,
        b'.' | b'\'' => Ascii::MidNumLetQ,
        b' ' => Ascii::Space,
        b'\r' => Ascii::Cr,
        b'\n' | 0x0B | 0x0C => Ascii::Newline,
        b'"' => Ascii::DoubleQuote,
        _ => Ascii::Other,
    }
}

/// What follows a token: a character whose class the scanner knows, or something else.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Next {
    End,
    Ascii(Ascii),
    /// A CJK ideograph or one of [`is_cjk_punctuation`](super::classes::is_cjk_punctuation):
    /// class Other, never Extend/Format/ZWJ.
    PlainOther,
    Unknown,
}

#[inline]
fn next_at(text: &str, i: usize) -> Next {
    let bytes = text.as_bytes();
    match bytes.get(i) {
        None => Next::End,
        Some(&b) if b < 0x80 => Next::Ascii(ascii_class(b)),
        Some(_) => match char_at(text, i) {
            Some(c) if is_plain_other(c) => Next::PlainOther,
            _ => Next::Unknown,
        },
    }
}

/// Where a stretch handed to unicode-segmentation may end: before a character at which UAX #29
/// always breaks and after which no rule looks back past it. A CJK ideograph or CJK punctuation
/// mark (class Other), an ASCII character of class Other or a line break (WB3b; `\n` not after
/// `\r`), or a space not after a space (WB3d joins only WSegSpace runs; the ASCII character before
/// is no WSegSpace). Letters, digits, `_`, the mid-word punctuation and both quotes (WB7a–c join
/// them to Hebrew letters) are never anchors.
fn next_anchor(text: &str, from: usize) -> usize {
    let bytes = text.as_bytes();
    let mut i = from;
    while i < bytes.len() {
        let b = bytes[i];
        if b < 0x80 {
            let anchor = match ascii_class(b) {
                Ascii::Other | Ascii::Cr => true,
                Ascii::Newline => !(b == b'\n' && bytes.get(i.wrapping_sub(1)) == Some(&b'\r')),
                Ascii::Space => i > 0 && bytes[i - 1] < 0x80 && bytes[i - 1] != b' ',
                _ => false,
            };
            if anchor && i > from {
                return i;
            }
            i += 1;
        } else {
            match char_at(text, i) {
                Some(c) => {
                    if i > from && is_plain_other(c) {
                        return i;
                    }
                    i += c.len_utf8();
                }
                None => i += 1,
            }
        }
    }
    bytes.len()
}

/// Calls `f` with every UAX #29 word of `text` that could be kept (spaces and line breaks are
/// left out: they have no alphanumeric character), in order: the same tokens as
/// `text.split_word_bounds()` minus some that `keep` drops anyway.
///
/// The scanner stands at a position where UAX #29 breaks and no rule looks back past it (the start,
/// or the end of a token it has confirmed). From there it reads one ASCII token or one ideograph,
/// and confirms its end only if the character after it is known (ASCII, an ideograph, a CJK
/// punctuation mark, or the end): then the ASCII rules below are the whole story, since no
/// Extend/Format/ZWJ character can follow. Otherwise it hands the stretch up to the next anchor
/// ([`next_anchor`]) to unicode-segmentation.
pub fn for_each_word<'t>(text: &'t str, mut f: impl FnMut(&'t str)) {
    scan_words(text, |t, _| f(t));
}

/// [`for_each_word`] that also tells whether the token is known to hold an alphanumeric character
/// (`true`: a letter-or-digit run of the scanner or an ideograph; `false`: not known, a token of
/// unicode-segmentation or one starting with `_`).
#[inline]
pub(super) fn scan_words<'t>(text: &'t str, f: impl FnMut(&'t str, bool)) {
    scan_words_into(text, &mut EachWord(f));
}

/// What [`scan_words_into`] reports: every token as [`Words::word`], except that an ideograph the
/// scanner's run loop confirms comes as [`Words::ideograph`], by its position, so that a
/// tokenizer can take the common case of Chinese text without looking at the token again.
pub(super) trait Words<'t> {
    /// A token, and whether it is known to hold an alphanumeric character (see [`scan_words`]).
    fn word(&mut self, token: &'t str, alnum: bool);

    /// One ideograph of [`is_ideograph`], `text[p..p + 3]`, a token of its own: `word(…, true)`.
    #[inline(always)]
    fn ideograph(&mut self, text: &'t str, p: usize) {
        self.word(&text[p..p + 3], true);
    }
}

/// [`Words`] for a closure that takes every token alike.
struct EachWord<F>(F);

impl<'t, F: FnMut(&'t str, bool)> Words<'t> for EachWord<F> {
    #[inline(always)]
    fn word(&mut self, token: &'t str, alnum: bool) {
        (self.0)(token, alnum);
    }
}

/// [`scan_words`] into a [`Words`].
#[inline(always)]
pub(super) fn scan_words_into<'t>(text: &'t str, w: &mut impl Words<'t>) {
    let bytes = text.as_bytes();
    let mut p = 0;
    while p < bytes.len() {
        // A run of ideographs and CJK punctuation, each character decoded once: the same
        // decisions as `scan_one` at each of them (a break after each, as long as the next
        // character is known).
        if bytes[p] >= 0x80 {
            if let Some(mut c) = char_at(text, p).filter(|&c| is_plain_other(c)) {
                loop {
                    let end = p + c.len_utf8();
                    let next = match bytes.get(end) {
                        None => None,
                        Some(&b) if b < 0x80 => None,
                        Some(_) => match char_at(text, end) {
                            Some(n) if is_plain_other(n) => Some(n),
                            _ => break, // unknown: `scan_one` below bails out at p
                        },
                    };
                    // An ideograph is three bytes (U+3400–U+9FFF).
                    if is_ideograph(c) {
                        w.ideograph(text, p);
                    }
                    p = end;
                    match next {
                        Some(n) => c = n,
                        None => break,
                    }
                }
                if p >= bytes.len() || bytes[p] < 0x80 {
                    continue;
                }
            }
        }
        // The two commonest ASCII tokens without `scan_one`'s dispatch: a run of letters, digits
        // and '_' followed by a space or the end (a space is no MidLetter, MidNum or Extend, so
        // the word ends there, as in `scan_one`), and a run of spaces followed by ASCII or the end
        // (left out, as `scan_one` leaves it out).
        let b = bytes[p];
        if is_word_byte(b) {
            let mut j = p + 1;
            while j < bytes.len() && is_word_byte(bytes[j]) {
                j += 1;
            }
            if bytes.get(j).is_none_or(|&n| n == b' ') {
                w.word(&text[p..j], b != b'_');
                p = j;
                continue;
            }
        } else if b == b' ' {
            let mut j = p + 1;
            while j < bytes.len() && bytes[j] == b' ' {
                j += 1;
            }
            if bytes.get(j).is_none_or(|&n| n < 0x80) {
                p = j;
                continue;
            }
        }
        match scan_one(text, p) {
            Some((end, emit)) => {
                if emit {
                    w.word(&text[p..end], bytes[p] != b'_');
                }
                p = end;
            }
            None => {
                let r = next_anchor(text, p);
                text[p..r].split_word_bounds().for_each(|t| w.word(t, false));
                p = r;
            }
        }
    }
}

/// One token from `p`: its end and whether it may hold an alphanumeric character, or `None` when
/// the scanner cannot be sure of the boundaries.
#[inline]
fn scan_one(text: &str, p: usize) -> Option<(usize, bool)> {
    let bytes = text.as_bytes();
    let b = *bytes.get(p)?;
    if b >= 0x80 {
        let c = char_at(text, p)?;
        if !is_plain_other(c) {
            return None;
        }
        // Other ÷ anything but Extend/Format/ZWJ (WB4), and the next character is known.
        let end = p + c.len_utf8();
        return match next_at(text, end) {
            Next::Unknown => None,
            _ => Some((end, is_ideograph(c))),
        };
    }
    match ascii_class(b) {
        Ascii::Letter | Ascii::Digit | Ascii::Underscore => {
            let mut j = p + 1;
            loop {
                while bytes.get(j).is_some_and(|&b| is_word_byte(b)) {
                    j += 1;
                }
                match next_at(text, j) {
                    // WB5, WB8–10, WB13a–b: letters, digits and '_' hold together.
                    Next::Ascii(Ascii::Letter | Ascii::Digit | Ascii::Underscore) => j += 1,
                    Next::Ascii(mid @ (Ascii::MidLetter | Ascii::MidNum | Ascii::MidNumLetQ)) => {
                        // WB6/7 and WB11/12: letter mid letter, digit mid digit.
                        let before = ascii_class(bytes[j - 1]);
                        let after = match next_at(text, j + 1) {
                            Next::Ascii(a) => a,
                            Next::End | Next::PlainOther => Ascii::Other,
                            Next::Unknown => return None,
                        };
                        let joins = (before == Ascii::Letter
                            && after == Ascii::Letter
                            && matches!(mid, Ascii::MidLetter | Ascii::MidNumLetQ))
                            || (before == Ascii::Digit
                                && after == Ascii::Digit
                                && matches!(mid, Ascii::MidNum | Ascii::MidNumLetQ));
                        if joins {
                            j += 2;
                        } else {
                            return Some((j, true));
                        }
                    }
                    Next::Unknown => return None,
                    _ => return Some((j, true)),
                }
            }
        }
        Ascii::Space => {
            let mut j = p + 1;
            while bytes.get(j) == Some(&b' ') {
                j += 1;
            }
            // WB3d joins spaces; a following Extend would join the run (WB4): only known ends.
            match next_at(text, j) {
                Next::Unknown => None,
                _ => Some((j, false)),
            }
        }
        // WB3, WB3a: CR LF is one token; a break always follows a line break.
        Ascii::Cr if bytes.get(p + 1) == Some(&b'\n') => Some((p + 2, false)),
        Ascii::Cr | Ascii::Newline => Some((p + 1, false)),
        // A lone punctuation mark: at this position nothing before it is a letter or digit that
        // could join across it (the scanner would have joined them), so it is its own token.
        _ => match next_at(text, p + 1) {
            Next::Unknown => None,
            _ => Some((p + 1, false)),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fast::classes::is_plain_other;
    use crate::fast::test_support::all_chars;
    use crate::tokenize::keep;

    fn kept_reference(text: &str) -> Vec<&str> {
        text.split_word_bounds().filter(|t| keep(t, false)).collect()
    }

    fn kept_fast(text: &str) -> Vec<&str> {
        let mut out = Vec::new();
        for_each_word(text, |t| {
            if keep(t, false) {
                out.push(t)
            }
        });
        out
    }

    #[test]
    fn ascii_scanner_matches_uax29_exhaustively() {
        // Every ASCII string of up to 3 characters.
        let mut s = String::new();
        for a in 0u8..128 {
            for b in 0u8..128 {
                for c in 0u8..128 {
                    s.clear();
                    s.extend([a as char, b as char, c as char]);
                    for len in [1, 2, 3] {
                        let t = &s[..len];
                        assert_eq!(kept_fast(t), kept_reference(t), "{t:?}");
                    }
                }
            }
        }
        // Every string of up to 5 characters over one representative of each class, and the
        // characters the scanner must not decide about.
        let alphabet = [
            'a',
            'Z',
            '7',
            '_',
            ':',
            ',',
            ';',
            '.',
            '\'',
            ' ',
            '\r',
            '\n',
            '\u{b}',
            '"',
            '-',
            '\t',
            '中',
            '。',
            '“',
            'é',
            '\u{301}',
            '\u{5d0}',
            '\u{3000}',
            '\u{200d}',
            '\u{1f1e6}',
            '가',
            'ア',
        ];
        let n = alphabet.len();
        for len in 1..=4u32 {
            for mut k in 0..n.pow(len) {
                s.clear();
                for _ in 0..len {
                    s.push(alphabet[k % n]);
                    k /= n;
                }
                assert_eq!(kept_fast(&s), kept_reference(&s), "{s:?}");
            }
        }
    }

    #[test]
    fn plain_others_break_both_sides() {
        let neighbours = [
            "a",
            "Z",
            "7",
            "_",
            ":",
            ",",
            ";",
            ".",
            "'",
            " ",
            "\r",
            "\n",
            "\"",
            "-",
            "中",
            "。",
            "a.",
            "1,",
            "a'",
            "\u{5d0}",
            "\u{5d0}\"",
        ];
        for c in all_chars().filter(|&c| is_plain_other(c)) {
            let c = c.to_string();
            for n in neighbours {
                for t in [format!("{n}{c}{n}"), format!("{n}{c}"), format!("{c}{n}")] {
                    assert_eq!(kept_fast(&t), kept_reference(&t), "{t:?}");
                }
            }
        }
    }
}
