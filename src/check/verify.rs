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

    /// The exact similarity of the text checked and the text of the row in `slot`, a row of `rel`
    /// (0 for a NULL text).
    ///
    /// # Safety
    /// `slot` must hold a row of the open relation `rel`.
    pub unsafe fn similarity(&self, rel: pg_sys::Relation, slot: *mut pg_sys::TupleTableSlot) -> f64 {
        let attnum = self.text_attnum(rel);
        let mut isnull = false;
        let datum = pg_sys::slot_getattr(slot, attnum as i32, &mut isnull);
        if isnull {
            return 0.0;
        }
        let text = Text::from_raw_datum(datum);
        self.similarity_to(&text.to_utf8())
    }

    /// The similarity of the row in `slot` when it reaches the threshold.
    ///
    /// # Safety
    /// As [`Verifier::similarity`].
    pub unsafe fn passes(&self, rel: pg_sys::Relation, slot: *mut pg_sys::TupleTableSlot) -> Option<f64> {
        let s = self.similarity(rel, slot);
        self.reaches(s).then_some(s)
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
        let attr = crate::catalog::attribute(tupdesc, n.into());
        let base = pg_sys::getBaseType(attr.atttypid);
        if ![pg_sys::TEXTOID, pg_sys::VARCHAROID, pg_sys::BPCHAROID].contains(&base) {
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
