//! The few places where PostgreSQL's C API differs between the supported majors (14–18), each
//! behind one function so that the rest of the extension is written once. Nothing here changes
//! behaviour: every function does on each major what the single call did on PostgreSQL 15.
//!
//! | what | 14, 15 | 16, 17 | 18 |
//! | --- | --- | --- | --- |
//! | a relation's file | `rd_node` (`RelFileNode`) | `rd_locator` (`RelFileLocator`) | same as 16 |
//! | its first-file subtransaction | `rd_firstRelfilenodeSubid` | `rd_firstRelfilelocatorSubid` | same |
//! | a tuple descriptor's attributes | `attrs[]` | `attrs[]` | after `compact_attrs[natts]` |
//! | this backend's local transaction | `MyProc->lxid` | 16: same; 17: `MyProc->vxid.lxid` | as 17 |
//! | `index_beginscan` | 5 arguments | 5 | 6 (instrumentation, may be NULL) |
//! | `heap_fetch` | 4 arguments | 5 (`keep_buf`) | 5 |
//! | `InitMaterializedSRF` | 15 on; done by hand on 14 | yes | yes |
//! | `ALTER COLUMN ... SET EXPRESSION` | none | 16: none; 17: `AT_SetExpression` | yes |

use pgrx::pg_sys;

#[cfg(not(any(
    feature = "pg14",
    feature = "pg15",
    feature = "pg16",
    feature = "pg17",
    feature = "pg18"
)))]
compile_error!(
    "simhash_ext supports PostgreSQL 14, 15, 16, 17 and 18: build it with one of the features \
     pg14, pg15, pg16, pg17, pg18 (cargo pgrx picks it from pg_config)"
);

/// The relation's file number (its `relfilenode`): it changes when the relation is rewritten.
///
/// # Safety
/// `rel` must be an open relation.
pub unsafe fn relfilenumber(rel: pg_sys::Relation) -> pg_sys::Oid {
    #[cfg(any(feature = "pg14", feature = "pg15"))]
    {
        (*rel).rd_node.relNode
    }
    #[cfg(not(any(feature = "pg14", feature = "pg15")))]
    {
        (*rel).rd_locator.relNumber
    }
}

/// `ReadRecentBuffer` on the relation's main fork: pins `block` if it is still in buffer
/// `recent`, without a lookup in the shared buffer mapping table.
///
/// # Safety
/// `rel` must be an open, non-temporary relation and `recent` a shared buffer number.
pub unsafe fn read_recent_buffer(
    rel: pg_sys::Relation,
    block: pg_sys::BlockNumber,
    recent: pg_sys::Buffer,
) -> bool {
    #[cfg(any(feature = "pg14", feature = "pg15"))]
    let file = (*rel).rd_node;
    #[cfg(not(any(feature = "pg14", feature = "pg15")))]
    let file = (*rel).rd_locator;
    pg_sys::ReadRecentBuffer(file, pg_sys::ForkNumber::MAIN_FORKNUM, block, recent)
}

/// Whether the relation was created, or given a new file, in the current top-level transaction
/// (PostgreSQL's `rd_createSubid` / first-relfilenode subtransaction, both invalid otherwise).
///
/// # Safety
/// `rel` must be an open relation.
pub unsafe fn new_in_this_transaction(rel: pg_sys::Relation) -> bool {
    #[cfg(any(feature = "pg14", feature = "pg15"))]
    let first = (*rel).rd_firstRelfilenodeSubid;
    #[cfg(not(any(feature = "pg14", feature = "pg15")))]
    let first = (*rel).rd_firstRelfilelocatorSubid;
    // 0 is InvalidSubTransactionId (not exported by the bindings).
    (*rel).rd_createSubid != 0 || first != 0
}

/// Attribute `index` (0-based) of a tuple descriptor, as `TupleDescAttr` gives it.
///
/// # Safety
/// `desc` must be a valid tuple descriptor with more than `index` attributes.
pub unsafe fn tuple_desc_attr<'a>(
    desc: pg_sys::TupleDesc,
    index: usize,
) -> &'a pg_sys::FormData_pg_attribute {
    debug_assert!(index < (*desc).natts as usize);
    #[cfg(not(feature = "pg18"))]
    {
        &*(*desc).attrs.as_ptr().add(index)
    }
    #[cfg(feature = "pg18")]
    {
        // PostgreSQL 18 keeps the full attributes after the array of compact ones.
        let full = (*desc).compact_attrs.as_ptr().add((*desc).natts as usize)
            as *const pg_sys::FormData_pg_attribute;
        &*full.add(index)
    }
}

/// Reserves the settings prefix `simhash.` once the extension's settings are defined: `SET
/// simhash.no_such_setting` then fails (42602) instead of being kept silently, as for pg_trgm's
/// settings (`MarkGUCPrefixReserved` from 15 on; 14's `EmitWarningsOnPlaceholders` warns).
pub fn reserve_settings_prefix() {
    // SAFETY: called from _PG_init, after the settings are defined.
    unsafe {
        #[cfg(feature = "pg14")]
        pg_sys::EmitWarningsOnPlaceholders(c"simhash".as_ptr());
        #[cfg(not(feature = "pg14"))]
        pg_sys::MarkGUCPrefixReserved(c"simhash".as_ptr());
    }
}

/// This backend's local transaction id (`MyProc->lxid`; `MyProc->vxid.lxid` from 17 on).
pub fn local_transaction_id() -> pg_sys::LocalTransactionId {
    // SAFETY: MyProc is set for every backend that runs SQL functions.
    unsafe {
        #[cfg(any(feature = "pg14", feature = "pg15", feature = "pg16"))]
        {
            (*pg_sys::MyProc).lxid
        }
        #[cfg(not(any(feature = "pg14", feature = "pg15", feature = "pg16")))]
        {
            (*pg_sys::MyProc).vxid.lxid
        }
    }
}

/// `index_beginscan` without instrumentation.
///
/// # Safety
/// As `index_beginscan`: both relations open and locked, `snapshot` registered or active.
pub unsafe fn index_beginscan(
    heap: pg_sys::Relation,
    index: pg_sys::Relation,
    snapshot: pg_sys::Snapshot,
    nkeys: i32,
    norderbys: i32,
) -> pg_sys::IndexScanDesc {
    #[cfg(not(feature = "pg18"))]
    {
        pg_sys::index_beginscan(heap, index, snapshot, nkeys, norderbys)
    }
    #[cfg(feature = "pg18")]
    {
        pg_sys::index_beginscan(heap, index, snapshot, std::ptr::null_mut(), nkeys, norderbys)
    }
}

/// `index_beginscan_bitmap` without instrumentation.
///
/// # Safety
/// As `index_beginscan_bitmap`: the index open and locked.
pub unsafe fn index_beginscan_bitmap(
    index: pg_sys::Relation,
    snapshot: pg_sys::Snapshot,
    nkeys: i32,
) -> pg_sys::IndexScanDesc {
    #[cfg(not(feature = "pg18"))]
    {
        pg_sys::index_beginscan_bitmap(index, snapshot, nkeys)
    }
    #[cfg(feature = "pg18")]
    {
        pg_sys::index_beginscan_bitmap(index, snapshot, std::ptr::null_mut(), nkeys)
    }
}

/// The most line pointers a heap page of `BLCKSZ` bytes can have (`MaxHeapTuplesPerPage`: a page
/// header of 24 bytes, a tuple header of 24 and a line pointer of 4 per tuple).
const MAX_HEAP_TUPLES_PER_PAGE: u16 = ((pg_sys::BLCKSZ - 24) / (24 + 4)) as u16;

/// Calls `f` with every TID of `tbm`, page by page; a lossy page gives every offset a heap page can
/// have (a fetch by TID of one that is not there finds nothing).
///
/// # Safety
/// `tbm` must be a bitmap built by `index_getbitmap` and not iterated yet.
pub unsafe fn for_each_tid(tbm: *mut pg_sys::TIDBitmap, f: &mut dyn FnMut(pg_sys::ItemPointerData)) {
    let mut emit = |block: pg_sys::BlockNumber, offsets: &mut dyn Iterator<Item = u16>| {
        for offset in offsets {
            let mut tid = pg_sys::ItemPointerData::default();
            pgrx::itemptr::item_pointer_set_all(&mut tid, block, offset);
            f(tid);
        }
    };
    #[cfg(not(feature = "pg18"))]
    {
        let iterator = pg_sys::tbm_begin_iterate(tbm);
        loop {
            let result = pg_sys::tbm_iterate(iterator);
            if result.is_null() {
                break;
            }
            let n = (*result).ntuples;
            if n < 0 {
                emit((*result).blockno, &mut (1..=MAX_HEAP_TUPLES_PER_PAGE));
            } else {
                let offsets = (*result).offsets.as_slice(n as usize).to_vec();
                emit((*result).blockno, &mut offsets.into_iter());
            }
        }
        pg_sys::tbm_end_iterate(iterator);
    }
    #[cfg(feature = "pg18")]
    {
        let iterator = pg_sys::tbm_begin_private_iterate(tbm);
        let mut result = pg_sys::TBMIterateResult::default();
        let mut offsets = vec![0u16; MAX_HEAP_TUPLES_PER_PAGE as usize];
        while pg_sys::tbm_private_iterate(iterator, &mut result) {
            if result.lossy {
                emit(result.blockno, &mut (1..=MAX_HEAP_TUPLES_PER_PAGE));
            } else {
                let n =
                    pg_sys::tbm_extract_page_tuple(&mut result, offsets.as_mut_ptr(), offsets.len() as u32);
                emit(result.blockno, &mut offsets[..n.max(0) as usize].iter().copied());
            }
        }
        pg_sys::tbm_end_private_iterate(iterator);
    }
}

/// A bitmap for `index_getbitmap` of at most `work_mem`.
///
/// # Safety
/// Call inside a transaction; free with `tbm_free`.
pub unsafe fn tbm_create() -> *mut pg_sys::TIDBitmap {
    let bytes = pg_sys::work_mem as usize * 1024;
    #[cfg(not(feature = "pg18"))]
    {
        pg_sys::tbm_create(bytes as std::ffi::c_long, std::ptr::null_mut())
    }
    #[cfg(feature = "pg18")]
    {
        pg_sys::tbm_create(bytes, std::ptr::null_mut())
    }
}

/// `heap_fetch` that leaves the buffer pinned in `*buffer` whenever the page was read (PostgreSQL
/// 14's `heap_fetch` releases it when the tuple is not visible; with `SnapshotAny`, the only
/// snapshot this extension passes, that happens only for a missing tuple, and then it also sets
/// `*buffer` to `InvalidBuffer`, so callers release `*buffer` when valid on every major).
///
/// # Safety
/// As `heap_fetch`: `rel` open and locked, `tuple.t_self` set.
pub unsafe fn heap_fetch(
    rel: pg_sys::Relation,
    snapshot: pg_sys::Snapshot,
    tuple: &mut pg_sys::HeapTupleData,
    buffer: &mut pg_sys::Buffer,
) -> bool {
    #[cfg(feature = "pg14")]
    {
        pg_sys::heap_fetch(rel, snapshot, tuple, buffer)
    }
    #[cfg(not(feature = "pg14"))]
    {
        pg_sys::heap_fetch(rel, snapshot, tuple, buffer, true)
    }
}

/// `InitMaterializedSRF(fcinfo, 0)`: makes the set-returning function's result a tuplestore in the
/// per-query context, with the call's result row type. PostgreSQL 14 has no such function (it came
/// with 15), so there it is done as 15 does it.
///
/// # Safety
/// `fcinfo` must be the call information of a set-returning function being called.
pub unsafe fn init_materialized_srf(fcinfo: pg_sys::FunctionCallInfo) {
    #[cfg(not(feature = "pg14"))]
    {
        pg_sys::InitMaterializedSRF(fcinfo, 0);
    }
    #[cfg(feature = "pg14")]
    {
        use pgrx::{PgLogLevel, PgSqlErrorCode};
        let rsinfo = (*fcinfo).resultinfo as *mut pg_sys::ReturnSetInfo;
        let materialize = pg_sys::SetFunctionReturnMode::SFRM_Materialize as i32;
        if rsinfo.is_null()
            || (*rsinfo).type_ != pg_sys::NodeTag::T_ReturnSetInfo
            || (*rsinfo).allowedModes & materialize == 0
        {
            pgrx::ereport!(
                PgLogLevel::ERROR,
                PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
                "set-valued function called in context that cannot accept a set"
            );
        }
        let old = pg_sys::MemoryContextSwitchTo((*(*rsinfo).econtext).ecxt_per_query_memory);
        let mut desc: pg_sys::TupleDesc = std::ptr::null_mut();
        if pg_sys::get_call_result_type(fcinfo, std::ptr::null_mut(), &mut desc)
            != pg_sys::TypeFuncClass::TYPEFUNC_COMPOSITE
        {
            pgrx::ereport!(
                PgLogLevel::ERROR,
                PgSqlErrorCode::ERRCODE_DATATYPE_MISMATCH,
                "return type must be a row type"
            );
        }
        let random =
            (*rsinfo).allowedModes & pg_sys::SetFunctionReturnMode::SFRM_Materialize_Random as i32 != 0;
        (*rsinfo).returnMode = pg_sys::SetFunctionReturnMode::SFRM_Materialize;
        (*rsinfo).setResult = pg_sys::tuplestore_begin_heap(random, false, pg_sys::work_mem);
        (*rsinfo).setDesc = pg_sys::CreateTupleDescCopy(desc);
        pg_sys::MemoryContextSwitchTo(old);
    }
}

/// Whether an `ALTER TABLE` subcommand is `ALTER COLUMN ... SET EXPRESSION` (PostgreSQL 17 on; none
/// before).
pub fn is_set_expression(subtype: pg_sys::AlterTableType::Type) -> bool {
    #[cfg(any(feature = "pg17", feature = "pg18"))]
    {
        subtype == pg_sys::AlterTableType::AT_SetExpression
    }
    #[cfg(not(any(feature = "pg17", feature = "pg18")))]
    {
        let _ = subtype;
        false
    }
}
