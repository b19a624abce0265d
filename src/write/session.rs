//! `simhash.on_duplicate`: a writer's own choice between the two modes that keep a table free of
//! near-duplicates, `'error'` and `'skip'` (docs/ARCHITECTURE.md §6.4.2). An importer sets
//! `'skip'` for its session (or `SET LOCAL` for one transaction, `ALTER ROLE ... SET` for a role)
//! while a web application writing the same table keeps `'error'`.

use pgrx::guc::{GucContext, GucFlags, GucRegistry, GucSetting, PostgresGucEnum};

use crate::attachment::Mode;

/// The values of `simhash.on_duplicate`.
#[derive(PostgresGucEnum, Clone, Copy, PartialEq, Eq, Debug)]
pub enum OnDuplicate {
    /// As the table was attached.
    #[name = c"attached"]
    Attached,
    #[name = c"error"]
    Error,
    #[name = c"skip"]
    Skip,
}

static ON_DUPLICATE: GucSetting<OnDuplicate> = GucSetting::<OnDuplicate>::new(OnDuplicate::Attached);

pub fn register_settings() {
    GucRegistry::define_enum_guc(
        c"simhash.on_duplicate",
        c"What this session's writes do with a near-duplicate: 'attached' (as simhash_attach() chose), 'error' or 'skip'.",
        c"Applies to attachments whose mode is 'error', 'skip' or 'flag'; one attached with 'none' is not checked.",
        &ON_DUPLICATE,
        GucContext::Userset,
        GucFlags::default(),
    );
}

/// The mode a write of this session uses on an attachment made with `attached`: the session's
/// choice where the attachment checks its writes and its triggers check each one after its write
/// (`keyless`, the triggers of 0.12.0), so that either choice is race-free; else the attached mode.
/// `'none'` stays: its table has no check to choose a mode of.
pub fn mode(attached: Mode, keyless: bool) -> Mode {
    if attached == Mode::None || !keyless {
        return attached;
    }
    match ON_DUPLICATE.get() {
        OnDuplicate::Attached => attached,
        OnDuplicate::Error => Mode::Error,
        OnDuplicate::Skip => Mode::Skip,
    }
}
