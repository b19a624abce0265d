//! The 'bigram' tokenizer on the fast path: the reference's `han_bigrams` over the word scanner's
//! tokens, a pair of ideographs hashed from its six bytes.

use super::hashing::bytes_hash;
use super::keeper::{Keeper, Sink};
use super::words::Words;
use crate::tokenize::is_han;

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
pub(super) struct Bigrams<'k, 't, S> {
    text: &'t str,
    run: HanRun,
    keeper: &'k mut Keeper<S>,
}

impl<'k, 't, S: Sink> Bigrams<'k, 't, S> {
    pub(super) fn new(text: &'t str, keeper: &'k mut Keeper<S>) -> Self {
        Bigrams {
            text,
            run: HanRun::default(),
            keeper,
        }
    }

    /// The end of the text: a run of one Han character gives that character.
    pub(super) fn finish(mut self) {
        self.run.flush(self.text, self.keeper);
    }
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

#[cfg(test)]
mod tests {
    use crate::fast::feature_hashes;
    use crate::fast::test_support::random_joins;
    use crate::normalize::Chunking;
    use crate::options::Options;
    use crate::reference::reference_feature_hashes;

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
                    Ok(reference_feature_hashes(&text, &options, chunking)),
                    "round {round}: {text:?}"
                );
            }
        }
    }
}
