//! simhash_ext: near-duplicate text detection in PostgreSQL. The algorithm lives in the
//! `simhash_core` crate; the modules here only carry it to SQL.

use pgrx::prelude::*;

mod api;
mod attachment;
mod catalog;
mod check;
mod citus;
mod compat;
mod dedup;
mod errors;
mod method;
mod online;
mod partitions;
mod privileges;
mod progress;
mod spi;
mod storage;
mod text;
mod write;

#[cfg(any(test, feature = "pg_test"))]
mod tests;

::pgrx::pg_module_magic!(name, version);

/// Loaded by `shared_preload_libraries`, the postmaster builds the jieba dictionary once and every
/// backend inherits it; otherwise it is built on a backend's first jieba call (docs/ARCHITECTURE.md §12.4).
#[pg_guard]
pub extern "C-unwind" fn _PG_init() {
    // pgrx appends a captured Rust backtrace to the DETAIL of a PostgreSQL error it re-raises (an
    // error of SQL run from Rust) whenever RUST_BACKTRACE or RUST_LIB_BACKTRACE is set in the
    // server's environment: no user-facing error may carry one. Panics still log theirs.
    std::env::set_var("RUST_LIB_BACKTRACE", "0");
    progress::register_settings();
    citus::dedup::register_settings();
    storage::leafmap::register_settings();
    online::register_settings();
    write::session::register_settings();
    compat::reserve_settings_prefix();
    check::locks::register();
    write::deferred::register();
    if unsafe { pg_sys::process_shared_preload_libraries_in_progress } {
        simhash_core::tokenize::jieba();
    }
}

#[cfg(test)]
pub mod pg_test {
    pub fn setup(_options: Vec<&str>) {}

    #[must_use]
    pub fn postgresql_conf_options() -> Vec<&'static str> {
        vec![]
    }
}
