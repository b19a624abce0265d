//! `simhash_compare(table, a, b)`: how an attachment judges two texts, by the measures its check
//! uses (docs/ARCHITECTURE.md §6.4.3): "why was my post rejected?" answered for both methods.

use pgrx::prelude::*;

use crate::attachment::Method;
use crate::catalog::{own_namespace, RegClass};
use crate::text::{ServerText, Text};

/// How the attachment of `text_column` of `table_name` judges a write of text `a` against an
/// existing row of text `b`, scope aside: the measures of its method (SimHash: the Hamming distance;
/// MinHash: the estimated similarity and whether the signatures share an LSH band), the exact
/// similarity of the texts, the attachment's limits, and whether `b` makes `a` a near-duplicate.
/// Reads no row of the table: only its attachment.
#[pg_extern(stable, parallel_safe)]
#[allow(clippy::type_complexity)] // the SQL result's columns, which pgrx reads from this type
fn simhash_compare(
    table_name: Option<RegClass>,
    a: Option<Text>,
    b: Option<Text>,
    text_column: default!(Option<Text>, "NULL"),
    fcinfo: pg_sys::FunctionCallInfo,
) -> TableIterator<
    'static,
    (
        name!(method, ServerText),
        name!(distance, Option<i32>),
        name!(max_distance, Option<i32>),
        name!(estimated_similarity, Option<f64>),
        name!(similarity, f64),
        name!(threshold, Option<f64>),
        name!(verify, bool),
        name!(near_duplicate, bool),
    ),
> {
    crate::errors::arm_allocator();
    // NULL arguments give no row, as a strict function's.
    let (Some(table_name), Some(a), Some(b)) = (table_name, a, b) else {
        return TableIterator::new(Vec::new());
    };
    let att = unsafe {
        let heap = pg_sys::relation_open(table_name.0, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
        let att = crate::errors::in_extern(|| {
            let column = text_column.as_ref().map(Text::to_utf8);
            crate::attachment::find(heap, column.as_deref(), own_namespace(fcinfo))
        });
        pg_sys::relation_close(heap, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
        att
    };
    let (a, b) = (a.to_utf8(), b.to_utf8());
    let similarity = simhash_core::verify::similarity(&a, &b, &att.method.verify_options());
    // A text shorter than min_length is never refused (nor skipped, nor flagged).
    let checked = !att.is_short(&a);
    let row = match &att.method {
        Method::SimHash(sim) => {
            let fingerprint = |t: &str| crate::method::simhash::fingerprint::of(t, sim);
            let distance = fingerprint(&a)
                .zip(fingerprint(&b))
                .map(|(x, y)| (x ^ y).count_ones());
            let candidate = distance.is_some_and(|d| d as i64 <= i64::from(sim.max_distance));
            let near = checked && candidate && (!att.verify || similarity >= sim.threshold);
            (
                ServerText("simhash".into()),
                distance.map(|d| d as i32),
                Some(sim.max_distance),
                None,
                similarity,
                att.verify.then_some(sim.threshold),
                att.verify,
                near,
            )
        }
        Method::MinHash(settings) => {
            use crate::method::minhash::lsh::{band_keys, signature_of};
            let (x, y) = (signature_of(&a, settings), signature_of(&b, settings));
            let (estimate, shares_band) = match (&x, &y) {
                (Some(x), Some(y)) => (
                    simhash_core::minhash::similarity(x, y).ok(),
                    band_keys(x, settings)
                        .iter()
                        .zip(band_keys(y, settings))
                        .any(|(p, q)| *p == q),
                ),
                _ => (None, false),
            };
            // Verified, the estimate only picks the candidates worth verifying (the prefilter);
            // unverified, it decides.
            let near = checked
                && shares_band
                && estimate.is_some_and(|e| {
                    if att.verify {
                        e >= crate::method::minhash::check::prefilter(settings.threshold)
                            && similarity >= settings.threshold
                    } else {
                        e >= settings.threshold
                    }
                });
            (
                ServerText("minhash".into()),
                None,
                None,
                estimate,
                similarity,
                Some(settings.threshold),
                att.verify,
                near,
            )
        }
    };
    TableIterator::new(vec![row])
}
