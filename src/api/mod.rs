//! The SQL surface: every `#[pg_extern]`, C function and SQL file of the extension, thin, over the
//! engines below (docs/ARCHITECTURE.md §1.2). Nothing under `src/` but this module reads a
//! function's arguments (`fcinfo`) or declares SQL.

pub mod bands;
pub mod compare;
pub mod ddl;
pub mod dedup;
pub mod fill;
pub mod fingerprint;
pub mod internal;
pub mod lookup;
pub mod minhash;
pub mod old_symbols;
pub mod online;
pub mod tables;
pub mod trigger;
