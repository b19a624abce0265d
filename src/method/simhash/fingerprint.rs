//! A text's SimHash fingerprint with an attachment's options (docs/ARCHITECTURE.md §2).

use simhash_core::{Chunking, Options};

use crate::attachment::SimHashSettings;
use crate::errors::OrRaise;

/// The fingerprint of `text` with the attachment's options; None for a text without features.
pub fn of(text: &str, sim: &SimHashSettings) -> Option<u64> {
    with_options(text, &sim.options)
}

/// The fingerprint of `text` with `options`, stopping between chunks for a query cancel or
/// `statement_timeout`; None for a text without features.
pub fn with_options(text: &str, options: &Options) -> Option<u64> {
    simhash_core::try_fingerprint_with(
        text,
        options,
        Chunking::default(),
        &mut crate::errors::check_interrupts,
    )
    .or_raise()
}
