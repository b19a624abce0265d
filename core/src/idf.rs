//! jieba-rs's built-in IDF table (SPEC §2 step 5), loaded once per process on first use.
//!
//! jieba-rs keeps the table private inside `TfIdf`; its `Debug` output is the only public view of it,
//! so the table is read back from there. jieba-rs is pinned to an exact version, and a test checks the
//! values read against the weights jieba-rs itself computes.

use std::collections::HashMap;
use std::sync::LazyLock;

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
}
