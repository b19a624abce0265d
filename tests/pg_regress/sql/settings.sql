-- The settings prefix simhash. is reserved once the library is loaded (issue 50): a misspelt or
-- unknown setting is an error (42602), as pg_trgm's are, instead of a placeholder kept silently.
SELECT simhash('load the library') IS NOT NULL AS loaded;
\set VERBOSITY default
SET simhash.max_distance = 0;
SET simhash.leafmap = off;
SET simhash.leaf_map = off;
SHOW simhash.leaf_map;
RESET simhash.leaf_map;
