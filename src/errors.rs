//! Turning core errors into PostgreSQL errors with their SQLSTATE.

use pgrx::prelude::*;
use simhash_core::{OptionError, OutOfMemory};

use crate::text::message;

/// Raises a core option error as SQLSTATE 22023 (invalid_parameter_value).
pub fn option_error(e: OptionError) -> ! {
    ereport!(
        ERROR,
        PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
        message(&e.to_string()).into_owned()
    );
}

/// Raises a failed allocation of the features of a text as SQLSTATE 53200 (out_of_memory).
pub fn out_of_memory(e: OutOfMemory) -> ! {
    ereport!(
        ERROR,
        PgSqlErrorCode::ERRCODE_OUT_OF_MEMORY,
        "out of memory",
        format!(
            "simhash_ext could not allocate memory for the distinct features of the text ({} collected).",
            e.features
        )
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

impl<T> OrRaise<T> for Result<T, OutOfMemory> {
    fn or_raise(self) -> T {
        self.unwrap_or_else(|e| out_of_memory(e))
    }
}

/// An error whose texts may hold any character: they are converted to the server encoding when it
/// is reported, where `ereport!` would hand PostgreSQL UTF-8 bytes even in a LATIN1 database.
/// Raised with [`raise`] inside [`guard`], which reports it once every Rust frame has unwound.
pub struct EncodedError {
    pub code: PgSqlErrorCode,
    pub message: String,
    pub detail: Option<String>,
    pub hint: Option<String>,
}

/// Raises `error` to the enclosing [`guard`]. Runs no panic hook: this is an ordinary SQL error.
pub fn raise(error: EncodedError) -> ! {
    std::panic::resume_unwind(Box::new(error))
}

/// Copies a text into the current memory context, converted to the server encoding.
fn palloc_server_cstring(text: &str) -> *mut std::ffi::c_char {
    let bytes = crate::text::utf8_to_server(text);
    unsafe {
        let out = pg_sys::palloc0(bytes.len() + 1) as *mut u8;
        // A NUL inside a message would only shorten it.
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), out, bytes.len());
        out.cast()
    }
}

/// Runs the body of a C entry point (one not made by `#[pg_extern]`) under pgrx's guard, and reports
/// an [`EncodedError`] raised inside it with its texts in the server encoding.
///
/// # Safety
/// To be called as the whole body of an `extern "C-unwind"` function called by PostgreSQL, with
/// nothing of its own left to drop.
pub unsafe fn guard(body: impl FnOnce() -> pg_sys::Datum) -> pg_sys::Datum {
    use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

    struct Report {
        code: i32,
        message: *mut std::ffi::c_char,
        detail: *mut std::ffi::c_char,
        hint: *mut std::ffi::c_char,
    }

    let outcome = unsafe {
        pg_sys::panic::pgrx_extern_c_guard(|| match catch_unwind(AssertUnwindSafe(body)) {
            Ok(datum) => Ok(datum),
            Err(payload) => match payload.downcast::<EncodedError>() {
                Ok(e) => Err(Report {
                    code: e.code as i32,
                    message: palloc_server_cstring(&e.message),
                    detail: e
                        .detail
                        .as_deref()
                        .map_or(std::ptr::null_mut(), palloc_server_cstring),
                    hint: e
                        .hint
                        .as_deref()
                        .map_or(std::ptr::null_mut(), palloc_server_cstring),
                }),
                Err(other) => resume_unwind(other),
            },
        })
    };
    match outcome {
        Ok(datum) => datum,
        // Every Rust value is gone: report the error as PostgreSQL's ereport() would, which
        // longjmps out of this frame.
        Err(report) => unsafe {
            #[allow(improper_ctypes)]
            unsafe extern "C-unwind" {
                fn errstart(elevel: std::ffi::c_int, domain: *const std::ffi::c_char) -> bool;
                fn errcode(sqlerrcode: std::ffi::c_int) -> std::ffi::c_int;
                fn errmsg(fmt: *const std::ffi::c_char, ...) -> std::ffi::c_int;
                fn errdetail(fmt: *const std::ffi::c_char, ...) -> std::ffi::c_int;
                fn errhint(fmt: *const std::ffi::c_char, ...) -> std::ffi::c_int;
                fn errfinish(
                    filename: *const std::ffi::c_char,
                    lineno: std::ffi::c_int,
                    funcname: *const std::ffi::c_char,
                );
            }
            if errstart(pg_sys::PGERROR as std::ffi::c_int, std::ptr::null()) {
                errcode(report.code);
                errmsg(c"%s".as_ptr(), report.message);
                if !report.detail.is_null() {
                    errdetail(c"%s".as_ptr(), report.detail);
                }
                if !report.hint.is_null() {
                    errhint(c"%s".as_ptr(), report.hint);
                }
                errfinish(c"simhash_ext".as_ptr(), 0, c"simhash_trigger".as_ptr());
            }
            // errstart() always returns true for ERROR and errfinish() does not return.
            std::process::abort()
        },
    }
}
