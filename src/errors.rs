//! Turning core errors into PostgreSQL errors with their SQLSTATE.

use pgrx::prelude::*;
use simhash_core::OptionError;

/// Raises a core option error as SQLSTATE 22023 (invalid_parameter_value).
pub fn option_error(e: OptionError) -> ! {
    ereport!(
        ERROR,
        PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
        e.to_string()
    );
}

/// Unwraps a core result, raising its error in SQL.
pub trait OrRaise<T> {
    fn or_raise(self) -> T;
}

impl<T> OrRaise<T> for Result<T, OptionError> {
    fn or_raise(self) -> T {
        self.unwrap_or_else(|e| option_error(e))
    }
}
