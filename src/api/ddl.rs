//! The extension's event trigger in SQL: `simhash_ddl_command_start()`, over
//! `crate::partitions::ddl_command_start` (docs/ARCHITECTURE.md §6.7, §6.8).

use pgrx::prelude::*;

use crate::catalog::{extension_schema, own_namespace};
use crate::errors::{raise, EncodedError};

crate::errors::c_function!(
    /// `simhash_ddl_command_start()`: the extension's event trigger on `ddl_command_start` of ALTER
    /// TABLE. Before `ALTER TABLE parent ATTACH PARTITION t`, gives `t` the columns and fingerprints
    /// of each attachment of `parent` (`simhash_internal.prepare_partition()`); before `ALTER TABLE t RENAME
    /// COLUMN` of an attached text column, renames the columns derived from it and remakes the
    /// trigger, and refuses to rename a derived column (`simhash_internal.rename_column()`).
    pg_finfo_simhash_ddl_command_start, simhash_ddl_command_start => ddl_command_start
);

unsafe fn ddl_command_start(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    let context = (*fcinfo).context;
    if context.is_null() || (*context).type_ != pg_sys::NodeTag::T_EventTriggerData {
        raise(EncodedError {
            code: PgSqlErrorCode::ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED,
            message: "simhash_ddl_command_start() must be called as an event trigger".into(),
            detail: None,
            hint: None,
        });
    }
    let tree = (*(context as *mut pg_sys::EventTriggerData)).parsetree;
    crate::partitions::ddl_command_start(tree, own_namespace(fcinfo), &|| extension_schema(fcinfo))
}
