//! MinHash attachments at run time (docs/ARCHITECTURE.md §2.10, §4.5, §5.1): a text's signature and
//! band keys, and the query that finds the rows of a table which share a band with a signature
//! and reach the threshold, for lookups (whole rows, most similar first; the trigger's check reads
//! the GIN index itself, `super::check`). The contract, "shares a band and estimated similarity ≥ threshold", is
//! `simhash_core::minhash::is_match`; the GIN index over the band keys only narrows the rows to
//! those sharing a key.

use std::cell::RefCell;
use std::collections::HashMap;

use pgrx::prelude::*;
use simhash_core::minhash::{self, Signature};

use crate::attachment::{Attachment, MinHashSettings};
use crate::catalog::qualified_name_of;
use crate::check::row::ScopeFilter;
use crate::check::verify::Verifier;
use crate::errors::{raise, EncodedError};

/// The signature of `text` with the attachment's options, or None without tokens.
pub fn signature_of(text: &str, settings: &MinHashSettings) -> Option<Signature> {
    use crate::errors::OrRaise;
    minhash::try_minhash_with(
        text,
        &settings.options,
        simhash_core::Chunking::default(),
        &mut crate::errors::check_interrupts,
    )
    .or_raise()
}

/// The band keys of a signature made with `settings`.
pub fn band_keys(signature: &Signature, settings: &MinHashSettings) -> Vec<i64> {
    minhash::band_keys(signature, &settings.lsh).unwrap_or_else(|e| corrupt(&e.to_string()))
}

pub fn corrupt(what: &str) -> ! {
    raise(EncodedError {
        code: PgSqlErrorCode::ERRCODE_DATA_CORRUPTED,
        message: format!("a stored MinHash signature cannot be compared: {what}"),
        detail: None,
        hint: Some("Detach the column with simhash_detach() and attach it again.".into()),
    })
}

/// What to look for, and where.
pub struct Probe<'a> {
    /// The table read: the attached table (every partition), a partition, a shard, a Citus table.
    pub relid: pg_sys::Oid,
    pub att: &'a Attachment,
    pub settings: &'a MinHashSettings,
    pub signature: &'a Signature,
    pub keys: &'a [i64],
    /// The least estimated similarity of a row (with a verifier, of a row whose text is read).
    pub threshold: f64,
    /// Only rows with this scope value count.
    pub scope: Option<&'a ScopeFilter<'a>>,
    /// Rows are verified against the text looked up: their similarity is the exact one.
    pub verifier: Option<&'a Verifier>,
}

/// A row the contract accepts.
pub struct Match {
    pub table: pg_sys::Oid,
    pub tid: pg_sys::ItemPointerData,
    pub similarity: f64,
    /// The whole row, copied out of SPI's memory.
    pub row: Option<pg_sys::Datum>,
}

/// What a prepared query is kept under: the table and the query's text, which names the table and
/// the columns it reads, so a renamed table or column never reaches a stale plan.
type PlanKey = (u32, String);

thread_local! {
    static PLANS: RefCell<HashMap<PlanKey, pg_sys::SPIPlanPtr>> = RefCell::new(HashMap::new());
}

/// The prepared query of `probe`: the rows whose band keys overlap `$1`, with their table, TID,
/// signature, then the scope value and the whole row when asked for.
unsafe fn plan_of(probe: &Probe) -> pg_sys::SPIPlanPtr {
    let quote = |c: &str| pgrx::spi::quote_identifier(c);
    let att = probe.att;
    // A Citus table's rows come from its shards, where table and TID mean nothing to the caller.
    let distributed = crate::citus::distribution(probe.relid).is_some();
    // A partitioned table is read with its partitions; an ordinary one alone.
    let only =
        if distributed || pg_sys::get_rel_relkind(probe.relid) as u8 == pg_sys::RELKIND_PARTITIONED_TABLE {
            ""
        } else {
            "ONLY "
        };
    let lsh = quote(&att.band_columns()[0]);
    let fp = quote(&att.fingerprint_column());
    let scope = match (&att.scope_column, probe.scope) {
        (Some(c), Some(_)) => format!(", t.{}", quote(c)),
        _ => String::new(),
    };
    let place = if distributed {
        "0::pg_catalog.oid, '(0,0)'::pg_catalog.tid"
    } else {
        "t.tableoid, t.ctid"
    };
    // Verified, each row's text (text, varchar or char: cast to text).
    let text = match probe.verifier {
        Some(_) => format!(", t.{}::pg_catalog.text", quote(&att.text_column)),
        None => String::new(),
    };
    // Then the row's columns, each as stored: a toasted value stays a pointer until the row is
    // accepted and made a composite (`row_of`). Selecting the whole row `t` would make one of every
    // candidate, reading every toasted value of rows verification then turns down (issue 49).
    let sql = format!(
        "SELECT {place}, t.{fp}{scope}{text}, t.* FROM {only}{} t \
         WHERE t.{lsh} OPERATOR(pg_catalog.&&) $1",
        qualified_name_of(probe.relid)
    );
    let key = (probe.relid.to_u32(), sql);
    if let Some(plan) = PLANS.with(|p| p.borrow().get(&key).copied()) {
        return plan;
    }
    let plan = crate::spi::prepare_kept(&key.1, &mut [pg_sys::INT8ARRAYOID], "its MinHash lookup");
    PLANS.with(|p| p.borrow_mut().insert(key, plan));
    plan
}

/// Runs `f` (an execution of a prepared query) with `enable_seqscan` off, as a function's `SET`
/// clause would: whenever the plan is made — at its first run, when the table may still be empty
/// and its statistics say a scan is cheapest, or again after an invalidation — it reads the GIN
/// index, whose cost does not grow with the table (bench/results/minhash_cost.md: a bulk insert into
/// a table attached empty kept a sequential scan per row). An error unwinds the setting with the
/// transaction.
unsafe fn with_index_scans<T>(f: impl FnOnce() -> T) -> T {
    crate::privileges::with_setting(c"enable_seqscan", c"off", f)
}

/// `keys` as a `bigint[]` datum.
pub unsafe fn int8_array(keys: &[i64]) -> pg_sys::Datum {
    let mut elems: Vec<pg_sys::Datum> = keys.iter().map(|&k| pg_sys::Datum::from(k)).collect();
    let array = pg_sys::construct_array(
        elems.as_mut_ptr(),
        elems.len() as i32,
        pg_sys::INT8OID,
        8,
        true,
        b'd' as std::ffi::c_char,
    );
    pg_sys::Datum::from(array)
}

/// The bytes of a non-NULL `bytea` datum.
pub unsafe fn bytea_bytes<'a>(datum: pg_sys::Datum) -> &'a [u8] {
    let bytes = pg_sys::pg_detoast_datum_packed(datum.cast_mut_ptr());
    pgrx::varlena_to_byte_slice(bytes)
}

/// The rows `probe` accepts, as `snapshot` sees them (None: the active snapshot), most similar
/// first, then by table and TID.
///
/// # Safety
/// Call where a query may run.
pub unsafe fn matches(probe: &Probe, snapshot: Option<pg_sys::Snapshot>) -> Vec<Match> {
    pg_sys::SPI_connect();
    run_probe(probe, snapshot);
    let table = &*pg_sys::SPI_tuptable;
    let rows = std::slice::from_raw_parts(table.vals, pg_sys::SPI_processed as usize);
    if rows.is_empty() {
        pg_sys::SPI_finish();
        return Vec::new();
    }
    // The table's row type, for the rows accepted (in SPI's memory, freed with it).
    let rowtype = pg_sys::lookup_rowtype_tupdesc_copy(pg_sys::get_rel_type_id(probe.relid), -1);
    let mut found: Vec<Match> = rows
        .iter()
        .filter_map(|&row| match_of(probe, row, table.tupdesc, rowtype))
        .collect();
    pg_sys::SPI_finish();
    found.sort_by(|a, b| {
        b.similarity
            .total_cmp(&a.similarity)
            .then(a.table.to_u32().cmp(&b.table.to_u32()))
            .then(crate::check::row::tid_order(&a.tid).cmp(&crate::check::row::tid_order(&b.tid)))
    });
    found
}

/// Runs the probe's query (SPI connected) with `snapshot`, or the statement's.
unsafe fn run_probe(probe: &Probe, snapshot: Option<pg_sys::Snapshot>) {
    let plan = plan_of(probe);
    let mut values = [int8_array(probe.keys)];
    let nulls = [b' ' as std::ffi::c_char];
    let status = with_index_scans(|| match snapshot {
        Some(snapshot) => pg_sys::SPI_execute_snapshot(
            plan,
            values.as_mut_ptr(),
            nulls.as_ptr(),
            snapshot,
            std::ptr::null_mut(),
            true,
            false,
            0,
        ),
        None => pg_sys::SPI_execute_plan(plan, values.as_mut_ptr(), nulls.as_ptr(), true, 0),
    });
    if status != pg_sys::SPI_OK_SELECT as i32 {
        raise(EncodedError {
            code: PgSqlErrorCode::ERRCODE_INTERNAL_ERROR,
            message: format!("simhash_ext: the MinHash lookup failed (SPI status {status})"),
            detail: None,
            hint: None,
        });
    }
}

/// The match a row of the probe's query is (table, ctid, signature, then the scope value with a
/// scope, the text when verified, then the row's columns), or None when it has no signature, does
/// not reach the threshold or is out of scope; its row a composite of type `rowtype`.
unsafe fn match_of(
    probe: &Probe,
    row: pg_sys::HeapTuple,
    desc: pg_sys::TupleDesc,
    rowtype: pg_sys::TupleDesc,
) -> Option<Match> {
    let scope_col = 4;
    let text_col = if probe.scope.is_some() { 5 } else { 4 };
    let first_col = text_col + i32::from(probe.verifier.is_some());
    let mut null = false;
    let relid = pg_sys::Oid::from(pg_sys::SPI_getbinval(row, desc, 1, &mut null).value() as u32);
    let tid = *pg_sys::SPI_getbinval(row, desc, 2, &mut null).cast_mut_ptr::<pg_sys::ItemPointerData>();
    let stored = pg_sys::SPI_getbinval(row, desc, 3, &mut null);
    if null {
        return None;
    }
    let stored = Signature::decode(bytea_bytes(stored)).unwrap_or_else(|e| corrupt(&e.to_string()));
    let accepted = minhash::is_match(probe.signature, &stored, &probe.settings.lsh, probe.threshold)
        .unwrap_or_else(|e| corrupt(&e.to_string()));
    if !accepted {
        return None;
    }
    if let Some(scope) = probe.scope {
        let value = pg_sys::SPI_getbinval(row, desc, scope_col, &mut null);
        if null || pg_sys::FunctionCall2Coll(scope.equal, scope.collation, scope.value, value).value() == 0 {
            return None;
        }
    }
    let similarity = match probe.verifier {
        Some(v) => {
            let text = pg_sys::SPI_getbinval(row, desc, text_col, &mut null);
            v.passes_datum((!null).then_some(text))?
        }
        None => minhash::similarity(probe.signature, &stored).unwrap_or_else(|e| corrupt(&e.to_string())),
    };
    let row = Some(row_of(row, desc, first_col, rowtype));
    Some(Match {
        table: relid,
        tid,
        similarity,
        row,
    })
}

/// The composite of type `rowtype` (a table's row type) whose columns are those of `row` from
/// column `first` on (the table's columns but the dropped ones, in order), toasted values read in,
/// copied out of SPI's memory.
unsafe fn row_of(
    row: pg_sys::HeapTuple,
    desc: pg_sys::TupleDesc,
    first: i32,
    rowtype: pg_sys::TupleDesc,
) -> pg_sys::Datum {
    let natts = (*rowtype).natts as usize;
    let mut values = vec![pg_sys::Datum::from(0usize); natts];
    let mut nulls = vec![true; natts];
    let mut col = first;
    for i in 0..natts {
        if crate::catalog::attribute(rowtype, i as i32 + 1).attisdropped {
            continue;
        }
        let mut null = false;
        values[i] = pg_sys::SPI_getbinval(row, desc, col, &mut null);
        nulls[i] = null;
        col += 1;
    }
    let tuple = pg_sys::heap_form_tuple(rowtype, values.as_mut_ptr(), nulls.as_mut_ptr());
    let datum = pg_sys::heap_copy_tuple_as_datum(tuple, rowtype);
    pg_sys::SPI_datumTransfer(datum, false, -1)
}
