-- A one-line description of every public function that has none where it is defined (\df+, \dx+).
COMMENT ON FUNCTION @extschema@.hamming(bigint, bigint) IS
  'The Hamming distance of two 64-bit fingerprints: the number of bits in which they differ';
COMMENT ON FUNCTION @extschema@.simhash(text, text, integer, text, boolean, text) IS
  'The 64-bit SimHash fingerprint of a text, with the given tokenizer, shingle, weighting, stop words and fold';
COMMENT ON FUNCTION @extschema@.simhash_band(bigint, integer, integer) IS
  'Band i of a fingerprint cut into n bands: the value a band column stores';
COMMENT ON FUNCTION @extschema@.simhash_bands(bigint, integer) IS
  'The n bands of a fingerprint, as an array';
COMMENT ON FUNCTION @extschema@.simhash_probes(bigint, integer, integer) IS
  'The band values a lookup within distance k probes for a fingerprint (the exact multi-index probe)';
COMMENT ON FUNCTION @extschema@.simhash_registry_buckets(bigint, integer) IS
  'The part keys of a fingerprint at distance k: two fingerprints within k share one';
COMMENT ON FUNCTION @extschema@.simhash_features(text, text, integer, text, boolean, text) IS
  'The features of a text with their weights and hashes, as its fingerprint sees them';
COMMENT ON FUNCTION @extschema@.simhash_explain(text, text, text, integer, text, boolean, text) IS
  'Why two texts are at their distance: the features behind the bits in which their fingerprints differ';
COMMENT ON FUNCTION @extschema@.simhash_lookup_cost(regclass, bigint, integer, text) IS
  'How many probes and index entries a lookup of a fingerprint reads in an attached table';
COMMENT ON FUNCTION @extschema@.simhash_pairs(regclass, integer, text, double precision, boolean) IS
  'The near-duplicate pairs of rows of an attached table, with their distance or similarity';
COMMENT ON FUNCTION @extschema@.simhash_clusters(regclass, integer, text, double precision, boolean) IS
  'The rows of an attached table grouped into clusters of near-duplicates (connected pairs)';
COMMENT ON FUNCTION @extschema@.minhash(text, text, integer, boolean, text, integer) IS
  'The MinHash signature of a text, with the given tokenizer, shingle, stop words, fold and number of values';
COMMENT ON FUNCTION @extschema@.minhash_bands(bytea, integer, integer) IS
  'The LSH band keys of a MinHash signature, as a MinHash attachment indexes them';
COMMENT ON FUNCTION @extschema@.minhash_similarity(bytea, bytea) IS
  'The similarity two MinHash signatures estimate: the share of their values that agree';
COMMENT ON FUNCTION @extschema@.shingle_similarity(text, text, text, integer, boolean, text) IS
  'The exact similarity verification compares with the threshold: the Jaccard similarity of the two texts'' shingle sets';
COMMENT ON FUNCTION @extschema@.simhash_compare(regclass, text, text, text) IS
  'How an attachment judges a write of text a against a row of text b: its measures, its limits, and whether b makes a a near-duplicate';
