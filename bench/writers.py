"""Concurrent writers of unrelated texts (issue 41, point 6): does a checked write wait for writers of
texts that are not near-duplicates of its own? Run by bench/writers.sh, which starts one throwaway
server per build (label=port pairs in --server); this prints tables A and B in Markdown, the builds
side by side (one row per table kind and build), and writes them to --result.

Text. Every row written by anyone (pre-fill, holder, probes, application writers, batch writer) is a
different text of the pool: real words, drawn as random short windows of the text shipped on this
machine (bench/corpus.py: English manual pages and READMEs; Chinese manual pages of manpages-zh and
zh_CN message catalogs; paragraphs that recur in 4 or more sources — licence blurbs, bug-report
footers — left out). An English text is 40-80 words made of windows of 4-12 consecutive words, each
from a random place of the whole English text; a Chinese text (30 % of them) is 60-160 characters
made of windows of 6-16 consecutive characters. So every text reads like the prose it comes from,
and any two texts are unrelated (they share at most the odd common phrase). The pool is generated
from a fixed seed, de-duplicated, and loaded into each server as the table `pool(id, lang, body)`;
writers insert `SELECT lang, body FROM pool WHERE id = $1` (or a range of ids), each from its own
range, so no text is written twice into a table. 23505 (a rejected near-duplicate or a duplicate
md5) is counted everywhere as a sanity check: it should be 0.

Tables (fresh for every measurement: `id bigserial primary key, lang text, body text`, pre-filled
with the pool's first --prefill rows, then): plain; a unique index on md5(body); SimHash attached
(simhash_attach('t', 'body', on_duplicate => MODE)); MinHash attached (method => 'minhash');
`simhash_index` and `minhash_index` (not in the default --kinds): the columns and index an attachment
keeps (four integer band columns and four B-trees that include the fingerprint; the signature and a
GIN index of its 32 band keys without pending list), filled by the INSERT itself with the
extension's functions, with no trigger — what keeping the index costs a write, a floor under any
check (INSERT batches only); with --partitioned also the same partitioned by LIST (lang) into t_en and t_zh (primary key (id, lang);
the unique index is then on (lang, md5(body)), as a unique index of a partitioned table must hold
the partition key — the same constraint here, since each text has one language). VACUUM ANALYZE and CHECKPOINT before each measurement.

A. A holder session opens a transaction and inserts H rows (one INSERT ... SELECT), keeps it open;
   a prober session (autocommit, lock_timeout = --lock-timeout) makes --probes single-row INSERTs of
   other texts; cell: probes that failed with 55P03 / probes. The holder then rolls back.
B. --app-writers application writers (autocommit single-row INSERTs, each its own process and
   connection) for --seconds beside one batch writer, one transaction after another: `insert500` =
   500 single-row INSERTs (prepared, one round trip each) then COMMIT; `pipe500` the same through
   psycopg's executemany (pipelined); `multi500` one INSERT ... SELECT of 500 rows; `copy500` COPY
   FROM STDIN of 500 rows the batch writer has just read from the pool, outside its transaction;
   any other size likewise (insert10000, copy10000). --rounds R: R windows per row, in a rotated
   order of the rows, medians of rates and latencies, errors summed. Every
   connection first writes one row and rolls it back (loads the library, warms caches), then all
   start together. A statement counts in the throughput when it succeeded and ended within the
   window; latencies are of every application statement started within the window (those still
   running at its end are waited for, up to --grace seconds, then their backends are terminated);
   a batch counts when its COMMIT returned within the window.
S. One writer alone (issue 48, point 5: a checked write's own cost): --single single-row INSERTs
   (prepared, autocommit, each a text of its own), then one INSERT ... SELECT of --single-bulk rows,
   into a fresh table per build and round; the backend's CPU time (utime + stime of
   /proc/PID/stat, so the server must run on this machine) per statement in µs and for the bulk
   statement in ms. --rounds R rounds, each in a rotated order of the rows and the builds
   alternating row by row; medians. With two builds or more, each row also gives its ratio to the
   first build's (new/old), the number issue 48 asks to keep within 1.10×.
"""

import argparse
import logging
import multiprocessing as mp
import os
import random
import re
import sys
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH)

T0 = time.time()
# psycopg warns "error ignored terminating <Pipeline>: pipeline aborted" when a batch of executemany
# fails (a deadlock): the error itself is counted.
logging.getLogger("psycopg").setLevel(logging.ERROR)


def progress(msg):
    print(f"[{time.time() - T0:6.1f}s] {msg}", file=sys.stderr, flush=True)


def die(msg):
    print(f"writers.py: {msg}", file=sys.stderr, flush=True)
    sys.exit(1)


# ------------------------------------------------------------------------------------------- text

def word_streams(cache_dir):
    """English words and Chinese characters of the text on this machine, boilerplate left out
    (cached in cache_dir as one token per line)."""
    os.makedirs(cache_dir, exist_ok=True)
    out = {}
    for lang in ("en", "zh"):
        path = os.path.join(cache_dir, f"writers_{lang}.txt")
        if not os.path.exists(path):
            import corpus

            progress(f"corpus {lang}: reading the text shipped on this machine (bench/corpus.py)")
            c = corpus.Corpus(lang)
            toks = []
            for p in c.paragraphs():
                if corpus.boilerplate_key(p) in c.boiler_keys or not corpus.is_language(p, lang):
                    continue
                if lang == "en":
                    toks.extend(p.split())
                else:
                    toks.extend(ch for ch in p if not ch.isspace())
            tmp = f"{path}.{os.getpid()}.partial"
            with open(tmp, "w", encoding="utf-8") as f:
                f.write("\n".join(toks))
            os.replace(tmp, path)
        with open(path, encoding="utf-8") as f:
            out[lang] = f.read().split("\n")
    if len(out["en"]) < 100000 or len(out["zh"]) < 50000:
        die(f"too little text on this machine: {len(out['en'])} English words, {len(out['zh'])} Chinese "
            "characters (bench/corpus.py reads man pages, manpages-zh and gettext catalogs)")
    return out


def cached_pool(n, seed, streams, cache_dir):
    """make_pool's first n texts, kept in cache_dir (a longer pool of the same seed serves a shorter one:
    the texts are generated in order)."""
    path = os.path.join(cache_dir, f"writers_pool_{seed}.tsv")
    pool = []
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            for line in f:
                if len(pool) == n:
                    break
                lang, body = line.rstrip("\n").split("\t", 1)
                pool.append((lang, body))
    if len(pool) < n:
        pool = make_pool(n, seed, streams)
        tmp = f"{path}.{os.getpid()}.partial"
        with open(tmp, "w", encoding="utf-8") as f:
            for lang, body in pool:
                f.write(f"{lang}\t{body}\n")
        os.replace(tmp, path)
    return pool


def make_pool(n, seed, streams):
    """n distinct texts [(lang, body)], the same for the same seed and corpus (and the first n of a
    longer pool of the same seed). No text holds a tab or a newline."""
    rng = random.Random(seed)
    en, zh = streams["en"], streams["zh"]
    seen, pool = set(), []
    while len(pool) < n:
        if rng.random() < 0.3:
            target, parts, size = rng.randint(60, 160), [], 0
            while size < target:
                w = min(rng.randint(6, 16), target - size)
                s = rng.randrange(len(zh) - w)
                parts.append("".join(zh[s:s + w]))
                size += w
            lang, body = "zh", "".join(parts)
        else:
            target, parts, size = rng.randint(40, 80), [], 0
            while size < target:
                w = min(rng.randint(4, 12), target - size)
                s = rng.randrange(len(en) - w)
                parts.append(" ".join(en[s:s + w]))
                size += w
            lang, body = "en", " ".join(parts)
        if body not in seen:
            seen.add(body)
            pool.append((lang, body))
    return pool


# ------------------------------------------------------------------------------------- connection

def dsn(port):
    return f"host=/tmp port={port} user=postgres dbname=postgres application_name=bench41"


def connect(port, autocommit=True):
    import psycopg

    return psycopg.connect(dsn(port), autocommit=autocommit)


def sqlstate(e):
    return getattr(e, "sqlstate", None) or type(e).__name__


# ----------------------------------------------------------------------------------------- tables

KINDS = {
    "plain": "plain table",
    "unique": "unique index on md5(body)",
    "simhash": "SimHash attached",
    "minhash": "MinHash attached",
    "simhash_index": "SimHash's columns and band indexes, no trigger",
    "minhash_index": "MinHash's columns and GIN index, no trigger",
}

# The kinds with an attachment's stored columns and index but no trigger (a floor: what keeping the
# index costs a write, whatever the check does): the INSERT computes the columns itself, with the
# extension's functions, from the pool's text.
INDEX_ONLY = {
    "simhash_index": (
        "body_simhash bigint, body_band0 int, body_band1 int, body_band2 int, body_band3 int",
        ["(body_band%d) INCLUDE (body_simhash)" % i for i in range(4)],
        "body_simhash, body_band0, body_band1, body_band2, body_band3",
        "f, simhash_band(f, 0, 4), simhash_band(f, 1, 4), simhash_band(f, 2, 4), simhash_band(f, 3, 4) "
        "FROM (SELECT lang, body, simhash(body) AS f FROM pool",
    ),
    "minhash_index": (
        "body_minhash bytea, body_lsh bigint[]",
        ["USING gin (body_lsh) WITH (fastupdate = off)"],
        "body_minhash, body_lsh",
        "m, minhash_bands(m, 32, 4) FROM (SELECT lang, body, minhash(body) AS m FROM pool",
    ),
}
# The kind of each table made (insert_one and insert_range write what its columns need).
TABLE_KIND = {}


def variants(kinds, modes, partitioned):
    """[(kind, mode, layout)] in the order of the tables' rows."""
    out = []
    for layout in (["plain", "partitioned"] if partitioned else ["plain"]):
        for kind in kinds:
            if kind in ("plain", "unique") or kind in INDEX_ONLY:
                out.append((kind, None, layout))
            else:
                out.extend((kind, m, layout) for m in modes)
    return out


def variant_name(v):
    kind, mode, layout = v
    name = KINDS[kind]
    if mode is not None:
        name += f", '{mode}'"
    if layout == "partitioned":
        name = "partitioned: " + name.replace("md5(body)", "(lang, md5(body))")
    return name


TABLE_SEQ = [0]


def make_table(conn, v, prefill):
    """A fresh table for variant v, pre-filled and attached; returns its name."""
    kind, mode, layout = v
    TABLE_SEQ[0] += 1
    t = f"w{TABLE_SEQ[0]}"
    TABLE_KIND[t] = kind
    extra = f", {INDEX_ONLY[kind][0]}" if kind in INDEX_ONLY else ""
    if layout == "partitioned":
        conn.execute(f"CREATE TABLE {t} (id bigserial, lang text NOT NULL, body text NOT NULL{extra}, "
                     f"PRIMARY KEY (id, lang)) PARTITION BY LIST (lang)")
        for lang in ("en", "zh"):
            conn.execute(f"CREATE TABLE {t}_{lang} PARTITION OF {t} FOR VALUES IN ('{lang}')")
    else:
        conn.execute(f"CREATE TABLE {t} (id bigserial PRIMARY KEY, lang text NOT NULL, body text NOT NULL{extra})")
    if kind in INDEX_ONLY:
        for definition in INDEX_ONLY[kind][1]:
            conn.execute(f"CREATE INDEX ON {t} {definition}")
    conn.execute(insert_rows(t, "id <= %s ORDER BY id"), (prefill,))
    if kind == "unique":
        if layout == "partitioned":
            conn.execute(f"CREATE UNIQUE INDEX ON {t} (lang, md5(body))")
        else:
            conn.execute(f"CREATE UNIQUE INDEX ON {t} (md5(body))")
    elif kind == "simhash":
        conn.execute("SELECT simhash_attach(%s, 'body', on_duplicate => %s)", (t, mode))
    elif kind == "minhash":
        conn.execute("SELECT simhash_attach(%s, 'body', method => 'minhash', on_duplicate => %s)", (t, mode))
    conn.execute(f"VACUUM ANALYZE {t}")
    conn.execute("CHECKPOINT")
    return t


def check_texts(port, n):
    """Near-duplicate pairs among the pool's first n texts under both methods' defaults (simhash_pairs
    of an attachment with on_duplicate 'none'): should be 0, or a probe of table A could wait for a
    real near-duplicate among the holder's rows (which are rolled back, so no 23505 would show it)."""
    conn = connect(port)
    found = []
    for method in ("simhash", "minhash"):
        t = f"check_{method}"
        conn.execute(f"DROP TABLE IF EXISTS {t} CASCADE")
        conn.execute(f"CREATE TABLE {t} (id int PRIMARY KEY, body text NOT NULL)")
        conn.execute(f"INSERT INTO {t} SELECT id, body FROM pool WHERE id <= %s", (n,))
        conn.execute("SELECT simhash_attach(%s, 'body', method => %s)", (t, method))
        k = conn.execute("SELECT count(*) FROM simhash_pairs(%s)", (t,)).fetchone()[0]
        found.append(f"{k} under {'SimHash' if method == 'simhash' else 'MinHash'}")
        conn.execute(f"DROP TABLE {t} CASCADE")
    conn.close()
    return f"near-duplicate pairs among the first {n:,} (table A's): " + ", ".join(found)


def drop_table(conn, t):
    conn.execute(f"DROP TABLE IF EXISTS {t} CASCADE")


def insert_rows(t, where):
    """An INSERT into t of the pool's rows that satisfy `where`."""
    kind = TABLE_KIND.get(t)
    if kind in INDEX_ONLY:
        _, _, columns, select = INDEX_ONLY[kind]
        return f"INSERT INTO {t} (lang, body, {columns}) SELECT lang, body, {select} WHERE {where}) s"
    return f"INSERT INTO {t} (lang, body) SELECT lang, body FROM pool WHERE {where}"


def insert_one(t):
    return insert_rows(t, "id = %s")


def insert_range(t):
    return insert_rows(t, "id BETWEEN %s AND %s")


def flagged(conn, t, v):
    if v[1] != "flag":
        return 0
    return conn.execute(f"SELECT count(*) FROM {t} WHERE body_duplicate_of IS NOT NULL").fetchone()[0]


# -------------------------------------------------------------------------------------- table S
def backend_cpu(pid):
    """utime + stime of backend pid, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure_s(port, v, n, bulk, prefill):
    """Table S for variant v: (µs of backend CPU per single-row INSERT, ms for the bulk INSERT)."""
    admin = connect(port)
    t = make_table(admin, v, prefill)
    conn = connect(port)
    pid = conn.info.backend_pid
    one = insert_one(t)
    # Warm-up: the library, the trigger's setup and the prepared statement (rolled back).
    with conn.transaction(force_rollback=True):
        conn.execute(one, (prefill + 1,), prepare=True)
    before = backend_cpu(pid)
    for i in range(prefill + 1, prefill + 1 + n):
        conn.execute(one, (i,), prepare=True)
    single = (backend_cpu(pid) - before) / n * 1e6
    first = prefill + 1 + n
    before = backend_cpu(pid)
    conn.execute(insert_range(t), (first, first + bulk - 1))
    bulk_ms = (backend_cpu(pid) - before) * 1e3
    conn.close()
    drop_table(admin, t)
    admin.close()
    return single, bulk_ms


def median(xs):
    xs = sorted(xs)
    m = len(xs) // 2
    return xs[m] if len(xs) % 2 else (xs[m - 1] + xs[m]) / 2


# -------------------------------------------------------------------------------------- table A

def measure_a(port, v, holds, probes, lock_timeout, prefill):
    """{H: (timed out, probes, other errors {state: n}, 23505, holder error or None, holder seconds)}"""
    admin = connect(port)
    t = make_table(admin, v, prefill)
    holder = connect(port, autocommit=False)
    prober = connect(port)
    prober.execute(f"SET lock_timeout = '{lock_timeout}'")
    # Warm both backends (library, caches) with a row written and rolled back.
    for c in (holder, prober):
        with c.transaction(force_rollback=True) if c.autocommit else _rollback_after(c):
            c.execute(insert_one(t), (prefill + 1,))
    hold_base = prefill + 1
    probe_base = hold_base + max(holds)
    out = {}
    for hi, h in enumerate(holds):
        herr, t1 = None, time.monotonic()
        try:
            holder.execute(insert_range(t), (hold_base, hold_base + h - 1))
        except Exception as e:  # noqa: BLE001 - reported in the table
            herr = sqlstate(e)
            progress(f"    holder of {h} rows failed: {herr}: {str(e).splitlines()[0]}")
        hsecs = time.monotonic() - t1
        timed_out, other, dup = 0, {}, 0
        for i in range(probes):
            try:
                prober.execute(insert_one(t), (probe_base + hi * probes + i,))
            except Exception as e:  # noqa: BLE001
                s = sqlstate(e)
                if s == "55P03":
                    timed_out += 1
                elif s == "23505":
                    dup += 1
                else:
                    other[s] = other.get(s, 0) + 1
        holder.rollback()
        out[h] = (timed_out, probes, other, dup, herr, hsecs)
        progress(f"    H = {h}: {timed_out}/{probes} timed out (holder {hsecs:.1f} s{', ' + herr if herr else ''})"
                 f"{', 23505: %d' % dup if dup else ''}{', other: %s' % other if other else ''}")
    out["flagged"] = flagged(admin, t, v)
    holder.close()
    prober.close()
    drop_table(admin, t)
    admin.close()
    return out


class _rollback_after:
    def __init__(self, conn):
        self.conn = conn

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.conn.rollback()
        return False


# -------------------------------------------------------------------------------------- table B

def app_worker(port, t, first, last, ready, start, stop, out):
    import psycopg

    recs = []  # (start, end, state, rows)
    conn = connect(port)
    with conn.transaction(force_rollback=True):
        conn.execute(insert_one(t), (first,))
    ready.put(conn.info.backend_pid)
    start.wait()
    sql = insert_one(t)
    i = first
    exhausted = False
    while not stop.is_set():
        if i > last:
            exhausted = True
            break
        t1 = time.monotonic()
        state, rows = None, 0
        try:
            cur = conn.execute(sql, (i,), prepare=True)
            rows = cur.rowcount
        except psycopg.Error as e:
            state = sqlstate(e)
            if conn.broken:
                recs.append((t1, time.monotonic(), state, 0))
                break
        recs.append((t1, time.monotonic(), state, rows))
        i += 1
    try:
        conn.close()
    except Exception:  # noqa: BLE001
        pass
    out.put(("app", recs, exhausted))


def batch_worker(port, t, kind, size, first, last, ready, start, stop, out):
    import psycopg

    recs = []
    conn = connect(port)
    with conn.transaction(force_rollback=True):
        conn.execute(insert_one(t), (first,))
    ready.put(conn.info.backend_pid)
    start.wait()
    i = first
    exhausted = False
    while not stop.is_set():
        if i + size - 1 > last:
            exhausted = True
            break
        lo, hi = i, i + size - 1
        i += size
        rows_in = None
        if kind == "copy":
            rows_in = conn.execute("SELECT lang, body FROM pool WHERE id BETWEEN %s AND %s", (lo, hi)).fetchall()
        t1 = time.monotonic()
        state, rows = None, 0
        try:
            with conn.transaction():
                if kind == "copy":
                    with conn.cursor() as cur:
                        with cur.copy(f"COPY {t} (lang, body) FROM STDIN") as cp:
                            for r in rows_in:
                                cp.write_row(r)
                        rows = cur.rowcount
                elif kind == "multi":
                    rows = conn.execute(insert_range(t), (lo, hi)).rowcount
                elif kind == "pipe":
                    with conn.cursor() as cur:
                        cur.executemany(insert_one(t), [(j,) for j in range(lo, hi + 1)])
                        rows = cur.rowcount
                else:
                    sql = insert_one(t)
                    for j in range(lo, hi + 1):
                        rows += conn.execute(sql, (j,), prepare=True).rowcount
        except psycopg.Error as e:
            state = sqlstate(e)
            if conn.broken:
                recs.append((t1, time.monotonic(), state, 0))
                break
        recs.append((t1, time.monotonic(), state, rows))
    try:
        conn.close()
    except Exception:  # noqa: BLE001
        pass
    out.put(("batch", recs, exhausted))


def measure_b(port, v, batch, seconds, writers, prefill, app_cap, batch_cap, grace):
    kind, size = re.fullmatch(r"(insert|pipe|multi|copy)(\d+)", batch).groups()
    size = int(size)
    admin = connect(port)
    t = make_table(admin, v, prefill)
    ctx = mp.get_context("fork")
    ready, out = ctx.Queue(), ctx.Queue()
    start, stop = ctx.Event(), ctx.Event()
    procs = []
    base = prefill + 1
    for w in range(writers):
        first = base + w * app_cap
        procs.append(ctx.Process(target=app_worker, args=(port, t, first, first + app_cap - 1, ready, start, stop, out)))
    bfirst = base + writers * app_cap
    procs.append(ctx.Process(target=batch_worker,
                             args=(port, t, kind, size, bfirst, bfirst + batch_cap - 1, ready, start, stop, out)))
    for p in procs:
        p.start()
    pids = []
    waited = time.monotonic() + 120
    while len(pids) < len(procs):
        try:
            pids.append(ready.get(timeout=1))
        except Exception:  # noqa: BLE001 - queue.Empty
            dead = [p for p in procs if p.exitcode is not None]
            if dead or time.monotonic() > waited:
                for p in procs:
                    p.kill()
                die("a writer failed to connect or warm up" if dead else "a writer did not get ready within 120 s")
    t_start = time.monotonic()
    start.set()
    time.sleep(seconds)
    t_stop = time.monotonic()
    stop.set()
    results = []
    deadline = time.monotonic() + grace
    killed = False
    while len(results) < len(procs):
        try:
            results.append(out.get(timeout=max(0.1, deadline - time.monotonic())))
        except Exception:  # noqa: BLE001 - queue.Empty
            if killed:
                die("writers did not stop after their backends were terminated")
            progress(f"    writers still busy {grace} s after the window: terminating their backends")
            admin.execute("SELECT pg_terminate_backend(pid) FROM unnest(%s::int[]) pid", (pids,))
            killed = True
            deadline = time.monotonic() + 30
    for p in procs:
        p.join(timeout=10)
    fl = flagged(admin, t, v)
    drop_table(admin, t)
    admin.close()

    app = [r for role, recs, _ in results if role == "app" for r in recs]
    bat = [r for role, recs, _ in results if role == "batch" for r in recs]
    exhausted = [role for role, _, ex in results if ex]
    in_window = [r for r in app if r[0] < t_stop]
    ok = [r for r in app if r[2] is None and r[1] <= t_stop]
    lat = sorted(r[1] - r[0] for r in in_window)
    states = {}
    for r in in_window + [r for r in bat if r[0] < t_stop]:
        if r[2] is not None:
            states[r[2]] = states.get(r[2], 0) + 1
    res = {
        "app_per_s": len(ok) / (t_stop - t_start),
        "app_rows": sum(r[3] for r in ok),
        "app_ok": len(ok),
        "p99": pct(lat, 0.99),
        "p50": pct(lat, 0.50),
        "max": lat[-1] if lat else float("nan"),
        "batches": sum(1 for r in bat if r[2] is None and r[1] <= t_stop),
        "batch_rows": sum(r[3] for r in bat if r[2] is None and r[1] <= t_stop),
        "deadlocks": states.pop("40P01", 0),
        "dup": states.pop("23505", 0),
        "other": states,
        "flagged": fl,
        "exhausted": exhausted,
        "killed": killed,
    }
    progress(f"    app {res['app_per_s']:.0f}/s p50 {ms(res['p50'])} p99 {ms(res['p99'])} max {ms(res['max'])}; "
             f"batches {res['batches']} ({res['batch_rows']} rows); 40P01 {res['deadlocks']}; 23505 {res['dup']}; "
             f"other {states or 0}{'; flagged %d' % fl if v[1] == 'flag' else ''}"
             f"{'; POOL EXHAUSTED: ' + ','.join(exhausted) if exhausted else ''}")
    return res


def combine(rs):
    """Several rounds of one row: medians of the rates and latencies, the largest max, sums of counts."""
    if len(rs) == 1:
        return rs[0]
    import statistics

    out = {}
    for key in ("app_per_s", "p99", "p50", "batches", "app_rows", "app_ok", "batch_rows", "flagged"):
        out[key] = statistics.median(r[key] for r in rs)
    out["max"] = max(r["max"] for r in rs)
    out["deadlocks"] = sum(r["deadlocks"] for r in rs)
    out["dup"] = sum(r["dup"] for r in rs)
    out["other"] = {}
    for r in rs:
        for k2, n in r["other"].items():
            out["other"][k2] = out["other"].get(k2, 0) + n
    out["exhausted"] = sorted({x for r in rs for x in r["exhausted"]})
    out["killed"] = any(r["killed"] for r in rs)
    return out


def pct(v, q):
    if not v:
        return float("nan")
    import math

    return v[min(len(v) - 1, max(0, math.ceil(q * len(v)) - 1))]


def ms(s):
    if s != s:
        return "–"
    return f"{s * 1000:,.0f} ms" if s >= 0.01 else f"{s * 1000:.1f} ms"


# ------------------------------------------------------------------------------------------ output

def md_table(header, rows):
    cells = [[str(c) for c in r] for r in rows]
    widths = [max([3, len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(header)]

    def line(vals):
        return "| " + " | ".join(v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(vals, widths))) + " |"

    sep = "| " + " | ".join("-" * widths[0] if i == 0 else "-" * (w - 1) + ":" for i, w in enumerate(widths)) + " |"
    return "\n".join([line(header), sep] + [line(r) for r in cells])


def fmt_errors(d):
    return ", ".join(f"{k}: {n}" for k, n in sorted(d.items())) or "0"


# -------------------------------------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--server", action="append", required=True, help="LABEL=PORT, one per build")
    ap.add_argument("--tables", default="A,B", help="which tables: A, B, S (one writer alone) or several")
    ap.add_argument("--kinds", default="plain,unique,simhash,minhash")
    ap.add_argument("--modes", default="error", help="on_duplicate modes of the attached tables")
    ap.add_argument("--partitioned", action="store_true", help="also every kind on a partitioned table")
    ap.add_argument("--holds", default="1,10,100,300,1000,10000", help="table A: rows H of the open transaction")
    ap.add_argument("--probes", type=int, default=60)
    ap.add_argument("--lock-timeout", default="300ms")
    ap.add_argument("--batch", default="insert500", help="table B: insert500, insert10000, copy500, copy10000")
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--app-writers", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=1,
                    help="table B: windows per row, each round in a rotated order of the rows; medians of rates "
                         "and latencies, sums of errors, the largest max")
    ap.add_argument("--prefill", type=int, default=5000)
    ap.add_argument("--single", type=int, default=5000, help="table S: single-row INSERTs a round")
    ap.add_argument("--single-bulk", type=int, default=10000, help="table S: rows of its INSERT ... SELECT")
    ap.add_argument("--app-rate-cap", type=int, default=1500,
                    help="pool texts per application writer per second of the window")
    ap.add_argument("--batch-rate-cap", type=int, default=None,
                    help="pool texts for the batch writer per second of the window "
                         "(20000 when every --batch is insert*, else 60000)")
    ap.add_argument("--grace", type=float, default=30)
    ap.add_argument("--no-check-texts", dest="check_texts", action="store_false",
                    help="skip the count of near-duplicate pairs among table A's texts (simhash_pairs, both methods)")
    ap.add_argument("--seed", type=int, default=41)
    ap.add_argument("--cache", default=os.path.join(BENCH, "data"))
    ap.add_argument("--result", default="/tmp/bench41-writers.md")
    ap.add_argument("--note", default="", help="a line printed above the tables (machine, builds)")
    a = ap.parse_args()

    servers = []
    for s in a.server:
        label, _, port = s.rpartition("=")
        servers.append((label or port, int(port)))
    tables = {x.strip().upper() for x in a.tables.split(",") if x.strip()}
    kinds = [k.strip() for k in a.kinds.split(",") if k.strip()]
    for k in kinds:
        if k not in KINDS:
            die(f"unknown kind {k!r} (one of {', '.join(KINDS)})")
    modes = [m.strip() for m in a.modes.split(",") if m.strip()]
    for m in modes:
        if m not in ("error", "skip", "flag", "none"):
            die(f"unknown mode {m!r}")
    holds = [int(h) for h in a.holds.split(",")]
    batches = [b.strip() for b in a.batch.split(",") if b.strip()]
    for b in batches:
        if not re.fullmatch(r"(insert|pipe|multi|copy)\d+", b):
            die(f"unknown batch {b!r} (insert500, insert10000, copy500, copy10000, or another size)")
        if b.startswith("copy") and any(k in INDEX_ONLY for k in kinds) and "B" in {x.strip().upper() for x in a.tables.split(",")}:
            die(f"{b}: the kinds {', '.join(INDEX_ONLY)} compute their columns in the INSERT; COPY cannot")
    vs = variants(kinds, modes, a.partitioned)

    app_cap = int(a.app_rate_cap * a.seconds) + 100
    if a.batch_rate_cap is None:
        a.batch_rate_cap = 20000 if all(b.startswith("insert") for b in batches) else 60000
    batch_cap = int(a.batch_rate_cap * a.seconds) + max(int(re.sub(r"\D", "", b)) for b in batches)
    need_a = a.prefill + max(holds) + len(holds) * a.probes + 1 if "A" in tables else 0
    need_b = a.prefill + a.app_writers * app_cap + batch_cap + 1 if "B" in tables else 0
    need_s = a.prefill + a.single + a.single_bulk + 1 if "S" in tables else 0
    n_pool = max(need_a, need_b, need_s)

    progress(f"text: {n_pool:,} distinct texts (seed {a.seed})")
    streams = word_streams(a.cache)
    pool = cached_pool(n_pool, a.seed, streams, a.cache)
    zh = sum(1 for lang, _ in pool if lang == "zh")
    avg = sum(len(b) for _, b in pool) / len(pool)
    text_note = (f"{len(pool):,} texts, {100 * zh / len(pool):.0f} % Chinese, {avg:.0f} characters on average, "
                 f"from {len(streams['en']):,} English words and {len(streams['zh']):,} Chinese characters of text")
    progress("text: " + text_note)

    info = {}
    for label, port in servers:
        progress(f"{label}: loading the pool into the server on port {port}")
        try:
            c = connect(port)
        except Exception as e:  # noqa: BLE001
            die(f"cannot connect to {label} on port {port}: {e}")
        need_ext = any(k in ("simhash", "minhash") or k in INDEX_ONLY for k in kinds)
        try:
            c.execute("CREATE EXTENSION IF NOT EXISTS simhash_ext")
        except Exception as e:  # noqa: BLE001
            if need_ext:
                die(f"{label}: CREATE EXTENSION simhash_ext failed: {e}")
        c.execute("DROP TABLE IF EXISTS pool")
        c.execute("CREATE TABLE pool (id int PRIMARY KEY, lang text NOT NULL, body text NOT NULL)")
        with c.cursor() as cur:
            with cur.copy("COPY pool (id, lang, body) FROM STDIN") as cp:
                for i, (lang, body) in enumerate(pool, 1):
                    cp.write_row((i, lang, body))
        c.execute("VACUUM ANALYZE pool")
        ver = c.execute("SELECT extversion FROM pg_extension WHERE extname = 'simhash_ext'").fetchone()
        ver = ver[0] if ver else "(not installed)"
        if ver != "(not installed)":
            c.execute("SELECT simhash('x')")
        pid = c.info.backend_pid
        lib = "?"
        with open(f"/proc/{pid}/maps") as f:
            for line in f:
                if line.rstrip().endswith("simhash_ext.so"):
                    lib = line.split()[-1]
                    break
        pgv = c.execute("SHOW server_version").fetchone()[0]
        info[label] = f"{label}: simhash_ext {ver} from {lib}, PostgreSQL {pgv}, port {port}"
        progress("  " + info[label])
        c.close()

    if a.check_texts and "A" in tables:
        label, port = servers[0]
        n = min(need_a, len(pool))
        progress(f"text check on {label}: near-duplicate pairs among the {n:,} texts table A writes")
        text_note += "; " + check_texts(port, n)
        progress("  " + text_note)

    out = []
    out.append("# Writers of unrelated texts (bench/writers.sh)\n")
    if a.note:
        out.append(a.note + "\n")
    out.extend(f"- {info[label]}" for label, _ in servers)
    out.append(f"- text: {text_note}; tables pre-filled with {a.prefill:,} of them\n")

    multi = len(servers) > 1

    def rowname(v, label):
        return variant_name(v) + (f" [{label}]" if multi else "")

    if "A" in tables:
        res = {}
        for v in vs:
            for label, port in servers:
                progress(f"A: {rowname(v, label)}")
                res[(v, label)] = measure_a(port, v, holds, a.probes, a.lock_timeout, a.prefill)
        rows, notes = [], []
        for v in vs:
            for label, _ in servers:
                r = res[(v, label)]
                cells = []
                for h in holds:
                    to, n, other, dup, herr, _ = r[h]
                    cell = f"{to}/{n}"
                    if herr:
                        cell += f" (holder failed: {herr})"
                    extra = []
                    if dup:
                        extra.append(f"23505: {dup}")
                    if other:
                        extra.append(fmt_errors(other))
                    if extra:
                        cell += " [" + "; ".join(extra) + "]"
                    cells.append(cell)
                rows.append([rowname(v, label)] + cells)
                hs = ", ".join(f"{h}: {r[h][5]:.2f} s" for h in holds)
                notes.append(f"  - {rowname(v, label)}: holder's INSERT of H rows took {hs}"
                             f"{'; rows flagged: %d' % r['flagged'] if v[1] == 'flag' else ''}")
        out.append(f"## A. Probes that timed out (55P03, lock_timeout = {a.lock_timeout}) while another "
                   f"transaction holds H rows of unrelated texts\n")
        out.append(md_table(["table"] + [f"H = {h:,}" for h in holds], rows))
        out.append("\nHolder times (one INSERT ... SELECT of H rows, its transaction then kept open):\n")
        out.extend(notes)
        out.append("")

    if "B" in tables:
        for b in batches:
            runs = {}
            for rnd in range(a.rounds):
                # Each round starts one row further down the list (a round-robin order of the rows).
                k = rnd % len(vs)
                for v in vs[k:] + vs[:k]:
                    for label, port in servers:
                        progress(f"B ({b}){' round %d' % (rnd + 1) if a.rounds > 1 else ''}: {rowname(v, label)}")
                        runs.setdefault((v, label), []).append(
                            measure_b(port, v, b, a.seconds, a.app_writers, a.prefill, app_cap, batch_cap, a.grace))
            res = {key: combine(rs) for key, rs in runs.items()}
            rows, notes = [], []
            for v in vs:
                for label, _ in servers:
                    r = res[(v, label)]
                    base = res.get((("plain", None, v[2]), label))
                    if base and v[0] != "plain":
                        thr = r["app_per_s"] / base["app_per_s"] if base["app_per_s"] else float("nan")
                        p99 = r["p99"] / base["p99"] if base["p99"] else float("nan")
                        bat = r["batches"] / base["batches"] if base["batches"] else float("nan")
                        # A baseline whose batch writer ran out of texts has a lower bound of batches:
                        # the ratio is then an upper bound (≤).
                        capped = "≤ " if "batch" in base["exhausted"] else ""
                        verdict = [f"{thr:.2f}× {'PASS' if thr >= 0.7 else 'FAIL'}",
                                   f"{p99:.1f}× {'PASS' if p99 <= 3 else 'FAIL'}",
                                   f"{capped}{bat:.2f}× {'PASS' if bat >= 0.5 else 'FAIL'}"]
                    else:
                        verdict = ["–", "–", "–"]
                    rows.append([rowname(v, label), f"{r['app_per_s']:,.0f}", ms(r["p99"]), ms(r["max"]),
                                 ("≥ " if "batch" in r["exhausted"] else "") + f"{r['batches']:,.0f}", str(r["deadlocks"]), fmt_errors(r["other"]), str(r["dup"])]
                                + verdict)
                    extra = []
                    if v[1] in ("skip", "flag"):
                        extra.append(f"app rows written {r['app_rows']:,.0f} of {r['app_ok']:,.0f} statements")
                    if v[1] == "flag":
                        extra.append(f"rows flagged {r['flagged']:.0f}")
                    if r["exhausted"]:
                        extra.append("POOL EXHAUSTED by " + ", ".join(r["exhausted"]) + " (raise --*-rate-cap)")
                    if r["killed"]:
                        extra.append(f"writers still busy {a.grace:.0f} s after the window: backends terminated")
                    notes.append(f"  - {rowname(v, label)}: app p50 {ms(r['p50'])}, batch rows {r['batch_rows']:,.0f}"
                                 + ("; " + "; ".join(extra) if extra else ""))
            what = {"insert": "single-row INSERTs, prepared, one round trip each",
                    "pipe": "single-row INSERTs through psycopg's executemany, pipelined", "multi": "one INSERT ... SELECT",
                    "copy": "COPY FROM STDIN"}
            bk, bs = re.fullmatch(r"(insert|pipe|multi|copy)(\d+)", b).groups()
            out.append(f"## B. {a.app_writers} application writers (autocommit single-row INSERTs) for "
                       f"{a.seconds:g} s{' (median of %d rounds; errors summed)' % a.rounds if a.rounds > 1 else ''} beside one batch writer ({int(bs):,}-row transactions: {what[bk]})\n")
            out.append(md_table(["table", "app statements/s", "app p99", "app max", "batches committed",
                                 "deadlocks (40P01)", "other errors", "23505", "app/s vs plain ≥ 0.7×",
                                 "p99 vs plain ≤ 3×", "batches vs plain ≥ 0.5×"], rows))
            out.append("")
            out.extend(notes)
            out.append("")

    if "S" in tables:
        runs = {}
        for rnd in range(a.rounds):
            k = rnd % len(vs)
            order = servers if rnd % 2 == 0 else servers[::-1]
            for v in vs[k:] + vs[:k]:
                for label, port in order:
                    progress(f"S round {rnd + 1}: {rowname(v, label)}")
                    runs.setdefault((v, label), []).append(measure_s(port, v, a.single, a.single_bulk, a.prefill))
        rows = []
        first_label = servers[0][0]
        for v in vs:
            for label, _ in servers:
                r = runs[(v, label)]
                single, bulk = median([x[0] for x in r]), median([x[1] for x in r])
                cells = [rowname(v, label), f"{single:,.0f}", f"{bulk:,.0f}"]
                if multi:
                    # Ratios of the paired rounds' figures (same round, same load), their median.
                    old = runs[(v, first_label)]
                    cells.append("–" if label == first_label else
                                 f"{median([x[0] / y[0] for x, y in zip(r, old)]):.2f}×")
                    cells.append("–" if label == first_label else
                                 f"{median([x[1] / y[1] for x, y in zip(r, old)]):.2f}×")
                rows.append(cells)
        out.append(f"## S. One writer alone: backend CPU per single-row INSERT ({a.single:,} a round) and for one "
                   f"INSERT ... SELECT of {a.single_bulk:,} rows (medians of {a.rounds} rounds)\n")
        header = ["table", "µs per INSERT", "ms for the INSERT ... SELECT"]
        if multi:
            header += [f"INSERT vs {first_label}", f"INSERT ... SELECT vs {first_label}"]
        out.append(md_table(header, rows))
        out.append("")

    text = "\n".join(out) + "\n"
    print(text, flush=True)
    if a.result:
        with open(a.result, "w", encoding="utf-8") as f:
            f.write(text)
        progress(f"written to {a.result}")


if __name__ == "__main__":
    main()
