//! MinHash: signatures of k minimum hashes whose estimated similarity reaches a threshold, found
//! through one GIN index over their LSH band keys (docs/ARCHITECTURE.md §6.11).

pub mod check;
pub mod dedup;
pub mod lookup;
pub mod lsh;
