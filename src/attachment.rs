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
//! through `src/internal.rs` (docs/ARCHITECTURE.md §6.2). Adding a setting touches this type, its
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

/// `max_distance` as an attachment or a dedup takes it, or SQLSTATE 22023 (in a `#[pg_extern]`
/// as in a [`crate::errors::guard`]).
pub fn check_max_distance(k: i32) -> u32 {
    if !(0..=MAX_DISTANCE as i32).contains(&k) {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("invalid value for option \"max_distance\": {k}; allowed: an integer from 0 to {MAX_DISTANCE}")
        );
    }
    k as u32
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

/// How an attachment finds near-duplicates (docs/ARCHITECTURE.md §6.11).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Method {
    /// 64-bit fingerprints within `max_distance` bits, found through four 16-bit band indexes.
    SimHash,
    /// MinHash signatures that share an LSH band and whose estimated similarity reaches the
    /// threshold, found through one GIN index over the band keys.
    MinHash(MinHashSettings),
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
            threshold: threshold.parse().ok().filter(|t| THRESHOLDS.contains(t))?,
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
    pub nbands: i32,
    pub max_distance: i32,
    pub mode: Mode,
    pub option_names: OptionNames,
    pub options: Options,
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

impl Attachment {
    /// A new attachment of `text_column` with the settings `simhash_attach()` was given (None: the
    /// method's default), or the error that names the first bad one, in the order attach checks them:
    /// the method, `max_distance` or `threshold`, `on_duplicate`, the text options, `min_length`,
    /// a registry of MinHash, then the length of the derived names.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        text_column: &str,
        method: Option<&str>,
        max_distance: Option<i32>,
        threshold: Option<f64>,
        on_duplicate: Option<&str>,
        given: GivenOptions,
        scope_column: Option<&str>,
        registry: bool,
        min_length: Option<i32>,
    ) -> Result<Attachment, EncodedError> {
        let invalid = |message: String| EncodedError {
            code: PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            message,
            detail: None,
            hint: None,
        };
        let minhash = match method.unwrap_or("simhash") {
            "simhash" => false,
            "minhash" => true,
            other => {
                return Err(invalid(format!(
                    "invalid value for option \"method\": '{}'; allowed: {}",
                    other.replace('\'', "''"),
                    METHODS.map(|m| format!("'{m}'")).join(", ")
                )))
            }
        };
        let not_for = |option: &str, method: &str, instead: &str| EncodedError {
            hint: Some(format!("With method => '{method}', {instead}.")),
            ..invalid(format!("option \"{option}\" does not apply to method '{method}'"))
        };
        if minhash && max_distance.is_some() {
            return Err(not_for(
                "max_distance",
                "minhash",
                "set the least similarity with threshold",
            ));
        }
        if !minhash && threshold.is_some() {
            return Err(not_for(
                "threshold",
                "simhash",
                "set the largest Hamming distance with max_distance",
            ));
        }
        if minhash && given.weighting.is_some() {
            return Err(not_for("weighting", "minhash", "every shingle counts once"));
        }
        let max_distance = match max_distance {
            None => 7,
            Some(k) if (0..=MAX_DISTANCE as i32).contains(&k) => k,
            Some(k) => {
                return Err(invalid(format!(
                    "invalid value for option \"max_distance\": {k}; allowed: an integer from 0 to {MAX_DISTANCE}"
                )))
            }
        };
        let threshold = threshold.unwrap_or(simhash_core::minhash::DEFAULT_THRESHOLD);
        if minhash && !THRESHOLDS.contains(&threshold) {
            return Err(invalid(format!(
                "invalid value for option \"threshold\": {threshold}; allowed: a number from 0 to 1"
            )));
        }
        let mode = on_duplicate.and_then(Mode::parse).ok_or_else(|| {
            let allowed: Vec<String> = Mode::NAMES.iter().map(|(_, name)| format!("'{name}'")).collect();
            invalid(format!(
                "invalid value for option \"on_duplicate\": {}; allowed: {}",
                on_duplicate.map_or("NULL".into(), |m| format!("'{}'", m.replace('\'', "''"))),
                allowed.join(", ")
            ))
        })?;
        let option_names = given.resolve(minhash);
        let (options, method) = if minhash {
            let options = MinHashOptions::parse(
                &option_names.tokenizer,
                option_names.shingle,
                option_names.stopwords,
                &option_names.fold,
                simhash_core::minhash::DEFAULT_K as i32,
            )
            .map_err(|e| invalid(e.to_string()))?;
            let settings = MinHashSettings {
                options,
                lsh: Lsh::default(),
                threshold,
            };
            (Options::default(), Method::MinHash(settings))
        } else {
            (
                option_names.parse().map_err(|e| invalid(e.to_string()))?,
                Method::SimHash,
            )
        };
        let min_length = min_length.filter(|n| *n >= 0).ok_or_else(|| {
            invalid(format!(
                "invalid value for option \"min_length\": {}; allowed: an integer from 0 (every text is checked) up",
                min_length.map_or("NULL".into(), |n| n.to_string())
            ))
        })?;
        if minhash && registry {
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
            nbands: NBANDS,
            max_distance: if minhash { 0 } else { max_distance },
            mode,
            option_names,
            options,
            scope_column: if registry {
                None
            } else {
                scope_column.map(str::to_string)
            },
            registry,
            min_length,
            method,
        };
        let longest = att
            .all_derived_columns()
            .into_iter()
            .map(|c| utf8_to_server(&c).len())
            .max();
        if longest.unwrap_or(0) > MAX_NAME_BYTES {
            return Err(EncodedError {
                code: PgSqlErrorCode::ERRCODE_NAME_TOO_LONG,
                message: format!(
                    "simhash_attach: column name \"{text_column}\" is too long to derive column names from"
                ),
                detail: None,
                hint: None,
            });
        }
        Ok(att)
    }

    /// An attachment of `text_column` with `simhash_attach()`'s defaults: what the names derived
    /// from a text column are read from.
    pub fn named(text_column: &str) -> Attachment {
        let option_names = OptionNames {
            tokenizer: "bigram".into(),
            shingle: 1,
            weighting: "logtf".into(),
            stopwords: true,
            fold: "auto".into(),
        };
        Attachment {
            text_column: text_column.to_string(),
            nbands: NBANDS,
            max_distance: 7,
            mode: Mode::None,
            options: option_names.parse().expect("the default options are valid"),
            option_names,
            scope_column: None,
            registry: false,
            min_length: 0,
            method: Method::SimHash,
        }
    }

    /// The MinHash settings of a MinHash attachment.
    pub fn minhash(&self) -> Option<&MinHashSettings> {
        match &self.method {
            Method::MinHash(settings) => Some(settings),
            Method::SimHash => None,
        }
    }

    /// The method's name, as `simhash_attach()` takes it.
    pub fn method_name(&self) -> &'static str {
        METHODS[usize::from(self.minhash().is_some())]
    }

    /// The trigger arguments that record this attachment (what [`Attachment::from_args`] reads).
    pub fn to_args(&self) -> Vec<String> {
        let o = &self.option_names;
        let mut args = vec![
            self.text_column.clone(),
            self.nbands.to_string(),
            self.max_distance.to_string(),
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
        let (options, method) = match method {
            None => (option_names.parse().ok()?, Method::SimHash),
            Some((m, t)) => (
                Options::default(),
                Method::MinHash(MinHashSettings::from_arg(m, &option_names, t)?),
            ),
        };
        Some(Attachment {
            text_column: text_column.clone(),
            nbands: nbands.parse().ok().filter(|n| (3..=64).contains(n))?,
            max_distance: max_distance
                .parse()
                .ok()
                .filter(|k| (0..=STORED_MAX_DISTANCE).contains(k))?,
            mode: Mode::parse(mode)?,
            option_names,
            options,
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
        match self.minhash() {
            Some(_) => vec![format!("{}_lsh", self.text_column)],
            None => (0..self.nbands).map(|band| self.band_column(band)).collect(),
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

    /// The name of the statement-end check trigger of `'error'` mode (src/deferred.rs).
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
    /// separated by ", " (as PostgreSQL's unique violations do).
    pub fn message_sql(&self, alias: &str) -> String {
        match self {
            RowKey::Columns(columns) => {
                let texts: Vec<String> =
                    columns.iter().map(|c| format!("{alias}.{c}::pg_catalog.text")).collect();
                format!("pg_catalog.concat_ws(', ', {})", texts.join(", "))
            }
            RowKey::Ctid { partitioned: true } => format!(
                "pg_catalog.concat_ws(', ', {alias}.tableoid::pg_catalog.regclass::pg_catalog.text, {alias}.ctid::pg_catalog.text)"
            ),
            RowKey::Ctid { partitioned: false } => format!("{alias}.ctid::pg_catalog.text"),
        }
    }

    /// The key of row `alias` as dedup results show it: one column's text, or a row's (`(1,2)`).
    pub fn value_sql(&self, alias: &str) -> String {
        match self {
            RowKey::Columns(columns) if columns.len() == 1 => {
                format!("{alias}.{}::pg_catalog.text", columns[0])
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
