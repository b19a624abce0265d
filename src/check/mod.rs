//! The parts of the duplicate check of a written row that every method shares (docs/ARCHITECTURE.md
//! §7.1, §8): the advisory locks, the row being written, and the report of a near-duplicate found.
//! Each method's search for the nearest row is in its own module (`crate::method`).

pub mod dirty;
pub mod locks;
pub mod report;
pub mod row;
pub mod verify;
