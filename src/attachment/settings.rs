//! An attachment's settings: each method's (SimHash, MinHash), the mode, the text options, and the
//! settings `simhash_attach()` was given with their checks.

use pgrx::prelude::*;
use simhash_core::minhash::{Lsh, MinHashOptions};
use simhash_core::Options;

use crate::errors::EncodedError;

/// The largest `max_distance` of an attachment and of a dedup (`simhash_attach`,
/// `simhash_pairs`, `simhash_clusters`, `simhash_registry_buckets`): four 16-bit bands find every
/// row within it exactly. A lookup may look farther (up to 64, checked by its probe plan).
pub const MAX_DISTANCE: u32 = simhash_core::pairs::MAX_PAIR_DISTANCE;

/// The error of a bad value of a setting (SQLSTATE 22023).
pub fn invalid_value(message: String) -> EncodedError {
    EncodedError {
        code: PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
        message,
        detail: None,
        hint: None,
    }
}

/// `max_distance` as an attachment or a dedup takes it: from 0 to [`MAX_DISTANCE`].
pub fn valid_max_distance(k: i32) -> Result<u32, EncodedError> {
    if (0..=MAX_DISTANCE as i32).contains(&k) {
        Ok(k as u32)
    } else {
        Err(invalid_value(format!(
            "invalid value for option \"max_distance\": {k}; allowed: an integer from 0 to {MAX_DISTANCE}"
        )))
    }
}

/// A MinHash threshold as an attachment, a lookup or a dedup takes it: from 0 to 1.
pub fn valid_threshold(t: f64) -> Result<f64, EncodedError> {
    if THRESHOLDS.contains(&t) {
        Ok(t)
    } else {
        Err(invalid_value(format!(
            "invalid value for option \"threshold\": {t}; allowed: a number from 0 to 1"
        )))
    }
}

/// `max_distance` as a dedup takes it, or SQLSTATE 22023 raised as PostgreSQL's own error (in a
/// `#[pg_extern]`, inside `Spi::connect` as outside).
pub fn check_max_distance(k: i32) -> u32 {
    valid_max_distance(k).unwrap_or_else(|e| ereport_now(e))
}

/// Raises `e` at once as a PostgreSQL error (where pgrx re-raises it as it is, e.g. inside
/// `Spi::connect`), not through [`crate::errors::guard`].
pub fn ereport_now(e: EncodedError) -> ! {
    ereport!(ERROR, e.code, e.message);
}

/// What the trigger does with a near-duplicate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Only maintain the fingerprint.
    None,
    /// Reject the write with SQLSTATE 23505.
    Error,
    /// Drop the row silently.
    Skip,
    /// Keep the row and record the existing row's key.
    Flag,
}

impl Mode {
    const NAMES: [(Mode, &'static str); 4] = [
        (Mode::None, "none"),
        (Mode::Error, "error"),
        (Mode::Skip, "skip"),
        (Mode::Flag, "flag"),
    ];

    pub fn parse(s: &str) -> Option<Mode> {
        Self::NAMES
            .iter()
            .find(|(_, name)| *name == s)
            .map(|(mode, _)| *mode)
    }

    /// The name `on_duplicate` takes.
    pub fn name(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(mode, _)| *mode == self)
            .map_or("none", |(_, name)| name)
    }
}

/// The fingerprint options of an attachment as its trigger's arguments spell them (`fold` 'auto'
/// stays 'auto': what it means depends on the weighting).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionNames {
    pub tokenizer: String,
    pub shingle: i32,
    pub weighting: String,
    pub stopwords: bool,
    pub fold: String,
}

impl OptionNames {
    /// The options, or the first bad one (SQLSTATE 22023 when raised).
    pub fn parse(&self) -> Result<Options, simhash_core::OptionError> {
        Options::parse_with_fold(
            &self.tokenizer,
            self.shingle,
            &self.weighting,
            self.stopwords,
            &self.fold,
        )
    }
}

/// The text options `simhash_attach()` was given; None takes the method's default.
#[derive(Debug, Clone, Default)]
pub struct GivenOptions {
    pub tokenizer: Option<String>,
    pub shingle: Option<i32>,
    pub weighting: Option<String>,
    pub stopwords: Option<bool>,
    pub fold: Option<String>,
}

impl GivenOptions {
    /// The option names with the method's defaults filled in: SimHash's `'bigram'`, 1, `'logtf'`,
    /// stop words dropped; MinHash's `'word'`, shingles per script, no weighting (stored as ''),
    /// stop words kept; `fold` `'auto'` for both.
    pub(super) fn resolve(self, minhash: bool) -> OptionNames {
        let (tokenizer, shingle, weighting, stopwords) = if minhash {
            ("word", 0, "", false)
        } else {
            ("bigram", 1, "logtf", true)
        };
        OptionNames {
            tokenizer: self.tokenizer.unwrap_or_else(|| tokenizer.into()),
            shingle: self.shingle.unwrap_or(shingle),
            weighting: self.weighting.unwrap_or_else(|| weighting.into()),
            stopwords: self.stopwords.unwrap_or(stopwords),
            fold: self.fold.unwrap_or_else(|| "auto".into()),
        }
    }
}

/// How an attachment finds near-duplicates (docs/ARCHITECTURE.md §6.2, §15): each method with
/// its own settings; `crate::method` has each one's engine.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Method {
    /// 64-bit fingerprints within `max_distance` bits, found through four 16-bit band indexes.
    SimHash(SimHashSettings),
    /// MinHash signatures that share an LSH band and whose estimated similarity reaches the
    /// threshold, found through one GIN index over the band keys.
    MinHash(MinHashSettings),
}

impl Method {
    /// The type of the column that stores a text's value (fingerprint or signature), and its name.
    /// What the method stores for a text, in words.
    pub fn value_name(&self) -> &'static str {
        match self {
            Method::SimHash(_) => "fingerprint",
            Method::MinHash(_) => "signature",
        }
    }

    pub fn stored_type(&self) -> (pg_sys::Oid, &'static str) {
        match self {
            Method::SimHash(_) => (pg_sys::INT8OID, "bigint"),
            Method::MinHash(_) => (pg_sys::BYTEAOID, "bytea"),
        }
    }
}

/// What a SimHash attachment stores and compares.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimHashSettings {
    /// The band columns (four since 0.3.0; older attachments have from 3 to 64).
    pub nbands: i32,
    /// The largest Hamming distance of a near-duplicate.
    pub max_distance: i32,
    pub options: Options,
    /// The least verified similarity of a near-duplicate (when the attachment verifies): the exact
    /// Jaccard similarity of the two texts' shingles (`simhash_core::verify`).
    pub threshold: f64,
}

/// What a MinHash attachment stores and compares.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MinHashSettings {
    pub options: MinHashOptions,
    pub lsh: Lsh,
    /// The least similarity of a near-duplicate, from 0 to 1: the exact similarity of the texts
    /// when the attachment verifies, else the estimate of the signatures.
    pub threshold: f64,
}

impl Method {
    /// The least similarity of a near-duplicate that the method verifies against (SimHash: only
    /// with verification).
    pub fn threshold(&self) -> f64 {
        match self {
            Method::SimHash(s) => s.threshold,
            Method::MinHash(m) => m.threshold,
        }
    }

    /// The shingle options a candidate is verified with (`simhash_core::verify`): a MinHash
    /// attachment's own, a SimHash attachment's [`simhash_core::verify::for_simhash`].
    pub fn verify_options(&self) -> MinHashOptions {
        match self {
            Method::SimHash(s) => simhash_core::verify::for_simhash(&s.options),
            Method::MinHash(m) => m.options,
        }
    }
}

impl MinHashSettings {
    /// The method argument: `minhash:<k>:<bands>:<rows>`.
    pub(super) fn method_arg(&self) -> String {
        format!("minhash:{}:{}:{}", self.options.k, self.lsh.bands, self.lsh.rows)
    }

    /// The settings a method argument, the option names and a threshold record.
    pub(super) fn from_arg(method: &str, names: &OptionNames, threshold: &str) -> Option<MinHashSettings> {
        let mut parts = method.strip_prefix("minhash:")?.split(':');
        let mut next = || parts.next().and_then(|p| p.parse::<i32>().ok());
        let (k, bands, rows) = (next()?, next()?, next()?);
        let options =
            MinHashOptions::parse(&names.tokenizer, names.shingle, names.stopwords, &names.fold, k).ok()?;
        Some(MinHashSettings {
            options,
            lsh: Lsh::parse(bands, rows, options.k).ok()?,
            threshold: valid_threshold(threshold.parse().ok()?).ok()?,
        })
    }
}

/// The thresholds a MinHash attachment takes.
const THRESHOLDS: std::ops::RangeInclusive<f64> = 0.0..=1.0;

/// The method names `simhash_attach()` takes.
pub const METHODS: [&str; 2] = ["simhash", "minhash"];

/// One attached text column, decoded from its trigger's arguments.
#[derive(Debug, Clone)]
pub struct Attachment {
    pub text_column: String,
    pub mode: Mode,
    /// The text options as given (with the method's defaults): what the arguments record.
    pub option_names: OptionNames,
    /// Duplicates are looked for only among rows with the same value of this column.
    pub scope_column: Option<String>,
    /// A distributed table whose writes are checked by its registry on the coordinator.
    pub registry: bool,
    /// Texts of fewer characters are fingerprinted but never rejected, skipped or flagged (0: every
    /// text is checked).
    pub min_length: i32,
    pub method: Method,
    /// Candidates are verified against their texts (issue 43): a near-duplicate is one whose exact
    /// similarity reaches the method's threshold. Attachments made before 0.11.0 do not.
    pub verify: bool,
}

/// Every band index serves every distance up to [`MAX_DISTANCE`]: the attachments made since
/// 0.3.0 have four 16-bit bands (older ones may have from 3 to 64).
pub const NBANDS: i32 = 4;

/// The settings `simhash_attach()` was given for a new attachment (None: the method's default).
pub struct Given<'a> {
    pub method: Option<&'a str>,
    pub max_distance: Option<i32>,
    pub threshold: Option<f64>,
    pub on_duplicate: Option<&'a str>,
    pub options: GivenOptions,
    pub scope_column: Option<&'a str>,
    pub registry: bool,
    pub min_length: Option<i32>,
    /// None: verify, except with a registry (which cannot).
    pub verify: Option<bool>,
}

/// The error of an option given to a method it does not apply to.
fn not_for(option: &str, method: &str, instead: &str) -> EncodedError {
    EncodedError {
        hint: Some(format!("With method => '{method}', {instead}.")),
        ..invalid_value(format!("option \"{option}\" does not apply to method '{method}'"))
    }
}

impl Given<'_> {
    /// Whether the method named is MinHash, or the error naming a method that is not one.
    pub(super) fn is_minhash(&self) -> Result<bool, EncodedError> {
        match self.method.unwrap_or("simhash") {
            "simhash" => Ok(false),
            "minhash" => Ok(true),
            other => Err(invalid_value(format!(
                "invalid value for option \"method\": '{}'; allowed: {}",
                other.replace('\'', "''"),
                METHODS.map(|m| format!("'{m}'")).join(", ")
            ))),
        }
    }

    /// Refuses the settings of the other method: `max_distance` and `weighting` for MinHash,
    /// `threshold` for SimHash.
    pub(super) fn refuse_other_method(&self, minhash: bool) -> Result<(), EncodedError> {
        if minhash && self.max_distance.is_some() {
            return Err(not_for(
                "max_distance",
                "minhash",
                "set the least similarity with threshold",
            ));
        }
        if !minhash && self.threshold.is_some() && !self.verifies() {
            return Err(EncodedError {
                hint: Some(
                    "With method => 'simhash', threshold is the least verified similarity: leave verify true, or set the largest Hamming distance with max_distance."
                        .into(),
                ),
                ..invalid_value("option \"threshold\" of method 'simhash' needs verify => true".into())
            });
        }
        if minhash && self.options.weighting.is_some() {
            return Err(not_for("weighting", "minhash", "every shingle counts once"));
        }
        Ok(())
    }

    /// Whether candidates are verified: as asked, by default unless a registry checks the writes.
    pub(super) fn verifies(&self) -> bool {
        self.verify.unwrap_or(!self.registry)
    }

    /// The mode `on_duplicate` names.
    pub(super) fn mode(&self) -> Result<Mode, EncodedError> {
        self.on_duplicate.and_then(Mode::parse).ok_or_else(|| {
            let allowed: Vec<String> = Mode::NAMES.iter().map(|(_, name)| format!("'{name}'")).collect();
            invalid_value(format!(
                "invalid value for option \"on_duplicate\": {}; allowed: {}",
                self.on_duplicate
                    .map_or("NULL".into(), |m| format!("'{}'", m.replace('\'', "''"))),
                allowed.join(", ")
            ))
        })
    }

    /// The method with its settings, from the text options with the method's defaults.
    pub(super) fn method(
        &self,
        minhash: bool,
        names: &OptionNames,
        threshold: f64,
    ) -> Result<Method, EncodedError> {
        let invalid = |e: simhash_core::OptionError| invalid_value(e.to_string());
        if !minhash {
            return Ok(Method::SimHash(SimHashSettings {
                nbands: NBANDS,
                max_distance: self.max_distance.unwrap_or(DEFAULT_MAX_DISTANCE),
                options: names.parse().map_err(invalid)?,
                threshold,
            }));
        }
        let options = MinHashOptions::parse(
            &names.tokenizer,
            names.shingle,
            names.stopwords,
            &names.fold,
            simhash_core::minhash::DEFAULT_K as i32,
        )
        .map_err(invalid)?;
        Ok(Method::MinHash(MinHashSettings {
            options,
            lsh: Lsh::default(),
            threshold,
        }))
    }

    /// `min_length`: 0 (every text is checked) or more.
    pub(super) fn min_length(&self) -> Result<i32, EncodedError> {
        self.min_length.filter(|n| *n >= 0).ok_or_else(|| {
            invalid_value(format!(
                "invalid value for option \"min_length\": {}; allowed: an integer from 0 (every text is checked) up",
                self.min_length.map_or("NULL".into(), |n| n.to_string())
            ))
        })
    }
}

/// The `max_distance` of a SimHash attachment made without one.
pub(super) const DEFAULT_MAX_DISTANCE: i32 = 7;
