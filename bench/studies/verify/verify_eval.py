#!/usr/bin/env python3
"""Verification of sketch candidates by the exact shingle Jaccard (issue 43): recall, precision at
scale and cost, computed by the core crate (core/examples/verify_eval.rs, `simhash_core::verify`).

Pairs: the same near-duplicate pairs as bench/studies/minhash/minhash_eval.py (its long_positives and
short_positives, same seeds: documents of 300-3000 characters, 200 per tier and language; short
texts of 20-199 characters, 400 per tier and language).

Methods at their defaults:

* SimHash: a candidate when the Hamming distance of the default fingerprints is <= 7
  (`max_distance` 7); verified when also the shingle Jaccard J (verify::for_simhash) >= t.
* MinHash: a candidate when the signatures share one of 32 bands of 4 rows; unverified (0.9.0 /
  0.10.0) found when the estimate (share of equal values of 128) >= 0.5; verified when the exact J
  of the MinHash shingle sets >= t (the estimate is not used).

Precision at scale: all pairs of populations of documents and short texts per language
(spread.populations: every Chinese document, a sample of English ones, up to 30,000 short texts).
A pair is *unrelated* when its character 5-gram Jaccard (lowercased, whitespace removed) is < 0.1,
a definition on the texts, independent of either method. Counted among all unrelated pairs: the
sketch's matches, how many pass verification at each t, and the tail of J.
Per lookup at N rows = N x (unrelated pairs that pass / unrelated pairs).

    CARGO_TARGET_DIR=target cargo build --release -p simhash_core --example verify_eval
    python3 bench/studies/verify/verify_eval.py           # writes verify_accuracy.md beside it
    python3 bench/studies/verify/verify_eval.py --reuse   # report again from bench/data/verify/*.out
"""
import math
import os
import random
import re
import subprocess
import sys
import time
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))  # bench/studies/verify: the results go here
BENCH = os.path.dirname(os.path.dirname(HERE))  # bench: corpus.py, evalset.py, data/
sys.path.insert(0, BENCH)
sys.path.insert(0, os.path.join(BENCH, "studies", "spread"))
sys.path.insert(0, os.path.join(BENCH, "studies", "minhash"))
sys.path.insert(0, HERE)
import minhash_eval as me  # noqa: E402
import spread  # noqa: E402
import zh_extra  # noqa: E402
from corpus import one_line  # noqa: E402

ROOT = os.path.dirname(BENCH)
DATA = os.path.join(BENCH, "data", "verify")
RESULTS = HERE
EXE = os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "release", "examples",
                   "verify_eval")
SEED = 43
EN_DOCS = int(os.environ.get("VERIFY_EN_DOCS", "20000"))
SHORT_POP = int(os.environ.get("VERIFY_SHORT_POP", "30000"))
THREADS = os.environ.get("VERIFY_THREADS", "2")
SIM_TS = [0.1, 0.2, 0.3, 0.4, 0.5]
MIN_TS = [0.3, 0.4, 0.5]
TAIL_TS = [0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5]
LONG_TIERS = me.LONG_TIERS
SHORT_TIERS = me.SHORT_TIERS
NEAR_LONG = ["format", "hf20-35", "reorder", "edit1", "edit3", "edit5", "traditional"]
NEAR_SHORT = ["word1", "punct", "format", "traditional"]
POPS = [("pop_long", "documents"), ("pop_short", "short texts"),
        ("pop_long_x", "documents, enlarged"), ("pop_short_x", "short texts, enlarged")]


def pops(R, lang):
    return [(p, label) for p, label in POPS if p in R[lang]]


def j5_alnum(a, b):
    """5-gram Jaccard of the letters and digits alone (punctuation and symbols removed too)."""
    def g(t):
        t = "".join(ch for ch in t.lower() if ch.isalnum())
        return {t[i:i + 5] for i in range(max(1, len(t) - 4))}
    x, y = g(a), g(b)
    return len(x & y) / max(1, len(x | y))


def zh_sentences(c):
    """The Chinese corpus's short texts: its paragraphs and their sentences of 20-199 characters."""
    out = []
    for p in c.paragraphs():
        for x in [p] + [y.strip() for y in re.split(r"(?<=[。！？；])", p)]:
            if 20 <= len(x) < 200 and spread.evalset_is_lang(x, "zh"):
                out.append(x)
    return sorted(set(out))


def run(args, out=None):
    cmd = ["nice", "-n", "10", EXE] + args
    if out:
        with open(out, "w") as f:
            subprocess.run(cmd, stdout=f, check=True)
        with open(out) as f:
            return f.read()
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout


def write(path, texts):
    with open(path, "w", encoding="utf-8") as f:
        for t in texts:
            f.write(one_line(t) + "\n")


# ------------------------------------------------------------------------------------------------

def configs():
    """[(name, method, predicate(d, jvs, jm, est, band))]"""
    c = [("SimHash k=7, unverified", "simhash", lambda d, jvs, jm, est, band: d <= 7)]
    for t in SIM_TS:
        c.append((f"SimHash k=7, J ≥ {t}", "simhash", lambda d, jvs, jm, est, band, t=t: d <= 7 and jvs >= t))
    c.append(("MinHash, estimate ≥ 0.5 (unverified)", "minhash",
              lambda d, jvs, jm, est, band: band and est >= 0.5))
    for t in MIN_TS:
        c.append((f"MinHash, exact J ≥ {t}", "minhash", lambda d, jvs, jm, est, band, t=t: band and jm >= t))
    # As the SQL layer reads candidates (verify::ESTIMATE_MARGIN = 0.2): estimate >= t - 0.2 first.
    c.append(("MinHash, estimate ≥ 0.3 and exact J ≥ 0.5", "minhash",
              lambda d, jvs, jm, est, band: band and est >= 0.3 and jm >= 0.5))
    return c


def pair_rows(pairs, tag, reuse):
    path = os.path.join(DATA, f"{tag}.tsv")
    out = os.path.join(DATA, f"{tag}.out")
    if reuse and os.path.exists(out):
        with open(out) as f:
            text = f.read()
    else:
        with open(path, "w", encoding="utf-8") as f:
            for _, a, b in pairs:
                f.write(one_line(a) + "\t" + one_line(b) + "\n")
        text = run(["pairs", path], out)
    rows = []
    for line in text.splitlines():
        f = line.split("\t")
        d, jvs = int(f[0]), float(f[1])
        if f[2] == "-":
            rows.append((d, jvs, 0.0, -1.0, False))
        else:
            rows.append((d, jvs, float(f[2]), float(f[3]), f[4] == "1"))
    assert len(rows) == len(pairs), (tag, len(rows), len(pairs))
    return rows


def allpairs(texts, tag, reuse):
    path = os.path.join(DATA, f"{tag}.txt")
    out = os.path.join(DATA, f"{tag}.out")
    t0 = time.time()
    if reuse and os.path.exists(out):
        with open(out) as f:
            text = f.read()
    else:
        write(path, texts)
        text = run(["allpairs", path, "--threads", THREADS], out)
    P = {"hist": defaultdict(lambda: [0] * 201), "dist": [0] * 66, "rows": []}
    for line in text.splitlines():
        f = line.split("\t")
        if f[0] == "PAIRS":
            P["pairs"] = int(f[1])
        elif f[0] == "UNRELATED":
            P["unrelated"] = int(f[1])
        elif f[0] == "HIST":
            P["hist"][f[1]][int(f[2])] = int(f[3])
        elif f[0] == "DIST":
            P["dist"][int(f[1])] = int(f[2])
        elif f[0] == "PAIR":
            P["rows"].append((int(f[1]), int(f[2]), int(f[3]), f[4] == "1", float(f[5]), float(f[6]),
                              float(f[7])))
    P["texts"] = texts
    P["n"] = len(texts)
    sec = os.path.join(DATA, f"{tag}.seconds")
    if reuse and os.path.exists(sec):
        with open(sec) as f:
            P["seconds"] = float(f.read())
    else:
        P["seconds"] = time.time() - t0
        with open(sec, "w") as f:
            f.write(str(P["seconds"]))
    P["sizes"] = [int(x) for x in run(["sizes", path]).split()]
    assert len(P["sizes"]) == len(texts)
    return P


def timing(texts, tag):
    path = os.path.join(DATA, f"{tag}.txt")
    write(path, texts)
    out = run(["time", path, "--reps", "7"])
    r = {}
    for line in out.splitlines():
        f = line.split("\t")
        if f[0] == "TEXTS":
            r["texts"] = (int(f[1]), int(f[2]), int(f[3]), int(f[4]))
        elif f[0] == "TIME":
            r[f[1]] = float(f[2])
    return r


# ------------------------------------------------------------------------------------------------

def main():
    reuse = "--reuse" in sys.argv
    os.makedirs(DATA, exist_ok=True)
    if not os.path.exists(EXE):
        sys.exit("build first: cargo build --release -p simhash_core --example verify_eval")
    t0 = time.time()
    try:
        t2t = spread.traditional_table()
    except OSError:
        t2t = None
        print("unicode-data not installed: no traditional tier", flush=True)
    R = {}
    for lang in ("zh", "en"):
        c = spread.corpus(lang)
        lp = me.long_positives(c, t2t)
        sp = me.short_positives(c, t2t)
        docs, shorts = spread.populations(c)
        rng = random.Random(SEED)
        if len(docs) > EN_DOCS:
            docs = rng.sample(docs, EN_DOCS)
        shorts = shorts[:SHORT_POP]
        r = {"long": (lp, pair_rows(lp, f"long_{lang}", reuse)),
             "short": (sp, pair_rows(sp, f"short_{lang}", reuse))}
        # Shingle counts of the short pairs' texts (the smaller of each pair).
        path = os.path.join(DATA, f"short_{lang}_texts.txt")
        write(path, [x for _, a, b in sp for x in (a, b)])
        sz = [int(x) for x in run(["sizes", path]).split()]
        r["short_min"] = [min(sz[2 * i], sz[2 * i + 1]) for i in range(len(sp))]
        print(f"{lang}: pairs done, {len(docs)} docs, {len(shorts)} shorts ({time.time() - t0:.0f}s)", flush=True)
        todo = [("pop_long", docs), ("pop_short", shorts)]
        if lang == "zh" and os.path.isdir(zh_extra.ROOT):
            xd, xs = zh_extra.populations(SEED)
            todo += [("pop_long_x", list(dict.fromkeys(docs + xd))),
                     ("pop_short_x", list(dict.fromkeys(zh_sentences(c) + xs)))]
        for pop, texts in todo:
            r[pop] = allpairs(texts, f"{pop}_{lang}", reuse)
            P = r[pop]
            P["alt"] = {(row[0], row[1]): j5_alnum(texts[row[0]], texts[row[1]]) for row in P["rows"]
                        if row[2] <= 7 or row[3] or row[5] >= 0.1}
            print(f"{lang}: {pop} {r[pop]['pairs']:,} pairs, {r[pop]['unrelated']:,} unrelated, "
                  f"{len(r[pop]['rows'])} printed, {r[pop]['seconds']:.0f}s ({time.time() - t0:.0f}s)", flush=True)
        rng = random.Random(SEED + 1)
        r["time_long"] = timing(rng.sample(docs, min(500, len(docs))), f"time_long_{lang}")
        r["time_short"] = timing(rng.sample(shorts, min(3000, len(shorts))), f"time_short_{lang}")
        # Cross-check the crate's 5-gram Jaccard against minhash_eval.py's j5 on printed pairs.
        chk = []
        for pop, _ in pops(R | {lang: r}, lang):
            P = r[pop]
            for row in random.Random(SEED + 2).sample(P["rows"], min(300, len(P["rows"]))):
                chk.append(abs(me.j5(P["texts"][row[0]], P["texts"][row[1]]) - row[6]))
        r["j5_check"] = (len(chk), max(chk, default=0.0))
        print(f"{lang}: timing and checks done ({time.time() - t0:.0f}s)", flush=True)
        R[lang] = r
    report(R)
    print(f"done ({time.time() - t0:.0f}s)")


# ------------------------------------------------------------------------------------------------

def recall(R, lang, which, pred):
    pairs, rows = R[lang][which]
    by = defaultdict(list)
    for i, (kind, _, _) in enumerate(pairs):
        by[kind].append(i)
    return {k: (sum(1 for i in idx if pred(*rows[i])) / len(idx), len(idx)) for k, idx in by.items()}


def passes(P, method, t, alt=False):
    """Unrelated pairs matched by the sketch and with J >= t (t None: unverified); alt: only those
    whose 5-gram Jaccard of letters and digits alone is also < 0.1."""
    n = 0
    for i, j, d, band, est, jv, j5 in P["rows"]:
        if alt and P["alt"].get((i, j), 0.0) >= 0.1:
            continue
        if method == "simhash":
            ok = d <= 7 and (t is None or jv >= t)
        elif method == "minhash":
            ok = band and (est >= 0.5 if t is None else jv >= t)
        elif method == "minhash_m":
            ok = band and est >= t - 0.2 and jv >= t
        else:  # candidates
            ok = band
        n += ok
    return n


def tail(P, t, name="all"):
    """Unrelated pairs with J >= t (from the printed pairs for t >= 0.1, else from the histogram)."""
    if t >= 0.1:
        if name == "all":
            return sum(1 for r in P["rows"] if r[5] >= t)
        if name == "sim7":
            return sum(1 for r in P["rows"] if r[5] >= t and r[2] <= 7)
        if name == "band":
            return sum(1 for r in P["rows"] if r[5] >= t and r[3])
    h = P["hist"][name]
    return sum(h[b] for b in range(int(round(t * 200)), 201))


def tail_alt(P, t):
    """Unrelated pairs with J >= t whose 5-gram Jaccard of letters and digits is also < 0.1 (t >= 0.1)."""
    return sum(1 for r in P["rows"] if r[5] >= t and P["alt"].get((r[0], r[1]), 0.0) < 0.1)


def fit_alt(P):
    """As fit, on the letters-and-digits label, over t >= 0.1 (the printed pairs)."""
    U = P["unrelated"]
    js = sorted((r[5] for r in P["rows"] if r[5] >= 0.1 and P["alt"].get((r[0], r[1]), 0.0) < 0.1), reverse=True)
    pts = []
    for b in range(20, 201):
        s = sum(1 for x in js if x >= b / 200 - 1e-12)
        if s >= 5:
            pts.append((b / 200, math.log10(s / U)))
    if len(pts) < 4:
        return None
    pts = pts[len(pts) // 2:]
    n = len(pts)
    mx = sum(x for x, _ in pts) / n
    my = sum(y for _, y in pts) / n
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    slope = sum((x - mx) * (y - my) for x, y in pts) / sxx
    return slope, my - slope * mx, (pts[0][0], pts[-1][0])


def fit(P):
    """Least-squares line through log10 S(t) over the t (0.005 steps) where S counts >= 5 pairs;
    returns (slope, intercept, t range) or None."""
    h = P["hist"]["all"]
    U = P["unrelated"]
    pts = []
    for b in range(2, 201):
        s = sum(h[b:])
        if s >= 5:
            pts.append((b / 200, math.log10(s / U)))
    # the tail: the upper half of the observed range
    if len(pts) < 4:
        return None
    pts = pts[len(pts) // 2:]
    n = len(pts)
    mx = sum(x for x, _ in pts) / n
    my = sum(y for _, y in pts) / n
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    if sxx == 0:
        return None
    slope = sum((x - mx) * (y - my) for x, y in pts) / sxx
    return slope, my - slope * mx, (pts[0][0], pts[-1][0])


def fmt_rate(x):
    if x == 0:
        return "0"
    if x >= 100:
        return f"{x:,.0f}"
    if x >= 0.01:
        return f"{x:.3g}"
    return f"{x:.1e}"


def report(R):
    L = []
    w = L.append
    cf = configs()
    head = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    w("# Verification of candidates by the exact shingle Jaccard (issue 43)")
    w("")
    w(f"Measured 2026-11-28 on commit {head} (the crate of 652c634, `simhash_core::verify`), on the shared")
    w("2-core machine of bench/results/machine.md, by `bench/studies/verify/verify_eval.py` (method: its docstring);")
    w("every number from the core crate (`core/examples/verify_eval.rs`), no server.")
    w("")
    w("- **SimHash**: a candidate when the Hamming distance of the default fingerprints is ≤ 7; verified")
    w("  when the shingle Jaccard J (`verify::for_simhash`, MinHash's shingles) is ≥ t.")
    w("- **MinHash**: a candidate when the signatures share one of 32 bands of 4 rows. Unverified (0.9.0,")
    w("  0.10.0): found when the estimate ≥ 0.5. Verified: found when the exact J of the shingle sets ≥ t.")
    w("- **Unrelated**: character 5-gram Jaccard < 0.1 (lowercased, whitespace removed), on the texts.")
    w("")
    # ---- recall
    for which, tiers, near, title in (("long", LONG_TIERS, NEAR_LONG, "Documents (300–3,000 characters)"),
                                      ("short", SHORT_TIERS, NEAR_SHORT, "Short texts (20–199 characters)")):
        w(f"## Recall: {title}")
        w("")
        w("Share of the pairs of each tier found (pairs per tier: " +
          ", ".join(f"{lang} {len(R[lang][which][0]) // max(1, len({k for k, _, _ in R[lang][which][0]}))}"
                    for lang in ("zh", "en")) + "). Δ: the largest drop below the unverified recall over")
        w("the issue's near tiers (" + ", ".join(near) + ").")
        w("")
        present = [x for x in tiers if any(k == x for k, _, _ in R["zh"][which][0] + R["en"][which][0])]
        w("| method | lang | " + " | ".join(present) + " | Δ near (tier) |")
        w("| --- | --- | " + " | ".join("---:" for _ in present) + " | ---: |")
        for lang in ("zh", "en"):
            base = {}
            for name, method, pred in cf:
                rec = recall(R, lang, which, pred)
                if "unverified" in name:
                    base[method] = rec
                worst = (0.0, "")
                for x in near:
                    if x in rec:
                        drop = base[method][x][0] - rec[x][0]
                        if drop > worst[0]:
                            worst = (drop, x)
                w(f"| {name} | {lang} | " + " | ".join(f"{rec[x][0]:.3f}" if x in rec else "—" for x in present) +
                  f" | {worst[0]:.3f}{' (' + worst[1] + ')' if worst[1] else ''} |")
        w("")
    # J per tier
    w("## Verification J of the near-duplicate pairs (1st / 5th percentile / median)")
    w("")
    for which, tiers in (("long", LONG_TIERS), ("short", SHORT_TIERS)):
        w(f"{'Documents' if which == 'long' else 'Short texts'}:")
        w("")
        w("| lang | " + " | ".join(tiers) + " |")
        w("| --- | " + " | ".join("---:" for _ in tiers) + " |")
        for lang in ("zh", "en"):
            pairs, rows = R[lang][which]
            cells = []
            for x in tiers:
                js = sorted(rows[i][1] for i, (k, _, _) in enumerate(pairs) if k == x)
                cells.append(f"{js[int(0.01 * (len(js) - 1))]:.2f} / {js[int(0.05 * (len(js) - 1))]:.2f} / "
                             f"{js[len(js) // 2]:.2f}" if js else "—")
            w(f"| {lang} | " + " | ".join(cells) + " |")
        w("")
    # ---- precision
    w("## Precision at scale: unrelated pairs matched, among all pairs of the population")
    w("")
    w("Per population: all pairs of the texts; unrelated = 5-gram Jaccard < 0.1. `sketch`: unrelated")
    w("pairs the sketch matches (SimHash distance ≤ 7; MinHash: shares a band — the candidates — and,")
    w("in brackets, shares a band with estimate ≥ 0.5, the unverified result); then how many of the")
    w("sketch's matches reach J ≥ t. In square brackets: those of them whose 5-gram Jaccard of the")
    w("letters and digits alone (punctuation and symbols removed too) is also < 0.1 — the pairs that")
    w("are unrelated even when quotes and format placeholders are not counted.")
    w("")
    w("| population | texts | pairs | unrelated | SimHash ≤ 7 | " +
      " | ".join(f"+ J ≥ {t}" for t in SIM_TS) + " | MinHash band (est ≥ 0.5) | " +
      " | ".join(f"+ J ≥ {t}" for t in MIN_TS) + " |")
    w("| --- | ---: | ---: | ---: | ---: | " + " | ".join("---:" for _ in SIM_TS) + " | ---: | " +
      " | ".join("---:" for _ in MIN_TS) + " |")
    for lang in ("zh", "en"):
        for pop, label in pops(R, lang):
            P = R[lang][pop]
            def c(m, t):
                return f"{passes(P, m, t)} [{passes(P, m, t, True)}]"
            w(f"| {lang} {label} | {P['n']:,} | {P['pairs']:,} | {P['unrelated']:,} | {c('simhash', None)} | " +
              " | ".join(c('simhash', t) for t in SIM_TS) +
              f" | {passes(P, 'band', None)} ({c('minhash', None)}) | " +
              " | ".join(c('minhash', t) for t in MIN_TS) + " |")
    w("")
    w("### The tail of J among all unrelated pairs")
    w("")
    w("Unrelated pairs whose verification J reaches t, whatever the sketch says (P(sketch ∧ J ≥ t) ≤")
    w("P(J ≥ t)); in brackets, those of them within SimHash distance 7 / sharing a MinHash band.")
    w("")
    w("| population | unrelated | " + " | ".join(f"J ≥ {t}" for t in TAIL_TS) + " | largest J |")
    w("| --- | ---: | " + " | ".join("---:" for _ in TAIL_TS) + " | ---: |")
    for lang in ("zh", "en"):
        for pop, label in pops(R, lang):
            P = R[lang][pop]
            top = max((r[5] for r in P["rows"]), default=0.0)
            h = P["hist"]["all"]
            if top < 0.1:
                top = max((b / 200 for b in range(201) if h[b]), default=0.0)
            w(f"| {lang} {label} | {P['unrelated']:,} | " +
              " | ".join(f"{tail(P, t):,} ({tail(P, t, 'sim7')} / {tail(P, t, 'band')})" for t in TAIL_TS) +
              f" | {top:.3f} |")
    w("")
    w("The same on the letters-and-digits label (5-gram Jaccard of letters and digits alone also < 0.1),")
    w("counted from the printed pairs (t ≥ 0.1):")
    w("")
    alt_ts = [t for t in TAIL_TS if t >= 0.1]
    w("| population | " + " | ".join(f"J ≥ {t}" for t in alt_ts) + " |")
    w("| --- | " + " | ".join("---:" for _ in alt_ts) + " |")
    for lang in ("zh", "en"):
        for pop, label in pops(R, lang):
            P = R[lang][pop]
            w(f"| {lang} {label} | " + " | ".join(f"{tail_alt(P, t):,}" for t in alt_ts) + " |")
    w("")
    w("SimHash distances of unrelated pairs (pairs at distance ≤ d):")
    w("")
    ds = [3, 5, 7, 9, 11, 13]
    w("| population | " + " | ".join(f"≤ {d}" for d in ds) + " |")
    w("| --- | " + " | ".join("---:" for _ in ds) + " |")
    for lang in ("zh", "en"):
        for pop, label in pops(R, lang):
            P = R[lang][pop]
            w(f"| {lang} {label} | " + " | ".join(f"{sum(P['dist'][:d + 1]):,}" for d in ds) + " |")
    w("")
    # ---- extrapolation
    w("## False matches per lookup at 1M and 10M rows")
    w("")
    w("Per lookup at N rows = N × (unrelated pairs that pass / unrelated pairs). `counted`: from the")
    w("counts above; when 0 are counted, `< x`: the 95 % upper bound 3 / unrelated pairs × N. `tail")
    w("fit`: log10 P(J ≥ t) among unrelated pairs fitted by a straight line in t over the upper half")
    w("of the range where at least 5 pairs are counted (0.005 steps), evaluated at t, × N: an")
    w("estimate of P(J ≥ t), which bounds P(sketch ∧ J ≥ t) from above (the sketch only removes pairs).")
    w("")
    w("`[letters and digits]`: the same on that label (count, and the tail fit per lookup at 10M).")
    w("")
    w("| population | config | counted [letters and digits] | per lookup 1M | per lookup 10M | tail fit P(J ≥ t) | fit per lookup 10M [letters and digits] |")
    w("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    rowsets = [("SimHash k=7, unverified", "simhash", None)] + [(f"SimHash k=7, J ≥ {t}", "simhash", t) for t in SIM_TS] + \
              [("MinHash, est ≥ 0.5, unverified", "minhash", None)] + [(f"MinHash, exact J ≥ {t}", "minhash", t) for t in MIN_TS] + \
              [("MinHash, est ≥ 0.3 and exact J ≥ 0.5", "minhash_m", 0.5)]
    for lang in ("zh", "en"):
        for pop, label in pops(R, lang):
            P = R[lang][pop]
            U = P["unrelated"]
            f = fit(P)
            fa = fit_alt(P)
            for name, method, t in rowsets:
                n = passes(P, method, t)
                if n:
                    c1, c10 = fmt_rate(1e6 * n / U), fmt_rate(1e7 * n / U)
                else:
                    c1, c10 = "< " + fmt_rate(3e6 / U), "< " + fmt_rate(3e7 / U)
                if t is not None and f:
                    p = 10 ** (f[0] * t + f[1])
                    fc, f10 = f"{p:.1e}", fmt_rate(1e7 * p)
                else:
                    fc = f10 = "—"
                fa10 = fmt_rate(1e7 * 10 ** (fa[0] * t + fa[1])) if t is not None and fa else "—"
                w(f"| {lang} {label} | {name} | {n} [{passes(P, method, t, True)}] | {c1} | {c10} | {fc} | {f10} [{fa10}] |")
    w("")
    w("Tail fits (log10 P(J ≥ t) = a·t + b, over t in the range given):")
    w("")
    for lang in ("zh", "en"):
        for pop, label in pops(R, lang):
            f = fit(R[lang][pop])
            fa = fit_alt(R[lang][pop])
            w(f"- {lang} {label}: " + (f"a = {f[0]:.1f}, b = {f[1]:.2f}, t in {f[2][0]:.3f}–{f[2][1]:.3f}" if f else "—") +
              "; letters-and-digits label: " +
              (f"a = {fa[0]:.1f}, b = {fa[1]:.2f}, t in {fa[2][0]:.3f}–{fa[2][1]:.3f}" if fa else "—"))
    w("")
    w("Every unrelated pair that a sketch matches and whose J ≥ 0.3 (the passes at t = 0.3), by the")
    w("smaller shingle count of the two texts:")
    w("")
    w("| population | passes at J ≥ 0.3 (SimHash ≤ 7 or MinHash band) | smaller shingle count: 1–4 | 5–8 | 9–16 | 17+ | [letters and digits] 1–4 | 5–8 | 9–16 | 17+ |")
    w("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for lang in ("zh", "en"):
        for pop, label in pops(R, lang):
            P = R[lang][pop]
            got = [r for r in P["rows"] if r[5] >= 0.3 and (r[2] <= 7 or r[3])]

            def bins(rs):
                m = [min(P["sizes"][r[0]], P["sizes"][r[1]]) for r in rs]
                return [sum(1 for x in m if a <= x <= b) for a, b in ((1, 4), (5, 8), (9, 16), (17, 10 ** 9))]
            alt = [r for r in got if P["alt"].get((r[0], r[1]), 0.0) < 0.1]
            w(f"| {lang} {label} | {len(got)} | " + " | ".join(map(str, bins(got))) + " | " +
              " | ".join(map(str, bins(alt))) + " |")
    w("")
    # examples
    w("Unrelated pairs matched by a sketch with the highest J (texts cut to 80 characters):")
    w("")
    for lang in ("zh", "en"):
        for pop, _ in pops(R, lang):
            P = R[lang][pop]
            ex = sorted((r for r in P["rows"] if r[2] <= 7 or r[3]), key=lambda r: -r[5])[:2]
            for i, j, d, band, est, jv, j5 in ex:
                w(f"- {lang} {pop}: distance {d}, band {int(band)}, est {est:.2f}, J {jv:.3f} "
                  f"({P['sizes'][i]} and {P['sizes'][j]} shingles), J5 {j5:.3f}, "
                  f"J5 of letters and digits {P['alt'].get((i, j), 0.0):.3f}: "
                  f"{P['texts'][i][:80]!r} / {P['texts'][j][:80]!r}")
    w("")
    # ---- a least shingle count
    w("## Short texts: a least number of shingles")
    w("")
    w("If a pair counted only when the smaller of its two shingle sets holds at least m shingles (texts")
    w("with fewer left unchecked, as `min_length` leaves short texts), at the chosen defaults (SimHash")
    w("≤ 7 and J ≥ 0.4; MinHash band and exact J ≥ 0.5): recall of the short-text tiers, and the unrelated")
    w("short-text pairs that pass (per lookup at 10M rows; `< x` when none is counted).")
    w("")
    ms = [1, 3, 5, 6, 8, 10]
    for mname, pred, method, t in (("SimHash k=7, J ≥ 0.4", lambda d, jvs, jm, est, band: d <= 7 and jvs >= 0.4, "simhash", 0.4),
                                   ("MinHash, exact J ≥ 0.5", lambda d, jvs, jm, est, band: band and jm >= 0.5, "minhash", 0.5)):
        w(f"{mname}:")
        w("")
        w("| m | zh word1 | zh punct | zh format | zh traditional | en word1 | en punct | en format | zh unrelated passing (per lookup 10M) | en unrelated passing (per lookup 10M) |")
        w("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for m in ms:
            cells = []
            for lang in ("zh", "en"):
                pairs, rows = R[lang]["short"]
                mins = R[lang]["short_min"]
                for x in SHORT_TIERS:
                    idx = [i for i, (k, _, _) in enumerate(pairs) if k == x]
                    if idx:
                        cells.append(f"{sum(1 for i in idx if pred(*rows[i]) and mins[i] >= m) / len(idx):.3f}")
            pc = []
            for lang in ("zh", "en"):
                pop = "pop_short_x" if "pop_short_x" in R[lang] else "pop_short"
                P = R[lang][pop]
                n = 0
                for i, j, d, band, est, jv, j5 in P["rows"]:
                    if min(P["sizes"][i], P["sizes"][j]) < m:
                        continue
                    ok = (d <= 7 if method == "simhash" else band) and jv >= t
                    n += ok
                U = P["unrelated"]
                pc.append(f"{n} ({fmt_rate(1e7 * n / U)})" if n else f"0 (< {fmt_rate(3e7 / U)})")
            w(f"| {m} | " + " | ".join(cells) + " | " + " | ".join(pc) + " |")
        w("")
    w("Share of short-text pairs whose smaller set has fewer than m shingles (all tiers), and of the")
    w("population's texts:")
    w("")
    w("| m | zh pairs | en pairs | zh texts | en texts |")
    w("| ---: | ---: | ---: | ---: | ---: |")
    for m in ms[1:]:
        cells = [f"{sum(1 for x in R[lang]['short_min'] if x < m) / len(R[lang]['short_min']):.3f}" for lang in ("zh", "en")]
        for lang in ("zh", "en"):
            pop = "pop_short_x" if "pop_short_x" in R[lang] else "pop_short"
            sz = R[lang][pop]["sizes"]
            cells.append(f"{sum(1 for x in sz if x < m) / len(sz):.3f}")
        w(f"| {m} | " + " | ".join(cells) + " |")
    w("")
    # ---- cost
    w("## Cost of a verification")
    w("")
    w("Per text, best of 7 passes over the sample, one thread (shared 2-core machine): the shingle set")
    w("(`Shingles::of_text`: the text pipeline, sort, dedup) and one `jaccard` of two sets, beside the")
    w("default `fingerprint` and `minhash` of the same texts. A verification of one candidate costs one")
    w("shingle set (the candidate's; the new text's set is computed once per write or lookup) and one")
    w("Jaccard.")
    w("")
    w("| texts | sample | mean chars | mean shingles | shingle set µs | Jaccard µs | fingerprint µs | minhash µs |")
    w("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for lang in ("zh", "en"):
        for key, label in (("time_long", "documents"), ("time_short", "short texts")):
            T = R[lang][key]
            n, _, chars, sh = T["texts"]
            w(f"| {lang} {label} | {n} | {chars:,} | {sh:,} | {T['shingles'] * 1e6:.1f} | {T['jaccard'] * 1e6:.2f} | "
              f"{T['fingerprint'] * 1e6:.1f} | {T['minhash'] * 1e6:.1f} |")
    w("")
    w("Checks: the crate's 5-gram Jaccard against bench/studies/minhash/minhash_eval.py's `j5` on a sample of printed")
    w("pairs: " + "; ".join(f"{lang} {R[lang]['j5_check'][0]} pairs, largest difference {R[lang]['j5_check'][1]:.2g}"
                              for lang in ("zh", "en")) + ". Run time of the all-pairs passes: " +
      ", ".join(f"{lang} {pop[4:]} {R[lang][pop]['seconds']:.0f} s" for lang in ("zh", "en")
                for pop, _ in pops(R, lang)) + ".")
    with open(os.path.join(RESULTS, "verify_accuracy.md"), "w") as f:
        f.write("\n".join(L) + "\n")


if __name__ == "__main__":
    main()
