//! Progress of a long run (a dedup, an online attach): a NOTICE at most every
//! `simhash.progress_interval`, and a stop at a query cancel or when memory runs low.

use std::time::{Duration, Instant};

use pgrx::guc::{GucContext, GucFlags, GucRegistry, GucSetting};
use pgrx::prelude::*;

/// `simhash.progress_interval`: milliseconds between two progress NOTICEs of a long run.
pub static PROGRESS_INTERVAL: GucSetting<i32> = GucSetting::<i32>::new(5000);

pub fn register_settings() {
    GucRegistry::define_int_guc(
        c"simhash.progress_interval",
        c"Milliseconds between progress notices of simhash_pairs(), simhash_clusters() and simhash_attach_concurrently().",
        c"0 reports every step; the results never depend on it.",
        &PROGRESS_INTERVAL,
        0,
        i32::MAX,
        GucContext::Userset,
        GucFlags::UNIT_MS,
    );
}

/// Emits a NOTICE at most every `simhash.progress_interval` while a long run goes on.
pub struct Reporter {
    pub what: &'static str,
    last: Instant,
}

impl Reporter {
    pub fn new(what: &'static str) -> Self {
        Reporter {
            what,
            last: Instant::now(),
        }
    }

    pub fn report(&mut self, message: impl FnOnce() -> String) {
        pg_sys::check_for_interrupts!();
        // The allocator spent its reserve on a failed allocation: stop while memory is left.
        if simhash_core::error::memory_low() {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_OUT_OF_MEMORY,
                format!("{}: out of memory", self.what),
                "The table's fingerprints and keys did not fit in this backend's memory."
            );
        }
        if self.last.elapsed() >= Duration::from_millis(PROGRESS_INTERVAL.get().max(0) as u64) {
            self.last = Instant::now();
            notice!("{}: {}", self.what, message());
        }
    }
}
