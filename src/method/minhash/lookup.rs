//! MinHash's lookups: the rows that share an LSH band with the signature given (or the text's)
//! and reach the threshold, most similar first.

use pgrx::prelude::*;
use simhash_core::minhash::Signature;

use crate::attachment::{Attachment, MinHashSettings};
use crate::catalog::qualified_name_of;
use crate::check::verify::{Asked, Verifier};
use crate::errors::{raise, EncodedError};
use crate::method::common::{Found, Given, Lookup};

use super::lsh::{band_keys, bytea_bytes, matches, signature_of, Probe};

fn invalid(message: String, hint: Option<String>) -> ! {
    raise(EncodedError {
        code: PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
        message,
        detail: None,
        hint,
    })
}

/// A lookup's threshold, or the attachment's (22023 outside 0–1).
fn threshold_of(given: Option<f64>, settings: &MinHashSettings) -> f64 {
    match given {
        None => settings.threshold,
        Some(t) => crate::attachment::valid_threshold(t).unwrap_or_else(|e| raise(e)),
    }
}

/// The rows of the lookup's table (of its partitions; of every shard of a Citus table) that share
/// a band with the query's signature and reach the threshold, with their similarity, most similar
/// first.
///
/// # Safety
/// As [`crate::method::near_duplicates`].
pub unsafe fn near_duplicates(
    lookup: &Lookup,
    settings: &MinHashSettings,
    on_row: &mut dyn FnMut(pg_sys::Datum, Found),
) {
    let (heap, att) = (lookup.heap, lookup.att);
    let relid = (*heap).rd_id;
    let table = qualified_name_of(relid);
    if lookup.max_distance.is_some() || matches!(lookup.given, Given::Fingerprint(_)) {
        invalid(
            format!(
                "column \"{}\" of {table} is attached with method 'minhash': it has no fingerprints or distances",
                att.text_column
            ),
            Some("Look it up by text or by signature (minhash()), with threshold => a similarity from 0 to 1.".into()),
        );
    }
    let threshold = threshold_of(lookup.threshold, settings);
    // A lookup by text verifies (as the call or the attachment says); one by signature has no text.
    let verifier = match lookup.given {
        Given::Text(Some(doc)) => Verifier::of_datum(
            att,
            Asked {
                verify: lookup.verify,
                threshold: Some(threshold),
            },
            move || Some(doc),
        ),
        _ => None,
    };
    let signature = match lookup.given {
        Given::Fingerprint(_) | Given::Text(None) | Given::Signature(None) => None,
        Given::Text(Some(doc)) => signature_of(&crate::text::Text::from_raw_datum(doc).to_utf8(), settings),
        Given::Signature(Some(bytes)) => Some(given_signature(bytea_bytes(bytes), settings, &table, att)),
    };
    let Some(signature) = signature else {
        return;
    };
    let keys = band_keys(&signature, settings);
    let probe = Probe {
        relid,
        att,
        settings,
        signature: &signature,
        keys: &keys,
        threshold: match &verifier {
            Some(v) => super::check::prefilter(v.threshold),
            None => threshold,
        },
        scope: None,
        verifier: verifier.as_ref(),
    };
    for m in matches(&probe, None) {
        if let Some(row) = m.row {
            let found = Found {
                distance: None,
                similarity: Some(m.similarity),
            };
            on_row(row, found);
        }
    }
}

/// A signature passed to a lookup: well formed (22P03) and made with the attachment's options and
/// size (22000).
unsafe fn given_signature(
    bytes: &[u8],
    settings: &MinHashSettings,
    table: &str,
    att: &Attachment,
) -> Signature {
    let signature = Signature::decode(bytes).unwrap_or_else(|e| {
        raise(EncodedError {
            code: PgSqlErrorCode::ERRCODE_INVALID_BINARY_REPRESENTATION,
            message: e.to_string(),
            detail: None,
            hint: None,
        })
    });
    if signature.k() != settings.options.k || signature.tag() != settings.options.tag() {
        raise(EncodedError {
            code: PgSqlErrorCode::ERRCODE_DATA_EXCEPTION,
            message: format!(
                "the signature was not made with the options of column \"{}\" of {table}",
                att.text_column
            ),
            detail: None,
            hint: Some(format!(
                "Make it with minhash(doc, tokenizer => '{}', shingle => {}, stopwords => {}, fold => '{}'), or pass the text.",
                att.option_names.tokenizer, att.option_names.shingle, att.option_names.stopwords, att.option_names.fold
            )),
        })
    }
    signature
}
