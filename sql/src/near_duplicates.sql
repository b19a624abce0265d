-- The C entry points of the lookups (src/search.rs), which take a row type as anyelement.
CREATE FUNCTION simhash_near_duplicates(rel anyelement, fingerprint bigint, max_distance int DEFAULT NULL,
                                        text_column name DEFAULT NULL)
RETURNS TABLE (item anyelement, distance int)
LANGUAGE c STABLE ROWS 10
AS 'MODULE_PATHNAME', 'simhash_near_duplicates_fingerprint';
COMMENT ON FUNCTION simhash_near_duplicates(anyelement, bigint, int, name) IS
  'Rows of an attached table within max_distance of a fingerprint, nearest first';

CREATE FUNCTION simhash_near_duplicates(rel anyelement, doc text, max_distance int DEFAULT NULL,
                                        text_column name DEFAULT NULL)
RETURNS TABLE (item anyelement, distance int)
LANGUAGE c STABLE ROWS 10 COST 100
AS 'MODULE_PATHNAME', 'simhash_near_duplicates_text';
COMMENT ON FUNCTION simhash_near_duplicates(anyelement, text, int, name) IS
  'Rows of an attached table within max_distance of a text (fingerprinted with the table''s options), nearest first';
