-- The trigger functions (src/api/trigger.rs, src/write/trigger.rs) that simhash_attach() puts on a table.
CREATE FUNCTION simhash_trigger() RETURNS trigger LANGUAGE c AS 'MODULE_PATHNAME', 'simhash_trigger';
COMMENT ON FUNCTION simhash_trigger() IS
  'Maintains the fingerprint column of a table attached with simhash_attach() and acts on near-duplicates';
CREATE FUNCTION simhash_check_trigger() RETURNS trigger LANGUAGE c AS 'MODULE_PATHNAME', 'simhash_check_trigger';
COMMENT ON FUNCTION simhash_check_trigger() IS
  'Checks the rows an INSERT wrote into a table attached with on_duplicate => ''error'', once per statement';
