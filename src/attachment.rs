//! The attachment: one text column of a table that `simhash_attach()` set up, as its trigger's
//! arguments record it. Every module reads it through [`Attachment`]: the trigger, lookups, dedup,
//! partitions and Citus. The arguments are, in order: text column, nbands, max_distance, mode,
//! tokenizer, shingle, weighting, stopwords; since 0.3.0 fold (a trigger made before has 8 arguments
//! and means fold 'auto'); then, as far as needed, the scope column ('' for none), 'registry' for a
//! distributed table checked through its registry ('' for none), since 0.4.0 `min_length`, and
//! since 0.5.0 the method (absent: SimHash; `minhash:<k>:<bands>:<rows>` and the threshold for
//! MinHash, whose attachments leave `max_distance` 0 and the weighting empty).
//! [`Attachment::to_args`] is the one
//! encoder and [`Attachment::from_args`] the one decoder; the PL/pgSQL of `sql/src/` reaches both
//! through `src/api/internal.rs` (docs/ARCHITECTURE.md §6.2). Adding a setting touches this type, its
//! two codecs and the code that uses the new value.

use pgrx::prelude::*;
use simhash_core::minhash::{Lsh, MinHashOptions};
use simhash_core::Options;

use crate::catalog::{cstr_utf8, is_extension_function, partition_ancestors, qualified_name};
use crate::errors::{raise, EncodedError};
use crate::text::utf8_to_server;

/// The largest `max_distance` of an attachment and of a dedup (`simhash_attach`,
/// `simhash_pairs`, `simhash_clusters`, `simhash_registry_buckets`): four 16-bit bands find every
/// row within it exactly. A lookup may look farther (up to 64, checked by its probe plan).
pub const MAX_DISTANCE: u32 = simhash_core::pairs::MAX_PAIR_DISTANCE;

/// The largest `max_distance` a trigger's arguments may hold: 0.1.0 and 0.2.0 attached up to 63.
const STORED_MAX_DISTANCE: i32 = 63;

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
    fn resolve(self, minhash: bool) -> OptionNames {
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

/// How an attachment finds near-duplicates (docs/ARCHITECTURE.md §6.11, §15): each method with
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
}

/// What a MinHash attachment stores and compares.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MinHashSettings {
    pub options: MinHashOptions,
    pub lsh: Lsh,
    /// The least estimated similarity of a near-duplicate, from 0 to 1.
    pub threshold: f64,
}

impl MinHashSettings {
    /// The method argument: `minhash:<k>:<bands>:<rows>`.
    fn method_arg(&self) -> String {
        format!("minhash:{}:{}:{}", self.options.k, self.lsh.bands, self.lsh.rows)
    }

    /// The settings a method argument, the option names and a threshold record.
    fn from_arg(method: &str, names: &OptionNames, threshold: &str) -> Option<MinHashSettings> {
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
}

/// Every band index serves every distance up to [`MAX_DISTANCE`]: the attachments made since
/// 0.3.0 have four 16-bit bands (older ones may have from 3 to 64).
pub const NBANDS: i32 = 4;

/// The longest name PostgreSQL keeps (NAMEDATALEN - 1 bytes).
const MAX_NAME_BYTES: usize = 63;

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
    fn is_minhash(&self) -> Result<bool, EncodedError> {
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
    fn refuse_other_method(&self, minhash: bool) -> Result<(), EncodedError> {
        if minhash && self.max_distance.is_some() {
            return Err(not_for(
                "max_distance",
                "minhash",
                "set the least similarity with threshold",
            ));
        }
        if !minhash && self.threshold.is_some() {
            return Err(not_for(
                "threshold",
                "simhash",
                "set the largest Hamming distance with max_distance",
            ));
        }
        if minhash && self.options.weighting.is_some() {
            return Err(not_for("weighting", "minhash", "every shingle counts once"));
        }
        Ok(())
    }

    /// The mode `on_duplicate` names.
    fn mode(&self) -> Result<Mode, EncodedError> {
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
    fn method(&self, minhash: bool, names: &OptionNames, threshold: f64) -> Result<Method, EncodedError> {
        let invalid = |e: simhash_core::OptionError| invalid_value(e.to_string());
        if !minhash {
            return Ok(Method::SimHash(SimHashSettings {
                nbands: NBANDS,
                max_distance: self.max_distance.unwrap_or(DEFAULT_MAX_DISTANCE),
                options: names.parse().map_err(invalid)?,
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
    fn min_length(&self) -> Result<i32, EncodedError> {
        self.min_length.filter(|n| *n >= 0).ok_or_else(|| {
            invalid_value(format!(
                "invalid value for option \"min_length\": {}; allowed: an integer from 0 (every text is checked) up",
                self.min_length.map_or("NULL".into(), |n| n.to_string())
            ))
        })
    }
}

/// The `max_distance` of a SimHash attachment made without one.
const DEFAULT_MAX_DISTANCE: i32 = 7;

impl Attachment {
    /// A new attachment of `text_column` with the settings `simhash_attach()` was given, or the
    /// error that names the first bad one, in the order attach checks them: the method,
    /// `max_distance` or `threshold`, `on_duplicate`, the text options, `min_length`, a registry of
    /// MinHash, then the length of the derived names.
    pub fn new(text_column: &str, given: Given) -> Result<Attachment, EncodedError> {
        let minhash = given.is_minhash()?;
        given.refuse_other_method(minhash)?;
        if let Some(k) = given.max_distance {
            valid_max_distance(k)?;
        }
        let threshold = given
            .threshold
            .unwrap_or(simhash_core::minhash::DEFAULT_THRESHOLD);
        if minhash {
            valid_threshold(threshold)?;
        }
        let mode = given.mode()?;
        let option_names = given.options.clone().resolve(minhash);
        let method = given.method(minhash, &option_names, threshold)?;
        let min_length = given.min_length()?;
        if minhash && given.registry {
            return Err(EncodedError {
                code: PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
                message: "simhash_attach: registry => true is not supported with method => 'minhash'".into(),
                detail: None,
                hint: Some(
                    "Attach the distributed table with scope => its distribution column, or use method => 'simhash'."
                        .into(),
                ),
            });
        }
        let att = Attachment {
            text_column: text_column.to_string(),
            mode,
            option_names,
            scope_column: given.scope_column.filter(|_| !given.registry).map(str::to_string),
            registry: given.registry,
            min_length,
            method,
        };
        att.check_name_lengths()?;
        Ok(att)
    }

    /// Refuses a text column whose derived column names would be longer than PostgreSQL keeps.
    fn check_name_lengths(&self) -> Result<(), EncodedError> {
        let longest = self
            .all_derived_columns()
            .into_iter()
            .map(|c| utf8_to_server(&c).len())
            .max();
        if longest.unwrap_or(0) > MAX_NAME_BYTES {
            return Err(EncodedError {
                code: PgSqlErrorCode::ERRCODE_NAME_TOO_LONG,
                message: format!(
                    "simhash_attach: column name \"{}\" is too long to derive column names from",
                    self.text_column
                ),
                detail: None,
                hint: None,
            });
        }
        Ok(())
    }

    /// An attachment of `text_column` with `simhash_attach()`'s defaults: what the names derived
    /// from a text column are read from.
    pub fn named(text_column: &str) -> Attachment {
        let option_names = GivenOptions::default().resolve(false);
        Attachment {
            text_column: text_column.to_string(),
            mode: Mode::None,
            method: Method::SimHash(SimHashSettings {
                nbands: NBANDS,
                max_distance: DEFAULT_MAX_DISTANCE,
                options: option_names.parse().expect("the default options are valid"),
            }),
            option_names,
            scope_column: None,
            registry: false,
            min_length: 0,
        }
    }

    /// The settings of a SimHash attachment.
    pub fn simhash(&self) -> Option<&SimHashSettings> {
        match &self.method {
            Method::SimHash(settings) => Some(settings),
            Method::MinHash(_) => None,
        }
    }

    /// The settings of a SimHash attachment, for code that serves SimHash only (`what`: the band
    /// indexes, the per-statement check), which the methods' dispatch never sends a MinHash one to:
    /// that would be a bug, reported as an internal error (XX000).
    pub fn simhash_only(&self, what: &str) -> &SimHashSettings {
        self.simhash().unwrap_or_else(|| {
            raise(EncodedError {
                code: PgSqlErrorCode::ERRCODE_INTERNAL_ERROR,
                message: format!(
                    "simhash_ext: {what} reached with the MinHash column \"{}\"",
                    self.text_column
                ),
                detail: None,
                hint: None,
            })
        })
    }

    /// The settings of a MinHash attachment.
    pub fn minhash(&self) -> Option<&MinHashSettings> {
        match &self.method {
            Method::MinHash(settings) => Some(settings),
            Method::SimHash(_) => None,
        }
    }

    /// The method's name, as `simhash_attach()` takes it.
    pub fn method_name(&self) -> &'static str {
        match self.method {
            Method::SimHash(_) => METHODS[0],
            Method::MinHash(_) => METHODS[1],
        }
    }

    /// The trigger arguments that record this attachment (what [`Attachment::from_args`] reads).
    /// A MinHash attachment records SimHash's band count and `max_distance` 0 in their places.
    pub fn to_args(&self) -> Vec<String> {
        let o = &self.option_names;
        let (nbands, max_distance) = self.simhash().map_or((NBANDS, 0), |s| (s.nbands, s.max_distance));
        let mut args = vec![
            self.text_column.clone(),
            nbands.to_string(),
            max_distance.to_string(),
            self.mode.name().to_string(),
            o.tokenizer.clone(),
            o.shingle.to_string(),
            o.weighting.clone(),
            o.stopwords.to_string(),
            o.fold.clone(),
        ];
        // Trailing arguments only as far as they are needed: scope ('' for none), 'registry' (or
        // ''), min_length; so an attachment without them has the arguments of 0.3.0.
        let scope = self.scope_column.clone().unwrap_or_default();
        let registry = if self.registry { "registry" } else { "" };
        if let Some(m) = self.minhash() {
            args.extend([
                scope,
                registry.into(),
                self.min_length.to_string(),
                m.method_arg(),
            ]);
            args.push(m.threshold.to_string());
        } else if self.min_length > 0 {
            args.extend([scope, registry.into(), self.min_length.to_string()]);
        } else if self.registry {
            args.extend([scope, registry.into()]);
        } else if self.scope_column.is_some() {
            args.push(scope);
        }
        args
    }

    /// Whether `text` is too short to be checked (fewer than `min_length` characters).
    pub fn is_short(&self, text: &str) -> bool {
        self.min_length > 0 && text.chars().nth(self.min_length as usize - 1).is_none()
    }

    /// The attachment a trigger's arguments record, or None when they are not a simhash_trigger()'s.
    pub fn from_args(args: &[String]) -> Option<Attachment> {
        let [text_column, nbands, max_distance, mode, tokenizer, shingle, weighting, stopwords, rest @ ..] =
            args
        else {
            return None;
        };
        let (fold, scope, registry, min_length, method) = match rest {
            [] => ("auto", "", false, "0", None),
            [f] => (f.as_str(), "", false, "0", None),
            [f, sc] => (f.as_str(), sc.as_str(), false, "0", None),
            [f, sc, r] if r == "registry" => (f.as_str(), sc.as_str(), true, "0", None),
            [f, sc, r, n] if r == "registry" || r.is_empty() => {
                (f.as_str(), sc.as_str(), !r.is_empty(), n.as_str(), None)
            }
            [f, sc, r, n, m, t] if r.is_empty() => (f.as_str(), sc.as_str(), false, n.as_str(), Some((m, t))),
            _ => return None,
        };
        let option_names = OptionNames {
            tokenizer: tokenizer.clone(),
            shingle: shingle.parse().ok()?,
            weighting: weighting.clone(),
            stopwords: stopwords == "true",
            fold: fold.to_string(),
        };
        // Both methods' arguments hold a valid band count and max_distance (MinHash: 4 and 0).
        let nbands = nbands.parse().ok().filter(|n| (3..=64).contains(n))?;
        let max_distance = max_distance
            .parse()
            .ok()
            .filter(|k| (0..=STORED_MAX_DISTANCE).contains(k))?;
        let method = match method {
            None => Method::SimHash(SimHashSettings {
                nbands,
                max_distance,
                options: option_names.parse().ok()?,
            }),
            Some((m, t)) => Method::MinHash(MinHashSettings::from_arg(m, &option_names, t)?),
        };
        Some(Attachment {
            text_column: text_column.clone(),
            mode: Mode::parse(mode)?,
            option_names,
            scope_column: (!scope.is_empty()).then(|| scope.to_string()),
            registry,
            min_length: min_length.parse().ok().filter(|n| *n >= 0)?,
            method,
        })
    }

    /// The attachment `trigger` records, if its arguments are a simhash_trigger()'s.
    ///
    /// # Safety
    /// `trigger` must come from a relation's trigger descriptor.
    pub unsafe fn from_trigger(trigger: &pg_sys::Trigger) -> Option<Attachment> {
        let args: Vec<String> = (0..trigger.tgnargs as usize)
            .map(|i| cstr_utf8(*trigger.tgargs.add(i)))
            .collect();
        Attachment::from_args(&args)
    }

    /// The column of the stored fingerprint (`bigint`) or MinHash signature (`bytea`).
    pub fn fingerprint_column(&self) -> String {
        let suffix = if self.minhash().is_some() {
            "minhash"
        } else {
            "simhash"
        };
        format!("{}_{suffix}", self.text_column)
    }

    /// A SimHash attachment's band column `band`.
    pub fn band_column(&self, band: i32) -> String {
        format!("{}_band{band}", self.text_column)
    }

    /// The indexed columns generated from the fingerprint: SimHash's band columns, or MinHash's
    /// one array of LSH band keys.
    pub fn band_columns(&self) -> Vec<String> {
        match &self.method {
            Method::MinHash(_) => vec![format!("{}_lsh", self.text_column)],
            Method::SimHash(s) => (0..s.nbands).map(|band| self.band_column(band)).collect(),
        }
    }

    pub fn flag_column(&self) -> String {
        format!("{}_duplicate_of", self.text_column)
    }

    /// The fingerprint the registry checked, written by the coordinator with the row.
    pub fn registered_column(&self) -> String {
        format!("{}_registered", self.text_column)
    }

    /// The columns `simhash_attach()` added for this attachment: the fingerprint, the bands, the flag
    /// column in `'flag'` mode and the registered fingerprint of a registry attachment.
    pub fn derived_columns(&self) -> Vec<String> {
        self.columns(self.mode == Mode::Flag, self.registry)
    }

    /// Every column an attachment of this text column can add, whatever its mode.
    fn all_derived_columns(&self) -> Vec<String> {
        self.columns(true, true)
    }

    /// The fingerprint and band columns, then the flag and registered columns when asked for.
    fn columns(&self, flag: bool, registered: bool) -> Vec<String> {
        let mut columns = vec![self.fingerprint_column()];
        columns.extend(self.band_columns());
        columns.extend(flag.then(|| self.flag_column()));
        columns.extend(registered.then(|| self.registered_column()));
        columns
    }

    /// The name of the BEFORE trigger that records the attachment.
    pub fn trigger_name(&self) -> String {
        format!("simhash_{}", self.text_column)
    }

    /// The name of the statement-end check trigger of `'error'` mode (src/write/deferred.rs).
    pub fn check_trigger_name(&self) -> String {
        format!("simhash_{}$chk", self.text_column)
    }

    /// The CHECK constraint that ties the band columns to the fingerprint where the trigger keeps
    /// them (an online attach, src/online.rs): NOT VALID while that attach has not finished.
    pub fn bands_constraint_name(&self) -> String {
        format!("{}$bands", self.trigger_name())
    }

    /// Whether an online attach of this column of `rel` has not finished (running, cancelled or
    /// crashed): its bands constraint on `rel` or on a partitioned table `rel` is a partition of is
    /// there and not yet validated (a partition made during the attach has its own, valid: it was
    /// empty). Read from the relcache.
    ///
    /// # Safety
    /// `rel` must be an open relation.
    pub unsafe fn is_attaching(&self, rel: pg_sys::Relation) -> bool {
        let name = self.bands_constraint_name();
        let not_valid = |rel: pg_sys::Relation| {
            let constr = (*(*rel).rd_att).constr;
            !constr.is_null()
                && (*constr).num_check > 0
                && std::slice::from_raw_parts((*constr).check, (*constr).num_check as usize)
                    .iter()
                    .any(|c| !c.ccvalid && cstr_utf8(c.ccname) == name)
        };
        if not_valid(rel) {
            return true;
        }
        if !(*(*rel).rd_rel).relispartition {
            return false;
        }
        partition_ancestors((*rel).rd_id).into_iter().any(|ancestor| {
            let parent = pg_sys::relation_open(ancestor, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
            let attaching = not_valid(parent);
            pg_sys::relation_close(parent, pg_sys::NoLock as pg_sys::LOCKMODE);
            attaching
        })
    }

    /// The view that writes to a registry attachment of `table` (unquoted) go through.
    pub fn checked_view(&self, table: &str) -> String {
        format!("{table}_{}_checked", self.text_column)
    }

    /// The table of a registry attachment of `table` (unquoted) that is colocated with it and holds
    /// one row per shard, through which the registry's check searches each shard
    /// (`sql/src/registry.sql`).
    pub fn shards_table(&self, table: &str) -> String {
        format!("{table}_{}_shards", self.text_column)
    }

    /// The registry table of a registry attachment of `table` (unquoted), before 0.6.0.
    pub fn registry_table(&self, table: &str) -> String {
        format!("{table}_{}_registry", self.text_column)
    }

    /// The registry's lock rows of a registry attachment of `table` (unquoted), before 0.6.0.
    pub fn lock_table(&self, table: &str) -> String {
        format!("{table}_{}_registry_locks", self.text_column)
    }
}

/// The attachment of `heap` read from its triggers (relcache, no catalog query): the one on
/// `text_column`, or the only one. Raises 42704 / 42725 as `simhash_internal.find_attachment()` does.
///
/// # Safety
/// `heap` must be an open relation; `ext_namespace` the extension's schema.
pub unsafe fn find(
    heap: pg_sys::Relation,
    text_column: Option<&str>,
    ext_namespace: pg_sys::Oid,
) -> Attachment {
    let table = qualified_name(heap);
    let mut found = Vec::new();
    let trigdesc = (*heap).trigdesc;
    if !trigdesc.is_null() {
        let triggers = std::slice::from_raw_parts((*trigdesc).triggers, (*trigdesc).numtriggers as usize);
        for trigger in triggers {
            if !is_extension_function(trigger.tgfoid, b"simhash_trigger", ext_namespace) {
                continue;
            }
            if let Some(att) = Attachment::from_trigger(trigger) {
                if text_column.is_none_or(|c| c == att.text_column) {
                    found.push(att);
                }
            }
        }
    }
    match found.len() {
        1 if found[0].is_attaching(heap) => raise(EncodedError {
            code: PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            message: format!(
                "column \"{}\" of \"{table}\" is still being attached",
                found[0].text_column
            ),
            detail: Some("simhash_attach_concurrently() has not finished: some rows have no fingerprint or band index yet.".into()),
            hint: Some("Call simhash_attach_concurrently() again to resume it, or simhash_detach() to remove it.".into()),
        }),
        1 => found.pop().expect("one attachment"),
        0 => raise(EncodedError {
            code: PgSqlErrorCode::ERRCODE_UNDEFINED_OBJECT,
            message: match text_column {
                Some(c) => format!("column \"{c}\" of \"{table}\" is not attached"),
                None => format!("table \"{table}\" is not attached"),
            },
            detail: None,
            hint: Some("Attach it first with simhash_attach().".into()),
        }),
        n => raise(EncodedError {
            code: PgSqlErrorCode::ERRCODE_AMBIGUOUS_FUNCTION,
            message: format!("table \"{table}\" has {n} attached columns: name one with text_column"),
            detail: None,
            hint: None,
        }),
    }
}

/// How the rows of a table are named in messages, the flag column and dedup results: by the
/// primary key, or without one by the ctid (and the partition, where the rows are in partitions).
pub enum RowKey {
    /// The primary key columns, quoted, in key order.
    Columns(Vec<String>),
    Ctid {
        partitioned: bool,
    },
}

impl RowKey {
    /// The key of the rows of `relid`: its primary key's columns, read from the catalog as
    /// `simhash_internal.primary_key` reads them (the trigger calls no SQL helper: it must work with
    /// an older version's SQL until `ALTER EXTENSION ... UPDATE`).
    ///
    /// # Safety
    /// SPI must be connected.
    pub unsafe fn of(relid: pg_sys::Oid, partitioned: bool) -> RowKey {
        let columns = crate::spi::one_utf8(
            "SELECT pg_catalog.convert_to(pg_catalog.string_agg(pg_catalog.quote_ident(a.attname), ', ' ORDER BY k.ord), 'UTF8') \
             FROM pg_catalog.pg_index i \
             CROSS JOIN LATERAL pg_catalog.unnest(i.indkey::pg_catalog.int2[]) WITH ORDINALITY AS k(attnum, ord) \
             JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) i.indrelid \
                                            AND a.attnum OPERATOR(pg_catalog.=) k.attnum \
             WHERE i.indrelid OPERATOR(pg_catalog.=) $1 AND i.indisprimary",
            &[crate::spi::Arg::Oid(relid)],
        );
        match columns {
            // Quoted names hold no ", " unless quoted names do: split on the quoting.
            Some(columns) => RowKey::Columns(split_quoted(&columns)),
            None => RowKey::Ctid { partitioned },
        }
    }

    /// The key columns as `Key (...)=(...)` names them.
    pub fn names(&self) -> String {
        match self {
            RowKey::Columns(columns) => columns.join(", "),
            RowKey::Ctid { partitioned: true } => "tableoid, ctid".into(),
            RowKey::Ctid { partitioned: false } => "ctid".into(),
        }
    }

    /// The columns of row `alias` in key order, for ORDER BY.
    pub fn order_by(&self, alias: &str) -> String {
        match self {
            RowKey::Columns(columns) => columns
                .iter()
                .map(|c| format!("{alias}.{c}"))
                .collect::<Vec<_>>()
                .join(", "),
            RowKey::Ctid { partitioned: true } => format!("{alias}.tableoid, {alias}.ctid"),
            RowKey::Ctid { partitioned: false } => format!("{alias}.ctid"),
        }
    }

    /// The key of row `alias` as the DETAIL of a near-duplicate error shows it: the values
    /// separated by ", " (as PostgreSQL's unique violations do). Each value is written by its type's
    /// output function (`concat_ws` of the values themselves), never by a cast to `text`: the owner
    /// of a table can create a cast from a type of its own to `text`, and dedup renders keys as its
    /// caller (docs/ARCHITECTURE.md §13.3).
    pub fn message_sql(&self, alias: &str) -> String {
        match self {
            RowKey::Columns(columns) => {
                let values: Vec<String> = columns.iter().map(|c| format!("{alias}.{c}")).collect();
                format!("pg_catalog.concat_ws(', ', {})", values.join(", "))
            }
            RowKey::Ctid { partitioned: true } => format!(
                "pg_catalog.concat_ws(', ', {alias}.tableoid::pg_catalog.regclass::pg_catalog.text, {alias}.ctid::pg_catalog.text)"
            ),
            RowKey::Ctid { partitioned: false } => format!("{alias}.ctid::pg_catalog.text"),
        }
    }

    /// The key of row `alias` as dedup results show it: one column's text, or a row's (`(1,2)`),
    /// by output functions as [`RowKey::message_sql`] (a row's text is `record_out`'s).
    pub fn value_sql(&self, alias: &str) -> String {
        match self {
            RowKey::Columns(columns) if columns.len() == 1 => {
                format!("pg_catalog.format('%s', {alias}.{})", columns[0])
            }
            RowKey::Columns(_) => format!("ROW({})::pg_catalog.text", self.order_by(alias)),
            RowKey::Ctid { partitioned: true } => {
                format!("ROW({alias}.tableoid::pg_catalog.regclass, {alias}.ctid)::pg_catalog.text")
            }
            RowKey::Ctid { partitioned: false } => format!("{alias}.ctid::pg_catalog.text"),
        }
    }
}

/// A name as `quote_ident` wrote it, unquoted.
pub fn unquote(name: &str) -> String {
    match name.strip_prefix('"').and_then(|n| n.strip_suffix('"')) {
        Some(inner) => inner.replace("\"\"", "\""),
        None => name.to_string(),
    }
}

/// Splits `a, "b, c", d` (names as `quote_ident` gives them, joined by ", ") into its names.
pub(crate) fn split_quoted(joined: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    let mut chars = joined.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                quoted = !quoted;
                current.push(c);
            }
            ',' if !quoted && chars.peek() == Some(&' ') => {
                chars.next();
                names.push(std::mem::take(&mut current));
            }
            _ => current.push(c),
        }
    }
    names.push(current);
    names
}
