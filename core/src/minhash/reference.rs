//! The reference MinHash: the steps of [`crate::minhash`] written as plainly as they are defined,
//! over the reference text pipeline of SimHash ([`crate::normalize`], [`crate::fold`],
//! [`crate::tokenize`]). It collects every token as a string and every shingle hash in a set, so it
//! is slow and needs memory in proportion to the text; it is the oracle that the fast path is
//! tested against, and the path of the tokenizers that the fast path leaves out.

use std::collections::BTreeSet;

use super::{bin_of, one_han, value_of, MinHashOptions};
use super::{scatter_target, shingle_hash, Shingle, Signature, MAX_ROUNDS};
use crate::error::{memory_low, OutOfMemory};
use crate::fold::to_simplified;
use crate::hash::feature_hash;
use crate::normalize::{chunks, normalize, Chunking};
use crate::options::Fold;
use crate::tokenize::{for_each_token, keep};

/// The kept tokens of `text`, in order, chunk by chunk as every pipeline of the crate reads it.
pub fn reference_tokens(
    text: &str,
    options: &MinHashOptions,
    chunking: Chunking,
    interrupt: &mut dyn FnMut(),
) -> Result<Vec<String>, OutOfMemory> {
    let options = &options.sanitized();
    let mut tokens = Vec::new();
    for chunk in chunks(text, chunking) {
        interrupt();
        if memory_low() {
            return Err(OutOfMemory {
                features: tokens.len(),
            });
        }
        let mut normalized = normalize(chunk);
        if options.fold == Fold::Simplified {
            normalized = to_simplified(&normalized);
        }
        for_each_token(&normalized, options.tokenizer, |t| {
            if keep(t, options.stopwords) {
                tokens.push(t.to_owned());
            }
        });
    }
    Ok(tokens)
}

/// The shingles of a token list, each as the list of its tokens: the window that ends at token
/// `i` has `options.shingle.width(..)` tokens when there are that many up to `i`; a list with
/// tokens but no full window gives one shingle of all of them.
pub fn reference_shingles(tokens: &[String], shingle: Shingle) -> Vec<&[String]> {
    let mut out = Vec::new();
    for i in 0..tokens.len() {
        let w = shingle.width(one_han(&tokens[i]));
        if i + 1 >= w {
            out.push(&tokens[i + 1 - w..=i]);
        }
    }
    if out.is_empty() && !tokens.is_empty() {
        out.push(tokens);
    }
    out
}

/// The hash of every shingle of `text`, in order and with repeats.
pub fn reference_shingle_hashes(text: &str, options: &MinHashOptions, chunking: Chunking) -> Vec<u64> {
    let options = &options.sanitized();
    let tokens = reference_tokens(text, options, chunking, &mut || {}).unwrap_or_default();
    reference_shingles(&tokens, options.shingle)
        .into_iter()
        .map(|s| shingle_hash(s.iter().map(|t| feature_hash(t)), s.len()))
        .collect()
}

/// The signature by definition: the set of shingle hashes; per bin, the least value of the
/// shingles that fall into it; empty bins densified.
pub fn reference_minhash(
    text: &str,
    options: &MinHashOptions,
    chunking: Chunking,
    interrupt: &mut dyn FnMut(),
) -> Result<Option<Signature>, OutOfMemory> {
    let options = &options.sanitized();
    let tokens = reference_tokens(text, options, chunking, interrupt)?;
    let set: BTreeSet<u64> = reference_shingles(&tokens, options.shingle)
        .into_iter()
        .map(|s| shingle_hash(s.iter().map(|t| feature_hash(t)), s.len()))
        .collect();
    let k = options.k;
    let mins: Vec<Option<u32>> = (0..k)
        .map(|bin| {
            set.iter()
                .filter(|&&s| bin_of(s, k) == bin)
                .map(|&s| value_of(s))
                .min()
        })
        .collect();
    Ok(reference_densify(&mins).map(|v| Signature::from_parts(options.tag(), v)))
}

/// Densification as [`super::densify`] defines it, step by step: the events `(round, j)` of the
/// scatter, rounds in order and within a round the non-empty bins `j` in order, each filling the
/// bin [`scatter_target`]`(j, round, k)` with the value of bin `j` unless that bin already has a
/// value; then every bin still empty takes the value of the next non-empty bin after it,
/// cyclically. `None` when every bin is empty. (The fast path reads the targets from a table and
/// stops when no bin is empty; the values are the same.)
pub fn reference_densify(mins: &[Option<u32>]) -> Option<Vec<u32>> {
    let k = mins.len();
    if mins.iter().all(Option::is_none) {
        return None;
    }
    let mut out = mins.to_vec();
    for round in 0..MAX_ROUNDS {
        for (j, m) in mins.iter().enumerate() {
            if let &Some(v) = m {
                let target = scatter_target(j, round, k);
                if out[target].is_none() {
                    out[target] = Some(v);
                }
            }
        }
    }
    let next_non_empty = |i: usize| (1..=k).find_map(|d| mins[(i + d) % k]);
    Some(
        (0..k)
            .map(|i| out[i].or_else(|| next_non_empty(i)).unwrap_or_default())
            .collect(),
    )
}

/// The exact Jaccard similarity of the shingle sets of two texts (for the benchmark's S-curve and
/// the tests of the estimate).
pub fn exact_jaccard(a: &str, b: &str, options: &MinHashOptions) -> f64 {
    let sa: BTreeSet<u64> = reference_shingle_hashes(a, options, Chunking::default())
        .into_iter()
        .collect();
    let sb: BTreeSet<u64> = reference_shingle_hashes(b, options, Chunking::default())
        .into_iter()
        .collect();
    let union = sa.union(&sb).count();
    if union == 0 {
        return 0.0;
    }
    sa.intersection(&sb).count() as f64 / union as f64
}
