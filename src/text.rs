//! `text` arguments read without pgrx's copy and converted from the server encoding to UTF-8
//! (SPEC §5): a UTF-8 database hands the bytes over as they are.

use std::borrow::Cow;

use pgrx::callconv::{Arg, ArgAbi};
use pgrx::pgrx_sql_entity_graph::metadata::{
    ArgumentError, ReturnsError, ReturnsRef, SqlMappingRef, SqlTranslatable, TypeOrigin,
};
use pgrx::prelude::*;

/// A `text` argument as PostgreSQL stores it, detoasted only when it was toasted.
pub struct Text(*mut pg_sys::varlena);

impl FromDatum for Text {
    unsafe fn from_polymorphic_datum(datum: pg_sys::Datum, is_null: bool, _: pg_sys::Oid) -> Option<Self> {
        if is_null || datum.is_null() {
            None
        } else {
            // Leaves an inline, uncompressed value where it is; a toasted one is fetched once.
            Some(Text(unsafe {
                pg_sys::pg_detoast_datum_packed(datum.cast_mut_ptr())
            }))
        }
    }
}

unsafe impl<'fcx> ArgAbi<'fcx> for Text {
    unsafe fn unbox_arg_unchecked(arg: Arg<'_, 'fcx>) -> Self {
        let index = arg.index();
        unsafe { arg.unbox_arg_using_from_datum() }
            .unwrap_or_else(|| panic!("argument {index} must not be null"))
    }
}

unsafe impl SqlTranslatable for Text {
    const TYPE_IDENT: &'static str = "simhash_ext::text::Text";
    const TYPE_ORIGIN: TypeOrigin = TypeOrigin::External;
    const ARGUMENT_SQL: Result<SqlMappingRef, ArgumentError> = Ok(SqlMappingRef::literal("text"));
    const RETURN_SQL: Result<ReturnsRef, ReturnsError> = Err(ReturnsError::Datum);
}

impl Text {
    /// Wraps a non-NULL text datum, detoasting it only when it is toasted.
    ///
    /// # Safety
    /// `datum` must be a non-NULL `text` (or other varlena of text bytes) datum.
    pub unsafe fn from_raw_datum(datum: pg_sys::Datum) -> Text {
        Text(unsafe { pg_sys::pg_detoast_datum_packed(datum.cast_mut_ptr()) })
    }

    fn bytes(&self) -> &[u8] {
        unsafe {
            let len = pgrx::varsize_any_exhdr(self.0);
            let data = pgrx::vardata_any(self.0) as *const u8;
            std::slice::from_raw_parts(data, len)
        }
    }

    /// The text as UTF-8. Invalid bytes (possible only in SQL_ASCII) raise SQLSTATE 22021.
    pub fn to_utf8(&self) -> Cow<'_, str> {
        let bytes = self.bytes();
        let encoding = unsafe { pg_sys::GetDatabaseEncoding() };
        if encoding == pg_sys::pg_enc::PG_UTF8 as i32 || bytes.is_ascii() {
            return match std::str::from_utf8(bytes) {
                Ok(s) => Cow::Borrowed(s),
                Err(_) => invalid_utf8(),
            };
        }
        // Converts, or for SQL_ASCII verifies, raising 22021/22P05 on bytes it cannot map.
        let converted = unsafe {
            pg_sys::pg_server_to_any(
                bytes.as_ptr().cast(),
                bytes.len() as i32,
                pg_sys::pg_enc::PG_UTF8 as i32,
            )
        };
        let converted_bytes = if converted.cast_const() == bytes.as_ptr().cast() {
            bytes
        } else {
            unsafe { std::ffi::CStr::from_ptr(converted) }.to_bytes()
        };
        match std::str::from_utf8(converted_bytes) {
            Ok(s) => Cow::Owned(s.to_owned()),
            Err(_) => invalid_utf8(),
        }
    }
}

fn invalid_utf8() -> ! {
    ereport!(
        ERROR,
        PgSqlErrorCode::ERRCODE_CHARACTER_NOT_IN_REPERTOIRE,
        "invalid byte sequence for encoding \"UTF8\" in the text to fingerprint"
    );
}
