//! jieba-rs's built-in IDF table (docs/ARCHITECTURE.md §2.7), loaded once per process on first use.
//!
//! jieba-rs keeps the table private inside `TfIdf`; its `Debug` output is the only public view of it,
//! so the table is read back from there. jieba-rs is pinned to an exact version, and a test checks the
//! values read against the weights jieba-rs itself computes.

use std::collections::HashMap;
use std::sync::LazyLock;

use crate::tokenize::is_han;

/// The English IDF table of algorithm v2 (`weighting => 'logtfidf'`): see its header and
/// scripts/build_idf_en.py. Part of the fingerprint contract, like the stop-word lists.
const ENGLISH: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../data/idf/en.txt"));

/// English IDF by token, and the IDF given to a token without a Han character that the table lacks.
pub struct EnglishIdf {
    idf: HashMap<&'static str, f64>,
    unknown: f64,
}

static ENGLISH_TABLE: LazyLock<EnglishIdf> = LazyLock::new(|| EnglishIdf::parse(ENGLISH));

impl EnglishIdf {
    pub fn get() -> &'static EnglishIdf {
        &ENGLISH_TABLE
    }

    /// Lines `token TAB idf`; `#` starts a comment line. A malformed line is skipped (the committed
    /// file has none: tested).
    fn parse(text: &'static str) -> EnglishIdf {
        let idf: HashMap<&'static str, f64> = text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| {
                let (token, value) = l.split_once('\t')?;
                Some((token, value.trim().parse().ok()?))
            })
            .collect();
        // A word missing from the table is rarer than every listed one: it gets the largest IDF.
        let unknown = idf.values().copied().fold(1.0, f64::max);
        EnglishIdf { idf, unknown }
    }

    /// The IDF of a token, or the table's largest IDF for a token it lacks.
    pub fn idf(&self, token: &str) -> f64 {
        self.idf.get(token).copied().unwrap_or(self.unknown)
    }

    pub fn unknown(&self) -> f64 {
        self.unknown
    }

    pub fn len(&self) -> usize {
        self.idf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.idf.is_empty()
    }
}

/// The IDF of algorithm v2: a token with a Han character takes jieba-rs's IDF (its median when
/// jieba lacks it); any other token takes the English table's IDF (its largest when it lacks it).
pub fn idf_v2(token: &str) -> f64 {
    if token.chars().any(is_han) {
        IdfTable::get().idf(token)
    } else {
        EnglishIdf::get().idf(token)
    }
}

pub struct IdfTable {
    idf: HashMap<String, f64>,
    median: f64,
}

static TABLE: LazyLock<IdfTable> = LazyLock::new(|| {
    let dump = format!("{:?}", jieba_rs::TfIdf::default());
    IdfTable::from_debug(&dump).unwrap_or_else(|| IdfTable {
        // Unreachable with the pinned jieba-rs (tested); an empty table still gives a fingerprint.
        idf: HashMap::new(),
        median: 1.0,
    })
});

impl IdfTable {
    pub fn get() -> &'static IdfTable {
        &TABLE
    }

    /// IDF of a token; the table's median for a token it lacks.
    pub fn idf(&self, token: &str) -> f64 {
        self.idf.get(token).copied().unwrap_or(self.median)
    }

    pub fn median(&self) -> f64 {
        self.median
    }

    pub fn len(&self) -> usize {
        self.idf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.idf.is_empty()
    }

    /// Parses `TfIdf { idf_dict: {"w": 1.5, ...}, median_idf: 1.2, config: ... }`.
    fn from_debug(dump: &str) -> Option<IdfTable> {
        let mut rest = dump.split_once("idf_dict: {")?.1;
        let mut idf = HashMap::new();
        loop {
            rest = rest.trim_start_matches([',', ' ']);
            if let Some(after) = rest.strip_prefix('}') {
                rest = after;
                break;
            }
            let (word, after) = parse_debug_string(rest)?;
            let after = after.strip_prefix(": ")?;
            let end = after.find([',', '}'])?;
            idf.insert(word, after[..end].parse().ok()?);
            rest = &after[end..];
        }
        let after = rest.split_once("median_idf: ")?.1;
        let end = after.find([',', ' ', '}'])?;
        let median = after[..end].parse().ok()?;
        Some(IdfTable { idf, median })
    }
}

/// Reads one Rust `Debug`-quoted string at the start of `s`; returns it and what follows.
fn parse_debug_string(s: &str) -> Option<(String, &str)> {
    let mut chars = s.strip_prefix('"')?.char_indices();
    let body = &s[1..];
    let mut out = String::new();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((out, &body[i + 1..])),
            '\\' => {
                let (_, e) = chars.next()?;
                match e {
                    'n' => out.push('\n'),
                    'r' => out.push('\r'),
                    't' => out.push('\t'),
                    '0' => out.push('\0'),
                    'u' => {
                        let (open, _) = chars.next()?;
                        let close = body[open..].find('}')? + open;
                        let code = u32::from_str_radix(&body[open + 1..close], 16).ok()?;
                        out.push(char::from_u32(code)?);
                        while chars.next()?.0 < close {}
                    }
                    other => out.push(other),
                }
            }
            other => out.push(other),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use jieba_rs::{Jieba, KeywordExtract, KeywordExtractConfig, TfIdf};

    #[test]
    fn debug_strings_round_trip() {
        for s in ["plain", "引号\"与\\反斜杠", "tab\tnew\nline\r", "\u{200b}\u{7f}"] {
            let dumped = format!("{s:?}, rest");
            let (parsed, rest) = parse_debug_string(&dumped).unwrap();
            assert_eq!(parsed, s);
            assert_eq!(rest, ", rest");
        }
    }

    #[test]
    fn table_matches_jieba_keyword_weights() {
        let table = IdfTable::get();
        assert!(
            table.len() > 100_000,
            "IDF table has only {} entries",
            table.len()
        );
        let jieba = Jieba::new();
        let mut tfidf = TfIdf::default();
        *tfidf.config_mut() = KeywordExtractConfig::builder().min_keyword_length(1).build();
        // A one-word sentence has tf = total = 1, so jieba's keyword weight is the IDF itself.
        let mut checked = 0;
        for word in ["劳动", "新闻", "天气", "电视", "谢谢侬不存在的词"] {
            let top = tfidf.extract_keywords(&jieba, word, 1, vec![]);
            if top.len() == 1 && top[0].keyword == word {
                assert_eq!(table.idf(word), top[0].weight, "{word}");
                checked += 1;
            }
        }
        assert!(checked >= 4, "only {checked} words could be compared");
        assert!(table.idf("新闻") > 0.0);
        assert_eq!(table.idf("xyzzy-not-a-word"), table.median());
    }

    #[test]
    fn english_table_reads_every_line() {
        let data_lines = ENGLISH.lines().filter(|l| !l.starts_with('#')).count();
        let table = EnglishIdf::get();
        assert_eq!(table.len(), data_lines, "a line of data/idf/en.txt did not parse");
        assert!(table.len() > 5_000);
        // Frequent words are damped, rare ones are not.
        assert!(table.idf("the") < 0.5, "{}", table.idf("the"));
        assert!(table.idf("of") < table.idf("function"));
        assert!(table.idf("function") < table.idf("socket"));
        assert_eq!(table.idf("xyzzyplugh"), table.unknown());
        assert!(table.unknown() >= table.idf("socket"));
    }

    #[test]
    fn v2_idf_picks_the_table_by_script() {
        assert_eq!(idf_v2("the"), EnglishIdf::get().idf("the"));
        assert_eq!(idf_v2("新闻"), IdfTable::get().idf("新闻"));
        assert_eq!(idf_v2("新闻x"), IdfTable::get().median());
        assert_eq!(idf_v2("3.14"), EnglishIdf::get().idf("3.14"));
    }
}
