-- A warning when roles other than the schema's owner and superusers may create objects in the
-- extension's schema. Such a role can add a function under the name of one of the extension's with
-- a closer match for an untyped argument (simhash_pairs(text) beside simhash_pairs(regclass, ...)):
-- an unqualified call such as SELECT * FROM simhash_pairs('t') then runs that role's code with the
-- caller's rights. CREATE EXTENSION calls it, and so does the last statement of every update script.
CREATE FUNCTION simhash_internal.warn_on_schema_grants()
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  schema_name name;
  grantees text;
BEGIN
  SELECT n.nspname,
         string_agg(CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(r.rolname) END, ', '
                    ORDER BY a.grantee <> 0, r.rolname)
  INTO schema_name, grantees
  FROM pg_extension e
  JOIN pg_namespace n ON n.oid = e.extnamespace
  CROSS JOIN LATERAL aclexplode(n.nspacl) a
  LEFT JOIN pg_roles r ON r.oid = a.grantee
  WHERE e.extname = 'simhash_ext' AND a.privilege_type = 'CREATE'
    AND a.grantee <> n.nspowner AND NOT coalesce(r.rolsuper, false)
  GROUP BY n.nspname;
  IF grantees IS NOT NULL THEN
    RAISE WARNING 'schema % of extension simhash_ext grants CREATE to %', quote_ident(schema_name), grantees
      USING DETAIL = 'A role that may create objects in the schema can capture an unqualified call of the '
                     'extension''s functions with an untyped argument, such as SELECT * FROM simhash_pairs(''t''), '
                     'and run its own code with the caller''s rights.',
            HINT = format('REVOKE CREATE ON SCHEMA %I FROM %s; or install the extension in a schema of its own: '
                          'CREATE SCHEMA simhash; CREATE EXTENSION simhash_ext SCHEMA simhash;', schema_name, grantees);
  END IF;
END
$$;
SELECT simhash_internal.warn_on_schema_grants();
