//! The options of `simhash()` (docs/ARCHITECTURE.md §2.11), parsed and checked once per call.

use crate::error::OptionError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tokenizer {
    /// jieba-rs `cut(text, hmm = true)`: Chinese words, Latin words and numbers.
    Jieba,
    /// Unicode (UAX #29) word segmentation.
    Word,
    /// One token per Unicode scalar value.
    Char,
    /// Unicode words, except that each run of Han characters gives its overlapping character pairs
    /// (algorithm v2).
    Bigram,
}

impl Tokenizer {
    pub const ALLOWED: &'static str = "'jieba', 'word', 'char', 'bigram'";

    pub fn parse(name: &str) -> Result<Self, OptionError> {
        match name {
            "jieba" => Ok(Tokenizer::Jieba),
            "word" => Ok(Tokenizer::Word),
            "char" => Ok(Tokenizer::Char),
            "bigram" => Ok(Tokenizer::Bigram),
            other => Err(OptionError::new("tokenizer", quote(other), Self::ALLOWED.into())),
        }
    }

    /// What joins the tokens of a shingle.
    pub fn shingle_separator(self) -> &'static str {
        match self {
            Tokenizer::Jieba | Tokenizer::Word | Tokenizer::Bigram => " ",
            Tokenizer::Char => "",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Weighting {
    /// Occurrences of the feature.
    Tf,
    /// 1 per distinct feature.
    Binary,
    /// Occurrences times jieba-rs's IDF (median IDF for unknown tokens); `shingle = 1` only.
    TfIdf,
    /// Sublinear term frequency, `1 + ln(tf)` (algorithm v2).
    LogTf,
    /// `(1 + ln(tf)) × IDF` with an IDF for English and Chinese (algorithm v2, [`crate::idf::idf_v2`]);
    /// `shingle = 1` only.
    LogTfIdf,
    /// `'logtf'` whose occurrences near the start or the end of the text weigh less (algorithm v2,
    /// [`crate::weight::edge_factor`]): a header or footer added around a text moves fewer bits.
    LogTfEdge,
}

impl Weighting {
    pub const ALLOWED: &'static str = "'tf', 'binary', 'tfidf', 'logtf', 'logtfidf', 'logtfedge'";

    pub fn parse(name: &str) -> Result<Self, OptionError> {
        match name {
            "tf" => Ok(Weighting::Tf),
            "binary" => Ok(Weighting::Binary),
            "tfidf" => Ok(Weighting::TfIdf),
            "logtf" => Ok(Weighting::LogTf),
            "logtfidf" => Ok(Weighting::LogTfIdf),
            "logtfedge" => Ok(Weighting::LogTfEdge),
            other => Err(OptionError::new("weighting", quote(other), Self::ALLOWED.into())),
        }
    }

    /// Whether the weighting arrived with algorithm v2 (0.3.0); `fold => 'auto'` folds only for these,
    /// so that every option combination of 0.2.0 keeps its fingerprint.
    pub fn is_v2(self) -> bool {
        matches!(
            self,
            Weighting::LogTf | Weighting::LogTfIdf | Weighting::LogTfEdge
        )
    }

    /// Whether the weight of a feature is an IDF of one token, which needs `shingle = 1`.
    fn needs_tokens(self) -> bool {
        matches!(self, Weighting::TfIdf | Weighting::LogTfIdf)
    }

    fn name(self) -> &'static str {
        match self {
            Weighting::Tf => "tf",
            Weighting::Binary => "binary",
            Weighting::TfIdf => "tfidf",
            Weighting::LogTf => "logtf",
            Weighting::LogTfIdf => "logtfidf",
            Weighting::LogTfEdge => "logtfedge",
        }
    }
}

/// Folding of Chinese characters after normalization, before tokenizing (algorithm v2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fold {
    /// Characters are tokenized as they are (every 0.2.0 fingerprint).
    None,
    /// Traditional characters become simplified ones (data/t2s/t2s.txt, from Unihan), so that a
    /// text and its traditional-character conversion share their features.
    Simplified,
}

impl Fold {
    pub const ALLOWED: &'static str = "'none', 'simplified', 'auto'";

    /// `'auto'` is `'simplified'` with the weightings of algorithm v2 and `'none'` with those of
    /// 0.2.0, so that a call naming only 0.2.0's options keeps 0.2.0's fingerprint.
    pub fn parse(name: &str, weighting: Weighting) -> Result<Self, OptionError> {
        match name {
            "none" => Ok(Fold::None),
            "simplified" => Ok(Fold::Simplified),
            "auto" if weighting.is_v2() => Ok(Fold::Simplified),
            "auto" => Ok(Fold::None),
            other => Err(OptionError::new("fold", quote(other), Self::ALLOWED.into())),
        }
    }
}

/// Longest shingle accepted: each feature joins `shingle` tokens, so the cost grows with it.
pub const MAX_SHINGLE: i32 = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    pub tokenizer: Tokenizer,
    pub shingle: usize,
    pub weighting: Weighting,
    pub stopwords: bool,
    pub fold: Fold,
}

impl Default for Options {
    /// The SQL defaults of algorithm v2 (0.3.0): Unicode words with Han runs cut into character
    /// pairs, single tokens, sublinear term frequency `1 + ln(tf)`, stop words dropped, traditional
    /// Chinese folded to simplified. Chosen by bench/studies/spread/spread.py
    /// (bench/studies/spread/accuracy.md): unrelated documents at least 29 bits apart on average in
    /// Chinese and English, at most 0.1 expected false matches per lookup at 1M rows up to distance
    /// 7, and the best recall of small edits there.
    fn default() -> Self {
        Options {
            tokenizer: Tokenizer::Bigram,
            shingle: 1,
            weighting: Weighting::LogTf,
            stopwords: true,
            fold: Fold::Simplified,
        }
    }
}

impl Options {
    /// Parses the four options of 0.2.0 with `fold => 'auto'`: what a call that names no fold gets.
    pub fn parse(
        tokenizer: &str,
        shingle: i32,
        weighting: &str,
        stopwords: bool,
    ) -> Result<Self, OptionError> {
        Self::parse_with_fold(tokenizer, shingle, weighting, stopwords, "auto")
    }

    /// Parses the SQL arguments, naming the first bad option and its allowed values.
    pub fn parse_with_fold(
        tokenizer: &str,
        shingle: i32,
        weighting: &str,
        stopwords: bool,
        fold: &str,
    ) -> Result<Self, OptionError> {
        let tokenizer = Tokenizer::parse(tokenizer)?;
        if !(1..=MAX_SHINGLE).contains(&shingle) {
            return Err(OptionError::new(
                "shingle",
                shingle.to_string(),
                format!("an integer from 1 to {MAX_SHINGLE}"),
            ));
        }
        let weighting = Weighting::parse(weighting)?;
        if weighting.needs_tokens() && shingle != 1 {
            return Err(OptionError::new(
                "weighting",
                format!("'{}' with shingle = {shingle}", weighting.name()),
                "'tfidf' and 'logtfidf' only with shingle = 1; 'tf', 'binary', 'logtf' and 'logtfedge' with any shingle"
                    .into(),
            ));
        }
        let fold = Fold::parse(fold, weighting)?;
        Ok(Options {
            tokenizer,
            shingle: shingle as usize,
            weighting,
            stopwords,
            fold,
        })
    }
}

/// An option value as error messages show it: quoted, cut after 40 characters.
pub(crate) fn quote(s: &str) -> String {
    let shown: String = s.chars().take(40).collect();
    let ellipsis = if shown.len() < s.len() { "..." } else { "" };
    format!("'{shown}{ellipsis}'")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_parse() {
        // What SQL passes when a call names no option.
        assert_eq!(
            Options::parse_with_fold("bigram", 1, "logtf", true, "auto").unwrap(),
            Options::default()
        );
        assert_eq!(
            Options::parse("bigram", 1, "logtf", true).unwrap(),
            Options::default()
        );
        // The 0.2.0 defaults, named explicitly, stay what they were: no folding.
        assert_eq!(
            Options::parse("word", 1, "tf", false).unwrap(),
            Options {
                tokenizer: Tokenizer::Word,
                shingle: 1,
                weighting: Weighting::Tf,
                stopwords: false,
                fold: Fold::None,
            }
        );
    }

    #[test]
    fn each_bad_option_is_named() {
        let e = Options::parse("bpe", 1, "tf", true).unwrap_err();
        assert_eq!((e.option, e.value.as_str()), ("tokenizer", "'bpe'"));
        assert!(e.to_string().contains("'jieba', 'word', 'char', 'bigram'"));
        assert_eq!(
            Options::parse("char", 0, "tf", true).unwrap_err().option,
            "shingle"
        );
        assert_eq!(
            Options::parse("char", 65, "tf", true).unwrap_err().option,
            "shingle"
        );
        assert_eq!(
            Options::parse("char", 1, "bm25", true).unwrap_err().option,
            "weighting"
        );
        assert_eq!(
            Options::parse("word", 2, "tfidf", true).unwrap_err().option,
            "weighting"
        );
        assert!(
            Options::parse("Jieba", 1, "tf", true).is_err(),
            "option values are case-sensitive"
        );
    }

    #[test]
    fn new_option_values_parse_and_bad_ones_are_named() {
        let o = Options::parse_with_fold("word", 1, "logtfidf", true, "simplified").unwrap();
        assert_eq!(
            (o.weighting, o.stopwords, o.fold),
            (Weighting::LogTfIdf, true, Fold::Simplified)
        );
        assert_eq!(
            Options::parse_with_fold("char", 3, "logtf", false, "none")
                .unwrap()
                .weighting,
            Weighting::LogTf
        );
        let e = Options::parse_with_fold("word", 1, "tf", false, "t2s").unwrap_err();
        assert_eq!((e.option, e.value.as_str()), ("fold", "'t2s'"));
        assert!(e.to_string().contains("'none', 'simplified', 'auto'"), "{e}");
        let e = Options::parse_with_fold("word", 2, "logtfidf", false, "none").unwrap_err();
        assert_eq!(e.option, "weighting");
        assert!(e.to_string().contains("'logtfidf' with shingle = 2"), "{e}");
        let e = Options::parse("word", 1, "bm25", false).unwrap_err();
        assert!(e.to_string().contains("'logtf', 'logtfidf', 'logtfedge'"), "{e}");
        let o = Options::parse("bigram", 2, "logtfedge", true).unwrap();
        assert_eq!((o.weighting, o.fold), (Weighting::LogTfEdge, Fold::Simplified));
    }

    #[test]
    fn long_bad_values_are_shortened() {
        let e = Tokenizer::parse(&"x".repeat(1000)).unwrap_err();
        assert!(e.value.len() < 50);
    }
}
