-- What keeps an attachment working through ALTER TABLE ... ATTACH PARTITION and RENAME COLUMN
-- (src/partitions.rs).
CREATE FUNCTION simhash_internal.prepare_partition_columns(parent regclass, partition regclass,
                                                           att @extschema@.simhash_attachment)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  fp_type regtype;
  fp_wanted regtype;
  added text[];
  b name;
BEGIN
  -- The columns of attachment att that a table about to become a partition of parent lacks
  -- (simhash_internal.prepare_partition()).
  SELECT a.atttypid::regtype INTO fp_type FROM pg_attribute a
  WHERE a.attrelid = partition AND a.attname = att.fingerprint_column AND a.attnum > 0 AND NOT a.attisdropped;
  -- A signature (MinHash) or a fingerprint (SimHash).
  fp_wanted := CASE att.method WHEN 'minhash' THEN 'bytea' ELSE 'bigint' END;
  IF fp_type IS NOT NULL AND fp_type <> fp_wanted THEN
    RAISE EXCEPTION 'cannot attach "%" as a partition of "%": its column "%" has type %, not %',
      partition, parent, att.fingerprint_column, fp_type, fp_wanted
      USING ERRCODE = '42804', HINT = format('Rename or drop column %I of %s first.', att.fingerprint_column, partition);
  END IF;
  -- The columns the partition lacks, as the partitioned table has them (the same generation
  -- expressions, or PostgreSQL refuses the partition).
  added := '{}';
  IF fp_type IS NULL THEN
    added := added || format('ADD COLUMN %I %s', att.fingerprint_column, fp_wanted);
  END IF;
  FOREACH b IN ARRAY att.band_columns || att.flag_column LOOP
    CONTINUE WHEN b IS NULL OR EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = partition AND a.attname = b
                                                                    AND a.attnum > 0 AND NOT a.attisdropped);
    SELECT added || format('ADD COLUMN %I %s%s', b, format_type(a.atttypid, a.atttypmod),
                           CASE WHEN a.attgenerated = 's'
                                THEN format(' GENERATED ALWAYS AS (%s) STORED', pg_get_expr(d.adbin, d.adrelid)) ELSE '' END)
    INTO added
    FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
    WHERE a.attrelid = parent AND a.attname = b AND a.attnum > 0 AND NOT a.attisdropped;
  END LOOP;
  IF cardinality(added) > 0 THEN
    EXECUTE format('ALTER TABLE %s %s', partition, array_to_string(added, ', '));
  END IF;
END
$$;
COMMENT ON FUNCTION simhash_internal.prepare_partition_columns(regclass, regclass, @extschema@.simhash_attachment) IS
  'Adds to a table about to become a partition of an attached table the columns of the attachment it lacks';

CREATE FUNCTION simhash_internal.prepare_partition_bands(parent regclass, partition regclass,
                                                         att @extschema@.simhash_attachment)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  bands_constraint oid;
BEGIN
  -- Attached online, the partitioned table keeps its bands in plain columns tied to the fingerprint
  -- by a constraint (simhash_attach_concurrently()), which PostgreSQL wants the partition to have too.
  SELECT k.oid INTO bands_constraint FROM pg_constraint k
  WHERE k.conrelid = parent AND k.conname = att.trigger_name || '$bands';
  IF bands_constraint IS NOT NULL THEN
    PERFORM simhash_internal.execute_as_owner(partition, format('UPDATE ONLY %s SET %s', partition,
      (SELECT string_agg(format('%I = %s', b.band_column, b.expression), ', ')
       FROM simhash_internal.band_expressions(att) b)));
    IF NOT EXISTS (SELECT FROM pg_constraint k WHERE k.conrelid = partition AND k.conname = att.trigger_name || '$bands') THEN
      -- As the partition's owner: adding it evaluates the constraint for every row, and its definition
      -- is the partitioned table's owner's to change.
      PERFORM simhash_internal.execute_as_owner(partition, format('ALTER TABLE %s ADD CONSTRAINT %I %s', partition,
                                                                  att.trigger_name || '$bands',
                                                                  pg_get_constraintdef(bands_constraint)));
    END IF;
  END IF;
END
$$;
COMMENT ON FUNCTION simhash_internal.prepare_partition_bands(regclass, regclass, @extschema@.simhash_attachment) IS
  'Gives a table about to become a partition of a table attached online its bands and bands constraint';

CREATE FUNCTION simhash_internal.prepare_partition(parent regclass, partition regclass)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  att @extschema@.simhash_attachment;
  kind "char";
BEGIN
  SELECT c.relkind INTO kind FROM pg_class c WHERE c.oid = partition;
  FOR att IN SELECT s.* FROM pg_trigger t CROSS JOIN LATERAL simhash_internal.attachment(t.tgrelid, t.tgname, t.tgargs) s
             WHERE t.tgrelid = parent AND t.tgfoid = '@extschema@.simhash_trigger()'::regprocedure LOOP
    IF kind NOT IN ('r', 'p') THEN
      RAISE EXCEPTION 'simhash_ext: cannot attach "%" as a partition of "%", whose column "%" is attached',
        partition, parent, att.text_column
        USING ERRCODE = '42809', HINT = 'Band indexes cannot be built on a foreign table.';
    END IF;
    IF NOT EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = partition AND a.attname = att.text_column
                                                AND a.attnum > 0 AND NOT a.attisdropped) THEN
      CONTINUE;  -- PostgreSQL refuses the partition for its missing column.
    END IF;
    IF EXISTS (SELECT FROM pg_trigger t WHERE t.tgrelid = partition AND t.tgname = att.trigger_name) THEN
      RAISE EXCEPTION 'cannot attach "%" as a partition of "%": it has a trigger "%" of its own',
        partition, parent, att.trigger_name
        USING ERRCODE = '42710',
              HINT = format('If column %I of %s is attached on its own, detach it first with simhash_detach(%L).',
                            att.text_column, partition, partition::text);
    END IF;
    PERFORM simhash_internal.prepare_partition_columns(parent::regclass, partition::regclass,
                                                       att::@extschema@.simhash_attachment);
    -- Its rows get the fingerprints the trigger would have given them (rows written while it was
    -- not a partition included).
    PERFORM simhash_internal.fill(partition, att.text_column, att.fingerprint_column, att.tokenizer, att.shingle,
                                  att.weighting, att.stopwords, att.fold, att.method);
    PERFORM simhash_internal.prepare_partition_bands(parent::regclass, partition::regclass,
                                                     att::@extschema@.simhash_attachment);
  END LOOP;
END
$$;
COMMENT ON FUNCTION simhash_internal.prepare_partition(regclass, regclass) IS
  'Gives a table about to become a partition of an attached table the columns and fingerprints it needs';

CREATE FUNCTION simhash_internal.rename_column_check(table_name regclass, old_name name, new_name name,
                                                     renamed name[], args text[])
RETURNS text[]
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  wanted text[];
  new_names record;
  taken name;
BEGIN
  -- The new names of the columns renamed (those added for column old_name), derived from the
  -- trigger arguments args that name the new text column, once none of them, nor the new
  -- trigger's name, is taken (simhash_internal.rename_column()).
  SELECT array_remove(ARRAY[d.fingerprint_column] || d.band_columns || d.flag_column, NULL) INTO wanted
  FROM simhash_internal.decode_attachment(
         (SELECT string_agg(convert_to(a, getdatabaseencoding()) || '\x00'::bytea, ''::bytea ORDER BY n)
          FROM unnest(args) WITH ORDINALITY u(a, n))) d;
  SELECT * INTO new_names FROM simhash_internal.object_names(table_name, new_name);
  IF EXISTS (SELECT FROM unnest(wanted) w WHERE octet_length(w) > 63) THEN
    RAISE EXCEPTION 'cannot rename attached column "%" to "%": the name is too long to derive column names from',
      old_name, new_name USING ERRCODE = '42622';
  END IF;
  SELECT a.attname INTO taken FROM pg_attribute a
  WHERE a.attrelid = table_name AND a.attname = ANY (wanted) AND a.attnum > 0 AND NOT a.attisdropped
  ORDER BY a.attnum LIMIT 1;
  IF taken IS NOT NULL THEN
    RAISE EXCEPTION 'cannot rename attached column "%" to "%": column "%" of relation "%" already exists',
      old_name, new_name, taken, table_name
      USING ERRCODE = '42701',
            HINT = format('The columns %s follow column %I; rename or drop column %I first, or pick another name.',
                          array_to_string(renamed, ', '), old_name, taken);
  END IF;
  IF EXISTS (SELECT FROM pg_trigger t WHERE t.tgrelid = table_name AND t.tgname = new_names.trigger_name) THEN
    RAISE EXCEPTION 'cannot rename attached column "%" to "%": trigger "%" for relation "%" already exists',
      old_name, new_name, new_names.trigger_name, table_name
      USING ERRCODE = '42710', HINT = 'Rename or drop that trigger first.';
  END IF;
  RETURN wanted;
END
$$;
COMMENT ON FUNCTION simhash_internal.rename_column_check(regclass, name, name, name[], text[]) IS
  'The new names of the columns that follow a renamed attached column; refuses the rename when they or its trigger''s are too long or taken';

CREATE FUNCTION simhash_internal.rename_column_triggers(table_name regclass, trigger_name name, old_name name,
                                                        new_name name, args text[])
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  old_names record;
  new_names record;
  enabled "char";
  check_type int2;
BEGIN
  -- The trigger's arguments name the text column: trigger trigger_name is made again with the new
  -- name (simhash_internal.rename_column()), enabled or disabled as it was, and so is the check trigger.
  SELECT * INTO old_names FROM simhash_internal.object_names(table_name, old_name);
  SELECT * INTO new_names FROM simhash_internal.object_names(table_name, new_name);
  SELECT t.tgenabled INTO enabled FROM pg_trigger t WHERE t.tgrelid = table_name AND t.tgname = rename_column_triggers.trigger_name;
  EXECUTE format('DROP TRIGGER %I ON %s', trigger_name, table_name);
  EXECUTE format('CREATE TRIGGER %I BEFORE INSERT OR UPDATE ON %s FOR EACH ROW EXECUTE FUNCTION @extschema@.simhash_trigger(%s)',
                 new_names.trigger_name, table_name, (SELECT string_agg(quote_literal(a), ', ') FROM unnest(args) a));
  IF enabled = 'D' THEN
    EXECUTE format('ALTER TABLE %s DISABLE TRIGGER %I', table_name, new_names.trigger_name);
  END IF;
  SELECT t.tgenabled, t.tgtype INTO enabled, check_type FROM pg_trigger t
  WHERE t.tgrelid = table_name AND t.tgname = old_names.check_trigger_name;
  IF FOUND THEN
    EXECUTE format('DROP TRIGGER %I ON %s', old_names.check_trigger_name, table_name);
    -- AFTER INSERT OR UPDATE since 0.12.0 (tgtype bit 16: UPDATE), AFTER INSERT before.
    EXECUTE format('CREATE TRIGGER %I AFTER %s ON %s FOR EACH ROW EXECUTE FUNCTION @extschema@.simhash_check_trigger(%s)',
                   new_names.check_trigger_name,
                   CASE WHEN check_type & 16 <> 0 THEN 'INSERT OR UPDATE' ELSE 'INSERT' END, table_name,
                   (SELECT string_agg(quote_literal(a), ', ') FROM unnest(args) a));
    IF enabled = 'D' THEN
      EXECUTE format('ALTER TABLE %s DISABLE TRIGGER %I', table_name, new_names.check_trigger_name);
    END IF;
  END IF;
  -- After an online attach, its bands constraint is named after the trigger (<trigger>$bands).
  IF new_names.trigger_name <> trigger_name
     AND EXISTS (SELECT FROM pg_constraint k WHERE k.conrelid = table_name AND k.conname = trigger_name || '$bands') THEN
    EXECUTE format('ALTER TABLE %s RENAME CONSTRAINT %I TO %I', table_name, trigger_name || '$bands',
                   new_names.trigger_name || '$bands');
  END IF;
END
$$;
COMMENT ON FUNCTION simhash_internal.rename_column_triggers(regclass, name, name, name, text[]) IS
  'Remakes the triggers of an attached column being renamed with trigger arguments that name the new column, and renames its bands constraint';

CREATE FUNCTION simhash_internal.rename_column(table_name regclass, old_name name, new_name name)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  att @extschema@.simhash_attachment;
  trig record;
  renamed name[];
  args text[];
  wanted text[];
BEGIN
  FOR trig IN SELECT s AS att, t.tgparentid <> 0 AS clone, t.tgargs
              FROM pg_trigger t CROSS JOIN LATERAL simhash_internal.attachment(t.tgrelid, t.tgname, t.tgargs) s
              WHERE t.tgrelid = rename_column.table_name
                AND t.tgfoid = '@extschema@.simhash_trigger()'::regprocedure LOOP
    att := trig.att;
    renamed := att.fingerprint_column || att.band_columns || att.flag_column;
    IF old_name = ANY (renamed) THEN
      RAISE EXCEPTION 'cannot rename column "%" of "%": simhash_attach() added it for column "%"',
        old_name, table_name, att.text_column
        USING ERRCODE = '55000',
              HINT = format('Rename column %I instead: its fingerprint, band and flag columns follow it.', att.text_column);
    END IF;
    -- A partition's columns are inherited: PostgreSQL refuses to rename them there.
    CONTINUE WHEN (old_name IS DISTINCT FROM att.text_column AND old_name IS DISTINCT FROM att.scope_column)
                  OR trig.clone OR new_name = old_name;
    IF (SELECT d.method FROM simhash_internal.distribution(table_name) d) IS NOT NULL THEN
      RAISE EXCEPTION 'cannot rename attached column "%" of distributed table "%"', old_name, table_name
        USING ERRCODE = '0A000',
              HINT = 'Detach it with simhash_detach(), rename it, and attach it again.';
    END IF;
    args := simhash_internal.trigger_args(trig.tgargs);
    -- The scope column (the tenth argument) is followed: the triggers are made again naming it; the
    -- names derived from the text column stay.
    IF old_name = att.scope_column THEN
      args[10] := new_name;
      PERFORM simhash_internal.rename_column_triggers(table_name::regclass, att.trigger_name::name,
                                                      att.text_column::name, att.text_column::name, args::text[]);
      CONTINUE;
    END IF;
    -- The same arguments with the new text column: the names derived from them are the new names.
    args[1] := new_name;
    wanted := simhash_internal.rename_column_check(table_name::regclass, old_name::name, new_name::name,
                                                   renamed::name[], args::text[]);
    FOR i IN 1 .. cardinality(wanted) LOOP
      EXECUTE format('ALTER TABLE %s RENAME COLUMN %I TO %I', table_name, renamed[i], wanted[i]);
    END LOOP;
    PERFORM simhash_internal.rename_column_triggers(table_name::regclass, att.trigger_name::name, old_name::name,
                                                    new_name::name, args::text[]);
  END LOOP;
END
$$;
COMMENT ON FUNCTION simhash_internal.rename_column(regclass, name, name) IS
  'Before an attached text or scope column is renamed, renames the columns derived from it and remakes its triggers';

CREATE FUNCTION simhash_ddl_command_start() RETURNS event_trigger LANGUAGE c AS 'MODULE_PATHNAME', 'simhash_ddl_command_start';
COMMENT ON FUNCTION simhash_ddl_command_start() IS
  'Internal: keeps attachments working through ALTER TABLE ... ATTACH PARTITION and RENAME COLUMN';
-- ALTER VIEW, ALTER MATERIALIZED VIEW and ALTER FOREIGN TABLE rename the columns of a table too.
CREATE EVENT TRIGGER simhash_ddl_command_start ON ddl_command_start
  WHEN TAG IN ('ALTER TABLE', 'ALTER VIEW', 'ALTER MATERIALIZED VIEW', 'ALTER FOREIGN TABLE')
  EXECUTE FUNCTION @extschema@.simhash_ddl_command_start();
