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
use simhash_core::verify::{Shingles, VERIFY_PREFIX_BYTES};

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
    /// The byte length of the text checked (UTF-8), once read.
    query_bytes: std::cell::Cell<usize>,
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
            query_bytes: std::cell::Cell::new(0),
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
                query().map(|text| {
                    self.query_bytes.set(text.len().min(VERIFY_PREFIX_BYTES));
                    self.shingles_of(&text)
                })
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

    /// The similarity of a candidate's text datum (None: NULL, similarity 0) when it reaches the
    /// threshold.
    ///
    /// # Safety
    /// `text` must be a text datum.
    pub unsafe fn passes_datum(&self, text: Option<pg_sys::Datum>) -> Option<f64> {
        let q = self.query_shingles()?;
        let d = text?;
        // Bounded work per candidate (issue 49): verification reads the first VERIFY_PREFIX_BYTES of
        // each text, and a candidate whose prefix is far longer than the text checked is no
        // near-duplicate, decided from its stored size without reading it (see `candidate_bound`).
        // Its bytes are read leniently: a text that is not valid UTF-8 (only a SQL_ASCII database
        // holds one) is another row's, and an error must not describe it.
        let size = pg_sys::toast_raw_datum_size(d).min(VERIFY_PREFIX_BYTES);
        if size > candidate_bound(self.query_bytes.get(), self.threshold) {
            return None;
        }
        let text = Text::with_prefix(d, VERIFY_PREFIX_BYTES, crate::text::server_to_utf8_lossy);
        let s = q.jaccard(&self.shingles_of(&text));
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

/// The most bytes (as stored, uncompressed, at most VERIFY_PREFIX_BYTES: the part verification
/// reads) of a candidate's text that a verification against a text of `query_bytes` bytes (also at
/// most that) reads: 64 KiB, or 8 / `threshold` times the text checked if more. Beyond it the
/// candidate is not a near-duplicate. Why that loses nothing but texts that repeat
/// themselves: a Jaccard similarity J of shingle sets A and B is at most |A| / |B|, so a candidate
/// that reaches the threshold has at most |A| / threshold distinct shingles; one with 8 / threshold
/// times the bytes of the text checked has that few only if it repeats its shingles many times over.
/// A row's size thus bounds the CPU and memory it can make another writer's check (or lookup) spend.
pub fn candidate_bound(query_bytes: usize, threshold: f64) -> usize {
    let ratio = 8.0 / threshold.max(0.05);
    ((query_bytes as f64 * ratio) as usize).max(64 << 10)
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

/// The part of a non-NULL text datum that verification reads (its first VERIFY_PREFIX_BYTES), as
/// UTF-8.
pub unsafe fn text_of(datum: pg_sys::Datum) -> String {
    Text::with_prefix(datum, VERIFY_PREFIX_BYTES, |b| {
        crate::text::server_to_utf8(b).to_string()
    })
}
