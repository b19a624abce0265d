//! SimHash: 64-bit fingerprints within `max_distance` bits, found through four 16-bit band indexes.

pub mod check;
