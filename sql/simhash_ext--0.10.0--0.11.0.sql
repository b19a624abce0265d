-- simhash_ext 0.10.0 -> 0.11.0 (issue 43, docs/ARCHITECTURE.md section 8.11): candidates verified against
-- their texts. An attachment records whether it verifies (a trigger argument; attachments made before keep
-- theirs: they do not verify until simhash_set_verify(), new here, says so); simhash_attach() and
-- simhash_attach_concurrently() take verify (new attachments verify by default), the lookup by text and the
-- dedup functions take verify per call, and the attachment record (simhash_attachments()) shows it.
-- shingle_similarity() is the exact similarity verification compares with the threshold. The verification itself is in the library.
\echo Use "ALTER EXTENSION simhash_ext UPDATE TO '0.11.0'" to load this file. \quit

-- sql/src/attachment.sql: the attachment record shows whether it verifies
ALTER TYPE @extschema@.simhash_attachment ADD ATTRIBUTE verify boolean;

-- src/api/internal.rs: encode_attachment takes verify, decode_attachment returns it
DROP FUNCTION simhash_internal.encode_attachment(text, text, int, double precision, text, text, int, text, boolean, text, text, boolean, int);
CREATE  FUNCTION simhash_internal."encode_attachment"(
	"text_column" text, /* Option < Text > */
	"method" text, /* Option < Text > */
	"max_distance" INT, /* Option < i32 > */
	"threshold" double precision, /* Option < f64 > */
	"on_duplicate" text, /* Option < Text > */
	"tokenizer" text, /* Option < Text > */
	"shingle" INT, /* Option < i32 > */
	"weighting" text, /* Option < Text > */
	"stopwords" bool, /* Option < bool > */
	"fold" text, /* Option < Text > */
	"scope" text, /* Option < Text > */
	"registry" bool, /* Option < bool > */
	"min_length" INT, /* Option < i32 > */
	"verify" bool /* Option < bool > */
) RETURNS bytea /* Vec < u8 > */
IMMUTABLE PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'encode_verifying_wrapper';
COMMENT ON FUNCTION simhash_internal.encode_attachment(text, text, int, double precision, text, text, int, text, boolean, text, text, boolean, int, boolean) IS
  'The trigger arguments (as pg_trigger.tgargs holds them) that record a new attachment; checks its settings';

DROP FUNCTION simhash_internal.decode_attachment(bytea);
CREATE  FUNCTION simhash_internal."decode_attachment"(
	"tgargs" bytea /* & [u8] */
) RETURNS TABLE (
	"text_column" TEXT,  /* ServerText */
	"fingerprint_column" TEXT,  /* ServerText */
	"band_columns" TEXT[],  /* Vec < ServerText > */
	"max_distance" INT,  /* Option < i32 > */
	"on_duplicate" TEXT,  /* String */
	"flag_column" TEXT,  /* Option < ServerText > */
	"tokenizer" TEXT,  /* String */
	"shingle" INT,  /* i32 */
	"weighting" TEXT,  /* Option < String > */
	"stopwords" bool,  /* bool */
	"fold" TEXT,  /* String */
	"scope_column" TEXT,  /* Option < ServerText > */
	"registry" bool,  /* bool */
	"min_length" INT,  /* i32 */
	"method" TEXT,  /* String */
	"threshold" double precision,  /* Option < f64 > */
	"verify" bool  /* bool */
)
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'decode_verifying_wrapper';
COMMENT ON FUNCTION simhash_internal.decode_attachment(bytea) IS
  'The attachment that trigger arguments record, with its derived column names; no row when they are not a simhash_trigger()''s';

-- sql/src/attachment.sql
CREATE OR REPLACE FUNCTION simhash_internal.attachment(table_name regclass, trigger_name name, tgargs bytea)
RETURNS SETOF @extschema@.simhash_attachment
LANGUAGE sql STABLE STRICT PARALLEL SAFE ROWS 1
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT table_name, d.text_column::name, d.fingerprint_column::name, d.band_columns::name[], d.max_distance,
         d.on_duplicate, d.flag_column::name, d.tokenizer, d.shingle, d.weighting, d.stopwords, trigger_name, d.fold,
         d.scope_column::name, d.registry, d.min_length, d.method, d.threshold,
         -- 'attaching' until an online attach has finished: its bands constraint (named as
         -- Attachment::bands_constraint_name in src/attachment.rs says) is NOT VALID until then.
         -- A partition made during the attach has its own constraint, valid: its ancestors' count.
         CASE WHEN EXISTS (SELECT FROM pg_constraint k
                           WHERE (k.conrelid = table_name
                                  OR k.conrelid IN (SELECT a.relid FROM pg_partition_ancestors(table_name) a))
                             AND NOT k.convalidated AND k.conname = trigger_name || '$bands')
              THEN 'attaching' ELSE 'attached' END,
         d.verify
  FROM simhash_internal.decode_attachment(tgargs) d
$$;
COMMENT ON FUNCTION simhash_internal.attachment(regclass, name, bytea) IS
  'The attachment that a trigger of a table records (none when its arguments are not a simhash_trigger()''s)';

-- sql/src/attach.sql
DROP FUNCTION simhash_attach(regclass, name, int, text, text, int, text, boolean, text, name, boolean, int, text, float8);
CREATE FUNCTION simhash_attach(table_name regclass, text_column name, max_distance int DEFAULT NULL,
                               on_duplicate text DEFAULT 'none', tokenizer text DEFAULT NULL,
                               shingle int DEFAULT NULL, weighting text DEFAULT NULL,
                               stopwords boolean DEFAULT NULL, fold text DEFAULT NULL, scope name DEFAULT NULL,
                               registry boolean DEFAULT false, min_length int DEFAULT 0,
                               method text DEFAULT 'simhash', threshold float8 DEFAULT NULL,
                               verify boolean DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  args bytea;
  names record;
  att @extschema@.simhash_attachment;
  checked record;
BEGIN
  -- An attach, in steps that are functions of schema simhash_internal:
  --   attach_checks              everything that can refuse the attach, before anything changes;
  --   attach_fingerprint_column  the fingerprint column (filled there on a Citus table);
  --   attach_bands               the band and flag columns, in one rewrite of the table that writes
  --                              every row's fingerprint and bands;
  --   attach_indexes             the band indexes;
  --   create_triggers            the triggers;
  --   registry_view, registry_shards  with registry => true, the view that writes go through.
  -- On a partitioned table each step reaches every partition: the columns are inherited, the
  -- indexes partitioned, the trigger cloned.
  IF table_name IS NULL OR text_column IS NULL THEN
    RAISE EXCEPTION 'simhash_attach: table_name and text_column must not be NULL' USING ERRCODE = '22004';
  END IF;
  -- The trigger's arguments, which record the attachment (src/attachment.rs): made first, as they
  -- check the method, max_distance or threshold, on_duplicate, the text options (NULL: the
  -- method's default), min_length, and the length of the names derived from the column (42622).
  -- The names, and the options with their defaults filled in, come from them.
  args := simhash_internal.encode_attachment(text_column, method, max_distance, threshold, on_duplicate, tokenizer,
                                             shingle, weighting, stopwords, fold, scope, registry, min_length,
                                             verify);
  SELECT * INTO names FROM simhash_internal.object_names(table_name, text_column);
  SELECT * INTO STRICT att FROM simhash_internal.attachment(table_name, names.trigger_name, args);

  -- Everything that can refuse the attach, before anything changes. (Its errors, and those of the
  -- lines above, keep the CONTEXT line numbers they had when this function did every step itself:
  -- tests/pg_regress/expected/drop_column.out, minhash_attach.out.)
  SELECT * INTO checked FROM simhash_internal.attach_checks(table_name, text_column, args);
  PERFORM simhash_internal.attach_fingerprint_column(att::@extschema@.simhash_attachment, checked.dist_method::"char");
  PERFORM simhash_internal.attach_bands(att::@extschema@.simhash_attachment, checked.dist_method::"char",
                                        checked.key_type::text);
  PERFORM simhash_internal.attach_indexes(att::@extschema@.simhash_attachment, checked.dist_column::name);
  PERFORM simhash_internal.create_triggers(table_name::regclass, args::bytea, checked.kind::"char",
                                           checked.dist_method::"char");
  IF registry THEN
    -- Writes go through a view of the table's own columns, whose trigger checks the registry on the
    -- coordinator, in the writer's distributed transaction (sql/src/registry.sql).
    PERFORM simhash_internal.registry_view(table_name, text_column);
    PERFORM simhash_internal.registry_shards(table_name, text_column);
  END IF;
END
$$;
COMMENT ON FUNCTION simhash_attach(regclass, name, int, text, text, int, text, boolean, text, name, boolean, int, text, float8, boolean) IS
  'Adds a fingerprint column (SimHash) or signature column (MinHash), indexed band columns and the simhash trigger to a table (and its partitions)';

-- sql/src/online.sql
DROP FUNCTION simhash_internal.online_begin(regclass, name, int, text, text, int, text, boolean, text, name, boolean, int, text, float8, int);
CREATE FUNCTION simhash_internal.online_begin(table_name regclass, text_column name, max_distance int, on_duplicate text,
                                              tokenizer text, shingle int, weighting text, stopwords boolean,
                                              fold text, scope name, registry boolean, min_length int,
                                              method text, threshold float8, verify boolean, lock_timeout_ms int)
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  args bytea;
  names record;
  att @extschema@.simhash_attachment;
  resume text;
  checked record;
BEGIN
  IF table_name IS NULL OR text_column IS NULL THEN
    RAISE EXCEPTION 'simhash_attach_concurrently: table_name and text_column must not be NULL' USING ERRCODE = '22004';
  END IF;
  args := simhash_internal.encode_attachment(text_column, method, max_distance, threshold, on_duplicate, tokenizer,
                                             shingle, weighting, stopwords, fold, scope, registry, min_length,
                                             verify);
  SELECT * INTO names FROM simhash_internal.object_names(table_name, text_column);
  SELECT * INTO STRICT att FROM simhash_internal.attachment(table_name, names.trigger_name, args);
  -- An online attach of the column to resume, or to wait for.
  resume := simhash_internal.online_resume(table_name::regclass, text_column::name, args::bytea);
  IF resume IS NOT NULL THEN
    RETURN resume;
  END IF;
  -- Everything simhash_attach() refuses (an attachment already there included).
  SELECT * INTO checked FROM simhash_internal.attach_checks(table_name::regclass, text_column::name, args::bytea);
  IF checked.dist_method IS NOT NULL THEN
    RAISE EXCEPTION 'simhash_attach_concurrently: "%" is a Citus table', table_name
      USING ERRCODE = '0A000', HINT = 'Attach it with simhash_attach(): Citus tables keep the offline attach.';
  END IF;
  -- Attachment::bands_constraint_name (src/attachment.rs)
  IF octet_length(att.trigger_name || '$bands') > 63 THEN
    RAISE EXCEPTION 'simhash_attach_concurrently: column name "%" is too long for the name of constraint "%"',
      text_column, att.trigger_name || '$bands' USING ERRCODE = '42622', HINT = 'Attach it with simhash_attach(), or rename the column.';
  END IF;
  RETURN simhash_internal.online_add_columns(att::@extschema@.simhash_attachment, args::bytea, checked.key_type::text,
                                             checked.kind::"char", checked.dist_method::"char", lock_timeout_ms::int);
END
$$;
COMMENT ON FUNCTION simhash_internal.online_begin(regclass, name, int, text, text, int, text, boolean, text, name, boolean, int, text, float8, boolean, int) IS
  'The first step of simhash_attach_concurrently(): checks, then the columns, the bands constraint (NOT VALID) and the triggers under a lock_timeout; ''resumed'' for an attach to resume, ''finished'' for one that only has its last wait left, ''locked'' when the lock was not had in time';

DROP PROCEDURE simhash_attach_concurrently(regclass, name, int, text, text, int, text, boolean, text, name, boolean, int, text, float8);
CREATE PROCEDURE simhash_attach_concurrently(table_name regclass, text_column name, max_distance int DEFAULT NULL,
                                             on_duplicate text DEFAULT 'none', tokenizer text DEFAULT NULL,
                                             shingle int DEFAULT NULL, weighting text DEFAULT NULL,
                                             stopwords boolean DEFAULT NULL, fold text DEFAULT NULL,
                                             scope name DEFAULT NULL, registry boolean DEFAULT false,
                                             min_length int DEFAULT 0, method text DEFAULT 'simhash',
                                             threshold float8 DEFAULT NULL, verify boolean DEFAULT NULL)
LANGUAGE c AS 'MODULE_PATHNAME', 'simhash_attach_concurrently';
COMMENT ON PROCEDURE simhash_attach_concurrently(regclass, name, int, text, text, int, text, boolean, text, name, boolean, int, text, float8, boolean) IS
  'simhash_attach() without an outage: brief locks, fingerprints written in committed batches, band indexes built concurrently; call it again to resume';

-- sql/src/near_duplicates.sql
DROP FUNCTION simhash_near_duplicates(anyelement, text, int, name, float8);
CREATE FUNCTION simhash_near_duplicates(rel anyelement, doc text, max_distance int DEFAULT NULL,
                                        text_column name DEFAULT NULL, threshold float8 DEFAULT NULL,
                                        verify boolean DEFAULT NULL)
RETURNS TABLE (item anyelement, distance int, similarity float8)
LANGUAGE c STABLE ROWS 10 COST 100
AS 'MODULE_PATHNAME', 'simhash_near_duplicates_text';
COMMENT ON FUNCTION simhash_near_duplicates(anyelement, text, int, name, float8, boolean) IS
  'Rows of an attached table near a text (fingerprinted with the table''s options): within max_distance (SimHash), nearest first, or sharing an LSH band (MinHash), most similar first; verified (verify, by default as the attachment), only rows whose exact similarity with the text reaches the threshold';

-- src/api/internal.rs, sql/src/attach.sql: simhash_set_verify
CREATE  FUNCTION simhash_internal."reencode_attachment"(
	"tgargs" bytea, /* & [u8] */
	"verify" bool, /* Option < bool > */
	"threshold" double precision /* Option < f64 > */
) RETURNS bytea /* Vec < u8 > */
IMMUTABLE PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'reencode_wrapper';

CREATE FUNCTION simhash_set_verify(table_name regclass, verify boolean, threshold float8 DEFAULT NULL,
                                   text_column name DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  att @extschema@.simhash_attachment;
  names record;
  args bytea;
  dist_method "char";
BEGIN
  att := simhash_internal.find_attachment(table_name, text_column);
  dist_method := (SELECT d.method FROM simhash_internal.distribution(att.table_name) d);
  -- Whether an attachment verifies its candidates against their texts (docs/ARCHITECTURE.md
  -- section 8.11), and its threshold: recorded in its trigger's arguments, so the triggers are made
  -- again with the new ones, in this transaction (nothing else of the attachment changes).
  IF EXISTS (SELECT FROM pg_trigger t WHERE t.tgrelid = att.table_name AND t.tgname = att.trigger_name
                                        AND t.tgparentid <> 0) THEN
    RAISE EXCEPTION 'simhash_set_verify: "%" is a partition of attached table "%"', table_name, pg_partition_root(table_name)
      USING ERRCODE = '42809', HINT = format('Name %s: its partitions follow.', pg_partition_root(table_name));
  END IF;
  IF att.state = 'attaching' THEN
    RAISE EXCEPTION 'column "%" of "%" is still being attached', att.text_column, att.table_name
      USING ERRCODE = '55000', HINT = 'Let simhash_attach_concurrently() finish first.';
  END IF;
  SELECT t.tgargs INTO STRICT args FROM pg_trigger t WHERE t.tgrelid = att.table_name AND t.tgname = att.trigger_name;
  args := simhash_internal.reencode_attachment(args, verify, threshold);
  SELECT * INTO names FROM simhash_internal.object_names(att.table_name, att.text_column);
  IF dist_method IS NOT NULL THEN
    PERFORM set_config('citus.enable_unsafe_triggers', 'on', true);
  END IF;
  -- On a partitioned table the clones of the trigger go with it, and come back with the new one.
  EXECUTE format('DROP TRIGGER %I ON %s', att.trigger_name, att.table_name);
  IF EXISTS (SELECT FROM pg_trigger t WHERE t.tgrelid = att.table_name AND t.tgname = names.check_trigger_name) THEN
    EXECUTE format('DROP TRIGGER %I ON %s', names.check_trigger_name, att.table_name);
  END IF;
  PERFORM simhash_internal.create_triggers(att.table_name::regclass, args::bytea,
                                           (SELECT c.relkind FROM pg_class c WHERE c.oid = att.table_name)::"char",
                                           dist_method::"char");
END
$$;
COMMENT ON FUNCTION simhash_set_verify(regclass, boolean, float8, name) IS
  'Makes an attached column verify its candidates against their texts (or not), with a threshold: what an attachment made before 0.11.0 needs to verify its writes';

-- src/api/minhash.rs: the exact similarity verification compares with the threshold
CREATE  FUNCTION "shingle_similarity"(
	"a" text, /* Text */
	"b" text, /* Text */
	"tokenizer" text DEFAULT 'word', /* Text */
	"shingle" INT DEFAULT 0, /* i32 */
	"stopwords" bool DEFAULT false, /* bool */
	"fold" text DEFAULT 'auto' /* Text */
) RETURNS double precision /* f64 */
IMMUTABLE STRICT PARALLEL SAFE COST 100
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'shingle_similarity_wrapper';

-- src/api/dedup.rs: simhash_pairs and simhash_clusters take verify
DROP FUNCTION simhash_pairs(regclass, int, text, double precision);
CREATE  FUNCTION "simhash_pairs"(
	"table_name" regclass, /* Option < RegClass > */
	"max_distance" INT DEFAULT NULL, /* Option < i32 > */
	"text_column" TEXT DEFAULT NULL, /* Option < & str > */
	"threshold" double precision DEFAULT NULL, /* Option < f64 > */
	"verify" bool DEFAULT NULL /* Option < bool > */
) RETURNS TABLE (
	"key_a" TEXT,  /* ServerText */
	"key_b" TEXT,  /* ServerText */
	"distance" INT,  /* Option < i32 > */
	"similarity" double precision  /* Option < f64 > */
)
VOLATILE PARALLEL UNSAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'dedup_pairs_wrapper';

DROP FUNCTION simhash_clusters(regclass, int, text, double precision);
CREATE  FUNCTION "simhash_clusters"(
	"table_name" regclass, /* Option < RegClass > */
	"max_distance" INT DEFAULT NULL, /* Option < i32 > */
	"text_column" TEXT DEFAULT NULL, /* Option < & str > */
	"threshold" double precision DEFAULT NULL, /* Option < f64 > */
	"verify" bool DEFAULT NULL /* Option < bool > */
) RETURNS TABLE (
	"key" TEXT,  /* ServerText */
	"representative" TEXT,  /* ServerText */
	"cluster_size" bigint  /* i64 */
)
VOLATILE PARALLEL UNSAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'dedup_clusters_wrapper';
