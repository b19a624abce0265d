"""Attach under a write load (issue 36, item 5): the offline simhash_attach() (ACCESS EXCLUSIVE for
the whole attach) beside the online simhash_attach_concurrently() (brief locks, batched backfill,
CREATE INDEX CONCURRENTLY), SimHash and MinHash, with a baseline of the same load and no attach.
Run by bench/online_attach.sh, which starts the server; prints a Markdown table and writes it to
BENCH_OA_RESULT (/tmp/online_attach_result.md).

Per table size (BENCH_OA_ROWS, and BENCH_OA_BIG_ROWS unless BENCH_OA_SKIP_BIG=1):
  the table `corpus`: id bigint primary key, lang, body text (rows of real text, tables.py seed 1, as
  bench/studies/attach/attach.py), hits int (the other column the writers update); vacuumed, analyzed, CHECKPOINT.
  Each run attaches a fresh copy `t` of it (the last run of a size takes `corpus` itself, renamed).
Per run, clients (one process each, autocommit, every statement timed with its start on the
system-wide monotonic clock, errors counted, never stopping on them):
  BENCH_OA_WRITERS (4) writers, each a random mix, in equal shares, of a single-row INSERT of a new
  row, an UPDATE of the text of a random existing row, an UPDATE of its other column (hits);
  BENCH_OA_READERS (2) readers: the first a lookup by primary key, the second the same until the
  attach has returned, then simhash_near_duplicates(NULL::t, <text of a row>);
  each paced at BENCH_OA_RATE (50) statements a second (0: as fast as it can), a late statement
  starting at once without catching up.
  BENCH_OA_PRE (10) seconds of load, then the attach (timed in the benchmark's own session), then
  BENCH_OA_POST (20) seconds of load; the baseline runs the load for BENCH_OA_BASELINE (60) seconds
  on the unattached table. The attach window is [call, return]: a statement counts in it when it
  overlaps it (started before the attach returned and ended after the attach began).
Afterwards (clients stopped): table+index bytes per row (pg_total_relation_size / count(*)) and the
heap's alone (pg_relation_size, main fork), as they are right after the attach (no VACUUM); and a
check of the stored values: NULL fingerprints, fingerprints differing from simhash_internal.
fingerprint_sql()'s expression of the attachment, band columns differing from simhash_band() /
minhash_bands(), over every row (BENCH_OA_VERIFY=all) or over the rows the writers touched plus
every 100th row (=touched, the default for the big table).
"""

import multiprocessing as mp
import os
import random
import statistics
import time

from common import connect, progress
from tables import describe_rows, generate, load_avg, percentile

ROWS = int(os.environ.get("BENCH_OA_ROWS", "1000000"))
BIG_ROWS = int(os.environ.get("BENCH_OA_BIG_ROWS", "10000000"))
SKIP_BIG = os.environ.get("BENCH_OA_SKIP_BIG", "0") == "1"
METHODS = os.environ.get("BENCH_OA_METHODS", "simhash minhash").split()
BIG_METHODS = os.environ.get("BENCH_OA_BIG_METHODS", "simhash").split()
MODES = os.environ.get("BENCH_OA_MODES", "offline online").split()
WRITERS = int(os.environ.get("BENCH_OA_WRITERS", "4"))
READERS = int(os.environ.get("BENCH_OA_READERS", "2"))
RATE = float(os.environ.get("BENCH_OA_RATE", "50"))
PRE = float(os.environ.get("BENCH_OA_PRE", "10"))
POST = float(os.environ.get("BENCH_OA_POST", "20"))
BASELINE = float(os.environ.get("BENCH_OA_BASELINE", "60"))
VERIFY = os.environ.get("BENCH_OA_VERIFY", "")  # all | touched | none; default: all below 5M rows
RESULT = os.environ.get("BENCH_OA_RESULT", "/tmp/online_attach_result.md")
MACHINE = os.environ.get("BENCH_OA_MACHINE", "")
# A statement the attaching session runs first, e.g. "SET maintenance_work_mem = '64MB'".
SESSION = os.environ.get("BENCH_OA_SESSION", "")
QUERY_TEXTS = 5000  # texts of the first rows, for the near-duplicate lookups


def texts(seed, n):
    return [body for _, body in generate(n, seed)]


# ---------------------------------------------------------------------------------------- clients

def client(role, index, rows, stop, attached, out):
    """One client: runs until `stop`, puts (role, index, records, touched ids) on `out`.
    A record is (start, seconds, kind, sqlstate or None)."""
    import psycopg

    rng = random.Random(1000 * (role == "reader") + index)
    pool = texts(100 + index, 3000) if role == "writer" else texts(1, QUERY_TEXTS)
    next_id = 10**12 + index * 10**9  # ids of inserted rows, per writer
    records, touched = [], set()
    interval = 1.0 / RATE if RATE > 0 else 0.0
    conn = None
    due = time.monotonic()
    while not stop.is_set():
        if interval:
            now = time.monotonic()
            if due > now:
                time.sleep(due - now)
            due = max(due + interval, time.monotonic())
        if role == "writer":
            kind = rng.choice(("insert", "update_text", "update_other"))
            if kind == "insert":
                next_id += 1
                key = next_id
                sql, args = "INSERT INTO t (id, lang, body, hits) VALUES (%s, 'x', %s, 0)", (key, rng.choice(pool))
            elif kind == "update_text":
                key = rng.randint(1, rows)
                sql, args = "UPDATE t SET body = %s WHERE id = %s", (rng.choice(pool), key)
            else:
                key = rng.randint(1, rows)
                sql, args = "UPDATE t SET hits = hits + 1 WHERE id = %s", (key,)
            touched.add(key)
        elif index == 1 and attached.is_set():
            kind = "near_duplicates"
            sql, args = ("SELECT (n.item).id, n.distance, n.similarity FROM simhash_near_duplicates(NULL::t, %s) n",
                         (rng.choice(pool),))
        else:
            kind = "pk_lookup"
            sql, args = "SELECT id, hits, length(body) FROM t WHERE id = %s", (rng.randint(1, rows),)
        start = time.monotonic()
        state = None
        try:
            if conn is None or conn.closed:
                conn = psycopg.connect(f"host=/tmp port={os.environ['BENCH_PORT']} user=postgres dbname=postgres",
                                       autocommit=True)
                start = time.monotonic()
            cur = conn.execute(sql, args)
            if cur.description is not None:
                cur.fetchall()
        except psycopg.Error as e:
            state = e.sqlstate or type(e).__name__
            if conn is not None and conn.broken:
                conn = None
        records.append((start, time.monotonic() - start, kind, state))
    if conn is not None:
        conn.close()
    out.put((role, index, records, touched))


class Load:
    """The writers and readers of one run."""

    def __init__(self, rows):
        ctx = mp.get_context("fork")
        self.stop, self.attached, self.out = ctx.Event(), ctx.Event(), ctx.Queue()
        self.procs = [ctx.Process(target=client, args=("writer", i, rows, self.stop, self.attached, self.out))
                      for i in range(WRITERS)]
        self.procs += [ctx.Process(target=client, args=("reader", i, rows, self.stop, self.attached, self.out))
                       for i in range(READERS)]
        for p in self.procs:
            p.start()

    def finish(self):
        self.stop.set()
        got = [self.out.get() for _ in self.procs]  # before join: the queue's pipe must be drained
        for p in self.procs:
            p.join()
        writes = sorted(r for role, _, recs, _ in got if role == "writer" for r in recs)
        reads = sorted(r for role, _, recs, _ in got if role == "reader" for r in recs)
        touched = set().union(*(t for _, _, _, t in got))
        return writes, reads, touched


def stats(records, t0=None, t1=None, kinds=None):
    """Statements overlapping [t0, t1] (all when None): count, errors (by SQLSTATE), ms percentiles."""
    sel = [r for r in records if (kinds is None or r[2] in kinds)
           and (t0 is None or (r[0] <= t1 and r[0] + r[1] >= t0))]
    ok = [r[1] * 1000 for r in sel if r[3] is None]
    errors = {}
    for r in sel:
        if r[3] is not None:
            errors[r[3]] = errors.get(r[3], 0) + 1
    # A failed statement's wait counts too: it is what the client waited.
    all_ms = [r[1] * 1000 for r in sel]
    return {"n": len(sel), "errors": errors, "p50": percentile(ok, 0.5), "p999": percentile(all_ms, 0.999),
            "max": max(all_ms) if all_ms else float("nan")}


# -------------------------------------------------------------------------------------- the table

def build_corpus(conn, rows):
    progress(f"generating {rows:,} rows (tables.py, seed 1) into corpus")
    t0 = time.perf_counter()
    conn.execute("DROP TABLE IF EXISTS corpus, t")
    conn.execute("CREATE TABLE corpus (id bigint, lang text, body text, hits int NOT NULL DEFAULT 0)")
    with conn.cursor().copy("COPY corpus (id, lang, body) FROM STDIN") as cp:
        for i, (lang, body) in enumerate(generate(rows, 1), 1):
            cp.write_row((i, lang, body))
    conn.execute("ALTER TABLE corpus ADD PRIMARY KEY (id)")
    conn.execute("VACUUM ANALYZE corpus")
    progress(f"  {time.perf_counter() - t0:.0f} s")
    return describe_rows(conn, "corpus")


def fresh_table(conn, last):
    """`t`: a copy of corpus, or corpus itself for the last run of a size."""
    conn.execute("DROP TABLE IF EXISTS t")
    if last:
        conn.execute("ALTER TABLE corpus RENAME TO t")
    else:
        conn.execute("CREATE TABLE t (LIKE corpus INCLUDING DEFAULTS)")
        conn.execute("INSERT INTO t SELECT * FROM corpus")
        conn.execute("ALTER TABLE t ADD PRIMARY KEY (id)")
        conn.execute("VACUUM ANALYZE t")
    conn.execute("CHECKPOINT")


def sizes(conn):
    total, heap, n = conn.execute("SELECT pg_total_relation_size('t'), pg_relation_size('t'), "
                                  "(SELECT count(*) FROM t)").fetchone()
    return {"total": total / n, "heap": heap / n, "rows": n}


def verify(conn, touched, mode):
    """NULL fingerprints, wrong fingerprints and wrong bands, over all rows or the touched ones + every 100th."""
    fp, bands, method, expr = conn.execute(
        "SELECT a.fingerprint_column, a.band_columns, a.method, "
        "simhash_internal.fingerprint_sql('body', a.method, a.tokenizer, a.shingle, a.weighting, a.stopwords, a.fold) "
        "FROM simhash_attachments() a WHERE a.table_name = 't'::regclass").fetchone()
    if method == "minhash":
        band_ok = f'"{bands[0]}" IS NOT DISTINCT FROM minhash_bands("{fp}")'
    else:
        band_ok = " AND ".join(f'"{b}" IS NOT DISTINCT FROM simhash_band("{fp}", {i}, {len(bands)})'
                               for i, b in enumerate(bands))
    where = ""
    if mode == "touched":
        conn.execute("CREATE TEMP TABLE touched (id bigint PRIMARY KEY)")
        with conn.cursor().copy("COPY touched (id) FROM STDIN") as cp:
            for i in touched:
                cp.write_row((i,))
        where = "WHERE t.id % 100 = 0 OR t.id IN (SELECT id FROM touched)"
    conn.execute("SET parallel_setup_cost = 0")
    conn.execute("SET parallel_tuple_cost = 0")
    row = conn.execute(
        f'SELECT count(*), count(*) FILTER (WHERE "{fp}" IS NULL), '
        f'count(*) FILTER (WHERE "{fp}" IS DISTINCT FROM {expr}), count(*) FILTER (WHERE NOT ({band_ok})) '
        f"FROM t {where}").fetchone()
    conn.execute("RESET parallel_setup_cost")
    conn.execute("RESET parallel_tuple_cost")
    if mode == "touched":
        conn.execute("DROP TABLE touched")
    return {"checked": row[0], "null": row[1], "wrong_fp": row[2], "wrong_bands": row[3], "mode": mode}


# ------------------------------------------------------------------------------------------ runs

class Phases:
    """The phases of an online attach, polled from simhash_attach_progress (when the build has it)
    every 0.2 s on a connection of its own: [(monotonic time, phase, detail)] at each change."""

    def __init__(self):
        import threading

        self.seen, self.stop = [], threading.Event()
        self.thread = threading.Thread(target=self.poll, daemon=True)
        self.thread.start()

    def poll(self):
        try:
            conn = connect()
            if not conn.execute("SELECT to_regclass('simhash_attach_progress') IS NOT NULL").fetchone()[0]:
                return
            last = None
            while not self.stop.wait(0.2):
                row = conn.execute("SELECT phase, detail FROM simhash_attach_progress "
                                   "WHERE table_name = 't'::regclass").fetchone()
                phase = row[0] if row else None
                if phase == "building indexes":  # one index after the other: the statement is the detail
                    phase = f"{phase}: {row[1]}"
                if phase != last:
                    self.seen.append((time.monotonic(), phase or "(no progress row)", row[1] if row else None))
                    last = phase
            conn.close()
        except Exception as e:  # noqa: BLE001 - the phases are a help, not a measurement
            self.seen.append((time.monotonic(), f"(monitor stopped: {type(e).__name__})", None))

    def finish(self):
        self.stop.set()
        self.thread.join()
        return self.seen

    @staticmethod
    def at(seen, when):
        phase = "(before the first poll)"
        for t, p, _ in seen:
            if t <= when:
                phase = p
        return phase


def run(conn, rows, method, mode, last):
    """One run: mode 'baseline' (no attach), 'offline' or 'online'."""
    fresh_table(conn, last)
    progress(f"{rows:,} rows, {method}, {mode}: {WRITERS} writers and {READERS} readers, "
             + (f"{RATE:g}/s each" if RATE else "as fast as they can"))
    notices = []
    handler = lambda d: notices.append((time.monotonic(), d.severity, d.message_primary))  # noqa: E731
    conn.add_notice_handler(handler)
    load = Load(rows)
    res = {"rows": rows, "method": method, "mode": mode, "load": [load_avg()]}
    try:
        if mode == "baseline":
            t0 = time.monotonic()
            time.sleep(BASELINE)
            t1 = time.monotonic()
            res["attach_s"] = None
        else:
            if SESSION:
                conn.execute(SESSION)
            time.sleep(PRE)
            opts = ", method => 'minhash'" if method == "minhash" else ""
            sql = (f"SELECT simhash_attach('t', 'body'{opts})" if mode == "offline"
                   else f"CALL simhash_attach_concurrently('t', 'body'{opts})")
            res["load"].append(load_avg())
            phases = Phases() if mode == "online" else None
            t0 = time.monotonic()
            try:
                conn.execute(sql)
                res["attach_error"] = None
            except Exception as e:  # noqa: BLE001 - reported, the run goes on
                res["attach_error"] = f"{type(e).__name__}: {e}"
            t1 = time.monotonic()
            res["phases"] = phases.finish() if phases else []
            load.attached.set()
            res["attach_s"] = t1 - t0
            res["load"].append(load_avg())
            progress(f"  attach {t1 - t0:.1f} s" + (f", FAILED: {res['attach_error']}" if res["attach_error"] else ""))
            time.sleep(POST)
    finally:
        writes, reads, touched = load.finish()
        conn.remove_notice_handler(handler)
    res["window"] = (t0, t1)
    res["w"] = stats(writes, t0, t1)
    res["r"] = stats(reads, t0, t1)
    res["w_all_errors"] = stats(writes)["errors"]
    res["r_all_errors"] = stats(reads)["errors"]
    res["w_after"] = stats(writes, t1 + 1, float("inf"))
    res["nd_after"] = stats(reads, t1 + 1, float("inf"), kinds={"near_duplicates"})
    res["notices"] = [(at - t0, sev, msg) for at, sev, msg in notices]
    phases = res.get("phases", [])
    # The longest waits of the window, each with the phase of the online attach it started in.
    window = [r for r in writes + reads if r[0] <= t1 and r[0] + r[1] >= t0]
    res["longest"] = [(r[0] - t0, r[1] * 1000, r[2], r[3], Phases.at(phases, r[0]))
                      for r in sorted(window, key=lambda r: -r[1])[:5]]
    res["sizes"] = sizes(conn)
    if mode != "baseline" and not res.get("attach_error"):
        vmode = VERIFY or ("all" if rows < 5_000_000 else "touched")
        if vmode != "none":
            progress(f"  checking the stored values ({vmode})")
            res["verify"] = verify(conn, touched, vmode)
    w, r = res["w"], res["r"]
    progress(f"  window {t1 - t0:.1f} s: {w['n']} writes, p99.9 {w['p999']:.1f} ms, max {w['max']:.1f} ms, "
             f"errors {w['errors']}; {r['n']} reads, p99.9 {r['p999']:.1f} ms, max {r['max']:.1f} ms, "
             f"errors {r['errors']}; {res['sizes']['total']:.0f} B/row")
    for at, sev, msg in res["notices"]:
        progress(f"    {at:7.2f} s {sev}: {msg}")
    for i, (at, phase, detail) in enumerate(phases):
        end = phases[i + 1][0] if i + 1 < len(phases) else t1
        more = f" ({detail})" if detail and detail not in phase else ""
        progress(f"    phase from {at - t0:7.2f} s, {end - at:6.1f} s: {phase}{more}")
    for at, ms, kind, state, phase in res["longest"]:
        progress(f"    longest: {kind} at {at:7.2f} s waited {ms:9.1f} ms{' ' + state if state else ''}"
                 f"{' in phase ' + str(phase) if phases else ''}")
    if "verify" in res:
        progress(f"  check: {res['verify']}")
    return res


# ---------------------------------------------------------------------------------------- report

def fmt(x, digits=1):
    return "–" if x is None or x != x else f"{x:,.{digits}f}"


def errs(d):
    return str(sum(d.values())) + (" (" + ", ".join(f"{k} × {v}" for k, v in sorted(d.items())) + ")" if d else "")


def short(phase):
    """A phase without its statement: 'building indexes: CREATE INDEX ... (body_band0) ...' is 'index (body_band0)'."""
    if phase.startswith("building indexes: ") and "(" in phase:
        return "index (" + phase.split("(", 1)[1].split(")", 1)[0] + ")"
    return phase


def report(results, described, online_available, settings):
    lines = [
        "# Attach under a write load: offline simhash_attach vs online simhash_attach_concurrently",
        "",
        "Output of `bash bench/online_attach.sh` (bench/online_attach.py). " + MACHINE,
        f"Load: {WRITERS} writers (single-row INSERT, UPDATE of the text of a random row, UPDATE of its "
        f"other column, equal shares) and {READERS} readers (lookup by primary key; the second reader "
        f"switches to simhash_near_duplicates once the attach has returned), "
        + (f"each paced at {RATE:g} statements/s" if RATE else "each as fast as it can")
        + f", autocommit, one process each; {PRE:g} s of load before the attach, {POST:g} s after; baseline: "
        f"{BASELINE:g} s of the same load, no attach. Default options, max_distance 7, on_duplicate 'none'; "
        f"the extension's settings: {settings or 'none'}."
        + (f" The attaching session first ran: {SESSION}." if SESSION else ""),
        "",
    ]
    for rows, d in described.items():
        lines.append(f"Table of {rows:,} rows: " + d)
    lines += [
        "",
        "The attach window: statements overlapping [call, return] of the attach (baseline: the whole "
        "run). Latencies in ms, of every statement (a failed one's wait included); p50 of the "
        "successful ones.",
        "",
        "| rows | method | attach | attach s | online / offline | writes | write p50 | write p99.9 | write max "
        "| writes failed | reads | read p99.9 | read max | reads failed |",
        "| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | --- |",
    ]
    offline = {(r["rows"], r["method"]): r["attach_s"] for r in results if r["mode"] == "offline"}
    for r in results:
        ratio = ""
        if r["mode"] == "online" and offline.get((r["rows"], r["method"])):
            ratio = f"{r['attach_s'] / offline[(r['rows'], r['method'])]:.2f}×"
        w, rd = r["w"], r["r"]
        attach = r["mode"] if not r.get("attach_error") else f"{r['mode']} (FAILED)"
        lines.append(
            f"| {r['rows']:,} | {'–' if r['mode'] == 'baseline' else r['method']} | {attach} | {fmt(r['attach_s'])} "
            f"| {ratio} | {w['n']:,} | {fmt(w['p50'], 2)} | {fmt(w['p999'])} | {fmt(w['max'])} | "
            f"{errs(r['w_all_errors'])} | {rd['n']:,} | {fmt(rd['p999'])} | {fmt(rd['max'])} | {errs(r['r_all_errors'])} |")
    lines += [
        "",
        "Writes and reads failed: over the whole run, not only the window. After the attach (clients "
        "stopped, no VACUUM): bytes per row of table + indexes (pg_total_relation_size / count(*)) and of "
        "the heap alone (main fork); writes and near-duplicate lookups from 1 s after the attach returned "
        "to the end of the run; the stored values checked against simhash()/minhash() and the band functions.",
        "",
        "| rows | method | attach | bytes/row, table + indexes | bytes/row, heap | write p99.9 after | "
        "near_duplicates p50 / p99.9 | checked rows | NULL / wrong fingerprints / wrong bands | messages |",
        "| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: |",
    ]
    for r in results:
        v = r.get("verify")
        nd = r["nd_after"]
        check = f"{v['null']} / {v['wrong_fp']} / {v['wrong_bands']}" if v else "–"
        checked = f"{v['checked']:,} ({v['mode']})" if v else "–"
        lines.append(
            f"| {r['rows']:,} | {'–' if r['mode'] == 'baseline' else r['method']} | {r['mode']} "
            f"| {r['sizes']['total']:,.0f} | {r['sizes']['heap']:,.0f} "
            f"| {fmt(r['w_after']['p999']) if r['mode'] != 'baseline' else '–'} "
            f"| {fmt(nd['p50'], 2) + ' / ' + fmt(nd['p999']) if nd['n'] else '–'} "
            f"| {checked} "
            f"| {check} | {len(r['notices'])} |")
    for r in results:
        phases = r.get("phases") or []
        if not phases:
            continue
        t0, t1 = r["window"]
        parts = []
        for i, (at, phase, _) in enumerate(phases):
            end = phases[i + 1][0] if i + 1 < len(phases) else t1
            parts.append(f"{short(phase)} {end - at:.1f} s")
        w = [x for x in r["longest"] if x[2] in ("insert", "update_text", "update_other")]
        worst = f"; the longest write wait, {w[0][1]:,.1f} ms, began in phase {short(w[0][4])}" if w else ""
        lines += ["", f"{r['rows']:,} {r['method']} online, the phases of simhash_attach_progress (polled every "
                      f"0.2 s): " + ", ".join(parts) + worst + "."]
    if not online_available:
        lines += ["", "simhash_attach_concurrently() does not exist in this build: the online runs were skipped."]
    for r in results:
        if r.get("attach_error"):
            lines += ["", f"{r['rows']:,} {r['method']} {r['mode']}: the attach failed: {r['attach_error']}"]
    loads = [x for r in results for x in r["load"]]
    lines += ["", f"Load average during the runs: {min(loads):.1f}–{max(loads):.1f}.", ""]
    return "\n".join(lines)


def main():
    conn = connect()
    online = conn.execute("SELECT to_regproc('simhash_attach_concurrently') IS NOT NULL").fetchone()[0]
    if not online:
        progress("simhash_attach_concurrently() is not in this build: offline runs only")
    modes = [m for m in MODES if m != "online" or online]
    conn.execute("SELECT simhash('load the library')")  # its settings exist from then on
    settings = conn.execute(
        "SELECT string_agg(format('%s = %s', name, setting || coalesce(unit, '')), ', ' ORDER BY name) "
        "FROM pg_settings WHERE name LIKE 'simhash.%'").fetchone()[0]
    sizes_methods = [(ROWS, METHODS)] + ([] if SKIP_BIG else [(BIG_ROWS, BIG_METHODS)])
    results, described = [], {}
    for rows, methods in sizes_methods:
        d = build_corpus(conn, rows)
        described[rows] = (f"{d['rows']:,} rows, {d['chars']:.0f} characters ({d['bytes']:.0f} bytes) on average, "
                           f"{100 * d['zh']:.0f}% Chinese (tables.py, seed 1), id primary key, hits int.")
        plan = [("simhash", "baseline")] + [(m, mode) for m in methods for mode in modes]
        for i, (method, mode) in enumerate(plan):
            results.append(run(conn, rows, method, mode, last=i == len(plan) - 1))
        conn.execute("DROP TABLE IF EXISTS t, corpus")
        text = report(results, described, online, settings)
        with open(RESULT, "w") as f:  # after each size, so a long run leaves what it has
            f.write(text)
    print(text)


if __name__ == "__main__":
    main()
