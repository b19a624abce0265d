//! The write path (docs/ARCHITECTURE.md §7): what a trigger derives from its table (`setup`), a
//! row write through the trigger (`trigger`), and the per-statement check of `'error'` mode
//! (`deferred`). Each method's check of a row is in `crate::method`.

pub mod deferred;
pub mod setup;
pub mod trigger;
