//! The write path (docs/ARCHITECTURE.md §7): what a trigger derives from its table (`setup`), a
//! row write through the trigger (`trigger`), the check of written rows at their statement's end
//! (`deferred`), and the check of a table's rows when it is attached as a partition
//! (`partition_attach`). Each method's check of a row is in `crate::method`.

pub mod deferred;
pub mod partition_attach;
pub mod setup;
pub mod trigger;
