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

/// An error that violates a constraint, named in the report's `PG_DIAG_CONSTRAINT_NAME` field.
pub struct Violation {
    pub error: EncodedError,
    pub constraint: String,
}

/// Raises `error` as the violation of `constraint` to the enclosing [`guard`].
pub fn raise_violation(error: EncodedError, constraint: String) -> ! {
    std::panic::resume_unwind(Box::new(Violation { error, constraint }))
}

/// Runs `body` inside a `#[pg_extern]` function, turning an [`EncodedError`] it raises into an
/// ordinary error report (pgrx's own wrapper knows only its own panics; it would say "Box<Any>").
/// The texts go as UTF-8, as `ereport!` sends them.
pub fn in_extern<T>(body: impl FnOnce() -> T) -> T {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
        Ok(value) => value,
        Err(payload) => match payload.downcast::<EncodedError>() {
            Ok(e) => e.report_with(|text| text),
            Err(other) => std::panic::resume_unwind(other),
        },
    }
}

impl EncodedError {
    /// Reports the error from a `#[pg_extern]` function (not inside [`guard`]), its texts made
    /// valid in the server encoding as [`message`] makes them.
    pub fn report(self) -> ! {
        self.report_with(|text| message(&text).into_owned())
    }

    /// Reports the error at ERROR with each of its texts passed through `text`.
    fn report_with(self, text: impl Fn(String) -> String) -> ! {
        let mut report = pgrx::pg_sys::panic::ErrorReport::new(self.code, text(self.message), "simhash_ext");
        if let Some(detail) = self.detail {
            report = report.set_detail(text(detail));
        }
        if let Some(hint) = self.hint {
            report = report.set_hint(text(hint));
        }
        report.report(pgrx::PgLogLevel::ERROR);
        unreachable!("an ERROR does not return")
    }
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
        constraint: *mut std::ffi::c_char,
    }

    fn report(e: EncodedError, constraint: Option<&str>) -> Report {
        let text = |t: Option<&str>| t.map_or(std::ptr::null_mut(), palloc_server_cstring);
        Report {
            code: e.code as i32,
            message: palloc_server_cstring(&e.message),
            detail: text(e.detail.as_deref()),
            hint: text(e.hint.as_deref()),
            constraint: text(constraint),
        }
    }

    let outcome = unsafe {
        pg_sys::panic::pgrx_extern_c_guard(|| match catch_unwind(AssertUnwindSafe(body)) {
            Ok(datum) => Ok(datum),
            Err(payload) => match payload.downcast::<EncodedError>() {
                Ok(e) => Err(report(*e, None)),
                Err(other) => match other.downcast::<Violation>() {
                    Ok(v) => Err(report(v.error, Some(&v.constraint))),
                    Err(other) => resume_unwind(other),
                },
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
                fn err_generic_string(
                    field: std::ffi::c_int,
                    str_: *const std::ffi::c_char,
                ) -> std::ffi::c_int;
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
                if !report.constraint.is_null() {
                    err_generic_string(
                        pg_sys::PG_DIAG_CONSTRAINT_NAME as std::ffi::c_int,
                        report.constraint,
                    );
                }
                errfinish(c"simhash_ext".as_ptr(), 0, c"simhash_trigger".as_ptr());
            }
            // errstart() always returns true for ERROR and errfinish() does not return.
            std::process::abort()
        },
    }
}

/// Declares a version-1 C function of PostgreSQL by hand, for what `#[pg_extern]` cannot declare
/// (trigger and event trigger functions, `anyelement` rows): its `pg_finfo_` record and its entry
/// point, whose body runs under [`guard`]. The symbols keep the names installed databases call.
macro_rules! c_function {
    ($(#[$doc:meta])* $finfo:ident, $name:ident => $body:path) => {
        #[no_mangle]
        #[doc(hidden)]
        pub extern "C" fn $finfo() -> &'static pgrx::pg_sys::Pg_finfo_record {
            const V1: pgrx::pg_sys::Pg_finfo_record = pgrx::pg_sys::Pg_finfo_record { api_version: 1 };
            &V1
        }

        $(#[$doc])*
        ///
        /// # Safety
        /// Called by PostgreSQL, through the SQL function that names this symbol.
        #[no_mangle]
        pub unsafe extern "C-unwind" fn $name(fcinfo: pgrx::pg_sys::FunctionCallInfo) -> pgrx::pg_sys::Datum {
            unsafe { $crate::errors::guard(|| $body(fcinfo)) }
        }
    };
}
pub(crate) use c_function;

/// The allocator of every Rust allocation in the backend. Rust aborts the process when an
/// allocation fails, and an aborted backend makes the postmaster restart the whole server. This
/// allocator keeps an emergency reserve of address space instead: on the first failure it releases
/// the reserve, retries, and marks the process short of memory, so that the fingerprint code stops
/// growing its collections and raises ERROR 53200 (the session goes on). Should a failure happen
/// again before the reserve is back, a backend ends its own session with FATAL 53200 rather than
/// abort the server. Outside a backend's main thread it behaves as the system allocator.
mod allocator {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;
    use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

    const RESERVE_SIZE: usize = 32 << 20;
    const RESERVE_LAYOUT: Layout = match Layout::from_size_align(RESERVE_SIZE, 4096) {
        Ok(layout) => layout,
        Err(_) => panic!("a valid layout"),
    };

    static RESERVE: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
    static FAILING: AtomicBool = AtomicBool::new(false);

    thread_local! {
        /// Set on the backend's main thread by `arm()`; a const initializer, so reading it never
        /// allocates.
        static BACKEND_THREAD: Cell<bool> = const { Cell::new(false) };
    }

    pub struct ReserveAllocator;

    impl ReserveAllocator {
        #[cold]
        unsafe fn on_failure(&self, size: usize, retry: impl Fn() -> *mut u8) -> *mut u8 {
            let reserve = RESERVE.swap(std::ptr::null_mut(), Ordering::AcqRel);
            if !reserve.is_null() {
                unsafe { System.dealloc(reserve, RESERVE_LAYOUT) };
                simhash_core::error::set_memory_low(true);
                let p = retry();
                if !p.is_null() {
                    return p;
                }
            }
            if size >= RESERVE_SIZE {
                // Only `try_reserve` asks for this much at once (nothing infallible does): it gets
                // its error back, and the caller raises ERROR 53200.
                return std::ptr::null_mut();
            }
            let backend = BACKEND_THREAD.try_with(Cell::get).unwrap_or(false);
            if backend && !FAILING.swap(true, Ordering::AcqRel) {
                // Does not return when PostgreSQL's error functions are there.
                unsafe { fatal(size) }
            }
            std::ptr::null_mut()
        }
    }

    unsafe impl GlobalAlloc for ReserveAllocator {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            let p = unsafe { System.alloc(layout) };
            if p.is_null() {
                unsafe { self.on_failure(layout.size(), || System.alloc(layout)) }
            } else {
                p
            }
        }

        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            let p = unsafe { System.alloc_zeroed(layout) };
            if p.is_null() {
                unsafe { self.on_failure(layout.size(), || System.alloc_zeroed(layout)) }
            } else {
                p
            }
        }

        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            unsafe { System.dealloc(ptr, layout) }
        }

        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            let p = unsafe { System.realloc(ptr, layout, new_size) };
            if p.is_null() {
                // A failed realloc leaves the block as it was, so it can be retried.
                unsafe { self.on_failure(new_size, || System.realloc(ptr, layout, new_size)) }
            } else {
                p
            }
        }
    }

    type ErrStart = unsafe extern "C-unwind" fn(std::ffi::c_int, *const std::ffi::c_char) -> bool;
    type ErrCode = unsafe extern "C-unwind" fn(std::ffi::c_int) -> std::ffi::c_int;
    type ErrMsg = unsafe extern "C-unwind" fn(*const std::ffi::c_char, ...) -> std::ffi::c_int;
    type ErrFinish =
        unsafe extern "C-unwind" fn(*const std::ffi::c_char, std::ffi::c_int, *const std::ffi::c_char);

    /// PostgreSQL's error functions, looked up at run time by `arm()`: a link-time reference from
    /// the allocator would follow it into binaries that are not PostgreSQL (the test harness).
    struct ErrorFunctions {
        errstart: ErrStart,
        errcode: ErrCode,
        errmsg: ErrMsg,
        errdetail: ErrMsg,
        errfinish: ErrFinish,
    }

    static ERROR_FUNCTIONS: std::sync::OnceLock<Option<ErrorFunctions>> = std::sync::OnceLock::new();

    fn resolve() -> Option<ErrorFunctions> {
        unsafe extern "C" {
            fn dlsym(handle: *mut std::ffi::c_void, symbol: *const std::ffi::c_char)
                -> *mut std::ffi::c_void;
        }
        // RTLD_DEFAULT: the symbols of the process, the postgres executable included.
        let find = |name: &std::ffi::CStr| {
            let p = unsafe { dlsym(std::ptr::null_mut(), name.as_ptr()) };
            (!p.is_null()).then_some(p)
        };
        unsafe {
            Some(ErrorFunctions {
                errstart: std::mem::transmute::<*mut std::ffi::c_void, ErrStart>(find(c"errstart")?),
                errcode: std::mem::transmute::<*mut std::ffi::c_void, ErrCode>(find(c"errcode")?),
                errmsg: std::mem::transmute::<*mut std::ffi::c_void, ErrMsg>(find(c"errmsg")?),
                errdetail: std::mem::transmute::<*mut std::ffi::c_void, ErrMsg>(find(c"errdetail")?),
                errfinish: std::mem::transmute::<*mut std::ffi::c_void, ErrFinish>(find(c"errfinish")?),
            })
        }
    }

    /// Ends the session as PostgreSQL does when it cannot go on: FATAL exits this backend only.
    unsafe fn fatal(size: usize) {
        let Some(Some(f)) = ERROR_FUNCTIONS.get() else {
            return;
        };
        unsafe {
            if (f.errstart)(pgrx::pg_sys::FATAL as std::ffi::c_int, std::ptr::null()) {
                (f.errcode)(pgrx::PgSqlErrorCode::ERRCODE_OUT_OF_MEMORY as std::ffi::c_int);
                (f.errmsg)(c"out of memory".as_ptr());
                (f.errdetail)(
                    c"simhash_ext failed on a request of %zu bytes with its reserve spent; only this session ends."
                        .as_ptr(),
                    size,
                );
                (f.errfinish)(c"simhash_ext".as_ptr(), 0, c"allocator".as_ptr());
            }
        }
    }

    /// Called on a backend's main thread before fingerprinting: puts the reserve back (if the
    /// address space allows it) and clears the short-of-memory mark.
    pub fn arm() {
        BACKEND_THREAD.with(|b| b.set(true));
        ERROR_FUNCTIONS.get_or_init(resolve);
        if RESERVE.load(Ordering::Acquire).is_null() {
            let reserve = unsafe { System.alloc(RESERVE_LAYOUT) };
            if !reserve.is_null() {
                RESERVE.store(reserve, Ordering::Release);
                simhash_core::error::set_memory_low(false);
                FAILING.store(false, Ordering::Release);
            }
        }
    }
}

#[global_allocator]
static ALLOCATOR: allocator::ReserveAllocator = allocator::ReserveAllocator;

pub use allocator::arm as arm_allocator;

/// Lets `statement_timeout` and query cancel stop a long text between chunks.
pub fn check_interrupts() {
    pg_sys::check_for_interrupts!();
}
