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
