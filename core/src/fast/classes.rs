//! Character classes that the fast path decides without the Unicode tables, and the UTF-8 of CJK
//! text decoded by hand.

/// CJK Unified Ideographs and Extension A: UAX #29 class Other (one token each), NFKC-stable.
#[inline]
pub fn is_ideograph(c: char) -> bool {
    matches!(c, '\u{4E00}'..='\u{9FFF}' | '\u{3400}'..='\u{4DBF}')
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

#[inline]
pub(super) fn is_plain_other(c: char) -> bool {
    is_ideograph(c) || is_cjk_punctuation(c)
}

/// The code point of a 3-byte UTF-8 sequence (lead byte 1110xxxx).
#[inline]
pub(super) fn decode3(b0: u8, b1: u8, b2: u8) -> u32 {
    (u32::from(b0 & 0x0F) << 12) | (u32::from(b1 & 0x3F) << 6) | u32::from(b2 & 0x3F)
}

/// The character starting at byte `i` of `text`, decoded by hand when it takes three bytes (all of
/// the BMP's CJK); `None` past the end or off a character boundary.
#[inline]
pub(super) fn char_at(text: &str, i: usize) -> Option<char> {
    let bytes = text.as_bytes();
    match bytes.get(i..i.checked_add(3)?) {
        // `text` is valid UTF-8: a lead byte 1110xxxx starts a 3-byte character.
        Some(&[b0, b1, b2]) if b0 & 0xF0 == 0xE0 => char::from_u32(decode3(b0, b1, b2)),
        _ => text.get(i..)?.chars().next(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fast::test_support::all_chars;

    #[test]
    fn ideographs_are_alphanumeric() {
        for c in all_chars().filter(|&c| is_ideograph(c)) {
            assert!(c.is_alphanumeric(), "{c:?}");
        }
        for c in all_chars().filter(|&c| is_cjk_punctuation(c)) {
            assert!(!c.is_alphanumeric(), "{c:?}");
        }
    }
}
