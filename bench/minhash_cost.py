"""What a MinHash attachment costs beside a SimHash one, on the same rows in one run: bytes per row,
attach time, lookup latency, single-row INSERT latency and a bulk INSERT in 'error' mode. Run by
bench/minhash_cost.sh; writes bench/results/minhash_cost.md (BENCH_MC_RESULT).

Rows: ROWS rows of tables.generate(seed 1) (paragraphs of the corpus of one language joined into
rows of at least 300 bytes, 30 % Chinese: the rows of bench/search.sh and bench/studies/attach/attach.sh), table
(id bigint PRIMARY KEY, lang text, body text).

1. Tables, each a fresh copy of those rows (CREATE TABLE AS, primary key, VACUUM ANALYZE,
   CHECKPOINT), then one timed simhash_attach(), in this order (SimHash and MinHash alternating):
     sim_none   simhash_attach(t, 'body')                                   (defaults)
     min_none   simhash_attach(t, 'body', method => 'minhash')              (defaults)
     min_err    simhash_attach(t, 'body', method => 'minhash', on_duplicate => 'error')
     sim_err    simhash_attach(t, 'body', on_duplicate => 'error')
     min_nofu   as min_err, then ALTER INDEX <its GIN index> SET (fastupdate = off)
     min_none_nofu  as min_none, then the same ALTER INDEX
   plus `plain` (no attach). After each attach VACUUM ANALYZE; sizes from pg_table_size (heap, its
   TOAST, free space and visibility maps), pg_indexes_size (the primary key and the attach's
   indexes), pg_total_relation_size.
2. Lookups on sim_none and min_none (fresh indexes, no GIN pending list): QUERIES texts, alternating
   an existing row (ids sampled with seed 7) with about 2 % of its words/characters edited
   (evalset.Editor, as bench/search.py) and a new row (tables.generate(seed 2)). Each lookup is
   `SELECT count(*), bool_or((item).id = src_id) FROM simhash_near_duplicates(NULL::t, text)` in a
   PL/pgSQL loop with clock_timestamp() around it; one untimed warm-up pass and PASSES timed passes,
   SimHash and MinHash alternating pass by pass (order swapped every pass), one backend, no parallel
   workers; the two tables' indexes loaded into shared buffers (pg_prewarm) after the warm-up pass. After the single-row inserts (4.), one more pass on min_err (its GIN pending list holding
   those rows) and min_nofu (fastupdate off, no pending list).
3. New texts: tables.generate(seed 4), rows that are near-duplicates of an earlier one under
   either method removed (SimHash: those a 'skip' attachment on an empty table drops; MinHash: the
   later row of every pair that shares a band key and reaches the threshold, by a self-join, as a
   'skip' attachment would be quadratic, see 5.). The single-row inserts use those of them that
   match no row of the big tables under either method.
4. Single-row INSERTs: INSERTS autocommit `INSERT INTO t (id, lang, body) VALUES ($1, $2, $3)`
   (prepared) per target, from one client connection (psycopg, synchronous_commit = off, so that
   the WAL flush of each commit, the same for every target, is not in the figures; one target
   `plain_sync` keeps it on to show what it adds), latency by the client's clock around each
   execute; BLOCKS blocks, each target gets the same INSERTS / BLOCKS texts in a block, the order of
   the targets rotating from block to block; WARMUP untimed inserts per target first, then every
   target's indexes loaded into shared buffers (pg_prewarm). Targets:
   plain, plain_sync, sim_none, min_none, sim_err, min_err, min_nofu, min_none_nofu (all holding
   ROWS rows).
5. Bulk: `INSERT INTO t SELECT id, lang, body FROM <new texts> ORDER BY id LIMIT BULK_ROWS` into an
   empty table (primary key, autovacuum off) attached right before, BULK_REPS rounds in rotated
   order, CHECKPOINT before each, statement_timeout BULK_TIMEOUT (a cancelled target is not run
   again); wall clock and the backend's CPU time, best round. Targets: plain, sim_none, sim_err,
   min_none, min_none_nofu, min_err, min_nofu, and min_err / min_nofu with enable_seqscan = off
   (min_err_idx, min_nofu_idx): the trigger plans its query at the first row, when the table is
   empty, and keeps that plan (a sequential scan) for the backend's life.

Also: EXPLAIN (ANALYZE, BUFFERS) of the MinHash trigger's query with a generic and a custom plan
(and EXPLAIN on an empty table), a new connection's first 8 lookups (PostgreSQL's plan cache uses
custom plans for the first 5), pgstatginindex() of the GIN indexes after the inserts, and what the
parts of a MinHash write cost alone (minhash(), minhash_bands(), the trigger's query) over the
single-row texts.
"""

import os
import random
import re
import time

import tables
from common import connect, copy_rows, md_table, progress, write_result
from evalset import Editor

ROWS = int(os.environ.get("BENCH_MC_ROWS", "1000000"))
QUERIES = int(os.environ.get("BENCH_MC_QUERIES", "200"))
PASSES = int(os.environ.get("BENCH_MC_PASSES", "3"))
INSERTS = int(os.environ.get("BENCH_MC_INSERTS", "1000"))
BLOCKS = int(os.environ.get("BENCH_MC_BLOCKS", "5"))
WARMUP = int(os.environ.get("BENCH_MC_WARMUP", "200"))
BULK_ROWS = int(os.environ.get("BENCH_MC_BULK_ROWS", "100000"))
BULK_REPS = int(os.environ.get("BENCH_MC_BULK_REPS", "2"))
BULK_TIMEOUT = int(os.environ.get("BENCH_MC_BULK_TIMEOUT", "150"))  # seconds per bulk insert
RESULT = os.environ.get("BENCH_MC_RESULT", "minhash_cost.md")
MACHINE = os.environ.get("BENCH_MC_MACHINE", "")
COMMAND = os.environ.get("BENCH_MC_COMMAND", "bash bench/minhash_cost.sh")
NEW_ID = 10_000_000  # ids of the new texts start above this

# name -> (method, on_duplicate, fastupdate); the attach order alternates the methods.
ATTACHED = {
    "sim_none": ("simhash", "none", None),
    "min_none": ("minhash", "none", True),
    "min_err": ("minhash", "error", True),
    "sim_err": ("simhash", "error", None),
    "min_nofu": ("minhash", "error", False),
    "min_none_nofu": ("minhash", "none", False),
}
LABEL = {
    "plain": "plain table (no attach)",
    "plain_sync": "plain table, synchronous_commit = on",
    "sim_none": "SimHash, 'none'",
    "sim_err": "SimHash, 'error'",
    "min_none": "MinHash, 'none'",
    "min_none_nofu": "MinHash, 'none', GIN fastupdate = off",
    "min_err": "MinHash, 'error'",
    "min_nofu": "MinHash, 'error', GIN fastupdate = off",
    "min_err_idx": "MinHash, 'error', enable_seqscan = off",
    "min_nofu_idx": "MinHash, 'error', fastupdate = off, enable_seqscan = off",
}


def tbl(name):
    return f"mc_{name}"


def attach_sql(table, method, mode):
    m = ", method => 'minhash'" if method == "minhash" else ""
    md = f", on_duplicate => '{mode}'" if mode != "none" else ""
    return f"SELECT simhash_attach('{table}', 'body'{m}{md})"


def gin_index(conn, table):
    r = conn.execute("SELECT indexrelid::regclass::text FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                     "JOIN pg_am a ON a.oid = c.relam WHERE i.indrelid = %s::regclass AND a.amname = 'gin'",
                     (table,)).fetchone()
    return r[0] if r else None


def ms(x):
    if x != x:
        return "–"
    return f"{x:.3f}" if x < 1 else (f"{x:.2f}" if x < 10 else f"{x:,.1f}")


def ratio(a, b):
    return f"{a / b:.2f}×" if b and a == a and b == b else "–"


def pct(values, q):
    return tables.percentile(values, q) if values else float("nan")


def timed(conn, sql, params=None):
    with tables.Timed(conn) as t:
        cur = conn.execute(sql, params)
    return t.wall, t.cpu, cur


# ---------------------------------------------------------------------------------------------
# 1. Tables, attach, sizes


def load_rows(conn):
    progress(f"generating {ROWS:,} rows (tables.py, seed 1)")
    conn.execute("DROP TABLE IF EXISTS mc_src")
    conn.execute("CREATE TABLE mc_src (id bigint PRIMARY KEY, lang text, body text)")
    copy_rows(conn, "mc_src", ["id", "lang", "body"],
              ((i + 1, lang, text) for i, (lang, text) in enumerate(tables.generate(ROWS, seed=1))))
    conn.execute("VACUUM ANALYZE mc_src")
    return tables.describe_rows(conn, "mc_src")


def fresh_copy(conn, table):
    conn.execute(f"DROP TABLE IF EXISTS {table}")
    conn.execute(f"CREATE TABLE {table} AS SELECT id, lang, body FROM mc_src ORDER BY id")
    conn.execute(f"ALTER TABLE {table} ADD PRIMARY KEY (id)")
    conn.execute(f"VACUUM ANALYZE {table}")
    conn.execute("CHECKPOINT")


def sizes(conn, table):
    heap, toast, idx, total, pk = conn.execute(
        "SELECT pg_table_size(c.oid), coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0), "
        "pg_indexes_size(c.oid), pg_total_relation_size(c.oid), "
        "(SELECT sum(pg_relation_size(i.indexrelid)) FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary) "
        "FROM pg_class c WHERE c.oid = %s::regclass", (table,)).fetchone()
    return {"heap": heap, "toast": toast, "indexes": idx, "pk": int(pk or 0), "total": total}


def attach(conn, table, method, mode):
    """Wall and CPU seconds of one attach, and its steps from the DEBUG messages."""
    marks = []
    handler = lambda diag: marks.append((time.perf_counter(), diag.message_primary))  # noqa: E731
    conn.add_notice_handler(handler)
    conn.execute("SET client_min_messages = debug1")
    try:
        with tables.Timed(conn) as t:
            t0 = time.perf_counter()
            conn.execute(attach_sql(table, method, mode))
            t1 = time.perf_counter()
    finally:
        conn.execute("SET client_min_messages = notice")
        conn.remove_notice_handler(handler)
    steps, last, name = [], t0, "checks, ADD COLUMN"
    for at, msg in marks:
        if msg.startswith("simhash_attach: "):
            steps.append((name, at - last))
            last, name = at, msg[len("simhash_attach: "):]
    steps.append((name, t1 - last))
    return t.wall, t.cpu, steps


def build_tables(conn):
    out = {}
    progress("plain: a copy of the rows with its primary key")
    fresh_copy(conn, tbl("plain"))
    out["plain"] = {"sizes": sizes(conn, tbl("plain"))}
    for name, (method, mode, fastupdate) in ATTACHED.items():
        t = tbl(name)
        progress(f"{name}: fresh copy")
        fresh_copy(conn, t)
        progress(f"{name}: {attach_sql(t, method, mode)}")
        conn.execute("RESET max_parallel_workers_per_gather")
        wall, cpu, steps = attach(conn, t, method, mode)
        if fastupdate is False:
            conn.execute(f"ALTER INDEX {gin_index(conn, t)} SET (fastupdate = off)")
        conn.execute(f"VACUUM ANALYZE {t}")
        out[name] = {"wall": wall, "cpu": cpu, "steps": steps, "sizes": sizes(conn, t)}
        progress(f"{name}: attach {wall:.1f} s ({cpu:.1f} s CPU of the backend); "
                 f"{out[name]['sizes']['total'] / ROWS:.0f} bytes a row in all")
    return out


# ---------------------------------------------------------------------------------------------
# 2. Lookups


def prewarm(conn, names):
    """Loads the indexes of these tables into shared buffers (pg_prewarm): lookups and inserts then
    measure a hot table, not whichever of the tables the others evicted last."""
    conn.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
    n = conn.execute("SELECT sum(pg_prewarm(i.indexrelid::regclass)) FROM pg_index i "
                     "WHERE i.indrelid = ANY(%s::regclass[])", ([tbl(x) for x in names],)).fetchone()[0]
    progress(f"prewarm: {int(n) * 8192 / 1e6:,.0f} MB of indexes of {', '.join(names)}")


def make_queries(conn):
    pool = tables.pools()
    rng = random.Random(7)
    n_edit = (QUERIES + 1) // 2
    ids = rng.sample(range(1, ROWS + 1), n_edit)
    src = {r[0]: (r[1], r[2]) for r in conn.execute("SELECT id, lang, body FROM mc_src WHERE id = ANY(%s)", (ids,))}
    editors = {lang: Editor(lang, pool[lang][:3000], seed=70 + i) for i, lang in enumerate(("zh", "en"))}
    edited = [("edited", src[i][0], i, editors[src[i][0]].word_edits(src[i][1], 0.02)) for i in ids]
    new = [("new", lang, None, text) for lang, text in tables.generate(QUERIES - n_edit, seed=2)]
    queries = [edited[i // 2] if i % 2 == 0 else new[i // 2] for i in range(QUERIES)]
    conn.execute("DROP TABLE IF EXISTS mc_q")
    conn.execute("CREATE TABLE mc_q (qid int PRIMARY KEY, kind text, lang text, src_id bigint, body text)")
    copy_rows(conn, "mc_q", ["qid", "kind", "lang", "src_id", "body"],
              ((i + 1, k, lang, s, body) for i, (k, lang, s, body) in enumerate(queries)))
    conn.execute("ANALYZE mc_q")
    conn.execute("DROP TABLE IF EXISTS mc_times")
    conn.execute("CREATE TABLE mc_times (tbl text, phase text, pass int, qid int, ms float8, found bigint, hit boolean)")


def lookup_function(conn, name):
    t = tbl(name)
    conn.execute(f"""
CREATE OR REPLACE FUNCTION {t}_lookups(phase text, pass int) RETURNS void LANGUAGE plpgsql AS $f$
DECLARE
  q record;
  t0 timestamptz;
  t1 timestamptz;
  c bigint;
  h boolean;
BEGIN
  FOR q IN SELECT qid, src_id, body FROM mc_q ORDER BY qid LOOP
    t0 := clock_timestamp();
    SELECT count(*), coalesce(bool_or((d.item).id = q.src_id), false) INTO c, h
    FROM simhash_near_duplicates(NULL::{t}, q.body) d;
    t1 := clock_timestamp();
    IF pass > 0 THEN
      INSERT INTO mc_times VALUES ('{name}', phase, pass, q.qid, extract(epoch FROM t1 - t0) * 1000, c, h);
    END IF;
  END LOOP;
END
$f$""")


def run_lookups(conn, names, phase, passes, after_warmup=None):
    conn.execute("SET max_parallel_workers_per_gather = 0")
    for name in names:
        lookup_function(conn, name)
    for p in range(passes + 1):  # pass 0: warm-up
        order = names if p % 2 == 0 else names[::-1]
        for name in order:
            conn.execute(f"SELECT {tbl(name)}_lookups(%s, %s)", (phase, p))
        if p == 0 and after_warmup:
            after_warmup()
    for name in names:
        s = lookup_summary(conn, name, phase)
        progress(f"lookups {phase} {name}: p50 {ms(s['all']['p50'])} ms, p95 {ms(s['all']['p95'])} ms")


def lookup_summary(conn, name, phase):
    out = {}
    for kind in ("all", "edited", "new"):
        rows = conn.execute(
            "SELECT x.ms, x.found, x.hit, x.qid FROM mc_times x JOIN mc_q q USING (qid) WHERE x.tbl = %s "
            "AND x.phase = %s AND (%s = 'all' OR q.kind = %s)", (name, phase, kind, kind)).fetchall()
        first = {}
        for r in rows:
            first.setdefault(r[3], r)
        best = {}
        for r in rows:
            best[r[3]] = min(r[0], best.get(r[3], r[0]))
        found = [r[1] for r in first.values()]
        out[kind] = {
            "n": len(rows), "p50": pct([r[0] for r in rows], 0.5), "p95": pct([r[0] for r in rows], 0.95),
            "p99": pct([r[0] for r in rows], 0.99), "best_p50": pct(list(best.values()), 0.5),
            "found_mean": sum(found) / max(1, len(found)), "found_max": max(found) if found else 0,
            "found_any": sum(1 for f in found if f > 0), "queries": len(found),
            "hits": sum(1 for r in first.values() if r[2]),
        }
    return out


def candidates(conn):
    """Rows sharing a band key with each query (MinHash), index entries read (SimHash): p50, p95, max."""
    out = {}
    m = [r[0] for r in conn.execute(
        f"SELECT (SELECT count(*) FROM ONLY {tbl('min_none')} t WHERE t.body_lsh && minhash_bands(minhash(q.body))) "
        "FROM mc_q q ORDER BY qid")]
    out["min_none"] = m
    try:
        s = [r[0] for r in conn.execute(
            f"SELECT (SELECT c.candidates FROM simhash_lookup_cost('{tbl('sim_none')}', simhash(q.body)) c) "
            "FROM mc_q q ORDER BY qid")]
        out["sim_none"] = s
    except Exception as e:  # noqa: BLE001 - a diagnostic only
        progress(f"simhash_lookup_cost failed: {e}")
    # What the lookups of new texts found: similarity (MinHash) and distance (SimHash) of those rows.
    # With the Jaccard similarity of the two texts' character 4-grams (lowercased, spaces removed), to
    # tell shared text from hash collisions.
    def grams(x):
        x = "".join(x.lower().split())
        return {x[i:i + 4] for i in range(max(1, len(x) - 3))}

    found = conn.execute(
        f"SELECT d.similarity, q.body, (d.item).body FROM mc_q q, simhash_near_duplicates(NULL::{tbl('min_none')}, "
        "q.body) d WHERE q.kind = 'new' ORDER BY 1").fetchall()
    out["new_min"] = [r[0] for r in found]
    out["new_min_j4"] = sorted(len(grams(a) & grams(b)) / len(grams(a) | grams(b)) for _, a, b in found)
    out["new_sim"] = [r[0] for r in conn.execute(
        f"SELECT d.distance FROM mc_q q, simhash_near_duplicates(NULL::{tbl('sim_none')}, q.body) d "
        "WHERE q.kind = 'new' ORDER BY 1")]
    return out


# ---------------------------------------------------------------------------------------------
# 3. New texts


def new_texts(conn):
    # MinHash finds about 12 % of 100,000 rows of this generator near an earlier one (rows share
    # paragraphs): generate enough that BULK_ROWS remain.
    n = int(BULK_ROWS * 1.35) + 3 * (INSERTS + WARMUP) + 1000
    progress(f"new texts: {n:,} rows (tables.py, seed 4), near-duplicates among them removed")
    conn.execute("DROP TABLE IF EXISTS mc_new, mc_skip_sim, mc_new_sig")
    conn.execute("CREATE TABLE mc_new (id bigint PRIMARY KEY, lang text, body text)")
    copy_rows(conn, "mc_new", ["id", "lang", "body"],
              ((NEW_ID + i + 1, lang, text) for i, (lang, text) in enumerate(tables.generate(n, seed=4))))
    conn.execute("ANALYZE mc_new")
    removed = {}
    # SimHash: the rows a 'skip' attachment keeps, inserted in id order, are near no earlier row.
    conn.execute("CREATE TABLE mc_skip_sim (id bigint PRIMARY KEY, lang text, body text) WITH (autovacuum_enabled = off)")
    conn.execute(attach_sql("mc_skip_sim", "simhash", "skip"))
    conn.execute("INSERT INTO mc_skip_sim SELECT id, lang, body FROM mc_new ORDER BY id")
    removed["simhash"] = conn.execute(
        "DELETE FROM mc_new n WHERE NOT EXISTS (SELECT FROM mc_skip_sim s WHERE s.id = n.id)").rowcount
    conn.execute("DROP TABLE mc_skip_sim")
    # MinHash: the same through a 'skip' attachment would be quadratic (see section 5), so by a
    # self-join on the band keys with the attachment's rule: a shared band key and similarity >=
    # the threshold; the later row of every such pair goes.
    threshold = conn.execute("SELECT threshold FROM simhash_attachments() WHERE table_name = %s::regclass",
                             (tbl("min_none"),)).fetchone()[0]
    conn.execute("CREATE TABLE mc_new_sig AS SELECT id, minhash(body) AS sig FROM mc_new")
    conn.execute("ALTER TABLE mc_new_sig ADD COLUMN lsh bigint[] GENERATED ALWAYS AS (minhash_bands(sig)) STORED")
    conn.execute("CREATE INDEX ON mc_new_sig USING gin (lsh)")
    conn.execute("ANALYZE mc_new_sig")
    removed["minhash"] = conn.execute(
        "DELETE FROM mc_new n WHERE n.id IN (SELECT b.id FROM mc_new_sig a JOIN mc_new_sig b "
        "ON a.lsh && b.lsh AND a.id < b.id WHERE minhash_similarity(a.sig, b.sig) >= %s)", (threshold,)).rowcount
    conn.execute("DROP TABLE mc_new_sig")
    conn.execute("VACUUM ANALYZE mc_new")
    left = conn.execute("SELECT count(*) FROM mc_new").fetchone()[0]
    if left < BULK_ROWS:
        raise SystemExit(f"only {left:,} new texts left for a bulk insert of {BULK_ROWS:,}")
    progress(f"new texts: removed {removed['simhash']} (SimHash) and {removed['minhash']} (MinHash) of {n:,}")
    return {"generated": n, "removed": removed["simhash"] + removed["minhash"], "by": removed,
            "rows": tables.describe_rows(conn, "mc_new")}


def insert_texts(conn):
    """WARMUP + INSERTS new texts that match no row of the big tables under either method."""
    need = WARMUP + INSERTS
    out, skipped = [], 0
    cur = conn.execute("SELECT id, lang, body FROM mc_new ORDER BY id DESC")  # the bulk uses the lowest ids
    for i, lang, body in cur.fetchall():
        if len(out) >= need:
            break
        hit = conn.execute(
            f"SELECT EXISTS (SELECT FROM simhash_near_duplicates(NULL::{tbl('sim_none')}, %s::text)) "
            f"OR EXISTS (SELECT FROM simhash_near_duplicates(NULL::{tbl('min_none')}, %s::text))", (body, body)
        ).fetchone()[0]
        if hit:
            skipped += 1
        else:
            out.append((i, lang, body))
    if len(out) < need:
        raise SystemExit(f"only {len(out)} new texts for {need} single-row inserts")
    return out, skipped


# ---------------------------------------------------------------------------------------------
# 4. Single-row inserts


def single_inserts(texts, after_warmup=None):
    import psycopg

    from common import DSN

    targets = ["plain", "plain_sync", "sim_none", "min_none", "sim_err", "min_err", "min_nofu", "min_none_nofu"]
    conn = psycopg.connect(DSN, autocommit=True, prepare_threshold=0)
    conn.execute("SET max_parallel_workers_per_gather = 0")
    pid = conn.info.backend_pid

    def one(target, row):
        t = tbl("plain" if target == "plain_sync" else target)
        i = row[0] + (5_000_000 if target == "plain_sync" else 0)
        t0 = time.perf_counter()
        cur = conn.execute(f"INSERT INTO {t} (id, lang, body) VALUES (%s, %s, %s)", (i, row[1], row[2]))
        dt = time.perf_counter() - t0
        if cur.rowcount != 1:
            raise SystemExit(f"{t}: inserted {cur.rowcount} rows")
        return dt

    def sync(target):
        conn.execute(f"SET synchronous_commit = {'on' if target == 'plain_sync' else 'off'}")

    for target in targets:
        sync(target)
        for row in texts[:WARMUP]:
            one(target, row)
    if after_warmup:
        after_warmup()
    rows = texts[WARMUP:]
    per = len(rows) // BLOCKS
    lat = {t: [] for t in targets}
    block_p50 = {t: [] for t in targets}
    cpu = {t: 0.0 for t in targets}
    for b in range(BLOCKS):
        chunk = rows[b * per:(b + 1) * per]
        order = targets[b % len(targets):] + targets[:b % len(targets)]
        for target in order:
            sync(target)
            c0 = tables.backend_cpu(pid)
            got = [one(target, row) * 1000 for row in chunk]
            cpu[target] += tables.backend_cpu(pid) - c0
            lat[target].extend(got)
            block_p50[target].append(pct(got, 0.5))
        progress(f"single-row inserts: block {b + 1}/{BLOCKS}: p50 ms " +
                 ", ".join(f"{t} {ms(block_p50[t][-1])}" for t in targets))
    conn.close()
    n = per * BLOCKS
    return {t: {"n": n, "p50": pct(lat[t], 0.5), "p95": pct(lat[t], 0.95), "p99": pct(lat[t], 0.99),
                "mean": sum(lat[t]) / n, "cpu": cpu[t] / n * 1000, "blocks": block_p50[t]} for t in targets}


# ---------------------------------------------------------------------------------------------
# Diagnostics of the MinHash write


def diagnostics(conn, texts):
    out = {}
    conn.execute("CREATE EXTENSION IF NOT EXISTS pgstattuple")
    for name in ("min_none", "min_none_nofu", "min_err", "min_nofu"):
        idx = gin_index(conn, tbl(name))
        v, pages, tuples = conn.execute("SELECT version, pending_pages, pending_tuples FROM pgstatginindex(%s)",
                                        (idx,)).fetchone()
        fu = conn.execute("SELECT coalesce(array_to_string(reloptions, ', '), '') FROM pg_class WHERE oid = %s::regclass",
                          (idx,)).fetchone()[0]
        out[("gin", name)] = (idx, pages, tuples, conn.execute("SELECT pg_relation_size(%s)", (idx,)).fetchone()[0], fu)
    # The trigger's query (src/lsh.rs, plan_of) with a generic and a custom plan, for one new text.
    body = texts[-1][2]
    # EXECUTE takes no protocol parameters: the band keys go in as a literal.
    keys = conn.execute("SELECT minhash_bands(minhash(%s::text))::text", (body,)).fetchone()[0]
    arg = f"'{keys}'::bigint[]"
    conn.execute("DROP TABLE IF EXISTS mc_parts")
    conn.execute("CREATE TABLE mc_parts (i int, body text)")
    copy_rows(conn, "mc_parts", ["i", "body"], ((i, r[2]) for i, r in enumerate(texts)))
    for name in ("min_err", "min_nofu"):
        t = tbl(name)
        conn.execute("DEALLOCATE ALL")
        conn.execute(f"PREPARE mc_trigger_query(bigint[]) AS SELECT t.tableoid, t.ctid, t.body_minhash FROM ONLY {t} t "
                     "WHERE t.body_lsh OPERATOR(pg_catalog.&&) $1")
        for mode in ("force_generic_plan", "force_custom_plan"):
            conn.execute(f"SET plan_cache_mode = {mode}")
            conn.execute(f"EXECUTE mc_trigger_query({arg})")
            plan = [r[0] for r in conn.execute(
                f"EXPLAIN (ANALYZE, BUFFERS) EXECUTE mc_trigger_query({arg})")]
            out[("explain", name, mode)] = plan
        conn.execute("RESET plan_cache_mode")
        conn.execute("DEALLOCATE ALL")
    # The same query on a table attached while empty, as the trigger plans it at the first row of a
    # bulk insert into it (the plan is kept for the backend's life, src/lsh.rs PLANS).
    conn.execute("DROP TABLE IF EXISTS mc_empty")
    conn.execute("CREATE TABLE mc_empty (id bigint PRIMARY KEY, lang text, body text)")
    conn.execute(attach_sql("mc_empty", "minhash", "error"))
    conn.execute("PREPARE mc_trigger_query(bigint[]) AS SELECT t.tableoid, t.ctid, t.body_minhash FROM ONLY mc_empty t "
                 "WHERE t.body_lsh OPERATOR(pg_catalog.&&) $1")
    for mode in ("force_generic_plan", "force_custom_plan"):
        conn.execute(f"SET plan_cache_mode = {mode}")
        out[("explain", "empty", mode)] = [r[0] for r in conn.execute(f"EXPLAIN EXECUTE mc_trigger_query({arg})")]
    conn.execute("RESET plan_cache_mode")
    conn.execute("DEALLOCATE ALL")
    conn.execute("DROP TABLE mc_empty")
    # A new backend's first lookups: the kept plan of the MinHash query is a custom plan for its
    # first 5 executions (PostgreSQL's plan cache), a generic one afterwards.
    import psycopg

    from common import DSN

    for name in ("min_err", "min_nofu"):
        with psycopg.connect(DSN, autocommit=True) as fresh:
            fresh.execute("SET max_parallel_workers_per_gather = 0")
            got = []
            for r in texts[:8]:
                t0 = time.perf_counter()
                fresh.execute(f"SELECT count(*) FROM simhash_near_duplicates(NULL::{tbl(name)}, %s::text)", (r[2],))
                got.append((time.perf_counter() - t0) * 1000)
            out[("fresh", name)] = got
    # The parts of a write, each alone over the single-row texts: microseconds a text.
    conn.execute("DROP TABLE IF EXISTS mc_sig")
    conn.execute("CREATE TABLE mc_sig AS SELECT i, minhash(body) AS sig, simhash(body) AS fp FROM mc_parts")
    n = len(texts)
    parts = [
        ("simhash(body)", "SELECT count(simhash(body)) FROM mc_parts"),
        ("minhash(body)", "SELECT count(minhash(body)) FROM mc_parts"),
        ("minhash_bands(signature)", "SELECT count(minhash_bands(sig)) FROM mc_sig"),
    ]
    for name in ("min_err", "min_nofu"):
        parts.append((f"trigger's query on {name} (GIN bitmap scan + heap fetch)",
                      f"SELECT sum((SELECT count(t.body_minhash) FROM ONLY {tbl(name)} t "
                      f"WHERE t.body_lsh OPERATOR(pg_catalog.&&) minhash_bands(s.sig))) FROM mc_sig s"))
    for what, sql in parts:
        conn.execute(sql)  # warm
        best = float("inf")
        for _ in range(3):
            w, c, _ = timed(conn, sql)
            best = min(best, w)
        out[("part", what)] = best / n * 1e6
    return out


# ---------------------------------------------------------------------------------------------
# 5. Bulk


BULK_TARGETS = ["plain", "sim_none", "sim_err", "min_none", "min_none_nofu", "min_err", "min_nofu", "min_err_idx",
                "min_nofu_idx"]


def bulk(conn):
    n = conn.execute("SELECT count(*) FROM (SELECT 1 FROM mc_new ORDER BY id LIMIT %s) x", (BULK_ROWS,)).fetchone()[0]
    conn.execute("SET max_parallel_workers_per_gather = 0")
    conn.execute("SELECT minhash('warm-up'), simhash('warm-up')")
    targets = BULK_TARGETS
    res = {t: [] for t in targets}
    for rep in range(BULK_REPS):
        order = targets[rep % len(targets):] + targets[:rep % len(targets)]
        if rep % 2:
            order = order[::-1]
        for target in order:
            if any(x[0] == float("inf") for x in res[target]):
                continue  # cancelled once: not again
            t = f"mc_bulk_{target}"
            conn.execute(f"DROP TABLE IF EXISTS {t}")
            conn.execute(f"CREATE TABLE {t} (id bigint PRIMARY KEY, lang text, body text) WITH (autovacuum_enabled = off)")
            if target != "plain":
                method, mode, fastupdate = ATTACHED[target.replace("_idx", "")]
                conn.execute(attach_sql(t, method, mode))
                if fastupdate is False:
                    conn.execute(f"ALTER INDEX {gin_index(conn, t)} SET (fastupdate = off)")
            conn.execute("CHECKPOINT")
            conn.execute(f"SET statement_timeout = '{BULK_TIMEOUT}s'")
            if target.endswith("_idx"):
                # Only the planning of the trigger's query cares: it then picks the GIN index.
                conn.execute("SET enable_seqscan = off")
            try:
                w, c, cur = timed(conn, f"INSERT INTO {t} SELECT id, lang, body FROM mc_new ORDER BY id LIMIT {n}")
                if cur.rowcount != n:
                    raise SystemExit(f"bulk {t}: {cur.rowcount} of {n} rows")
                res[target].append((w, c))
                progress(f"bulk round {rep + 1}/{BULK_REPS} {target:12}: {w:7.2f} s wall, {c:7.2f} s CPU, "
                         f"{n / w:9,.0f} rows/s")
            except Exception as e:  # noqa: BLE001 - a timeout is a result
                import psycopg

                if not isinstance(e, psycopg.errors.QueryCanceled):
                    raise
                res[target].append((float("inf"), float("inf")))
                progress(f"bulk round {rep + 1}/{BULK_REPS} {target:12}: cancelled after {BULK_TIMEOUT} s")
            finally:
                conn.execute("RESET statement_timeout")
                conn.execute("RESET enable_seqscan")
            conn.execute(f"DROP TABLE {t}")
    return {"rows": n, "res": res}


# ---------------------------------------------------------------------------------------------
# Report


def shorten(plan):
    """Plan lines with the 32 band keys of a literal array written as '{…32 keys…}'."""
    return [re.sub(r"'\{-?\d+(,-?\d+)*\}'", lambda m: f"'{{…{m.group(0).count(',') + 1} keys…}}'", line)
            for line in plan]


def mb(x):
    return f"{x / 1e6:,.0f}"


def report(rows_note, built, look, look_after, cand, new, skipped_texts, single, diag, blk, loads, elapsed):
    L = [
        "# What a MinHash attachment costs beside a SimHash one",
        "",
        f"Output of `{COMMAND}` (bench/minhash_cost.py), {time.strftime('%Y-%m-%d')}, in {elapsed / 60:.0f} min. "
        + MACHINE,
        f"Rows: {rows_note} (tables.py, seed 1: the rows of bench/search.sh and bench/studies/attach/attach.sh). "
        f"Load average during the run {min(loads):.1f}–{max(loads):.1f} (2 cores; other people's builds and tests "
        "share the machine, so single figures move by ±15 %: the methods are measured alternately and compared by "
        "ratios).",
        "",
        "Attachments with the defaults: SimHash `simhash_attach(t, 'body')` (bigint fingerprint, four int band "
        "columns, four B-tree indexes `(band) INCLUDE (fingerprint)`, max_distance 7); MinHash "
        "`simhash_attach(t, 'body', method => 'minhash')` (516-byte `bytea` signature, `bigint[]` of 32 LSH band "
        "keys, one GIN index on it, threshold 0.5).",
        "",
        f"## 1. Bytes per row on disk ({ROWS:,} rows)",
        "",
        "After `VACUUM ANALYZE`. heap = `pg_table_size` (main fork, TOAST, free space and visibility maps), "
        "indexes = `pg_indexes_size`, total = `pg_total_relation_size`, each divided by the rows.",
        "",
    ]
    head = ["table", "total B/row", "heap B/row", "of it TOAST", "indexes B/row", "primary key", "attach's indexes",
            "added by attach", "total MB"]
    rows = []
    base = built["plain"]["sizes"]["total"]
    for name in ("plain", "sim_none", "min_none"):
        s = built[name]["sizes"]
        rows.append([{"plain": "plain", "sim_none": "SimHash (defaults)", "min_none": "MinHash (defaults)"}[name],
                     f"{s['total'] / ROWS:,.0f}", f"{s['heap'] / ROWS:,.0f}", f"{s['toast'] / ROWS:,.0f}",
                     f"{s['indexes'] / ROWS:,.0f}", f"{s['pk'] / ROWS:,.0f}", f"{(s['indexes'] - s['pk']) / ROWS:,.0f}",
                     "" if name == "plain" else f"{(s['total'] - base) / ROWS:,.0f}", mb(s["total"])])
    L.append(md_table(head, rows))
    L.append("")
    sim_add = built["sim_none"]["sizes"]["total"] - base
    min_add = built["min_none"]["sizes"]["total"] - base
    same = all(built[a]["sizes"]["total"] == built[b]["sizes"]["total"] for a, b in
               (("sim_none", "sim_err"), ("min_none", "min_err"), ("min_none", "min_nofu")))
    L.append(f"MinHash adds {min_add / max(sim_add, 1):.1f}× the bytes SimHash adds ({min_add / ROWS:,.0f} against "
             f"{sim_add / ROWS:,.0f} a row); the whole table is {built['min_none']['sizes']['total'] / built['sim_none']['sizes']['total']:.2f}× "
             f"the SimHash one. The tables attached with `on_duplicate => 'error'` have "
             + ("the same sizes." if same else "sizes within a few pages: " + ", ".join(
                 f"{n} {built[n]['sizes']['total'] / ROWS:,.0f} B/row" for n in ("sim_err", "min_err", "min_nofu")) + "."))
    L.append("")
    L += [f"## 2. Attach time ({ROWS:,} rows)", "",
          "Each on a fresh copy of the rows (vacuumed, `CHECKPOINT` before), in the order listed "
          "(the methods alternate); wall clock and the backend's own CPU (its parallel workers not counted); "
          "server settings in the header of bench/minhash_cost.sh (`maintenance_work_mem = 1GB`, "
          "`max_parallel_workers_per_gather = 2`). Steps from simhash_attach()'s DEBUG messages.", ""]
    rows = []
    for name in ATTACHED:
        b = built[name]
        rows.append([LABEL[name], f"{b['wall']:.1f}", f"{b['cpu']:.1f}",
                     "; ".join(f"{s} {x:.1f}" for s, x in b["steps"])])
    L.append(md_table(["attach", "s", "CPU-s", "steps, s"], rows, align=["l", "r", "r", "l"]))
    sim_t = [built[n]["wall"] for n in ATTACHED if n.startswith("sim")]
    min_t = [built[n]["wall"] for n in ATTACHED if n.startswith("min")]
    L += ["", f"MinHash ÷ SimHash, best attach of each: {min(min_t) / min(sim_t):.2f}× ({min(min_t):.1f} s against "
          f"{min(sim_t):.1f} s).", ""]

    L += [f"## 3. Lookup latency ({ROWS:,} rows)", "",
          f"`SELECT count(*) FROM simhash_near_duplicates(NULL::t, text)` for {QUERIES} texts, half existing rows "
          "with about 2 % of their words/characters edited, half new texts; latency inside the server "
          f"(clock_timestamp() around each lookup in PL/pgSQL; the text's fingerprint or signature is computed in "
          f"it), one backend, no parallel workers; an untimed warm-up pass, then {PASSES} timed passes, SimHash and "
          "MinHash alternating. ms. `found` = rows returned per lookup (first timed pass); `source found` = edited "
          "queries whose source row was among them. Candidates: rows sharing a band key with the query "
          "(MinHash: `count(*) WHERE body_lsh && minhash_bands(minhash(text))`, each fetched from the heap and "
          "compared), index entries read (SimHash: `simhash_lookup_cost().candidates`).", ""]
    rows = []
    for name, lab in (("sim_none", "SimHash"), ("min_none", "MinHash")):
        s = look[name]
        c = cand.get(name, [])
        rows.append([lab, ms(s["all"]["p50"]), ms(s["all"]["p95"]), ms(s["all"]["p99"]), ms(s["all"]["best_p50"]),
                     ms(s["edited"]["p50"]), ms(s["new"]["p50"]),
                     f"{s['edited']['found_mean']:.2f}", f"{s['new']['found_mean']:.2f} ({s['new']['found_any']} of "
                     f"{s['new']['queries']})", f"{s['edited']['hits']} of {s['edited']['queries']}",
                     f"{pct(c, 0.5)} / {pct(c, 0.95)} / {max(c) if c else '–'}"])
    L.append(md_table(["method", "p50", "p95", "p99", "p50 of best pass", "edited p50", "new p50",
                       "found, edited", "found, new (queries with any)", "source found",
                       "candidates p50 / p95 / max"], rows))
    nm, ns = cand.get("new_min", []), cand.get("new_sim", [])
    j4 = cand.get("new_min_j4", [])
    L += ["", f"Rows the {QUERIES - (QUERIES + 1) // 2} new texts found: MinHash {len(nm)} (estimated similarity "
          f"p50 {pct(nm, 0.5):.2f}, max {max(nm) if nm else float('nan'):.2f}; Jaccard similarity of the two texts' "
          f"character 4-grams min {min(j4) if j4 else float('nan'):.2f}, p50 {pct(j4, 0.5):.2f}), SimHash {len(ns)} "
          f"(distance p50 {pct(ns, 0.5)}). The generator draws each row's paragraphs with replacement from the "
          "corpus, so a new row can share most of its text with a stored one."]
    mp50 = look["min_none"]["all"]["p50"]
    L += ["", f"MinHash ÷ SimHash: p50 {ratio(mp50, look['sim_none']['all']['p50'])}, p95 "
          f"{ratio(look['min_none']['all']['p95'], look['sim_none']['all']['p95'])}. Target MinHash p50 < 1 ms: "
          + ("met" if mp50 < 1 else "**not met**") + f" ({ms(mp50)} ms).", ""]
    if look_after:
        L += ["After the single-row inserts (section 4), one more pass on the two MinHash 'error' tables: "
              f"the GIN index of `min_err` (fastupdate on, the default) has the {INSERTS + WARMUP:,} inserted rows in "
              "its pending list, `min_nofu` (fastupdate off) none:", ""]
        rows = []
        for name in ("min_err", "min_nofu"):
            s = look_after[name]
            rows.append([LABEL[name], ms(s["all"]["p50"]), ms(s["all"]["p95"]), f"{s['edited']['found_mean']:.2f}"])
        L.append(md_table(["table", "p50", "p95", "found, edited"], rows))
        L.append("")

    L += [f"## 4. Single-row INSERT latency ({ROWS:,} rows in each table)", "",
          f"{single['plain']['n']:,} autocommit `INSERT INTO t (id, lang, body) VALUES ($1, $2, $3)` per table "
          f"(prepared; new texts near none of the rows under either method: {new['rows']['chars']:.0f} characters on "
          f"average), one client connection, latency by the client's clock around each execute (so a socket round "
          f"trip and psycopg are in every figure); {BLOCKS} blocks, each table gets the same texts in a block, the "
          f"order of the tables rotating; {WARMUP} untimed inserts per table first. `synchronous_commit = off` except "
          "`plain_sync`, so the commit's WAL flush (the same for every table) is left out. The indexes of all these "
          "tables (about 5 GB at 1M rows) are loaded into shared buffers (`pg_prewarm`, `shared_buffers = 6GB`) after "
          "the warm-up inserts (whose first MinHash checks are sequential scans, see below, that evict pages), so that "
          "each table is measured hot rather than after the other tables evicted its pages. CPU = the backend's "
          "CPU time per insert over all blocks (10 ms ticks). ms.", ""]
    rows = []
    for t in ("plain", "plain_sync", "sim_none", "sim_err", "min_none", "min_none_nofu", "min_err", "min_nofu"):
        s = single[t]
        rows.append([LABEL[t], ms(s["p50"]), ms(s["p95"]), ms(s["p99"]), ms(s["mean"]), ms(s["cpu"]),
                     ratio(s["p50"], single["plain"]["p50"]), " ".join(ms(x) for x in s["blocks"])])
    L.append(md_table(["table", "p50", "p95", "p99", "mean", "CPU", "p50 ÷ plain", "p50 per block"], rows))
    L.append("")
    r50 = single["min_err"]["p50"] / single["sim_err"]["p50"]
    r95 = single["min_err"]["p95"] / single["sim_err"]["p95"]
    rc = single["min_err"]["cpu"] / single["sim_err"]["cpu"]
    n50 = single["min_nofu"]["p50"] / single["sim_err"]["p50"]
    L += [f"**MinHash ÷ SimHash, 'error'**: p50 {r50:.2f}×, p95 {r95:.2f}×, CPU {rc:.2f}× "
          f"(with GIN fastupdate off: p50 {n50:.2f}×, p95 "
          f"{single['min_nofu']['p95'] / single['sim_err']['p95']:.2f}×, CPU "
          f"{single['min_nofu']['cpu'] / single['sim_err']['cpu']:.2f}×). Target ≤ 1.5×: "
          + ("met" if r50 <= 1.5 else "**not met**") + " (p50, default index). 'none' (no check, no locks): MinHash ÷ "
          f"SimHash p50 {single['min_none']['p50'] / single['sim_none']['p50']:.2f}× (fastupdate off: "
          f"{single['min_none_nofu']['p50'] / single['sim_none']['p50']:.2f}×).", ""]

    L += ["### What a MinHash write spends", ""]
    L.append(f"Each part alone over the {len(skipped_texts[0]):,} single-row texts, µs a text (best of 3 runs):")
    L.append("")
    L.append(md_table(["part", "µs"], [[k[1], f"{v:,.1f}"] for k, v in diag.items() if k[0] == "part"],
                      align=["l", "r"]))
    L.append("")
    L.append("A new connection's first 8 lookups (`simhash_near_duplicates`, texts already inserted), ms each by "
             "the client's clock: the query the lookup and the trigger keep per backend runs with a custom plan for "
             "its first 5 executions (PostgreSQL's plan cache), then with the generic plan (the plans below):")
    L.append("")
    L.append(md_table(["table", "lookups 1–8, ms"],
                      [[LABEL[n], " ".join(ms(x) for x in diag[("fresh", n)])] for n in ("min_err", "min_nofu")],
                      align=["l", "l"]))
    L.append("")
    L.append("GIN indexes after the inserts (`pgstatginindex`):")
    L.append("")
    L.append(md_table(["table", "index", "reloptions", "size MB", "pending pages", "pending tuples"],
                      [[n, v[0], v[4] or "(default: fastupdate on)", mb(v[3]), v[1], v[2]]
                       for k, v in diag.items() if k[0] == "gin" for n in [k[1]]], align=["l", "l", "l", "r", "r", "r"]))
    L.append("")
    for name in ("min_err", "min_nofu", "empty"):
        for mode in ("force_generic_plan", "force_custom_plan"):
            if name == "empty":
                L.append(f"The same query on an empty table just attached (`EXPLAIN`, "
                         f"`plan_cache_mode = {mode.replace('force_', '').replace('_plan', '')}`): the plan the "
                         "trigger makes at the first row of a bulk insert into it, and keeps:")
                L.append("")
                L.append("```")
                L += shorten(diag[("explain", name, mode)])
                L.append("```")
                L.append("")
                continue
            L.append(f"The trigger's query on `{tbl(name)}`, `plan_cache_mode = {mode.replace('force_', '').replace('_plan', '')}`"
                     " (`EXPLAIN (ANALYZE, BUFFERS)` of a new text's band keys; the array literal shortened here):")
            L.append("")
            L.append("```")
            L += shorten(diag[("explain", name, mode)])
            L.append("```")
            L.append("")

    L += [f"## 5. Bulk INSERT … SELECT into an empty attached table", "",
          f"{blk['rows']:,} new texts ({new['rows']['chars']:.0f} characters on average; of "
          f"{new['generated']:,} generated (seed 4), {new['by']['simhash']:,} were removed as near-duplicates of an "
          f"earlier one under SimHash and {new['by']['minhash']:,} under MinHash) in one `INSERT INTO t SELECT … "
          f"ORDER BY id` into an empty table (primary key, autovacuum off) attached right before; {BULK_REPS} rounds, "
          f"order rotated, `CHECKPOINT` before each, one backend without parallel workers, `statement_timeout = "
          f"{BULK_TIMEOUT}s` (a cancelled variant is not run again); best round (all rounds in brackets). SimHash "
          "'error' checks the rows once at the end of the statement; MinHash 'error' checks each row in its BEFORE "
          "trigger. `enable_seqscan = off` (set for the INSERT; it also makes the source rows come by their primary "
          "key) makes the trigger's query use the GIN index, which it does not on a table that was empty when the "
          "query was planned (section 4, last plans).", ""]
    rows = []
    inf = float("inf")
    best = {t: min(v, key=lambda x: x[0]) for t, v in blk["res"].items()}

    def bratio(a, b):
        return f"> {BULK_TIMEOUT / b:,.0f}×" if a == inf else ratio(a, b)

    for t in BULK_TARGETS:
        w, c = best[t]
        rows.append([LABEL[t], f"{w:.2f}" if w != inf else f"> {BULK_TIMEOUT}",
                     " / ".join(f"{x[0]:.1f}" if x[0] != inf else "cancelled" for x in blk["res"][t]),
                     f"{c:.2f}" if c != inf else "–", f"{blk['rows'] / w:,.0f}" if w != inf else "–",
                     bratio(w, best["plain"][0]), bratio(w, best["sim_err"][0]) if t.startswith("min") else ""])
    L.append(md_table(["table", "s (best)", "s (rounds)", "CPU-s", "rows/s", "÷ plain", "÷ SimHash 'error'"], rows))
    L.append("")
    L.append(f"MinHash ÷ SimHash, 'error', best rounds: {bratio(best['min_err'][0], best['sim_err'][0])} as attached "
             f"(fastupdate off: {bratio(best['min_nofu'][0], best['sim_err'][0])}); with the GIN index used: "
             f"{bratio(best['min_err_idx'][0], best['sim_err'][0])} (fastupdate off: "
             f"{bratio(best['min_nofu_idx'][0], best['sim_err'][0])}); 'none': "
             f"{bratio(best['min_none'][0], best['sim_none'][0])}.")
    L.append("")
    return "\n".join(L)


def main():
    t_start = time.time()
    conn = connect()
    conn.execute("CREATE EXTENSION IF NOT EXISTS simhash_ext")
    loads = [tables.load_avg()]
    rows = load_rows(conn)
    rows_note = tables.rows_note(rows)
    progress(rows_note)
    built = build_tables(conn)
    loads.append(tables.load_avg())

    progress(f"lookups: {QUERIES} queries, {PASSES} timed passes")
    make_queries(conn)
    # The warm-up pass runs the MinHash query's first custom plans, sequential scans of a heap
    # smaller than a quarter of shared_buffers, which go through shared buffers and evict: the
    # indexes are loaded after it.
    run_lookups(conn, ["sim_none", "min_none"], "fresh", PASSES,
                after_warmup=lambda: prewarm(conn, ["sim_none", "min_none"]))
    look = {n: lookup_summary(conn, n, "fresh") for n in ("sim_none", "min_none")}
    cand = candidates(conn)
    loads.append(tables.load_avg())

    new = new_texts(conn)
    texts, skipped = insert_texts(conn)
    progress(f"single-row inserts: {len(texts)} texts ({skipped} skipped: near a row of the big tables)")
    single = single_inserts(texts, after_warmup=lambda: prewarm(conn, ["plain"] + list(ATTACHED)))
    loads.append(tables.load_avg())

    progress("after the inserts: lookups on min_err (pending list) and min_nofu")
    run_lookups(conn, ["min_err", "min_nofu"], "after", 1)
    look_after = {n: lookup_summary(conn, n, "after") for n in ("min_err", "min_nofu")}
    progress("diagnostics: pgstatginindex, EXPLAIN of the trigger's query, parts of a write")
    diag = diagnostics(conn, texts)

    progress(f"bulk: {BULK_ROWS:,} rows, {BULK_REPS} rounds")
    blk = bulk(conn)
    loads.append(tables.load_avg())

    text = report(rows_note, built, look, look_after, cand, new, (texts, skipped), single, diag, blk, loads,
                  time.time() - t_start)
    path = write_result(RESULT, text)
    print(text)
    progress(f"written: {path}")


if __name__ == "__main__":
    main()
