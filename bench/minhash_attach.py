"""simhash_attach() of a million rows with method => 'minhash' beside the SimHash default, in one run,
for one or two builds of the extension (issue 36, item 5). Run by bench/minhash_attach.sh, which
starts one server per build; prints a Markdown report (and writes it to bench/results/RESULT).

The table: ROWS rows of real text made as in tables.py (seed 1, the rows of bench/studies/attach/attach.sh and
bench/minhash_cost.sh), an id primary key, vacuumed, the same in every server.

1. Where a MinHash attach goes, on the first build's server: the scan alone, simhash() and minhash()
   alone (`SELECT count(...)`, 0 and 2 parallel workers), and the GIN build of the band keys at
   each maintenance_work_mem of MA_GIN_MWM (on a table holding each row's signature and band keys,
   `CREATE INDEX ... USING gin (bands) WITH (fastupdate = off)`, the statement simhash_attach()
   runs), with its size. The settings rotate over MA_GIN_ROUNDS rounds.
2. The attaches: each round attaches a fresh copy of the table (vacuumed, CHECKPOINT before) with
   SimHash and with MinHash on every build, the order of the (build, method) pairs rotating from
   round to round. Wall clock, the backend's CPU seconds (parallel workers not counted) and the
   steps from simhash_attach()'s DEBUG messages. The MinHash / SimHash ratio is taken within a
   round and a build (the machine is shared and noisy: ratios of neighbours hold better than times).
3. Checks: the signatures and band keys every build stored are the same (an md5 over the table in
   id order, and against minhash() / minhash_bands() of the text), and the GIN index finds, for
   SAMPLE rows' band keys, the same rows as a sequential scan.
"""

import os
import statistics
import time

import psycopg

from common import RESULTS, progress
from tables import Timed, describe_rows, generate, load_avg, rows_note

ROWS = int(os.environ.get("MA_ROWS", "1000000"))
ROUNDS = int(os.environ.get("MA_ROUNDS", "2"))
GIN_MWM = [m for m in os.environ.get("MA_GIN_MWM", "64MB,256MB,1GB").split(",") if m]
GIN_ROUNDS = int(os.environ.get("MA_GIN_ROUNDS", "1"))
SAMPLE = int(os.environ.get("MA_SAMPLE", "200"))
RESULT = os.environ.get("MA_RESULT", "minhash_attach.md")
MACHINE = os.environ.get("MA_MACHINE", "")
# "label=port,label=port": the builds, in the order of the report.
BUILDS = [tuple(b.split("=")) for b in os.environ.get("MA_BUILDS", "this=55491").split(",")]


def connect(port):
    return psycopg.connect(f"host=/tmp port={port} user=postgres dbname=postgres", autocommit=True)


def fresh_copy(conn, table):
    conn.execute(f"DROP TABLE IF EXISTS {table}")
    conn.execute(f"CREATE TABLE {table} AS SELECT * FROM corpus")
    conn.execute(f"ALTER TABLE {table} ADD PRIMARY KEY (id)")
    conn.execute(f"VACUUM ANALYZE {table}")
    conn.execute("CHECKPOINT")


def attach(conn, table, method):
    """Wall and backend CPU seconds of one attach, and its steps (from the DEBUG messages)."""
    marks = []
    handler = lambda diag: marks.append((time.perf_counter(), diag.message_primary))  # noqa: E731
    conn.add_notice_handler(handler)
    conn.execute("SET client_min_messages = debug1")
    try:
        with Timed(conn) as t:
            t0 = time.perf_counter()
            conn.execute(f"SELECT simhash_attach('{table}', 'body', method => '{method}')")
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


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def breakdown(conn):
    """Section 1: the functions alone and the GIN build at each maintenance_work_mem."""
    out = {"alone": {}, "gin": {m: [] for m in GIN_MWM}}
    conn.execute("SET parallel_setup_cost = 0")
    conn.execute("SET parallel_tuple_cost = 0")
    conn.execute("SET min_parallel_table_scan_size = 0")
    conn.execute("SELECT count(length(body)) FROM corpus")  # into shared buffers
    for workers in (0, 2):
        conn.execute(f"SET max_parallel_workers_per_gather = {workers}")
        for expr in ("length(body)", "simhash(body)", "minhash(body)"):
            progress(f"  count({expr}), {workers} workers")
            with Timed(conn) as t:
                conn.execute(f"SELECT count({expr}) FROM corpus")
            out["alone"][(expr, workers)] = (t.wall, t.cpu)
            progress(f"    {t.wall:.1f} s, CPU {t.cpu:.1f} s")
    conn.execute("RESET ALL")
    progress("  a table of signatures and band keys for the GIN builds")
    conn.execute("DROP TABLE IF EXISTS mh")
    with Timed(conn) as t:
        conn.execute("CREATE TABLE mh AS SELECT id, minhash(body) AS sig FROM corpus")
        conn.execute("ALTER TABLE mh ADD COLUMN bands bigint[] GENERATED ALWAYS AS (minhash_bands(sig)) STORED")
    out["mh_table"] = t.wall
    conn.execute("VACUUM ANALYZE mh")
    out["keys"] = conn.execute("SELECT sum(cardinality(bands)), count(DISTINCT sig) FROM mh").fetchone()
    for r in range(GIN_ROUNDS):
        order = GIN_MWM[r % len(GIN_MWM):] + GIN_MWM[:r % len(GIN_MWM)]
        for m in order:
            conn.execute(f"SET maintenance_work_mem = '{m}'")
            conn.execute("CHECKPOINT")
            progress(f"  GIN build, maintenance_work_mem = {m}")
            with Timed(conn) as t:
                conn.execute("CREATE INDEX mh_gin ON mh USING gin (bands) WITH (fastupdate = off)")
            size = conn.execute("SELECT pg_relation_size('mh_gin')").fetchone()[0]
            conn.execute("DROP INDEX mh_gin")
            out["gin"][m].append((t.wall, t.cpu, size, load_avg()))
            progress(f"    {t.wall:.1f} s, CPU {t.cpu:.1f} s, {size / 1e6:,.0f} MB")
    conn.execute("RESET maintenance_work_mem")
    conn.execute("DROP TABLE mh")
    return out


def checks(conns):
    """Section 3: every build stored the same; the GIN index finds what a scan finds."""
    lines = []
    digests = {}
    for label, conn in conns.items():
        digests[label] = conn.execute(
            "SELECT md5(string_agg(md5(encode(body_minhash, 'hex') || array_to_string(body_lsh, ',')), '' "
            "ORDER BY id)) FROM t_minhash").fetchone()[0]
        wrong = conn.execute(
            "SELECT count(*) FROM t_minhash WHERE body_minhash IS DISTINCT FROM minhash(body) "
            "OR body_lsh IS DISTINCT FROM minhash_bands(body_minhash)").fetchone()[0]
        sample = f"id % (({ROWS} / {SAMPLE}) + 1) = 0"
        conn.execute("SET enable_seqscan = off")
        by_index = conn.execute(
            f"SELECT md5(string_agg(f.ids::text, '/' ORDER BY q.id)) FROM (SELECT id, body_lsh b FROM t_minhash "
            f"WHERE {sample}) q, LATERAL (SELECT array_agg(t.id ORDER BY t.id) ids "
            f"FROM t_minhash t WHERE t.body_lsh && q.b) f").fetchone()[0]
        plan = "\n".join(r[0] for r in conn.execute(
            "EXPLAIN SELECT id FROM t_minhash WHERE body_lsh && '{1}'::bigint[]").fetchall())
        conn.execute("RESET enable_seqscan")
        # The same rows without the index: those sharing a key with the sample row (`&&`), by a hash
        # join of the keys (200 sequential scans with `&&` would take half an hour).
        conn.execute("SET enable_bitmapscan = off")
        conn.execute("SET enable_indexscan = off")
        by_scan = conn.execute(
            f"SELECT md5(string_agg(ids::text, '/' ORDER BY qid)) FROM (SELECT q.id AS qid, "
            f"array_agg(DISTINCT t.id ORDER BY t.id) AS ids FROM (SELECT id, unnest(body_lsh) k FROM t_minhash "
            f"WHERE {sample}) q JOIN (SELECT id, unnest(body_lsh) k FROM t_minhash) t ON t.k = q.k GROUP BY q.id) s"
        ).fetchone()[0]
        conn.execute("RESET ALL")
        lines.append(f"- {label}: {wrong} rows whose signature or band keys differ from minhash(body) / "
                     f"minhash_bands(); the index {'finds the same rows as a join of the keys without it' if by_index == by_scan else 'DIFFERS from a join of the keys without it'} "
                     f"for the band keys of {SAMPLE} rows (index used: {'yes' if 'Bitmap Index Scan' in plan else 'NO'}); "
                     f"md5 of the md5s of every row's signature and band keys in id order: `{digests[label]}`.")
    same = len(set(digests.values())) == 1
    lines.append(f"- {'Every build stored the same signatures and band keys.' if same else 'THE BUILDS STORED DIFFERENT VALUES.'}")
    return lines


def main():
    conns = {label: connect(port) for label, port in BUILDS}
    for label, conn in conns.items():
        progress(f"{label}: generating {ROWS:,} rows (tables.py, seed 1)")
        conn.execute("DROP TABLE IF EXISTS corpus, t_simhash, t_minhash")
        conn.execute("CREATE TABLE corpus (id bigint, lang text, body text)")
        with conn.cursor().copy("COPY corpus (id, lang, body) FROM STDIN") as cp:
            for i, (lang, body) in enumerate(generate(ROWS, 1), 1):
                cp.write_row((i, lang, body))
        conn.execute("VACUUM ANALYZE corpus")
    first = conns[BUILDS[0][0]]
    rows = describe_rows(first, "corpus")
    table_bytes = first.execute("SELECT pg_table_size('corpus')").fetchone()[0]
    loads = [load_avg()]

    progress(f"1. breakdown on {BUILDS[0][0]}")
    bd = breakdown(first)
    loads.append(load_avg())

    pairs = [(label, method) for label, _ in BUILDS for method in ("simhash", "minhash")]
    results = {p: [] for p in pairs}
    for r in range(ROUNDS):
        k = r % len(pairs)
        order = pairs[k:] + pairs[:k]
        if r % 2:
            order.reverse()
        for label, method in order:
            conn = conns[label]
            table = f"t_{method}"
            fresh_copy(conn, table)
            progress(f"2. round {r + 1}: {label}, {method}")
            wall, cpu, steps = attach(conn, table, method)
            size = conn.execute(f"SELECT pg_table_size('{table}'), pg_indexes_size('{table}')").fetchone()
            results[(label, method)].append({"wall": wall, "cpu": cpu, "steps": steps, "size": size})
            progress(f"   {wall:.1f} s (CPU {cpu:.1f} s): " + "; ".join(f"{n} {s:.1f}" for n, s in steps))
            loads.append(load_avg())

    progress("3. checks")
    try:
        check_lines = checks(conns)
    except psycopg.Error as e:  # the figures above are still reported
        check_lines = [f"- The checks failed: {e}"]

    lines = [
        "# MinHash attach beside SimHash attach (issue 36, item 5)",
        "",
        f"Output of `bash bench/minhash_attach.sh` (bench/minhash_attach.py), {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. "
        + MACHINE,
        f"Table: {rows_note(rows)}; {table_bytes / 1e6:,.0f} MB. Builds: "
        + ", ".join(f"{label} (port {port})" for label, port in BUILDS)
        + f". Load average during the run: {min(loads):.1f}–{max(loads):.1f} (2 cores, shared).",
        "",
        f"## 1. Where the time goes (on {BUILDS[0][0]})",
        "",
        "| query | 0 workers: s (CPU s) | 2 workers: s |",
        "| --- | ---: | ---: |",
    ]
    for expr in ("length(body)", "simhash(body)", "minhash(body)"):
        w0, c0 = bd["alone"][(expr, 0)]
        w2, _ = bd["alone"][(expr, 2)]
        lines.append(f"| `SELECT count({expr}) FROM corpus` | {w0:.1f} ({c0:.1f}) | {w2:.1f} |")
    lines += [
        "",
        f"GIN build of the band keys ({bd['keys'][0]:,} keys of {ROWS:,} rows; `CREATE INDEX ... USING gin (bands) "
        f"WITH (fastupdate = off)`, one process), rounds: {GIN_ROUNDS}:",
        "",
        "| maintenance_work_mem | s (each round) | backend CPU s | index MB |",
        "| --- | ---: | ---: | ---: |",
    ]
    for m in GIN_MWM:
        runs = bd["gin"][m]
        lines.append(f"| {m} | " + ", ".join(f"{x[0]:.1f}" for x in runs) + " | "
                     + ", ".join(f"{x[1]:.1f}" for x in runs) + f" | {runs[0][2] / 1e6:,.0f} |")
    lines += [
        "",
        "## 2. Attach, each on a fresh copy, the (build, method) order rotating",
        "",
        "| round | " + " | ".join(f"{label} SimHash s | {label} MinHash s | {label} MinHash / SimHash" for label, _ in BUILDS) + " |",
        "| ---: | " + " | ".join("---: | ---: | ---:" for _ in BUILDS) + " |",
    ]
    for r in range(ROUNDS):
        cells = []
        for label, _ in BUILDS:
            s, m = results[(label, "simhash")][r]["wall"], results[(label, "minhash")][r]["wall"]
            cells.append(f"{s:.1f} | {m:.1f} | {m / s:.1f}×")
        lines.append(f"| {r + 1} | " + " | ".join(cells) + " |")
    cells = []
    for label, _ in BUILDS:
        s = median([x["wall"] for x in results[(label, "simhash")]])
        m = median([x["wall"] for x in results[(label, "minhash")]])
        ratio = median([mm["wall"] / ss["wall"] for ss, mm in zip(results[(label, "simhash")], results[(label, "minhash")])])
        cells.append(f"{s:.1f} | {m:.1f} | {ratio:.1f}×")
    lines.append("| median | " + " | ".join(cells) + " |")
    lines += ["", "Backend CPU seconds (parallel workers not counted), and sizes after attach (table / indexes MB):", ""]
    for label, _ in BUILDS:
        for method in ("simhash", "minhash"):
            res = results[(label, method)]
            lines.append(f"- {label}, {method}: CPU " + ", ".join(f"{x['cpu']:.1f}" for x in res)
                         + f" s; {res[0]['size'][0] / 1e6:,.0f} / {res[0]['size'][1] / 1e6:,.0f} MB")
    lines += ["", "Steps of each attach, best round (from simhash_attach()'s DEBUG messages):", "",
              "| build, method | wall s | steps, s |", "| --- | ---: | --- |"]
    for label, _ in BUILDS:
        for method in ("simhash", "minhash"):
            best = min(results[(label, method)], key=lambda x: x["wall"])
            lines.append(f"| {label}, {method} | {best['wall']:.1f} | "
                         + "; ".join(f"{n} {s:.1f}" for n, s in best["steps"]) + " |")
    lines += ["", "## 3. Checks", ""] + check_lines + [""]
    text = "\n".join(lines)
    with open(os.path.join(RESULTS, RESULT), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
