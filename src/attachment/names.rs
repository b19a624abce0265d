//! The names an attachment derives from its text column: columns, triggers, constraint, registry
//! objects; and names as `quote_ident` writes them.

use pgrx::prelude::*;

use super::settings::{Attachment, Method, Mode};
use crate::errors::EncodedError;
use crate::text::utf8_to_server;

/// The longest name PostgreSQL keeps (NAMEDATALEN - 1 bytes).
const MAX_NAME_BYTES: usize = 63;

impl Attachment {
    /// Refuses a text column whose derived column names would be longer than PostgreSQL keeps.
    pub(super) fn check_name_lengths(&self) -> Result<(), EncodedError> {
        let longest = self
            .all_derived_columns()
            .into_iter()
            .map(|c| utf8_to_server(&c).len())
            .max();
        if longest.unwrap_or(0) > MAX_NAME_BYTES {
            return Err(EncodedError {
                code: PgSqlErrorCode::ERRCODE_NAME_TOO_LONG,
                message: format!(
                    "simhash_attach: column name \"{}\" is too long to derive column names from",
                    self.text_column
                ),
                detail: None,
                hint: None,
            });
        }
        Ok(())
    }

    /// The column of the stored fingerprint (`bigint`) or MinHash signature (`bytea`).
    pub fn fingerprint_column(&self) -> String {
        let suffix = if self.minhash().is_some() {
            "minhash"
        } else {
            "simhash"
        };
        format!("{}_{suffix}", self.text_column)
    }

    /// A SimHash attachment's band column `band`.
    pub fn band_column(&self, band: i32) -> String {
        format!("{}_band{band}", self.text_column)
    }

    /// The indexed columns generated from the fingerprint: SimHash's band columns, or MinHash's
    /// one array of LSH band keys.
    pub fn band_columns(&self) -> Vec<String> {
        match &self.method {
            Method::MinHash(_) => vec![format!("{}_lsh", self.text_column)],
            Method::SimHash(s) => (0..s.nbands).map(|band| self.band_column(band)).collect(),
        }
    }

    pub fn flag_column(&self) -> String {
        format!("{}_duplicate_of", self.text_column)
    }

    /// The fingerprint the registry checked, written by the coordinator with the row.
    pub fn registered_column(&self) -> String {
        format!("{}_registered", self.text_column)
    }

    /// The columns `simhash_attach()` added for this attachment: the fingerprint, the bands, the flag
    /// column in `'flag'` mode and the registered fingerprint of a registry attachment.
    pub fn derived_columns(&self) -> Vec<String> {
        self.columns(self.mode == Mode::Flag, self.registry)
    }

    /// Every column an attachment of this text column can add, whatever its mode.
    fn all_derived_columns(&self) -> Vec<String> {
        self.columns(true, true)
    }

    /// The fingerprint and band columns, then the flag and registered columns when asked for.
    fn columns(&self, flag: bool, registered: bool) -> Vec<String> {
        let mut columns = vec![self.fingerprint_column()];
        columns.extend(self.band_columns());
        columns.extend(flag.then(|| self.flag_column()));
        columns.extend(registered.then(|| self.registered_column()));
        columns
    }

    /// The name of the BEFORE trigger that records the attachment.
    pub fn trigger_name(&self) -> String {
        format!("simhash_{}", self.text_column)
    }

    /// The name of the statement-end check trigger of `'error'` mode (src/write/deferred.rs).
    pub fn check_trigger_name(&self) -> String {
        format!("simhash_{}$chk", self.text_column)
    }

    /// The CHECK constraint that ties the band columns to the fingerprint where the trigger keeps
    /// them (an online attach, src/online.rs): NOT VALID while that attach has not finished.
    pub fn bands_constraint_name(&self) -> String {
        format!("{}$bands", self.trigger_name())
    }

    /// The view that writes to a registry attachment of `table` (unquoted) go through.
    pub fn checked_view(&self, table: &str) -> String {
        format!("{table}_{}_checked", self.text_column)
    }

    /// The table of a registry attachment of `table` (unquoted) that is colocated with it and holds
    /// one row per shard, through which the registry's check searches each shard
    /// (`sql/src/registry.sql`).
    pub fn shards_table(&self, table: &str) -> String {
        format!("{table}_{}_shards", self.text_column)
    }

    /// The registry table of a registry attachment of `table` (unquoted), before 0.6.0.
    pub fn registry_table(&self, table: &str) -> String {
        format!("{table}_{}_registry", self.text_column)
    }

    /// The registry's lock rows of a registry attachment of `table` (unquoted), before 0.6.0.
    pub fn lock_table(&self, table: &str) -> String {
        format!("{table}_{}_registry_locks", self.text_column)
    }
}

/// A name as `quote_ident` wrote it, unquoted.
pub fn unquote(name: &str) -> String {
    match name.strip_prefix('"').and_then(|n| n.strip_suffix('"')) {
        Some(inner) => inner.replace("\"\"", "\""),
        None => name.to_string(),
    }
}

/// Splits `a, "b, c", d` (names as `quote_ident` gives them, joined by ", ") into its names.
pub(crate) fn split_quoted(joined: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    let mut chars = joined.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                quoted = !quoted;
                current.push(c);
            }
            ',' if !quoted && chars.peek() == Some(&' ') => {
                chars.next();
                names.push(std::mem::take(&mut current));
            }
            _ => current.push(c),
        }
    }
    names.push(current);
    names
}
