//! Folding (`fold => 'simplified'`) on the fast path: [`simplified_char`] over the BMP in a dense
//! table, and a bitmap of the characters it changes, so that a text with nothing to fold is
//! neither decoded nor copied.

use std::sync::OnceLock;

use super::classes::{char_at, decode3};
use crate::fold::simplified_char;

/// [`simplified_char`] for the BMP from U+3400 up, in a table: no hashing per character.
pub(super) fn fold_table() -> &'static [char] {
    static TABLE: OnceLock<Vec<char>> = OnceLock::new();
    TABLE.get_or_init(|| {
        (0x3400..0x1_0000u32)
            .map(|u| char::from_u32(u).map_or('\0', simplified_char))
            .collect()
    })
}

/// One bit per character of the BMP from U+3400 up: whether [`fold_table`] changes it.
pub(super) fn fold_changes() -> &'static [u64] {
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
pub(super) fn folds_code_point(changes: &[u64], u: u32) -> bool {
    u.checked_sub(0x3400)
        .and_then(|k| changes.get(k as usize / 64).map(|w| (w >> (k % 64)) & 1 != 0))
        .unwrap_or(false)
}

/// `simplified_char(c)`, through [`fold_table`] in the BMP.
#[inline]
pub(super) fn fold_char(c: char, table: &[char]) -> char {
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
pub(super) fn fold_into(text: &str, out: &mut String) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
