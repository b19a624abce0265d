-- simhash_ext 0.1.0 -> 0.2.0. DDL taken from `cargo pgrx schema pg15` of 0.2.0; not to be edited once released.
--   * new: simhash_pairs() and simhash_clusters(), deduplicating an attached table;
--   * simhash() and simhash_features() declare COST 100, so the planner parallelizes scans that call them;
--   * simhash_attach() fingerprints the rows already there with a scan that can run in parallel;
--   * simhash_find_attachment() reads the catalog once instead of twice (every lookup calls it).
-- Stored fingerprints, band columns, indexes and triggers are unchanged: the fingerprint algorithm is the same.
\echo Use "ALTER EXTENSION simhash_ext UPDATE TO '0.2.0'" to load this file. \quit

ALTER FUNCTION simhash(text, text, int, text, boolean) COST 100;
ALTER FUNCTION simhash_features(text, text, int, text, boolean) COST 100;

CREATE  FUNCTION "simhash_pairs"(
	"table_name" regclass, /* RegClass */
	"max_distance" INT DEFAULT NULL, /* Option < i32 > */
	"text_column" TEXT DEFAULT NULL /* Option < & str > */
) RETURNS TABLE (
	"key_a" TEXT,  /* String */
	"key_b" TEXT,  /* String */
	"distance" INT  /* i32 */
)
STABLE PARALLEL UNSAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'simhash_pairs_wrapper';

CREATE  FUNCTION "simhash_clusters"(
	"table_name" regclass, /* RegClass */
	"max_distance" INT DEFAULT NULL, /* Option < i32 > */
	"text_column" TEXT DEFAULT NULL /* Option < & str > */
) RETURNS TABLE (
	"key" TEXT,  /* String */
	"representative" TEXT,  /* String */
	"cluster_size" bigint  /* i64 */
)
STABLE PARALLEL UNSAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'simhash_clusters_wrapper';

CREATE OR REPLACE FUNCTION simhash_attach(table_name regclass, text_column name, max_distance int DEFAULT 3,
                               on_duplicate text DEFAULT 'none', tokenizer text DEFAULT 'word',
                               shingle int DEFAULT 1, weighting text DEFAULT 'tf',
                               stopwords boolean DEFAULT false)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
-- Let the fingerprinting scan below use parallel workers (max_parallel_workers_per_gather of them).
SET parallel_setup_cost = 0
SET parallel_tuple_cost = 0
SET min_parallel_table_scan_size = 0
AS $$
DECLARE
  nbands int;
  fp name := text_column || '_simhash';
  kind "char";
  column_type regtype;
  key_type text := 'text';
  bands text;
BEGIN
  IF table_name IS NULL OR text_column IS NULL THEN
    RAISE EXCEPTION 'simhash_attach: table_name and text_column must not be NULL' USING ERRCODE = '22004';
  END IF;
  IF max_distance IS NULL OR max_distance < 0 OR max_distance > 63 THEN
    RAISE EXCEPTION 'invalid value for option "max_distance": %; allowed: an integer from 0 to 63',
      coalesce(max_distance::text, 'NULL') USING ERRCODE = '22023';
  END IF;
  IF on_duplicate IS NULL OR on_duplicate NOT IN ('none', 'error', 'skip', 'flag') THEN
    RAISE EXCEPTION 'invalid value for option "on_duplicate": %; allowed: ''none'', ''error'', ''skip'', ''flag''',
      coalesce(quote_literal(on_duplicate), 'NULL') USING ERRCODE = '22023';
  END IF;
  IF tokenizer IS NULL OR shingle IS NULL OR weighting IS NULL OR stopwords IS NULL THEN
    RAISE EXCEPTION 'simhash_attach: fingerprint options must not be NULL' USING ERRCODE = '22004';
  END IF;
  -- Checks the fingerprint options (raises 22023 naming a bad one).
  PERFORM @extschema@.simhash('', tokenizer, shingle, weighting, stopwords);

  SELECT c.relkind INTO kind FROM pg_class c WHERE c.oid = table_name;
  IF kind <> 'r' THEN
    RAISE EXCEPTION 'simhash_attach: "%" is not an ordinary table', table_name
      USING ERRCODE = '42809', HINT = 'Partitioned tables, views and foreign tables are not supported; attach each partition.';
  END IF;
  SELECT CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE t.oid END::regtype INTO column_type
  FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
  WHERE a.attrelid = table_name AND a.attname = text_column AND a.attnum > 0 AND NOT a.attisdropped;
  IF column_type IS NULL THEN
    RAISE EXCEPTION 'column "%" of relation "%" does not exist', text_column, table_name USING ERRCODE = '42703';
  END IF;
  IF column_type NOT IN ('text'::regtype, 'character varying'::regtype, 'character'::regtype) THEN
    RAISE EXCEPTION 'simhash_attach: column "%" has type %, not text', text_column, column_type
      USING ERRCODE = '42804', HINT = 'Attach a text, varchar or char column.';
  END IF;
  IF EXISTS (SELECT FROM @extschema@.simhash_attachments() s
             WHERE s.table_name = simhash_attach.table_name AND s.text_column = simhash_attach.text_column) THEN
    RAISE EXCEPTION 'column "%" of "%" is already attached', text_column, table_name
      USING ERRCODE = '42710', HINT = 'Detach it first with simhash_detach().';
  END IF;
  IF octet_length(text_column) > 63 - length('_duplicate_of') THEN
    RAISE EXCEPTION 'simhash_attach: column name "%" is too long to derive column names from', text_column
      USING ERRCODE = '42622';
  END IF;

  -- With n bands, distance n-1 always shares a band: keep the pre-filter exact up to max_distance.
  nbands := greatest(4, max_distance + 1);
  IF on_duplicate = 'flag' AND (SELECT count(*) FROM @extschema@.simhash_primary_key(table_name)) = 1 THEN
    SELECT p.atttype INTO key_type FROM @extschema@.simhash_primary_key(table_name) p;
  END IF;

  -- The fingerprint is computed once per row: here for the rows already there, then by the trigger;
  -- the band columns are generated from it.
  EXECUTE format('ALTER TABLE %s ADD COLUMN %I bigint', table_name, fp);
  -- A read-only scan can run in parallel where an UPDATE cannot; the table is locked since the
  -- ALTER TABLE, so the row ctids stay valid.
  EXECUTE format('CREATE TEMP TABLE simhash_attach_fill AS '
                 'SELECT ctid AS row_id, @extschema@.simhash(%I, %L, %s, %L, %L) AS fp FROM ONLY %s',
                 text_column, tokenizer, shingle, weighting, stopwords, table_name);
  EXECUTE format('UPDATE ONLY %s t SET %I = f.fp FROM simhash_attach_fill f '
                 'WHERE t.ctid = f.row_id AND f.fp IS NOT NULL', table_name, fp);
  DROP TABLE simhash_attach_fill;
  SELECT string_agg(format('ADD COLUMN %I int GENERATED ALWAYS AS (@extschema@.simhash_band(%I, %s, %s)) STORED',
                           text_column || '_band' || i, fp, i, nbands), ', ' ORDER BY i)
  INTO bands FROM generate_series(0, nbands - 1) i;
  IF on_duplicate = 'flag' THEN
    bands := bands || format(', ADD COLUMN %I %s', text_column || '_duplicate_of', key_type);
  END IF;
  EXECUTE format('ALTER TABLE %s %s', table_name, bands);
  FOR i IN 0 .. nbands - 1 LOOP
    EXECUTE format('CREATE INDEX ON %s (%I)', table_name, text_column || '_band' || i);
  END LOOP;
  EXECUTE format('CREATE TRIGGER %I BEFORE INSERT OR UPDATE ON %s FOR EACH ROW '
                 'EXECUTE FUNCTION @extschema@.simhash_trigger(%L, %L, %L, %L, %L, %L, %L, %L)',
                 'simhash_' || text_column, table_name, text_column, nbands, max_distance, on_duplicate,
                 tokenizer, shingle, weighting, CASE WHEN stopwords THEN 'true' ELSE 'false' END);
END
$$;

CREATE OR REPLACE FUNCTION simhash_find_attachment(table_name regclass, text_column name)
RETURNS @extschema@.simhash_attachment
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  found @extschema@.simhash_attachment[];
  matches int;
BEGIN
  -- One read of the catalog: every lookup goes through here.
  SELECT array_agg(s) INTO found FROM @extschema@.simhash_attachments() s
  WHERE s.table_name = simhash_find_attachment.table_name
    AND (simhash_find_attachment.text_column IS NULL OR s.text_column = simhash_find_attachment.text_column);
  matches := coalesce(cardinality(found), 0);
  IF matches = 0 THEN
    RAISE EXCEPTION '% is not attached', CASE WHEN text_column IS NULL THEN format('table "%s"', table_name)
                                              ELSE format('column "%s" of "%s"', text_column, table_name) END
      USING ERRCODE = '42704', HINT = 'Attach it first with simhash_attach().';
  ELSIF matches > 1 THEN
    RAISE EXCEPTION 'table "%" has % attached columns: name one with text_column', table_name, matches
      USING ERRCODE = '42725';
  END IF;
  RETURN found[1];
END
$$;
