//! The options of `minhash()` and of its LSH bands, parsed and checked once per call like
//! [`crate::options::Options`].

use crate::error::OptionError;
use crate::hash::{fmix64, Fnv1a64};
use crate::options::{quote, Fold, Tokenizer, MAX_SHINGLE};

/// How many tokens make one shingle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shingle {
    /// Per script (`shingle => 0` in SQL, the default): the shingle that ends at a token that is one
    /// Han character has 3 tokens, the shingle that ends at any other token 2. Chinese text gives
    /// character 3-shingles, English text word 2-shingles, and mixed text both, each shingle sized
    /// by the token it ends at (see [`crate::minhash`], "Mixed text").
    Auto,
    /// Every shingle has this many tokens (1 to [`MAX_SHINGLE`]).
    Fixed(usize),
}

impl Shingle {
    /// The number of tokens of the shingle that ends at a token; `han` tells whether that token is
    /// one Han character.
    #[inline(always)]
    pub fn width(self, han: bool) -> usize {
        match self {
            Shingle::Auto if han => 3,
            Shingle::Auto => 2,
            Shingle::Fixed(n) => n,
        }
    }

    fn name(self) -> String {
        match self {
            Shingle::Auto => "auto".into(),
            Shingle::Fixed(n) => n.to_string(),
        }
    }
}

/// Fewest and most hash values in a signature.
pub const MIN_K: i32 = 1;
pub const MAX_K: i32 = 1024;
/// The measured defaults (bench/studies/minhash/minhash_accuracy.md): 128 values of 32 bits (516
/// bytes with the header), 32 bands of 4 rows, found at an estimated similarity of 0.5 or more.
pub const DEFAULT_K: usize = 128;
pub const DEFAULT_BANDS: usize = 32;
pub const DEFAULT_ROWS: usize = 4;
pub const DEFAULT_THRESHOLD: f64 = 0.5;

/// The options of `minhash()`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MinHashOptions {
    /// The tokenizer; MinHash's default is `'word'` (UAX #29 words; each Han character a token).
    pub tokenizer: Tokenizer,
    pub shingle: Shingle,
    /// Drop the stop words of [`crate::stopwords`] before shingling (default: keep them).
    pub stopwords: bool,
    /// Traditional Chinese folded to simplified before tokenizing (default: yes).
    pub fold: Fold,
    /// Hash values in the signature (bins of one-permutation hashing).
    pub k: usize,
}

impl Default for MinHashOptions {
    /// 'word' tokens, shingles per script, stop words kept, traditional Chinese folded, 128 values:
    /// chosen by bench/studies/minhash/minhash_eval.py (bench/studies/minhash/minhash_accuracy.md).
    fn default() -> Self {
        MinHashOptions {
            tokenizer: Tokenizer::Word,
            shingle: Shingle::Auto,
            stopwords: false,
            fold: Fold::Simplified,
            k: DEFAULT_K,
        }
    }
}

impl MinHashOptions {
    /// Parses the SQL arguments, naming the first bad option and its allowed values. `shingle = 0`
    /// is [`Shingle::Auto`]; `fold` takes `'none'`, `'simplified'` or `'auto'` (= `'simplified'`).
    pub fn parse(
        tokenizer: &str,
        shingle: i32,
        stopwords: bool,
        fold: &str,
        k: i32,
    ) -> Result<Self, OptionError> {
        let tokenizer = Tokenizer::parse(tokenizer)?;
        let shingle = match shingle {
            0 => Shingle::Auto,
            n if (1..=MAX_SHINGLE).contains(&n) => Shingle::Fixed(n as usize),
            n => {
                return Err(OptionError::new(
                    "shingle",
                    n.to_string(),
                    format!(
                    "0 (per script: 3 after a Han character, else 2) or an integer from 1 to {MAX_SHINGLE}"
                ),
                ))
            }
        };
        let fold = match fold {
            "none" => Fold::None,
            "simplified" | "auto" => Fold::Simplified,
            other => return Err(OptionError::new("fold", quote(other), Fold::ALLOWED.into())),
        };
        if !(MIN_K..=MAX_K).contains(&k) {
            return Err(OptionError::new(
                "k",
                k.to_string(),
                format!("an integer from {MIN_K} to {MAX_K}"),
            ));
        }
        Ok(MinHashOptions {
            tokenizer,
            shingle,
            stopwords,
            fold,
            k: k as usize,
        })
    }

    /// The options with `k` and a fixed shingle brought into the ranges that [`MinHashOptions::parse`]
    /// accepts (1 to [`MAX_K`], 1 to [`MAX_SHINGLE`]): what every function of [`crate::minhash`]
    /// computes with, so that options built by hand can neither fail nor allocate without bound.
    pub fn sanitized(&self) -> Self {
        MinHashOptions {
            k: self.k.clamp(MIN_K as usize, MAX_K as usize),
            shingle: match self.shingle {
                Shingle::Fixed(n) => Shingle::Fixed(n.clamp(1, MAX_SHINGLE as usize)),
                auto => auto,
            },
            ..*self
        }
    }

    /// The options that decide which shingles a text has, as text: what the tag of a signature
    /// ([`MinHashOptions::tag`]) is computed from.
    pub fn canonical(&self) -> String {
        let tokenizer = match self.tokenizer {
            Tokenizer::Jieba => "jieba",
            Tokenizer::Word => "word",
            Tokenizer::Char => "char",
            Tokenizer::Bigram => "bigram",
        };
        let fold = match self.fold {
            Fold::None => "none",
            Fold::Simplified => "simplified",
        };
        format!(
            "minhash1:{tokenizer}:{}:{}:{fold}",
            self.shingle.name(),
            self.stopwords
        )
    }

    /// 24 bits that tell signatures of different shingles apart (stored in the signature's header):
    /// [`crate::minhash::similarity`] refuses to compare signatures whose tags differ.
    pub fn tag(&self) -> u32 {
        let o = self.sanitized();
        let tokenizer = match o.tokenizer {
            Tokenizer::Jieba => "jieba",
            Tokenizer::Word => "word",
            Tokenizer::Char => "char",
            Tokenizer::Bigram => "bigram",
        };
        // The bytes of `canonical()`, hashed without building the string.
        let mut h = Fnv1a64::default();
        h.write(b"minhash1:");
        h.write(tokenizer.as_bytes());
        h.write(b":");
        match o.shingle {
            Shingle::Auto => h.write(b"auto"),
            Shingle::Fixed(n) => h.write(n.to_string().as_bytes()),
        }
        h.write(if o.stopwords { b":true:" } else { b":false:" });
        h.write(if o.fold == Fold::Simplified {
            b"simplified"
        } else {
            b"none"
        });
        (fmix64(fmix64(h.finish())) & 0x00FF_FFFF) as u32
    }
}

/// The LSH bands: `bands` keys of `rows` hash values each, from the first `bands × rows` values of
/// a signature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lsh {
    pub bands: usize,
    pub rows: usize,
}

impl Default for Lsh {
    fn default() -> Self {
        Lsh {
            bands: DEFAULT_BANDS,
            rows: DEFAULT_ROWS,
        }
    }
}

impl Lsh {
    /// Parses `bands` and `rows` for signatures of `k` values: both positive, `bands × rows ≤ k`.
    pub fn parse(bands: i32, rows: i32, k: usize) -> Result<Self, OptionError> {
        if !(1..=MAX_K).contains(&rows) || rows as usize > k {
            return Err(OptionError::new(
                "rows",
                rows.to_string(),
                format!("an integer from 1 to the signature's {k} values"),
            ));
        }
        let most = k / rows as usize;
        if bands < 1 || bands as usize > most {
            return Err(OptionError::new(
                "bands",
                bands.to_string(),
                format!("an integer from 1 to {most} ({k} values in bands of {rows} rows)"),
            ));
        }
        Ok(Lsh {
            bands: bands as usize,
            rows: rows as usize,
        })
    }

    /// The probability that a pair of true Jaccard similarity `j` shares at least one band:
    /// `1 − (1 − j^rows)^bands` (the S-curve, for independent hash values).
    pub fn probability(&self, j: f64) -> f64 {
        1.0 - (1.0 - j.powi(self.rows as i32)).powi(self.bands as i32)
    }
}

/// Parses a similarity threshold: a finite number from 0 to 1.
pub fn parse_threshold(t: f64) -> Result<f64, OptionError> {
    if t.is_finite() && (0.0..=1.0).contains(&t) {
        Ok(t)
    } else {
        Err(OptionError::new(
            "threshold",
            t.to_string(),
            "a number from 0 to 1".into(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_parse() {
        assert_eq!(
            MinHashOptions::parse("word", 0, false, "auto", 128).unwrap(),
            MinHashOptions::default()
        );
        assert_eq!(
            MinHashOptions::parse("word", 0, false, "simplified", 128).unwrap(),
            MinHashOptions::default()
        );
        assert_eq!(Lsh::parse(32, 4, 128).unwrap(), Lsh::default());
        assert_eq!(parse_threshold(0.5).unwrap(), DEFAULT_THRESHOLD);
    }

    #[test]
    fn each_bad_option_is_named() {
        let bad = [
            (MinHashOptions::parse("bpe", 0, false, "auto", 128), "tokenizer"),
            (MinHashOptions::parse("word", -1, false, "auto", 128), "shingle"),
            (MinHashOptions::parse("word", 65, false, "auto", 128), "shingle"),
            (MinHashOptions::parse("word", 0, false, "t2s", 128), "fold"),
            (MinHashOptions::parse("word", 0, false, "auto", 0), "k"),
            (MinHashOptions::parse("word", 0, false, "auto", 1025), "k"),
            (MinHashOptions::parse("word", 0, false, "auto", i32::MIN), "k"),
        ];
        for (r, option) in bad {
            let e = r.unwrap_err();
            assert_eq!(e.option, option, "{e}");
            assert!(e.to_string().contains("allowed"), "{e}");
        }
        assert_eq!(Lsh::parse(0, 4, 128).unwrap_err().option, "bands");
        assert_eq!(Lsh::parse(33, 4, 128).unwrap_err().option, "bands");
        assert_eq!(Lsh::parse(1, 0, 128).unwrap_err().option, "rows");
        assert_eq!(Lsh::parse(1, 129, 128).unwrap_err().option, "rows");
        assert_eq!(Lsh::parse(i32::MAX, i32::MAX, 128).unwrap_err().option, "rows");
        assert!(Lsh::parse(128, 1, 128).is_ok());
        for t in [f64::NAN, -0.1, 1.5, f64::INFINITY] {
            assert_eq!(parse_threshold(t).unwrap_err().option, "threshold");
        }
        let e = MinHashOptions::parse(&"x".repeat(1000), 0, false, "auto", 128).unwrap_err();
        assert!(e.value.len() < 50);
    }

    #[test]
    fn tags_tell_shingles_apart_but_not_k() {
        let d = MinHashOptions::default();
        assert_eq!(d.canonical(), "minhash1:word:auto:false:simplified");
        assert_eq!(d.tag(), MinHashOptions { k: 64, ..d }.tag());
        assert_ne!(d.tag(), MinHashOptions { stopwords: true, ..d }.tag());
        assert_ne!(
            d.tag(),
            MinHashOptions {
                shingle: Shingle::Fixed(2),
                ..d
            }
            .tag()
        );
        assert!(d.tag() < 1 << 24);
        // The tag is the hash of the canonical text, computed without it.
        for o in [
            d,
            MinHashOptions { stopwords: true, ..d },
            MinHashOptions::parse("char", 3, false, "none", 64).unwrap(),
            MinHashOptions::parse("bigram", 12, true, "auto", 64).unwrap(),
        ] {
            let want = (fmix64(crate::hash::feature_hash(&o.canonical())) & 0x00FF_FFFF) as u32;
            assert_eq!(o.tag(), want, "{o:?}");
        }
    }

    #[test]
    fn s_curve_of_the_defaults() {
        let l = Lsh::default();
        assert!(l.probability(0.8) > 0.9999);
        assert!(l.probability(0.3) < 0.25);
        assert_eq!(l.probability(0.0), 0.0);
        assert_eq!(l.probability(1.0), 1.0);
    }
}
