//! Storage: band indexes read straight from their B-tree leaf pages, without a descent from the
//! root per probed value (docs/ARCHITECTURE.md §5.2–§5.4: the reader, why a list read earlier
//! stays right, and when index scans are used instead). From the bottom up, each file using only
//! those listed before it:
//! - [`btree_page`]: the page layout, declared once (nbtree.h's opaque and metapage structs, the
//!   constants), and the typed readers of a pinned, share-locked page and its index tuples;
//! - [`item_search`]: the first item of a leaf page not below a probed value;
//! - [`leaf_cache`]: the per-backend cache of leaf lists and when it drops them;
//! - [`leafmap`]: reading the leaf lists and, through them, the entries a search probes
//!   ([`leafmap::equal_entries`], [`leafmap::eager`]), and the `simhash.leaf_map` setting.

mod btree_page;
mod item_search;
mod leaf_cache;
pub mod leafmap;
