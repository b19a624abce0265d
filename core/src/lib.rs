//! The SimHash fingerprint of simhash_ext, free of PostgreSQL: normalize, tokenize, hash, accumulate,
//! and cut into bands. The extension's SQL functions are thin wrappers around this crate.

pub mod bands;
pub mod error;
pub mod explain;
pub mod fast;
pub mod fingerprint;
pub mod fold;
pub mod hash;
pub mod idf;
pub mod normalize;
pub mod options;
pub mod pairs;
pub mod probe;
pub mod stopwords;
pub mod tokenize;

pub use bands::{band, bands, hamming};
pub use error::{OptionError, OutOfMemory};
pub use explain::{explain, Explanation};
pub use fingerprint::{
    accumulate, features, fingerprint, fingerprint_with, try_features, try_fingerprint_with, Feature,
};
pub use normalize::Chunking;
pub use options::{Fold, Options, Tokenizer, Weighting};
