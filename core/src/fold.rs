//! `fold => 'simplified'` (algorithm v2): traditional Chinese characters become simplified ones after
//! normalization and before tokenizing. The table (data/t2s/t2s.txt) is generated from Unihan's
//! kSimplifiedVariant by scripts/build_t2s.py; it is part of the fingerprint contract.

use std::collections::HashMap;
use std::sync::LazyLock;

const TABLE: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../data/t2s/t2s.txt"));

static MAP: LazyLock<HashMap<char, char>> = LazyLock::new(|| {
    TABLE
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let mut chars = l.chars();
            let (from, tab, to) = (chars.next()?, chars.next()?, chars.next()?);
            (tab == '\t' && chars.next().is_none()).then_some((from, to))
        })
        .collect()
});

/// The simplified form of one character (itself when the table has none).
#[inline]
pub fn simplified_char(c: char) -> char {
    if (c as u32) < 0x3400 {
        return c;
    }
    MAP.get(&c).copied().unwrap_or(c)
}

/// `text` with every traditional character replaced by its simplified form.
pub fn to_simplified(text: &str) -> String {
    text.chars().map(simplified_char).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::normalize::normalize;

    #[test]
    fn every_line_of_the_table_is_read() {
        let lines = TABLE.lines().filter(|l| !l.starts_with('#')).count();
        assert_eq!(MAP.len(), lines, "a line of data/t2s/t2s.txt did not parse");
        assert!(MAP.len() > 2_000);
    }

    #[test]
    fn traditional_becomes_simplified() {
        assert_eq!(
            to_simplified("第十屆春茶節在龍井村開幕"),
            "第十届春茶节在龙井村开幕"
        );
        assert_eq!(to_simplified("後來，頭髮"), "后来，头发");
        // Simplified text, Latin text and punctuation pass through.
        let plain = "我们去北京看电影, version 2.0!";
        assert_eq!(to_simplified(plain), plain);
    }

    #[test]
    fn the_table_maps_normalized_characters_to_normalized_characters() {
        // The fold runs after normalization: a left side that normalization changes would never be
        // seen, and a right side it would change would leave text in a form no stop word matches.
        for (from, to) in MAP.iter() {
            assert_eq!(normalize(&from.to_string()), from.to_string());
            assert_eq!(normalize(&to.to_string()), to.to_string());
            assert_ne!(from, to);
        }
    }
}
