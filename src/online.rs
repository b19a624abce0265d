//! `simhash_attach_concurrently()`: an attach that keeps the application's reads and writes flowing
//! (docs/ARCHITECTURE.md §14). A procedure in C, called with `CALL` outside a transaction block,
//! that commits as it goes:
//!
//! 1. **begin** — one short transaction adds the columns (plain, no rewrite), the bands constraint
//!    NOT VALID and the triggers, under `simhash.attach_lock_timeout`, tried again until it gets its
//!    lock. From its commit on, every write is fingerprinted (not yet checked).
//! 2. **fill** — the rows already there are fingerprinted in ranges of blocks, a transaction each.
//! 3. **indexes** — each band index is built with `CREATE INDEX CONCURRENTLY`, run here as a
//!    top-level statement (PostgreSQL runs it so only outside functions; this procedure is one).
//! 4. **validate** — `VALIDATE CONSTRAINT` ends the attach: from its commit on, the trigger checks
//!    every write; the procedure returns once every writer that began before has finished.
//!
//! Each step reads where it stands from the catalog, so a cancelled or crashed attach resumes when
//! called again, and `simhash_detach()` removes what it made. The progress is in
//! `simhash_attach_progress` and in NOTICEs at `simhash.progress_interval`.

use std::time::Duration;

use pgrx::prelude::*;
use pgrx::{GucContext, GucFlags, GucRegistry, GucSetting};

use crate::catalog::cstr_utf8;
use crate::errors::{raise, EncodedError};
use crate::progress::Reporter;
use crate::spi::Arg;

/// `simhash.attach_lock_timeout`: how long an online attach waits for a lock that the application's
/// reads and writes then queue behind, before it lets go and tries again.
pub static LOCK_TIMEOUT: GucSetting<i32> = GucSetting::<i32>::new(1000);

/// `simhash.attach_batch_size`: about how many rows an online attach fingerprints per transaction.
pub static BATCH_ROWS: GucSetting<i32> = GucSetting::<i32>::new(10000);

/// The `locktag_field4` of the session lock that lets one online attach of a column run at a time
/// (an advisory lock that SQL's `pg_advisory_*`, using 1 and 2, cannot take).
const JOB_LOCK_FIELD4: u16 = 0x5349;

pub fn register_settings() {
    GucRegistry::define_int_guc(
        c"simhash.attach_lock_timeout",
        c"Milliseconds simhash_attach_concurrently() waits for a lock the application then waits behind.",
        c"When it expires the attach lets go and tries again a moment later.",
        &LOCK_TIMEOUT,
        1,
        i32::MAX,
        GucContext::Userset,
        GucFlags::UNIT_MS,
    );
    GucRegistry::define_int_guc(
        c"simhash.attach_batch_size",
        c"About how many rows simhash_attach_concurrently() fingerprints per transaction.",
        c"Each batch commits: smaller batches hold row locks for less time.",
        &BATCH_ROWS,
        1,
        i32::MAX,
        GucContext::Userset,
        GucFlags::default(),
    );
}

/// The argument types of the procedure (sql/src/online.sql), in order.
pub const ARGUMENT_TYPES: [pg_sys::Oid; 15] = [
    pg_sys::REGCLASSOID,
    pg_sys::NAMEOID,
    pg_sys::INT4OID,
    pg_sys::TEXTOID,
    pg_sys::TEXTOID,
    pg_sys::INT4OID,
    pg_sys::TEXTOID,
    pg_sys::BOOLOID,
    pg_sys::TEXTOID,
    pg_sys::NAMEOID,
    pg_sys::BOOLOID,
    pg_sys::INT4OID,
    pg_sys::TEXTOID,
    pg_sys::FLOAT8OID,
    pg_sys::BOOLOID,
];

/// The online attach of `column` of `table` with the procedure's arguments `args` (in the order
/// of its declaration, sql/src/online.sql), by a caller that may commit: every step, resumed from
/// where an earlier call stopped (docs/ARCHITECTURE.md §14).
///
/// # Safety
/// Called by the procedure, at top level (`crate::api::online`).
pub unsafe fn attach(table: pg_sys::Oid, column: String, args: &[pg_sys::NullableDatum]) {
    // As ALTER TABLE would (the fill runs as the owner: never for a caller without the owner's rights).
    if !crate::privileges::acts_for_owner(table) {
        pg_sys::aclcheck_error(
            pg_sys::AclResult::ACLCHECK_NOT_OWNER,
            pg_sys::ObjectType::OBJECT_TABLE,
            pg_sys::get_rel_name(table),
        );
    }
    let _job = Job::claim(table, &column);
    let mut job = Attach {
        table,
        column,
        reporter: Reporter::new("simhash_attach_concurrently"),
        first_report: true,
    };
    if job.begin(args) {
        job.fill();
        job.build_indexes();
        job.validate();
    }
    job.wait_for_writers();
    job.forget_progress();
    job.report_existing();
}

/// The session lock of one online attach of a column: a second one of the same column fails at
/// once instead of building the same indexes twice. Released on return or error (and by the end of
/// the session, should the backend die).
struct Job(pg_sys::LOCKTAG);

impl Job {
    unsafe fn claim(table: pg_sys::Oid, column: &str) -> Job {
        let tag = pg_sys::LOCKTAG {
            locktag_field1: pg_sys::MyDatabaseId.to_u32(),
            locktag_field2: table.to_u32(),
            locktag_field3: simhash_core::hash::fnv1a64(column.as_bytes()) as u32,
            locktag_field4: JOB_LOCK_FIELD4,
            locktag_type: pg_sys::LockTagType::LOCKTAG_ADVISORY as u8,
            locktag_lockmethodid: pg_sys::USER_LOCKMETHOD as u8,
        };
        let got = pg_sys::LockAcquire(&tag, pg_sys::ExclusiveLock as pg_sys::LOCKMODE, true, true);
        if got == pg_sys::LockAcquireResult::LOCKACQUIRE_NOT_AVAIL {
            raise(EncodedError {
                code: PgSqlErrorCode::ERRCODE_LOCK_NOT_AVAILABLE,
                message: format!(
                    "simhash_attach_concurrently: column \"{column}\" is being attached by another session"
                ),
                detail: None,
                hint: Some("See simhash_attach_progress.".into()),
            });
        }
        if got == pg_sys::LockAcquireResult::LOCKACQUIRE_ALREADY_HELD {
            // Left by an earlier call of this session that failed: hold it once.
            pg_sys::LockRelease(&tag, pg_sys::ExclusiveLock as pg_sys::LOCKMODE, true);
        }
        Job(tag)
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        unsafe { pg_sys::LockRelease(&self.0, pg_sys::ExclusiveLock as pg_sys::LOCKMODE, true) };
    }
}

/// Commits the transaction and starts the next one, as `COMMIT` in a procedure does (no snapshot
/// is left active; portals of the call are kept).
unsafe fn commit() {
    pg_sys::SPI_connect_ext(pg_sys::SPI_OPT_NONATOMIC as i32);
    pg_sys::SPI_commit();
    pg_sys::SPI_finish();
}

/// Runs `sql` (one utility statement) as a top-level statement in transactions of its own, as if
/// the client had sent it: how `CREATE INDEX CONCURRENTLY`, `DROP INDEX CONCURRENTLY` and `VACUUM`,
/// which commit inside, run from here. No SPI connection may be open (the call's is none: see
/// [`require_top_level`]).
unsafe fn run_top_level(sql: &str) {
    commit();
    let context = pg_sys::CurrentMemoryContext;
    let text = crate::spi::server_cstring(sql);
    let parsed = pg_sys::pg_parse_query(text.as_ptr());
    let raw = (*(*parsed).elements).ptr_value as *mut pg_sys::RawStmt;
    let statement = pg_sys::palloc0(std::mem::size_of::<pg_sys::PlannedStmt>()) as *mut pg_sys::PlannedStmt;
    (*statement).type_ = pg_sys::NodeTag::T_PlannedStmt;
    (*statement).commandType = pg_sys::CmdType::CMD_UTILITY;
    (*statement).canSetTag = true;
    (*statement).utilityStmt = (*raw).stmt;
    (*statement).stmt_location = (*raw).stmt_location;
    (*statement).stmt_len = (*raw).stmt_len;
    pg_sys::PushActiveSnapshot(pg_sys::GetTransactionSnapshot());
    pg_sys::ProcessUtility(
        statement,
        text.as_ptr(),
        false,
        pg_sys::ProcessUtilityContext::PROCESS_UTILITY_TOPLEVEL,
        std::ptr::null_mut(),
        std::ptr::null_mut(),
        pg_sys::None_Receiver,
        std::ptr::null_mut(),
    );
    if pg_sys::ActiveSnapshotSet() {
        pg_sys::PopActiveSnapshot();
    }
    pg_sys::MemoryContextSwitchTo(context);
    commit();
}

/// Sleeps `ms` milliseconds, answering a cancel.
fn pause(ms: u64) {
    let mut left = ms;
    while left > 0 {
        let step = left.min(50);
        std::thread::sleep(Duration::from_millis(step));
        left -= step;
        pg_sys::check_for_interrupts!();
    }
}

/// Runs `sql` with `args` as `$1`, `$2`, ... (connecting to SPI, in the current transaction);
/// returns its rows with every column as text (None: NULL), and the number of rows it processed.
unsafe fn query(sql: &str, args: &[Arg]) -> (Vec<Vec<Option<String>>>, u64) {
    crate::spi::connected(|| {
        let status = crate::spi::execute(sql, args, false, 0);
        if status < 0 {
            raise(EncodedError {
                code: PgSqlErrorCode::ERRCODE_INTERNAL_ERROR,
                message: format!("simhash_attach_concurrently: a statement failed (SPI status {status})"),
                detail: Some(format!("Statement: {sql}")),
                hint: None,
            });
        }
        let processed = pg_sys::SPI_processed;
        let mut rows = Vec::new();
        let table = pg_sys::SPI_tuptable;
        if !table.is_null() {
            let tupdesc = (*table).tupdesc;
            for &tuple in std::slice::from_raw_parts((*table).vals, processed as usize) {
                rows.push(
                    (1..=(*tupdesc).natts)
                        .map(|n| {
                            let value = pg_sys::SPI_getvalue(tuple, tupdesc, n);
                            (!value.is_null()).then(|| cstr_utf8(value))
                        })
                        .collect(),
                );
            }
        }
        (rows, processed)
    })
}

/// [`query`] as the owner of `relid` in a security-restricted operation (`all_rows`: whatever its
/// policies), with the search path `pg_catalog, pg_temp`.
unsafe fn query_as_owner(relid: pg_sys::Oid, all_rows: bool, sql: &str, args: &[Arg]) -> u64 {
    crate::privileges::as_owner(relid, all_rows, || {
        crate::privileges::with_safe_search_path(|| query(sql, args).1)
    })
}

fn text_arg(value: &str) -> Arg {
    Arg::Value(pg_sys::TEXTOID, value.into_datum())
}

fn int8_arg(value: i64) -> Arg {
    Arg::Value(pg_sys::INT8OID, Some(pg_sys::Datum::from(value)))
}

/// A table that holds rows, as `simhash_internal.online_fill_targets()` describes it.
struct FillTarget {
    leaf: pg_sys::Oid,
    /// The UPDATE of the rows of blocks `$1` to `$2` that the application has not locked.
    statement: String,
    /// The UPDATE of the rows left.
    sweep: String,
    blocks: i64,
    tuples: f64,
}

/// One online attach as it goes.
struct Attach {
    table: pg_sys::Oid,
    column: String,
    reporter: Reporter,
    first_report: bool,
}

impl Attach {
    /// Step 1: the columns, the constraint and the triggers (or nothing, for an attach to resume).
    /// False when only the last wait is left (an attach cancelled while it waited for writers).
    unsafe fn begin(&mut self, args: &[pg_sys::NullableDatum]) -> bool {
        // The procedure of 0.10.0 (before `ALTER EXTENSION ... UPDATE`) passes one argument less, and
        // its online_begin() takes one less.
        let placeholders: Vec<String> = (1..=args.len() + 1).map(|i| format!("${i}")).collect();
        let sql = format!(
            "SELECT simhash_internal.online_begin({})",
            placeholders.join(", ")
        );
        let mut params: Vec<Arg> = ARGUMENT_TYPES
            .iter()
            .zip(args)
            .map(|(&ty, a)| Arg::Value(ty, (!a.isnull).then_some(a.value)))
            .collect();
        params.push(Arg::Value(
            pg_sys::INT4OID,
            Some(pg_sys::Datum::from(LOCK_TIMEOUT.get())),
        ));
        let mut attempts = 0u32;
        loop {
            let outcome = query(&sql, &params).0[0][0].clone().unwrap_or_default();
            if outcome != "locked" {
                let phase = match outcome.as_str() {
                    "resumed" => "resuming",
                    "finished" => "waiting for writers",
                    _ => "filling",
                };
                self.progress(phase, None, None, None);
                commit();
                return outcome != "finished";
            }
            commit();
            attempts += 1;
            self.retrying("adding columns and triggers", attempts);
        }
    }

    /// Notes a catalog change that did not get its lock in time, and waits before the next try.
    fn retrying(&mut self, what: &str, attempts: u32) {
        let timeout = LOCK_TIMEOUT.get();
        self.reporter.report(|| {
            format!("{what}: lock not had within simhash.attach_lock_timeout ({timeout} ms) in {attempts} attempts; trying again")
        });
        pause(u64::from(attempts.min(10)) * 100);
    }

    /// Step 2: fingerprints the rows already there, a range of blocks per transaction.
    unsafe fn fill(&mut self) {
        let (targets, _) = query(
            "SELECT t.leaf::pg_catalog.oid, t.statement, t.sweep, t.blocks, t.tuples \
             FROM simhash_internal.online_fill_targets($1::pg_catalog.regclass, $2::pg_catalog.name) t",
            &[Arg::Oid(self.table), text_arg(&self.column)],
        );
        let parse = |v: &Option<String>| v.as_deref().and_then(|s| s.parse::<f64>().ok()).unwrap_or(0.0);
        let targets: Vec<FillTarget> = targets
            .iter()
            .map(|r| FillTarget {
                leaf: pg_sys::Oid::from(parse(&r[0]) as u32),
                statement: r[1].clone().unwrap_or_default(),
                sweep: r[2].clone().unwrap_or_default(),
                blocks: parse(&r[3]) as i64,
                tuples: parse(&r[4]),
            })
            .collect();
        // Each table is filled as its owner (a partition may have another owner than the table
        // attached): only for a caller that has that owner's privileges already, as the offline
        // fill asks of each partition (`simhash_internal.execute_as_owner`). It drops rights, it
        // never lends them (docs/ARCHITECTURE.md §13.3).
        for target in &targets {
            if !crate::privileges::acts_for_owner(target.leaf) {
                pg_sys::aclcheck_error(
                    pg_sys::AclResult::ACLCHECK_NOT_OWNER,
                    pg_sys::ObjectType::OBJECT_TABLE,
                    pg_sys::get_rel_name(target.leaf),
                );
            }
        }
        let total_blocks: i64 = targets.iter().map(|t| t.blocks).sum();
        let total_rows: Option<i64> = targets
            .iter()
            .all(|t| t.tuples >= 0.0)
            .then(|| targets.iter().map(|t| t.tuples as i64).sum());
        let mut blocks_done = 0i64;
        let mut written = 0u64;
        for FillTarget {
            leaf,
            statement,
            sweep,
            blocks,
            tuples,
        } in &targets
        {
            let per_block = if *blocks > 0 && *tuples > 0.0 {
                (tuples / *blocks as f64).max(1.0)
            } else {
                50.0
            };
            let step = ((f64::from(BATCH_ROWS.get()) / per_block) as i64).max(1);
            // Each row written leaves its old version behind: a VACUUM after every eighth of the
            // table lets the next batches' rows reuse that space, so the table grows by about an
            // eighth instead of doubling (docs/ARCHITECTURE.md §14.3).
            let vacuum_every = (*blocks / 8).max(128);
            let (mut since_vacuum, mut unvacuumed) = (0i64, 0u64);
            let leaf_name = crate::catalog::qualified_name_of(*leaf);
            let mut start = 0i64;
            while start < *blocks {
                let end = (start + step).min(*blocks);
                let n = query_as_owner(*leaf, true, statement, &[int8_arg(start), int8_arg(end)]);
                written += n;
                blocks_done += end - start;
                let done = match total_rows {
                    Some(rows) if total_blocks > 0 => Some(rows * blocks_done / total_blocks),
                    _ => Some(written as i64),
                };
                self.progress(
                    "filling",
                    Some(&format!("{written} rows fingerprinted")),
                    done,
                    total_rows,
                );
                commit();
                since_vacuum += end - start;
                unvacuumed += n;
                if since_vacuum >= vacuum_every && unvacuumed > 0 && end < *blocks {
                    run_top_level(&format!("VACUUM {leaf_name}"));
                    since_vacuum = 0;
                    unvacuumed = 0;
                }
                start = end;
            }
            // The rows the application had locked when their range was done, if it did not write them since.
            let n = query_as_owner(*leaf, true, sweep, &[]);
            written += n;
            commit();
        }
    }

    /// Step 3: the band indexes, built concurrently, one statement at a time as the catalog says.
    unsafe fn build_indexes(&mut self) {
        let mut last: Option<String> = None;
        let mut attempts = 0u32;
        loop {
            let (rows, _) = query(
                "SELECT s.statement, s.top_level::pg_catalog.text \
                 FROM simhash_internal.online_next_index_step($1::pg_catalog.regclass, $2::pg_catalog.name) s",
                &[Arg::Oid(self.table), text_arg(&self.column)],
            );
            let Some(statement) = rows[0][0].clone() else {
                commit();
                return;
            };
            let concurrently = rows[0][1].as_deref() == Some("true");
            if last.as_deref() == Some(statement.as_str()) && concurrently {
                raise(EncodedError {
                    code: PgSqlErrorCode::ERRCODE_INTERNAL_ERROR,
                    message: "simhash_attach_concurrently: an index step did not take effect".into(),
                    detail: Some(format!("Statement: {statement}")),
                    hint: None,
                });
            }
            self.progress("building indexes", Some(&statement), None, None);
            commit();
            if concurrently {
                run_top_level(&statement);
                attempts = 0;
            } else {
                let (done, _) = query(
                    "SELECT simhash_internal.run_locked($1::pg_catalog.regclass, $2, $3)::pg_catalog.text",
                    &[
                        Arg::Oid(self.table),
                        text_arg(&statement),
                        Arg::Value(pg_sys::INT4OID, Some(LOCK_TIMEOUT.get().into())),
                    ],
                );
                commit();
                if done[0][0].as_deref() != Some("true") {
                    attempts += 1;
                    self.retrying("building indexes", attempts);
                    continue;
                }
            }
            last = Some(statement);
        }
    }

    /// Step 4: validates the bands constraint, from which moment the trigger checks every write.
    unsafe fn validate(&mut self) {
        self.progress("validating", None, None, None);
        commit();
        query(
            "SELECT simhash_internal.online_validate($1::pg_catalog.regclass, $2::pg_catalog.name)",
            &[Arg::Oid(self.table), text_arg(&self.column)],
        );
        commit();
    }

    /// At the end, a NOTICE of the rows already in the table that have a near-duplicate (as
    /// `simhash_attach()` gives: `simhash_internal.report_existing()`), counted whatever the table's
    /// size: no lock is held now.
    unsafe fn report_existing(&mut self) {
        query(
            "SELECT simhash_internal.report_existing($1::pg_catalog.regclass, $2::pg_catalog.name, NULL)",
            &[Arg::Oid(self.table), text_arg(&self.column)],
        );
        commit();
    }

    /// Then waits for the writers that began before (whose rows were not checked) to finish.
    unsafe fn wait_for_writers(&mut self) {
        self.progress("waiting for writers", None, None, None);
        commit();
        let (relations, _) = query(
            "SELECT p.relid::pg_catalog.oid FROM simhash_internal.relation_tree($1::pg_catalog.regclass) p",
            &[Arg::Oid(self.table)],
        );
        for relation in relations {
            let relid = pg_sys::Oid::from(
                relation[0]
                    .as_deref()
                    .and_then(|s| s.parse::<u32>().ok())
                    .unwrap_or(0),
            );
            let tag = pg_sys::LOCKTAG {
                locktag_field1: pg_sys::MyDatabaseId.to_u32(),
                locktag_field2: relid.to_u32(),
                locktag_field3: 0,
                locktag_field4: 0,
                locktag_type: pg_sys::LockTagType::LOCKTAG_RELATION as u8,
                locktag_lockmethodid: pg_sys::DEFAULT_LOCKMETHOD as u8,
            };
            // Every transaction holding a lock that a writer holds (ROW EXCLUSIVE conflicts with SHARE).
            pg_sys::WaitForLockers(tag, pg_sys::ShareLock as pg_sys::LOCKMODE, false);
        }
    }

    /// Writes where the attach stands into `simhash_internal.attach_progress` (as the extension's
    /// owner, whose table it is; the caller may not write it) and, at `simhash.progress_interval`,
    /// a NOTICE.
    unsafe fn progress(&mut self, phase: &str, detail: Option<&str>, done: Option<i64>, total: Option<i64>) {
        let first = std::mem::replace(&mut self.first_report, false);
        query_as_owner(
            progress_table(),
            false,
            "INSERT INTO simhash_internal.attach_progress AS p \
               (table_name, text_column, pid, phase, detail, rows_done, rows_total, started, updated) \
             VALUES ($1, $2::pg_catalog.name, pg_catalog.pg_backend_pid(), $3, $4, $5, $6, pg_catalog.now(), \
                     pg_catalog.clock_timestamp()) \
             ON CONFLICT (table_name, text_column) DO UPDATE SET pid = excluded.pid, phase = excluded.phase, \
               detail = excluded.detail, rows_done = excluded.rows_done, rows_total = excluded.rows_total, \
               started = CASE WHEN $7 THEN excluded.started ELSE p.started END, updated = excluded.updated",
            &[
                Arg::Oid(self.table),
                text_arg(&self.column),
                text_arg(phase),
                Arg::Value(pg_sys::TEXTOID, detail.and_then(|d| d.into_datum())),
                Arg::Value(pg_sys::INT8OID, done.map(pg_sys::Datum::from)),
                Arg::Value(pg_sys::INT8OID, total.map(pg_sys::Datum::from)),
                Arg::Value(pg_sys::BOOLOID, Some(pg_sys::Datum::from(first))),
            ],
        );
        let column = self.column.clone();
        self.reporter.report(|| match (done, total) {
            (Some(done), Some(total)) => format!("column \"{column}\": {phase}, {done} of {total} rows"),
            _ => match detail {
                Some(detail) => format!("column \"{column}\": {phase}: {detail}"),
                None => format!("column \"{column}\": {phase}"),
            },
        });
    }

    /// Removes the attach's row of progress once it has finished.
    unsafe fn forget_progress(&self) {
        query_as_owner(
            progress_table(),
            false,
            "DELETE FROM simhash_internal.attach_progress p \
             WHERE p.table_name OPERATOR(pg_catalog.=) $1 AND p.text_column OPERATOR(pg_catalog.=) $2::pg_catalog.name",
            &[Arg::Oid(self.table), text_arg(&self.column)],
        );
    }
}

/// The table of progress rows (the extension's, in its internal schema).
unsafe fn progress_table() -> pg_sys::Oid {
    let namespace = crate::catalog::internal_namespace();
    pg_sys::get_relname_relid(c"attach_progress".as_ptr(), namespace)
}
