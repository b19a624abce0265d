"""Exact near-duplicate search at k = 3, 5, 7, 8 on four 16-bit band indexes (issue 14, item 5):
lookup latency and candidates at 100k, 1M and 10M rows against a brute-force scan and against the
previous k+1-band scheme, and the write cost of the duplicate trigger. Run by bench/search.sh.

Tables (one per size and fingerprint variant, all in the same server, built once):

  sr_100k_def, sr_1m_def   the first 100,000 / 1,000,000 rows of tables.generate(seed 1) (real
                           paragraphs of the corpus joined into ~430-byte rows, see tables.py)
  sr_10m_def               10,000,000 SHORT rows (sizes above BENCH_SEARCH_SHORT_ABOVE): two
                           paragraphs of one language drawn at random (Chinese with probability 0.3),
                           generated in SQL with setseed(): the long rows would not be fingerprinted
                           and attached in a few minutes on 2 cores
  each attached with simhash_attach(t, 'body', max_distance => 8, <options>): four 16-bit band
  columns with indexes (band) INCLUDE (fingerprint). Variants (BENCH_SEARCH_OPTIONS): "def" = the
  defaults, "stop" = stopwords => true. Sizes above SHORT_ABOVE get only the first
  BENCH_SEARCH_BIG_VARIANTS variants (1).
  <t>_old                  the previous scheme as a baseline: a copy of (id, fingerprint) with, for
                           every k, k+1 columns b<k>_<i> = simhash_band(fp, i, k+1), each with a plain
                           B-tree index

Queries (BENCH_SEARCH_QUERIES, 200), alternating: existing rows (ids <= 100,000, so present in every
size of their family) with about 2% of their words/characters edited (evalset.Editor, as lookup.py),
and new rows of the same generator with another seed. The 10M table has its own queries (edited short
rows of it and new short texts).

Methods, each a SELECT count(*) in a PL/pgSQL loop with clock_timestamp() around every lookup, one
backend, max_parallel_workers_per_gather = 0:

  new    simhash_near_duplicates(NULL::t, fp, max_distance => k): an untimed warm-up pass and
         BENCH_SEARCH_PASSES (2) timed passes over all queries
  old    SELECT count(*) FROM t_old o WHERE (o.b0 = $1 OR ... OR o.bk = $k+1) AND hamming(o.fp, $q) <= k
         (static SQL in PL/pgSQL: a cached plan); one pass, the first 2 queries untimed, then as many
         queries as fit in BENCH_SEARCH_OLD_BUDGET seconds (at least 5)
  scan   SELECT count(*) FROM t WHERE hamming(body_simhash, $q) <= k; up to BENCH_SEARCH_SCAN_QUERIES
         (5) queries per k within BENCH_SEARCH_SCAN_BUDGET seconds (at least 2), after one untimed scan

Candidates: simhash_lookup_cost(t, fp, k) for every query (index entries read, heap fetches,
matches); for the old scheme, the rows the band OR selects (each one fetched from the heap and
checked), counted for the queries its timed pass ran.

Write cost: BENCH_WRITE_ROWS (100,000) rows of tables.generate(seed 4), with the rows that are
near-duplicates of another under any variant at the largest BENCH_SEARCH_WRITE_K removed
(simhash_clusters), go by one INSERT ... SELECT into empty tables attached with on_duplicate =>
'none' and 'error' (same options, max_distance => k), for k in BENCH_SEARCH_WRITE_K (3,7) and every
variant; BENCH_WRITE_REPS (2) rounds in rotated order, a CHECKPOINT before each insert; best round by
wall clock and by the backend's CPU time.
"""

import os
import random
import sys
import time

import tables
from common import LANGS, connect, copy_rows, md_table, progress, write_result
from evalset import Editor


def env_list(name, default):
    return [int(x) for x in os.environ.get(name, default).split(",") if x.strip()]


SIZES = sorted(env_list("BENCH_SEARCH_ROWS", "100000,1000000,10000000"))
KS = env_list("BENCH_SEARCH_K", "3,5,7,8")
SHORT_ABOVE = int(os.environ.get("BENCH_SEARCH_SHORT_ABOVE", "1000000"))
# name=options;name=options ... (options as simhash_attach() takes them after the column)
VARIANTS = [tuple(x.split("=", 1)) for x in
            os.environ.get("BENCH_SEARCH_OPTIONS", "def=;stop=stopwords => true").split(";") if x.strip()]
BIG_VARIANTS = int(os.environ.get("BENCH_SEARCH_BIG_VARIANTS", "1"))
QUERIES = int(os.environ.get("BENCH_SEARCH_QUERIES", "200"))
PASSES = int(os.environ.get("BENCH_SEARCH_PASSES", "2"))
OLD_BUDGET = float(os.environ.get("BENCH_SEARCH_OLD_BUDGET", "8"))
SCAN_QUERIES = int(os.environ.get("BENCH_SEARCH_SCAN_QUERIES", "5"))
SCAN_BUDGET = float(os.environ.get("BENCH_SEARCH_SCAN_BUDGET", "12"))
WRITE_ROWS = int(os.environ.get("BENCH_WRITE_ROWS", "100000"))
WRITE_REPS = int(os.environ.get("BENCH_WRITE_REPS", "2"))
WRITE_K = env_list("BENCH_SEARCH_WRITE_K", "3,7")
PARTS = ("write", "lookup")
ONLY = os.environ.get("BENCH_SEARCH_PARTS", "write,lookup").split(",")
# The result file under bench/results/ (a partial run should not overwrite the full one).
RESULT = os.environ.get("BENCH_SEARCH_RESULT", "search.md")
COMMAND = os.environ.get("BENCH_SEARCH_COMMAND", "bash bench/search.sh")
EDITED_FROM = 100_000  # edited queries come from rows with id <= this


def tag(size):
    return f"{size // 1000}k" if size < 1_000_000 else f"{size // 1_000_000}m"


def family(size):
    return "short" if size > SHORT_ABOVE else "long"


def variants_for(size):
    return VARIANTS[:BIG_VARIANTS] if size > SHORT_ABOVE else VARIANTS


def opts(options):
    return f", {options}" if options.strip() else ""


def fmt_ms(x):
    if x != x:
        return "–"
    return f"{x:.3f}" if x < 1 else (f"{x:.2f}" if x < 10 else f"{x:,.0f}" if x >= 100 else f"{x:.1f}")


def fmt_ratio(x):
    if x != x:
        return "–"
    return f"{x:,.0f}×" if x >= 10 else f"{x:.1f}×"


def pct(values, q):
    return tables.percentile(values, q) if values else float("nan")


def timed_sql(conn, sql):
    with tables.Timed(conn) as t:
        conn.execute(sql)
    return t.wall, t.cpu


# ---------------------------------------------------------------------------------------------
# Rows


def load_sources(conn, fam):
    long_sizes = [s for s in SIZES if family(s) == "long" and fam == "long"]
    short_sizes = [s for s in SIZES if family(s) == "short" and fam == "short"]
    notes = {}
    if long_sizes:
        n = long_sizes[-1]
        progress(f"search: generating {n:,} rows (tables.py, seed 1)")
        conn.execute("DROP TABLE IF EXISTS sr_src_long")
        conn.execute("CREATE TABLE sr_src_long (id bigint PRIMARY KEY, lang text, body text)")
        gen = {}
        copy_rows(conn, "sr_src_long", ["id", "lang", "body"],
                  ((i + 1, lang, text) for i, (lang, text) in enumerate(tables.generate(n, seed=1, stats=gen))))
        conn.execute("VACUUM ANALYZE sr_src_long")
        notes["long"] = tables.rows_note(tables.describe_rows(conn, "sr_src_long"))
    if short_sizes:
        n = short_sizes[-1]
        progress(f"search: generating {n:,} short rows in SQL (two random paragraphs of one language)")
        conn.execute("DROP TABLE IF EXISTS sr_src_short, sr_para")
        conn.execute("CREATE TABLE sr_para (lang text, i int, body text, PRIMARY KEY (lang, i))")
        pool = tables.pools()
        copy_rows(conn, "sr_para", ["lang", "i", "body"],
                  ((lang, i, p) for lang in LANGS for i, p in enumerate(pool[lang])))
        conn.execute("ANALYZE sr_para")
        conn.execute("CREATE TABLE sr_src_short (id bigint PRIMARY KEY, lang text, body text)")
        conn.execute("SET max_parallel_workers_per_gather = 0")
        conn.execute("SELECT setseed(0.25)")
        counts = {lang: len(pool[lang]) for lang in LANGS}
        w, c = timed_sql(conn, f"""
INSERT INTO sr_src_short
SELECT g, s.lang, a.body || ' ' || b.body
FROM (SELECT g, lang,
             floor(random() * CASE lang WHEN 'zh' THEN {counts['zh']} ELSE {counts['en']} END)::int AS ia,
             floor(random() * CASE lang WHEN 'zh' THEN {counts['zh']} ELSE {counts['en']} END)::int AS ib
      FROM (SELECT g, CASE WHEN random() < {tables.ZH_SHARE} THEN 'zh' ELSE 'en' END AS lang
            FROM generate_series(1, {n}) g) x) s
JOIN sr_para a ON a.lang = s.lang AND a.i = s.ia
JOIN sr_para b ON b.lang = s.lang AND b.i = s.ib""")
        progress(f"search: short rows in {w:.0f} s")
        conn.execute("VACUUM ANALYZE sr_src_short")
        notes["short"] = tables.rows_note(tables.describe_rows(conn, "sr_src_short"))
        dup = conn.execute("SELECT count(*) - count(DISTINCT body) FROM sr_src_short").fetchone()[0]
        notes["short_dups"] = dup
    return notes


def build_tables(conn, size, built):
    """The attached tables of one size and their old-scheme copies; adds {(table, what): (wall, cpu, bytes)}."""
    conn.execute("SET maintenance_work_mem = '1GB'")
    conn.execute("RESET max_parallel_workers_per_gather")  # builds may use both cores
    if True:
        src = f"sr_src_{family(size)}"
        for v, options in variants_for(size):
            t = f"sr_{tag(size)}_{v}"
            conn.execute(f"DROP TABLE IF EXISTS {t}, {t}_old")
            conn.execute(f"CREATE TABLE {t} (id bigint PRIMARY KEY, lang text, body text)")
            conn.execute(f"INSERT INTO {t} SELECT id, lang, body FROM {src} WHERE id <= {size}")
            w, c = timed_sql(conn, f"SELECT simhash_attach('{t}', 'body', max_distance => 8{opts(options)})")
            conn.execute(f"VACUUM ANALYZE {t}")
            idx = conn.execute(f"SELECT sum(pg_relation_size(indexrelid)) FROM pg_index WHERE indrelid = "
                               f"'{t}'::regclass AND indexrelid::regclass::text LIKE '%band%'").fetchone()[0]
            built[(t, "attach")] = (w, c, float(idx))
            progress(f"search: {t}: simhash_attach in {w:.0f} s ({c:.0f} s CPU of the backend), "
                     f"band indexes {float(idx) / 1e6:.0f} MB")
            cols = ", ".join(f"simhash_band(body_simhash, {i}, {k + 1}) AS b{k}_{i}" for k in KS for i in range(k + 1))
            w0, c0 = timed_sql(conn, f"CREATE TABLE {t}_old AS SELECT id, body_simhash AS fp, {cols} FROM {t}")
            w1 = c1 = 0.0
            for k in KS:
                for i in range(k + 1):
                    a, b = timed_sql(conn, f"CREATE INDEX ON {t}_old (b{k}_{i})")
                    w1 += a
                    c1 += b
            conn.execute(f"VACUUM ANALYZE {t}_old")
            idx = conn.execute(f"SELECT sum(pg_relation_size(indexrelid)) FROM pg_index "
                               f"WHERE indrelid = '{t}_old'::regclass").fetchone()[0]
            built[(t, "old")] = (w0 + w1, c0 + c1, float(idx))
            progress(f"search: {t}_old: copy and {sum(k + 1 for k in KS)} band indexes in {w0 + w1:.0f} s")
    return built


def make_queries(conn, fam):
    pool = tables.pools()
    if True:
        sizes = [s for s in SIZES if family(s) == fam]
        if not sizes:
            return
        q = f"sr_q_{fam}"
        rng = random.Random(7)
        n_edit = (QUERIES + 1) // 2
        ids = rng.sample(range(1, min(EDITED_FROM, sizes[0]) + 1), n_edit)
        src = {r[0]: (r[1], r[2]) for r in conn.execute(f"SELECT id, lang, body FROM sr_src_{fam} WHERE id = ANY(%s)",
                                                         (ids,))}
        editors = {lang: Editor(lang, pool[lang][:3000], seed=70 + i) for i, lang in enumerate(LANGS)}
        edited = [("edited", src[i][0], i, editors[src[i][0]].word_edits(src[i][1], 0.02)) for i in ids]
        if fam == "long":
            new = [("new", lang, None, text) for lang, text in tables.generate(QUERIES - n_edit, seed=2)]
        else:
            r2 = random.Random(2)
            new = []
            for _ in range(QUERIES - n_edit):
                lang = "zh" if r2.random() < tables.ZH_SHARE else "en"
                new.append(("new", lang, None, " ".join(r2.choice(pool[lang]) for _ in range(2))))
        queries = [edited[i // 2] if i % 2 == 0 else new[i // 2] for i in range(QUERIES)]
        vs = variants_for(sizes[-1]) if fam == "short" else VARIANTS
        cols = ", ".join(f"fp_{v} bigint, " + ", ".join(f"o{k}_{i}_{v} int" for k in KS for i in range(k + 1))
                         for v, _ in vs)
        conn.execute(f"DROP TABLE IF EXISTS {q}")
        conn.execute(f"CREATE TABLE {q} (qid int PRIMARY KEY, kind text, lang text, src_id bigint, body text, {cols})")
        copy_rows(conn, q, ["qid", "kind", "lang", "src_id", "body"],
                  ((i + 1, k, lang, s, body) for i, (k, lang, s, body) in enumerate(queries)))
        for v, options in vs:
            conn.execute(f"UPDATE {q} SET fp_{v} = simhash(body{opts(options)})")
            conn.execute(f"UPDATE {q} SET " + ", ".join(f"o{k}_{i}_{v} = simhash_band(fp_{v}, {i}, {k + 1})"
                                                        for k in KS for i in range(k + 1)))
        conn.execute(f"VACUUM ANALYZE {q}")
        nulls = conn.execute(f"SELECT count(*) FROM {q} WHERE " + " OR ".join(f"fp_{v} IS NULL" for v, _ in vs)
                             ).fetchone()[0]
        if nulls:
            raise SystemExit(f"search: {nulls} query texts of {q} without a fingerprint")


def create_function(conn, t, q, v):
    branches = []
    for k in KS:
        band = " OR ".join(f"o.b{k}_{i} = q.o{k}_{i}_{v}" for i in range(k + 1))
        branches.append(f"""
    ELSIF method = 'old' AND k = {k} THEN
      t0 := clock_timestamp();
      SELECT count(*) INTO c FROM {t}_old o WHERE ({band}) AND hamming(o.fp, q.fp_{v}) <= {k};
      t1 := clock_timestamp();
    ELSIF method = 'old_cand' AND k = {k} THEN
      t0 := clock_timestamp();
      SELECT count(*) INTO c FROM {t}_old o WHERE ({band});
      t1 := clock_timestamp();""")
    conn.execute(f"""
CREATE OR REPLACE FUNCTION {t}_time(method text, k int, pass int, qids int[], budget float8, min_q int)
RETURNS int LANGUAGE plpgsql AS $f$
DECLARE
  q record;
  t0 timestamptz;
  t1 timestamptz;
  c bigint;
  started timestamptz := clock_timestamp();
  n int := 0;
BEGIN
  FOR q IN SELECT * FROM {q} WHERE qid = ANY(qids) ORDER BY qid LOOP
    IF n >= min_q AND extract(epoch FROM clock_timestamp() - started) > budget THEN
      EXIT;
    END IF;
    IF method = 'new' THEN
      t0 := clock_timestamp();
      SELECT count(*) INTO c FROM simhash_near_duplicates(NULL::{t}, q.fp_{v}, max_distance => k);
      t1 := clock_timestamp();
    ELSIF method = 'scan' THEN
      t0 := clock_timestamp();
      SELECT count(*) INTO c FROM {t} t WHERE hamming(t.body_simhash, q.fp_{v}) <= k;
      t1 := clock_timestamp();{''.join(branches)}
    ELSE
      RAISE EXCEPTION 'unknown method % at k = %', method, k;
    END IF;
    n := n + 1;
    IF pass > 0 THEN
      INSERT INTO sr_times VALUES ('{t}', k, method, pass, q.qid, extract(epoch FROM t1 - t0) * 1000, c);
    END IF;
  END LOOP;
  RETURN n;
END
$f$""")


def measure(conn, size, v):
    t = f"sr_{tag(size)}_{v}"
    q = f"sr_q_{family(size)}"
    create_function(conn, t, q, v)
    conn.execute("SET max_parallel_workers_per_gather = 0")
    conn.execute(f"DELETE FROM sr_times WHERE tbl = '{t}'")
    conn.execute(f"DELETE FROM sr_cost WHERE tbl = '{t}'")
    qids = [r[0] for r in conn.execute(f"SELECT qid FROM {q} ORDER BY qid")]

    def run(method, k, p, ids, budget=1e9, min_q=1_000_000):
        return conn.execute(f"SELECT {t}_time(%s::text, %s::int, %s::int, %s::int[], %s::float8, %s::int)", (method, k, p, ids, budget, min_q)).fetchone()[0]

    progress(f"search: {t}: simhash_near_duplicates, warm-up and {PASSES} timed passes, k = {KS}")
    for p in range(PASSES + 1):
        for k in (KS if p % 2 == 0 else KS[::-1]):
            run("new", k, p, qids)
    for k in KS:
        conn.execute(f"INSERT INTO sr_cost SELECT '{t}', {k}, q.qid, c.* FROM {q} q, "
                     f"simhash_lookup_cost('{t}', q.fp_{v}, {k}) c")
    for k in KS:
        run("old", k, 0, qids[:2])
        n = run("old", k, 1, qids[2:], OLD_BUDGET, 5)
        ran = [r[0] for r in conn.execute(f"SELECT qid FROM sr_times WHERE tbl = '{t}' AND k = {k} "
                                          f"AND method = 'old'")]
        run("old_cand", k, 1, ran)
        progress(f"search: {t}: old scheme k = {k}: {n} queries")
    for k in KS:
        if k == KS[0]:
            run("scan", k, 0, qids[:1])
        n = run("scan", k, 1, qids[:SCAN_QUERIES], SCAN_BUDGET, 2)
    s = summary(conn, t)
    progress(f"search: {t}: p50 ms " + ", ".join(
        f"k={k}: new {fmt_ms(s[k]['new']['p50'])} old {fmt_ms(s[k]['old']['p50'])} scan {fmt_ms(s[k]['scan']['p50'])}"
        for k in KS))


def summary(conn, t):
    out = {}
    for k in KS:
        out[k] = {}
        for m in ("new", "old", "scan", "old_cand"):
            rows = conn.execute("SELECT ms, found, qid FROM sr_times WHERE tbl = %s AND k = %s AND method = %s",
                                (t, k, m)).fetchall()
            ms = [r[0] for r in rows]
            best = {}
            for ms_, _, qid in rows:
                best[qid] = min(ms_, best.get(qid, ms_))
            out[k][m] = {"n": len({r[2] for r in rows}), "p50": pct(ms, 0.5), "p99": pct(ms, 0.99),
                         "p99best": pct(list(best.values()), 0.99), "found": [r[1] for r in rows]}
        # Exactness: rows found by the old scheme and by the scan against the new lookup, per query.
        out[k]["mismatch"] = conn.execute(
            "SELECT count(*) FROM sr_times o JOIN sr_times n ON n.tbl = o.tbl AND n.k = o.k AND n.qid = o.qid "
            "AND n.method = 'new' AND n.pass = 1 WHERE o.tbl = %s AND o.k = %s AND o.method IN ('old', 'scan') "
            "AND o.found <> n.found", (t, k)).fetchone()[0]
        out[k]["compared"] = conn.execute(
            "SELECT count(*) FROM sr_times WHERE tbl = %s AND k = %s AND method IN ('old', 'scan')", (t, k)).fetchone()[0]
        cost = conn.execute("SELECT probes, candidates, heap_fetches, matches FROM sr_cost WHERE tbl = %s AND k = %s",
                            (t, k)).fetchall()
        out[k]["cost"] = {name: [r[i] for r in cost] for i, name in
                          enumerate(("probes", "candidates", "heap_fetches", "matches"))}
    return out


# ---------------------------------------------------------------------------------------------
# Write cost


def write_cost(conn):
    progress(f"search: write cost: {WRITE_ROWS:,} source rows (tables.py, seed 4)")
    names = [f"sr_w_{v}_{k}_{mode}" for v, _ in VARIANTS for k in WRITE_K for mode in ("none", "error")]
    conn.execute("DROP TABLE IF EXISTS sr_wsrc, sr_wprobe, " + ", ".join(names))
    conn.execute("CREATE TABLE sr_wsrc (id bigint PRIMARY KEY, lang text, body text)")
    copy_rows(conn, "sr_wsrc", ["id", "lang", "body"],
              ((i + 1, lang, text) for i, (lang, text) in enumerate(tables.generate(WRITE_ROWS, seed=4))))
    kmax = max(WRITE_K)
    removed = 0
    for _, options in VARIANTS:
        conn.execute("CREATE TABLE sr_wprobe AS SELECT id, body FROM sr_wsrc")
        conn.execute("ALTER TABLE sr_wprobe ADD PRIMARY KEY (id)")
        conn.execute(f"SELECT simhash_attach('sr_wprobe', 'body', max_distance => {kmax}{opts(options)})")
        removed += conn.execute(
            f"DELETE FROM sr_wsrc s USING simhash_clusters('sr_wprobe', max_distance => {kmax}) c "
            "WHERE s.id::text = c.key AND c.key <> c.representative").rowcount
        conn.execute("DROP TABLE sr_wprobe")
    conn.execute("VACUUM ANALYZE sr_wsrc")
    rows = tables.describe_rows(conn, "sr_wsrc")
    n = rows["rows"]
    for v, options in VARIANTS:
        for k in WRITE_K:
            for mode in ("none", "error"):
                name = f"sr_w_{v}_{k}_{mode}"
                conn.execute(f"CREATE TABLE {name} (id bigint PRIMARY KEY, body text) WITH (autovacuum_enabled = off)")
                conn.execute(f"SELECT simhash_attach('{name}', 'body', max_distance => {k}, "
                             f"on_duplicate => '{mode}'{opts(options)})")
    conn.execute("SET max_parallel_workers_per_gather = 0")
    conn.execute("SELECT simhash('warm-up'), sum(length(body)) FROM sr_wsrc")
    best = {}
    for rep in range(WRITE_REPS):
        order = names[rep % len(names):] + names[:rep % len(names)]
        for name in order:
            conn.execute(f"TRUNCATE {name}")
            conn.execute("CHECKPOINT")
            with tables.Timed(conn) as tm:
                cur = conn.execute(f"INSERT INTO {name} (id, body) SELECT id, body FROM sr_wsrc")
            if cur.rowcount != n:
                raise SystemExit(f"write cost: {name} inserted {cur.rowcount} of {n}")
            b = best.setdefault(name, {"wall": float("inf"), "cpu": float("inf")})
            b["wall"] = min(b["wall"], tm.wall)
            b["cpu"] = min(b["cpu"], max(tm.cpu, 1 / tables.HZ))
            progress(f"search: write cost round {rep + 1}/{WRITE_REPS} {name:22} {tm.wall:6.2f} s wall, "
                     f"{tm.cpu:6.2f} s CPU, {n / tm.wall:8.0f} rows/s")
    conn.execute("DROP TABLE " + ", ".join(names))
    return {"rows": rows, "removed": removed, "best": best, "kmax": kmax}


def render_write(w):
    n = w["rows"]["rows"]
    out = ["## 2. Write cost of the duplicate trigger: `'error'` against `'none'`", ""]
    out.append(f"Rows: {tables.rows_note(w['rows'])} (tables.py, seed 4; {w['removed']} rows removed that were "
               f"within distance {w['kmax']} of another row under one of the fingerprint variants, so that the "
               f"`'error'` inserts run to the end). Each target is empty, attached with "
               f"`simhash_attach(t, 'body', max_distance => k, on_duplicate => mode, <options>)`, and gets all "
               f"{n:,} rows in one `INSERT … SELECT`; best of {WRITE_REPS} rounds (rotated order, `CHECKPOINT` "
               f"before each insert, autovacuum off, one backend without parallel workers). `s` by wall clock, "
               f"`CPU-s` the backend's own CPU time (`/proc/PID/stat`), best round of each.")
    out.append("")
    out.append("The `'none'` inserts do the same work whatever `k` (no locks, no search), so each `'error'` "
               "insert is compared with the fastest `'none'` insert of its fingerprint variant over all `k`: "
               "on a shared machine the slower `'none'` rounds are the noise, not the baseline.")
    out.append("")
    rows = []
    verdicts = []
    for v, options in VARIANTS:
        nones = [w["best"][f"sr_w_{v}_{k}_none"] for k in WRITE_K]
        fastest = {m: min(b[m] for b in nones) for m in ("wall", "cpu")}
        for k in WRITE_K:
            none, err = w["best"][f"sr_w_{v}_{k}_none"], w["best"][f"sr_w_{v}_{k}_error"]
            rw, rc = err["wall"] / fastest["wall"], err["cpu"] / fastest["cpu"]
            ok = "met" if max(rw, rc) <= 2 else ("met by one measure" if min(rw, rc) <= 2 else "**not met**")
            verdicts.append((v, k, ok))
            for mode, b in (("none", none), ("error", err)):
                rows.append([f"`{v}` ({options.strip() or 'defaults'})", k, f"`'{mode}'`", f"{b['wall']:.2f}",
                             f"{n / b['wall']:,.0f}", f"{b['cpu']:.2f}", f"{n / b['cpu']:,.0f}",
                             f"{rw:.2f}× / {rc:.2f}×" if mode == "error" else "", ok if mode == "error" else ""])
    out.append(md_table(["fingerprints", "k", "on_duplicate", "s", "rows/s", "CPU-s", "rows/CPU-s",
                         "error ÷ fastest none (wall / CPU)", "target ≤ 2×"], rows,
                        align=["l", "r", "l"] + ["r"] * 6))
    return out


# ---------------------------------------------------------------------------------------------
# Report


def render_lookup(conn, notes, built):
    out = ["## 1. Lookup latency and candidates: four 16-bit band indexes vs brute-force scan vs k+1 bands", ""]
    if "long" in notes:
        out.append(f"- Long rows (sizes up to {SHORT_ABOVE:,}): {notes['long']}; tables.py, seed 1; the smaller "
                   f"tables hold the first rows of the largest.")
    if "short" in notes:
        out.append(f"- Short rows (sizes above {SHORT_ABOVE:,}): {notes['short']}; each is two paragraphs of one "
                   f"language drawn at random from the corpus paragraphs of at most {tables.MAX_PARAGRAPH} characters "
                   f"(SQL `random()` after `setseed(0.25)`); {notes['short_dups']:,} rows repeat another row's text.")
    out.append(f"- Fingerprint variants: " + "; ".join(f"`{v}` = {o.strip() or 'the defaults'}" for v, o in VARIANTS)
               + f" (sizes above {SHORT_ABOVE:,}: " + ", ".join(f"`{v}`" for v, _ in VARIANTS[:BIG_VARIANTS])
               + " only).")
    out.append(f"- {QUERIES} queries per table, half edited existing rows (ids ≤ {EDITED_FROM:,}, about 2% of the "
               f"words/characters edited), half new texts. `new` = `simhash_near_duplicates(NULL::t, fp, "
               f"max_distance => k)`, untimed warm-up + {PASSES} timed passes over all queries; `old` = prepared "
               f"`WHERE (b0 = $ OR … OR bk = $) AND hamming(fp, $q) <= k` on a copy of the fingerprints with k+1 "
               f"band columns `simhash_band(fp, i, k+1)` and a B-tree index each, one pass within "
               f"{OLD_BUDGET:.0f} s per k (at least 5 queries, after 2 untimed ones); `scan` = `SELECT count(*) FROM t WHERE "
               f"hamming(body_simhash, $q) <= k`, up to {SCAN_QUERIES} queries per k within {SCAN_BUDGET:.0f} s "
               f"(with so few queries its p99 is about its maximum). Latency inside the server (clock_timestamp() "
               f"around each lookup in PL/pgSQL), one backend, no parallel workers, ms.")
    out.append("- Candidates: `new` = index entries read (`simhash_lookup_cost().candidates`; heap fetches are "
               "only the matches); `old` = rows selected by the band OR, each fetched from the heap and checked. "
               "`new p99 best`: 99th percentile of each query's fastest timed pass, which leaves out most "
               "preemptions by other processes on the shared machine. `× vs scan` = scan p50 ÷ new p50; `× vs old` = old p50 ÷ new p50. `same count`: old-scheme and scan "
               "lookups that found as many rows as `new` did for the same query (an exactness check).")
    out.append("")
    head = ["rows", "fp", "k", "probes", "new p50", "new p99", "new p99 best", "cand. p50", "cand. p99", "matches mean",
            "scan p50 (n)", "× vs scan", "old p50", "old p99 (n)", "old cand. p50", "old cand. p99", "× vs old", "same count"]
    rows = []
    summ = {}
    for size in SIZES:
        for v, _ in variants_for(size):
            t = f"sr_{tag(size)}_{v}"
            if not conn.execute("SELECT count(*) FROM sr_times WHERE tbl = %s", (t,)).fetchone()[0]:
                continue
            s = summary(conn, t)
            summ[(size, v)] = s
            for k in KS:
                x = s[k]
                cand = x["cost"]["candidates"]
                matches = x["cost"]["matches"]
                oc = x["old_cand"]["found"]
                rows.append([f"{size:,}", v, k, pct(x["cost"]["probes"], 0.5), fmt_ms(x["new"]["p50"]),
                             fmt_ms(x["new"]["p99"]), fmt_ms(x["new"]["p99best"]), pct(cand, 0.5), pct(cand, 0.99),
                             f"{sum(matches) / max(1, len(matches)):.2f}",
                             f"{fmt_ms(x['scan']['p50'])} ({x['scan']['n']})",
                             fmt_ratio(x["scan"]["p50"] / x["new"]["p50"]), fmt_ms(x["old"]["p50"]),
                             f"{fmt_ms(x['old']['p99'])} ({x['old']['n']})", pct(oc, 0.5), pct(oc, 0.99),
                             fmt_ratio(x["old"]["p50"] / x["new"]["p50"]),
                             f"{x['compared'] - x['mismatch']}/{x['compared']}"])
    out.append(md_table(head, rows, align=["r", "l"] + ["r"] * 16))
    out.append("")
    # Targets
    tg = []

    def get(size, v, k):
        return summ.get((size, v), {}).get(k)

    def mark(ok):
        return "met" if ok else "**not met**"

    for v, _ in VARIANTS:
        for size, k, p50max, p99max in ((1_000_000, 3, 0.3, None), (1_000_000, 7, 1.0, 5.0), (10_000_000, 7, 2.0, None)):
            x = get(size, v, k)
            if not x:
                continue
            p50, p99 = x["new"]["p50"], x["new"]["p99"]
            line = f"- {size:,} rows, `{v}`, k = {k}: p50 {fmt_ms(p50)} ms < {p50max} — {mark(p50 < p50max)}"
            if p99max:
                pb = x["new"]["p99best"]
                line += (f"; p99 {fmt_ms(p99)} ms < {p99max} — {mark(p99 < p99max)} (p99 of each query's best "
                         f"pass {fmt_ms(pb)} ms — {mark(pb < p99max)})")
            if size == 1_000_000:
                r = x["scan"]["p50"] / p50
                line += f"; {fmt_ratio(r)} faster than the scan (≥ 100×) — {mark(r >= 100)}"
            tg.append(line)
    if tg:
        out.append("**Targets** (issue 14, item 5):")
        out.append("")
        out.extend(tg)
        out.append("")
    # kinds of queries
    krows = []
    for size in SIZES:
        for v, _ in variants_for(size):
            t = f"sr_{tag(size)}_{v}"
            if (size, v) not in summ:
                continue
            for k in KS:
                r = dict((kind, (p50, n)) for kind, p50, n in conn.execute(
                    "SELECT q.kind, percentile_disc(0.5) WITHIN GROUP (ORDER BY x.ms), count(*) FROM sr_times x "
                    f"JOIN sr_q_{family(size)} q USING (qid) WHERE x.tbl = %s AND x.k = %s AND x.method = 'new' "
                    "GROUP BY q.kind", (t, k)))
                c = dict((kind, (p50, p99)) for kind, p50, p99 in conn.execute(
                    "SELECT q.kind, percentile_disc(0.5) WITHIN GROUP (ORDER BY c.candidates), "
                    "percentile_disc(0.99) WITHIN GROUP (ORDER BY c.candidates) FROM sr_cost c "
                    f"JOIN sr_q_{family(size)} q USING (qid) WHERE c.tbl = %s AND c.k = %s GROUP BY q.kind", (t, k)))
                krows.append([f"{size:,}", v, k] + [f"{fmt_ms(r[x][0])}" if x in r else "–" for x in ("edited", "new")]
                             + [f"{c[x][0]} / {c[x][1]}" if x in c else "–" for x in ("edited", "new")])
    out.append("`new` by kind of query: p50 ms, and candidates p50 / p99:")
    out.append("")
    out.append(md_table(["rows", "fp", "k", "edited p50 ms", "new-text p50 ms", "edited cand.", "new-text cand."],
                        krows, align=["r", "l"] + ["r"] * 5))
    out.append("")
    if built:
        brows = []
        for (t, what), (w, c, b) in built.items():
            brows.append([t if what == "attach" else f"{t}_old",
                          "simhash_attach (fingerprint, 4 band columns, 4 indexes (band) INCLUDE (fp))"
                          if what == "attach" else f"old scheme: copy of (id, fp), {sum(k + 1 for k in KS)} band "
                                                   f"columns and B-tree indexes (k = {', '.join(map(str, KS))})",
                          f"{w:.0f}", f"{c:.0f}", f"{b / 1e6:,.0f}"])
        out.append("Builds (wall s, CPU-s of the building backend only: parallel workers not counted; size of "
                   "the band indexes, MB):")
        out.append("")
        out.append(md_table(["table", "what", "s", "CPU-s", "indexes MB"], brows, align=["l", "l", "r", "r", "r"]))
        out.append("")
    return out, summ


def explain_where(conn, summ):
    """EXPLAIN (ANALYZE, BUFFERS) of the SQL form at k = 7 for the median- and the most-candidates query."""
    out = []
    longs = [s for s in SIZES if family(s) == "long"]
    if not longs or 7 not in KS:
        return out
    size = longs[-1]
    v = VARIANTS[0][0]
    t = f"sr_{tag(size)}_{v}"
    rows = conn.execute(f"SELECT qid, candidates FROM sr_cost WHERE tbl = %s AND k = 7 ORDER BY candidates, qid",
                        (t,)).fetchall()
    if not rows:
        return out
    picks = [("median candidates", rows[len(rows) // 2]), ("most candidates", rows[-1])]
    out.append(f"**Where the time goes**: `EXPLAIN (ANALYZE, BUFFERS, COSTS OFF)` of `simhash_near_duplicates_sql("
               f"'{t}', fp, 7)` (the same probe plan as the C function, as SQL) for two queries:")
    out.append("")
    for label, (qid, cand) in picks:
        fp = conn.execute(f"SELECT fp_{v} FROM sr_q_{family(size)} WHERE qid = %s", (qid,)).fetchone()[0]
        sql = conn.execute("SELECT simhash_near_duplicates_sql(%s::regclass, %s::bigint, 7)", (t, fp)).fetchone()[0]
        conn.execute("SET max_parallel_workers_per_gather = 0")
        plan = [r[0] for r in conn.execute(f"EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) {sql}")]
        plan = [ln if len(ln) <= 160 else ln[:150] + " …" for ln in plan]
        cost = conn.execute("SELECT * FROM simhash_lookup_cost(%s::regclass, %s::bigint, 7)", (t, fp)).fetchone()
        out.append(f"Query {qid} ({label}: {cand} index entries; simhash_lookup_cost: probes {cost[0]}, candidates "
                   f"{cost[1]}, heap fetches {cost[2]}, matches {cost[3]}):")
        out.append("")
        out.extend(["```"] + plan + ["```", ""])
    return out


def main():
    t_start = time.time()
    load0 = tables.load_avg()
    conn = connect()
    conn.execute("SELECT simhash('warm-up: loads the jieba dictionary')")
    parts = {}
    w = None
    if "write" in ONLY:
        w = write_cost(conn)
        parts["write"] = render_write(w)
        write_report(parts, t_start, load0)
    if "lookup" in ONLY:
        notes, built, summ = {}, {}, {}
        conn.execute("DROP TABLE IF EXISTS sr_times, sr_cost")
        conn.execute("CREATE TABLE sr_times (tbl text, k int, method text, pass int, qid int, ms float8, found bigint)")
        conn.execute("CREATE TABLE sr_cost (tbl text, k int, qid int, probes bigint, candidates bigint, "
                     "heap_fetches bigint, matches bigint)")
        for size in SIZES:
            fam = family(size)
            if fam not in notes:
                notes.update(load_sources(conn, fam))
                notes[fam + "_loaded"] = True
                progress(f"search: {QUERIES} queries for the {fam} rows")
                make_queries(conn, fam)
            build_tables(conn, size, built)
            for v, _ in variants_for(size):
                measure(conn, size, v)
                parts["lookup"], summ = render_lookup(conn, notes, built)
                write_report(parts, t_start, load0)
            if fam == "long" and size == max(s for s in SIZES if family(s) == "long"):
                parts["explain"] = explain_where(conn, summ)
                write_report(parts, t_start, load0)
    progress(f"search: done in {time.time() - t_start:.0f} s")


def write_report(parts, t_start, load0):
    out = ["# Exact near-duplicate search on four 16-bit bands: latency, candidates, write cost", ""]
    out.append(f"Command: `{COMMAND}` (knobs in bench/search.sh). Run of "
               f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(t_start))}, "
               f"{time.time() - t_start:.0f} s so far when this file was written; load average "
               f"{load0:.1f} at the start, {tables.load_avg():.1f} now (a shared 2-core machine: other engineers' "
               f"builds run meanwhile, so wall-clock figures are noisy; CPU-s figures much less).")
    out.append("")
    machine = os.environ.get("BENCH_SEARCH_MACHINE")
    if machine:
        out.extend([machine, ""])
    for key in ("lookup", "explain", "write"):
        if key in parts:
            out.extend(parts[key])
            out.append("")
    text = "\n".join(out)
    write_result(RESULT, text)
    return text


if __name__ == "__main__":
    main()
