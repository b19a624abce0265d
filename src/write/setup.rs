//! What the trigger derives from its arguments and its table's catalog entries (its [`Setup`]),
//! kept per (trigger, table) until a relcache invalidation, and whether a table's two triggers
//! leave the duplicate check of INSERTs to the statement's end (`crate::write::deferred`).

use pgrx::prelude::*;

use crate::attachment::{Attachment, Mode};
use crate::catalog::{attnum_of, attribute, cstr_utf8, is_extension_function, relation_name, CatalogCache};
use crate::check::row::attnum;
use crate::errors::{raise, EncodedError};

/// The error of a trigger function called other than as `simhash_attach()` set it up.
pub fn trigger_error(message: &'static str) -> ! {
    raise(EncodedError {
        code: PgSqlErrorCode::ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED,
        message: message.into(),
        detail: None,
        hint: None,
    });
}

/// What the trigger derives from its arguments and its table's catalog entries: the same for
/// every row until a relcache invalidation (ALTER TABLE, an attach or detach of a partition), so
/// kept per (trigger, table) for the backend's current relcache generation.
#[derive(Clone)]
pub struct Setup {
    pub att: Attachment,
    pub text_att: i32,
    pub fp_att: i32,
    /// The flag column, if the table has one (required in flag mode only, when a row is checked).
    pub flag_att: Option<i32>,
    /// The table the trigger was attached to: this one, or the partitioned table it is a partition of.
    pub attached_table: pg_sys::Oid,
    /// Which writes the table's simhash_check_trigger() checks once they are written.
    pub after: After,
    /// The scope column, its type's equality function and collation.
    pub scope: Option<(i32, *mut pg_sys::FmgrInfo, pg_sys::Oid)>,
    /// Where this table is a shard of a Citus table, that table's distribution.
    pub shard: Option<crate::citus::Distribution>,
    /// The registered-fingerprint column of a registry attachment.
    pub registered_att: Option<i32>,
    /// The band columns the trigger keeps, as (band, column number): those of an online attach,
    /// which are plain columns (an offline attach generates them from the fingerprint).
    pub kept_bands: Vec<(i32, i32)>,
    /// Whether an online attach of the column has not finished: the trigger fingerprints rows but
    /// checks none (`Attachment::is_attaching`).
    pub attaching: bool,
}

/// The writes a `simhash_check_trigger()` paired with `simhash_trigger()` fires on (`paired`).
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct After {
    pub inserts: bool,
    pub updates: bool,
}

impl Setup {
    /// Whether a checked write (an INSERT, or an UPDATE when `update`) is checked once it is
    /// written, by `simhash_check_trigger()`: decided by the table's triggers, never by the writing
    /// session's settings (issue 48, S1).
    pub fn checks_after(&self, update: bool) -> bool {
        !self.attaching
            && self.att.mode != Mode::None
            && if update {
                self.after.updates
            } else {
                self.after.inserts
            }
    }

    /// Whether every write of the table is checked after it is written (the triggers of 0.12.0):
    /// then no check takes a key (docs/ARCHITECTURE.md §8.2). Else INSERTs alone (the paired
    /// triggers of 0.10.0 and 0.11.0, `'error'` mode) or none, with the keys of §8.8's older design.
    pub fn keyless(&self) -> bool {
        self.after.inserts && self.after.updates
    }

    /// The table a near-duplicate error names: a shard's distributed table (as regclass text,
    /// unquoted), else `rel` itself.
    ///
    /// # Safety
    /// `rel` must be the open relation the setup is of.
    pub unsafe fn reported_table(&self, rel: pg_sys::Relation) -> String {
        match &self.shard {
            Some(shard) => shard.table.trim_matches('"').to_string(),
            None => relation_name(rel),
        }
    }

    /// Whether INSERTs are checked after their write (the older designs' name).
    pub fn checks_inserts_after(&self) -> bool {
        self.checks_after(false)
    }
}

thread_local! {
        static SETUPS: CatalogCache<(pg_sys::Oid, pg_sys::Oid), Setup> = CatalogCache::default();
}

/// The trigger's [`Setup`] for the row in `td`, or the error of a trigger whose arguments or
/// columns no longer fit.
/// Its mode is the one this session's writes use (`simhash.on_duplicate`, `crate::write::session`).
pub unsafe fn setup_of(td: &pg_sys::TriggerData) -> Setup {
    let mut setup = setup_for(td.tg_relation, &*td.tg_trigger);
    // A shard keeps the attached mode: Citus does not send the coordinator's settings to it.
    setup.att.mode = crate::write::session::mode(setup.att.mode, setup.keyless() && setup.shard.is_none());
    setup
}

/// [`setup_of`] for `trigger` of the open table `rel`.
///
/// # Safety
/// `trigger` must be one of `rel`'s triggers of `simhash_trigger()` or `simhash_check_trigger()`.
pub unsafe fn setup_for(rel: pg_sys::Relation, trigger: &pg_sys::Trigger) -> Setup {
    SETUPS.with(|setups| {
        setups.get_or_compute((trigger.tgoid, (*rel).rd_id), || {
            let Some(att) = Attachment::from_trigger(trigger) else {
                trigger_error(
                    "simhash_trigger() has invalid arguments: attach the table with simhash_attach()",
                );
            };
            let tupdesc = (*rel).rd_att;
            let table = relation_name(rel);
            let text_att = attnum(tupdesc, &att.text_column, &table);
            let fp_att = attnum(tupdesc, &att.fingerprint_column(), &table);
            check_type(
                tupdesc,
                text_att,
                &table,
                &[pg_sys::TEXTOID, pg_sys::VARCHAROID, pg_sys::BPCHAROID],
                "text, varchar or char",
            );
            let (value_type, type_name) = att.method.stored_type();
            check_type(tupdesc, fp_att, &table, &[value_type], type_name);
            // The band columns too: the trigger writes the bands it keeps as their type.
            crate::method::common::verify_columns(rel, &att);
            let flag_att = attnum_of(tupdesc, &att.flag_column()).map(i32::from);
            let scope = att.scope_column.as_deref().map(|column| {
                let n = attnum(tupdesc, column, &table);
                let attr = attribute(tupdesc, n);
                // Kept for the backend's life: the type cache is never freed.
                let typcache = pg_sys::lookup_type_cache(attr.atttypid, pg_sys::TYPECACHE_EQ_OPR_FINFO as i32);
                if (*typcache).eq_opr_finfo.fn_oid == pg_sys::InvalidOid {
                    raise(EncodedError {
                        code: PgSqlErrorCode::ERRCODE_UNDEFINED_FUNCTION,
                        message: format!(
                            "simhash_trigger: column \"{column}\" of table \"{table}\" has no equality operator"
                        ),
                        detail: None,
                        hint: Some("Attach the table again with another scope column.".into()),
                    });
                }
                (n, &mut (*typcache).eq_opr_finfo as *mut pg_sys::FmgrInfo, attr.attcollation)
            });
            let registered_att = att.registry.then(|| {
                let n = attnum(tupdesc, &att.registered_column(), &table);
                check_type(tupdesc, n, &table, &[pg_sys::INT8OID], "bigint");
                n
            });
            let shard = crate::citus::shard_distribution((*rel).rd_id);
            // A registry attachment is checked on the coordinator, before the write (§7.5). A
            // Citus shard is paired as any table: Citus made its check trigger with the
            // distributed table's (since 0.13.0; before, it has none and keeps §8.8's keys).
            let after = if att.registry {
                After::default()
            } else {
                paired(rel, trigger)
            };
            let kept_bands = att
                .band_columns()
                .iter()
                .enumerate()
                .filter_map(|(band, name)| {
                    let n = attnum_of(tupdesc, name)?;
                    (attribute(tupdesc, n.into()).attgenerated == 0).then_some((band as i32, i32::from(n)))
                })
                .collect();
            Setup {
                kept_bands,
                attaching: att.is_attaching(rel),
                registered_att,
                shard,
                scope,
                attached_table: crate::partitions::attached_table(rel, trigger),
                after,
                att,
                text_att,
                fp_att,
                flag_att,
            }
        })
    })
}

/// Checks that a column the trigger reads or writes still has the type the attach gave it: a
/// column altered since then would otherwise be read or written as the wrong type.
fn check_type(tupdesc: pg_sys::TupleDesc, attnum: i32, table: &str, allowed: &[pg_sys::Oid], want: &str) {
    let attr = attribute(tupdesc, attnum);
    let base = unsafe { pg_sys::getBaseType(attr.atttypid) };
    if !allowed.contains(&base) {
        let name = unsafe { cstr_utf8(attr.attname.data.as_ptr()) };
        raise(EncodedError {
            code: PgSqlErrorCode::ERRCODE_DATATYPE_MISMATCH,
            message: format!("simhash_trigger: column \"{name}\" of table \"{table}\" is not {want}"),
            detail: None,
            hint: Some(
                "The column was altered after simhash_attach(); detach the table and attach it again.".into(),
            ),
        });
    }
}

/// Which writes `trigger` on `rel` and its partner leave to the partner's check after the write:
/// for `simhash_trigger()` BEFORE INSERT OR UPDATE, a `simhash_check_trigger()` AFTER row trigger
/// with the same arguments and enabled state (AFTER INSERT since 0.10.0, AFTER INSERT OR UPDATE
/// since 0.12.0), and the other way round. A partition's triggers are clones of its partitioned
/// table's, paired as theirs are.
///
/// # Safety
/// `rel` must be the open relation `trigger` belongs to.
pub unsafe fn paired(rel: pg_sys::Relation, trigger: &pg_sys::Trigger) -> After {
    const ROW: i16 = 1 << 0;
    const BEFORE: i16 = 1 << 1;
    const INSERT: i16 = 1 << 2;
    const UPDATE: i16 = 1 << 4;
    const INSTEAD: i16 = 1 << 6;
    let form = &*(*rel).rd_rel;
    let trigdesc = (*rel).trigdesc;
    if form.relkind != pg_sys::RELKIND_RELATION as std::ffi::c_char || trigdesc.is_null() {
        return After::default();
    }
    let before = trigger.tgtype & BEFORE != 0;
    let (partner, timing) = if before {
        (&b"simhash_check_trigger"[..], ROW)
    } else {
        (&b"simhash_trigger"[..], ROW | BEFORE)
    };
    let namespace = pg_sys::get_func_namespace(trigger.tgfoid);
    let args = |t: &pg_sys::Trigger| -> Vec<&[u8]> {
        (0..t.tgnargs as usize)
            .map(|i| std::ffi::CStr::from_ptr(*t.tgargs.add(i)).to_bytes())
            .collect()
    };
    let triggers = std::slice::from_raw_parts((*trigdesc).triggers, (*trigdesc).numtriggers as usize);
    let partner = triggers.iter().find(|t| {
        t.tgoid != trigger.tgoid
            && is_extension_function(t.tgfoid, partner, namespace)
            && t.tgtype & (ROW | BEFORE | INSTEAD) == timing
            && t.tgtype & INSERT != 0
            && t.tgenabled == trigger.tgenabled
            && args(t) == args(trigger)
    });
    let (after, before_trigger) = match partner {
        None => return After::default(),
        Some(p) if before => (p.tgtype, trigger.tgtype),
        Some(p) => (trigger.tgtype, p.tgtype),
    };
    After {
        inserts: after & INSERT != 0 && before_trigger & INSERT != 0,
        updates: after & UPDATE != 0 && before_trigger & UPDATE != 0,
    }
}
