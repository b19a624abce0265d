//! Text in and out of the server encoding (docs/ARCHITECTURE.md §2.12). The core works on UTF-8: `text` arguments are
//! converted from the server encoding to UTF-8 (a UTF-8 database hands its bytes over as they are),
//! and text the extension produces (feature strings, names, error messages) goes back into the server
//! encoding before PostgreSQL sees it.

use std::borrow::Cow;
use std::ops::Deref;

use pgrx::callconv::{Arg, ArgAbi, BoxRet, FcInfo};
use pgrx::datum::Datum;
use pgrx::pg_sys::panic::ErrorReport;
use pgrx::pgrx_sql_entity_graph::metadata::{
    ArgumentError, ReturnsError, ReturnsRef, SqlMappingRef, SqlTranslatable, TypeOrigin,
};
use pgrx::prelude::*;

const UTF8: i32 = pg_sys::pg_enc::PG_UTF8 as i32;
const SQL_ASCII: i32 = pg_sys::pg_enc::PG_SQL_ASCII as i32;

fn server_encoding() -> i32 {
    unsafe { pg_sys::GetDatabaseEncoding() }
}

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
        match unsafe { arg.unbox_arg_using_from_datum() } {
            Some(text) => text,
            // Only reachable through a direct C call: every function taking Text is STRICT.
            None => null_argument(index),
        }
    }
}

fn null_argument(index: usize) -> ! {
    ereport!(
        ERROR,
        PgSqlErrorCode::ERRCODE_NULL_VALUE_NOT_ALLOWED,
        format!(
            "argument {} of a simhash_ext function must not be NULL",
            index + 1
        )
    );
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

    /// Gives `f` the bytes of the non-NULL text datum `datum`, detoasted for the call only: a copy
    /// made to detoast it is freed on return (a text may be 1 GB).
    ///
    /// # Safety
    /// As [`Text::from_raw_datum`].
    pub unsafe fn with_bytes<R>(datum: pg_sys::Datum, f: impl FnOnce(&[u8]) -> R) -> R {
        let text = unsafe { Text::from_raw_datum(datum) };
        let result = f(text.bytes());
        if text.0 != datum.cast_mut_ptr::<pg_sys::varlena>() {
            unsafe { pg_sys::pfree(text.0.cast()) };
        }
        result
    }

    /// Gives `f` at most the first `max` bytes of the non-NULL text datum `datum`, cut back to a
    /// character boundary of the server encoding: a toasted text longer than that is read as a slice
    /// (PostgreSQL decompresses a pglz value only as far as the slice needs), freed on return.
    ///
    /// # Safety
    /// As [`Text::from_raw_datum`].
    pub unsafe fn with_prefix<R>(datum: pg_sys::Datum, max: usize, f: impl FnOnce(&[u8]) -> R) -> R {
        let size = unsafe { pg_sys::toast_raw_datum_size(datum) }.saturating_sub(pg_sys::VARHDRSZ);
        if size <= max {
            return unsafe { Text::with_bytes(datum, f) };
        }
        let max = max.min(i32::MAX as usize) as i32;
        let slice = unsafe { pg_sys::pg_detoast_datum_slice(datum.cast_mut_ptr(), 0, max) };
        let text = Text(slice);
        let bytes = text.bytes();
        let keep =
            unsafe { pg_sys::pg_mbcliplen(bytes.as_ptr().cast(), bytes.len() as i32, bytes.len() as i32) };
        let mut keep = (keep.max(0) as usize).min(bytes.len());
        if server_encoding() == SQL_ASCII {
            // Bytes without an encoding: UTF-8 is what a text is read as, so no character is cut.
            keep = utf8_boundary(&bytes[..keep]);
        }
        let result = f(&bytes[..keep]);
        if slice != datum.cast_mut_ptr::<pg_sys::varlena>() {
            unsafe { pg_sys::pfree(slice.cast()) };
        }
        result
    }

    /// The bytes of the text, in the server encoding.
    pub fn bytes(&self) -> &[u8] {
        unsafe {
            let len = pgrx::varsize_any_exhdr(self.0);
            let data = pgrx::vardata_any(self.0) as *const u8;
            std::slice::from_raw_parts(data, len)
        }
    }

    /// The text as UTF-8: borrowed in a UTF-8 database (and for ASCII text in any database),
    /// converted once otherwise. Invalid bytes (possible only in SQL_ASCII) raise SQLSTATE 22021.
    pub fn to_utf8(&self) -> Utf8<'_> {
        server_to_utf8(self.bytes())
    }
}

/// The length of `bytes` without a UTF-8 sequence cut short at its end.
pub fn utf8_boundary(bytes: &[u8]) -> usize {
    let n = bytes.len();
    // The last lead byte (not 0b10xxxxxx) among the last four bytes, and the length it announces.
    for back in 1..=n.min(4) {
        let b = bytes[n - back];
        if b & 0xC0 == 0x80 {
            continue;
        }
        let need = match b {
            0x00..=0x7F => 1,
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            _ => 4,
        };
        return if back < need { n - back } else { n };
    }
    n
}

/// A text as UTF-8: borrowed from PostgreSQL memory when it already is UTF-8, else converted once
/// into memory of its own (freed as soon as it is dropped).
pub struct Utf8<'a>(Cow<'a, str>);

impl Deref for Utf8<'_> {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

/// Bytes of the server encoding converted per call of the conversion function: the interrupt check
/// runs between pieces, and no single PostgreSQL allocation has to hold the whole result (which
/// PostgreSQL caps at 1 GB, less than a 1 GB LATIN1 text takes in UTF-8).
const CONVERSION_PIECE: usize = 1 << 20;

/// Converts bytes in the server encoding to UTF-8. Raises SQLSTATE 22021 on bytes that are not
/// valid in the server encoding (a SQL_ASCII database accepts any bytes, so there only valid UTF-8
/// passes), 22P05 on a character without a UTF-8 equivalent, 53200 when memory for the converted
/// text cannot be had.
pub fn server_to_utf8(bytes: &[u8]) -> Utf8<'_> {
    let encoding = server_encoding();
    if encoding == UTF8 || encoding == SQL_ASCII || bytes.is_ascii() {
        // The same check as `std::str::from_utf8`, faster; std's finds where an invalid text
        // goes wrong, for the message.
        return match simdutf8::basic::from_utf8(bytes) {
            Ok(text) => Utf8(Cow::Borrowed(text)),
            Err(_) => match std::str::from_utf8(bytes) {
                Ok(text) => Utf8(Cow::Borrowed(text)),
                Err(e) => invalid_utf8(bytes, e),
            },
        };
    }
    let proc = unsafe { pg_sys::FindDefaultConversionProc(encoding, UTF8) };
    if proc == pg_sys::InvalidOid {
        // Lets PostgreSQL report that there is no conversion.
        unsafe { pg_sys::pg_server_to_any(bytes.as_ptr().cast(), bytes.len().min(64) as i32, UTF8) };
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_UNDEFINED_FUNCTION,
            "no conversion from the server encoding to UTF8"
        );
    }
    let mut out: Vec<u8> = Vec::new();
    grow(&mut out, bytes.len() + bytes.len() / 8);
    let piece_max = bytes.len().min(CONVERSION_PIECE);
    let mut scratch = vec![0u8; piece_max * pg_sys::MAX_CONVERSION_GROWTH as usize + 8];
    let mut pos = 0;
    while pos < bytes.len() {
        let ascii = bytes[pos..].iter().take_while(|b| b.is_ascii()).count();
        grow(&mut out, ascii);
        out.extend_from_slice(&bytes[pos..pos + ascii]);
        pos += ascii;
        if pos == bytes.len() {
            break;
        }
        let piece = (bytes.len() - pos).min(piece_max);
        // With noError, converts up to the first character it cannot convert and says how far it
        // got; a character cut at the end of the piece is left for the next piece.
        let done = unsafe {
            pg_sys::pg_do_encoding_conversion_buf(
                proc,
                encoding,
                UTF8,
                bytes[pos..].as_ptr().cast_mut(),
                piece as i32,
                scratch.as_mut_ptr(),
                scratch.len() as i32,
                true,
            )
        };
        let written = scratch.iter().position(|&b| b == 0).unwrap_or(scratch.len());
        grow(&mut out, written);
        out.extend_from_slice(&scratch[..written]);
        if done <= 0 {
            // The next character is invalid or has no UTF-8 equivalent: PostgreSQL names it.
            let window = &bytes[pos..(pos + 16).min(bytes.len())];
            unsafe { pg_sys::pg_server_to_any(window.as_ptr().cast(), window.len() as i32, UTF8) };
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_CHARACTER_NOT_IN_REPERTOIRE,
                format!("invalid byte sequence in the text to fingerprint at byte {pos}")
            );
        }
        pos += done as usize;
        pg_sys::check_for_interrupts!();
    }
    match String::from_utf8(out) {
        Ok(text) => Utf8(Cow::Owned(text)),
        Err(e) => invalid_utf8(e.as_bytes(), e.utf8_error()),
    }
}

/// Bytes of the server encoding as UTF-8 for display (a key in a message, a catalog name): in a
/// SQL_ASCII database, bytes that are not UTF-8 become U+FFFD instead of an error, so that a legacy
/// SQL_ASCII database with LATIN1 keys still gets its duplicate reported.
pub fn server_to_utf8_lossy(bytes: &[u8]) -> String {
    if server_encoding() == SQL_ASCII {
        String::from_utf8_lossy(bytes).into_owned()
    } else {
        server_to_utf8(bytes).to_string()
    }
}

/// Makes room for `more` bytes of converted text, raising ERROR 53200 when memory is short.
fn grow(out: &mut Vec<u8>, more: usize) {
    if out.capacity() - out.len() < more
        && (simhash_core::error::memory_low() || out.try_reserve(more).is_err())
    {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_OUT_OF_MEMORY,
            "out of memory",
            format!(
                "simhash_ext could not allocate {} bytes for the text converted to UTF-8.",
                out.len() + more
            )
        );
    }
}

fn invalid_utf8(bytes: &[u8], error: std::str::Utf8Error) -> ! {
    let at = error.valid_up_to();
    let len = error.error_len().unwrap_or(bytes.len() - at).clamp(1, 4);
    let shown: Vec<String> = bytes[at..at + len].iter().map(|b| format!("0x{b:02x}")).collect();
    ErrorReport::new(
        PgSqlErrorCode::ERRCODE_CHARACTER_NOT_IN_REPERTOIRE,
        format!("invalid byte sequence for encoding \"UTF8\": {}", shown.join(" ")),
        "simhash_ext::text",
    )
    .set_detail(format!("The text to fingerprint is not valid UTF-8 at byte {at}."))
    .set_hint("In a SQL_ASCII database simhash_ext reads text as UTF-8: store UTF-8 text, or use a database with a real encoding.")
    .report(PgLogLevel::ERROR);
    unreachable!("an ERROR does not return")
}

/// Converts UTF-8 to the server encoding. A character with no equivalent in the server encoding
/// (possible after NFKC, e.g. `µ` becomes Greek `μ` in a LATIN1 database) is written as the escape
/// `\uXXXX` or `\UXXXXXXXX` of PostgreSQL escape strings (`E'...'`), so the result never fails.
pub fn utf8_to_server(text: &str) -> Cow<'_, [u8]> {
    let encoding = server_encoding();
    if text.is_ascii() || encoding == UTF8 || encoding == SQL_ASCII {
        return Cow::Borrowed(text.as_bytes());
    }
    let proc = unsafe { pg_sys::FindDefaultConversionProc(UTF8, encoding) };
    let mut out = Vec::with_capacity(text.len() + 8);
    let mut rest = text;
    while !rest.is_empty() {
        let ascii = rest.bytes().take_while(u8::is_ascii).count();
        out.extend_from_slice(&rest.as_bytes()[..ascii]);
        rest = &rest[ascii..];
        if rest.is_empty() {
            break;
        }
        // The run of non-ASCII characters, at most 16 KiB at a time.
        let mut run = rest.bytes().take_while(|b| !b.is_ascii()).count().min(16 * 1024);
        while !rest.is_char_boundary(run) {
            run -= 1;
        }
        let run = run.max(rest.chars().next().map_or(1, char::len_utf8));
        let converted = if proc == pg_sys::InvalidOid {
            0
        } else {
            let mut buf = vec![0u8; run * pg_sys::MAX_CONVERSION_GROWTH as usize + 8];
            let done = unsafe {
                pg_sys::pg_do_encoding_conversion_buf(
                    proc,
                    UTF8,
                    encoding,
                    rest.as_ptr().cast_mut(),
                    run as i32,
                    buf.as_mut_ptr(),
                    buf.len() as i32,
                    true,
                )
            };
            let written = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
            out.extend_from_slice(&buf[..written]);
            (done.max(0) as usize).min(run)
        };
        rest = &rest[converted..];
        if converted < run {
            // The next character has no equivalent in the server encoding.
            let c = rest.chars().next().expect("a character is left");
            let code = u32::from(c);
            let escape = if code <= 0xFFFF {
                format!("\\u{code:04x}")
            } else {
                format!("\\U{code:08x}")
            };
            out.extend_from_slice(escape.as_bytes());
            rest = &rest[c.len_utf8()..];
        }
    }
    Cow::Owned(out)
}

/// `text` made by the extension (a feature string), given as UTF-8 and stored in the server
/// encoding: in SQL it is plain `text`.
pub struct ServerText(pub String);

impl IntoDatum for ServerText {
    fn into_datum(self) -> Option<pg_sys::Datum> {
        let bytes = utf8_to_server(&self.0);
        let text = unsafe { pg_sys::cstring_to_text_with_len(bytes.as_ptr().cast(), bytes.len() as i32) };
        Some(pg_sys::Datum::from(text))
    }

    fn type_oid() -> pg_sys::Oid {
        pg_sys::TEXTOID
    }
}

unsafe impl BoxRet for ServerText {
    unsafe fn box_into<'fcx>(self, fcinfo: &mut FcInfo<'fcx>) -> Datum<'fcx> {
        match self.into_datum() {
            Some(datum) => unsafe { fcinfo.return_raw_datum(datum) },
            None => fcinfo.return_null(),
        }
    }
}

unsafe impl SqlTranslatable for ServerText {
    const TYPE_IDENT: &'static str = "simhash_ext::text::ServerText";
    const TYPE_ORIGIN: TypeOrigin = TypeOrigin::External;
    const ARGUMENT_SQL: Result<SqlMappingRef, ArgumentError> = Ok(SqlMappingRef::literal("TEXT"));
    const RETURN_SQL: Result<ReturnsRef, ReturnsError> = Ok(ReturnsRef::One(SqlMappingRef::literal("TEXT")));
}

/// A message for `ereport!`, which hands PostgreSQL its bytes as they are: in a database whose
/// encoding is neither UTF-8 nor SQL_ASCII, non-ASCII characters are written as `\uXXXX` escapes
/// so that the message is valid in the server encoding.
pub fn message(text: &str) -> Cow<'_, str> {
    let encoding = server_encoding();
    if text.is_ascii() || encoding == UTF8 || encoding == SQL_ASCII {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match u32::from(c) {
            code if code < 0x80 => out.push(c),
            code if code <= 0xFFFF => out.push_str(&format!("\\u{code:04x}")),
            code => out.push_str(&format!("\\U{code:08x}")),
        }
    }
    Cow::Owned(out)
}

/// `text` from bytes already in the server encoding (a trigger argument, a catalog name): stored as
/// they are, with no conversion either way. Meant for `simhash_internal.trigger_args()`.
pub struct ServerBytes(pub Vec<u8>);

impl IntoDatum for ServerBytes {
    fn into_datum(self) -> Option<pg_sys::Datum> {
        let text = unsafe { pg_sys::cstring_to_text_with_len(self.0.as_ptr().cast(), self.0.len() as i32) };
        Some(pg_sys::Datum::from(text))
    }

    fn type_oid() -> pg_sys::Oid {
        pg_sys::TEXTOID
    }
}

unsafe impl BoxRet for ServerBytes {
    unsafe fn box_into<'fcx>(self, fcinfo: &mut FcInfo<'fcx>) -> Datum<'fcx> {
        match self.into_datum() {
            Some(datum) => unsafe { fcinfo.return_raw_datum(datum) },
            None => fcinfo.return_null(),
        }
    }
}

unsafe impl SqlTranslatable for ServerBytes {
    const TYPE_IDENT: &'static str = "simhash_ext::text::ServerBytes";
    const TYPE_ORIGIN: TypeOrigin = TypeOrigin::External;
    const ARGUMENT_SQL: Result<SqlMappingRef, ArgumentError> = Ok(SqlMappingRef::literal("TEXT"));
    const RETURN_SQL: Result<ReturnsRef, ReturnsError> = Ok(ReturnsRef::One(SqlMappingRef::literal("TEXT")));
}
