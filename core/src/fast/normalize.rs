//! Step 1 on the fast path: `normalize` (NFKC, then full lowercase) that copies the runs of
//! characters normalization leaves alone and sends only the rest through NFKC and lowercasing.

use unicode_normalization::UnicodeNormalization;

use super::classes::{char_at, decode3, is_cjk_punctuation, is_ideograph};
use super::fold::{fold_changes, fold_char, fold_table, folds_code_point};
use crate::normalize::normalize;

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

#[inline]
fn is_hangul_syllable(c: char) -> bool {
    matches!(c, '\u{AC00}'..='\u{D7A3}')
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fast::test_support::all_chars;
    use unicode_normalization::char::{canonical_combining_class, decompose_canonical};
    use unicode_normalization::{is_nfkc_quick, IsNormalized};

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
}
