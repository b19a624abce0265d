//! The 'jieba' tokenizer on the fast path: the tokens of jieba-rs, with the blocks of ASCII that need
//! neither its dictionary nor its HMM cut here.

use crate::tokenize::jieba;

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
pub(super) fn jieba_tokens<'t>(text: &'t str, mut f: impl FnMut(&'t str)) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fast::test_support::random_joins;

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
}
