//! The write path (docs/ARCHITECTURE.md §7): what a trigger derives from its table (`setup`), a
//! row write through the trigger (`trigger`), what a row's BEFORE trigger tells its check trigger
//! (`notes`), the check of a row after its write (`written`), at its statement's end (`deferred`),
//! and of a table's rows when it is attached as a partition (`partition_attach`); a session's own
//! choice of mode (`session`). Each method's check of a row is in `crate::method`.

pub mod deferred;
pub mod notes;
pub mod partition_attach;
pub mod session;
pub mod setup;
pub mod trigger;
pub mod written;
