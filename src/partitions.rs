//! Partitioned tables and attachments that survive ordinary DDL (issue 11).
//!
//! `simhash_attach()` on a partitioned table puts its columns, partitioned band indexes and trigger
//! on the parent, and PostgreSQL hands them to every partition (the trigger as clones). This module
//! says which relation a partition's trigger belongs to (its locks key on it) and which tables a
//! search covers; it recognizes the INSERT half of an UPDATE that moves a row to another partition;
//! and its event trigger prepares a table for ATTACH PARTITION and keeps the derived columns and
//! the trigger in step with a renamed text column.

use std::cell::{Cell, RefCell};
use std::ffi::CStr;

use pgrx::prelude::*;

use crate::errors::{raise, EncodedError};

use crate::catalog::partition_ancestors;

/// The tables that hold the rows of `rel`: itself when it is an ordinary table, its leaf partitions
/// (in partition bound order, sub-partitions included) when it is partitioned, none otherwise.
///
/// # Safety
/// `rel` must be an open relation.
pub unsafe fn leaf_tables(rel: pg_sys::Relation) -> Vec<pg_sys::Oid> {
    leaf_tables_now(rel).0
}

/// [`leaf_tables`], and whether a partition at some level is being detached (`DETACH PARTITION
/// ... CONCURRENTLY` not finished): then the list depends on the active snapshot, which sees the
/// detach or not (PostgreSQL keeps such a partition list per snapshot), and is valid for this
/// snapshot only.
///
/// # Safety
/// `rel` must be an open relation.
pub unsafe fn leaf_tables_now(rel: pg_sys::Relation) -> (Vec<pg_sys::Oid>, bool) {
    let mut tables = Vec::new();
    let mut detaching = false;
    match (*(*rel).rd_rel).relkind as u8 {
        pg_sys::RELKIND_RELATION => tables.push((*rel).rd_id),
        pg_sys::RELKIND_PARTITIONED_TABLE => add_leaves(rel, &mut tables, &mut detaching),
        _ => {}
    }
    (tables, detaching)
}

unsafe fn add_leaves(rel: pg_sys::Relation, tables: &mut Vec<pg_sys::Oid>, detaching: &mut bool) {
    let desc = pg_sys::RelationGetPartitionDesc(rel, true);
    if desc.is_null() {
        return;
    }
    *detaching |= (*desc).detached_exist;
    for i in 0..(*desc).nparts as usize {
        let oid = *(*desc).oids.add(i);
        if *(*desc).is_leaf.add(i) {
            // A foreign partition has no band indexes (simhash_attach refuses them): nothing to search.
            if pg_sys::get_rel_relkind(oid) as u8 == pg_sys::RELKIND_RELATION {
                tables.push(oid);
            }
        } else {
            let child = pg_sys::relation_open(oid, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
            add_leaves(child, tables, detaching);
            pg_sys::relation_close(child, pg_sys::NoLock as pg_sys::LOCKMODE);
        }
    }
}

/// A relation opened for a search, closed (its lock kept) when dropped; or one the caller holds.
pub struct OpenTable {
    pub rel: pg_sys::Relation,
    owned: bool,
}

impl OpenTable {
    /// `held` itself when `oid` is its OID, else `oid` opened with AccessShareLock.
    ///
    /// # Safety
    /// `held` must be an open relation.
    pub unsafe fn open(held: pg_sys::Relation, oid: pg_sys::Oid) -> OpenTable {
        if (*held).rd_id == oid {
            OpenTable {
                rel: held,
                owned: false,
            }
        } else {
            OpenTable {
                rel: pg_sys::relation_open(oid, pg_sys::AccessShareLock as pg_sys::LOCKMODE),
                owned: true,
            }
        }
    }
}

impl Drop for OpenTable {
    fn drop(&mut self) {
        if self.owned {
            unsafe { pg_sys::relation_close(self.rel, pg_sys::NoLock as pg_sys::LOCKMODE) };
        }
    }
}

/// Whether `rel` has a trigger named `name` calling `func`, and if so whether it is a clone.
unsafe fn trigger_named(rel: pg_sys::Relation, name: &CStr, func: pg_sys::Oid) -> Option<bool> {
    let trigdesc = (*rel).trigdesc;
    if trigdesc.is_null() {
        return None;
    }
    std::slice::from_raw_parts((*trigdesc).triggers, (*trigdesc).numtriggers as usize)
        .iter()
        .find(|t| t.tgfoid == func && CStr::from_ptr(t.tgname) == name)
        .map(|t| t.tgisclone)
}

/// The attached table that `trigger`, firing on `rel`, belongs to: `rel` for a trigger that
/// `simhash_attach()` made, or for a partition's clone the ancestor that holds the original. The
/// duplicate trigger locks and searches the whole attached table, whichever partition a row goes to.
///
/// # Safety
/// `rel` must be an open relation and `trigger` one of its triggers.
pub unsafe fn attached_table(rel: pg_sys::Relation, trigger: &pg_sys::Trigger) -> pg_sys::Oid {
    let mut table = (*rel).rd_id;
    if !trigger.tgisclone {
        return table;
    }
    let name = CStr::from_ptr(trigger.tgname);
    for ancestor in partition_ancestors(table) {
        let parent = pg_sys::relation_open(ancestor, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
        let found = trigger_named(parent, name, trigger.tgfoid);
        pg_sys::relation_close(parent, pg_sys::NoLock as pg_sys::LOCKMODE);
        match found {
            Some(clone) => {
                table = ancestor;
                if !clone {
                    break;
                }
            }
            None => break,
        }
    }
    table
}

/// What the BEFORE UPDATE trigger of a partition leaves for the BEFORE INSERT trigger that may
/// follow: PostgreSQL moves a row whose partition key changes by deleting it and
/// inserting it into its new partition, firing the INSERT triggers there. That INSERT is not a new
/// text: the UPDATE trigger has checked it already (or had nothing to check), and treating it as one
/// would reject a row that was a near-duplicate before, or in skip mode drop the row altogether.
struct UpdateNote {
    trigger_name: Vec<u8>,
    fingerprint: Option<u64>,
    transaction: u32,
    /// The row version the UPDATE replaces: after a move, PostgreSQL marks it as moved.
    table: pg_sys::Oid,
    row: pg_sys::ItemPointerData,
    /// Whether the UPDATE changed the text or the scope.
    changed: bool,
    /// The subtransaction of the UPDATE: rolled back, its delete is undone but the old version
    /// keeps its "moved" marker, so the note goes with it ([`forget_updates_from`]).
    subtransaction: pg_sys::SubTransactionId,
}

thread_local! {
    static UPDATE_NOTES: RefCell<Vec<UpdateNote>> = const { RefCell::new(Vec::new()) };
}

/// Forgets the UPDATEs noted in subtransaction `subid` and those it started (it is rolled back):
/// the next INSERT of the same value is no second half of their moves (issue 48).
pub fn forget_updates_from(subid: pg_sys::SubTransactionId) {
    UPDATE_NOTES.with(|notes| notes.borrow_mut().retain(|n| n.subtransaction < subid));
}

/// Forgets the partitions being attached (the end of a transaction).
pub fn forget_attaching() {
    ATTACHING.with(|a| a.borrow_mut().clear());
}

fn local_transaction() -> u32 {
    crate::compat::local_transaction_id()
}

/// Notes that `trigger` let an UPDATE of the row at `row` of partition `table` through with
/// `fingerprint`.
///
/// # Safety
/// `trigger` must be the firing trigger.
pub unsafe fn note_update(
    trigger: &pg_sys::Trigger,
    table: pg_sys::Oid,
    row: pg_sys::ItemPointerData,
    fingerprint: Option<u64>,
    changed: bool,
) {
    let note = UpdateNote {
        trigger_name: CStr::from_ptr(trigger.tgname).to_bytes().to_vec(),
        fingerprint,
        transaction: local_transaction(),
        table,
        row,
        changed,
        subtransaction: pg_sys::GetCurrentSubTransactionId(),
    };
    UPDATE_NOTES.with(|notes| {
        let mut notes = notes.borrow_mut();
        notes.retain(|n| n.trigger_name != note.trigger_name);
        notes.push(note);
    });
}

/// Whether this INSERT through `trigger` is the second half of a row move (Some: whether the UPDATE
/// changed the text or the scope): the UPDATE noted last by
/// the trigger of the same name, in this transaction, had the same fingerprint, and the row version
/// it replaced is now marked as moved to another partition (an UPDATE in place, as by an upsert or
/// MERGE that also inserts a row with the same text, does not mark it). The note is used up either
/// way, so it serves the INSERT that follows its move; were that INSERT cancelled by another
/// BEFORE INSERT trigger, the next INSERT of the same fingerprint by this trigger in the same
/// transaction would be taken for it.
///
/// # Safety
/// `trigger` must be the firing trigger.
pub unsafe fn is_row_move(trigger: &pg_sys::Trigger, fingerprint: Option<u64>) -> Option<bool> {
    let name = CStr::from_ptr(trigger.tgname).to_bytes();
    let transaction = local_transaction();
    UPDATE_NOTES.with(|notes| {
        let mut notes = notes.borrow_mut();
        let i = notes.iter().position(|n| n.trigger_name == name)?;
        let note = notes.swap_remove(i);
        (note.transaction == transaction
            && note.fingerprint == fingerprint
            && moved_to_another_partition(note.table, note.row))
        .then_some(note.changed)
    })
}

/// Whether the row version at `row` of `table` was deleted by a move to another partition (its
/// ctid then holds PostgreSQL's "moved partitions" marker).
unsafe fn moved_to_another_partition(table: pg_sys::Oid, row: pg_sys::ItemPointerData) -> bool {
    let rel = pg_sys::relation_open(table, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
    let mut tuple = pg_sys::HeapTupleData {
        t_self: row,
        ..Default::default()
    };
    let mut buffer: pg_sys::Buffer = pg_sys::InvalidBuffer as pg_sys::Buffer;
    let found = crate::compat::heap_fetch(
        rel,
        std::ptr::addr_of_mut!(pg_sys::SnapshotAnyData),
        &mut tuple,
        &mut buffer,
    );
    let moved = found && !tuple.t_data.is_null() && {
        let ctid = (*tuple.t_data).t_ctid;
        ctid.ip_blkid.bi_hi == 0xFFFF
            && ctid.ip_blkid.bi_lo == 0xFFFF
            && u32::from(ctid.ip_posid) == pg_sys::MovedPartitionsOffsetNumber
    };
    if buffer != pg_sys::InvalidBuffer as pg_sys::Buffer {
        pg_sys::ReleaseBuffer(buffer);
    }
    pg_sys::relation_close(rel, pg_sys::NoLock as pg_sys::LOCKMODE);
    moved
}

thread_local! {
    /// Set while the event trigger runs its own DDL, which fires it again.
    static IN_EVENT_TRIGGER: Cell<bool> = const { Cell::new(false) };
}

thread_local! {
    /// Tables being attached as partitions by the current ALTER TABLE: (partitioned table, partition,
    /// the extension's schema quoted), for the check of their rows at the command's end.
    static ATTACHING: RefCell<Vec<(pg_sys::Oid, pg_sys::Oid, String)>> = const { RefCell::new(Vec::new()) };
}

/// The tables attached as partitions since the last call (noted by the ddl_command_start trigger).
pub fn take_attaching() -> Vec<(pg_sys::Oid, pg_sys::Oid, String)> {
    ATTACHING.with(|a| std::mem::take(&mut *a.borrow_mut()))
}

struct EventTriggerScope;

impl EventTriggerScope {
    fn enter() -> Option<EventTriggerScope> {
        if IN_EVENT_TRIGGER.with(|f| f.replace(true)) {
            None
        } else {
            Some(EventTriggerScope)
        }
    }
}

impl Drop for EventTriggerScope {
    fn drop(&mut self) {
        IN_EVENT_TRIGGER.with(|f| f.set(false));
    }
}

unsafe fn relation_of(range: *mut pg_sys::RangeVar) -> pg_sys::Oid {
    if range.is_null() {
        return pg_sys::InvalidOid;
    }
    // A missing table is PostgreSQL's error to report, after this trigger.
    pg_sys::RangeVarGetRelidExtended(
        range,
        pg_sys::NoLock as pg_sys::LOCKMODE,
        pg_sys::RVROption::RVR_MISSING_OK,
        None,
        std::ptr::null_mut(),
    )
}

/// What an `ALTER TABLE` subcommand does to a column, when it is one the event trigger refuses on
/// a column `simhash_attach()` added.
#[derive(Clone, Copy)]
enum ColumnChange {
    Drop,
    /// `ALTER COLUMN ... TYPE`: a band or fingerprint column of another type would be read as the
    /// old one (docs/ARCHITECTURE.md §13.6).
    Retype,
    /// `ALTER COLUMN ... DROP EXPRESSION` of a generated band column.
    DropExpression,
    /// `ALTER COLUMN ... SET EXPRESSION` (PostgreSQL 17 on) of a generated band column.
    SetExpression,
}

impl ColumnChange {
    fn of(subtype: pg_sys::AlterTableType::Type) -> Option<ColumnChange> {
        match subtype {
            pg_sys::AlterTableType::AT_DropColumn => Some(ColumnChange::Drop),
            pg_sys::AlterTableType::AT_AlterColumnType => Some(ColumnChange::Retype),
            pg_sys::AlterTableType::AT_DropExpression => Some(ColumnChange::DropExpression),
            other if crate::compat::is_set_expression(other) => Some(ColumnChange::SetExpression),
            _ => None,
        }
    }

    fn verb(self) -> &'static str {
        match self {
            ColumnChange::Drop => "drop column",
            ColumnChange::Retype => "alter the type of column",
            ColumnChange::DropExpression => "drop the expression of column",
            ColumnChange::SetExpression => "set the expression of column",
        }
    }
}

/// The attachments of table `rel` (its `simhash_trigger()` triggers, clones included).
unsafe fn attachments_of(
    rel: pg_sys::Relation,
    ext_namespace: pg_sys::Oid,
) -> Vec<crate::attachment::Attachment> {
    let trigdesc = (*rel).trigdesc;
    let triggers = if trigdesc.is_null() {
        &[][..]
    } else {
        std::slice::from_raw_parts((*trigdesc).triggers, (*trigdesc).numtriggers as usize)
    };
    triggers
        .iter()
        .filter(|t| crate::catalog::is_extension_function(t.tgfoid, b"simhash_trigger", ext_namespace))
        .filter_map(|t| crate::attachment::Attachment::from_trigger(t))
        .collect()
}

/// Refuses `ALTER TABLE ... DROP COLUMN`, `ALTER COLUMN ... TYPE`, `DROP EXPRESSION` or `SET
/// EXPRESSION` of a column that `simhash_attach()` added, and `DROP COLUMN` of an attached text or
/// scope column (SQLSTATE 55000, as a rename of one):
/// without it the trigger and `simhash_detach()` would be left without a column they name, or
/// lookups and the trigger with a column of another type or other values than they read and write.
/// A new type of an attached text column must be text, varchar or char (42804), as attach requires.
unsafe fn refuse_derived_change(
    table: pg_sys::Oid,
    cmd: &pg_sys::AlterTableCmd,
    change: ColumnChange,
    ext_namespace: pg_sys::Oid,
) {
    if table == pg_sys::InvalidOid || cmd.name.is_null() {
        return;
    }
    let rel = pg_sys::try_relation_open(table, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
    if rel.is_null() {
        return;
    }
    let column = crate::catalog::cstr_utf8(cmd.name);
    let attachments = attachments_of(rel, ext_namespace);
    let name = crate::catalog::qualified_name(rel);
    if let Some(att) = attachments
        .iter()
        .find(|att| att.derived_columns().contains(&column))
    {
        raise(EncodedError {
            code: PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            message: format!(
                "cannot {} \"{column}\" of \"{name}\": simhash_attach() added it for column \"{}\"",
                change.verb(),
                att.text_column
            ),
            detail: None,
            hint: Some(format!(
                "Detach column {} with simhash_detach() instead: that drops every column it added.",
                att.text_column
            )),
        });
    }
    // The text or scope column of an attachment: its trigger would fail every write (issue 50).
    if let (ColumnChange::Drop, Some(att)) = (
        change,
        attachments
            .iter()
            .find(|att| att.text_column == column || att.scope_column.as_deref() == Some(&column)),
    ) {
        let what = if att.text_column == column {
            "attached"
        } else {
            "the scope of an attachment"
        };
        raise(EncodedError {
            code: PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            message: format!("cannot drop column \"{column}\" of \"{name}\": it is {what}"),
            detail: Some(format!(
                "simhash_attach() attached column \"{}\"{}; its trigger needs the column.",
                att.text_column,
                att.scope_column
                    .as_ref()
                    .map_or_else(String::new, |s| format!(" with scope \"{s}\""))
            )),
            hint: Some(format!(
                "Detach it first: SELECT simhash_detach('{}', '{}');",
                name.replace('\'', "''"),
                att.text_column.replace('\'', "''")
            )),
        });
    }
    if let (ColumnChange::Retype, Some(att)) =
        (change, attachments.iter().find(|att| att.text_column == column))
    {
        let def = cmd.def as *mut pg_sys::ColumnDef;
        if !def.is_null() && !(*def).typeName.is_null() {
            // A type that does not exist is PostgreSQL's error to report, after this trigger.
            let new_type = pg_sys::LookupTypeNameOid(std::ptr::null_mut(), (*def).typeName, true);
            let base = if new_type == pg_sys::InvalidOid {
                new_type
            } else {
                pg_sys::getBaseType(new_type)
            };
            if new_type != pg_sys::InvalidOid
                && ![pg_sys::TEXTOID, pg_sys::VARCHAROID, pg_sys::BPCHAROID].contains(&base)
            {
                raise(EncodedError {
                    code: PgSqlErrorCode::ERRCODE_DATATYPE_MISMATCH,
                    message: format!(
                        "cannot alter the type of attached column \"{column}\" of \"{name}\" to {}",
                        crate::catalog::cstr_utf8(pg_sys::format_type_be(new_type))
                    ),
                    detail: None,
                    hint: Some(format!(
                        "An attached column is text, varchar or char: detach column {} with simhash_detach() first.",
                        att.text_column
                    )),
                });
            }
        }
    }
    pg_sys::relation_close(rel, pg_sys::NoLock as pg_sys::LOCKMODE);
}

unsafe fn list_cells<T>(list: *mut pg_sys::List) -> Vec<*mut T> {
    if list.is_null() {
        return Vec::new();
    }
    std::slice::from_raw_parts((*list).elements, (*list).length as usize)
        .iter()
        .map(|cell| cell.ptr_value as *mut T)
        .collect()
}

/// The extension's event trigger on `ddl_command_start` of the statement `tree` (see
/// `crate::api::ddl`): the extension's schema is `ext_namespace`, quoted `ext_schema()`.
///
/// # Safety
/// `tree` must be the statement the event trigger fires for.
pub unsafe fn ddl_command_start(
    tree: *mut pg_sys::Node,
    ext_namespace: pg_sys::Oid,
    ext_schema: &dyn Fn() -> String,
) -> pg_sys::Datum {
    let Some(_scope) = EventTriggerScope::enter() else {
        return pg_sys::Datum::from(0);
    };
    if tree.is_null() {
        return pg_sys::Datum::from(0);
    }
    match (*tree).type_ {
        // ALTER TABLE, and ALTER VIEW, MATERIALIZED VIEW or FOREIGN TABLE, which PostgreSQL runs
        // on a table too for some subcommands (the event trigger fires for all four tags).
        pg_sys::NodeTag::T_AlterTableStmt => {
            let stmt = &*(tree as *mut pg_sys::AlterTableStmt);
            for cmd in list_cells::<pg_sys::AlterTableCmd>(stmt.cmds) {
                if let Some(change) = ColumnChange::of((*cmd).subtype) {
                    let table = relation_of(stmt.relation);
                    if table != pg_sys::InvalidOid && crate::privileges::acts_for_owner(table) {
                        refuse_derived_change(table, &*cmd, change, ext_namespace);
                    }
                }
                if (*cmd).subtype != pg_sys::AlterTableType::AT_AttachPartition || (*cmd).def.is_null() {
                    continue;
                }
                let partition = relation_of((*((*cmd).def as *mut pg_sys::PartitionCmd)).name);
                let parent = relation_of(stmt.relation);
                // Only for who may run the command (PostgreSQL checks that after this trigger):
                // the owner of both tables, which the partition's fill then runs as.
                // Nor for a table that is a partition already (of this parent or another, or
                // still being detached by a DETACH ... CONCURRENTLY that did not finish):
                // PostgreSQL refuses it with its own error, which says what to do.
                if parent != pg_sys::InvalidOid
                    && partition != pg_sys::InvalidOid
                    && !pg_sys::get_rel_relispartition(partition)
                    && pg_sys::get_rel_relkind(parent) as u8 == pg_sys::RELKIND_PARTITIONED_TABLE
                    && crate::privileges::acts_for_owner(parent)
                    && crate::privileges::acts_for_owner(partition)
                {
                    let prepare = || {
                        crate::catalog::call_helper(
                            ext_schema,
                            "prepare_partition",
                            &[crate::spi::Arg::Oid(parent), crate::spi::Arg::Oid(partition)],
                        )
                    };
                    // Work done for the table, as its owner (docs/ARCHITECTURE.md §13.3); the SQL of
                    // 0.7.0 or older (not updated yet) as before.
                    if crate::catalog::owner_fills() {
                        crate::privileges::as_owner(partition, false, prepare);
                    } else {
                        prepare();
                    }
                    // Its rows are checked once it is a partition (the ddl_command_end trigger).
                    ATTACHING.with(|a| a.borrow_mut().push((parent, partition, ext_schema())));
                }
            }
        }
        pg_sys::NodeTag::T_RenameStmt => {
            let stmt = &*(tree as *mut pg_sys::RenameStmt);
            // RENAME COLUMN of a table works through ALTER VIEW, ALTER MATERIALIZED VIEW and ALTER
            // FOREIGN TABLE as through ALTER TABLE (PostgreSQL checks only that the relation has
            // columns): all four are followed.
            let relation_types = [
                pg_sys::ObjectType::OBJECT_TABLE,
                pg_sys::ObjectType::OBJECT_VIEW,
                pg_sys::ObjectType::OBJECT_MATVIEW,
                pg_sys::ObjectType::OBJECT_FOREIGN_TABLE,
            ];
            if stmt.renameType != pg_sys::ObjectType::OBJECT_COLUMN
                || !relation_types.contains(&stmt.relationType)
                || stmt.subname.is_null()
                || stmt.newname.is_null()
            {
                return pg_sys::Datum::from(0);
            }
            let table = relation_of(stmt.relation);
            if table != pg_sys::InvalidOid && crate::privileges::acts_for_owner(table) {
                crate::privileges::as_owner(table, false, || {
                    crate::catalog::call_helper(
                        ext_schema,
                        "rename_column",
                        &[
                            crate::spi::Arg::Oid(table),
                            crate::spi::Arg::Name(stmt.subname),
                            crate::spi::Arg::Name(stmt.newname),
                        ],
                    )
                });
            }
        }
        _ => {}
    }
    pg_sys::Datum::from(0)
}
