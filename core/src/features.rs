//! `simhash_features()`: the distinct features of a text with their weights and hashes, taken from
//! the reference pipeline's stream of features.

use std::collections::HashMap;

use crate::error::OutOfMemory;
use crate::grow::{grow_map, grow_vec};
use crate::normalize::Chunking;
use crate::options::{Options, Weighting};
use crate::reference::for_each_feature;
use crate::weight::{float_weight, token_idf, EdgeSums};

/// One feature, as `simhash_features()` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Feature {
    pub text: String,
    pub weight: f64,
    pub hash: u64,
}

/// The distinct features of `text` with their weights and hashes, in order of first occurrence.
pub fn features(text: &str, options: &Options, interrupt: &mut dyn FnMut()) -> Vec<Feature> {
    try_features(text, options, interrupt).unwrap_or_else(|e| e.abort())
}

/// [`features`] that reports an allocation failure of the result instead of aborting.
pub fn try_features(
    text: &str,
    options: &Options,
    interrupt: &mut dyn FnMut(),
) -> Result<Vec<Feature>, OutOfMemory> {
    // Distinct features by hash; features whose hashes collide but whose texts differ (never seen
    // with a 64-bit hash, but possible) are told apart by text.
    let mut by_hash: HashMap<u64, usize> = HashMap::new();
    let mut collided: HashMap<String, usize> = HashMap::new();
    let mut out: Vec<Feature> = Vec::new();
    let mut edges = EdgeSums::new(options.weighting);
    for_each_feature(text, options, Chunking::default(), interrupt, |f| {
        let hash = f.hash();
        let existing = match by_hash.get(&hash) {
            Some(&i) if f.text_eq(&out[i].text) => Some(i),
            Some(_) => collided.get(f.text().as_str()).copied(),
            None => None,
        };
        edges.push(existing.unwrap_or(out.len()))?;
        match existing {
            Some(i) => out[i].weight += 1.0,
            None => {
                let text = f.try_text(out.len())?;
                grow_vec(&mut out)?;
                if by_hash.contains_key(&hash) {
                    grow_map(&mut collided)?;
                    collided.insert(text.clone(), out.len());
                } else {
                    grow_map(&mut by_hash)?;
                    by_hash.insert(hash, out.len());
                }
                out.push(Feature {
                    hash,
                    text,
                    weight: 1.0,
                });
            }
        }
        Ok(())
    })?;
    match options.weighting {
        Weighting::Tf => {}
        Weighting::Binary => out.iter_mut().for_each(|f| f.weight = 1.0),
        Weighting::TfIdf | Weighting::LogTf | Weighting::LogTfIdf | Weighting::LogTfEdge => {
            let w = options.weighting;
            edges.finish();
            for (i, f) in out.iter_mut().enumerate() {
                let factor = edges.factor(i, f.weight as u64, token_idf(w, &f.text));
                f.weight = float_weight(w, f.weight, factor);
            }
        }
    }
    Ok(out)
}
