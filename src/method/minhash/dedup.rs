//! MinHash's dedup (docs/ARCHITECTURE.md §9.1): the pairs of rows that share an LSH band and reach
//! the threshold (`simhash_core::minhash::pairs`), and their clusters.

use pgrx::prelude::*;
use simhash_core::minhash::pairs as minhash_pairs;
use simhash_core::minhash::Signature;
use simhash_core::pairs::Progress;

use crate::attachment::MinHashSettings;
use crate::progress::Reporter;

/// The signatures of a MinHash attachment's rows, and what decides a match (§9.1).
pub struct Signed {
    /// The rows that have a signature, and their values one after the other (`k` each).
    rows: Vec<u32>,
    values: Vec<u32>,
    k: usize,
    tag: u32,
    lsh: simhash_core::minhash::Lsh,
    threshold: f64,
}

impl Signed {
    /// No rows yet, for matches at `threshold` or more (None: the attachment's).
    pub fn new(settings: &MinHashSettings, threshold: Option<f64>) -> Signed {
        Signed {
            rows: Vec::new(),
            values: Vec::new(),
            k: settings.options.k,
            tag: settings.options.tag(),
            lsh: settings.lsh,
            threshold: threshold.unwrap_or(settings.threshold),
        }
    }

    /// Row `row`'s stored signature, if it has one; a signature the attachment cannot have written
    /// is an error (XX001).
    pub fn push(&mut self, row: u32, stored: Option<&[u8]>) {
        let Some(bytes) = stored else { return };
        let sig = Signature::decode(bytes)
            .ok()
            .filter(|s| s.k() == self.k && s.tag() == self.tag)
            .unwrap_or_else(|| corrupt("a stored MinHash signature does not fit its attachment".into()));
        self.rows.push(row);
        self.values.extend_from_slice(sig.values());
    }

    /// The representative of each of `nrows` rows' cluster (rows without a signature are their own).
    pub fn clusters(&self, nrows: usize, reporter: &mut Reporter) -> Vec<u32> {
        let mut representative: Vec<u32> = (0..nrows as u32).collect();
        for (row, r) in self.signed_clusters(reporter) {
            representative[row as usize] = r;
        }
        representative
    }

    fn sigs(&self) -> Vec<&[u32]> {
        self.values.chunks_exact(self.k.max(1)).collect()
    }

    /// Every matching pair of rows (`a < b` in key order) with its similarity.
    pub fn pairs(&self, reporter: &mut Reporter) -> Vec<(u32, u32, f64)> {
        let sigs = self.sigs();
        let keys = self.band_keys(&sigs);
        let mut tick = minhash_progress(self, reporter);
        minhash_pairs::match_pairs(&sigs, &keys, &self.lsh, self.threshold, &mut tick)
            .into_iter()
            .map(|(i, j, s)| (self.rows[i as usize], self.rows[j as usize], s))
            .collect()
    }

    /// The candidates of a verified dedup (`crate::dedup::verify`), as row numbers: the rows of
    /// each group of identical signatures, whether the pairs inside a group match, and the pairs of
    /// groups that share a band with at least the threshold (here the least estimate whose texts
    /// are read).
    #[allow(clippy::type_complexity)]
    pub fn candidates(&self, reporter: &mut Reporter) -> (Vec<Vec<u32>>, bool, Vec<(u32, u32)>) {
        let sigs = self.sigs();
        let keys = self.band_keys(&sigs);
        let mut tick = minhash_progress(self, reporter);
        let groups = minhash_pairs::group_identical(&sigs);
        let mut pairs = Vec::new();
        minhash_pairs::for_each_group_match(
            &sigs,
            &keys,
            &self.lsh,
            self.threshold,
            &groups,
            &mut tick,
            &mut |g, h, _| pairs.push((g, h)),
        );
        let rows = (0..groups.len() as u32)
            .map(|g| groups.members(g).iter().map(|&i| self.rows[i as usize]).collect())
            .collect();
        let identical = minhash_pairs::identical_rows_match(&self.lsh, self.threshold);
        (rows, identical, pairs)
    }

    /// The representative of each signed row's cluster, as row numbers.
    fn signed_clusters(&self, reporter: &mut Reporter) -> Vec<(u32, u32)> {
        let sigs = self.sigs();
        let keys = self.band_keys(&sigs);
        let mut tick = minhash_progress(self, reporter);
        let representative =
            minhash_pairs::cluster_matches(&sigs, &keys, &self.lsh, self.threshold, &mut tick);
        representative
            .into_iter()
            .enumerate()
            .map(|(i, r)| (self.rows[i], self.rows[r as usize]))
            .collect()
    }

    fn band_keys(&self, sigs: &[&[u32]]) -> Vec<i64> {
        minhash_pairs::band_key_table(sigs, self.tag, &self.lsh)
            .unwrap_or_else(|e| corrupt(format!("a stored MinHash signature cannot be compared: {e}")))
    }
}

/// The error of a stored signature that cannot be what the attachment wrote (XX001).
fn corrupt(message: String) -> ! {
    ereport!(
        ERROR,
        PgSqlErrorCode::ERRCODE_DATA_CORRUPTED,
        message,
        "Detach the column with simhash_detach() and attach it again."
    );
}

/// A progress callback for the MinHash pair search.
fn minhash_progress<'a>(signed: &'a Signed, reporter: &'a mut Reporter) -> impl FnMut(&Progress) + 'a {
    move |p: &Progress| {
        reporter.report(|| {
            format!(
                "{} signatures: band {} of {} done, {} pairs with similarity {} or more",
                signed.rows.len(),
                p.parts_done,
                p.parts,
                p.pairs,
                signed.threshold
            )
        })
    }
}
