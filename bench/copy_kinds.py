"""Recall per kind of copy, with each method's defaults as an 'error' attachment judges a write
(issue 50, row 8): for real documents (corpus.py, boilerplate removed) and one copy of each kind,
the share of copies that simhash_compare() calls a near-duplicate of their original, for a SimHash
and a MinHash attachment with the defaults (verified). Kinds: those of evalset.py (word edits,
reorder, header and footer, formatting) and excerpts (the text without one fifth of its sentences,
or without two fifths).

    python3 bench/copy_kinds.py [--docs 200]     # server of common.py's PORT, extension installed

Writes bench/results/copy_kinds.md.
"""

import argparse
import random
import re
import subprocess

import corpus
from common import connect, md_table, progress, write_result
from evalset import Editor

SENTENCE = re.compile(r"(?<=[.!?。！？；;])\s*")


def excerpt(text, rng, drop):
    """The text without `drop` fifths of its sentences (one contiguous run of them)."""
    sents = [s for s in SENTENCE.split(text) if s.strip()]
    if len(sents) < 5:
        return None
    n = len(sents)
    cut = max(1, round(n * drop / 5))
    at = rng.randrange(n - cut + 1)
    return " ".join(sents[:at] + sents[at + cut :])


KINDS = ["format", "edit2", "edit5", "edit10", "reorder", "boilerplate", "excerpt 4/5", "excerpt 3/5"]


def make_copies(lang, ndocs):
    """(documents, {kind: [(copy, original)]}): `ndocs` real documents of five sentences or more,
    and one copy of each of them of each kind (fixed seeds: the same on every run)."""
    c = corpus.Corpus(lang)
    docs = [d for _, d in c.documents(seed=7, drop_boilerplate=True)]
    random.Random(11).shuffle(docs)
    ed = Editor(lang, docs[:2000], seed=13)
    picked = []
    for d in docs:
        d = corpus.one_line(d)
        if excerpt(d, random.Random(0), 1) is not None:
            picked.append(d)
        if len(picked) == ndocs:
            break
    progress(f"{lang}: {len(picked)} documents with 5 sentences or more")
    copies = {}
    for kind in KINDS:
        out = []
        for d in picked:
            if kind.startswith("excerpt"):
                copy = excerpt(d, ed.rng, 5 - int(kind[-3]))
            else:
                copy = ed.copy(kind, d, c.boilerplate)
            out.append((copy, d))
        copies[kind] = out
    return picked, copies


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=200)
    args = ap.parse_args()
    conn = connect()
    conn.execute("DROP TABLE IF EXISTS kinds_s, kinds_m")
    conn.execute("CREATE TABLE kinds_s (id int PRIMARY KEY, body text)")
    conn.execute("CREATE TABLE kinds_m (id int PRIMARY KEY, body text)")
    conn.execute("SELECT simhash_attach('kinds_s', 'body', on_duplicate => 'error')")
    conn.execute("SELECT simhash_attach('kinds_m', 'body', method => 'minhash', on_duplicate => 'error')")
    rows = []
    for lang in ("zh", "en"):
        _, copies = make_copies(lang, args.docs)
        for kind in KINDS:
            found = {"kinds_s": 0, "kinds_m": 0}
            for copy, d in copies[kind]:
                for table in found:
                    (near,) = conn.execute(
                        f"SELECT near_duplicate FROM simhash_compare('{table}', %s, %s)", (copy, d)
                    ).fetchone()
                    found[table] += bool(near)
            n = len(copies[kind])
            rows.append([kind, lang, f"{found['kinds_s'] / n:.3f}", f"{found['kinds_m'] / n:.3f}"])
            progress(f"{lang} {kind}: {rows[-1][2]} / {rows[-1][3]}")
    conn.execute("DROP TABLE kinds_s, kinds_m")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    text = (
        f"# Recall per kind of copy (commit {commit})\n\n"
        f"`python3 bench/copy_kinds.py --docs {args.docs}`: the share of copies that an 'error' attachment with "
        "each method's defaults (verified) calls a near-duplicate of their original (`simhash_compare`).\n\n"
        + md_table(["kind of copy", "lang", "SimHash (defaults)", "MinHash (defaults)"], rows)
    )
    write_result("copy_kinds.md", text)
    print(text)


if __name__ == "__main__":
    main()
