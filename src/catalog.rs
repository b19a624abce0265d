//! Catalog access shared by every module: names and attribute numbers of relations, the
//! extension's own schema and functions, the `regclass` argument type, and a cache of values
//! derived from the catalogs that lives until the next relcache invalidation.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ffi::CStr;

use pgrx::callconv::{Arg, ArgAbi};
use pgrx::pgrx_sql_entity_graph::metadata::{
    ArgumentError, ReturnsError, ReturnsRef, SqlMappingRef, SqlTranslatable, TypeOrigin,
};
use pgrx::prelude::*;

use crate::text::{server_to_utf8_lossy, utf8_to_server};

thread_local! {
    /// Relcache invalidations this backend has processed since it first asked.
    static GENERATION: Cell<u64> = const { Cell::new(0) };
    static CALLBACK_REGISTERED: Cell<bool> = const { Cell::new(false) };
}

#[pg_guard]
unsafe extern "C-unwind" fn relcache_invalidated(_arg: pg_sys::Datum, _relid: pg_sys::Oid) {
    GENERATION.with(|n| n.set(n.get() + 1));
}

/// How many relcache invalidations this backend has processed since it first asked: what is
/// derived from the catalogs (which indexes serve the bands, the leaf lists) is kept while this
/// stays the same.
pub fn relcache_generation() -> u64 {
    if !CALLBACK_REGISTERED.with(Cell::get) {
        unsafe { pg_sys::CacheRegisterRelcacheCallback(Some(relcache_invalidated), pg_sys::Datum::from(0)) };
        CALLBACK_REGISTERED.with(|r| r.set(true));
    }
    GENERATION.with(Cell::get)
}

/// Values derived from the catalogs (which indexes serve the bands, a trigger's parsed arguments,
/// the partitions of a table), kept per key until this backend processes a relcache invalidation:
/// DDL that could change them sends one. Declared in a `thread_local!`.
pub struct CatalogCache<K, V>(RefCell<HashMap<K, (u64, V)>>);

impl<K: std::hash::Hash + Eq, V: Clone> Default for CatalogCache<K, V> {
    fn default() -> Self {
        CatalogCache(RefCell::new(HashMap::new()))
    }
}

impl<K: std::hash::Hash + Eq, V: Clone> CatalogCache<K, V> {
    /// The value for `key`, computed by `compute` (which may raise an error: nothing is borrowed
    /// meanwhile) unless known from the current relcache generation.
    pub fn get_or_compute(&self, key: K, compute: impl FnOnce() -> V) -> V {
        match self.get_or_find(key, || Some(compute())) {
            Some(value) => value,
            None => unreachable!("a computed value is always found"),
        }
    }

    /// As [`Self::get_or_compute`], where `find` may find nothing: nothing found is not kept (it
    /// may be there next time).
    pub fn get_or_find(&self, key: K, find: impl FnOnce() -> Option<V>) -> Option<V> {
        let generation = relcache_generation();
        let known = self
            .0
            .borrow()
            .get(&key)
            .filter(|(g, _)| *g == generation)
            .map(|(_, v)| v.clone());
        known.or_else(|| {
            let value = find()?;
            if relcache_generation() == generation {
                self.0.borrow_mut().insert(key, (generation, value.clone()));
            }
            Some(value)
        })
    }
}

/// A `regclass` argument, so that `simhash_pairs('my_table')` resolves the name as PostgreSQL does.
pub struct RegClass(pub pg_sys::Oid);

impl FromDatum for RegClass {
    unsafe fn from_polymorphic_datum(datum: pg_sys::Datum, is_null: bool, _: pg_sys::Oid) -> Option<Self> {
        (!is_null).then(|| RegClass(pg_sys::Oid::from(datum.value() as u32)))
    }
}

unsafe impl<'fcx> ArgAbi<'fcx> for RegClass {
    unsafe fn unbox_arg_unchecked(arg: Arg<'_, 'fcx>) -> Self {
        let index = arg.index();
        unsafe { arg.unbox_arg_using_from_datum() }
            .unwrap_or_else(|| panic!("argument {index} must not be null"))
    }
}

unsafe impl SqlTranslatable for RegClass {
    const TYPE_IDENT: &'static str = "simhash_ext::catalog::RegClass";
    const TYPE_ORIGIN: TypeOrigin = TypeOrigin::External;
    const ARGUMENT_SQL: Result<SqlMappingRef, ArgumentError> = Ok(SqlMappingRef::literal("regclass"));
    const RETURN_SQL: Result<ReturnsRef, ReturnsError> = Err(ReturnsError::Datum);
}

/// A C string of the server encoding (a catalog name, a trigger argument, a value's output) as UTF-8.
///
/// # Safety
/// `ptr` must point to a NUL-terminated string.
pub unsafe fn cstr_utf8(ptr: *const std::ffi::c_char) -> String {
    server_to_utf8_lossy(CStr::from_ptr(ptr).to_bytes())
}

/// The attribute number of a user column of `tupdesc` by name, if it exists and is not dropped.
pub fn attnum_of(tupdesc: pg_sys::TupleDesc, name: &str) -> Option<i16> {
    let cname = std::ffi::CString::new(utf8_to_server(name).into_owned()).ok()?;
    // SPI_fnumber only reads the descriptor: no SPI connection needed.
    let n = unsafe { pg_sys::SPI_fnumber(tupdesc, cname.as_ptr()) };
    (n > 0).then_some(n as i16)
}

/// The attribute `attnum` (from 1) of `tupdesc`.
pub fn attribute(tupdesc: pg_sys::TupleDesc, attnum: i32) -> &'static pg_sys::FormData_pg_attribute {
    unsafe { crate::compat::tuple_desc_attr(tupdesc, attnum as usize - 1) }
}

/// Whether `func` is the function `name` of the schema `ext_namespace` (syscache lookups, no query).
///
/// # Safety
/// In a transaction (catalog lookups).
pub unsafe fn is_extension_function(func: pg_sys::Oid, name: &[u8], ext_namespace: pg_sys::Oid) -> bool {
    let found = pg_sys::get_func_name(func);
    !found.is_null()
        && CStr::from_ptr(found).to_bytes() == name
        && pg_sys::get_func_namespace(func) == ext_namespace
}

/// The name of a relation, as UTF-8.
///
/// # Safety
/// `rel` must be an open relation.
pub unsafe fn relation_name(rel: pg_sys::Relation) -> String {
    server_to_utf8_lossy(CStr::from_ptr((*(*rel).rd_rel).relname.data.as_ptr()).to_bytes())
}

/// `schema.table`, each part quoted where needed, as the attachment errors name tables.
///
/// # Safety
/// `rel` must be an open relation.
pub unsafe fn qualified_name(rel: pg_sys::Relation) -> String {
    let schema = cstr_utf8(pg_sys::get_namespace_name((*(*rel).rd_rel).relnamespace));
    format!(
        "{}.{}",
        pgrx::spi::quote_identifier(&schema),
        pgrx::spi::quote_identifier(relation_name(rel))
    )
}

/// `schema.table` of a relation by OID, as of now (syscache; empty when it is gone).
pub fn qualified_name_of(relid: pg_sys::Oid) -> String {
    unsafe {
        let name = pg_sys::get_rel_name(relid);
        let namespace = pg_sys::get_namespace_name(pg_sys::get_rel_namespace(relid));
        if name.is_null() || namespace.is_null() {
            return String::new();
        }
        format!(
            "{}.{}",
            pgrx::spi::quote_identifier(cstr_utf8(namespace)),
            pgrx::spi::quote_identifier(cstr_utf8(name))
        )
    }
}

/// The schema of the function being called (the extension's).
///
/// # Safety
/// `fcinfo` must be the call's.
pub unsafe fn own_namespace(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Oid {
    pg_sys::get_func_namespace((*(*fcinfo).flinfo).fn_oid)
}

/// The schema the extension lives in (the called function's own), quoted for SQL.
///
/// # Safety
/// `fcinfo` must be the call's.
pub unsafe fn extension_schema(fcinfo: pg_sys::FunctionCallInfo) -> String {
    schema_name(own_namespace(fcinfo))
}

/// The name of schema `namespace`, quoted for SQL.
///
/// # Safety
/// In a transaction (a syscache lookup).
pub unsafe fn schema_name(namespace: pg_sys::Oid) -> String {
    pgrx::spi::quote_identifier(cstr_utf8(pg_sys::get_namespace_name(namespace)))
}

thread_local! {
    /// The extension's OID and schema, when read.
    static EXTENSION_NAMESPACE: Cell<(pg_sys::Oid, pg_sys::Oid)> =
        const { Cell::new((pg_sys::InvalidOid, pg_sys::InvalidOid)) };
}

/// The schema the extension was created in, for a function that does not live in it (in
/// `simhash_internal`, or a `#[pg_extern]` without its call's `fcinfo`). Read once per backend and
/// extension: the extension is not relocatable.
///
/// # Safety
/// Runs SPI: call where a query may run.
pub unsafe fn extension_namespace() -> pg_sys::Oid {
    let extension = pg_sys::get_extension_oid(c"simhash_ext".as_ptr(), false);
    let (known, namespace) = EXTENSION_NAMESPACE.with(Cell::get);
    if known == extension {
        return namespace;
    }
    let found = crate::spi::connected(|| {
        crate::spi::one_utf8(
            "SELECT pg_catalog.convert_to(e.extnamespace::pg_catalog.text, 'UTF8') \
             FROM pg_catalog.pg_extension e WHERE e.oid OPERATOR(pg_catalog.=) $1",
            &[crate::spi::Arg::Oid(extension)],
        )
    });
    let namespace = found
        .and_then(|o| o.parse::<u32>().ok())
        .map_or(pg_sys::InvalidOid, pg_sys::Oid::from);
    EXTENSION_NAMESPACE.with(|n| n.set((extension, namespace)));
    namespace
}

/// The extension's schema `simhash_internal`, if the extension has one: a schema of that name counts
/// only as a member of the extension (`pg_depend`), never by its name alone.
///
/// # Safety
/// In a transaction (catalog lookups).
pub unsafe fn internal_namespace() -> pg_sys::Oid {
    let namespace = pg_sys::get_namespace_oid(c"simhash_internal".as_ptr(), true);
    let extension = pg_sys::get_extension_oid(c"simhash_ext".as_ptr(), true);
    if namespace != pg_sys::InvalidOid
        && extension != pg_sys::InvalidOid
        && pg_sys::getExtensionOfObject(pg_sys::NamespaceRelationId, namespace) == extension
    {
        namespace
    } else {
        pg_sys::InvalidOid
    }
}

/// Calls the helper `name` of schema `simhash_internal` (see [`crate::spi::call`]) from a C function of the extension. With the SQL of 0.3.0 or older (the new library installed, `ALTER EXTENSION ...
/// UPDATE` not yet run) the extension has no such schema and the helper is `simhash_<name>` of the
/// extension's own schema. A schema of that name that is not the extension's own (one another role
/// created meanwhile) is never called.
///
/// # Safety
/// As [`crate::spi::call`]; `ext_schema` gives the extension's schema, quoted.
pub unsafe fn call_helper(ext_schema: &dyn Fn() -> String, name: &str, args: &[crate::spi::Arg]) {
    if internal_namespace() != pg_sys::InvalidOid {
        crate::spi::call("simhash_internal", name, args)
    } else {
        crate::spi::call(&ext_schema(), &format!("simhash_{name}"), args)
    }
}

/// Whether the extension's SQL is 0.8.0's or newer, whose fills run as a table's owner
/// (`simhash_internal.execute_as_owner` exists): older SQL, left by a library installed before
/// `ALTER EXTENSION ... UPDATE`, fills through a temporary table, which a security-restricted
/// operation may not create.
///
/// # Safety
/// Runs SPI: call where a query may run.
pub unsafe fn owner_fills() -> bool {
    internal_namespace() != pg_sys::InvalidOid
        && crate::spi::connected(|| {
            crate::spi::one_utf8(
                "SELECT pg_catalog.convert_to(pg_catalog.to_regprocedure(\
                   'simhash_internal.execute_as_owner(pg_catalog.regclass, pg_catalog.text)')::pg_catalog.text, 'UTF8')",
                &[],
            )
        })
        .is_some()
}

extern "C-unwind" {
    // partitioning/partition.h, not in pgrx's bindings: the ancestors of a partition, parent first.
    fn get_partition_ancestors(relid: pg_sys::Oid) -> *mut pg_sys::List;
}

/// The OIDs of a `List` of them (none for NIL).
///
/// # Safety
/// `list` must be NIL or an OID list.
pub unsafe fn oids(list: *mut pg_sys::List) -> Vec<pg_sys::Oid> {
    if list.is_null() {
        return Vec::new();
    }
    std::slice::from_raw_parts((*list).elements, (*list).length as usize)
        .iter()
        .map(|cell| cell.oid_value)
        .collect()
}

/// The ancestors of partition `relid`, parent first (none for a table that is not a partition).
///
/// # Safety
/// In a transaction.
pub unsafe fn partition_ancestors(relid: pg_sys::Oid) -> Vec<pg_sys::Oid> {
    oids(pg_sys::ffi::pg_guard_ffi_boundary(|| {
        get_partition_ancestors(relid)
    }))
}
