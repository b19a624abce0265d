//! Fallible growth of the collections that grow with the number of distinct features: an
//! allocation failure, or an allocator that reports memory low, becomes [`OutOfMemory`].

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, Hash};

use crate::error::{memory_low, OutOfMemory};

/// Makes room for one more element in a vector that grows with the number of distinct features,
/// reporting an allocation failure instead of aborting.
pub(crate) fn grow_vec<T>(v: &mut Vec<T>) -> Result<(), OutOfMemory> {
    if memory_low() {
        return Err(OutOfMemory { features: v.len() });
    }
    if v.len() == v.capacity() {
        v.try_reserve(1).map_err(|_| OutOfMemory { features: v.len() })?;
    }
    Ok(())
}

pub(crate) fn grow_map<K: Eq + Hash, V, S: BuildHasher>(m: &mut HashMap<K, V, S>) -> Result<(), OutOfMemory> {
    if memory_low() {
        return Err(OutOfMemory { features: m.len() });
    }
    if m.len() == m.capacity() {
        m.try_reserve(1).map_err(|_| OutOfMemory { features: m.len() })?;
    }
    Ok(())
}

pub(crate) fn grow_set<K: Eq + Hash, S: BuildHasher>(s: &mut HashSet<K, S>) -> Result<(), OutOfMemory> {
    if memory_low() {
        return Err(OutOfMemory { features: s.len() });
    }
    if s.len() == s.capacity() {
        s.try_reserve(1).map_err(|_| OutOfMemory { features: s.len() })?;
    }
    Ok(())
}
