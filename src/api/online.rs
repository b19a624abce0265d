//! `CALL simhash_attach_concurrently(...)` in SQL, over `crate::online` (docs/ARCHITECTURE.md §14).

use pgrx::prelude::*;

use crate::catalog::cstr_utf8;
use crate::errors::{raise, EncodedError};

crate::errors::c_function!(
    /// `simhash_attach_concurrently()`: the procedure of the online attach.
    pg_finfo_simhash_attach_concurrently, simhash_attach_concurrently => attach_concurrently
);

unsafe fn attach_concurrently(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    crate::errors::arm_allocator();
    require_top_level(fcinfo);
    // The procedure of 0.10.0 (before `ALTER EXTENSION ... UPDATE`) has no `verify`.
    let nargs = ((*fcinfo).nargs as usize).min(crate::online::ARGUMENT_TYPES.len());
    let args: Vec<pg_sys::NullableDatum> = (*fcinfo).args.as_slice(nargs).to_vec();
    if args[0].isnull || args[1].isnull {
        raise(EncodedError {
            code: PgSqlErrorCode::ERRCODE_NULL_VALUE_NOT_ALLOWED,
            message: "simhash_attach_concurrently: table_name and text_column must not be NULL".into(),
            detail: None,
            hint: None,
        });
    }
    let table = pg_sys::Oid::from_datum(args[0].value, false).expect("a table");
    let column = cstr_utf8(args[1].value.cast_mut_ptr::<std::ffi::c_char>());
    crate::online::attach(table, column, &args);
    (*fcinfo).isnull = true;
    pg_sys::Datum::from(0)
}

/// Refuses a call that cannot commit: inside a transaction block, from a function, or from a
/// procedure (whose own SPI connection the index builds' commits would tear down).
unsafe fn require_top_level(fcinfo: pg_sys::FunctionCallInfo) {
    let context = (*fcinfo).context;
    let nonatomic = !context.is_null()
        && (*context).type_ == pg_sys::NodeTag::T_CallContext
        && !(*(context as *mut pg_sys::CallContext)).atomic;
    if !nonatomic || pg_sys::SPI_inside_nonatomic_context() {
        raise(EncodedError {
            code: PgSqlErrorCode::ERRCODE_ACTIVE_SQL_TRANSACTION,
            message: "simhash_attach_concurrently() cannot run inside a transaction block".into(),
            detail: Some("It commits as it goes, and builds indexes with CREATE INDEX CONCURRENTLY.".into()),
            hint: Some(
                "Run it with CALL on its own, not inside BEGIN ... COMMIT, a function or another procedure."
                    .into(),
            ),
        });
    }
}

extension_sql_file!(
    "../../sql/src/online.sql",
    name = "online",
    requires = ["ddl_command_start", minhash_bands]
);
