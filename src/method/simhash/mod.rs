//! SimHash: 64-bit fingerprints within `max_distance` bits, found through four 16-bit band indexes
//! (docs/ARCHITECTURE.md §4, §5).

pub mod check;
pub mod dedup;
pub mod fingerprint;
pub mod lookup;
pub mod search;
