//! The SimHash fingerprint of simhash_ext, free of PostgreSQL: normalize, tokenize, hash, accumulate,
//! and cut into bands; and the MinHash signatures of the second method ([`minhash`]). The extension's
//! SQL functions are thin wrappers around this crate.

pub mod bands;
pub mod error;
pub mod explain;
pub mod fast;
pub mod features;
pub mod fingerprint;
pub mod fold;
mod grow;
pub mod hash;
pub mod idf;
pub mod minhash;
pub mod normalize;
pub mod options;
pub mod pairs;
pub mod probe;
pub mod reference;
pub mod stopwords;
pub mod tokenize;
pub mod verify;
pub mod weight;

pub use bands::{band, bands, hamming};
pub use error::{OptionError, OutOfMemory};
pub use explain::{explain, Explanation};
pub use features::{features, try_features, Feature};
pub use fingerprint::{fingerprint, fingerprint_with, try_fingerprint_with};
pub use normalize::Chunking;
pub use options::{Fold, Options, Tokenizer, Weighting};
pub use reference::accumulate;
