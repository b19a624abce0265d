-- simhash_ext 0.7.0 -> 0.8.0 (docs/ARCHITECTURE.md §12.1, §13): work done for a table runs as its
-- owner. simhash_internal.execute_as_owner() runs a fill's UPDATE as the table's owner in a
-- security-restricted operation; simhash_internal.fill() uses it (and no temporary table, which such
-- an operation may not create); simhash_detach() drops a registry's view and tables only when they
-- belong to the attachment. The rest of 0.8.0 (checks of lookups, the owner's rights in the duplicate
-- check, the lock tag) is in the library.
\echo Use "ALTER EXTENSION simhash_ext UPDATE TO '0.8.0'" to load this file. \quit

-- src/internal.rs
CREATE  FUNCTION simhash_internal."execute_as_owner"(
	"table_name" regclass, /* RegClass */
	"statement" text /* Text */
) RETURNS void
STRICT VOLATILE PARALLEL UNSAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'execute_as_owner_wrapper';

-- sql/src/fill.sql
CREATE OR REPLACE FUNCTION simhash_internal.fill(table_name regclass, text_column name, fingerprint_column name, tokenizer text,
                             shingle int, weighting text, stopwords boolean, fold text, method text DEFAULT 'simhash')
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
-- Let the fingerprinting scan below use parallel workers (max_parallel_workers_per_gather of them).
SET parallel_setup_cost = 0
SET parallel_tuple_cost = 0
SET min_parallel_table_scan_size = 0
AS $$
DECLARE
  leaf regclass;
  compute text := simhash_internal.fingerprint_sql(format('t.%I', text_column), method, tokenizer, shingle, weighting,
                                                   stopwords, fold);
BEGIN
  -- Each UPDATE runs as the table's owner (execute_as_owner): a trigger of the owner's that it fires
  -- never runs with the rights of whoever attached the table or partition.
  IF (SELECT d.method FROM simhash_internal.distribution(table_name) d) IS NOT NULL THEN
    -- A Citus table: one UPDATE that Citus runs on every shard (the fingerprint is computed there).
    PERFORM simhash_internal.execute_as_owner(table_name, format('UPDATE %s t SET %I = %s', table_name,
                                                                 fingerprint_column, compute));
    RETURN;
  END IF;
  -- Every table that holds rows: the table itself, or the leaf partitions of a partitioned one.
  FOR leaf IN SELECT c.oid FROM pg_class c WHERE c.oid = table_name AND c.relkind = 'r'
              UNION ALL
              SELECT p.relid FROM pg_partition_tree(table_name) p JOIN pg_class c ON c.oid = p.relid
              WHERE p.isleaf AND c.relkind = 'r' AND p.relid <> table_name LOOP
    -- Only the rows that lack the right value are written (the fingerprint computed once per row);
    -- the table is locked (the caller altered it), so the row ctids stay valid.
    PERFORM simhash_internal.execute_as_owner(leaf, format(
      'UPDATE ONLY %1$s t SET %2$I = f.fp FROM (SELECT t.ctid AS row_id, %3$s AS fp FROM ONLY %1$s t) f '
      'WHERE t.ctid OPERATOR(pg_catalog.=) f.row_id AND t.%2$I IS DISTINCT FROM f.fp', leaf, fingerprint_column, compute));
  END LOOP;
END
$$;

-- sql/src/attach.sql
CREATE OR REPLACE FUNCTION simhash_detach(table_name regclass, text_column name DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  att @extschema@.simhash_attachment := simhash_internal.find_attachment(table_name, text_column);
  names record;
  rel_schema name;
  ddl_propagation text;
  dropped text;
  shards_table regclass;
  derived regclass;
BEGIN
  IF EXISTS (SELECT FROM pg_trigger t WHERE t.tgrelid = att.table_name AND t.tgname = att.trigger_name
                                        AND t.tgparentid <> 0) THEN
    RAISE EXCEPTION 'simhash_detach: "%" is a partition of attached table "%"', table_name, pg_partition_root(table_name)
      USING ERRCODE = '42809', HINT = format('Detach %s: that removes everything from its partitions too.',
                                             pg_partition_root(table_name));
  END IF;
  SELECT * INTO names FROM simhash_internal.object_names(att.table_name, att.text_column);
  IF (SELECT d.method FROM simhash_internal.distribution(att.table_name) d) IS NOT NULL THEN
    PERFORM set_config('citus.enable_unsafe_triggers', 'on', true);
  END IF;
  IF att.registry THEN
    -- The view that writes go through, named after the table and column, the registry tables
    -- of an attachment made before 0.6.0 whose update left them, and the table of shards.
    SELECT n.nspname INTO rel_schema
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = att.table_name;
    ddl_propagation := current_setting('citus.enable_ddl_propagation');
    PERFORM set_config('citus.enable_ddl_propagation', 'off', true);
    -- Each only when it is the attachment's, never by its name alone (docs/ARCHITECTURE.md §13.5): the
    -- view reads the table; the tables belong to the table's owner.
    derived := to_regclass(format('%I.%I', rel_schema, names.checked_view));
    IF derived IS NOT NULL AND EXISTS (
         SELECT FROM pg_rewrite r JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = r.oid
         WHERE r.ev_class = derived AND d.refclassid = 'pg_class'::regclass AND d.refobjid = att.table_name) THEN
      EXECUTE format('DROP VIEW %s', derived);
    END IF;
    PERFORM set_config('citus.enable_ddl_propagation', ddl_propagation, true);
    FOREACH derived IN ARRAY ARRAY[to_regclass(format('%I.%I', rel_schema, names.lock_table)),
                                   to_regclass(format('%I.%I', rel_schema, names.registry_table))] LOOP
      CONTINUE WHEN derived IS NULL;
      IF (SELECT c.relowner FROM pg_class c WHERE c.oid = derived)
         = (SELECT c.relowner FROM pg_class c WHERE c.oid = att.table_name) THEN
        EXECUTE format('DROP TABLE %s', derived);
      ELSE
        RAISE NOTICE 'simhash_detach: table % is left: its owner is not the owner of %', derived, att.table_name;
      END IF;
    END LOOP;
    shards_table := to_regclass(format('%I.%I', rel_schema, names.shards_table));
    IF obj_description(shards_table, 'pg_class') LIKE 'simhash_ext: one row per shard of %'
       AND (SELECT c.relowner FROM pg_class c WHERE c.oid = shards_table)
           = (SELECT c.relowner FROM pg_class c WHERE c.oid = att.table_name) THEN
      EXECUTE format('DROP TABLE %s', shards_table);
    END IF;
  END IF;
  -- On a partitioned table the trigger's clones and the partitions' columns and indexes go too.
  EXECUTE format('DROP TRIGGER %I ON %s', att.trigger_name, att.table_name);
  IF EXISTS (SELECT FROM pg_trigger t WHERE t.tgrelid = att.table_name AND t.tgname = names.check_trigger_name) THEN
    EXECUTE format('DROP TRIGGER %I ON %s', names.check_trigger_name, att.table_name);
  END IF;
  -- Whatever is left of the columns the attach added: one of them may have been dropped by hand
  -- (while the event trigger was disabled, or before 0.4.0 refused it).
  SELECT string_agg(format('DROP COLUMN %I', a.attname), ', ' ORDER BY a.attname = att.fingerprint_column, a.attnum)
  INTO dropped
  FROM pg_attribute a
  WHERE a.attrelid = att.table_name AND a.attnum > 0 AND NOT a.attisdropped
    AND a.attname = ANY (att.fingerprint_column || att.band_columns || att.flag_column
                         || CASE WHEN att.registry THEN names.registered_column::name END);
  IF dropped IS NOT NULL THEN
    EXECUTE format('ALTER TABLE %s %s', att.table_name, dropped);
  END IF;
END
$$;
