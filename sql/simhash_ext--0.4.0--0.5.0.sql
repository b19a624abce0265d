-- simhash_ext 0.4.0 -> 0.5.0 (docs/ARCHITECTURE.md §12.1).
\echo Use "ALTER EXTENSION simhash_ext UPDATE TO '0.5.0'" to load this file. \quit
