//! The row writes of the trigger functions that `simhash_attach()` puts on a table (their SQL entry
//! points are `crate::api::trigger`): `simhash_trigger()` computes the fingerprint or signature once
//! per row write (`crate::method::Value`) and, in `skip` or `flag` mode, searches for a near-duplicate
//! before the write to decide (`crate::method::nearest`); `simhash_check_trigger()` checks each
//! written row after its write, with no keys (`crate::write::written`), at the statement's end
//! where it can (`crate::write::deferred`), so that two concurrent near-duplicate writes never both
//! succeed (docs/ARCHITECTURE.md §8). Triggers made before 0.12.0 keep the advisory keys of
//! `crate::check::locks`.

use std::sync::atomic::{AtomicU64, Ordering};

use pgrx::prelude::*;

use crate::attachment::Mode;
use crate::catalog::{attribute, qualified_name_of, relation_name};
use crate::check::report::{check_shard_scope, raise_duplicate};
use crate::check::row::attnum;
use crate::check::row::CopyCommand;
use crate::check::verify::{Asked, Verifier};
use crate::errors::{raise, EncodedError};
use crate::method::{same_stored_bytes, Value, WrittenRow};
use crate::text::Text;
use crate::write::notes;
use crate::write::setup::{setup_of, trigger_error, Setup};
use crate::write::written::{check_written_row, getattr, scope_of};

/// Fingerprints the trigger has computed in this backend: tests use it to show one per row write.
pub static FINGERPRINTS_COMPUTED: AtomicU64 = AtomicU64::new(0);

/// One firing of `simhash_trigger()` on a row: the new row and, for an UPDATE, the old one.
struct Firing<'a> {
    /// The extension's schema, quoted (asked for only when a near-duplicate is found).
    ext_schema: &'a dyn Fn() -> String,
    td: &'a pg_sys::TriggerData,
    setup: Setup,
    tuple: pg_sys::HeapTuple,
    old: Option<pg_sys::HeapTuple>,
}

impl Firing<'_> {
    unsafe fn tupdesc(&self) -> pg_sys::TupleDesc {
        (*self.td.tg_relation).rd_att
    }

    unsafe fn is_partition(&self) -> bool {
        (*(*self.td.tg_relation).rd_rel).relispartition
    }

    /// Whether the text changed, and whether an UPDATE moved the row to another scope (site,
    /// tenant), where it is checked as a new text.
    unsafe fn changes(&self) -> (bool, bool) {
        let (tupdesc, text_att) = (self.tupdesc(), self.setup.text_att);
        let text = getattr(self.tuple, text_att, tupdesc);
        let text_changed = self
            .old
            .is_none_or(|old| !same_text(getattr(old, text_att, tupdesc), text));
        let scope_changed = match self.old {
            Some(old) if self.setup.att.mode != Mode::None => {
                !same_scope(&self.setup, old, self.tuple, tupdesc)
            }
            _ => false,
        };
        (text_changed, scope_changed)
    }

    /// The fingerprint (or signature) of the new row's text (None for a NULL text or one without
    /// tokens), and the hash of the text's bytes (`notes::text_hash`) from the same copy of it.
    unsafe fn compute(&self) -> (Value, u64) {
        let text = getattr(self.tuple, self.setup.text_att, self.tupdesc()).map(|datum| {
            FINGERPRINTS_COMPUTED.fetch_add(1, Ordering::Relaxed);
            Text::from_raw_datum(datum)
        });
        let hash = text.as_ref().map_or(0, |t| notes::hash_bytes(t.bytes()));
        (Value::of(&self.setup.att, text), hash)
    }

    /// Whether the new row's text has fewer characters than the attachment's `min_length`: such a
    /// text is fingerprinted but never checked.
    unsafe fn is_short(&self) -> bool {
        is_short_text(&self.setup.att, self.tuple, self.setup.text_att, self.tupdesc())
    }

    /// Notes an UPDATE of a partition's row (for a later move of the row: `crate::partitions`),
    /// and whether it changed the text or the scope (`changed`).
    unsafe fn note_update(&self, fp: Option<u64>, changed: bool) {
        if let (true, Some(old)) = (self.is_partition(), self.old) {
            crate::partitions::note_update(
                &*self.td.tg_trigger,
                (*self.td.tg_relation).rd_id,
                (*old).t_self,
                fp,
                changed,
            );
        }
    }

    /// The new row with `columns` set to `values` (None: NULL).
    unsafe fn modified(&self, columns: &[(i32, Option<pg_sys::Datum>)]) -> pg_sys::Datum {
        let mut numbers: Vec<i32> = columns.iter().map(|(n, _)| *n).collect();
        let mut values: Vec<pg_sys::Datum> = columns
            .iter()
            .map(|(_, v)| v.unwrap_or(pg_sys::Datum::from(0)))
            .collect();
        let mut nulls: Vec<bool> = columns.iter().map(|(_, v)| v.is_none()).collect();
        pg_sys::Datum::from(pg_sys::heap_modify_tuple_by_cols(
            self.tuple,
            self.tupdesc(),
            numbers.len() as i32,
            numbers.as_mut_ptr(),
            values.as_mut_ptr(),
            nulls.as_mut_ptr(),
        ))
    }
}

///
/// # Safety
/// `td` must be the trigger data of a call of `simhash_trigger()`.
pub unsafe fn on_row(td: &pg_sys::TriggerData, ext_schema: &dyn Fn() -> String) -> pg_sys::Datum {
    let event = td.tg_event;
    let op = event & pg_sys::TRIGGER_EVENT_OPMASK;
    if event & pg_sys::TRIGGER_EVENT_TIMINGMASK != pg_sys::TRIGGER_EVENT_BEFORE
        || event & pg_sys::TRIGGER_EVENT_ROW == 0
        || !(op == pg_sys::TRIGGER_EVENT_INSERT || op == pg_sys::TRIGGER_EVENT_UPDATE)
    {
        trigger_error("simhash_trigger() must run BEFORE INSERT OR UPDATE FOR EACH ROW");
    }
    let (tuple, old) = if op == pg_sys::TRIGGER_EVENT_INSERT {
        (td.tg_trigtuple, None)
    } else {
        (td.tg_newtuple, Some(td.tg_trigtuple))
    };
    let firing = Firing {
        ext_schema,
        td,
        setup: setup_of(td),
        tuple,
        old,
    };
    // The row the triggers of the attached table fired for before is written: its keys go (§8.8).
    crate::check::locks::release_row(firing.setup.attached_table);
    let (text_changed, scope_changed) = firing.changes();
    if !text_changed && !scope_changed {
        let (old, fp_att, tupdesc) = (
            old.expect("an UPDATE has an old row"),
            firing.setup.fp_att,
            firing.tupdesc(),
        );
        let stored = getattr(tuple, fp_att, tupdesc);
        let before = getattr(old, fp_att, tupdesc);
        // A NULL value beside a text is no value kept: the row was written while this trigger did
        // not fire (DISABLE TRIGGER, a replica's apply), and any UPDATE of it computes the value
        // below (`simhash_fill()`, docs/ARCHITECTURE.md §6.3), without a check (the text and the
        // scope are as they were), as an attach fills.
        let missing = stored.is_none() && getattr(tuple, firing.setup.text_att, tupdesc).is_some();
        match Value::unchanged(&firing.setup.att, before, stored) {
            Some(token) if !missing => {
                firing.note_update(token, false);
                return pg_sys::Datum::from(tuple);
            }
            _ => {}
        }
    }
    let (value, text_hash) = firing.compute();
    let token = value.token();
    let mut columns = vec![(firing.setup.fp_att, value.datum())];
    let att = &firing.setup.att;
    columns.extend(value.band_values(&firing.setup.kept_bands, &att.method));
    // While an online attach runs, rows are fingerprinted but not checked (src/online.rs).
    let checking = att.mode != Mode::None && !firing.setup.attaching;
    // The INSERT half of a row moved to another partition is no new text: checked (after its
    // write, by the check trigger) only if the UPDATE changed the text or the scope.
    let after = firing.setup.checks_after(old.is_some());
    let keyless = firing.setup.keyless();
    let moved = if firing.is_partition() && old.is_none() {
        crate::partitions::is_row_move(&*td.tg_trigger, token)
    } else {
        None
    };
    // What the check trigger is told of the row (src/write/notes.rs): the text its value is of and,
    // for the INSERT half of a move, whether the UPDATE changed the text or the scope. Noted only
    // as the row is passed on, only with a value, and not for an UPDATE that keeps the text and the
    // scope (a value filled or computed again): the check trigger takes no note of such a row, of
    // a row skipped here or of a NULL value, and one left behind would be taken for a later row.
    let taken = old.is_none() || text_changed || scope_changed;
    let note = |relid: pg_sys::Oid| {
        if keyless && token.is_some() && taken {
            let note = notes::Note {
                text_hash,
                moved: moved.filter(|_| after),
            };
            notes::note(relid, firing.setup.fp_att, token, note);
        }
    };
    let relid = (*td.tg_relation).rd_id;
    let moved = moved.is_some();
    if let (true, true, Value::SimHash(fp)) = (
        checking && text_changed,
        firing.setup.registered_att.is_some(),
        &value,
    ) {
        check_registered(&firing, *fp);
        note(relid);
        return firing.modified(&columns);
    }
    // Checked after the write alone: 'error' mode with the triggers of 0.12.0 (§8.2).
    let after_only = after && keyless && att.mode == Mode::Error;
    if checking && (text_changed || scope_changed) && !moved && !firing.is_short() {
        // A shard sees its own rows only: its checks, before or after the write, are refused
        // unless its attachment is scoped by the distribution column.
        if let Some(shard) = &firing.setup.shard {
            check_shard_scope(att, shard, td.tg_relation);
        }
        if !after_only {
            match check(&firing, &value) {
                Verdict::Skip => return pg_sys::Datum::from(0),
                Verdict::Flag(column, value) => columns.push((column, value)),
                Verdict::Write => {}
            }
        }
    }
    firing.note_update(token, text_changed || scope_changed);
    note(relid);
    firing.modified(&columns)
}

/// Whether rows `a` and `b` have the same scope value (NULL the same as NULL), or the attachment no
/// scope.
unsafe fn same_scope(
    setup: &Setup,
    a: pg_sys::HeapTuple,
    b: pg_sys::HeapTuple,
    tupdesc: pg_sys::TupleDesc,
) -> bool {
    setup.scope.is_none_or(
        |(n, equal, collation)| match (getattr(a, n, tupdesc), getattr(b, n, tupdesc)) {
            (None, None) => true,
            (Some(x), Some(y)) => pg_sys::FunctionCall2Coll(equal, collation, x, y).value() != 0,
            _ => false,
        },
    )
}

/// Whether two values of the text column (None: NULL) are the same text: the same stored bytes
/// (a toast pointer compares without detoasting), or, stored differently (compressed or not,
/// inline or toasted: `SET body = body || ''`), the same value (issue 48, W2).
unsafe fn same_text(a: Option<pg_sys::Datum>, b: Option<pg_sys::Datum>) -> bool {
    if same_stored_bytes(a, b) {
        return true;
    }
    let (Some(a), Some(b)) = (a, b) else { return false };
    Text::with_bytes(a, |x| Text::with_bytes(b, |y| x == y))
}

/// Whether the text (attribute `text_att`) of `tuple` is shorter than `att.min_length`.
unsafe fn is_short_text(
    att: &crate::attachment::Attachment,
    tuple: pg_sys::HeapTuple,
    text_att: i32,
    tupdesc: pg_sys::TupleDesc,
) -> bool {
    att.min_length > 0
        && getattr(tuple, text_att, tupdesc)
            .is_some_and(|datum| att.is_short(&Text::from_raw_datum(datum).to_utf8()))
}

/// A registry attachment: the registry on the coordinator checked this fingerprint and wrote it
/// with the row; a write that did not go through it is refused, never left unchecked.
unsafe fn check_registered(firing: &Firing, fp: Option<u64>) {
    let (setup, att) = (&firing.setup, &firing.setup.att);
    let Some(n) = setup.registered_att else { return };
    let registered = getattr(firing.tuple, n, firing.tupdesc()).map(|d| d.value() as i64 as u64);
    if fp.is_none() || registered == fp {
        return;
    }
    let table = match &setup.shard {
        Some(shard) => shard.table.clone(),
        None => qualified_name_of((*firing.td.tg_relation).rd_id),
    };
    raise(EncodedError {
        code: PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
        message: format!(
            "simhash_trigger: writes of column \"{}\" of {table} are checked by its near-duplicate registry",
            att.text_column
        ),
        detail: Some(format!(
            "This write did not go through the registry (\"{}\" does not hold the text's fingerprint).",
            att.registered_column()
        )),
        hint: Some(format!(
            "INSERT through the view {}, which checks the registry on the coordinator.",
            att.checked_view(table.trim_matches('"'))
        )),
    });
}

/// What becomes of a checked row.
enum Verdict {
    Write,
    /// Not written (`'skip'` mode and a near-duplicate).
    Skip,
    /// Written with the flag column (its number) set to the near-duplicate's key, or NULL.
    Flag(i32, Option<pg_sys::Datum>),
}

/// Checks a new or changed text with fingerprint or signature `value` for a near-duplicate, under
/// the locks of its fingerprint or band keys; raises the error of `'error'` mode.
unsafe fn check(firing: &Firing, value: &Value) -> Verdict {
    let (setup, att, td) = (&firing.setup, &firing.setup.att, firing.td);
    let tupdesc = firing.tupdesc();
    let flag_att = (att.mode == Mode::Flag).then(|| {
        setup
            .flag_att
            .unwrap_or_else(|| attnum(tupdesc, &att.flag_column(), &relation_name(td.tg_relation)))
    });
    let scope = scope_of(setup, firing.tuple, tupdesc);
    let flag_attr = flag_att.map(|n| attribute(tupdesc, n));
    let (tuple, text_att) = (firing.tuple, setup.text_att);
    let verifier = Verifier::of_datum(att, Asked::default(), move || getattr(tuple, text_att, tupdesc));
    // A row whose scope value is NULL is in no scope: nobody's duplicate (as NULLs in a unique key).
    let nearest = match &scope {
        Some(None) => None,
        scope => crate::method::nearest(
            att,
            value,
            &WrittenRow {
                heap: td.tg_relation,
                attached_table: setup.attached_table,
                value_attnum: setup.fp_att as i16,
                old_tid: firing.old.map(|old| (*old).t_self),
                scope: scope.as_ref().and_then(Option::as_ref),
                flag_attr,
                ext_schema: firing.ext_schema,
                // simhash_check_trigger() checks the row once it is written (crate::write::deferred).
                checked_after: setup.checks_after(firing.old.is_some()) && att.mode == Mode::Error,
                table_checks_after: setup.checks_inserts_after() && !setup.keyless(),
                verifier: verifier.as_ref(),
                keyless: setup.keyless() && setup.checks_after(firing.old.is_some()),
                ignore: None,
            },
        ),
    };
    match (att.mode, nearest) {
        (Mode::Error, Some((key_columns, n))) => {
            raise_duplicate(att, &setup.reported_table(td.tg_relation), &key_columns, &n)
        }
        (Mode::Skip, Some(_)) => Verdict::Skip,
        (Mode::Flag, nearest) => Verdict::Flag(
            flag_att.expect("flag mode has a flag column"),
            nearest.and_then(|(_, n)| n.flag_value),
        ),
        _ => Verdict::Write,
    }
}

/// `simhash_check_trigger()` on a written row: its check after the write (docs/ARCHITECTURE.md
/// §8.2), noted for the statement's end, or made at once outside a statement's executor (COPY). A
/// row the BEFORE trigger left unchanged (an UPDATE that kept the text and the scope, the INSERT
/// half of a row move that changed neither), a short text, a row already flagged and a NULL value
/// are not checked.
///
/// # Safety
/// `td` must be the trigger data of a call of `simhash_check_trigger()`.
pub unsafe fn on_written(td: &pg_sys::TriggerData, ext_schema: &dyn Fn() -> String) -> pg_sys::Datum {
    let event = td.tg_event;
    let op = event & pg_sys::TRIGGER_EVENT_OPMASK;
    if event & pg_sys::TRIGGER_EVENT_TIMINGMASK != pg_sys::TRIGGER_EVENT_AFTER
        || event & pg_sys::TRIGGER_EVENT_ROW == 0
        || !(op == pg_sys::TRIGGER_EVENT_INSERT || op == pg_sys::TRIGGER_EVENT_UPDATE)
    {
        trigger_error("simhash_check_trigger() must run AFTER INSERT OR UPDATE FOR EACH ROW");
    }
    let setup = setup_of(td);
    // The rows of the statement are written: the keys their BEFORE triggers took can go (the older
    // designs' keys; 0.12.0's triggers take none).
    crate::check::locks::release_row(setup.attached_table);
    let update = op == pg_sys::TRIGGER_EVENT_UPDATE;
    // Unpaired (the BEFORE trigger disabled alone), the BEFORE trigger checks.
    if !setup.checks_after(update) {
        return pg_sys::Datum::from(0);
    }
    let rel = td.tg_relation;
    let tupdesc = (*rel).rd_att;
    let (tuple, old) = if update {
        (td.tg_newtuple, Some(td.tg_trigtuple))
    } else {
        (td.tg_trigtuple, None)
    };
    let Some(stored) = getattr(tuple, setup.fp_att, tupdesc) else {
        return pg_sys::Datum::from(0);
    };
    let text = getattr(tuple, setup.text_att, tupdesc);
    if let Some(old) = old {
        if same_scope(&setup, old, tuple, tupdesc) && same_text(getattr(old, setup.text_att, tupdesc), text) {
            return pg_sys::Datum::from(0);
        }
    }
    // The stored value must be that of the stored text: a BEFORE trigger that fires after the
    // extension's and changes the text would leave a row its check and every lookup misjudge.
    let Some(value) = Value::from_stored(&setup.att, Some(stored)) else {
        return pg_sys::Datum::from(0);
    };
    // What the BEFORE trigger computed the value of: the text's hash, compared (cheap); else the value
    // computed again from the stored text.
    let note = notes::take((*rel).rd_id, setup.fp_att, value.token());
    let consistent = match note {
        Some(note) => note.text_hash == notes::text_hash(text),
        None => Value::of(&setup.att, text.map(|d| Text::from_raw_datum(d))).is_stored(stored),
    };
    if !consistent {
        raise(EncodedError {
            code: PgSqlErrorCode::ERRCODE_TRIGGERED_DATA_CHANGE_VIOLATION,
            message: format!(
                "simhash_trigger: column \"{}\" of table \"{}\" was changed after its {} was computed",
                setup.att.text_column,
                relation_name(rel),
                setup.att.method.value_name()
            ),
            detail: Some(format!(
                "A BEFORE trigger that fires after \"{}\" changed the text.",
                setup.att.trigger_name()
            )),
            hint: Some(format!(
                "Triggers fire in the order of their names: rename that trigger to sort before \"{}\".",
                setup.att.trigger_name()
            )),
        });
    }
    // A row is noted for the statement's end even when it is not checked, so that the rows written
    // after it in the statement are told apart from it (statement order).
    let unchanged_move = !update && note.and_then(|n| n.moved) == Some(false);
    let flagged = setup.att.mode == Mode::Flag
        && setup
            .flag_att
            .is_some_and(|n| getattr(tuple, n, tupdesc).is_some());
    let check = !unchanged_move && !flagged && !is_short_text(&setup.att, tuple, setup.text_att, tupdesc);
    let tid = (*tuple).t_self;
    if crate::write::deferred::in_statement() {
        let fp = match value {
            Value::SimHash(fp) => fp,
            Value::MinHash(_) => None,
        };
        crate::write::deferred::note(rel, &*td.tg_trigger, &setup, ext_schema, fp, tid, check);
    } else {
        let copy = CopyCommand::of(tuple);
        if check {
            check_written_row(rel, &setup, ext_schema, tuple, &|_, slot| {
                copy.not_checked_yet(slot)
            });
        }
        copy.checked(tid);
    }
    pg_sys::Datum::from(0)
}
