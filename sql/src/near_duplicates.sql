-- The C entry points of the lookups (src/api/lookup.rs), which take a row type as anyelement.
-- A SimHash attachment's rows come with their distance, a MinHash attachment's with their similarity;
-- verified against the text looked up (issue 43), a row's similarity is the exact similarity of the
-- two texts, for both methods.
CREATE FUNCTION simhash_near_duplicates(rel anyelement, fingerprint bigint, max_distance int DEFAULT NULL,
                                        text_column name DEFAULT NULL)
RETURNS TABLE (item anyelement, distance int, similarity float8)
LANGUAGE c STABLE ROWS 10
AS 'MODULE_PATHNAME', 'simhash_near_duplicates_fingerprint';
COMMENT ON FUNCTION simhash_near_duplicates(anyelement, bigint, int, name) IS
  'Rows of an attached table within max_distance of a fingerprint, nearest first';

CREATE FUNCTION simhash_near_duplicates(rel anyelement, doc text, max_distance int DEFAULT NULL,
                                        text_column name DEFAULT NULL, threshold float8 DEFAULT NULL,
                                        verify boolean DEFAULT NULL)
RETURNS TABLE (item anyelement, distance int, similarity float8)
LANGUAGE c STABLE ROWS 10 COST 100
AS 'MODULE_PATHNAME', 'simhash_near_duplicates_text';
COMMENT ON FUNCTION simhash_near_duplicates(anyelement, text, int, name, float8, boolean) IS
  'Rows of an attached table near a text (fingerprinted with the table''s options): within max_distance (SimHash), nearest first, or sharing an LSH band (MinHash), most similar first; verified (verify, by default as the attachment), only rows whose exact similarity with the text reaches the threshold';

CREATE FUNCTION simhash_near_duplicates(rel anyelement, signature bytea, threshold float8 DEFAULT NULL,
                                        text_column name DEFAULT NULL)
RETURNS TABLE (item anyelement, distance int, similarity float8)
LANGUAGE c STABLE ROWS 10
AS 'MODULE_PATHNAME', 'simhash_near_duplicates_signature';
COMMENT ON FUNCTION simhash_near_duplicates(anyelement, bytea, float8, name) IS
  'Rows of a table attached with method ''minhash'' that share an LSH band with a signature and reach the threshold, most similar first';
