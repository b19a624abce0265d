//! MinHash's duplicate check of one written row: the locks of its band keys, then the most similar
//! row of the attached table that shares a band and reaches the threshold.

use pgrx::prelude::*;
use simhash_core::minhash::Signature;

use crate::attachment::{Attachment, MinHashSettings};
use crate::check::locks::lock_band_keys;
use crate::check::report::{describe_row, Measure, Nearest};
use crate::method::common::WrittenRow;

use super::lsh::{band_keys, matches, Probe};

/// A MinHash attachment's check of signature `sig`: the locks of its band keys on the attached
/// table, then, under a fresh snapshot (as SimHash's check takes it, §8.4), the most similar row
/// of the attached table that shares a band and reaches the threshold, with its key.
///
/// # Safety
/// As [`crate::method::nearest`].
pub unsafe fn most_similar(
    att: &Attachment,
    settings: &MinHashSettings,
    sig: &Signature,
    row: &WrittenRow,
) -> Option<(String, Nearest)> {
    let keys = band_keys(sig, settings);
    lock_band_keys(row.attached_table, &keys);
    pg_sys::CommandCounterIncrement();
    let snapshot = pg_sys::RegisterSnapshot(pg_sys::GetLatestSnapshot());
    let probe = Probe {
        relid: row.attached_table,
        att,
        settings,
        signature: sig,
        keys: &keys,
        threshold: settings.threshold,
        scope: row.scope,
        exclude: row.old_tid.map(|tid| ((*row.heap).rd_id, tid)),
        rows: false,
    };
    // As the owner, whatever the writer may SELECT: near-duplicates of rows it cannot see count too.
    let best = crate::privileges::as_owner(row.attached_table, true, || matches(&probe, Some(snapshot)))
        .into_iter()
        .next();
    let found = best.and_then(|m| {
        let (key_columns, nearest) = describe_row(
            &(row.ext_schema)(),
            att,
            (m.table, row.attached_table),
            m.tid,
            Measure::Similarity(m.similarity),
            row.flag_attr,
            snapshot,
        );
        nearest.map(|n| (key_columns, n))
    });
    pg_sys::UnregisterSnapshot(snapshot);
    found
}
