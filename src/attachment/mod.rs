//! The attachment: one text column of a table that `simhash_attach()` set up, as its trigger's
//! arguments record it. Every module reads it through [`Attachment`]: the trigger, lookups, dedup,
//! partitions and Citus. The arguments are, in order: text column, nbands, max_distance, mode,
//! tokenizer, shingle, weighting, stopwords; since 0.3.0 fold (a trigger made before has 8 arguments
//! and means fold 'auto'); then, as far as needed, the scope column ('' for none), 'registry' for a
//! distributed table checked through its registry ('' for none), since 0.4.0 `min_length`, and
//! since 0.5.0 the method (absent: SimHash; `minhash:<k>:<bands>:<rows>` and the threshold for
//! MinHash, whose attachments leave `max_distance` 0 and the weighting empty); since 0.11.0 an
//! attachment that verifies its candidates records the method ('simhash' too), its threshold and
//! 'verify'.
//! [`Attachment::to_args`] is the one
//! encoder and [`Attachment::from_args`] the one decoder; the PL/pgSQL of `sql/src/` reaches both
//! through `src/api/internal.rs` (docs/ARCHITECTURE.md §6.2). Adding a setting touches this type, its
//! two codecs and the code that uses the new value.
//!
//! Its rooms: `settings.rs` (the type itself, each method's settings, the mode, the options and
//! their checks), `codec.rs` (the trigger's arguments), `names.rs` (the names derived from the text
//! column), `row_key.rs` (how a table's rows are named).

mod codec;
mod names;
mod row_key;
mod settings;

#[cfg(any(test, feature = "pg_test"))]
pub(crate) use names::split_quoted;
pub use names::unquote;
pub use row_key::RowKey;
pub use settings::*;

use pgrx::prelude::*;

use crate::catalog::{cstr_utf8, is_extension_function, partition_ancestors, qualified_name};
use crate::errors::{raise, EncodedError};

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
        let threshold = given.threshold.unwrap_or(if minhash {
            simhash_core::minhash::DEFAULT_THRESHOLD
        } else {
            simhash_core::verify::DEFAULT_SIMHASH_THRESHOLD
        });
        valid_threshold(threshold)?;
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
        if given.registry && given.verify == Some(true) {
            return Err(EncodedError {
                code: PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
                message: "simhash_attach: verify => true is not supported with registry => true".into(),
                detail: Some("The registry on the coordinator holds fingerprints, not the texts to verify them with.".into()),
                hint: Some(
                    "Attach with verify => false, or attach the distributed table with scope => its distribution column."
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
            verify: given.verifies(),
        };
        att.check_name_lengths()?;
        Ok(att)
    }

    /// This attachment verifying (or not) with `threshold` (None: the one it has), as
    /// `simhash_set_verify()` changes it: NULL `verify` (22004), a threshold outside 0–1 (22023), a
    /// SimHash threshold without verification (22023), verification with a registry (0A000).
    pub fn with_verify(
        mut self,
        verify: Option<bool>,
        threshold: Option<f64>,
    ) -> Result<Attachment, EncodedError> {
        let Some(verify) = verify else {
            return Err(EncodedError {
                code: PgSqlErrorCode::ERRCODE_NULL_VALUE_NOT_ALLOWED,
                message: "simhash_set_verify: verify must not be NULL".into(),
                detail: None,
                hint: None,
            });
        };
        let given = Given {
            method: Some(self.method_name()),
            max_distance: None,
            threshold,
            on_duplicate: None,
            options: GivenOptions::default(),
            scope_column: None,
            registry: self.registry,
            min_length: None,
            verify: Some(verify),
        };
        given.refuse_other_method(self.minhash().is_some())?;
        if self.registry && verify {
            return Err(EncodedError {
                code: PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
                message: "simhash_set_verify: verify => true is not supported with registry => true".into(),
                detail: Some(
                    "The registry on the coordinator holds fingerprints, not the texts to verify them with."
                        .into(),
                ),
                hint: None,
            });
        }
        if let Some(t) = threshold {
            let t = valid_threshold(t)?;
            match &mut self.method {
                Method::SimHash(s) => s.threshold = t,
                Method::MinHash(m) => m.threshold = t,
            }
        }
        self.verify = verify;
        Ok(self)
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
                threshold: simhash_core::verify::DEFAULT_SIMHASH_THRESHOLD,
            }),
            option_names,
            scope_column: None,
            registry: false,
            min_length: 0,
            verify: false,
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

    /// Whether `text` is too short to be checked (fewer than `min_length` characters).
    pub fn is_short(&self, text: &str) -> bool {
        self.min_length > 0 && text.chars().nth(self.min_length as usize - 1).is_none()
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
