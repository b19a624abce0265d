//! Raw SPI, one way for the modules that run SQL from C-level code (the trigger, the event
//! trigger, lookups of distributed tables): the statement as UTF-8, its parameters as [`Arg`]s,
//! one [`execute`] under every helper. pgrx's `Spi` reads `text` only in a UTF-8 database, so text
//! results travel as `bytea` of UTF-8 (`convert_to(..., 'UTF8')`).

use std::ffi::{c_char, CString};

use pgrx::prelude::*;

use crate::errors::{raise, EncodedError};
use crate::text::utf8_to_server;

/// A parameter of a statement.
pub enum Arg {
    Oid(pg_sys::Oid),
    /// A name as the parse tree or catalog holds it (server encoding), passed as `text`.
    Name(*const c_char),
    /// A value of a type (None: NULL).
    Value(pg_sys::Oid, Option<pg_sys::Datum>),
}

impl Arg {
    fn type_oid(&self) -> pg_sys::Oid {
        match self {
            Arg::Oid(_) => pg_sys::OIDOID,
            Arg::Name(_) => pg_sys::TEXTOID,
            Arg::Value(type_oid, _) => *type_oid,
        }
    }

    /// The value, None for NULL.
    unsafe fn datum(&self) -> Option<pg_sys::Datum> {
        match self {
            Arg::Oid(oid) => Some(pg_sys::Datum::from(*oid)),
            Arg::Name(name) => Some(pg_sys::Datum::from(pg_sys::cstring_to_text(*name))),
            Arg::Value(_, value) => *value,
        }
    }
}

/// A UTF-8 string as a C string in the server encoding, for SQL text and catalog names.
pub fn server_cstring(text: &str) -> CString {
    CString::new(utf8_to_server(text).into_owned()).unwrap_or_default()
}

/// Runs `f` connected to SPI. On an error SPI is left to the transaction's abort, as PostgreSQL does.
/// The statements name every function, operator and type with its schema (docs/ARCHITECTURE.md
/// §13.2): the caller's search path decides only how a `regclass` is shown.
///
/// # Safety
/// Call where a query may run.
pub unsafe fn connected<T>(f: impl FnOnce() -> T) -> T {
    pg_sys::SPI_connect();
    let value = f();
    pg_sys::SPI_finish();
    value
}

/// Prepares `sql` with parameters of `types` and keeps the plan for the backend's life (until the
/// caller drops it); `what` names the query in the error of one that cannot be prepared.
///
/// # Safety
/// SPI must be connected.
pub unsafe fn prepare_kept(sql: &str, types: &mut [pg_sys::Oid], what: &str) -> pg_sys::SPIPlanPtr {
    let csql = server_cstring(sql);
    let plan = pg_sys::SPI_prepare(csql.as_ptr(), types.len() as i32, types.as_mut_ptr());
    if plan.is_null() {
        raise(EncodedError {
            code: PgSqlErrorCode::ERRCODE_INTERNAL_ERROR,
            message: format!("simhash_ext could not prepare {what}"),
            detail: Some(format!("Query: {sql}")),
            hint: None,
        });
    }
    pg_sys::SPI_keepplan(plan);
    plan
}

/// Runs `sql` with `args` as `$1`, `$2`, ... (at most `limit` rows, 0 for all) and returns SPI's status.
///
/// # Safety
/// SPI must be connected.
pub unsafe fn execute(sql: &str, args: &[Arg], read_only: bool, limit: i64) -> i32 {
    let csql = server_cstring(sql);
    let mut types: Vec<pg_sys::Oid> = args.iter().map(Arg::type_oid).collect();
    let values: Vec<Option<pg_sys::Datum>> = args.iter().map(|a| a.datum()).collect();
    let nulls: Vec<c_char> = values
        .iter()
        .map(|v| if v.is_some() { b' ' } else { b'n' } as c_char)
        .collect();
    let mut values: Vec<pg_sys::Datum> = values
        .into_iter()
        .map(|v| v.unwrap_or(pg_sys::Datum::from(0)))
        .collect();
    pg_sys::SPI_execute_with_args(
        csql.as_ptr(),
        args.len() as i32,
        types.as_mut_ptr(),
        values.as_mut_ptr(),
        nulls.as_ptr(),
        read_only,
        limit,
    )
}

/// The single `bytea` column of UTF-8 of the first row of a read-only query, if it has a row and
/// the value is not NULL.
///
/// # Safety
/// SPI must be connected.
pub unsafe fn one_utf8(sql: &str, args: &[Arg]) -> Option<String> {
    let status = execute(sql, args, true, 1);
    if status != pg_sys::SPI_OK_SELECT as i32 || pg_sys::SPI_processed == 0 {
        return None;
    }
    let table = &*pg_sys::SPI_tuptable;
    let mut isnull = false;
    let value = pg_sys::SPI_getbinval(*table.vals, table.tupdesc, 1, &mut isnull);
    if isnull {
        return None;
    }
    let bytes = pg_sys::pg_detoast_datum_packed(value.cast_mut_ptr());
    let data = std::slice::from_raw_parts(
        pgrx::vardata_any(bytes) as *const u8,
        pgrx::varsize_any_exhdr(bytes),
    );
    Some(String::from_utf8_lossy(data).into_owned())
}

/// Runs `sql` (connecting to SPI) and hands its rows to `on_row`; raises SQLSTATE XX000 naming
/// `what` when it fails.
///
/// # Safety
/// `on_row` must copy what it keeps out of SPI's memory.
pub unsafe fn for_each_row(
    sql: &str,
    args: &[Arg],
    what: &str,
    on_row: &mut dyn FnMut(pg_sys::HeapTuple, pg_sys::TupleDesc),
) {
    connected(|| {
        let status = execute(sql, args, true, 0);
        check(status, pg_sys::SPI_OK_SELECT, what);
        let table = &*pg_sys::SPI_tuptable;
        for i in 0..pg_sys::SPI_processed as usize {
            on_row(*table.vals.add(i), table.tupdesc);
        }
    })
}

/// Runs `SELECT <schema>.<function>($1, ...)` (connecting to SPI), the function raising its own
/// errors: an [`Arg::Oid`] is passed as `regclass`, an [`Arg::Name`] as `name`, an [`Arg::Value`] as
/// its type.
///
/// # Safety
/// Call where a query may run.
pub unsafe fn call(schema: &str, function: &str, args: &[Arg]) {
    let placeholders: Vec<String> = args
        .iter()
        .enumerate()
        .map(|(i, a)| match a {
            Arg::Oid(_) => format!("${}::pg_catalog.regclass", i + 1),
            Arg::Name(_) => format!("${}::pg_catalog.name", i + 1),
            Arg::Value(..) => format!("${}", i + 1),
        })
        .collect();
    let sql = format!("SELECT {schema}.{function}({})", placeholders.join(", "));
    let status = connected(|| execute(&sql, args, false, 0));
    check(status, pg_sys::SPI_OK_SELECT, &format!("{function}()"));
}

/// Runs the statement `sql` (not read-only) and raises SQLSTATE XX000 naming `what` if SPI fails
/// without an error of its own.
///
/// # Safety
/// SPI must be connected.
pub unsafe fn run(sql: &str, what: &str) {
    let status = execute(sql, &[], false, 0);
    if status < 0 {
        check(status, pg_sys::SPI_OK_UTILITY, what);
    }
}

/// Raises SQLSTATE XX000 naming `what` unless SPI returned `expected`.
fn check(status: i32, expected: u32, what: &str) {
    if status != expected as i32 {
        raise(EncodedError {
            code: PgSqlErrorCode::ERRCODE_INTERNAL_ERROR,
            message: format!("simhash_ext: {what} failed (SPI status {status})"),
            detail: None,
            hint: None,
        });
    }
}
