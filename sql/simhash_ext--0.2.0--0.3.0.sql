-- simhash_ext 0.2.0 -> 0.3.0. DDL taken from `cargo pgrx schema pg15` of 0.3.0; not to be edited once released.
--   * algorithm v2: tokenizer 'bigram', weightings 'logtf' and 'logtfidf', option fold; new defaults of
--     simhash(), simhash_features() and simhash_attach() (max_distance 7); every explicit 0.2.0 option
--     set keeps its fingerprint, and attached tables keep theirs (their trigger names their options);
--   * lookups are exact at every distance on four 16-bit bands: simhash_near_duplicates() is now a C
--     function that probes each band index at the values within a radius of the query's band
--     (generalized pigeonhole) and checks the fingerprint on the index entries;
--   * simhash_attach() keeps four bands for every max_distance (0 to 16), with indexes that INCLUDE
--     the fingerprint; tables attached before keep their bands and indexes and stay exact;
--   * simhash_near_duplicates_sql() writes the same probe plan as SQL; new simhash_probes() and
--     simhash_lookup_cost();
--   * simhash_row_table() is gone (the lookups find the table from the row type themselves);
--   * new simhash_explain(a, b, <options>): the distance of two texts with the features and bits behind it.
-- Stored fingerprints, band columns, indexes and triggers are unchanged.
\echo Use "ALTER EXTENSION simhash_ext UPDATE TO '0.3.0'" to load this file. \quit

-- Algorithm v2: simhash() and simhash_features() take fold and have new defaults. The old signatures
-- go; an object of yours that depends on them (an expression index on simhash(body)) stops this
-- update: drop it, update, and create it again naming the options (README, Upgrading).
DROP FUNCTION simhash(text, text, int, text, boolean);
DROP FUNCTION simhash_features(text, text, int, text, boolean);
DROP FUNCTION simhash_attach(regclass, name, int, text, text, int, text, boolean);

CREATE  FUNCTION "simhash"(
	"doc" text, /* Text */
	"tokenizer" text DEFAULT 'bigram', /* Text */
	"shingle" INT DEFAULT 1, /* i32 */
	"weighting" text DEFAULT 'logtf', /* Text */
	"stopwords" bool DEFAULT true, /* bool */
	"fold" text DEFAULT 'auto' /* Text */
) RETURNS bigint /* Option < i64 > */
IMMUTABLE STRICT PARALLEL SAFE  COST 100
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'simhash_with_fold_wrapper';

CREATE  FUNCTION "simhash_features"(
	"doc" text, /* Text */
	"tokenizer" text DEFAULT 'bigram', /* Text */
	"shingle" INT DEFAULT 1, /* i32 */
	"weighting" text DEFAULT 'logtf', /* Text */
	"stopwords" bool DEFAULT true, /* bool */
	"fold" text DEFAULT 'auto' /* Text */
) RETURNS TABLE (
	"feature" TEXT,  /* ServerText */
	"weight" double precision,  /* f64 */
	"hash" bigint  /* i64 */
)
IMMUTABLE STRICT PARALLEL SAFE  COST 100
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'simhash_features_with_fold_wrapper';

-- Why two texts are or are not near-duplicates (new in 0.3.0).
CREATE  FUNCTION "simhash_explain"(
	"a" text, /* Text */
	"b" text, /* Text */
	"tokenizer" text DEFAULT 'bigram', /* Text */
	"shingle" INT DEFAULT 1, /* i32 */
	"weighting" text DEFAULT 'logtf', /* Text */
	"stopwords" bool DEFAULT true, /* bool */
	"fold" text DEFAULT 'auto' /* Text */
) RETURNS TABLE (
	"section" TEXT,  /* ServerText */
	"feature" TEXT,  /* Option < ServerText > */
	"bit" INT,  /* Option < i32 > */
	"weight_a" double precision,  /* Option < f64 > */
	"weight_b" double precision,  /* Option < f64 > */
	"detail" TEXT  /* Option < ServerText > */
)
IMMUTABLE STRICT PARALLEL SAFE COST 100
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'simhash_explain_wrapper';

ALTER TYPE simhash_attachment ADD ATTRIBUTE fold text;

CREATE OR REPLACE FUNCTION simhash_attachments()
RETURNS SETOF simhash_attachment
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT t.tgrelid::regclass, a[1]::name, (a[1] || '_simhash')::name,
         ARRAY(SELECT (a[1] || '_band' || i)::name FROM generate_series(0, a[2]::int - 1) i),
         a[3]::int, a[4], CASE WHEN a[4] = 'flag' THEN (a[1] || '_duplicate_of')::name END,
         a[5], a[6]::int, a[7], a[8]::boolean, t.tgname,
         -- Triggers made before 0.3.0 have no fold argument: 'auto', which folds none of their weightings.
         coalesce(a[9], 'auto')
  FROM pg_trigger t
  CROSS JOIN LATERAL @extschema@.simhash_trigger_args(t.tgargs) AS a
  WHERE t.tgfoid = '@extschema@.simhash_trigger()'::regprocedure
$$;
COMMENT ON FUNCTION simhash_attachments() IS 'Every text column attached with simhash_attach(), with its settings';

CREATE  FUNCTION "simhash_probes"(
	"fingerprint" bigint, /* i64 */
	"max_distance" INT, /* i32 */
	"nbands" INT DEFAULT 4 /* i32 */
) RETURNS TABLE (
	"band" INT,  /* i32 */
	"radius" INT,  /* i32 */
	"probe_values" INT[]  /* Vec < i32 > */
)
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'simhash_probes_wrapper';

CREATE  FUNCTION "simhash_lookup_cost"(
	"table_name" regclass, /* crate :: dedup :: RegClass */
	"fingerprint" bigint, /* i64 */
	"max_distance" INT DEFAULT NULL, /* Option < i32 > */
	"text_column" TEXT DEFAULT NULL /* Option < & str > */
) RETURNS TABLE (
	"probes" bigint,  /* i64 */
	"candidates" bigint,  /* i64 */
	"heap_fetches" bigint,  /* i64 */
	"matches" bigint  /* i64 */
)
STABLE PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'simhash_lookup_cost_wrapper';

CREATE FUNCTION simhash_attach(table_name regclass, text_column name, max_distance int DEFAULT 7,
                               on_duplicate text DEFAULT 'none', tokenizer text DEFAULT 'bigram',
                               shingle int DEFAULT 1, weighting text DEFAULT 'logtf',
                               stopwords boolean DEFAULT true, fold text DEFAULT 'auto')
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
  IF max_distance IS NULL OR max_distance < 0 OR max_distance > 16 THEN
    RAISE EXCEPTION 'invalid value for option "max_distance": %; allowed: an integer from 0 to 16',
      coalesce(max_distance::text, 'NULL') USING ERRCODE = '22023';
  END IF;
  IF on_duplicate IS NULL OR on_duplicate NOT IN ('none', 'error', 'skip', 'flag') THEN
    RAISE EXCEPTION 'invalid value for option "on_duplicate": %; allowed: ''none'', ''error'', ''skip'', ''flag''',
      coalesce(quote_literal(on_duplicate), 'NULL') USING ERRCODE = '22023';
  END IF;
  IF tokenizer IS NULL OR shingle IS NULL OR weighting IS NULL OR stopwords IS NULL OR fold IS NULL THEN
    RAISE EXCEPTION 'simhash_attach: fingerprint options must not be NULL' USING ERRCODE = '22004';
  END IF;
  -- Checks the fingerprint options (raises 22023 naming a bad one).
  PERFORM @extschema@.simhash('', tokenizer, shingle, weighting, stopwords, fold);

  SELECT c.relkind INTO kind FROM pg_class c WHERE c.oid = table_name;
  IF kind <> 'r' THEN
    RAISE EXCEPTION 'simhash_attach: "%" is not an ordinary table', table_name
      USING ERRCODE = '42809', HINT = 'Partitioned tables, views and foreign tables are not supported.';
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

  -- Four 16-bit bands serve every distance: a lookup probes each band at the values within a
  -- radius of the query's (generalized pigeonhole, src/search.rs).
  nbands := 4;
  IF on_duplicate = 'flag' AND (SELECT count(*) FROM @extschema@.simhash_primary_key(table_name)) = 1 THEN
    SELECT p.atttype INTO key_type FROM @extschema@.simhash_primary_key(table_name) p;
  END IF;

  -- The fingerprint is computed once per row: here for the rows already there, then by the trigger;
  -- the band columns are generated from it.
  EXECUTE format('ALTER TABLE %s ADD COLUMN %I bigint', table_name, fp);
  -- A read-only scan can run in parallel where an UPDATE cannot; the table is locked since the
  -- ALTER TABLE, so the row ctids stay valid.
  EXECUTE format('CREATE TEMP TABLE simhash_attach_fill AS '
                 'SELECT ctid AS row_id, @extschema@.simhash(%I, %L, %s, %L, %L, %L) AS fp FROM ONLY %s',
                 text_column, tokenizer, shingle, weighting, stopwords, fold, table_name);
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
    -- The fingerprint rides in the index entries: candidates are checked without visiting the heap.
    EXECUTE format('CREATE INDEX ON %s (%I) INCLUDE (%I)', table_name, text_column || '_band' || i, fp);
  END LOOP;
  EXECUTE format('CREATE TRIGGER %I BEFORE INSERT OR UPDATE ON %s FOR EACH ROW '
                 'EXECUTE FUNCTION @extschema@.simhash_trigger(%L, %L, %L, %L, %L, %L, %L, %L, %L)',
                 'simhash_' || text_column, table_name, text_column, nbands, max_distance, on_duplicate,
                 tokenizer, shingle, weighting, CASE WHEN stopwords THEN 'true' ELSE 'false' END, fold);
END
$$;
COMMENT ON FUNCTION simhash_attach(regclass, name, int, text, text, int, text, boolean, text) IS
  'Adds a fingerprint column, band columns with B-tree indexes and the simhash trigger to a table';

CREATE OR REPLACE FUNCTION simhash_near_duplicates_sql(table_name regclass, fingerprint bigint,
                                            max_distance int DEFAULT NULL, text_column name DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  att @extschema@.simhash_attachment := @extschema@.simhash_find_attachment(table_name, text_column);
  k int := coalesce(max_distance, att.max_distance);
  nbands int := cardinality(att.band_columns);
  branches text[] := '{}';
  earlier text := '';
  p record;
BEGIN
  IF k < 0 OR k > 64 THEN
    RAISE EXCEPTION 'invalid value for option "max_distance": %; allowed: an integer from 0 to 64', k
      USING ERRCODE = '22023';
  END IF;
  IF fingerprint IS NULL THEN
    RETURN NULL;
  END IF;
  -- The probe plan of simhash_near_duplicates(): band i at the values within radius t_i of the
  -- query's, checked on the fingerprint the index entries hold (index-only scans); a fingerprint is
  -- taken from the first band within its radius only. The rows are then fetched by band and value.
  FOR p IN SELECT * FROM @extschema@.simhash_probes(fingerprint, k, nbands) ORDER BY band LOOP
    branches := branches || format('SELECT t.%1$I AS fp FROM ONLY %2$s t WHERE t.%3$I = ANY (%4$L::int[]) '
                                   'AND @extschema@.hamming(t.%1$I, %5$s) <= %6$s%7$s',
      att.fingerprint_column, att.table_name, att.band_columns[p.band + 1], p.probe_values, fingerprint, k, earlier);
    earlier := earlier || format(' AND @extschema@.hamming(@extschema@.simhash_band(t.%I, %s, %s), %s) > %s',
      att.fingerprint_column, p.band, nbands, @extschema@.simhash_band(fingerprint, p.band, nbands), p.radius);
  END LOOP;
  IF cardinality(branches) = 0 THEN
    -- Too far for the bands to pay: a scan.
    RETURN format('SELECT t AS item, @extschema@.hamming(t.%1$I, %2$s) AS distance FROM ONLY %3$s t '
                  'WHERE @extschema@.hamming(t.%1$I, %2$s) <= %4$s ORDER BY distance',
                  att.fingerprint_column, fingerprint, att.table_name, k);
  END IF;
  RETURN format(E'SELECT t AS item, @extschema@.hamming(m.fp, %1$s) AS distance\nFROM (SELECT DISTINCT fp FROM (\n%2$s\n) c) m\n'
                 'JOIN ONLY %3$s t ON t.%4$I = @extschema@.simhash_band(m.fp, 0, %5$s) AND t.%6$I = m.fp\nORDER BY distance',
                fingerprint, array_to_string(branches, E'\nUNION ALL\n'), att.table_name, att.band_columns[1], nbands,
                att.fingerprint_column);
END
$$;
COMMENT ON FUNCTION simhash_near_duplicates_sql(regclass, bigint, int, name) IS
  'The probe plan of simhash_near_duplicates() for a fingerprint, as an SQL query (for EXPLAIN)';

CREATE OR REPLACE FUNCTION simhash_near_duplicates(rel anyelement, fingerprint bigint, max_distance int DEFAULT NULL,
                                        text_column name DEFAULT NULL)
RETURNS TABLE (item anyelement, distance int)
LANGUAGE c STABLE ROWS 10
AS 'MODULE_PATHNAME', 'simhash_near_duplicates_fingerprint';
COMMENT ON FUNCTION simhash_near_duplicates(anyelement, bigint, int, name) IS
  'Rows of an attached table within max_distance of a fingerprint, nearest first';

CREATE OR REPLACE FUNCTION simhash_near_duplicates(rel anyelement, doc text, max_distance int DEFAULT NULL,
                                        text_column name DEFAULT NULL)
RETURNS TABLE (item anyelement, distance int)
LANGUAGE c STABLE ROWS 10 COST 100
AS 'MODULE_PATHNAME', 'simhash_near_duplicates_text';
COMMENT ON FUNCTION simhash_near_duplicates(anyelement, text, int, name) IS
  'Rows of an attached table within max_distance of a text (fingerprinted with the table''s options), nearest first';

DROP FUNCTION simhash_row_table(anyelement);
