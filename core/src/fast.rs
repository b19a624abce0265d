//! The fast path of the fingerprint (issue 10): the same fingerprints as the reference pipeline of
//! [`crate::fingerprint`], bit for bit, in less time. It differs from the reference only in how it
//! gets there:
//!
//! - **Normalization** ([`normalize_into`]) copies runs of characters that NFKC and lowercasing leave
//!   alone (ASCII, lowercased byte-wise; CJK ideographs; Hangul syllables; a few CJK punctuation
//!   marks) and sends only the rest through NFKC and lowercasing. See [`is_stable`] for why the text
//!   may be cut before such a character.
//! - **Word segmentation** ([`for_each_word`]) scans ASCII and CJK-ideograph runs itself, with the
//!   UAX #29 rules that can apply there, and hands every other stretch of text, cut at positions
//!   where UAX #29 always breaks, to `unicode-segmentation`. It reports an ideograph by its
//!   position (`Words::ideograph`), so that 'word' hashes it, and 'bigram' a pair of them, from
//!   the bytes without the general per-token steps (`Keeper`).
//! - **Shingles** are hashed from a ring of reused byte buffers: no string per window.
//! - **Folding** (`fold => 'simplified'`) maps the normalized chunk through a dense table of
//!   [`simplified_char`] over the BMP, copying nothing when no character changes.
//! - **'bigram'** pairs the Han characters of the word scanner's tokens: the reference's runs, with
//!   neighbours told by byte offsets, since the scanner leaves out tokens that end a run.
//! - **Float weightings** ('tfidf', 'logtf', 'logtfidf', 'logtfedge') keep the reference's order and
//!   arithmetic (distinct features in order of first occurrence, its `float_weight`, the edge factors
//!   of its `EdgeSums`), with a pass-through hasher for the map of distinct features and sign-bit
//!   flips instead of branches in the sums.
//! - **Accumulation** counts eight bits per byte lane of a `u64` (eight 8-bit counters per word,
//!   flushed before they can overflow) instead of one counter per bit per feature.
//!
//! Options the fast path does not know fall back to the reference: see [`fast_path_supports`].

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use unicode_normalization::UnicodeNormalization;
use unicode_segmentation::UnicodeSegmentation;

use crate::error::{memory_low, OutOfMemory};
use crate::fold::simplified_char;
use crate::hash::{fmix64, Fnv1a64};
use crate::normalize::{chunks, normalize, Chunking};
use crate::options::{Fold, Options, Tokenizer, Weighting};
#[cfg(test)]
use crate::tokenize::keep;
use crate::tokenize::{is_han, jieba};

/// Whether [`try_fingerprint_fast`] handles these options. It matches explicitly on the values it
/// knows, so that a tokenizer or weighting added later takes the reference path until someone
/// extends the fast path (and its differential test). A field added to [`Options`] later does the
/// same: [`options_fields_known`] sees it and turns the fast path off altogether.
pub fn fast_path_supports(options: &Options) -> bool {
    let tokenizer = matches!(
        options.tokenizer,
        Tokenizer::Word | Tokenizer::Char | Tokenizer::Jieba | Tokenizer::Bigram
    );
    let weighting = match options.weighting {
        Weighting::Tf | Weighting::Binary | Weighting::LogTf | Weighting::LogTfEdge => true,
        // The reference looks up the IDF of the joined shingle text; only single tokens here.
        Weighting::TfIdf | Weighting::LogTfIdf => options.shingle == 1,
        #[allow(unreachable_patterns)]
        _ => false,
    };
    let fold = matches!(options.fold, Fold::None | Fold::Simplified);
    tokenizer && weighting && fold && options.shingle >= 1 && options_fields_known()
}

/// The fields of [`Options`] this fast path was written for. `Debug` names every field, so a field
/// added later (say, a folding flag) is noticed here without any edit to this file, and every call
/// then takes the reference path: slower, never wrong.
const KNOWN_FIELDS: [&str; 5] = ["tokenizer", "shingle", "weighting", "stopwords", "fold"];

pub fn options_fields_known() -> bool {
    static KNOWN: OnceLock<bool> = OnceLock::new();
    *KNOWN.get_or_init(|| {
        let shown = format!("{:?}", Options::default());
        let Some(inner) = shown.strip_prefix("Options {").and_then(|s| s.strip_suffix('}')) else {
            return false;
        };
        let names: Vec<&str> = inner
            .split(',')
            .filter_map(|field| field.split(':').next())
            .map(str::trim)
            .filter(|name| !name.is_empty())
            .collect();
        names == KNOWN_FIELDS
    })
}

// ---------------------------------------------------------------------------------------------
// Step 1: normalization.

/// A character that NFKC and full lowercasing leave as it is, with a normalization boundary before
/// it: canonical combining class 0, NFKC quick check Yes (so it never composes with a character
/// before it), no decomposition, its own lowercase. Cutting the text before such a character and
/// normalizing the pieces gives the normalization of the whole (the test
/// `stable_characters_are_normalization_boundaries` checks every one of them against the tables of
/// unicode-normalization). ASCII capitals qualify for NFKC; their lowercasing is the ASCII one.
#[inline]
pub fn is_stable(c: char) -> bool {
    c.is_ascii() || is_ideograph(c) || is_hangul_syllable(c) || is_cjk_punctuation(c)
}

/// CJK Unified Ideographs and Extension A: UAX #29 class Other (one token each), NFKC-stable.
#[inline]
pub fn is_ideograph(c: char) -> bool {
    matches!(c, '\u{4E00}'..='\u{9FFF}' | '\u{3400}'..='\u{4DBF}')
}

#[inline]
fn is_hangul_syllable(c: char) -> bool {
    matches!(c, '\u{AC00}'..='\u{D7A3}')
}

/// Punctuation common in Chinese text that is NFKC-stable and of UAX #29 class Other (checked by
/// the tests `stable_characters_are_normalization_boundaries` and `plain_others_break_both_sides`).
#[inline]
pub fn is_cjk_punctuation(c: char) -> bool {
    matches!(
        c,
        '\u{3001}' | '\u{3002}' // 、。
            | '\u{300A}'
            ..='\u{3011}' // 《》「」『』【】
            | '\u{201C}' | '\u{201D}' // “”
            | '\u{2014}' // —
    )
}

/// `normalize(chunk)` (NFKC, then full lowercase), written into `out`.
///
/// The chunk is cut before every stable character (see [`is_stable`]); a piece made only of stable
/// characters is copied, with ASCII capitals lowercased; any other piece goes through NFKC and
/// per-character lowercasing. `str::to_lowercase` is per-character except for `Σ`, whose lowercase
/// depends on its neighbours: if any NFKC output contains `Σ`, the chunk is normalized whole by the
/// reference instead.
pub fn normalize_into(chunk: &str, out: &mut String) {
    normalize_checking::<false>(chunk, out);
}

/// [`normalize_into`] that also tells whether folding (`fold => 'simplified'`) could change the
/// result: `false` only when no character of it has a simplified form other than itself. It saves
/// folding its own pass over the text when there is nothing to fold, as in most text.
pub fn normalize_into_checking_fold(chunk: &str, out: &mut String) -> bool {
    normalize_checking::<true>(chunk, out)
}

/// Whether the characters appended to `out` from byte `from` on include one that folds.
fn folds_from(out: &str, from: usize) -> bool {
    let table = fold_table();
    out.get(from..)
        .is_none_or(|s| s.chars().any(|c| fold_char(c, table) != c))
}

fn normalize_checking<const FOLD: bool>(chunk: &str, out: &mut String) -> bool {
    let changes = if FOLD { fold_changes() } else { &[] };
    let table = if FOLD { fold_table() } else { &[] };
    let mut folds = false;
    // Appends the NFKC of a piece, noting whether what it appended folds.
    let general = |piece: &str, out: &mut String, folds: &mut bool| {
        let from = out.len();
        let sigma = push_general(piece, out);
        if FOLD && !*folds {
            *folds = folds_from(out, from);
        }
        sigma
    };
    out.clear();
    let bytes = chunk.as_bytes();
    let mut copied = 0; // chunk[..copied] is in `out`
    let mut piece = 0; // start of the current piece: the last cut
    let mut dirty = false; // chunk[piece..] holds an unstable character
    let mut sigma = false;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if (0xE5..=0xE9).contains(&b) {
            // U+5000–U+9FFF, all CJK Unified Ideographs (stable): a cut before each, decoded only
            // to look it up in `fold_changes`.
            if dirty {
                sigma |= general(&chunk[piece..i], out, &mut folds);
                copied = i;
                dirty = false;
            }
            if FOLD {
                folds |= folds_code_point(changes, decode3(b, bytes[i + 1], bytes[i + 2]));
            }
            piece = i;
            i += 3;
            continue;
        }
        if b < 0x80 && !dirty {
            // A run of ASCII in a clean stretch: each byte a cut, nothing to do until the last.
            let j = ascii_run_end(bytes, i + 1);
            piece = j - 1;
            i = j;
            continue;
        }
        let c = if b < 0x80 {
            char::from(b)
        } else {
            match char_at(chunk, i) {
                Some(c) => c,
                None => {
                    // Not reached on a `str`; if it were, the reference is right by definition.
                    sigma = true;
                    break;
                }
            }
        };
        if is_stable(c) {
            if FOLD {
                folds |= fold_char(c, table) != c;
            }
            if dirty {
                sigma |= general(&chunk[piece..i], out, &mut folds);
                copied = i;
                dirty = false;
            }
            piece = i;
        } else if fullwidth_ascii(c).is_some() {
            // Also a normalization boundary, but not its own normal form: a piece of its own.
            if dirty {
                sigma |= general(&chunk[piece..i], out, &mut folds);
            } else {
                push_ascii_lowercased(&chunk[copied..i], out);
            }
            copied = i;
            piece = i;
            dirty = true;
        } else if !dirty {
            push_ascii_lowercased(&chunk[copied..piece], out);
            copied = piece;
            dirty = true;
        }
        i += c.len_utf8();
    }
    if dirty {
        sigma |= general(&chunk[piece..], out, &mut folds);
    } else {
        push_ascii_lowercased(&chunk[copied..], out);
    }
    if sigma {
        out.clear();
        out.push_str(&normalize(chunk));
        folds = FOLD;
    }
    folds
}

/// The end of the run of ASCII bytes of `bytes` from `from` on: eight bytes at a time while their
/// high bits are all clear, then byte by byte.
#[inline]
fn ascii_run_end(bytes: &[u8], from: usize) -> usize {
    let mut j = from;
    while let Some(word) = bytes.get(j..j + 8) {
        let word = u64::from_le_bytes(word.try_into().unwrap_or([0x80; 8]));
        if word & 0x8080_8080_8080_8080 != 0 {
            break;
        }
        j += 8;
    }
    while bytes.get(j).is_some_and(|&b| b < 0x80) {
        j += 1;
    }
    j
}

/// Whether `normalize(chunk) == chunk`: every character stable and no ASCII capital.
#[inline]
pub fn is_normalized_quick(chunk: &str) -> bool {
    let bytes = chunk.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b < 0x80 {
            if b.is_ascii_uppercase() {
                return false;
            }
            i += 1;
            continue;
        }
        if (0xE5..=0xE9).contains(&b) {
            // U+5000–U+9FFF: ideographs.
            i += 3;
            continue;
        }
        match char_at(chunk, i) {
            Some(c) if is_stable(c) => i += c.len_utf8(),
            _ => return false,
        }
    }
    true
}

/// Appends `s` with ASCII capitals lowercased (bytes ≥ 0x80 are left alone, so UTF-8 stays valid).
fn push_ascii_lowercased(s: &str, out: &mut String) {
    let start = out.len();
    out.push_str(s);
    if let Some(appended) = out.get_mut(start..) {
        appended.make_ascii_lowercase();
    }
}

/// The full-width forms of ASCII `！`–`～` (U+FF01–U+FF5E): NFKC maps each to the ASCII character
/// 0xFEE0 below it. Like a stable character, each is a normalization boundary (combining class 0,
/// and its decomposition starts with an ASCII character, which composes with nothing before it);
/// the test `fullwidth_forms_normalize_to_ascii` checks both.
#[inline]
pub fn fullwidth_ascii(c: char) -> Option<u8> {
    match c {
        '\u{FF01}'..='\u{FF5E}' => u8::try_from(u32::from(c) - 0xFEE0).ok(),
        _ => None,
    }
}

/// Appends NFKC(s), lowercased character by character; returns whether NFKC(s) contains `Σ`.
fn push_general(s: &str, out: &mut String) -> bool {
    // The common case in Chinese text: one full-width punctuation mark between two stable
    // characters.
    let mut it = s.chars();
    if let (Some(c), None) = (it.next(), it.next()) {
        if let Some(b) = fullwidth_ascii(c) {
            out.push(char::from(b.to_ascii_lowercase()));
            return false;
        }
    }
    let mut sigma = false;
    for c in s.nfkc() {
        if c == 'Σ' {
            sigma = true;
        }
        if c.is_ascii() {
            out.push(c.to_ascii_lowercase());
        } else {
            out.extend(c.to_lowercase());
        }
    }
    sigma
}

// ---------------------------------------------------------------------------------------------
// Step 2: the 'word' tokenizer.

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
    /// A CJK ideograph or one of [`is_cjk_punctuation`]: class Other, never Extend/Format/ZWJ.
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

/// The code point of a 3-byte UTF-8 sequence (lead byte 1110xxxx).
#[inline]
fn decode3(b0: u8, b1: u8, b2: u8) -> u32 {
    (u32::from(b0 & 0x0F) << 12) | (u32::from(b1 & 0x3F) << 6) | u32::from(b2 & 0x3F)
}

/// The character starting at byte `i` of `text`, decoded by hand when it takes three bytes (all of
/// the BMP's CJK); `None` past the end or off a character boundary.
#[inline]
fn char_at(text: &str, i: usize) -> Option<char> {
    let bytes = text.as_bytes();
    match bytes.get(i..i.checked_add(3)?) {
        // `text` is valid UTF-8: a lead byte 1110xxxx starts a 3-byte character.
        Some(&[b0, b1, b2]) if b0 & 0xF0 == 0xE0 => char::from_u32(decode3(b0, b1, b2)),
        _ => text.get(i..)?.chars().next(),
    }
}

#[inline]
fn is_plain_other(c: char) -> bool {
    is_ideograph(c) || is_cjk_punctuation(c)
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
fn scan_words<'t>(text: &'t str, f: impl FnMut(&'t str, bool)) {
    scan_words_into(text, &mut EachWord(f));
}

/// What [`scan_words_into`] reports: every token as [`Words::word`], except that an ideograph the
/// scanner's run loop confirms comes as [`Words::ideograph`], by its position, so that a
/// tokenizer can take the common case of Chinese text without looking at the token again.
trait Words<'t> {
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
fn scan_words_into<'t>(text: &'t str, w: &mut impl Words<'t>) {
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

// ---------------------------------------------------------------------------------------------
// Steps 3–6: filtering, shingles, hashing.

/// The last `n` kept tokens, stored joined by the separator in one reused byte buffer, so that the
/// window is always one contiguous slice: the exact bytes the reference joins and hashes.
struct Ring {
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
    fn new(options: &Options) -> Self {
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
    fn push(&mut self, token: &str) -> Option<u64> {
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
    fn finish(&self) -> Option<u64> {
        (self.n > 1 && self.kept > 0 && self.kept < self.n).then(|| {
            let mut h = Fnv1a64::default();
            h.write(&self.buf);
            fmix64(h.finish())
        })
    }
}

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
fn has_alnum(token: &str) -> bool {
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

/// The stop words by their feature hash ([`token_hash`]), for tokens whose hash is computed anyway
/// (`shingle = 1`): a bitmap of the hashes' top 16 bits rejects most tokens with one load, and a
/// hit is confirmed by the word itself, so a hash collision cannot drop a token.
struct StopHashes {
    bits: Box<[u64; 1024]>,
    words: HashMap<u64, &'static str, PassBuild>,
    /// The stop words of one character of the BMP, by code point (for the 'char' tokenizer).
    chars: Box<[u64; 1024]>,
}

impl StopHashes {
    fn get() -> &'static StopHashes {
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
    fn contains(&self, h: u64, token: &str) -> bool {
        self.bits[(h >> 54) as usize] & (1 << ((h >> 48) & 63)) != 0 && self.words.get(&h) == Some(&token)
    }

    /// Whether the one-character token `token`, the character `c`, is a stop word: by code point
    /// in the BMP, by hash beyond it.
    #[inline(always)]
    fn contains_char(&self, c: char, token: &str) -> bool {
        match u16::try_from(u32::from(c)) {
            Ok(u) => self.chars[usize::from(u >> 6)] & (1 << (u & 63)) != 0,
            Err(_) => self.contains(token_hash(token), token),
        }
    }
}

/// [`Ring`] for the 'char' tokenizer, whose shingles are `n` characters joined by "": the last `n`
/// kept characters, hashed through their UTF-8 bytes.
///
/// Shingles of up to [`SHORT_SHINGLE`] characters (the common ones) keep the last characters in a
/// fixed ring and the last eight bytes of their UTF-8 in `recent`, so that a window of at most
/// eight bytes (three ASCII characters, or two ideographs) is hashed from `recent` without
/// encoding its characters again; longer shingles keep the last `n` characters in `long`.
struct CharRing {
    n: usize,
    kept: usize,
    /// The last kept characters, the one kept k-th (from 0) at `k % SHORT_SHINGLE`.
    short: [char; SHORT_SHINGLE],
    /// The UTF-8 bytes of the kept characters, the newest in the low byte: the last eight of them.
    recent: u64,
    /// The UTF-8 length of each of the last kept characters, the newest in the low byte.
    lens: u64,
    /// How many bytes of UTF-8 the last `n` kept characters take.
    window_bytes: usize,
    /// For `n` > [`SHORT_SHINGLE`]: the last `n` characters, the oldest at `head` once full.
    long: Vec<char>,
    head: usize,
}

const SHORT_SHINGLE: usize = 8;

impl CharRing {
    fn new(n: usize) -> Self {
        CharRing {
            n: n.max(1),
            kept: 0,
            short: ['\0'; SHORT_SHINGLE],
            recent: 0,
            lens: 0,
            window_bytes: 0,
            long: Vec::new(),
            head: 0,
        }
    }

    #[inline(always)]
    fn push(&mut self, c: char) -> Option<u64> {
        if self.n > SHORT_SHINGLE {
            return self.push_long(c);
        }
        let v = u32::from(c);
        let len = if v < 0x80 {
            self.recent = (self.recent << 8) | u64::from(v);
            1
        } else {
            let mut utf8 = [0u8; 4];
            let bytes = c.encode_utf8(&mut utf8).as_bytes();
            for &b in bytes {
                self.recent = (self.recent << 8) | u64::from(b);
            }
            bytes.len()
        };
        let n = self.n;
        // The character that leaves the window: the one kept n places back.
        let leaving = if self.kept >= n {
            ((self.lens >> (8 * (n - 1))) & 0xFF) as usize
        } else {
            0
        };
        self.lens = (self.lens << 8) | len as u64;
        self.window_bytes = self.window_bytes + len - leaving;
        self.short[self.kept % SHORT_SHINGLE] = c;
        self.kept += 1;
        if self.kept < n {
            return None;
        }
        if self.window_bytes <= 8 {
            return Some(fmix64(fnv_low_bytes(self.recent, self.window_bytes)));
        }
        let from = self.kept - n;
        Some(chars_hash(
            (from..self.kept).map(|k| &self.short[k % SHORT_SHINGLE]),
        ))
    }

    #[cold]
    fn push_long(&mut self, c: char) -> Option<u64> {
        self.kept += 1;
        if self.long.len() < self.n {
            self.long.push(c);
            if self.long.len() < self.n {
                return None;
            }
        } else {
            self.long[self.head] = c;
            self.head += 1;
            if self.head == self.n {
                self.head = 0;
            }
        }
        let (newer, older) = self.long.split_at(self.head);
        Some(chars_hash(older.iter().chain(newer)))
    }

    /// Fewer than n kept characters: all of them, in order.
    fn finish(&self) -> Option<u64> {
        if !(self.n > 1 && self.kept > 0 && self.kept < self.n) {
            return None;
        }
        Some(if self.n > SHORT_SHINGLE {
            chars_hash(self.long.iter())
        } else {
            chars_hash(self.short[..self.kept].iter())
        })
    }
}

/// FNV-1a of the `len` (at most 8) low bytes of `x`, the highest of them first.
#[inline]
fn fnv_low_bytes(x: u64, len: usize) -> u64 {
    let mut h = Fnv1a64::default();
    if len > 0 {
        // The first byte to the top.
        let mut x = x << (8 * (8 - len.min(8)));
        for _ in 0..len.min(8) {
            h.write_u8((x >> 56) as u8);
            x <<= 8;
        }
    }
    h.finish()
}

/// FNV-1a and fmix64 of the characters' UTF-8 encoding (RFC 3629, written out: one to four bytes).
#[inline]
fn chars_hash<'a>(chars: impl Iterator<Item = &'a char>) -> u64 {
    let mut h = Fnv1a64::default();
    for &c in chars {
        let v = u32::from(c);
        let cont = |shift: u32| 0x80 | ((v >> shift) & 0x3F) as u8;
        match v {
            0..=0x7F => h.write(&[v as u8]),
            0x80..=0x7FF => h.write(&[0xC0 | (v >> 6) as u8, cont(0)]),
            0x800..=0xFFFF => h.write(&[0xE0 | (v >> 12) as u8, cont(6), cont(0)]),
            _ => h.write(&[0xF0 | (v >> 18) as u8, cont(12), cont(6), cont(0)]),
        }
    }
    fmix64(h.finish())
}

#[inline]
fn token_hash(token: &str) -> u64 {
    let mut h = Fnv1a64::default();
    h.write(token.as_bytes());
    fmix64(h.finish())
}

/// [`token_hash`] of a token of `N` bytes, the loop unrolled for that length.
#[inline(always)]
fn bytes_hash<const N: usize>(bytes: &[u8; N]) -> u64 {
    let mut h = Fnv1a64::default();
    for &b in bytes {
        h.write_u8(b);
    }
    fmix64(h.finish())
}

/// The check of `keep` on one decoded character (a `'char'` token), without the Unicode tables
/// for ASCII and ideographs.
#[inline]
fn char_is_alnum(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_alphanumeric()
    } else {
        is_ideograph(c) || c.is_alphanumeric()
    }
}

/// Whether jieba keeps the ASCII byte `b` inside its blocks of text to segment (its default
/// character class: ASCII letters and digits, `+#&._%-`, and the CJK ideographs).
#[inline]
fn in_jieba_block(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'#' | b'&' | b'.' | b'_' | b'%' | b'-')
}

/// The tokens of jieba-rs `cut(text, true)` of a normalized text, in order, with the blocks that
/// need no dictionary and no HMM cut here.
///
/// jieba cuts a text into maximal blocks of its class ([`in_jieba_block`] and the ideographs) and
/// segments each block on its own; every character between blocks is a token of its own (`\r\n`
/// one token). A block of ASCII alone (no neighbour is a non-ASCII character, which could be an
/// ideograph of the same block) without `#` or `+` (the dictionary's only words of such characters
/// are `c#` and `c++`) has no dictionary word in it but single characters, so jieba's route is one
/// character a step, and the whole block goes to its HMM step, which leaves text without
/// ideographs to its splitter: alphanumeric tokens (letters and digits, joined by single `.`, `_`
/// or `-` between them, and an optional trailing `%`) and the gaps between them. Those blocks and
/// the characters between them are cut here; everything else (any stretch that holds a non-ASCII
/// character or another block) goes to jieba whole, starting and ending on block boundaries, so its
/// tokens are the same. Test `jieba_tokens_equal_jieba_cut`.
fn jieba_tokens<'t>(text: &'t str, mut f: impl FnMut(&'t str)) {
    let bytes = text.as_bytes();
    // Start of the stretch not yet given to jieba, when there is one.
    let mut pending: Option<usize> = None;
    let cut = |from: usize, to: usize, f: &mut dyn FnMut(&'t str)| {
        for token in jieba().cut(&text[from..to], true) {
            f(token.word);
        }
    };
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b >= 0x80 {
            pending.get_or_insert(i);
            i += 1;
        } else if in_jieba_block(b) {
            let mut j = i + 1;
            while j < bytes.len() && in_jieba_block(bytes[j]) {
                j += 1;
            }
            let ascii_block = (i == 0 || bytes[i - 1] < 0x80) && bytes.get(j).is_none_or(|&b| b < 0x80);
            if ascii_block && !bytes[i..j].iter().any(|&b| b == b'#' || b == b'+') {
                if let Some(from) = pending.take() {
                    cut(from, i, &mut f);
                }
                ascii_block_tokens(&text[i..j], &mut f);
            } else {
                pending.get_or_insert(i);
            }
            i = j;
        } else {
            let len = if b == b'\r' && bytes.get(i + 1) == Some(&b'\n') {
                2
            } else {
                1
            };
            if pending.is_none() {
                f(&text[i..i + len]);
            }
            i += len;
        }
    }
    if let Some(from) = pending {
        cut(from, bytes.len(), &mut f);
    }
}

/// jieba's tokens of one ASCII block without `#` or `+` ([`jieba_tokens`]): one character alone;
/// else, unless the block is a dictionary word, the alphanumeric tokens and the gaps between them.
fn ascii_block_tokens<'t>(block: &'t str, f: &mut impl FnMut(&'t str)) {
    let bytes = block.as_bytes();
    if bytes.len() == 1 {
        f(block);
        return;
    }
    if jieba().has_word(block) {
        for token in jieba().cut(block, true) {
            f(token.word);
        }
        return;
    }
    let mut pos = 0;
    while pos < bytes.len() {
        let gap = pos;
        while pos < bytes.len() && !bytes[pos].is_ascii_alphanumeric() {
            pos += 1;
        }
        if pos > gap {
            f(&block[gap..pos]);
        }
        if pos == bytes.len() {
            break;
        }
        let start = pos;
        loop {
            while pos < bytes.len() && bytes[pos].is_ascii_alphanumeric() {
                pos += 1;
            }
            // A connector joins only when a letter or digit follows it.
            let joins = matches!(bytes.get(pos), Some(b'.' | b'_' | b'-'))
                && bytes.get(pos + 1).is_some_and(u8::is_ascii_alphanumeric);
            if !joins {
                break;
            }
            pos += 1;
        }
        if bytes.get(pos) == Some(&b'%') {
            pos += 1;
        }
        f(&block[start..pos]);
    }
}

/// The state of [`han_bigrams`](crate::tokenize) in the fast path: the byte range of the current
/// run's last character, and whether the run has given a pair yet.
#[derive(Default)]
struct HanRun {
    /// Start, end, and whether the scanner vouched for it being alphanumeric.
    last: Option<(usize, usize, bool)>,
    paired: bool,
}

impl HanRun {
    /// Ends the run: a run of one character gives that character.
    #[inline(always)]
    fn flush<S: Sink>(&mut self, text: &str, keeper: &mut Keeper<S>) {
        if let Some((start, end, alnum)) = self.last.take() {
            if !self.paired {
                keeper.token(&text[start..end], alnum);
            }
        }
        self.paired = false;
    }
}

/// `han_bigrams` of the reference over the scanner's tokens, as a [`Words`]. A run of single-Han-
/// character tokens is broken by any token between them, kept or not; the scanner leaves some
/// tokens out (spaces, line breaks, punctuation), but tokens tile the text, so two of them are
/// neighbours iff one ends where the other starts.
struct Bigrams<'k, 't, S> {
    text: &'t str,
    run: HanRun,
    keeper: &'k mut Keeper<S>,
}

impl<'t, S: Sink> Words<'t> for Bigrams<'_, 't, S> {
    #[inline(always)]
    fn word(&mut self, t: &'t str, alnum: bool) {
        let start = t.as_ptr() as usize - self.text.as_ptr() as usize;
        let end = start + t.len();
        // A non-ASCII token the scanner vouches for as alphanumeric with 3 bytes is one ideograph
        // (`scan_words`), so Han; anything else is decoded.
        let single_han = if alnum && t.len() == 3 && t.as_bytes()[0] >= 0x80 {
            true
        } else {
            let mut chars = t.chars();
            matches!((chars.next(), chars.next()), (Some(c), None) if is_han(c))
        };
        if single_han {
            match self.run.last {
                Some((last_start, last_end, last_alnum)) if last_end == start => {
                    // A pair is alphanumeric if either character is.
                    self.keeper
                        .token(&self.text[last_start..end], last_alnum || alnum);
                    self.run.paired = true;
                }
                _ => self.run.flush(self.text, self.keeper),
            }
            self.run.last = Some((start, end, alnum));
        } else {
            self.run.flush(self.text, self.keeper);
            self.keeper.token(t, alnum);
        }
    }

    /// [`Self::word`] for an ideograph (alphanumeric, Han): after another ideograph, the pair's
    /// six bytes are hashed here.
    #[inline(always)]
    fn ideograph(&mut self, text: &'t str, p: usize) {
        match self.run.last {
            Some((last_start, last_end, _)) if last_end == p => {
                let pair = &text[last_start..p + 3];
                match pair.as_bytes() {
                    &[a, b, c, d, e, f] if self.keeper.single => {
                        self.keeper.hashed(bytes_hash(&[a, b, c, d, e, f]), pair);
                    }
                    _ => self.keeper.token(pair, true),
                }
                self.run.paired = true;
            }
            _ => self.run.flush(self.text, self.keeper),
        }
        self.run.last = Some((p, p + 3, true));
    }
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

/// Where the features go: `sink(hash, token)`, the token given for `shingle = 1` only.
trait Sink: FnMut(u64, Option<&str>) -> Result<(), OutOfMemory> {}

impl<F: FnMut(u64, Option<&str>) -> Result<(), OutOfMemory>> Sink for F {}

/// Steps 3–6 for the tokens of a tokenizer: `keep` (alphanumeric, not a stop word), shingles, the
/// feature hash, into the sink; the first error of the sink is kept and ends the chunk.
struct Keeper<S> {
    sink: S,
    stops: &'static StopHashes,
    stopwords: bool,
    single: bool,
    ring: Ring,
    failed: Option<OutOfMemory>,
}

impl<S: Sink> Keeper<S> {
    /// One token; `alnum` says it is known to hold an alphanumeric character.
    #[inline(always)]
    fn token(&mut self, token: &str, alnum: bool) {
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
    fn hashed(&mut self, h: u64, token: &str) {
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

/// [`simplified_char`] for the BMP from U+3400 up, in a table: no hashing per character.
fn fold_table() -> &'static [char] {
    static TABLE: OnceLock<Vec<char>> = OnceLock::new();
    TABLE.get_or_init(|| {
        (0x3400..0x1_0000u32)
            .map(|u| char::from_u32(u).map_or('\0', simplified_char))
            .collect()
    })
}

/// One bit per character of the BMP from U+3400 up: whether [`fold_table`] changes it.
fn fold_changes() -> &'static [u64] {
    static BITS: OnceLock<Vec<u64>> = OnceLock::new();
    BITS.get_or_init(|| {
        let table = fold_table();
        let mut bits = vec![0u64; table.len().div_ceil(64)];
        for (k, &to) in table.iter().enumerate() {
            if char::from_u32(0x3400 + k as u32).is_some_and(|c| c != to) {
                bits[k / 64] |= 1 << (k % 64);
            }
        }
        bits
    })
}

/// Whether [`fold_changes`] (`changes`) marks the BMP code point `u`; none below U+3400 changes.
#[inline]
fn folds_code_point(changes: &[u64], u: u32) -> bool {
    u.checked_sub(0x3400)
        .and_then(|k| changes.get(k as usize / 64).map(|w| (w >> (k % 64)) & 1 != 0))
        .unwrap_or(false)
}

/// `simplified_char(c)`, through [`fold_table`] in the BMP.
#[inline]
fn fold_char(c: char, table: &[char]) -> char {
    let u = u32::from(c);
    if u < 0x3400 {
        c
    } else if u < 0x1_0000 {
        table[(u - 0x3400) as usize]
    } else {
        simplified_char(c)
    }
}

/// `to_simplified(text)` into `out`, returning `true`; `false` (and `out` untouched) when no
/// character of `text` changes.
fn fold_into(text: &str, out: &mut String) -> bool {
    let table = fold_table();
    let bytes = text.as_bytes();
    // Characters below U+3000 never change: their bytes are all below 0xE3, and a byte from 0xE3
    // up is always a lead byte.
    let changes = fold_changes();
    let mut i = 0;
    let first = loop {
        let Some(&b) = bytes.get(i) else {
            return false;
        };
        if b < 0xE3 {
            i += 1;
            continue;
        }
        if b < 0xF0 {
            // A 3-byte character (lead byte 1110xxxx) from U+3000 up: decoded here and looked up
            // in `fold_changes`.
            if let Some(&[b0, b1, b2]) = bytes.get(i..i + 3) {
                if folds_code_point(changes, decode3(b0, b1, b2)) {
                    break i;
                }
                i += 3;
                continue;
            }
        }
        match char_at(text, i) {
            Some(c) if fold_char(c, table) != c => break i,
            Some(c) => i += c.len_utf8(),
            None => i += 1,
        }
    };
    out.clear();
    out.push_str(&text[..first]);
    out.extend(text[first..].chars().map(|c| fold_char(c, table)));
    true
}

/// Calls `sink(hash, token)` for every feature of `text` (the token is given for `shingle = 1`
/// only), chunk by chunk like the reference, calling `interrupt` between chunks.
fn for_each_feature_hash(
    text: &str,
    options: &Options,
    chunking: Chunking,
    interrupt: &mut dyn FnMut(),
    sink: impl FnMut(u64, Option<&str>) -> Result<(), OutOfMemory>,
) -> Result<(), OutOfMemory> {
    let mut keeper = Keeper {
        sink,
        stops: StopHashes::get(),
        stopwords: options.stopwords,
        single: options.shingle == 1,
        ring: Ring::new(options),
        failed: None,
    };
    // 'char' shingles (tokens of one character, joined by ""): a ring of characters.
    let char_shingles = options.tokenizer == Tokenizer::Char;
    let mut char_ring = CharRing::new(options.shingle);
    let mut buf = String::new();
    let mut folded = String::new();
    let fold = options.fold == Fold::Simplified;
    for chunk in chunks(text, chunking) {
        interrupt();
        if memory_low() {
            return Err(OutOfMemory { features: 0 });
        }
        let (normalized, may_fold): (&str, bool) = if fold {
            let may_fold = normalize_into_checking_fold(chunk, &mut buf);
            (&buf, may_fold)
        } else if is_normalized_quick(chunk) {
            (chunk, false)
        } else {
            normalize_into(chunk, &mut buf);
            (&buf, false)
        };
        // Folding, where the reference does it: on the whole normalized chunk, before tokenizing.
        // The chunk was cut in the raw text by the same `chunks` as the reference's, and the
        // tokenizers below take any text, so nothing here depends on what a folded character is.
        let normalized: &str = if may_fold && fold_into(normalized, &mut folded) {
            &folded
        } else {
            normalized
        };
        match options.tokenizer {
            Tokenizer::Word => scan_words_into(normalized, &mut Unigrams(&mut keeper)),
            // Shingles of characters: straight into the ring, without the keeper's steps for
            // tokens of any length (the same checks: alphanumeric, not a stop word).
            Tokenizer::Char if !keeper.single => {
                for (i, c) in normalized.char_indices() {
                    if !char_is_alnum(c)
                        || (keeper.stopwords
                            && keeper.stops.contains_char(c, &normalized[i..i + c.len_utf8()]))
                    {
                        continue;
                    }
                    if let Some(h) = char_ring.push(c) {
                        (keeper.sink)(h, None)?;
                    }
                }
            }
            Tokenizer::Char => {
                for (i, c) in normalized.char_indices() {
                    if char_is_alnum(c) {
                        keeper.token(&normalized[i..i + c.len_utf8()], true);
                    }
                }
            }
            Tokenizer::Jieba => jieba_tokens(normalized, |token| keeper.token(token, false)),
            Tokenizer::Bigram => {
                let mut bigrams = Bigrams {
                    text: normalized,
                    run: HanRun::default(),
                    keeper: &mut keeper,
                };
                scan_words_into(normalized, &mut bigrams);
                bigrams.run.flush(normalized, bigrams.keeper);
            }
            // A tokenizer added later never gets here: `fast_path_supports` sends it to the reference.
            #[allow(unreachable_patterns)]
            _ => {}
        }
        if let Some(e) = keeper.failed.take() {
            return Err(e);
        }
    }
    let last = if char_shingles {
        char_ring.finish()
    } else {
        keeper.ring.finish()
    };
    if let Some(h) = last {
        (keeper.sink)(h, None)?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Steps 7–9: accumulation.

const LOW_BITS: u64 = 0x0101_0101_0101_0101;

/// Per-bit counts of one bits, eight bits at a time: `lanes[j]` holds, in its byte k, the count of
/// features whose bit `8k + j` is set since the last flush. A byte counts at most 255, so the lanes
/// are flushed into `ones` every 255 features.
struct SwarCounts {
    lanes: [u64; 8],
    pending: u32,
    ones: [u64; 64],
    total: u64,
}

impl SwarCounts {
    fn new() -> Self {
        SwarCounts {
            lanes: [0; 8],
            pending: 0,
            ones: [0; 64],
            total: 0,
        }
    }

    #[inline]
    fn add(&mut self, hash: u64) {
        for (j, lane) in self.lanes.iter_mut().enumerate() {
            *lane += (hash >> j) & LOW_BITS;
        }
        self.pending += 1;
        if self.pending == 255 {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if self.pending == 0 {
            return;
        }
        for (j, lane) in self.lanes.iter_mut().enumerate() {
            for k in 0..8 {
                self.ones[8 * k + j] += (*lane >> (8 * k)) & 0xFF;
            }
            *lane = 0;
        }
        self.total += u64::from(self.pending);
        self.pending = 0;
    }

    /// Bit i set iff `v[i] = 2·ones[i] − total > 0`.
    fn fingerprint(mut self) -> Option<u64> {
        self.flush();
        (self.total > 0).then(|| self.bits())
    }

    /// [`Self::fingerprint`] after a flush, whatever the total.
    fn bits(&self) -> u64 {
        (0..64).fold(0u64, |fp, i| fp | (u64::from(2 * self.ones[i] > self.total) << i))
    }
}

/// A hasher for keys that are already feature hashes (FNV-1a through fmix64, well mixed): the key
/// itself. Only which features are distinct depends on the map, never their order (kept in a
/// vector), so the hasher cannot change a fingerprint.
#[derive(Default)]
struct PassHasher(u64);

impl std::hash::Hasher for PassHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }

    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

type PassBuild = std::hash::BuildHasherDefault<PassHasher>;

/// The per-bit sums of [`crate::fingerprint::accumulate`], bit for bit: for each feature in the
/// given order, `v[i] += w` or `v[i] -= w`. IEEE 754 defines `x - w` as `x + (-w)`, and `-w` is `w`
/// with its sign bit flipped, so adding `w` with the sign bit set from the hash bit is the same
/// operation, without a branch per bit (test `signed_sums_equal_reference_sums`).
fn float_sums(features: impl IntoIterator<Item = (u64, f64)>) -> [f64; 64] {
    let mut v = [0f64; 64];
    for (hash, w) in features {
        add_signed(&mut v, hash, w);
    }
    v
}

/// One step of [`float_sums`]: `v[i] += w` where bit i of `hash` is set, `v[i] -= w` elsewhere.
#[inline]
fn add_signed(v: &mut [f64; 64], hash: u64, w: f64) {
    let bits = w.to_bits();
    for (i, vi) in v.iter_mut().enumerate() {
        let negative = (!hash >> i) & 1;
        *vi += f64::from_bits(bits ^ (negative << 63));
    }
}

/// Bit i set iff `v[i] > 0`, as in the reference.
fn float_fingerprint(features: impl IntoIterator<Item = (u64, f64)>) -> u64 {
    let v = float_sums(features);
    (0..64).fold(0u64, |fp, i| fp | (u64::from(v[i] > 0.0) << i))
}

/// The term frequency of every distinct feature hash, and the order in which they first came: an
/// open-addressing table (linear probing from the hash's top bits; feature hashes are mixed by
/// fmix64) that finds or inserts a feature in one probe sequence, and the list of the slots in
/// order of first occurrence. The slot key 0 marks an empty slot, so the hash 0 is kept apart.
struct TermCounts {
    /// Key and count side by side: a probe reads one cache line.
    slots: Vec<Slot>,
    /// The slot of every distinct feature (but the hash 0), in order of first occurrence.
    order: Vec<u32>,
    shift: u32,
    /// The count of the hash 0, and how many distinct features came before it.
    zero: Option<(u32, usize)>,
}

#[derive(Clone, Copy, Default)]
struct Slot {
    key: u64,
    count: u32,
}

thread_local! {
    static SPARE_COUNTS: std::cell::Cell<Option<TermCounts>> = const { std::cell::Cell::new(None) };
}

impl TermCounts {
    /// A table sized for a text of `bytes` bytes (fewer distinct features than a quarter of its
    /// bytes, as a rule), bounded: a longer text grows it.
    fn new(bytes: usize) -> Self {
        let slots = (bytes / 2).clamp(64, 1 << 15).next_power_of_two();
        TermCounts {
            slots: Vec::new(),
            order: Vec::new(),
            shift: 64 - slots.trailing_zeros(),
            zero: None,
        }
    }

    fn len(&self) -> usize {
        self.order.len() + usize::from(self.zero.is_some())
    }

    /// The table this thread used last, emptied, if it kept one; else a new one for `bytes`.
    /// Emptying clears only the slots used, so a short text does not pay for zeroing a table.
    fn take(bytes: usize) -> Self {
        let fresh = TermCounts::new(bytes);
        match SPARE_COUNTS.with(|spare| spare.take()) {
            // A table far larger than this text needs spreads its few features over more cache
            // lines than a new one would.
            Some(spare) if spare.shift + 2 >= fresh.shift => spare,
            _ => fresh,
        }
    }

    /// Empties the table and keeps it for the next [`TermCounts::take`] of this thread, unless it
    /// grew large: a long text's table is freed, so a backend keeps at most 256 KiB of it between
    /// calls.
    fn give_back(mut self) {
        if self.slots.len() > 1 << 14 {
            return;
        }
        for &slot in &self.order {
            self.slots[slot as usize].key = 0;
        }
        self.order.clear();
        self.zero = None;
        SPARE_COUNTS.with(|spare| spare.set(Some(self)));
    }

    #[inline(always)]
    fn add(&mut self, h: u64) -> Result<(), OutOfMemory> {
        if h == 0 {
            let before = self.order.len();
            let (n, _) = self.zero.get_or_insert((0, before));
            *n = n.saturating_add(1);
            return Ok(());
        }
        if 2 * (self.order.len() + 1) > self.slots.len() {
            self.grow()?;
        }
        let mask = self.slots.len() - 1;
        let mut i = (h >> self.shift) as usize;
        loop {
            let slot = &mut self.slots[i];
            if slot.key == h {
                slot.count = slot.count.saturating_add(1);
                return Ok(());
            }
            if slot.key == 0 {
                *slot = Slot { key: h, count: 1 };
                self.order.push(i as u32);
                return Ok(());
            }
            i = (i + 1) & mask;
        }
    }

    /// The first allocation, or twice the slots, every feature moved over in order.
    #[cold]
    fn grow(&mut self) -> Result<(), OutOfMemory> {
        let features = self.order.len();
        if memory_low() {
            return Err(OutOfMemory { features });
        }
        let size = if self.slots.is_empty() {
            1usize << (64 - self.shift)
        } else {
            2 * self.slots.len()
        };
        let oom = |_| OutOfMemory { features };
        let mut slots = Vec::new();
        slots.try_reserve_exact(size).map_err(oom)?;
        // Room for the features a table of this size holds before it grows again.
        self.order
            .try_reserve_exact((size / 2).saturating_sub(features))
            .map_err(oom)?;
        slots.resize(size, Slot::default());
        let shift = 64 - size.trailing_zeros();
        let mask = size - 1;
        for at in self.order.iter_mut() {
            let old = self.slots[*at as usize];
            let mut i = (old.key >> shift) as usize;
            while slots[i].key != 0 {
                i = (i + 1) & mask;
            }
            slots[i] = old;
            *at = i as u32;
        }
        self.slots = slots;
        self.shift = shift;
        Ok(())
    }

    /// Every distinct feature with its count, in order of first occurrence.
    fn iter(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        let listed = self.order.iter().map(|&i| {
            let slot = self.slots[i as usize];
            (slot.key, slot.count)
        });
        let (zero, before) = match self.zero {
            Some((n, before)) => (Some((0, n)), before),
            None => (None, self.order.len()),
        };
        listed.clone().take(before).chain(zero).chain(listed.skip(before))
    }
}

/// [`logtf_fingerprint`], or where a sum is too close to zero, the reference's order of summation.
fn logtf_or_reference(counts: &TermCounts) -> u64 {
    logtf_fingerprint(counts).unwrap_or_else(|| {
        float_fingerprint(counts.iter().map(|(h, tf)| {
            (
                h,
                crate::fingerprint::float_weight(Weighting::LogTf, f64::from(tf), 1.0),
            )
        }))
    })
}

/// Term frequencies up to this one are counted per frequency by [`logtf_fingerprint`].
const TF_CLASSES: usize = 8;

/// The fingerprint under `'logtf'` of the distinct features counted in `counts` (at least one), or
/// `None` when the reference's order of summation must decide.
///
/// The reference adds the weights `float_weight(LogTf, tf, 1.0)` = 1 + ln tf of the distinct
/// features in order of first occurrence, rounding at every step. Here the features seen tf times
/// all weigh the same w(tf), so for tf up to [`TF_CLASSES`] their signs are counted exactly by one
/// [`SwarCounts`] per tf, and each bit's sum is F[i] = Σ_tf w(tf)·(2·ones_tf[i] − n_tf), plus the
/// rarer features seen more often summed as floats. F[i] need not be the reference's bits, but
/// both are close to the exact sum T[i] of the same weights: with n distinct features of total
/// weight W and u = 2^-53, a sum of n terms in any order is off by at most about (n − 1)·u·W
/// (Higham, *Accuracy and Stability of Numerical Algorithms*, §4.2), and F, a sum of at most n + 1
/// rounded products and sums, by at most about (n + 2)·u·W. Where |F[i]| exceeds
/// `margin` = 8·(n + 4)·u·W, more than both errors together, T[i] and the reference's sum have the
/// sign of F[i], and the bit is the reference's. Where some |F[i]| does not (a sum that cancels or
/// nearly), `None`. When every feature is seen once, every sum is an exact integer and needs no
/// margin. (Test `logtf_fingerprint_equals_reference_sums`.)
fn logtf_fingerprint(counts: &TermCounts) -> Option<u64> {
    let mut classes: [SwarCounts; TF_CLASSES] = std::array::from_fn(|_| SwarCounts::new());
    let mut floats = [0f64; 64];
    let mut rare_weight = 0f64;
    for (h, tf) in counts.iter() {
        match classes.get_mut((tf as usize).wrapping_sub(1)) {
            Some(class) => class.add(h),
            None => {
                let w = crate::fingerprint::float_weight(Weighting::LogTf, f64::from(tf), 1.0);
                add_signed(&mut floats, h, w);
                rare_weight += w;
            }
        }
    }
    let mut weights = [0f64; TF_CLASSES];
    let mut weight = rare_weight;
    let mut only_once = rare_weight == 0.0;
    for (t, class) in classes.iter_mut().enumerate() {
        class.flush();
        if class.total > 0 {
            weights[t] = crate::fingerprint::float_weight(Weighting::LogTf, (t + 1) as f64, 1.0);
            weight += weights[t] * class.total as f64;
            only_once &= t == 0;
        }
    }
    if only_once {
        return Some(classes[0].bits());
    }
    let margin = 8.0 * (counts.len() as f64 + 4.0) * weight * (f64::EPSILON / 2.0);
    // Each bit's sum: the rare features' floats, then each tf's count times its weight, in order.
    let mut sums = floats;
    for (class, &w) in classes.iter().zip(&weights).filter(|(class, _)| class.total > 0) {
        let total = class.total as f64;
        for (sum, &ones) in sums.iter_mut().zip(&class.ones) {
            // 2·ones − total: the sum of ±1 over the features of this tf, exact in an f64.
            *sum += w * (2.0 * ones as f64 - total);
        }
    }
    let mut fp = 0u64;
    for (i, &sum) in sums.iter().enumerate() {
        if sum.abs() <= margin {
            return None;
        }
        fp |= u64::from(sum > 0.0) << i;
    }
    Some(fp)
}

/// The hash of every feature of `text`, in order and with repeats, by the fast path (`None` when
/// [`fast_path_supports`] says no): compared with
/// [`crate::fingerprint::reference_feature_hashes`] by the differential test.
pub fn feature_hashes(text: &str, options: &Options, chunking: Chunking) -> Option<Vec<u64>> {
    if !fast_path_supports(options) {
        return None;
    }
    let mut out = Vec::new();
    for_each_feature_hash(text, options, chunking, &mut || {}, |h, _| {
        out.push(h);
        Ok(())
    })
    .ok()?;
    Some(out)
}

/// The fast path of [`crate::try_fingerprint_with`]; `None` when [`fast_path_supports`] says no.
pub fn try_fingerprint_fast(
    text: &str,
    options: &Options,
    chunking: Chunking,
    interrupt: &mut dyn FnMut(),
) -> Option<Result<Option<u64>, OutOfMemory>> {
    if !fast_path_supports(options) {
        return None;
    }
    run(text, options, chunking, interrupt).transpose()
}

fn run(
    text: &str,
    options: &Options,
    chunking: Chunking,
    interrupt: &mut dyn FnMut(),
) -> Result<Option<Option<u64>>, OutOfMemory> {
    Ok(Some(match options.weighting {
        Weighting::Tf => {
            let mut counts = SwarCounts::new();
            for_each_feature_hash(text, options, chunking, interrupt, |h, _| {
                counts.add(h);
                Ok(())
            })?;
            counts.fingerprint()
        }
        // The reference keeps distinct features by hash too: the same set, the same counts.
        Weighting::Binary => {
            let mut counts = SwarCounts::new();
            let mut seen: HashSet<u64, PassBuild> = HashSet::default();
            for_each_feature_hash(text, options, chunking, interrupt, |h, _| {
                crate::fingerprint::grow_set(&mut seen)?;
                if seen.insert(h) {
                    counts.add(h);
                }
                Ok(())
            })?;
            counts.fingerprint()
        }
        // 'logtf', the default: its weights are 1 for every feature seen once, so most of the sum
        // is counted with integers; see `logtf_fingerprint`.
        Weighting::LogTf => {
            let mut counts = TermCounts::take(text.len());
            for_each_feature_hash(text, options, chunking, interrupt, |h, _| counts.add(h))?;
            let fp = (counts.len() > 0).then(|| logtf_or_reference(&counts));
            counts.give_back();
            fp
        }
        weighting @ (Weighting::TfIdf | Weighting::LogTfIdf | Weighting::LogTfEdge) => {
            run_float(text, options, chunking, interrupt, weighting)?
        }
        // A weighting added later: fast_path_supports already said no.
        #[allow(unreachable_patterns)]
        _ => return Ok(None),
    }))
}

/// The other float weightings. Float sums depend on order: the reference's exact steps (distinct
/// features by hash, in order of first occurrence, the IDF factor taken at the first occurrence,
/// the weight by the reference's own `float_weight`, summed by its `accumulate`), only with the
/// faster tokens. `token` is given for shingle 1 only, the one case with an IDF lookup ('logtf'
/// shingles take the factor 1, as in the reference).
fn run_float(
    text: &str,
    options: &Options,
    chunking: Chunking,
    interrupt: &mut dyn FnMut(),
    weighting: Weighting,
) -> Result<Option<u64>, OutOfMemory> {
    let mut index: HashMap<u64, usize, PassBuild> = HashMap::default();
    let mut distinct: Vec<(u64, u64, f64)> = Vec::new();
    let mut edges = crate::fingerprint::EdgeSums::new(weighting);
    for_each_feature_hash(text, options, chunking, interrupt, |h, token| {
        let i = match index.get(&h) {
            Some(&i) => i,
            None => {
                crate::fingerprint::grow_map(&mut index)?;
                crate::fingerprint::grow_vec(&mut distinct)?;
                let idf = crate::fingerprint::token_idf(weighting, token.unwrap_or_default());
                distinct.push((h, 0, idf));
                index.insert(h, distinct.len() - 1);
                distinct.len() - 1
            }
        };
        distinct[i].1 += 1;
        edges.push(i)
    })?;
    edges.finish();
    Ok((!distinct.is_empty()).then(|| {
        float_fingerprint(distinct.iter().enumerate().map(|(i, &(h, tf, idf))| {
            let factor = edges.factor(i, tf, idf);
            (h, crate::fingerprint::float_weight(weighting, tf as f64, factor))
        }))
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stopwords::is_stop_word;
    use unicode_normalization::char::{canonical_combining_class, decompose_canonical};
    use unicode_normalization::{is_nfkc_quick, IsNormalized};

    fn all_chars() -> impl Iterator<Item = char> {
        (0..=0x10FFFFu32).filter_map(char::from_u32)
    }

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
    fn stable_characters_are_normalization_boundaries() {
        let stable: Vec<char> = all_chars().filter(|&c| is_stable(c)).collect();
        assert!(stable.len() > 38_000, "{}", stable.len());
        for &c in &stable {
            let s = c.to_string();
            assert_eq!(
                normalize(&s),
                s.to_ascii_lowercase(),
                "{c:?} is not its own normal form"
            );
            assert_eq!(canonical_combining_class(c), 0, "{c:?}");
            assert_eq!(is_nfkc_quick(std::iter::once(c)), IsNormalized::Yes, "{c:?}");
        }
        // No canonical composition has a stable character as its second part: the full canonical
        // decomposition of a composite ends with its second part.
        for z in all_chars() {
            let mut d = Vec::new();
            decompose_canonical(z, |x| d.push(x));
            if d.len() >= 2 {
                assert!(!is_stable(d[d.len() - 1]), "{z:?} decomposes to {d:?}");
            }
        }
        // And empirically: a stable character after any character normalizes on its own.
        for x in all_chars() {
            let alone = normalize(&x.to_string());
            for c in ['Q', '中'] {
                let s: String = [x, c].iter().collect();
                let mut want = alone.clone();
                want.push(c.to_ascii_lowercase());
                assert_eq!(normalize(&s), want, "{x:?} {c:?}");
            }
        }
    }

    #[test]
    fn fullwidth_forms_normalize_to_ascii() {
        for c in all_chars() {
            let Some(b) = fullwidth_ascii(c) else { continue };
            assert_eq!(
                normalize(&c.to_string()),
                char::from(b.to_ascii_lowercase()).to_string(),
                "{c:?}"
            );
            assert_eq!(canonical_combining_class(c), 0, "{c:?}");
        }
        assert_eq!(fullwidth_ascii('\u{FF00}'), None);
        assert_eq!(fullwidth_ascii('\u{FF5F}'), None);
        // A boundary before it: after any character it normalizes on its own.
        for x in all_chars() {
            for c in ['Ａ', '，'] {
                let s: String = [x, c].iter().collect();
                let mut want = normalize(&x.to_string());
                want.push_str(&normalize(&c.to_string()));
                assert_eq!(normalize(&s), want, "{x:?} {c:?}");
            }
        }
        let mut buf = String::new();
        for t in ["Ａ\u{301}", "中，\u{301}文", "，，Ａｂ，", "a，b"] {
            normalize_into(t, &mut buf);
            assert_eq!(buf, normalize(t), "{t:?}");
        }
    }

    #[test]
    fn lowercase_is_per_character_except_sigma() {
        for c in all_chars().filter(|&c| c != 'Σ') {
            let s = c.to_string();
            assert_eq!(c.to_lowercase().collect::<String>(), s.to_lowercase(), "{c:?}");
        }
    }

    #[test]
    fn normalize_into_equals_normalize() {
        let cases = [
            "",
            "abc",
            "ABC Def",
            "ＡＢＣ，中文！",
            "a\u{301}b",
            "A\u{301}",
            "가\u{11a8}",
            "\u{1100}\u{1161}\u{11a8}",
            "ΣΑΣ ΟΔΟΣ. aΣ b",
            "İstanbul straße ẞ ﬁ",
            "ｶﾞ ① ½ ㊀",
            "“引号”《书名》—",
            "漢字與簡體",
            "说話",
            "\u{F900}豈",
            "ＡＢ國",
            "é國",
            "\u{301}leading mark",
        ];
        let mut buf = String::new();
        for case in cases {
            normalize_into(case, &mut buf);
            assert_eq!(buf, normalize(case), "{case:?}");
            let may_fold = normalize_into_checking_fold(case, &mut buf);
            assert_eq!(buf, normalize(case), "{case:?}");
            let folded = crate::fold::to_simplified(&buf);
            assert!(may_fold || folded == buf, "{case:?}");
            // Conservative: it may say no to a normalized text ("\u{301}…"), never yes to another.
            assert!(!is_normalized_quick(case) || normalize(case) == case, "{case:?}");
        }
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

    #[test]
    fn ideographs_are_alphanumeric() {
        for c in all_chars().filter(|&c| is_ideograph(c)) {
            assert!(c.is_alphanumeric(), "{c:?}");
        }
        for c in all_chars().filter(|&c| is_cjk_punctuation(c)) {
            assert!(!c.is_alphanumeric(), "{c:?}");
        }
    }

    #[test]
    fn ascii_run_end_finds_the_first_non_ascii_byte() {
        let text = "abcdefghijklmnopqrstuvwxyz0123456789中文 more ascii text é end";
        let bytes = text.as_bytes();
        for from in 0..bytes.len() {
            let want = (from..bytes.len())
                .find(|&j| bytes[j] >= 0x80)
                .unwrap_or(bytes.len());
            assert_eq!(ascii_run_end(bytes, from), want, "from {from}");
        }
        assert_eq!(ascii_run_end(b"", 0), 0);
    }

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

    #[test]
    fn chars_hash_is_the_hash_of_the_utf8() {
        let chars: Vec<char> = [
            'a',
            '\u{7f}',
            '\u{80}',
            'é',
            '\u{7ff}',
            '\u{800}',
            '中',
            '\u{ffff}',
            '😀',
            '\u{10ffff}',
        ]
        .into_iter()
        .chain(all_chars().step_by(4099))
        .collect();
        for w in chars.windows(3) {
            let s: String = w.iter().collect();
            assert_eq!(
                chars_hash(w.iter()),
                fmix64(crate::hash::fnv1a64(s.as_bytes())),
                "{s:?}"
            );
        }
    }

    /// Every window of every shingle length (the fixed ring up to `SHORT_SHINGLE`, the long one
    /// past it), over characters of one to four bytes in runs and mixed, whose windows fall on
    /// both sides of eight bytes: the hash of the window's characters joined.
    #[test]
    fn char_ring_hashes_each_window_as_its_text() {
        let text: Vec<char> = "abcdefghijklmnop é中文字a😀bc\u{7ff}\u{800}xyz\u{10ffff}qq中中中中中中中中ab"
            .chars()
            .chain(all_chars().step_by(7919).take(40))
            .collect();
        let joined = |w: &[char]| fmix64(crate::hash::fnv1a64(w.iter().collect::<String>().as_bytes()));
        for n in 1..=SHORT_SHINGLE + 4 {
            let mut ring = CharRing::new(n);
            for (i, &c) in text.iter().enumerate() {
                let expected = (i + 1 >= n).then(|| joined(&text[i + 1 - n..=i]));
                assert_eq!(ring.push(c), expected, "n = {n}, at {i}");
            }
            assert_eq!(ring.finish(), None, "n = {n}");
            // Fewer characters than n: one feature of all of them.
            let mut short = CharRing::new(n);
            let few = &text[20..20 + (n - 1).min(5)];
            for &c in few {
                assert_eq!(short.push(c), None);
            }
            let expected = (n > 1 && !few.is_empty()).then(|| joined(few));
            assert_eq!(short.finish(), expected, "n = {n}, {} characters", few.len());
        }
    }

    /// Random strings: fewer than `max_pieces` of `pieces` joined, drawn by an xorshift64
    /// generator from `seed` (the same strings on every run).
    fn random_joins<'p>(pieces: &'p [&'p str], seed: u64, max_pieces: u64) -> impl FnMut() -> String + 'p {
        let mut state = seed;
        move || {
            let mut next = || {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state
            };
            let len = next() % max_pieces;
            (0..len)
                .map(|_| pieces[(next() % pieces.len() as u64) as usize])
                .collect()
        }
    }

    /// The bigram features of ideograph runs against the reference's: runs of every length next
    /// to what can end or join them (an Extend, Format or ZWJ character after an
    /// ideograph keeps it out of a pair; an ideograph of U+3400–U+4DBF or U+4E00–U+4FFF, a hexagram
    /// of U+4DC0–U+4DFF (E4 B7, just below the ideographs), a
    /// compatibility ideograph, punctuation, Latin letters, Hangul).
    #[test]
    fn bigram_runs_pair_as_the_reference_does() {
        let pieces: &[&str] = &[
            "我", "们", "去", "北京", "一", "丁", "乙", "亿", "鿿", "龥", "㐀", "䶵", "豈", "\u{301}",
            "\u{3099}", "\u{200D}", "\u{200B}", "\u{FE0F}", "\u{302A}", "䷀", "。", "，", "、", " ", "a",
            "ab", "1", "\n", "한", "ア", "😀", "的", "了", "是",
        ];
        let mut texts = random_joins(pieces, 0x2545_f491_4f6c_dd1d, 14);
        let chunkings = [Chunking::default(), Chunking { target: 4, limit: 8 }];
        for (stopwords, chunking) in [(false, chunkings[0]), (true, chunkings[0]), (true, chunkings[1])] {
            let options = Options::parse_with_fold("bigram", 1, "tf", stopwords, "none").unwrap();
            for round in 0..20_000 {
                let text = texts();
                assert_eq!(
                    feature_hashes(&text, &options, chunking),
                    Some(crate::fingerprint::reference_feature_hashes(
                        &text, &options, chunking
                    )),
                    "round {round}: {text:?}"
                );
            }
        }
    }

    /// `jieba_tokens` against jieba-rs itself: random strings over the characters that decide its
    /// blocks (letters, digits, `+#&._%-`, spaces, line breaks, punctuation, ideographs, other
    /// letters, an emoji), and the words of its dictionary made of them (all of its words with
    /// lowercase ASCII in them: `c#`, `c++`, `1号店`, `4s店`, `江南style`).
    #[test]
    fn jieba_tokens_equal_jieba_cut() {
        let pieces: &[&str] = &[
            "a",
            "b",
            "z",
            "x",
            "0",
            "7",
            "+",
            "#",
            "&",
            ".",
            "_",
            "%",
            "-",
            " ",
            "  ",
            "\r",
            "\n",
            "\r\n",
            "\t",
            ",",
            "!",
            "(",
            "/",
            "'",
            "中",
            "文",
            "的",
            "é",
            "，",
            "😀",
            "ß",
            "c#",
            "c++",
            "c",
            "3.14",
            "v1.2.3",
            "a-b",
            "x_y",
            "50%",
            "..",
            "--",
            "ab.",
            "_a",
            "中文",
            "abc",
            "的 a",
            "hello",
            "world",
            "linux",
            "2023",
            // Dictionary words that mix ideographs and ASCII: a block boundary must not split them.
            "1号店",
            "号店",
            "4s店",
            "s店",
            "江南style",
            "江南",
            "style",
            "号",
        ];
        let mut texts = random_joins(pieces, 0x9e37_79b9_7f4a_7c15, 12);
        for round in 0..40_000 {
            let text = texts();
            let expected: Vec<&str> = jieba().cut(&text, true).iter().map(|t| t.word).collect();
            let mut got = Vec::new();
            jieba_tokens(&text, |t| got.push(t));
            assert_eq!(got, expected, "round {round}: {text:?}");
        }
    }

    /// The reference's sums, written as it writes them.
    fn reference_sums(features: &[(u64, f64)]) -> [f64; 64] {
        let mut v = [0f64; 64];
        for &(hash, w) in features {
            for (i, vi) in v.iter_mut().enumerate() {
                if (hash >> i) & 1 == 1 {
                    *vi += w;
                } else {
                    *vi -= w;
                }
            }
        }
        v
    }

    #[test]
    fn signed_sums_equal_reference_sums() {
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut next = || {
            x = fmix64(x.wrapping_add(0x9E37_79B9_7F4A_7C15));
            x
        };
        let specials = [
            0.0,
            -0.0,
            1.0,
            f64::MIN_POSITIVE,
            f64::MIN_POSITIVE / 3.0,
            f64::MAX,
            f64::INFINITY,
            f64::NAN,
            1e-300,
            (1.0 + 2f64.ln()) * 7.3,
        ];
        for round in 0..300 {
            let features: Vec<(u64, f64)> = (0..(round % 40) + 1)
                .map(|k| {
                    let h = next();
                    let w = if round % 5 == 0 {
                        specials[(h as usize + k) % specials.len()]
                    } else {
                        // Weights of every magnitude, both signs.
                        f64::from_bits(next() & !(0x7FFu64 << 52) | ((next() % 2047) << 52))
                    };
                    (h, w)
                })
                .collect();
            let (fast, reference) = (float_sums(features.iter().copied()), reference_sums(&features));
            for i in 0..64 {
                assert!(
                    fast[i].to_bits() == reference[i].to_bits()
                        || (fast[i].is_nan() && reference[i].is_nan()),
                    "{round} {i}: {} {}",
                    fast[i],
                    reference[i]
                );
            }
            assert_eq!(
                float_fingerprint(features.iter().copied()),
                crate::fingerprint::accumulate(features.iter().copied())
            );
        }
    }

    /// The 'logtf' fingerprint as the reference computes it: its `accumulate` over the distinct
    /// features in order of first occurrence, weights by its `float_weight`.
    fn logtf_reference(stream: &[u64]) -> u64 {
        let mut order: Vec<u64> = Vec::new();
        let mut tf: HashMap<u64, u64> = HashMap::new();
        for &h in stream {
            *tf.entry(h).or_insert_with(|| {
                order.push(h);
                0
            }) += 1;
        }
        crate::fingerprint::accumulate(order.iter().map(|h| {
            (
                *h,
                crate::fingerprint::float_weight(Weighting::LogTf, tf[h] as f64, 1.0),
            )
        }))
    }

    /// What `run` does with a stream of feature hashes under 'logtf'; also whether the margin
    /// sent it to the reference's order.
    fn logtf_fast(stream: &[u64], bytes: usize) -> (u64, bool) {
        let mut counts = TermCounts::take(bytes);
        for &h in stream {
            counts.add(h).unwrap();
        }
        let result = (logtf_or_reference(&counts), logtf_fingerprint(&counts).is_none());
        counts.give_back();
        result
    }

    #[test]
    fn term_counts_count_in_order_of_first_occurrence() {
        let mut x = 7u64;
        let mut next = || {
            x = fmix64(x.wrapping_add(0x9E37_79B9_7F4A_7C15));
            x
        };
        for round in 0..200 {
            // Few distinct values (many repeats), the hash 0 among them, tables that must grow;
            // every other round reuses the thread's table.
            let distinct: Vec<u64> = (0..1 + round * 7)
                .map(|k| if k == 3 { 0 } else { next() })
                .collect();
            let stream: Vec<u64> = (0..(round * 13) % 3000 + 1)
                .map(|_| distinct[(next() % distinct.len() as u64) as usize])
                .collect();
            let mut counts = if round % 2 == 0 {
                TermCounts::take(round)
            } else {
                TermCounts::new(round)
            };
            for &h in &stream {
                counts.add(h).unwrap();
            }
            let mut want: Vec<(u64, u32)> = Vec::new();
            for &h in &stream {
                match want.iter_mut().find(|(k, _)| *k == h) {
                    Some((_, n)) => *n += 1,
                    None => want.push((h, 1)),
                }
            }
            assert_eq!(counts.iter().collect::<Vec<_>>(), want, "round {round}");
            assert_eq!(counts.len(), want.len());
            counts.give_back();
        }
        // A table given back comes back empty.
        let counts = TermCounts::take(10);
        assert_eq!(counts.len(), 0);
        assert!(counts.slots.iter().all(|s| s.key == 0));
    }

    #[test]
    fn logtf_fingerprint_equals_reference_sums() {
        let mut x = 0x1234_5678u64;
        let mut next = || {
            x = fmix64(x.wrapping_add(0x9E37_79B9_7F4A_7C15));
            x
        };
        let mut decided_by_reference = 0;
        for round in 0..3000 {
            let n = 1 + (next() % 300) as usize;
            let distinct: Vec<u64> = (0..n).map(|_| next()).collect();
            let mut stream: Vec<u64> = Vec::new();
            for (k, &h) in distinct.iter().enumerate() {
                // tf 1 mostly, 2..=8 often, some beyond the classes.
                let tf = match next() % 10 {
                    0..=5 => 1,
                    6..=8 => 2 + next() % 7,
                    _ => 9 + next() % 40,
                };
                for _ in 0..tf {
                    stream.push(h);
                }
                if round % 3 == 0 || (round % 3 == 1 && k % 2 == 0) {
                    // Its complement with the same tf: sums that cancel exactly in every bit (every
                    // third round: all features), where the reference's rounding decides (the
                    // margin must send these to it), or in part.
                    for _ in 0..tf {
                        stream.push(!h);
                    }
                }
            }
            // The order of first occurrence matters to the reference: shuffle the occurrences.
            for i in (1..stream.len()).rev() {
                stream.swap(i, (next() % (i as u64 + 1)) as usize);
            }
            let (fast, by_reference) = logtf_fast(&stream, stream.len());
            assert_eq!(fast, logtf_reference(&stream), "round {round}");
            decided_by_reference += usize::from(by_reference);
        }
        // Both branches ran.
        assert!(decided_by_reference >= 900, "{decided_by_reference}");
        assert!(decided_by_reference < 2000, "{decided_by_reference}");
        // All features seen once: integer sums, decided without the reference's order, even at 0.
        assert_eq!(logtf_fast(&[5, !5], 2), (logtf_reference(&[5, !5]), false));
    }

    #[test]
    fn fold_changes_marks_the_characters_the_table_changes() {
        let (table, changes) = (fold_table(), fold_changes());
        let mut changed = 0;
        for (k, &to) in table.iter().enumerate() {
            let c = char::from_u32(0x3400 + k as u32);
            let marked = folds_code_point(changes, 0x3400 + k as u32);
            assert_eq!(marked, c.is_some_and(|c| c != to), "U+{:04X}", 0x3400 + k);
            changed += usize::from(marked);
        }
        assert!(changed > 2000, "{changed}");
        let mut out = String::new();
        for t in ["", "abc", "漢字與简体", "中文 ok", "說", "x說", "𠀀國"] {
            let folded = fold_into(t, &mut out);
            let want = crate::fold::to_simplified(t);
            assert_eq!(folded, want != t, "{t:?}");
            if folded {
                assert_eq!(out, want, "{t:?}");
            }
        }
    }

    #[test]
    fn swar_counts_equal_plain_counts() {
        let mut fast = SwarCounts::new();
        let mut ones = [0u64; 64];
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for n in 1..=2000u64 {
            x = fmix64(x.wrapping_add(n));
            // Skewed bits too: all-ones words make every lane count to the flush limit.
            let h = if n % 3 == 0 { u64::MAX } else { x };
            fast.add(h);
            for (i, o) in ones.iter_mut().enumerate() {
                *o += (h >> i) & 1;
            }
        }
        fast.flush();
        assert_eq!(fast.ones, ones);
        assert_eq!(fast.total, 2000);
    }

    #[test]
    fn current_options_take_the_fast_path() {
        // Fails when Options gains a field: extend KNOWN_FIELDS and the fast path (or decide that
        // the new field's non-default values fall back), then the differential test.
        assert!(options_fields_known(), "{:?}", Options::default());
        let word = Options {
            tokenizer: Tokenizer::Word,
            weighting: Weighting::Tf,
            fold: crate::options::Fold::None,
            ..Options::default()
        };
        assert!(fast_path_supports(&word));
        // The v2 defaults (bigram, logtf, stop words, folding) take it.
        let defaults = Options::default();
        assert_eq!(
            (
                defaults.tokenizer,
                defaults.shingle,
                defaults.weighting,
                defaults.fold
            ),
            (
                Tokenizer::Bigram,
                1,
                Weighting::LogTf,
                crate::options::Fold::Simplified
            )
        );
        assert!(fast_path_supports(&defaults));
        for tokenizer in [
            Tokenizer::Word,
            Tokenizer::Char,
            Tokenizer::Jieba,
            Tokenizer::Bigram,
        ] {
            for shingle in [1, 3] {
                let o = Options {
                    tokenizer,
                    shingle,
                    ..defaults
                };
                assert!(fast_path_supports(&o), "{o:?}");
            }
        }
        // IDF of a joined shingle: the reference's.
        for weighting in [Weighting::TfIdf, Weighting::LogTfIdf] {
            let o = Options {
                shingle: 3,
                weighting,
                ..word
            };
            assert!(!fast_path_supports(&o), "{o:?}");
            assert!(fast_path_supports(&Options { shingle: 1, ..o }));
        }
    }
}
