"""What planted rows cost other sessions (issue 49, attack 3): a victim's INSERT of a short text,
its lookup, and simhash_pairs, on a table with and without planted rows whose fingerprint (SimHash)
or signature (MinHash) equals the victim text's and whose text shares none of its words: two rows of
S MB each (--sizes), or N distinct rows of about 200 bytes (--many).

The planted rows are written by the table's owner with the triggers off, their sketch column set to
the victim text's: the worst an attacker can reach (an INSERT-only writer gets there with texts
built to collide). Each figure is taken on the plain table and on the planted one in the same run,
interleaved, in fresh backends; memory is the backend's peak resident set (VmHWM) after the
measured statements minus before them.

    BENCH_PORT=P python3 bench/huge_rows.py [--sizes 50,500] [--many 1000,5000] [--runs 30]
"""

import argparse
import statistics
import time

from common import connect, md_table, progress, write_result

VICTIM = "The harbour ferry to the island now leaves every forty minutes, from seven in the morning."
FILLER = "quartz lantern meadow copper violin "  # no word of the victim text


def hwm_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def setup(conn, method, plant):
    """The table of `method` with `plant` planted: None, ("huge", MB) or ("many", N)."""
    name = f"huge_{method}" + (f"_{plant[0]}_{plant[1]}" if plant else "")
    with conn.cursor() as cur:
        cur.execute(f"DROP TABLE IF EXISTS {name}")
        cur.execute(f"CREATE TABLE {name} (id int PRIMARY KEY, body text)")
        cur.execute(f"INSERT INTO {name} SELECT g, 'Row ' || g || ' of unrelated text about item ' || g * 7 "
                    f"|| ' in the catalogue.' FROM generate_series(1, 1000) g")
        cur.execute("SELECT simhash_attach(%s, 'body', method => %s, on_duplicate => 'error')", (name, method))
        cur.execute("SELECT fingerprint_column FROM simhash_attachments() WHERE table_name = %s::regclass",
                    (name,))
        column = cur.fetchone()[0]
        if plant:
            # The victim text's sketch, as the trigger computes it: from a row written and rolled back.
            cur.execute("BEGIN")
            cur.execute(f"INSERT INTO {name} VALUES (0, %s) RETURNING {column}", (VICTIM,))
            sketch = cur.fetchone()[0]
            cur.execute("ROLLBACK")
            cur.execute("SET session_replication_role = replica")
            if plant[0] == "huge":
                reps = plant[1] * 1024 * 1024 // len(FILLER)
                for i, rid in enumerate((1_000_001, 1_000_002)):
                    cur.execute(f"INSERT INTO {name} (id, body, {column}) VALUES (%s, repeat(%s, %s) || %s, %s)",
                                (rid, FILLER, reps, f" planted {i}", sketch))
            else:
                # N distinct texts of about 200 bytes, none of the victim's words.
                cur.execute(f"INSERT INTO {name} (id, body, {column}) SELECT 1000000 + g, "
                            f"'planted ' || g || ' ' || repeat(%s, 5) || ' number ' || g * 13, %s "
                            f"FROM generate_series(1, %s) g", (FILLER, sketch, plant[1]))
            cur.execute("RESET session_replication_role")
        cur.execute(f"ANALYZE {name}")
    return name


def measure(table, runs):
    """(median INSERT ms, lookup ms, pairs ms, peak memory kB) in a fresh backend."""
    conn = connect()
    with conn.cursor() as cur:
        cur.execute("SELECT pg_backend_pid()")
        pid = cur.fetchone()[0]
        cur.execute("SELECT 1")
        before = hwm_kb(pid)
        times = []
        for _ in range(runs):
            cur.execute("BEGIN")
            t = time.perf_counter()
            cur.execute(f"INSERT INTO {table} VALUES (0, %s)", (VICTIM,))
            times.append((time.perf_counter() - t) * 1000)
            cur.execute("ROLLBACK")
        t = time.perf_counter()
        cur.execute(f"SELECT count(*) FROM simhash_near_duplicates(NULL::{table}, %s)", (VICTIM,))
        cur.fetchone()
        lookup = (time.perf_counter() - t) * 1000
        write_peak = hwm_kb(pid) - before
        t = time.perf_counter()
        cur.execute("SELECT count(*) FROM simhash_pairs(%s)", (table,))
        npairs = cur.fetchone()[0]
        pairs = (time.perf_counter() - t) * 1000
        pairs_peak = hwm_kb(pid) - before
    conn.close()
    return statistics.median(times), lookup, write_peak, pairs, pairs_peak, npairs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="50,500")
    ap.add_argument("--many", default="1000,5000")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    plants = [("huge", int(x)) for x in args.sizes.split(",") if x] + \
             [("many", int(x)) for x in args.many.split(",") if x]
    conn = connect()
    with conn.cursor() as cur:
        cur.execute("SELECT extversion FROM pg_extension WHERE extname = 'simhash_ext'")
        version = cur.fetchone()[0]
        cur.execute("SHOW server_version")
        server = cur.fetchone()[0]
    rows = []
    for method in ("simhash", "minhash"):
        plain = setup(conn, method, None)
        for plant in plants:
            label = f"2 × {plant[1]} MB" if plant[0] == "huge" else f"{plant[1]:,} × 0.2 kB"
            progress(f"{method}: planting {label}")
            planted = setup(conn, method, plant)
            got = {plain: [], planted: []}
            for _ in range(args.rounds):  # interleaved
                for table in (plain, planted):
                    got[table].append(measure(table, args.runs))
            best = {t: [min(r[i] for r in got[t]) for i in range(6)] for t in got}
            a, b = best[plain], best[planted]
            rows.append([method, label,
                         f"{a[0]:.2f} ms", f"{b[0]:.2f} ms", f"{b[0] / a[0]:.2f}",
                         f"{a[1]:.2f} ms", f"{b[1]:.2f} ms",
                         f"{a[2] / 1024:.1f} MB", f"{b[2] / 1024:.1f} MB",
                         f"{a[3]:.0f} ms", f"{b[3]:.0f} ms", f"{b[4] / 1024:.0f} MB", int(b[5])])
            with conn.cursor() as cur:
                cur.execute(f"DROP TABLE {planted}")
        with conn.cursor() as cur:
            cur.execute(f"DROP TABLE {plain}")
    header = ["method", "planted rows", "INSERT plain", "INSERT planted", "ratio", "lookup plain",
              "lookup planted", "memory plain", "memory planted", "pairs plain", "pairs planted",
              "pairs memory planted", "pairs found"]
    text = (f"# Planted rows (bench/huge_rows.py)\n\nsimhash_ext {version}, PostgreSQL {server}; "
            f"best of {args.rounds} interleaved rounds, each the median of {args.runs} INSERTs rolled "
            f"back. The planted rows share the victim text's sketch and none of its words.\n\n"
            + md_table(header, rows) + "\n")
    print(text)
    write_result("huge_rows.md", text)


if __name__ == "__main__":
    main()
