//! The methods of finding near-duplicates, each in its own module (docs/ARCHITECTURE.md §15).

pub mod simhash;
