//! Errors of the pure core; the SQL layer maps each to its SQLSTATE.

use std::fmt;

/// An option outside its allowed values (SQLSTATE 22023 in SQL).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionError {
    pub option: &'static str,
    pub value: String,
    pub allowed: String,
}

impl OptionError {
    pub fn new(option: &'static str, value: String, allowed: String) -> Self {
        OptionError {
            option,
            value,
            allowed,
        }
    }
}

impl fmt::Display for OptionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid value for option \"{}\": {}; allowed: {}",
            self.option, self.value, self.allowed
        )
    }
}

impl std::error::Error for OptionError {}

/// Memory for the features of a text could not be allocated (SQLSTATE 53200 in SQL). Only the
/// collections that grow with the number of distinct features can fail this way: every other
/// allocation is bounded by the chunk size, whatever the length of the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutOfMemory {
    /// Distinct features collected when the allocation failed.
    pub features: usize,
}

impl fmt::Display for OutOfMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "out of memory after collecting {} distinct features",
            self.features
        )
    }
}

impl std::error::Error for OutOfMemory {}

impl OutOfMemory {
    /// What an infallible caller does with the error: the standard library's reaction to an
    /// allocation failure.
    pub fn abort(&self) -> ! {
        let size = self
            .features
            .saturating_mul(2 * std::mem::size_of::<u64>())
            .max(1);
        let layout = std::alloc::Layout::from_size_align(size.min(isize::MAX as usize / 2), 8)
            .unwrap_or(std::alloc::Layout::new::<u64>());
        std::alloc::handle_alloc_error(layout)
    }
}

/// Set by an allocator that has met an allocation failure and released its emergency reserve to
/// survive it: the feature collections then stop growing and report [`OutOfMemory`], so that the
/// caller can free them and raise a clean error instead of failing in some later allocation.
static MEMORY_LOW: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Records whether the process is short of memory (see [`MEMORY_LOW`]).
pub fn set_memory_low(low: bool) {
    MEMORY_LOW.store(low, std::sync::atomic::Ordering::Relaxed);
}

/// Whether an allocator has reported the process short of memory.
#[inline]
pub fn memory_low() -> bool {
    MEMORY_LOW.load(std::sync::atomic::Ordering::Relaxed)
}
