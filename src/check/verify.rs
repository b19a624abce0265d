//! Verification of candidates against their texts (issue 43, docs/ARCHITECTURE.md §8.11): a row
//! that a method's sketch finds (a fingerprint within `max_distance`, a signature sharing a band)
//! is a near-duplicate only when the exact similarity of its text and the text checked or looked up
//! (`simhash_core::verify`, the Jaccard similarity of their shingle sets) reaches the threshold.
//!
//! The text checked is shingled once, on the first candidate (a write without candidates, the
//! common case, costs nothing more); each candidate's text is read from its row (the slot the
//! search already fetched; a toasted text is fetched then) and shingled once per check.

use std::cell::{OnceCell, RefCell};

use pgrx::prelude::*;
use simhash_core::minhash::MinHashOptions;
use simhash_core::verify::Shingles;

use crate::attachment::Attachment;
use crate::catalog::{attnum_of, relation_name};
use crate::check::dirty::Dirty;
use crate::errors::{raise, EncodedError, OrRaise};
use crate::text::Text;

/// Whether a call verifies, and with which threshold: its own settings, else its attachment's.
#[derive(Clone, Copy, Debug, Default)]
pub struct Asked {
    pub verify: Option<bool>,
    pub threshold: Option<f64>,
}

/// Reads the text checked, once, when a candidate first needs it (None: a NULL text).
type QueryText = Box<dyn FnOnce() -> Option<String>>;

/// The verification of candidates against one text.
pub struct Verifier {
    options: MinHashOptions,
    /// The least similarity of a near-duplicate.
    pub threshold: f64,
    text_column: String,
    query: RefCell<Option<QueryText>>,
    shingles: OnceCell<Option<Shingles>>,
    attnums: RefCell<Vec<(pg_sys::Oid, i16)>>,
}

impl Verifier {
    /// The verifier of `att` for the text `query` gives (called once, on the first candidate; None
    /// for a NULL text): None when neither the call nor the attachment verifies.
    pub fn new(
        att: &Attachment,
        asked: Asked,
        query: impl FnOnce() -> Option<String> + 'static,
    ) -> Option<Verifier> {
        if !asked.verify.unwrap_or(att.verify) {
            return None;
        }
        Some(Verifier {
            options: att.method.verify_options(),
            threshold: asked.threshold.unwrap_or_else(|| att.method.threshold()),
            text_column: att.text_column.clone(),
            query: RefCell::new(Some(Box::new(query))),
            shingles: OnceCell::new(),
            attnums: RefCell::new(Vec::new()),
        })
    }

    /// [`Verifier::new`] for the text datum `text` gives (None: NULL), read once, on the first
    /// candidate.
    ///
    /// # Safety
    /// The datum `text` gives must be a text datum that stays valid while the verifier is used.
    pub unsafe fn of_datum(
        att: &Attachment,
        asked: Asked,
        text: impl FnOnce() -> Option<pg_sys::Datum> + 'static,
    ) -> Option<Verifier> {
        Verifier::new(att, asked, move || text().map(|d| unsafe { text_of(d) }))
    }

    /// The shingles of the text checked (None: a NULL text).
    pub fn query_shingles(&self) -> Option<&Shingles> {
        self.shingles
            .get_or_init(|| {
                let query = self
                    .query
                    .borrow_mut()
                    .take()
                    .expect("the query text is read once");
                query().map(|text| self.shingles_of(&text))
            })
            .as_ref()
    }

    /// The shingle set of `text` with the verification's options, stopping for a cancel.
    pub fn shingles_of(&self, text: &str) -> Shingles {
        Shingles::of(
            text,
            &self.options,
            simhash_core::Chunking::default(),
            &mut crate::errors::check_interrupts,
        )
        .or_raise()
    }

    /// The exact similarity of the text checked and `text`.
    pub fn similarity_to(&self, text: &str) -> f64 {
        match self.query_shingles() {
            Some(q) => q.jaccard(&self.shingles_of(text)),
            None => 0.0,
        }
    }

    /// The similarity of a candidate's text datum (None: NULL, similarity 0) when it reaches the
    /// threshold.
    ///
    /// # Safety
    /// `text` must be a text datum.
    pub unsafe fn passes_datum(&self, text: Option<pg_sys::Datum>) -> Option<f64> {
        let s = text.map_or(0.0, |d| self.similarity_to(&Text::from_raw_datum(d).to_utf8()));
        self.reaches(s).then_some(s)
    }

    /// The similarity of the row in `slot`, a row of `rel`, when it reaches the threshold.
    ///
    /// # Safety
    /// `slot` must hold a row of the open relation `rel`.
    pub unsafe fn passes(&self, rel: pg_sys::Relation, slot: *mut pg_sys::TupleTableSlot) -> Option<f64> {
        let attnum = self.text_attnum(rel);
        let mut isnull = false;
        let datum = pg_sys::slot_getattr(slot, attnum as i32, &mut isnull);
        self.passes_datum((!isnull).then_some(datum))
    }

    /// Whether a similarity reaches the threshold.
    pub fn reaches(&self, similarity: f64) -> bool {
        similarity >= self.threshold
    }

    /// The number of the text column in `rel` (partitions may number their columns otherwise).
    unsafe fn text_attnum(&self, rel: pg_sys::Relation) -> i16 {
        let relid = (*rel).rd_id;
        if let Some(&(_, n)) = self.attnums.borrow().iter().find(|(r, _)| *r == relid) {
            return n;
        }
        let tupdesc = (*rel).rd_att;
        let n = attnum_of(tupdesc, &self.text_column).unwrap_or_else(|| {
            raise(EncodedError {
                code: PgSqlErrorCode::ERRCODE_UNDEFINED_COLUMN,
                message: format!(
                    "column \"{}\" of relation \"{}\" does not exist",
                    self.text_column,
                    relation_name(rel)
                ),
                detail: None,
                hint: None,
            })
        });
        if !is_text_type(crate::catalog::attribute(tupdesc, n.into()).atttypid) {
            raise(EncodedError {
                code: PgSqlErrorCode::ERRCODE_DATATYPE_MISMATCH,
                message: format!(
                    "column \"{}\" of table \"{}\" is not of a text type",
                    self.text_column,
                    relation_name(rel)
                ),
                detail: None,
                hint: Some("Detach the column and attach it again.".into()),
            });
        }
        self.attnums.borrow_mut().push((relid, n));
        n
    }
}

/// Whether a column of type `typid` holds texts a verification can read: text, varchar or char, or
/// a domain over one (the types an attach accepts).
///
/// # Safety
/// Inside a transaction (a catalog lookup).
pub unsafe fn is_text_type(typid: pg_sys::Oid) -> bool {
    [pg_sys::TEXTOID, pg_sys::VARCHAROID, pg_sys::BPCHAROID].contains(&pg_sys::getBaseType(typid))
}

/// The row a dirty search just found, in `slot` (a row of `rel`, at a TID of the table `table`),
/// judged by `verifier` if there is one: None when its text fails the verification; else its exact
/// similarity (None without a verifier) and whether it is certain ([`Dirty::certain_given`], which
/// notes a row of a transaction in progress). What the snapshot says of the row is read first: the
/// verification may fetch a toasted text, which uses the snapshot too.
///
/// # Safety
/// `slot` must hold the row just found by a search of the open relation `rel` under `dirty`.
pub unsafe fn judge_found(
    dirty: &Dirty,
    verifier: Option<&Verifier>,
    rel: pg_sys::Relation,
    table: pg_sys::Oid,
    slot: *mut pg_sys::TupleTableSlot,
) -> Option<(Option<f64>, bool)> {
    let depends = dirty.in_progress();
    let similarity = match verifier {
        Some(v) => Some(v.passes(rel, slot)?),
        None => None,
    };
    Some((similarity, dirty.certain_given(depends, table, (*slot).tts_tid)))
}

/// A non-NULL text datum as UTF-8.
pub unsafe fn text_of(datum: pg_sys::Datum) -> String {
    Text::from_raw_datum(datum).to_utf8().to_string()
}
