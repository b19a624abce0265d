//! The two trigger functions in SQL: `simhash_trigger()` and `simhash_check_trigger()`, over
//! `crate::write::trigger` (docs/ARCHITECTURE.md §7).

use pgrx::prelude::*;

use crate::catalog::extension_schema;
use crate::write::setup::trigger_error;

/// The trigger data of a call of a trigger function (after arming the allocator for its work), or
/// the error `not_a_trigger`.
unsafe fn trigger_data<'a>(
    fcinfo: pg_sys::FunctionCallInfo,
    not_a_trigger: &'static str,
) -> &'a pg_sys::TriggerData {
    crate::errors::arm_allocator();
    let context = (*fcinfo).context;
    if context.is_null() || (*context).type_ != pg_sys::NodeTag::T_TriggerData {
        trigger_error(not_a_trigger);
    }
    &*(context as *mut pg_sys::TriggerData)
}

crate::errors::c_function!(
    /// `simhash_trigger()`: BEFORE INSERT OR UPDATE FOR EACH ROW, arguments written by
    /// `simhash_attach()`. Its errors are reported in the server encoding (a key or a name may be
    /// non-ASCII in LATIN1).
    pg_finfo_simhash_trigger, simhash_trigger => trigger
);

unsafe fn trigger(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    let td = trigger_data(fcinfo, "simhash_trigger() must be called as a trigger");
    crate::write::trigger::on_row(td, &|| extension_schema(fcinfo))
}

crate::errors::c_function!(
    /// `simhash_check_trigger()`: AFTER INSERT FOR EACH ROW beside `simhash_trigger()` on a table
    /// attached with `on_duplicate => 'error'`, which leaves it the duplicate check of INSERTs: the
    /// row is checked with the other rows of its statement at the statement's end
    /// (`crate::write::deferred`), or at once outside a statement's executor (COPY).
    pg_finfo_simhash_check_trigger, simhash_check_trigger => check_trigger
);

unsafe fn check_trigger(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    let td = trigger_data(fcinfo, "simhash_check_trigger() must be called as a trigger");
    crate::write::trigger::on_written(td, &|| extension_schema(fcinfo))
}

extension_sql_file!("../../sql/src/trigger.sql", name = "trigger");
