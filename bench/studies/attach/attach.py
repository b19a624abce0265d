"""simhash_attach() of a million rows, before and after the one-rewrite attach (issue 10, item 4),
side by side in one run. Run by attach.sh beside it; writes attach.md there.

The table: ROWS rows of real text made as in tables.py (seed 1: paragraphs of one language, at least
300 bytes, 30 % Chinese), an id primary key, vacuumed. For each round, a fresh copy of it is attached
by (a) attach_before.simhash_attach() (the code of commit 11d0355, bench/studies/attach/attach_before.sql) and by (b)
the extension's simhash_attach(), in alternating order, with the default options; the copy is
vacuumed and a CHECKPOINT taken before each timed call. (b) is split into its steps by the DEBUG
messages it raises; (a) once by running its statements one by one. Also in the same run: the
fingerprinting alone (`SELECT count(simhash(body))` with 0 and 2 parallel workers) and the scan
alone (`count(length(body))`), so the attach time can be projected for a faster simhash().
Afterwards both tables are compared row by row, and (b)'s against simhash() and simhash_band().
"""

import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))  # bench/studies/attach: the result goes here
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))  # bench: common.py, tables.py
from common import connect, progress  # noqa: E402
from tables import Timed, describe_rows, generate, load_avg, rows_note  # noqa: E402

ROWS = int(os.environ.get("BENCH_ATTACH_ROWS", "1000000"))
ROUNDS = int(os.environ.get("BENCH_ATTACH_ROUNDS", "3"))
RESULT = os.environ.get("BENCH_ATTACH_RESULT", "attach.md")
MACHINE = os.environ.get("BENCH_ATTACH_MACHINE", "")
BAND_COLUMNS = ", ".join(f"body_band{i}" for i in range(4))


def sizes(conn, table):
    return conn.execute(f"SELECT pg_table_size('{table}'), pg_indexes_size('{table}')").fetchone()


def mb(n):
    return f"{n / 1e6:,.0f}"


def fresh_copy(conn, table):
    conn.execute(f"DROP TABLE IF EXISTS {table}")
    conn.execute(f"CREATE TABLE {table} AS SELECT * FROM corpus")
    conn.execute(f"ALTER TABLE {table} ADD PRIMARY KEY (id)")
    conn.execute(f"VACUUM ANALYZE {table}")
    conn.execute("CHECKPOINT")


def attach(conn, function, table):
    """Wall seconds of one attach, the backend's CPU seconds, and the steps (from DEBUG messages)."""
    marks = []
    handler = lambda diag: marks.append((time.perf_counter(), diag.message_primary))  # noqa: E731
    conn.add_notice_handler(handler)
    conn.execute("SET client_min_messages = debug1")
    try:
        with Timed(conn) as t:
            t0 = time.perf_counter()
            conn.execute(f"SELECT {function}('{table}', 'body')")
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


def old_steps(conn, table):
    """(a)'s statements one by one (attach_before.simhash_fill() unrolled), with their seconds."""
    out = []
    opts = "'bigram', 1, 'logtf', true, 'auto'"

    def step(name, *sql):
        t0 = time.perf_counter()
        for s in sql:
            conn.execute(s)
        out.append((name, time.perf_counter() - t0))

    conn.execute("BEGIN")
    step("ADD COLUMN body_simhash", f"ALTER TABLE {table} ADD COLUMN body_simhash bigint")
    conn.execute("SET LOCAL parallel_setup_cost = 0")
    conn.execute("SET LOCAL parallel_tuple_cost = 0")
    conn.execute("SET LOCAL min_parallel_table_scan_size = 0")
    step("parallel CREATE TEMP TABLE AS SELECT ctid, simhash(body)",
         f"CREATE TEMP TABLE simhash_attach_fill AS SELECT ctid AS row_id, simhash(body, {opts}) AS fp FROM ONLY {table}")
    step("UPDATE ... FROM the temp table",
         f"UPDATE ONLY {table} t SET body_simhash = f.fp FROM simhash_attach_fill f "
         f"WHERE t.ctid = f.row_id AND t.body_simhash IS DISTINCT FROM f.fp", "DROP TABLE simhash_attach_fill")
    size = sizes(conn, table)[0]
    step("ADD COLUMN band0..3 GENERATED (table rewrite)",
         f"ALTER TABLE {table} " + ", ".join(
             f"ADD COLUMN body_band{i} int GENERATED ALWAYS AS (simhash_band(body_simhash, {i}, 4)) STORED"
             for i in range(4)))
    step("4 × CREATE INDEX (band) INCLUDE (fp)",
         *[f"CREATE INDEX ON {table} (body_band{i}) INCLUDE (body_simhash)" for i in range(4)])
    conn.execute("ROLLBACK")
    return out, size


def main():
    conn = connect()
    progress(f"generating {ROWS:,} rows (tables.py, seed 1)")
    conn.execute("DROP TABLE IF EXISTS corpus")
    conn.execute("CREATE TABLE corpus (id bigint, lang text, body text)")
    with conn.cursor().copy("COPY corpus (id, lang, body) FROM STDIN") as cp:
        for i, (lang, body) in enumerate(generate(ROWS, 1), 1):
            cp.write_row((i, lang, body))
    conn.execute("VACUUM ANALYZE corpus")
    rows = describe_rows(conn, "corpus")
    table_bytes = sizes(conn, "corpus")[0]
    conn.execute("DROP SCHEMA IF EXISTS attach_before CASCADE")
    with open(os.path.join(os.path.dirname(__file__), "attach_before.sql")) as f:
        conn.execute(f.read())
    loads = [load_avg()]

    progress("fingerprinting alone: count(simhash(body)) with 0 and 2 workers; the scan alone")
    conn.execute("SET parallel_setup_cost = 0")
    conn.execute("SET parallel_tuple_cost = 0")
    conn.execute("SET min_parallel_table_scan_size = 0")
    alone = {}
    conn.execute("SELECT count(length(body)) FROM corpus")  # into shared buffers
    for workers in (0, 2):
        conn.execute(f"SET max_parallel_workers_per_gather = {workers}")
        for what, expr in (("count(length(body))", "length(body)"), ("count(simhash(body))", "simhash(body)")):
            with Timed(conn) as t:
                conn.execute(f"SELECT count({expr}) FROM corpus")
            alone[(what, workers)] = (t.wall, t.cpu)
    conn.execute("RESET ALL")

    results = {"a": [], "b": []}
    for r in range(ROUNDS):
        order = ("a", "b") if r % 2 == 0 else ("b", "a")
        for variant in order:
            table = f"t_{variant}"
            fresh_copy(conn, table)
            before = sizes(conn, table)
            function = "attach_before.simhash_attach" if variant == "a" else "simhash_attach"
            progress(f"round {r + 1}: ({variant}) {function}")
            wall, cpu, steps = attach(conn, function, table)
            after = sizes(conn, table)
            results[variant].append({"wall": wall, "cpu": cpu, "steps": steps, "before": before, "after": after})
            progress(f"  {wall:.1f} s")
            loads.append(load_avg())

    progress("checking: (a) and (b) store the same values; (b)'s equal simhash() and simhash_band()")
    differ = conn.execute(
        f"SELECT count(*) FROM t_a a FULL JOIN t_b b USING (id) "
        f"WHERE (a.body_simhash, {', '.join('a.' + c for c in BAND_COLUMNS.split(', '))}) IS DISTINCT FROM "
        f"(b.body_simhash, {', '.join('b.' + c for c in BAND_COLUMNS.split(', '))})").fetchone()[0]
    wrong = conn.execute(
        "SELECT count(*) FROM t_b WHERE body_simhash IS DISTINCT FROM simhash(body) OR "
        + " OR ".join(f"body_band{i} IS DISTINCT FROM simhash_band(body_simhash, {i}, 4)" for i in range(4))
    ).fetchone()[0]
    nulls = conn.execute("SELECT count(*) FROM t_b WHERE body_simhash IS NULL").fetchone()[0]

    progress("(a) step by step, once")
    fresh_copy(conn, "t_a")
    a_steps, a_updated_size = old_steps(conn, "t_a")
    conn.execute("DROP TABLE IF EXISTS t_a, t_b")

    a = [x["wall"] for x in results["a"]]
    b = [x["wall"] for x in results["b"]]
    fp0 = alone[("count(simhash(body))", 0)][0]
    fp2 = alone[("count(simhash(body))", 2)][0]
    scan0 = alone[("count(length(body))", 0)][0]
    best_b = min(results["b"], key=lambda x: x["wall"])
    lines = [
        "# simhash_attach of a million rows: before and after the one-rewrite attach",
        "",
        "Output of `bash bench/studies/attach/attach.sh` (bench/studies/attach/attach.py). " + MACHINE,
        f"Table: {rows_note(rows)}; {mb(table_bytes)} MB. Default options (bigram, logtf, stop words, "
        f"fold auto), max_distance 7, on_duplicate 'none'. Load average during the run: "
        f"{min(loads):.1f}–{max(loads):.1f}.",
        "",
        "## Attach, alternating (a) and (b), fresh copy of the table each time",
        "",
        "| round | (a) before: UPDATE + rewrite, s | (b) one rewrite, s | (a) / (b) |",
        "| ---: | ---: | ---: | ---: |",
    ]
    for r in range(ROUNDS):
        lines.append(f"| {r + 1} | {a[r]:.1f} | {b[r]:.1f} | {a[r] / b[r]:.2f}× |")
    lines += [
        f"| best | {min(a):.1f} | {min(b):.1f} | {min(a) / min(b):.2f}× |",
        "",
        f"CPU seconds of the backend alone (parallel workers not counted): (a) "
        + ", ".join(f"{x['cpu']:.1f}" for x in results["a"]) + "; (b) "
        + ", ".join(f"{x['cpu']:.1f}" for x in results["b"]) + ".",
        "",
        "| sizes, MB | table | indexes |",
        "| --- | ---: | ---: |",
        f"| before attach (primary key only) | {mb(results['a'][0]['before'][0])} | {mb(results['a'][0]['before'][1])} |",
        f"| (a) after the UPDATE, before its rewrite | {mb(a_updated_size)} | |",
        f"| (a) after attach | {mb(results['a'][0]['after'][0])} | {mb(results['a'][0]['after'][1])} |",
        f"| (b) after attach | {mb(results['b'][0]['after'][0])} | {mb(results['b'][0]['after'][1])} |",
        "",
        "## Steps",
        "",
        "(b), its best round, from the DEBUG messages of simhash_attach():",
        "",
        "| step | s |",
        "| --- | ---: |",
    ]
    lines += [f"| {name} | {s:.1f} |" for name, s in best_b["steps"]]
    lines += [
        "",
        "(a), its statements run one by one on a fresh copy (then rolled back):",
        "",
        "| step | s |",
        "| --- | ---: |",
    ]
    lines += [f"| {name} | {s:.1f} |" for name, s in a_steps]
    lines += [
        "",
        "## The fingerprinting alone, same table, same run",
        "",
        "| query | 0 workers, s | 2 workers, s |",
        "| --- | ---: | ---: |",
    ]
    for what in ("count(length(body))", "count(simhash(body))"):
        lines.append(f"| `SELECT {what} FROM corpus` | {alone[(what, 0)][0]:.1f} | {alone[(what, 2)][0]:.1f} |")
    lines += [
        "",
        f"simhash() costs {fp0 - scan0:.1f} s of one core over the scan ({mb(table_bytes)} MB at "
        f"{table_bytes / 1e6 / fp0:.1f} MB/s with the scan). (b)'s best round spent "
        f"{dict(best_b['steps']).get('fingerprinting', float('nan')):.1f} s in its parallel fingerprinting step "
        f"(count(simhash(body)) with 2 workers: {fp2:.1f} s) and {min(b) - dict(best_b['steps']).get('fingerprinting', 0):.1f} s "
        "in everything else, which does not depend on simhash()'s speed.",
        "",
        f"Checks: (a) and (b) stored the same fingerprint and bands in {rows['rows'] - differ:,} of {rows['rows']:,} "
        f"rows ({differ} differ); (b)'s fingerprints and bands differ from simhash(body) / simhash_band() in "
        f"{wrong} rows ({nulls} NULL fingerprints).",
        "",
    ]
    text = "\n".join(lines)
    with open(os.path.join(HERE, RESULT), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
