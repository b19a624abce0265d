-- Schema shadow: an object of the same name, argument types and result for every pg_catalog
-- function (PL/pgSQL where it can declare them, the rest, as those of "any" arguments, in C),
-- aggregate, operator and table or view, for every function of simhash_ext in its own schema, and
-- a composite type named like a few common types and simhash_attachment. Each function, operator
-- and aggregate raises "shadowed <schema>.<name>(<argument types>) ran as <role>" (those in C: "cannot
-- accept a value of type any"), each view "shadowed pg_catalog.<name> ran as <role>" when read.
-- With shadow first on search_path, whatever resolves such a name through the search path runs
-- one of them. Run with the default search_path; leaves it unchanged.
SET search_path = pg_catalog;
CREATE SCHEMA shadow;
-- Any role finds them, as it would find another role's schema that it may use.
GRANT USAGE ON SCHEMA shadow TO PUBLIC;
-- A raising body; %% for the operators' own % signs.
CREATE FUNCTION pg_temp.shadow_body(what text) RETURNS text LANGUAGE sql IMMUTABLE
  AS $f$ SELECT format('BEGIN RAISE EXCEPTION %L, current_user; END', 'shadowed ' || replace(what, '%', '%%') || ' ran as %') $f$;
DO $gen$
DECLARE
  f record;
BEGIN
  -- Functions and window functions, with their argument list (defaults included) and result; and
  -- the functions of simhash_ext in its own schema (simhash_internal's are called qualified).
  FOR f IN SELECT p.oid, p.proname, n.nspname, pg_catalog.oidvectortypes(p.proargtypes) AS identity,
                  pg_get_function_arguments(p.oid) AS arguments, pg_get_function_result(p.oid) AS result
           FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
           WHERE p.prokind IN ('f', 'w')
             AND (n.nspname = 'pg_catalog'
                  OR p.oid IN (SELECT d.objid FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid
                               WHERE d.classid = 'pg_proc'::regclass AND d.deptype = 'e' AND e.extname = 'simhash_ext'
                                 AND e.extnamespace = p.pronamespace))
           ORDER BY p.oid LOOP
    BEGIN
      EXECUTE format('CREATE FUNCTION shadow.%I(%s) RETURNS %s LANGUAGE plpgsql AS %L',
                     f.proname, f.arguments, f.result, pg_temp.shadow_body(format('%s.%s(%s)', f.nspname, f.proname, f.identity)));
    EXCEPTION WHEN others THEN
      -- What PL/pgSQL cannot declare ("any" arguments as format's and concat's, cstring results):
      -- a built-in C function that raises whatever it is given.
      BEGIN
        EXECUTE format('CREATE FUNCTION shadow.%I(%s) RETURNS %s LANGUAGE internal AS %L',
                       f.proname, f.arguments, f.result, 'any_in');
      EXCEPTION WHEN others THEN NULL;
      END;
    END;
  END LOOP;
  -- Aggregates: the state of the result's type, and a final function that raises (it runs for an
  -- empty group too).
  FOR f IN SELECT p.oid, p.proname, pg_catalog.oidvectortypes(p.proargtypes) AS identity,
                  pg_get_function_result(p.oid) AS result, a.aggtransfn, a.aggtranstype, a.agginitval,
                  (SELECT string_agg(format_type(t, NULL), ', ' ORDER BY i) FROM unnest(p.proargtypes) WITH ORDINALITY u(t, i)) AS types
           FROM pg_proc p JOIN pg_aggregate a ON a.aggfnoid = p.oid
           WHERE p.pronamespace = 'pg_catalog'::regnamespace AND a.aggkind = 'n' ORDER BY p.oid LOOP
    BEGIN
      EXECUTE format('CREATE FUNCTION shadow.%I(%s) RETURNS %s LANGUAGE plpgsql AS %L',
                     'shadow_final_' || f.oid, f.result, f.result,
                     pg_temp.shadow_body(format('pg_catalog.%s(%s)', f.proname, coalesce(nullif(f.identity, ''), '*'))));
      IF f.aggtranstype <> 'internal'::regtype AND format_type(f.aggtranstype, NULL) = f.result THEN
        -- The aggregate's own transition (count(*), count("any"), min, max, bool_and, ...).
        EXECUTE format('CREATE AGGREGATE shadow.%I(%s) (SFUNC = %s, STYPE = %s, FINALFUNC = shadow.%I%s)',
                       f.proname, coalesce(f.types, '*'), f.aggtransfn, f.result, 'shadow_final_' || f.oid,
                       CASE WHEN f.agginitval IS NOT NULL THEN format(', INITCOND = %L', f.agginitval) ELSE '' END);
      ELSE
        EXECUTE format('CREATE FUNCTION shadow.%I(%s) RETURNS %s LANGUAGE plpgsql AS %L',
                       'shadow_step_' || f.oid, concat_ws(', ', f.result, f.types), f.result,
                       pg_temp.shadow_body(format('pg_catalog.%s(%s)', f.proname, f.identity)));
        EXECUTE format('CREATE AGGREGATE shadow.%I(%s) (SFUNC = shadow.%I, STYPE = %s, FINALFUNC = shadow.%I)',
                       f.proname, coalesce(f.types, '*'), 'shadow_step_' || f.oid, f.result, 'shadow_final_' || f.oid);
      END IF;
    EXCEPTION WHEN others THEN NULL;
    END;
  END LOOP;
  -- Operators, infix and prefix.
  FOR f IN SELECT o.oid, o.oprname, o.oprleft, o.oprright, o.oprresult FROM pg_operator o
           WHERE o.oprnamespace = 'pg_catalog'::regnamespace ORDER BY o.oid LOOP
    BEGIN
      EXECUTE format('CREATE FUNCTION shadow.%I(%s) RETURNS %s LANGUAGE plpgsql AS %L',
                     'shadow_operator_' || f.oid,
                     concat_ws(', ', nullif(format_type(f.oprleft, NULL), '-'), format_type(f.oprright, NULL)),
                     format_type(f.oprresult, NULL),
                     pg_temp.shadow_body(format('pg_catalog.operator %s(%s, %s)', f.oprname,
                                                CASE WHEN f.oprleft = 0 THEN 'NONE' ELSE format_type(f.oprleft, NULL) END,
                                                format_type(f.oprright, NULL))));
      EXECUTE format('CREATE OPERATOR shadow.%s (%s RIGHTARG = %s, FUNCTION = shadow.%I)', f.oprname,
                     CASE WHEN f.oprleft = 0 THEN '' ELSE format('LEFTARG = %s,', format_type(f.oprleft, NULL)) END,
                     format_type(f.oprright, NULL), 'shadow_operator_' || f.oid);
    EXCEPTION WHEN others THEN NULL;
    END;
  END LOOP;
  -- Tables and views: a view of the same columns that raises when read (even when empty: its
  -- condition is checked once, before the first row).
  CREATE FUNCTION shadow.shadow_relation(what text) RETURNS boolean LANGUAGE plpgsql STABLE
    AS $f$ BEGIN RAISE EXCEPTION 'shadowed pg_catalog.% ran as %', what, current_user; END $f$;
  FOR f IN SELECT c.relname FROM pg_class c WHERE c.relnamespace = 'pg_catalog'::regnamespace AND c.relkind IN ('r', 'v')
           ORDER BY c.relname LOOP
    BEGIN
      EXECUTE format('CREATE VIEW shadow.%I AS SELECT * FROM pg_catalog.%I WHERE shadow.shadow_relation(%L)',
                     f.relname, f.relname, f.relname);
    EXCEPTION WHEN others THEN NULL;
    END;
  END LOOP;
END
$gen$;
-- Types by name (keywords such as int, bigint, boolean and varchar name pg_catalog's types always).
CREATE TYPE shadow.text AS (shadowed int);
CREATE TYPE shadow.name AS (shadowed int);
CREATE TYPE shadow.oid AS (shadowed int);
CREATE TYPE shadow.tid AS (shadowed int);
CREATE TYPE shadow.regclass AS (shadowed int);
CREATE TYPE shadow.regtype AS (shadowed int);
CREATE TYPE shadow.regproc AS (shadowed int);
CREATE TYPE shadow.regprocedure AS (shadowed int);
CREATE TYPE shadow.regnamespace AS (shadowed int);
CREATE TYPE shadow.bytea AS (shadowed int);
CREATE TYPE shadow.int2 AS (shadowed int);
CREATE TYPE shadow.int4 AS (shadowed int);
CREATE TYPE shadow.int8 AS (shadowed int);
CREATE TYPE shadow.float8 AS (shadowed int);
CREATE TYPE shadow.bool AS (shadowed int);
CREATE TYPE shadow."char" AS (shadowed int);
CREATE TYPE shadow.jsonb AS (shadowed int);
CREATE TYPE shadow.simhash_attachment AS (shadowed int);
GRANT SELECT ON ALL TABLES IN SCHEMA shadow TO PUBLIC;
RESET search_path;
