-- Issue 10, 'none' <= 3x: what the band index layout alone costs an INSERT ... SELECT of 100,000 rows
-- (427-byte bodies, random 64-bit values), as a multiple of the plain insert, best of 3, no extension
-- needed: four smallint band columns with four B-tree indexes (today's layout), one GIN index on
-- the four bands tagged by position (fastupdate on and off), one B-tree on the value alone.
--     psql -X -f bench/studies/index_layouts/index_layouts.sql   (on a scratch database; it creates src, t, timings)
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
DROP TABLE IF EXISTS src;
CREATE TABLE src AS
  SELECT g AS id,
         (floor(random() * 2^63)::bigint # (CASE WHEN random() < 0.5 THEN -9223372036854775808 ELSE 0 END)) AS fp,
         (SELECT string_agg(md5(g::text || ':' || k), '') FROM generate_series(1, 14) k)::text AS body
  FROM generate_series(1, 100000) g;
ANALYZE src;
CREATE OR REPLACE FUNCTION layout(kind text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE 'DROP TABLE IF EXISTS t';
  IF kind = 'plain' THEN
    CREATE TABLE t (id int PRIMARY KEY, body text, fp bigint);
  ELSIF kind = 'btree4' THEN
    CREATE TABLE t (id int PRIMARY KEY, body text, fp bigint,
      b0 smallint GENERATED ALWAYS AS ((((fp >> 48) & 65535) - 32768)::smallint) STORED,
      b1 smallint GENERATED ALWAYS AS ((((fp >> 32) & 65535) - 32768)::smallint) STORED,
      b2 smallint GENERATED ALWAYS AS ((((fp >> 16) & 65535) - 32768)::smallint) STORED,
      b3 smallint GENERATED ALWAYS AS (((fp & 65535) - 32768)::smallint) STORED);
    CREATE INDEX ON t (b0) INCLUDE (fp); CREATE INDEX ON t (b1) INCLUDE (fp);
    CREATE INDEX ON t (b2) INCLUDE (fp); CREATE INDEX ON t (b3) INCLUDE (fp);
  ELSIF kind IN ('gin', 'gin_nofastupdate') THEN
    CREATE TABLE t (id int PRIMARY KEY, body text, fp bigint,
      bands int[] GENERATED ALWAYS AS (ARRAY[
        ((fp >> 48) & 65535)::int, (65536 + ((fp >> 32) & 65535))::int,
        (131072 + ((fp >> 16) & 65535))::int, (196608 + (fp & 65535))::int]) STORED);
    IF kind = 'gin' THEN
      CREATE INDEX ON t USING gin (bands);
    ELSE
      CREATE INDEX ON t USING gin (bands) WITH (fastupdate = off);
    END IF;
  ELSIF kind = 'btree1' THEN
    CREATE TABLE t (id int PRIMARY KEY, body text, fp bigint);
    CREATE INDEX ON t (fp);
  END IF;
END $$;
CREATE TABLE IF NOT EXISTS timings (kind text, round int, ms float8);
TRUNCATE timings;
DO $$
DECLARE k text; r int; t0 timestamptz;
BEGIN
  FOR r IN 1..3 LOOP
    FOREACH k IN ARRAY ARRAY['plain','btree4','gin','gin_nofastupdate','btree1'] LOOP
      PERFORM layout(k);
      CHECKPOINT;
      t0 := clock_timestamp();
      INSERT INTO t (id, body, fp) SELECT id, body, fp FROM src;
      INSERT INTO timings VALUES (k, r, extract(epoch FROM clock_timestamp() - t0) * 1000);
    END LOOP;
  END LOOP;
END $$;
SELECT kind, round(min(ms)::numeric, 0) AS best_ms,
       round((min(ms) / (SELECT min(ms) FROM timings WHERE kind = 'plain'))::numeric, 2) AS x_plain
FROM timings GROUP BY kind ORDER BY best_ms;
