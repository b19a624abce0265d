"""Lookup latency: the near-duplicates of one text in a table of 100,000 and of 1,000,000 rows,
through the band indexes, by a brute-force Hamming scan, and by pg_trgm similarity with a GIN index,
on the same rows in the same server.

Tables: lk_1m holds 1,000,000 rows of tables.generate() (seed 1; real paragraphs of the corpus
combined, see tables.py), lk_100k its first 100,000 rows. Each is attached with simhash_attach()
(defaults: max_distance 3, 4 bands of 16 bits). pg_trgm gets a copy of the same rows, lk_1m_text and
lk_100k_text (id, lang, body, same primary key), with a GIN index on the text: on the attached
table itself the index would have to wait for the attach (which rewrites the table), and the two
longest builds (attach and GIN index of the 1M-row table) could not run side by side. Builds run two
at a time, each in one backend (max_parallel_workers_per_gather = 0), whose CPU time is reported.
Everything is ANALYZEd.

The same band lookups also run on copies attached with stopwords => true (lk_1m_stop, lk_100k_stop):
the default keeps stop words, and with them the band buckets are far fuller, so a lookup fetches
and checks more rows.

Queries (QUERIES, alternating): rows of lk_100k (so present in both sizes) with about 2% of their
words (English) or characters (Chinese) edited as in the accuracy set's edit2 (evalset.Editor), and
new rows of the same generator with another seed, which are in no table.

Latency is measured inside the server: PL/pgSQL functions loop over the queries and read
clock_timestamp() around each lookup, so neither the client nor the network is in the figures.
Every lookup counts the rows it finds (SELECT count(*) FROM ...). Band lookups, for every query:

  function, by fingerprint   simhash_near_duplicates(NULL::t, fp)     what a user calls
  function, by text          simhash_near_duplicates(NULL::t, text)   + fingerprinting the query text
  its SQL, EXECUTEd          the text of simhash_near_duplicates_sql(t, fp), run with EXECUTE:
                             parsed and planned every time, without the PL/pgSQL wrapper
  prepared band query        the same predicate as static SQL with parameters (a cached plan):
                             what the index lookup itself costs

and, to see where the function's time goes, simhash_near_duplicates_sql(t, fp) alone and one call of
simhash_attachments(). Each method goes over all queries before the next starts (an untimed
warm-up pass, then PASSES timed passes, the methods in a rotated order): the 1M-row tables do not
fit in shared_buffers (512 MB), so a lookup mostly finds its pages in the OS page cache, and no
method should find them in shared buffers because another one just read them for the same query.
The two slow methods run once on the first SLOW_QUERIES queries (fewer if they exceed SLOW_BUDGET
seconds per table), each as a query text sent to EXECUTE (parsing and planning are negligible next
to their run time):

  brute-force scan   SELECT count(*) FROM t WHERE hamming(body_simhash, fp) <= 3
  pg_trgm, GIN       SELECT count(*) FROM t_text WHERE body % 'query text', with
                     pg_trgm.similarity_threshold set per query language to pg_trgm's best-F1
                     threshold in results/accuracy_balanced.md (0.40 Chinese, 0.60 English)

One backend, no parallel workers. EXPLAIN ANALYZE confirms each plan once (shown in the results).
"""

import os
import random
import threading
import time

import tables
from common import LANGS, connect, copy_rows, md_table, progress, write_result
from evalset import Editor

SIZES = sorted(int(x) for x in os.environ.get("BENCH_LOOKUP_ROWS", "100000,1000000").split(","))
QUERIES = int(os.environ.get("BENCH_LOOKUP_QUERIES", "500"))
PASSES = int(os.environ.get("BENCH_LOOKUP_PASSES", "3"))
SLOW_QUERIES = int(os.environ.get("BENCH_SLOW_QUERIES", "20"))
SLOW_BUDGET = float(os.environ.get("BENCH_SLOW_BUDGET", "45"))  # seconds per table for the slow methods
TRGM_THRESHOLD = {"zh": 0.40, "en": 0.60}  # best F1 of pg_trgm per language in results/accuracy_balanced.md
P50_TARGET_MS = 0.3
SCAN_RATIO_TARGET = 100

# Fingerprint options of the attached tables: table suffix, simhash_attach options, label.
VARIANTS = [("", "", "default options"), ("_stop", ", stopwords => true", "`stopwords => true`")]

BAND_METHODS = [
    ("fn_fp", "band indexes: `simhash_near_duplicates(NULL::t, fp)`"),
    ("fn_text", "band indexes: `simhash_near_duplicates(NULL::t, text)`"),
    ("sql_exec", "band indexes: its SQL text, EXECUTEd"),
    ("prepared", "band indexes: prepared band query"),
]
SLOW_METHODS = [
    ("scan", "brute-force scan: `hamming(body_simhash, fp) <= 3`"),
    ("trgm", "pg_trgm, GIN index: `body % text`"),
]


def name(size):
    return f"lk_{size // 1000}k" if size < 1_000_000 else f"lk_{size // 1_000_000}m"


def create_functions(conn, table, v):
    """The timing loop of the band lookups for one table (static SQL needs the table's name) whose
    fingerprints are those of variant v (columns fp{v}, b0{v}.. of lk_queries): one method per call,
    over all queries."""
    band = " OR ".join(f"t.body_band{i} = q.b{i}{v}" for i in range(4))
    conn.execute(f"""
CREATE OR REPLACE FUNCTION {table}_time_bands(pass int, method text) RETURNS void
LANGUAGE plpgsql AS $f$
DECLARE
  q record;
  t0 timestamptz;
  t1 timestamptz;
  c int;
  built text;
BEGIN
  FOR q IN SELECT * FROM lk_queries ORDER BY qid LOOP
    c := NULL;
    IF method = 'fn_fp' THEN
      t0 := clock_timestamp();
      SELECT count(*) INTO c FROM simhash_near_duplicates(NULL::{table}, q.fp{v});
      t1 := clock_timestamp();
    ELSIF method = 'fn_text' THEN
      t0 := clock_timestamp();
      SELECT count(*) INTO c FROM simhash_near_duplicates(NULL::{table}, q.body);
      t1 := clock_timestamp();
    ELSIF method = 'sql_exec' THEN
      t0 := clock_timestamp();
      EXECUTE q.sql_{table} INTO c;
      t1 := clock_timestamp();
    ELSIF method = 'prepared' THEN
      t0 := clock_timestamp();
      SELECT count(*) INTO c FROM {table} t WHERE ({band}) AND hamming(t.body_simhash, q.fp{v}) <= 3;
      t1 := clock_timestamp();
    ELSIF method = 'build_sql' THEN
      t0 := clock_timestamp();
      built := simhash_near_duplicates_sql('{table}', q.fp{v});
      t1 := clock_timestamp();
    ELSIF method = 'attachments' THEN
      t0 := clock_timestamp();
      PERFORM count(*) FROM simhash_attachments();
      t1 := clock_timestamp();
    ELSE
      RAISE EXCEPTION 'unknown method %', method;
    END IF;
    IF pass > 0 THEN
      INSERT INTO lk_times VALUES ('{table}', pass, q.qid, method, extract(epoch FROM t1 - t0) * 1000, c);
    END IF;
  END LOOP;
END
$f$""")


SLOW_FUNCTION = """
CREATE OR REPLACE FUNCTION lk_time_slow(tbl regclass, text_tbl regclass, query_id int, keep boolean) RETURNS void
LANGUAGE plpgsql AS $f$
DECLARE
  q lk_queries;
  t0 timestamptz; t1 timestamptz; t2 timestamptz;
  c1 int; c2 int;
BEGIN
  SELECT * INTO q FROM lk_queries WHERE qid = query_id;
  PERFORM set_config('pg_trgm.similarity_threshold', q.trgm_threshold::text, true);
  t0 := clock_timestamp();
  EXECUTE format('SELECT count(*) FROM %s WHERE hamming(body_simhash, %s) <= 3', tbl, q.fp) INTO c1;
  t1 := clock_timestamp();
  EXECUTE format('SELECT count(*) FROM %s WHERE body %% %L', text_tbl, q.body) INTO c2;
  t2 := clock_timestamp();
  IF keep THEN
    INSERT INTO lk_times VALUES
      (tbl::text, 1, q.qid, 'scan', extract(epoch FROM t1 - t0) * 1000, c1),
      (tbl::text, 1, q.qid, 'trgm', extract(epoch FROM t2 - t1) * 1000, c2);
  END IF;
END
$f$"""


def load_tables(conn):
    big = name(SIZES[-1])
    for size in SIZES:
        conn.execute(f"DROP TABLE IF EXISTS {name(size)}, {name(size)}_text, "
                     + ", ".join(f"{name(size)}{v}" for v, _, _ in VARIANTS))
    progress(f"lookup: generating and loading {SIZES[-1]:,} rows (tables.py, seed 1)")
    conn.execute(f"CREATE TABLE {big} (id bigint PRIMARY KEY, lang text, body text)")
    gen = {}
    copy_rows(conn, big, ["id", "lang", "body"],
              ((i + 1, lang, text) for i, (lang, text) in enumerate(tables.generate(SIZES[-1], seed=1, stats=gen))))
    for size in SIZES:
        t = name(size)
        if t != big:
            conn.execute(f"CREATE TABLE {t} (id bigint PRIMARY KEY, lang text, body text)")
            conn.execute(f"INSERT INTO {t} SELECT * FROM {big} WHERE id <= {size}")
        conn.execute(f"CREATE TABLE {t}_text (id bigint PRIMARY KEY, lang text, body text)")
        conn.execute(f"INSERT INTO {t}_text SELECT * FROM {t}")
    for size in SIZES:
        conn.execute(f"VACUUM ANALYZE {name(size)}")
        conn.execute(f"VACUUM ANALYZE {name(size)}_text")
    return gen


def build_indexes():
    """simhash_attach on every lk_* table, a GIN trigram index on every lk_*_text table: the largest
    GIN build in one backend, everything else one after the other in a second one."""
    results = {}
    big = name(SIZES[-1])
    gin = "CREATE INDEX {0}_text_trgm ON {0}_text USING gin (body gin_trgm_ops)"
    first = [(big, "gin", gin.format(big))]
    second = [(name(s), "attach", f"SELECT simhash_attach('{name(s)}', 'body')") for s in reversed(SIZES)]
    second += [(name(s), "gin", gin.format(name(s))) for s in reversed(SIZES[:-1])]
    for v, options, _ in VARIANTS[1:]:
        for s in reversed(SIZES):
            t = name(s) + v
            second.append((t, "copy", f"CREATE TABLE {t} (id bigint PRIMARY KEY, lang text, body text); "
                                      f"INSERT INTO {t} SELECT id, lang, body FROM {name(s)}_text"))
            second.append((t, "attach", f"SELECT simhash_attach('{t}', 'body'{options})"))
    errors = []

    def worker(jobs):
        try:
            conn = connect()
            conn.execute("SET max_parallel_workers_per_gather = 0")
            conn.execute("SET maintenance_work_mem = '256MB'")
            for table, what, sql in jobs:
                with tables.Timed(conn) as t:
                    conn.execute(sql)
                results[(table, what)] = (t.wall, t.cpu)
                label = {"attach": "simhash_attach", "gin": "GIN index", "copy": "copy of the rows"}[what]
                progress(f"lookup: {table}: {label} in {t.wall:.1f} s ({t.cpu:.1f} s CPU)")
            conn.close()
        except Exception as e:  # re-raised in the main thread
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(jobs,)) for jobs in (first, second)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    if errors:
        raise errors[0]
    return results


def make_queries(conn):
    rng = random.Random(7)
    small = name(SIZES[0])
    n_edit = (QUERIES + 1) // 2
    ids = rng.sample(range(1, SIZES[0] + 1), n_edit)
    src = {r[0]: (r[1], r[2]) for r in conn.execute(f"SELECT id, lang, body FROM {small} WHERE id = ANY(%s)", (ids,))}
    pool = tables.pools()
    editors = {lang: Editor(lang, pool[lang][:3000], seed=70 + i) for i, lang in enumerate(LANGS)}
    edited = [("edited", src[i][0], i, editors[src[i][0]].word_edits(src[i][1], 0.02)) for i in ids]
    new = [("new", lang, None, text) for lang, text in tables.generate(QUERIES - n_edit, seed=2)]
    queries = [edited[i // 2] if i % 2 == 0 else new[i // 2] for i in range(QUERIES)]
    conn.execute("DROP TABLE IF EXISTS lk_queries, lk_times")
    cols = ", ".join([f"fp{v} bigint, " + ", ".join(f"b{i}{v} int" for i in range(4)) for v, _, _ in VARIANTS]
                     + [f"sql_{name(s)}{v} text" for s in SIZES for v, _, _ in VARIANTS])
    conn.execute("CREATE TABLE lk_queries (qid int PRIMARY KEY, kind text, lang text, src_id bigint, body text, "
                 f"trgm_threshold real, {cols})")
    copy_rows(conn, "lk_queries", ["qid", "kind", "lang", "src_id", "body", "trgm_threshold"],
              ((i + 1, k, lang, s, body, TRGM_THRESHOLD[lang]) for i, (k, lang, s, body) in enumerate(queries)))
    for v, options, _ in VARIANTS:
        conn.execute(f"UPDATE lk_queries SET fp{v} = simhash(body{options})")
        sets = ", ".join([f"b{i}{v} = simhash_band(fp{v}, {i}, 4)" for i in range(4)]
                         + [f"sql_{name(s)}{v} = 'SELECT count(*) FROM (' || "
                            f"simhash_near_duplicates_sql('{name(s)}{v}', fp{v}) || ') s'" for s in SIZES])
        conn.execute(f"UPDATE lk_queries SET {sets}")
    conn.execute("VACUUM ANALYZE lk_queries")
    conn.execute("CREATE TABLE lk_times (tbl text, pass int, qid int, method text, ms float8, found int)")
    nulls = conn.execute("SELECT count(*) FROM lk_queries WHERE "
                         + " OR ".join(f"fp{v} IS NULL" for v, _, _ in VARIANTS)).fetchone()[0]
    if nulls:
        raise SystemExit(f"lookup: {nulls} query texts without a fingerprint")


def explain(conn, sql):
    lines = [r[0] for r in conn.execute(sql)]
    return [ln if len(ln) <= 150 else ln[:140] + " …'" for ln in lines]


def plans(conn, table):
    """EXPLAIN ANALYZE of each path for the first query, checked against the intended plan."""
    qid, fp, body, thr, sql, b = conn.execute(
        f"SELECT qid, fp, body, trgm_threshold, sql_{table}, ARRAY[b0, b1, b2, b3] FROM lk_queries "
        f"ORDER BY qid LIMIT 1").fetchone()
    opts = "ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF"
    inner = sql[len("SELECT count(*) FROM ("):-len(") s")]
    out = {"band": explain(conn, f"EXPLAIN ({opts}) {inner}")}
    conn.execute(f"PREPARE lk_band(bigint, int, int, int, int) AS SELECT count(*) FROM {table} t WHERE ("
                 + " OR ".join(f"t.body_band{i} = ${i + 2}" for i in range(4))
                 + ") AND hamming(t.body_simhash, $1) <= 3")
    conn.execute("SET plan_cache_mode = force_generic_plan")
    out["prepared"] = explain(conn, f"EXPLAIN ({opts}) EXECUTE lk_band({fp}, {b[0]}, {b[1]}, {b[2]}, {b[3]})")
    conn.execute("RESET plan_cache_mode")
    conn.execute("DEALLOCATE lk_band")
    out["scan"] = explain(conn, f"EXPLAIN ({opts}) SELECT count(*) FROM {table} WHERE hamming(body_simhash, {fp}) <= 3")
    conn.execute(f"SET pg_trgm.similarity_threshold = {thr}")
    lit = conn.execute("SELECT quote_literal(%s)", (body,)).fetchone()[0]
    out["trgm"] = explain(conn, f"EXPLAIN ({opts}) SELECT count(*) FROM {table}_text WHERE body % {lit}")
    conn.execute("RESET pg_trgm.similarity_threshold")
    checks = {
        "band indexes": all(any("BitmapOr" in ln for ln in out[k])
                            and all(any(f"{table}_body_band{i}_idx" in ln for ln in out[k]) for i in range(4))
                            for k in ("band", "prepared")),
        "scan": any("Seq Scan" in ln for ln in out["scan"]),
        "pg_trgm": any(f"Bitmap Index Scan on {table}_text_trgm" in ln for ln in out["trgm"]),
    }
    return qid, out, checks


def stats(conn, table, method):
    rows = conn.execute("SELECT qid, ms, found FROM lk_times WHERE tbl = %s AND method = %s",
                        (table, method)).fetchall()
    ms = [r[1] for r in rows]
    best = {}
    for qid, v, _ in rows:
        best[qid] = min(v, best.get(qid, v))
    return {"queries": len(best), "n": len(ms), "p50": tables.percentile(ms, 0.5), "p99": tables.percentile(ms, 0.99),
            "p99best": tables.percentile(list(best.values()), 0.99),
            "mean": sum(ms) / len(ms) if ms else float("nan"),
            "found": sum(r[2] or 0 for r in rows) / len(rows) if rows else float("nan")}


def fmt_ms(x):
    return f"{x:.3f}" if x < 1 else (f"{x:.2f}" if x < 100 else f"{x:,.0f}")


def fmt_ratio(x):
    return f"{x:,.0f}×" if x >= 10 else f"{x:.2g}×"


def main():
    load0 = tables.load_avg()
    t_start = time.time()
    conn = connect()
    conn.execute("SET max_parallel_workers_per_gather = 0")
    gen = load_tables(conn)
    described = {s: tables.describe_rows(conn, name(s)) for s in SIZES}
    heap_before = {s: conn.execute(f"SELECT pg_table_size('{name(s)}')").fetchone()[0] for s in SIZES}
    progress(f"lookup: {tables.rows_note(described[SIZES[-1]])}; building indexes, two at a time")
    built = build_indexes()
    sizes = {}
    for s in SIZES:
        t = name(s)
        conn.execute(f"ANALYZE {t}_text")
        for v, _, _ in VARIANTS:
            conn.execute(f"ANALYZE {t}{v}")
            sizes[(s, v)] = [float(x) for x in conn.execute(
                f"SELECT pg_table_size('{t}{v}'), "
                f"(SELECT sum(pg_relation_size(format('%I', '{t}{v}_body_band' || i || '_idx'))) "
                f" FROM generate_series(0, 3) i), pg_relation_size('{t}_text_trgm'), pg_relation_size('{t}_pkey')"
            ).fetchone()]

    progress(f"lookup: {QUERIES} query texts (edited rows and new rows, alternating)")
    make_queries(conn)
    conn.execute("SELECT simhash('warm-up: loads the jieba dictionary')")
    conn.execute(SLOW_FUNCTION)
    for s in SIZES:
        for v, _, _ in VARIANTS:
            t = name(s) + v
            create_functions(conn, t, v)
            progress(f"lookup: {t}: band lookups, a warm-up pass and {PASSES} timed passes over {QUERIES} queries")
            # Each method goes over all queries in turn (in a rotated order from pass to pass), so that
            # none finds the pages of a query in shared buffers because another method just read them.
            methods = [m for m, _ in BAND_METHODS] + ["build_sql", "attachments"]
            for p in range(PASSES + 1):
                for m in methods[p % len(methods):] + methods[:p % len(methods)]:
                    conn.execute(f"SELECT {t}_time_bands({p}, '{m}')")
        t = name(s)
        progress(f"lookup: {t}: brute-force scan and pg_trgm, up to {SLOW_QUERIES} queries")
        conn.execute(f"SELECT lk_time_slow('{t}', '{t}_text', 1, false)")  # warm-up: heap and GIN index cached
        t0 = time.time()
        for qid in range(1, SLOW_QUERIES + 1):
            if qid > 5 and time.time() - t0 > SLOW_BUDGET:
                progress(f"lookup: {t}: slow methods stopped after {qid - 1} queries ({SLOW_BUDGET:.0f} s budget)")
                break
            conn.execute(f"SELECT lk_time_slow('{t}', '{t}_text', {qid}, true)")
        for v, _, _ in VARIANTS:
            shown = BAND_METHODS + (SLOW_METHODS if not v else [])
            progress(f"lookup: {t}{v}: p50 " + ", ".join(f"{m} {fmt_ms(stats(conn, t + v, m)['p50'])} ms"
                                                         for m, _ in shown))
    candidates, found_band = {}, {}
    small = name(SIZES[0])
    for v, _, _ in VARIANTS:
        for s in SIZES:
            t = name(s) + v
            candidates[(s, v)] = [r[0] for r in conn.execute(
                f"SELECT (SELECT count(*) FROM {t} t WHERE "
                + " OR ".join(f"t.body_band{i} = q.b{i}{v}" for i in range(4)) + ") FROM lk_queries q")]
        # Is the source row of an edited query within distance 3?
        found_band[v] = float(conn.execute(
            f"SELECT avg((hamming(r.body_simhash, q.fp{v}) <= 3)::int) FROM lk_queries q "
            f"JOIN {small}{v} r ON r.id = q.src_id WHERE q.kind = 'edited'").fetchone()[0])
    found_trgm, n_edited = conn.execute(
        f"SELECT avg((similarity(r.body, q.body) >= q.trgm_threshold)::int), count(*) "
        f"FROM lk_queries q JOIN {small} r ON r.id = q.src_id WHERE q.kind = 'edited'").fetchone()
    plan_out = {s: plans(conn, name(s)) for s in SIZES}
    elapsed = time.time() - t_start
    load1 = tables.load_avg()

    # ---------------------------------------------------------------------------------------------
    big = SIZES[-1]
    d = described[big]
    out = ["## Lookup latency: the near-duplicates of one text, band indexes vs brute force vs pg_trgm", ""]
    out.append(f"Tables: `{name(big)}`, {tables.rows_note(d)}; "
               + "; ".join(f"`{name(s)}`, its first {s:,} rows" for s in SIZES if s != big)
               + f". Rows from tables.py (seed 1): each joins {gen['parts'] / big:.1f} random paragraphs of "
               f"one language on average; the {big:,} rows use {gen['distinct']:,} different paragraphs, each "
               f"{gen['parts'] / gen['distinct']:.0f} times on average, so rows share paragraphs (no two rows "
               f"are equal). Each table is attached with `simhash_attach(t, 'body')` (default options; "
               f"max_distance 3, 4 bands of 16 bits); copies of them (`{name(big)}_stop`, …) are attached with "
               f"`stopwords => true`; pg_trgm searches another copy of the same rows (`{name(big)}_text`, …) "
               f"with `CREATE INDEX … USING gin (body gin_trgm_ops)`. All ANALYZEd.")
    out.append("")
    out.append(f"Queries: {QUERIES}, alternating: {(QUERIES + 1) // 2} rows of `{small}` (so present in every "
               f"table) with about 2% of their words (English) or characters (Chinese) edited, and "
               f"{QUERIES // 2} new rows of the same generator (another seed), in no table. Latency is measured "
               f"in the server (clock_timestamp() around each lookup in a PL/pgSQL loop), one backend, no "
               f"parallel workers. Band lookups: an untimed warm-up pass and {PASSES} timed passes, in each of "
               f"which every method goes over all queries in turn (so that none finds a query's pages in shared "
               f"buffers because another method just read them: the 1M-row tables are larger than "
               f"`shared_buffers`, 512 MB, and most pages come from the OS page cache); `p99 best` is the 99th "
               f"percentile of each query's best pass, which leaves out "
               f"most of the preemptions by other processes on this shared 2-core machine (load average "
               f"{load0:.1f} at the start of this stage, {load1:.1f} at the end). The brute-force scan and "
               f"pg_trgm: one pass over the first {SLOW_QUERIES} queries, stopped after {SLOW_BUDGET:.0f} s per "
               f"table (the `queries` column says how many ran; with so few, p99 is the maximum); the scan "
               f"costs the same whatever the fingerprint options. pg_trgm's `similarity_threshold` is set per "
               f"query language to its best-F1 threshold in results/accuracy_balanced.md: {TRGM_THRESHOLD['zh']:.2f} for "
               f"Chinese, {TRGM_THRESHOLD['en']:.2f} for English.")
    out.append("")
    rows, summary = [], {}
    for s in SIZES:
        t = name(s)
        scan = stats(conn, t, "scan")
        for v, _, vlabel in VARIANTS:
            for m, label in BAND_METHODS + (SLOW_METHODS if not v else []):
                st = stats(conn, t + v, m)
                summary[(s, v, m)] = st
                rows.append([f"{s:,}", vlabel if m not in ("scan", "trgm") else "", label, st["queries"],
                             fmt_ms(st["p50"]), fmt_ms(st["p99"]),
                             fmt_ms(st["p99best"]) if m not in ("scan", "trgm") else "–", fmt_ms(st["mean"]),
                             f"{st['found']:.2f}", fmt_ratio(scan["p50"] / st["p50"])])
    out.append(md_table(["rows", "fingerprints", "lookup", "queries", "p50 ms", "p99 ms", "p99 best ms", "mean ms",
                         "rows found / query", "scan p50 ÷ p50"], rows, align=["r", "l", "l"] + ["r"] * 7))
    out.append("")

    def verdict(ok):
        return "met" if ok else "**not met**"

    def targets(v):
        fn, txt, raw, prep = (summary[(big, v, m)] for m in ("fn_fp", "fn_text", "sql_exec", "prepared"))
        scan = summary[(big, "", "scan")]
        return (f"p50 under {P50_TARGET_MS} ms: `simhash_near_duplicates` by fingerprint {fmt_ms(fn['p50'])} ms — "
                f"{verdict(fn['p50'] < P50_TARGET_MS)}; by text {fmt_ms(txt['p50'])} ms — "
                f"{verdict(txt['p50'] < P50_TARGET_MS)}; the same SQL without the PL/pgSQL wrapper "
                f"{fmt_ms(raw['p50'])} ms — {verdict(raw['p50'] < P50_TARGET_MS)}; prepared band query "
                f"{fmt_ms(prep['p50'])} ms — {verdict(prep['p50'] < P50_TARGET_MS)}. At least "
                f"{SCAN_RATIO_TARGET}× faster than the brute-force scan (p50): by fingerprint "
                f"{fmt_ratio(scan['p50'] / fn['p50'])} — {verdict(scan['p50'] / fn['p50'] >= SCAN_RATIO_TARGET)}; "
                f"by text {fmt_ratio(scan['p50'] / txt['p50'])} — "
                f"{verdict(scan['p50'] / txt['p50'] >= SCAN_RATIO_TARGET)}.")

    trgm = summary[(big, "", "trgm")]
    out.append(f"**Targets at {big:,} rows, default options.** {targets('')} pg_trgm's p50 is "
               f"{fmt_ratio(trgm['p50'] / summary[(big, '', 'fn_fp')]['p50'])} that of the band lookup by "
               f"fingerprint.")
    out.append("")
    out.append(f"**The same with `stopwords => true`.** {targets('_stop')}")
    out.append("")
    out.append("**Band candidates per lookup**: rows sharing at least one band value with the query, each "
               "fetched from the heap and checked with `hamming()`, over all queries:")
    out.append("")
    crow = []
    for v, _, vlabel in VARIANTS:
        for s in SIZES:
            c = candidates[(s, v)]
            crow.append([f"{s:,}", vlabel, f"{sum(c) / len(c):.1f}", tables.percentile(c, 0.5),
                         tables.percentile(c, 0.99), max(c), f"{4 * s / 65536:.1f}"])
    out.append(md_table(["rows", "fingerprints", "mean", "p50", "p99", "max", "uniform: 4 × rows / 65,536"], crow,
                        align=["r", "l"] + ["r"] * 5))
    out.append("")
    out.append(f"Edited queries whose source row is found ({n_edited} queries): band lookup (distance ≤ 3) "
               + ", ".join(f"{100 * found_band[v]:.0f}% with {vlabel}" for v, _, vlabel in VARIANTS)
               + f"; pg_trgm at its threshold {100 * float(found_trgm):.0f}%. This is a latency benchmark; "
               f"results/accuracy_balanced.md compares the methods on labelled pairs.")
    out.append("")
    out.append("Where the time of `simhash_near_duplicates(NULL::t, fp)` goes (p50 of each part, timed on its "
               "own for every query, ms). The function is PL/pgSQL: it calls `simhash_near_duplicates_sql()`, "
               "which finds the table's attachment with `simhash_find_attachment()`, which calls the SQL "
               "function `simhash_attachments()` twice (its `SET search_path` clause keeps it from being inlined "
               "into the calling query, and PostgreSQL 15 plans a SQL function's query again on every call); "
               "then it runs the query text with `RETURN QUERY EXECUTE`. The "
               "by-text variant finds the attachment once more, for the fingerprint options, and fingerprints "
               "the text.")
    out.append("")
    wrows = []
    for s in SIZES:
        for v, _, vlabel in VARIANTS:
            p = {m: stats(conn, name(s) + v, m)["p50"]
                 for m in ("fn_fp", "fn_text", "build_sql", "attachments", "sql_exec", "prepared")}
            wrows.append([f"{s:,}", vlabel, fmt_ms(p["fn_fp"]), fmt_ms(p["build_sql"]), fmt_ms(p["attachments"]),
                          fmt_ms(p["sql_exec"]), fmt_ms(p["prepared"]), fmt_ms(p["fn_text"] - p["fn_fp"])])
    out.append(md_table(["rows", "fingerprints", "whole function, by fingerprint", "simhash_near_duplicates_sql()",
                         "one simhash_attachments()", "EXECUTE of the built SQL (parse, plan, run)",
                         "prepared band query (run only)", "by text − by fingerprint"], wrows,
                        align=["r", "l"] + ["r"] * 6))
    out.append("")
    out.append("p50 by kind of query, ms (number of queries):")
    out.append("")
    krows = []
    for s in SIZES:
        for v, _, vlabel in VARIANTS:
            for m, label in BAND_METHODS + (SLOW_METHODS if not v else []):
                r = conn.execute(
                    "SELECT q.kind, percentile_disc(0.5) WITHIN GROUP (ORDER BY x.ms), count(DISTINCT qid) "
                    "FROM lk_times x JOIN lk_queries q USING (qid) WHERE x.tbl = %s AND x.method = %s "
                    "GROUP BY q.kind", (name(s) + v, m)).fetchall()
                by = {k: (val, n) for k, val, n in r}
                krows.append([f"{s:,}", vlabel if m not in ("scan", "trgm") else "", label]
                             + [f"{fmt_ms(by[k][0])} ({by[k][1]})" if k in by else "–" for k in ("edited", "new")])
    out.append(md_table(["rows", "fingerprints", "lookup", "edited rows", "new texts"], krows,
                        align=["r", "l", "l", "r", "r"]))
    out.append("")
    out.append("**Build time and size.** The builds ran two at a time on the 2 cores, each in one backend "
               "(wall times include waiting for a core; CPU-s is the building backend's own CPU time):")
    out.append("")
    brows = []
    for s in SIZES:
        t = name(s)
        for v, _, vlabel in VARIANTS:
            heap, bands, gin, pkey = sizes[(s, v)]
            aw, ac = built[(t + v, "attach")]
            before = heap_before[s]
            brows.append([f"{s:,}", f"`simhash_attach`, {vlabel}: fingerprint, 4 band columns, 4 B-tree indexes",
                          f"{aw:.1f}", f"{ac:.1f}", f"{bands / 1e6:.0f} (+ {(heap - before) / 1e6:.0f} of heap)"])
        heap, bands, gin, pkey = sizes[(s, "")]
        gw, gc = built[(t, "gin")]
        brows.append([f"{s:,}", "pg_trgm GIN index", f"{gw:.1f}", f"{gc:.1f}", f"{gin / 1e6:.0f}"])
        brows.append([f"{s:,}", "for scale: heap after attach; primary key", "", "",
                      f"{heap / 1e6:.0f}; {pkey / 1e6:.0f}"])
    out.append(md_table(["rows", "structure", "build s", "build CPU-s", "size MB"], brows,
                        align=["r", "l", "r", "r", "r"]))
    out.append("")
    out.append("**Plans** of the first query (default options), `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF)` "
               "(long literals cut):")
    out.append("")
    titles = {
        "band": "the SQL of `simhash_near_duplicates_sql()`",
        "prepared": "the prepared band query, generic plan (`plan_cache_mode = force_generic_plan`)",
        "scan": "brute-force scan",
        "trgm": "pg_trgm",
    }
    for s in SIZES:
        qid, pl, checks = plan_out[s]
        ok = ", ".join(f"{k}: {'the intended plan' if ok else '**NOT the intended plan**'}"
                       for k, ok in checks.items())
        out.append(f"`{name(s)}`, query {qid} — {ok}.")
        out.append("")
        for k in ("band", "prepared", "scan", "trgm"):
            if k == "prepared" and s != big:
                continue
            out.extend([f"{titles[k]}:", "", "```"] + pl[k] + ["```", ""])
    out.append(f"Stage run time: {elapsed:.0f} s.")
    text = "\n".join(out)
    write_result("lookup.md", text)
    print(text)
    bad = [(name(s), k) for s in SIZES for k, ok in plan_out[s][2].items() if not ok]
    if bad:
        progress(f"lookup: WARNING: not the intended plans: {bad}")


if __name__ == "__main__":
    main()
