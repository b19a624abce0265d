//! Whose rights the extension's work runs with (docs/ARCHITECTURE.md §13). Reads made for a caller
//! (lookups, the cost of one) are checked as a SELECT of the same columns would be, row-level
//! security included; work done for a table (the duplicate check's reads, the fill of a new
//! partition) runs as the table's owner inside a security-restricted operation, as PostgreSQL runs
//! CREATE INDEX and foreign-key checks; SQL the extension runs itself sees only `pg_catalog`.

use pgrx::prelude::*;

/// The search path of every statement the extension runs through SPI: nothing a role can create
/// objects in is searched for a function, operator or type.
const SAFE_SEARCH_PATH: &std::ffi::CStr = c"pg_catalog, pg_temp";

/// Which columns a read returns or tests.
pub enum Columns<'a> {
    /// Every column (a whole row).
    All,
    /// These attribute numbers.
    Some(&'a [i16]),
    /// None that a column privilege can grant (system columns such as `ctid`): the table's own
    /// privilege only.
    Table,
}

/// Whether the current user holds one of the privileges `mode` on table `relid` itself.
///
/// # Safety
/// In a transaction (catalog lookups).
pub unsafe fn may(relid: pg_sys::Oid, mode: u32) -> bool {
    pg_sys::pg_class_aclcheck(relid, pg_sys::GetUserId(), mode as pg_sys::AclMode)
        == pg_sys::AclResult::ACLCHECK_OK
}

/// Whether the current user may SELECT `columns` of table `relid` (the table's privilege, or the
/// columns' own).
///
/// # Safety
/// In a transaction (catalog lookups).
pub unsafe fn may_select(relid: pg_sys::Oid, columns: &Columns) -> bool {
    if may(relid, pg_sys::ACL_SELECT) {
        return true;
    }
    let (user, select) = (pg_sys::GetUserId(), pg_sys::ACL_SELECT as pg_sys::AclMode);
    match columns {
        Columns::All => {
            pg_sys::pg_attribute_aclcheck_all(relid, user, select, pg_sys::AclMaskHow::ACLMASK_ALL)
                == pg_sys::AclResult::ACLCHECK_OK
        }
        Columns::Some(attnums) => attnums.iter().all(|&attnum| {
            pg_sys::pg_attribute_aclcheck(relid, attnum, user, select) == pg_sys::AclResult::ACLCHECK_OK
        }),
        Columns::Table => false,
    }
}

/// Raises PostgreSQL's own `permission denied for table ...` (42501) for table `relid`.
unsafe fn deny(relid: pg_sys::Oid) -> ! {
    pg_sys::aclcheck_error(
        pg_sys::AclResult::ACLCHECK_NO_PRIV,
        pg_sys::ObjectType::OBJECT_TABLE,
        pg_sys::get_rel_name(relid),
    );
    unreachable!("aclcheck_error raises an ERROR")
}

/// Raises 42501 unless the current user may SELECT `columns` of table `relid`.
///
/// # Safety
/// In a transaction (catalog lookups).
pub unsafe fn require_select(relid: pg_sys::Oid, columns: Columns) {
    if !may_select(relid, &columns) {
        deny(relid);
    }
}

/// Raises 42501 unless the current user holds one of the privileges `mode` on table `relid`.
///
/// # Safety
/// In a transaction (catalog lookups).
pub unsafe fn require(relid: pg_sys::Oid, mode: u32) {
    if !may(relid, mode) {
        deny(relid);
    }
}

/// Raises 42501 unless the current user may insert rows into table `relid`: INSERT on it and,
/// where row-level security applies to the current user, a permissive policy for INSERT (or ALL)
/// that applies to it and whose check is not the constant `false` (without one, PostgreSQL refuses
/// every row). What `simhash_internal.lock_near_duplicates` asks of its caller (§13.4): a role
/// that may write nothing takes none of the locks that checked writes wait for.
///
/// # Safety
/// In a transaction, where a query may run.
pub unsafe fn require_insert(relid: pg_sys::Oid) {
    require(relid, pg_sys::ACL_INSERT);
    if !rls_enabled(relid, true) {
        return;
    }
    let may_insert = with_safe_search_path(|| {
        crate::spi::connected(|| {
            crate::spi::one_utf8(
                "SELECT 'yes'::pg_catalog.text FROM pg_catalog.pg_policy p \
                 WHERE p.polrelid OPERATOR(pg_catalog.=) $1 AND p.polpermissive \
                   AND p.polcmd OPERATOR(pg_catalog.=) ANY (ARRAY['*', 'a']::pg_catalog.\"char\"[]) \
                   AND COALESCE(pg_catalog.pg_get_expr(COALESCE(p.polwithcheck, p.polqual), $1), '') \
                       OPERATOR(pg_catalog.<>) 'false' \
                   AND (0::pg_catalog.oid OPERATOR(pg_catalog.=) ANY (p.polroles) \
                        OR EXISTS (SELECT FROM pg_catalog.unnest(p.polroles) r \
                                   WHERE pg_catalog.pg_has_role(r, 'USAGE'))) \
                 LIMIT 1",
                &[crate::spi::Arg::Oid(relid)],
            )
            .is_some()
        })
    });
    if !may_insert {
        deny(relid);
    }
}

/// Whether row-level security filters what the current user reads of table `relid`; unless
/// `no_error`, with `row_security = off` where it would, PostgreSQL's own error (42501).
unsafe fn rls_enabled(relid: pg_sys::Oid, no_error: bool) -> bool {
    pg_sys::check_enable_rls(relid, pg_sys::InvalidOid, no_error)
        == pg_sys::CheckEnableRlsResult::RLS_ENABLED as i32
}

/// Whether row-level security filters what the current user reads of table `relid` (with
/// `row_security = off` where it would, PostgreSQL's own error, 42501).
///
/// # Safety
/// In a transaction (catalog lookups).
pub unsafe fn row_security_applies(relid: pg_sys::Oid) -> bool {
    rls_enabled(relid, false)
}

/// Whether the writer of a row may be told the key (`columns`) of another row of `relid`: as
/// PostgreSQL shows the key in a unique violation, only without row-level security and with SELECT
/// on the key.
///
/// # Safety
/// In a transaction (catalog lookups).
pub unsafe fn may_see_key(relid: pg_sys::Oid, columns: Columns) -> bool {
    !rls_enabled(relid, true) && may_select(relid, &columns)
}

/// The owner of relation `relid` (syscache).
///
/// # Safety
/// In a transaction; `relid` must exist.
pub unsafe fn owner_of(relid: pg_sys::Oid) -> pg_sys::Oid {
    let rel = pg_sys::RelationIdGetRelation(relid);
    if rel.is_null() {
        crate::errors::raise(crate::errors::EncodedError {
            code: PgSqlErrorCode::ERRCODE_UNDEFINED_TABLE,
            message: format!("relation with OID {} does not exist", relid.to_u32()),
            detail: None,
            hint: None,
        });
    }
    let owner = (*(*rel).rd_rel).relowner;
    pg_sys::RelationClose(rel);
    owner
}

/// Whether the current user has the privileges of the owner of relation `relid` (is the owner, a
/// member of the owning role, or a superuser): who may run DDL on it, and so who may have work done
/// for it as its owner. The event trigger runs before PostgreSQL's own ownership checks of the
/// command: it does nothing for anyone else, and PostgreSQL then refuses the command.
///
/// # Safety
/// In a transaction; `relid` must exist.
pub unsafe fn acts_for_owner(relid: pg_sys::Oid) -> bool {
    pg_sys::has_privs_of_role(pg_sys::GetUserId(), owner_of(relid))
}

/// Puts back the user and security context of the caller when dropped, on an error too (the
/// transaction's abort would as well).
struct Restore {
    user: pg_sys::Oid,
    context: i32,
}

impl Drop for Restore {
    fn drop(&mut self) {
        unsafe { pg_sys::SetUserIdAndSecContext(self.user, self.context) };
    }
}

/// Runs `f` with the setting `name` at `value` for its duration, as a function's `SET` clause would
/// (a new GUC nest level, undone afterwards or by the (sub)transaction's abort).
///
/// # Safety
/// Call in a transaction.
pub unsafe fn with_setting<T>(name: &std::ffi::CStr, value: &std::ffi::CStr, f: impl FnOnce() -> T) -> T {
    let level = pg_sys::NewGUCNestLevel();
    pg_sys::set_config_option(
        name.as_ptr(),
        value.as_ptr(),
        pg_sys::GucContext::PGC_USERSET,
        pg_sys::GucSource::PGC_S_SESSION,
        pg_sys::GucAction::GUC_ACTION_SAVE,
        true,
        0,
        false,
    );
    let result = f();
    pg_sys::AtEOXact_GUC(true, level);
    result
}

/// Runs `f` (statements through SPI) with `search_path` set to `pg_catalog, pg_temp`: whatever the
/// caller's search path holds, no name in them resolves to another role's function, operator or
/// type.
///
/// # Safety
/// Call where a query may run.
pub unsafe fn with_safe_search_path<T>(f: impl FnOnce() -> T) -> T {
    with_setting(c"search_path", SAFE_SEARCH_PATH, f)
}

/// Runs `f` as the owner of table `relid` in a security-restricted operation, as PostgreSQL runs the
/// index builds and foreign-key checks of a table: the owner's own code (a trigger, a type's
/// functions) may run, never as the caller, and it cannot change the session. With `all_rows`, the
/// owner's queries see every row even under `FORCE ROW LEVEL SECURITY`, as a foreign-key check does.
/// The search path is the caller's: `f` names what it runs with its schema, or sets the path itself
/// ([`with_safe_search_path`]).
///
/// # Safety
/// Call where a query may run.
pub unsafe fn as_owner<T>(relid: pg_sys::Oid, all_rows: bool, f: impl FnOnce() -> T) -> T {
    let owner = owner_of(relid);
    let (mut user, mut context) = (pg_sys::InvalidOid, 0i32);
    pg_sys::GetUserIdAndSecContext(&mut user, &mut context);
    let restore = Restore { user, context };
    let mut flags =
        context | pg_sys::SECURITY_LOCAL_USERID_CHANGE as i32 | pg_sys::SECURITY_RESTRICTED_OPERATION as i32;
    if all_rows {
        flags |= pg_sys::SECURITY_NOFORCE_RLS as i32;
    }
    pg_sys::SetUserIdAndSecContext(owner, flags);
    let value = f();
    drop(restore);
    value
}
