"""Helpers shared by the benchmark scripts: paths, the database connection, progress, tables."""

import os
import sys
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(BENCH, "data")
RESULTS = os.path.join(BENCH, "results")
PORT = int(os.environ.get("BENCH_PORT", "54340"))
DSN = f"host=/tmp port={PORT} user=postgres dbname=postgres"
LANGS = ("zh", "en")
LANG_NAME = {"zh": "Chinese", "en": "English"}

_T0 = time.time()


def progress(msg):
    print(f"[{time.time() - _T0:6.1f}s] {msg}", file=sys.stderr, flush=True)


def connect():
    import psycopg

    return psycopg.connect(DSN, autocommit=True)


def read_lines(path):
    """The documents of a one-document-per-line file (split on \\n only, as Rust and ClickHouse do)."""
    with open(path, encoding="utf-8") as f:
        data = f.read()
    lines = data.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def copy_rows(conn, table, columns, rows):
    with conn.cursor() as cur:
        with cur.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as cp:
            for r in rows:
                cp.write_row(r)


def md_table(header, rows, align=None):
    """A Markdown table; numbers right-aligned unless `align` says otherwise."""
    cells = [[str(c) for c in r] for r in rows]
    widths = [max([3, len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(header)]
    if align is None:
        align = ["l"] + ["r"] * (len(header) - 1)

    def line(vals):
        out = []
        for v, w, a in zip(vals, widths, align):
            out.append(v.rjust(w) if a == "r" else v.ljust(w))
        return "| " + " | ".join(out) + " |"

    sep = "| " + " | ".join(("-" * (w - 1) + ":") if a == "r" else "-" * w for w, a in zip(widths, align)) + " |"
    return "\n".join([line(header), sep] + [line(r) for r in cells])


def write_result(name, text):
    os.makedirs(RESULTS, exist_ok=True)
    path = os.path.join(RESULTS, name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text.rstrip() + "\n")
    return path
