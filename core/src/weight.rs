//! Step 5, the weight of a feature, shared by the reference pipeline and the fast path so that both
//! do the same arithmetic: the IDF factor of a token, the edge factors of 'logtfedge', and the
//! weight from the term frequency.

use std::collections::{HashMap, VecDeque};
use std::hash::BuildHasher;

use crate::error::OutOfMemory;
use crate::grow::{grow_map, grow_vec};
use crate::idf::{idf_v2, IdfTable};
use crate::options::Weighting;

/// Occurrences this close to either end of the text (counted in features) weigh less under
/// `'logtfedge'`; from this distance on they weigh fully.
pub const EDGE_SPAN: u64 = 60;
/// The weight of an occurrence at the very start or end of the text under `'logtfedge'`.
pub const EDGE_FLOOR: f64 = 0.2;

/// `'logtfedge'`: the factor of an occurrence `distance` features from the nearer end of the text
/// (0 for the first and the last feature), rising linearly from [`EDGE_FLOOR`] to 1 at
/// [`EDGE_SPAN`]. Site chrome (headers, footers, signatures) sits at the ends: a header added to a
/// text then weighs less, and the text's own first and last features count less in both versions.
pub fn edge_factor(distance: u64) -> f64 {
    if distance >= EDGE_SPAN {
        1.0
    } else {
        EDGE_FLOOR + (1.0 - EDGE_FLOOR) * distance as f64 / EDGE_SPAN as f64
    }
}

/// The sum of [`edge_factor`] over the occurrences of each distinct feature, in one pass: the
/// distance from the end is known once [`EDGE_SPAN`] more features have come or the text has ended,
/// so only the last `EDGE_SPAN` occurrences wait. Each feature's factors are added in order of
/// occurrence (the reference and the fast path share this code, so their sums are the same bits).
/// For the other weightings it does nothing and every factor is the given IDF factor.
pub(crate) struct EdgeSums {
    on: bool,
    /// (distinct feature, occurrence number) of the occurrences whose distance from the end is
    /// not known yet.
    waiting: VecDeque<(usize, u64)>,
    seen: u64,
    sums: Vec<f64>,
}

impl EdgeSums {
    pub(crate) fn new(weighting: Weighting) -> Self {
        EdgeSums {
            on: weighting == Weighting::LogTfEdge,
            waiting: VecDeque::new(),
            seen: 0,
            sums: Vec::new(),
        }
    }

    /// One more occurrence of distinct feature `i` (numbered from 0 in order of first occurrence).
    pub(crate) fn push(&mut self, i: usize) -> Result<(), OutOfMemory> {
        if !self.on {
            return Ok(());
        }
        if i == self.sums.len() {
            grow_vec(&mut self.sums)?;
            self.sums.push(0.0);
        }
        if self.waiting.len() as u64 == EDGE_SPAN {
            // EDGE_SPAN occurrences follow this one: only its distance from the start counts.
            let (j, n) = self.waiting.pop_front().expect("EDGE_SPAN > 0");
            self.sums[j] += edge_factor(n);
        }
        if self.waiting.len() == self.waiting.capacity() {
            self.waiting.try_reserve(1).map_err(|_| OutOfMemory {
                features: self.sums.len(),
            })?;
        }
        self.waiting.push_back((i, self.seen));
        self.seen += 1;
        Ok(())
    }

    /// The text has ended: the waiting occurrences know their distance from the end.
    pub(crate) fn finish(&mut self) {
        let total = self.seen;
        while let Some((j, n)) = self.waiting.pop_front() {
            self.sums[j] += edge_factor(n.min(total - 1 - n));
        }
    }

    /// The factor that [`float_weight`] multiplies by for distinct feature `i` seen `tf` times: the
    /// mean edge factor of its occurrences, or `idf` for the other weightings.
    pub(crate) fn factor(&self, i: usize, tf: u64, idf: f64) -> f64 {
        if self.on {
            self.sums[i] / tf as f64
        } else {
            idf
        }
    }
}

/// The distinct features of a text under a float weighting ('tfidf', 'logtf', 'logtfidf',
/// 'logtfedge'), by hash: in order of first occurrence, each with its term frequency, the IDF factor
/// taken at its first occurrence and its edge factors. Float sums depend on order; the reference and
/// the fast path both keep their features here, so both sum the same weights in the same order. `S`
/// hashes the map of feature hashes; only which features are distinct depends on it, never their
/// order (kept in a vector).
pub(crate) struct DistinctFeatures<S> {
    weighting: Weighting,
    index: HashMap<u64, usize, S>,
    /// (hash, term frequency, IDF factor) of every distinct feature, in order of first occurrence.
    distinct: Vec<(u64, u64, f64)>,
    edges: EdgeSums,
}

impl<S: BuildHasher + Default> DistinctFeatures<S> {
    pub(crate) fn new(weighting: Weighting) -> Self {
        DistinctFeatures {
            weighting,
            index: HashMap::default(),
            distinct: Vec::new(),
            edges: EdgeSums::new(weighting),
        }
    }

    /// One occurrence of the feature whose hash is `h`; `idf` gives its IDF factor, asked at its
    /// first occurrence only.
    pub(crate) fn add(&mut self, h: u64, idf: impl FnOnce() -> f64) -> Result<(), OutOfMemory> {
        let i = match self.index.get(&h) {
            Some(&i) => i,
            None => {
                grow_map(&mut self.index)?;
                grow_vec(&mut self.distinct)?;
                self.distinct.push((h, 0, idf()));
                self.index.insert(h, self.distinct.len() - 1);
                self.distinct.len() - 1
            }
        };
        self.distinct[i].1 += 1;
        self.edges.push(i)
    }

    /// The text has ended: every distinct feature's hash and weight, in order of first occurrence;
    /// `None` when the text had none.
    pub(crate) fn finish(&mut self) -> Option<impl Iterator<Item = (u64, f64)> + '_> {
        if self.distinct.is_empty() {
            return None;
        }
        self.edges.finish();
        let (weighting, edges) = (self.weighting, &self.edges);
        Some(
            self.distinct.iter().enumerate().map(move |(i, &(h, tf, idf))| {
                (h, float_weight(weighting, tf as f64, edges.factor(i, tf, idf)))
            }),
        )
    }
}

/// The IDF factor of one token under a float weighting (1 for `'logtf'`).
pub(crate) fn token_idf(weighting: Weighting, token: &str) -> f64 {
    match weighting {
        Weighting::TfIdf => IdfTable::get().idf(token),
        Weighting::LogTfIdf => idf_v2(token),
        Weighting::Tf | Weighting::Binary | Weighting::LogTf | Weighting::LogTfEdge => 1.0,
    }
}

/// The weight of a feature seen `tf` times whose IDF factor is `idf`. The same arithmetic serves
/// [`fingerprint`](crate::fingerprint()) and [`features`](crate::features()), so that the
/// features shown always add up to the fingerprint.
pub(crate) fn float_weight(weighting: Weighting, tf: f64, idf: f64) -> f64 {
    match weighting {
        Weighting::LogTf | Weighting::LogTfIdf | Weighting::LogTfEdge => (1.0 + tf.ln()) * idf,
        Weighting::Tf | Weighting::Binary | Weighting::TfIdf => tf * idf,
    }
}
