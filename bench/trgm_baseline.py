"""What a PostgreSQL user can build from contrib alone, beside simhash_ext (issue 51, item 3): the
race-free near-duplicate constraint `EXCLUDE USING gist (body gist_trgm_ops WITH %)` of pg_trgm,
against `simhash_attach(..., on_duplicate => 'error')` of both methods, in the same run:

* build: adding the constraint (or attaching) to a table of N unrelated real paragraphs
  (100-250 characters, English), as far as it finishes within --timeout seconds;
* write: a single-row INSERT of a new unrelated paragraph into each table of N rows (mean of
  --inserts, each its own transaction, the tables taken in turn);
* accuracy: on the copies of bench/copy_kinds.py (200 documents per language), the share of each
  kind that pg_trgm's `%` catches at its usual thresholds (0.3, its default, and 0.5), and the
  unrelated pairs among the documents that it would reject.

    BENCH_PORT=P python3 bench/trgm_baseline.py [--sizes 1000,2000,5000] [--timeout 300]

The server needs pg_trgm and simhash_ext. Writes bench/results/trgm_baseline.md.
"""

import argparse
import itertools
import subprocess
import time

import corpus
from common import connect, md_table, progress, write_result
from copy_kinds import KINDS, make_copies


def paragraphs(n):
    """`n` distinct English paragraphs of 100-250 characters, at most 3 of a source file (the
    Chinese sources are too few), boilerplate left out."""
    c = corpus.Corpus("en")
    out, seen = [], set()
    for _, paras in c.sources:
        taken = 0
        for p in paras:
            p = corpus.one_line(p)
            if taken < 3 and 100 <= len(p) <= 250 and p not in seen and corpus.is_language(p, "en") \
                    and corpus.boilerplate_key(p) not in c.boiler_keys:
                seen.add(p)
                out.append(p)
                taken += 1
        if len(out) >= n:
            break
    return out[:n]


def unrelated(conn, texts):
    """`texts` less every one that pg_trgm's `%` (threshold 0.5) finds similar to an earlier one:
    paragraphs of one manual can share most of their trigrams, and the constraint refuses them."""
    conn.execute("CREATE TEMP TABLE cand (id int PRIMARY KEY, body text)")
    with conn.cursor() as cur, cur.copy("COPY cand (id, body) FROM STDIN") as cp:
        for i, p in enumerate(texts):
            cp.write_row((i, p))
    conn.execute("CREATE INDEX ON cand USING gist (body gist_trgm_ops)")
    conn.execute("DELETE FROM cand a USING cand b WHERE a.id > b.id AND a.body % b.body")
    kept = [r[0] for r in conn.execute("SELECT body FROM cand ORDER BY id")]
    conn.execute("DROP TABLE cand")
    return kept


def timed(conn, sql, timeout):
    conn.execute(f"SET statement_timeout = '{timeout}s'")
    t = time.perf_counter()
    try:
        conn.execute(sql)
        return f"{time.perf_counter() - t:.2f} s"
    except Exception as e:  # the timeout, or a near-duplicate among the rows
        return f"> {timeout} s" if "statement timeout" in str(e) else f"failed: {type(e).__name__}"
    finally:
        conn.execute("RESET statement_timeout")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,2000,5000")
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--inserts", type=int, default=30)
    ap.add_argument("--docs", type=int, default=200)
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    conn = connect()
    conn.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    conn.execute("SET pg_trgm.similarity_threshold = 0.5")
    texts = unrelated(conn, paragraphs(2 * (max(sizes) + args.inserts * len(sizes))))
    progress(f"{len(texts)} unrelated paragraphs")
    if len(texts) < max(sizes) + args.inserts * len(sizes):
        raise SystemExit(f"only {len(texts)} paragraphs on this machine: ask for smaller sizes")
    build_rows, write_rows = [], []
    spare = iter(texts[max(sizes):])
    tables = {"trgm": "pg_trgm EXCLUDE (%, 0.5)", "sim": "SimHash 'error'", "min": "MinHash 'error'"}
    for n in sizes:
        for t in tables:
            conn.execute(f"DROP TABLE IF EXISTS base_{t}")
            conn.execute(f"CREATE TABLE base_{t} (id int PRIMARY KEY, body text)")
            with conn.cursor() as cur, cur.copy(f"COPY base_{t} (id, body) FROM STDIN") as cp:
                for i, p in enumerate(texts[:n]):
                    cp.write_row((i, p))
        built = {
            "trgm": timed(conn, "ALTER TABLE base_trgm ADD CONSTRAINT near EXCLUDE USING gist (body gist_trgm_ops WITH %)", args.timeout),
            "sim": timed(conn, "SELECT simhash_attach('base_sim', 'body', on_duplicate => 'error')", args.timeout),
            "min": timed(conn, "SELECT simhash_attach('base_min', 'body', method => 'minhash', on_duplicate => 'error')", args.timeout),
        }
        build_rows.append([n] + [built[t] for t in tables])
        progress(f"build at {n}: {built}")
        cost = {t: [] for t in tables}
        for k in range(args.inserts):
            p = next(spare)
            for t in tables:
                if not built[t].endswith(" s") or built[t].startswith(">"):
                    continue
                t0 = time.perf_counter()
                try:
                    conn.execute(f"INSERT INTO base_{t} VALUES (%s, %s)", (n + k, p))
                except Exception:
                    pass
                cost[t].append(time.perf_counter() - t0)
        write_rows.append([n] + [f"{1000 * sum(c) / len(c):.2f} ms" if c else "—" for c in cost.values()])
        progress(f"writes at {n}: {write_rows[-1]}")
    for t in tables:
        conn.execute(f"DROP TABLE IF EXISTS base_{t}")

    acc_rows, unrelated_rows = [], []
    for lang in ("zh", "en"):
        docs, copies = make_copies(lang, args.docs)
        for kind in KINDS:
            sims = [conn.execute("SELECT similarity(%s, %s)", pair).fetchone()[0] for pair in copies[kind]]
            acc_rows.append([kind, lang] + [f"{sum(s >= th for s in sims) / len(sims):.3f}" for th in (0.3, 0.5)])
        pairs = list(itertools.combinations(docs, 2))
        sims = [conn.execute("SELECT similarity(%s, %s)", pair).fetchone()[0] for pair in pairs]
        unrelated_rows.append([lang, len(pairs)] + [sum(s >= th for s in sims) for th in (0.3, 0.5)])
        progress(f"{lang}: accuracy done")

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    text = "\n\n".join([
        f"# pg_trgm's exclusion constraint beside simhash_ext (commit {commit})",
        f"`python3 bench/trgm_baseline.py --sizes {args.sizes} --timeout {args.timeout} --inserts {args.inserts}`",
        "Build: the constraint added to (or the column attached on) a table of N unrelated paragraphs.",
        md_table(["rows"] + list(tables.values()), build_rows),
        "Single-row INSERT of a new unrelated paragraph, each its own transaction (mean).",
        md_table(["rows"] + list(tables.values()), write_rows),
        "Share of each kind of copy that `%` catches (similarity at least the threshold).",
        md_table(["kind of copy", "lang", "pg_trgm 0.3", "pg_trgm 0.5"], acc_rows),
        "Unrelated document pairs (all pairs of the documents) that `%` would call near-duplicates.",
        md_table(["lang", "pairs", "pg_trgm 0.3", "pg_trgm 0.5"], unrelated_rows),
    ])
    write_result("trgm_baseline.md", text)
    print(text)


if __name__ == "__main__":
    main()
