"""Shared by the table benchmarks (write_cost.py, lookup.py): rows of real text, and timing of the
PostgreSQL backend that runs a statement.

Rows. The distinct paragraphs of the corpus (data/paragraphs_*.txt) are short (median 18
characters in Chinese, 92 in English) and there are about 195,000 of them: too few and too short
for a table of a million documents. So a row is made of paragraphs of one language drawn at random
with replacement (seeded): Chinese with probability 0.3 (about its share of the paragraphs), at
least 3 paragraphs and at least 300 bytes of UTF-8, joined by a space. Paragraphs longer than 400
characters are left out, so that no single paragraph dominates a row's fingerprint (two rows sharing
one long paragraph would be near-duplicates of each other). Row i of a seed is the same in every run
on the same corpus; the 1,000,000 rows of seed 1 are all distinct.
"""

import math
import os
import random
import time

from common import DATA, LANGS, read_lines

MAX_PARAGRAPH = 400  # characters
MIN_PARAGRAPHS = 3
MIN_BYTES = 300
ZH_SHARE = 0.3
HZ = os.sysconf("SC_CLK_TCK")

_POOLS = {}


def pools():
    if not _POOLS:
        for lang in LANGS:
            _POOLS[lang] = [p for p in read_lines(os.path.join(DATA, f"paragraphs_{lang}.txt"))
                            if 0 < len(p) <= MAX_PARAGRAPH]
    return _POOLS


def generate(n, seed, stats=None):
    """n rows as (lang, text), the same for the same seed. With a dict `stats`, also counts the
    paragraphs used: stats["parts"] (in all rows) and stats["distinct"] (different ones)."""
    pool = pools()
    rng = random.Random(seed)
    used = set() if stats is not None else None
    parts_total = 0
    for _ in range(n):
        lang = "zh" if rng.random() < ZH_SHARE else "en"
        paras = pool[lang]
        parts, size = [], 0
        while size < MIN_BYTES or len(parts) < MIN_PARAGRAPHS:
            i = rng.randrange(len(paras))
            parts.append(paras[i])
            size += len(paras[i].encode()) + 1
            if used is not None:
                used.add((lang, i))
        parts_total += len(parts)
        yield lang, " ".join(parts)
    if stats is not None:
        stats["parts"] = parts_total
        stats["distinct"] = len(used)


def load_avg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def describe_rows(conn, table):
    """Row count, mean characters and bytes, median and 99th percentile of characters, Chinese share."""
    n, chars, nbytes, p50, p99, zh = conn.execute(
        f"SELECT count(*), avg(length(body)), avg(octet_length(body)), "
        f"percentile_disc(0.5) WITHIN GROUP (ORDER BY length(body)), "
        f"percentile_disc(0.99) WITHIN GROUP (ORDER BY length(body)), avg((lang = 'zh')::int) FROM {table}").fetchone()
    return {"rows": n, "chars": float(chars), "bytes": float(nbytes), "p50": p50, "p99": p99, "zh": float(zh)}


def rows_note(d):
    return (f"{d['rows']:,} rows, {d['chars']:.0f} characters ({d['bytes']:.0f} bytes of UTF-8) on average "
            f"(median {d['p50']}, 99th percentile {d['p99']} characters), {100 * d['zh']:.0f}% Chinese")


def backend_cpu(pid):
    """utime + stime of a backend, in seconds (10 ms ticks)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / HZ


class Timed:
    """Wall-clock seconds of a block and CPU seconds used meanwhile by the connection's backend."""

    def __init__(self, conn):
        self.pid = conn.info.backend_pid

    def __enter__(self):
        self.cpu0 = backend_cpu(self.pid)
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.t0
        self.cpu = backend_cpu(self.pid) - self.cpu0


def percentile(values, q):
    """The q-quantile (0..1) of a list, nearest rank (the value of a real query, not an interpolation)."""
    v = sorted(values)
    if not v:
        return float("nan")
    return v[min(len(v) - 1, max(0, math.ceil(q * len(v)) - 1))]

