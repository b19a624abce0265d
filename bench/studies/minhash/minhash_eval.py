#!/usr/bin/env python3
"""Accuracy of MinHash + LSH beside SimHash (issue 25), and the choice of MinHash's defaults.

Everything is computed by the core crate (core/examples/minhash_eval.rs: the same code as the
future SQL functions, no server); this script only builds the text pairs, labels them and counts.

Text: what Debian ships here (corpus.py, as bench/studies/spread/spread.py); positives from evalset.py's editor:

* long texts (300-3000 characters), per language 200 base documents, one edited copy per tier:
  format, hf20-35 (a header and a footer adding 20-35 % of the body's characters: the site chrome
  of evalset.py plus boilerplate paragraphs of the corpus, cut to size), boilerplate (evalset.py's
  own wrapping, any size), reorder, edit1 / edit3 / edit5 / edit10 / edit20 (token edits touching
  about that share of the words or characters), mixed (edit5 + reorder + boilerplate + format) and,
  for Chinese, traditional (the base converted to traditional characters through Unihan's
  kTraditionalVariant, when the unicode-data package is installed);
* unrelated long texts: all pairs of a population of documents (every Chinese document, 2,000
  English ones); a pair counts as unrelated when its character 5-gram Jaccard similarity
  (lowercased, whitespace removed) is below 0.3 (packages ship copies of one another's pages);
  plus evalset.py's `template` negatives (one header + footer around two different short bodies);
* short texts (20-199 characters: titles, messages), 400 per language: word1 (one token edited:
  inserted, deleted or replaced), punct (punctuation and spacing changed only), format (evalset.py),
  traditional (Chinese); and all pairs of 3,000 unrelated short texts per language.

A pair is found by MinHash when the two signatures share an LSH band and the estimated similarity is
at least the threshold; by SimHash (default options) when the Hamming distance is at most k.

    cargo build --release -p simhash_core --example minhash_eval
    python3 bench/studies/minhash/minhash_eval.py   # writes minhash_accuracy.md beside it
"""
import math
import os
import random
import re
import subprocess
import sys
import time
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))  # bench/studies/minhash: the results go here
BENCH = os.path.dirname(os.path.dirname(HERE))  # bench: corpus.py, evalset.py, data/
sys.path.insert(0, BENCH)
sys.path.insert(0, os.path.join(BENCH, "studies", "spread"))
import evalset  # noqa: E402
import spread  # noqa: E402
from corpus import one_line  # noqa: E402

ROOT = os.path.dirname(BENCH)
DATA = os.path.join(BENCH, "data", "minhash")
RESULTS = HERE
EXE = os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "release", "examples",
                   "minhash_eval")
SEED = 25
BASES = 200
SHORT_BASES = 400
EN_DOCS = 2000
SHORT_POP = 3000

# name -> (SPEC, [bands x rows]); SPEC = tokenizer:shingle:stopwords:fold:k
CONFIGS = [
    ("k128", "word:0:false:simplified:128", ["32x4", "42x3", "25x5", "16x8"]),
    ("k128 stop", "word:0:true:simplified:128", ["32x4", "42x3"]),
    ("k64", "word:0:false:simplified:64", ["16x4", "21x3"]),
    ("k256", "word:0:false:simplified:256", ["64x4", "51x5", "32x8"]),
]
THRESHOLDS = [0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6]
DEFAULT = ("k128", "32x4", 0.5)
NEAR_TIERS = ["format", "hf20-35", "reorder", "edit1", "edit3", "edit5", "edit10"]
LONG_TIERS = NEAR_TIERS + ["boilerplate", "traditional", "mixed", "edit20"]
SHORT_TIERS = ["word1", "punct", "format", "traditional"]
SIMHASH_KS = [3, 7]


def run(args):
    return subprocess.run([EXE] + args, capture_output=True, text=True, check=True).stdout


def spec_args(spec, lshs):
    a = ["--config", spec]
    for l in lshs:
        a += ["--lsh", l]
    return a


def gram5(text):
    t = re.sub(r"\s+", "", text.lower())
    return {t[i:i + 5] for i in range(max(1, len(t) - 4))}


def j5(a, b):
    x, y = gram5(a), gram5(b)
    return len(x & y) / max(1, len(x | y))


# ------------------------------------------------------------------------------------------------
# pairs

def header_footer(ed, corpus, base, rng):
    """`base` wrapped in a header and a footer that add 20-35 % of its characters."""
    target = int(len(base) * rng.uniform(0.20, 0.35))
    pool = list(corpus.boilerplate)
    rng.shuffle(pool)
    head = rng.choice(evalset.OWN_HEADERS[corpus.lang])
    foot = rng.choice(evalset.OWN_FOOTERS[corpus.lang])
    for p in pool[:6]:
        if rng.random() < 0.5:
            head += " " + p
        else:
            foot = p + " " + foot
    # Each side gets half of the added characters (the two spaces of the wrap included).
    half = max(1, (target - 2) // 2)
    sep = " " if corpus.lang == "en" else ""

    def cut(s, n, from_end):
        s = s[-n:] if from_end else s[:n]
        if corpus.lang == "en" and len(s) == n:
            # Whole words: drop the partial word at the cut.
            s = s.split(" ", 1)[-1] if from_end else s.rsplit(" ", 1)[0]
        return s

    head = cut((head + sep) * (1 + half // max(1, len(head))), half, False)
    foot = cut((sep + foot) * (1 + half // max(1, len(foot))), target - 2 - len(head), True)
    return f"{head} {base} {foot}"


def punct_spacing(text, lang, rng):
    """Punctuation and spacing changed, nothing else; at least one change."""
    half = {"，": ",", "。": ".", "：": ":", "；": ";", "（": "(", "）": ")", "！": "!", "？": "?"}
    full = {v: k for k, v in half.items()}
    out = []
    changed = False
    for c in text:
        r = rng.random()
        if c in ",.;:!?，。；：！？、" and r < 0.3:
            changed = True
            if r < 0.1:
                continue  # dropped
            if c in half:
                c = half[c]
            elif c in full:
                c = full[c]
            else:
                c = rng.choice("，,;")
        elif c == " " and r < 0.15:
            changed = True
            c = "  "
        out.append(c)
    s = "".join(out)
    if not changed or s == text:
        s = s.rstrip("。.!！") + ("！" if lang == "zh" else "!")
    return s


def traditional(text, t2t):
    return "".join(t2t.get(ch, ch) for ch in text)


def long_positives(c, t2t):
    lang = c.lang
    # evalset.build takes one base per source; with fewer sources than BASES (Chinese), further
    # seeds draw other documents of the same sources.
    out, bases = [], []
    for extra in range(4):
        texts, pairs, _ = evalset.build(c, BASES, 0, 0, 0, SEED + 100 * extra)
        for a, b, _, kind in pairs:
            if texts[a] in bases[:-1] or len(bases) >= BASES and texts[a] != bases[-1]:
                continue
            if not bases or texts[a] != bases[-1]:
                bases.append(texts[a])
            out.append((kind, texts[a], texts[b]))
        if len(bases) >= BASES:
            break
    docs = [d for _, d in c.documents(SEED, drop_boilerplate=True)]
    ed = evalset.Editor(lang, random.Random(SEED).sample(docs, min(400, len(docs))), SEED + 1)
    rng = random.Random(SEED + 2)
    for b in bases:
        out.append(("edit1", b, ed.word_edits(b, 0.01)))
        out.append(("edit3", b, ed.word_edits(b, 0.03)))
        out.append(("hf20-35", b, header_footer(ed, c, b, rng)))
        if lang == "zh" and t2t:
            out.append(("traditional", b, traditional(b, t2t)))
    # evalset names its tiers edit2/5/10/20; edit2 is not one of the tiers but is kept.
    return out


def short_positives(c, t2t):
    lang = c.lang
    rng = random.Random(SEED + 3)
    shorts = sorted({p for p in c.paragraphs() if 20 <= len(p) < 200 and spread.evalset_is_lang(p, lang)})
    ed = evalset.Editor(lang, rng.sample(shorts, min(2000, len(shorts))), SEED + 4)
    out = []
    for s in rng.sample(shorts, min(SHORT_BASES, len(shorts))):
        out.append(("word1", s, ed.word_edits(s, 1e-9)))  # n = max(1, round(...)) = 1 edit
        out.append(("punct", s, punct_spacing(s, lang, rng)))
        out.append(("format", s, ed.format(s)))
        if lang == "zh" and t2t:
            out.append(("traditional", s, traditional(s, t2t)))
    return out


def template_negatives(c):
    texts, pairs, _ = evalset.build(c, 0, 0, 0, 600, SEED + 5)
    return [("template", texts[a], texts[b]) for a, b, _, _ in pairs]


# ------------------------------------------------------------------------------------------------
# computing

def pair_results(pairs, tag):
    """{config name: [(exact, est, bands string) or None]}, [simhash distance]."""
    path = os.path.join(DATA, f"{tag}.tsv")
    with open(path, "w", encoding="utf-8") as f:
        for _, a, b in pairs:
            f.write(one_line(a) + "\t" + one_line(b) + "\n")
    res, dist = {}, None
    for name, spec, lshs in CONFIGS:
        rows = run(["pairs", path] + spec_args(spec, lshs)).splitlines()
        assert len(rows) == len(pairs), (tag, len(rows), len(pairs))
        vals = []
        ds = []
        for r in rows:
            f = r.split("\t")
            ds.append(int(f[0]))
            vals.append(None if f[1] == "-" else (float(f[1]), float(f[2]), f[3]))
        res[name] = vals
        dist = ds
    return res, dist


def allpairs(texts, tag):
    """(pairs, {name: [(i, j, d, est, bands)]}, {name: hist}) with only the pairs the crate printed."""
    path = os.path.join(DATA, f"{tag}.txt")
    with open(path, "w", encoding="utf-8") as f:
        for t in texts:
            f.write(one_line(t) + "\n")
    found, hists, npairs, simhash_close = {}, {}, 0, {}
    for name, spec, lshs in CONFIGS:
        out = run(["allpairs", path, "--min", "0.25"] + spec_args(spec, lshs))
        rows, hist = [], [0] * 21
        for line in out.splitlines():
            f = line.split("\t")
            if f[0] == "PAIRS":
                npairs = int(f[1])
            elif f[0] == "PAIR":
                rows.append((int(f[1]), int(f[2]), int(f[3]), float(f[4]), f[5]))
            elif f[0] == "HIST":
                hist[int(f[2])] = int(f[3])
        found[name] = rows
        hists[name] = hist
    return npairs, found, hists


def lsh_index(name, lsh):
    return dict((n, l) for n, _, l in CONFIGS)[name].index(lsh)


def is_found(v, name, lsh, t):
    if v is None:
        return False
    _, est, bands = v
    return bands[lsh_index(name, lsh)] == "1" and est >= t


# ------------------------------------------------------------------------------------------------

def main():
    os.makedirs(DATA, exist_ok=True)
    if not os.path.exists(EXE):
        sys.exit("build first: cargo build --release -p simhash_core --example minhash_eval")
    t0 = time.time()
    try:
        t2t = spread.traditional_table()
    except OSError:
        t2t = None
        print("unicode-data not installed: no traditional tier", flush=True)
    R = {}
    for lang in ("zh", "en"):
        c = spread.corpus(lang)
        lp = long_positives(c, t2t)
        sp = short_positives(c, t2t)
        tn = template_negatives(c)
        docs, shorts = spread.populations(c)
        rng = random.Random(SEED + 6)
        if len(docs) > EN_DOCS:
            docs = rng.sample(docs, EN_DOCS)
        shorts = rng.sample(shorts, min(SHORT_POP, len(shorts)))
        print(f"{lang}: {len(lp)} long positives, {len(sp)} short, {len(tn)} template, {len(docs)} docs, "
              f"{len(shorts)} shorts ({time.time() - t0:.0f}s)", flush=True)
        r = {"long": (lp, *pair_results(lp, f"long_{lang}")),
             "short": (sp, *pair_results(sp, f"short_{lang}")),
             "template": (tn, *pair_results(tn, f"template_{lang}"))}
        print(f"{lang}: pairs done ({time.time() - t0:.0f}s)", flush=True)
        for pop, texts in (("pop_long", docs), ("pop_short", shorts)):
            npairs, found, hists = allpairs(texts, f"{pop}_{lang}")
            # Label every printed pair once: 5-gram Jaccard.
            cache = {}
            for rows in found.values():
                for i, j, _, _, _ in rows:
                    if (i, j) not in cache:
                        cache[(i, j)] = j5(texts[i], texts[j])
            r[pop] = (npairs, found, hists, cache, texts)
            print(f"{lang}: {pop} {npairs} pairs, {len(cache)} printed ({time.time() - t0:.0f}s)", flush=True)
        R[lang] = r
    report(R)
    print(f"done ({time.time() - t0:.0f}s)")


def recall_table(R, lang, which, tiers):
    pairs, res, dist = R[lang][which]
    by = defaultdict(list)
    for i, (kind, _, _) in enumerate(pairs):
        by[kind].append(i)
    return by, res, dist


def unrelated_found(R, lang, pop, name, lsh, t):
    npairs, found, _, cache, _ = R[lang][pop]
    li = lsh_index(name, lsh)
    n = 0
    related = 0
    for i, j, _, est, bands in found[name]:
        if cache[(i, j)] >= 0.3:
            related += 1
            continue
        if bands[li] == "1" and est >= t:
            n += 1
    return n, npairs - related


def simhash_unrelated(R, lang, pop, k):
    npairs, found, _, cache, _ = R[lang][pop]
    name = CONFIGS[0][0]
    n = related = 0
    for i, j, d, _, _ in found[name]:
        if cache[(i, j)] >= 0.3:
            related += 1
        elif d <= k:
            n += 1
    return n, npairs - related


def per20k(n, total):
    return 20000 * n / max(1, total)


def report(R):
    L = []
    w = L.append
    name0, lsh0, t0 = DEFAULT
    w("# MinHash + LSH beside SimHash: accuracy and the choice of defaults (issue 25)")
    w("")
    w("Generated by `bench/studies/minhash/minhash_eval.py` (method: its docstring and the README")
    w("beside it). Signatures, estimates, band keys and SimHash fingerprints from the core crate")
    w("(`core/examples/minhash_eval.rs`). A pair is found by MinHash when the signatures share a band")
    w("and the estimated similarity is ≥ the threshold; by SimHash (default options) when the Hamming")
    w("distance is ≤ k. Configurations are `tokenizer:shingle:stopwords:fold:k` (shingle 0 = per script:")
    w("3 tokens after a Han character, 2 after a word).")
    w("")
    spec0 = dict((n, s) for n, s, _ in CONFIGS)[name0]
    w(f"## The defaults: `{spec0}`, {lsh0.replace('x', ' bands × ')} rows, threshold {t0}")
    w("")
    w("Recall per tier (pairs per tier in brackets); `unrelated / 20k`: unrelated pairs (5-gram Jaccard")
    w("< 0.3) found per 20,000, from all pairs of the population.")
    w("")
    for which, tiers, pop, title in (("long", LONG_TIERS, "pop_long", "Documents (300–3000 characters)"),
                                     ("short", SHORT_TIERS, "pop_short", "Short texts (20–199 characters)")):
        w(f"### {title}")
        w("")
        present = [x for x in tiers if any(k == x for k, _, _ in R["zh"][which][0] + R["en"][which][0])]
        w("| method | lang | " + " | ".join(present) + " | unrelated / 20k (found / pairs) |")
        w("| --- | --- | " + " | ".join("---:" for _ in present) + " | ---: |")
        for lang in ("zh", "en"):
            by, res, dist = recall_table(R, lang, which, tiers)

            def cell(pred, kind):
                idx = by.get(kind, [])
                if not idx:
                    return "—"
                return f"{sum(1 for i in idx if pred(i)) / len(idx):.3f} ({len(idx)})"

            n, tot = unrelated_found(R, lang, pop, name0, lsh0, t0)
            w(f"| MinHash {lsh0} t={t0} | {lang} | " +
              " | ".join(cell(lambda i: is_found(res[name0][i], name0, lsh0, t0), x) for x in present) +
              f" | {per20k(n, tot):.2f} ({n} / {tot:,}) |")
            for k in SIMHASH_KS:
                n, tot = simhash_unrelated(R, lang, pop, k)
                w(f"| SimHash k={k} | {lang} | " +
                  " | ".join(cell(lambda i: dist[i] <= k, x) for x in present) +
                  f" | {per20k(n, tot):.2f} ({n} / {tot:,}) |")
        w("")
        tn, tres, tdist = R["zh"]["template"]
    w("### Template negatives (one header + footer around two different short bodies)")
    w("")
    w("evalset.py's `template` pairs: the same site chrome around two different bodies of 150–1200")
    w("characters, so that the shared chrome is a large share of each text. Split by the 5-gram Jaccard")
    w("of the whole texts: below 0.3 they are unrelated by the issue's definition; at 0.3 or more the")
    w("shared chrome alone makes them that similar, and any set-similarity method sees them so.")
    w("")
    w("| method | zh J5 < 0.3 | zh J5 ≥ 0.3 | en J5 < 0.3 | en J5 ≥ 0.3 |")
    w("| --- | ---: | ---: | ---: | ---: |")
    j5s = {lang: [j5(a, b) for _, a, b in R[lang]["template"][0]] for lang in ("zh", "en")}

    def split(lang, pred):
        cells = []
        for low in (True, False):
            idx = [i for i, v in enumerate(j5s[lang]) if (v < 0.3) == low]
            cells.append(f"{sum(1 for i in idx if pred(i)) / len(idx):.3f} ({len(idx)})" if idx else "—")
        return cells

    row = [f"MinHash {lsh0} t={t0}"]
    for lang in ("zh", "en"):
        tres = R[lang]["template"][1]
        row += split(lang, lambda i: is_found(tres[name0][i], name0, lsh0, t0))
    w("| " + " | ".join(row) + " |")
    for k in SIMHASH_KS:
        row = [f"SimHash k={k}"]
        for lang in ("zh", "en"):
            tdist = R[lang]["template"][2]
            row += split(lang, lambda i: tdist[i] <= k)
        w("| " + " | ".join(row) + " |")
    w("")
    w("### Short texts: one-token edits by length")
    w("")
    w("Recall of `word1` (one token inserted, deleted or replaced) by the length of the original text.")
    w("")
    buckets = [(20, 60), (60, 120), (120, 200)]
    w("| method | lang | " + " | ".join(f"{a}–{b - 1} chars" for a, b in buckets) + " |")
    w("| --- | --- | " + " | ".join("---:" for _ in buckets) + " |")
    for lang in ("zh", "en"):
        pairs, res, dist = R[lang]["short"]
        idx = {bk: [i for i, (kind, a, _) in enumerate(pairs) if kind == "word1" and bk[0] <= len(a) < bk[1]]
               for bk in buckets}

        def cells(pred):
            return " | ".join(f"{sum(1 for i in idx[bk] if pred(i)) / len(idx[bk]):.3f} ({len(idx[bk])})"
                              if idx[bk] else "—" for bk in buckets)

        w(f"| MinHash {lsh0} t={t0} | {lang} | " + cells(lambda i: is_found(res[name0][i], name0, lsh0, t0)) + " |")
        for k in SIMHASH_KS:
            w(f"| SimHash k={k} | {lang} | " + cells(lambda i: dist[i] <= k) + " |")
    w("")

    # S-curve
    w("## S-curve of the default bands")
    w("")
    b, r = map(int, lsh0.split("x"))
    w(f"Probability that a pair of true Jaccard J shares one of {b} bands of {r} rows, 1 − (1 − J^{r})^{b},")
    w(f"and measured on the long and short positive pairs of both languages whose exact shingle Jaccard")
    w(f"lies within ±0.05 of J: the share that shares a band, and that is found (band and estimate ≥ {t0}).")
    w("")
    w("| J | formula | measured: shares a band | found | pairs |")
    w("| ---: | ---: | ---: | ---: | ---: |")
    for J in (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9):
        band = found = n = 0
        for lang in ("zh", "en"):
            for which in ("long", "short", "template"):
                _, res, _ = R[lang][which]
                for v in res[name0]:
                    if v is None or abs(v[0] - J) > 0.05:
                        continue
                    n += 1
                    band += v[2][lsh_index(name0, lsh0)] == "1"
                    found += is_found(v, name0, lsh0, t0)
        f = 1 - (1 - J ** r) ** b
        w(f"| {J} | {f:.4f} | {band / n:.3f} | {found / n:.3f} | {n} |" if n else f"| {J} | {f:.4f} | — | — | 0 |")
    w("")

    # Exact Jaccard per tier: what the issue measured.
    w("## Exact shingle Jaccard per tier (5th percentile / median)")
    w("")
    w(f"Of the shingle sets of `{spec0}` (reference pipeline), per tier and language.")
    w("")
    w("| lang | " + " | ".join(LONG_TIERS) + " |")
    w("| --- | " + " | ".join("---:" for _ in LONG_TIERS) + " |")
    for lang in ("zh", "en"):
        by, res, _ = recall_table(R, lang, "long", LONG_TIERS)
        cells = []
        for x in LONG_TIERS:
            js = sorted(res[name0][i][0] for i in by.get(x, []) if res[name0][i] is not None)
            cells.append(f"{js[int(0.05 * (len(js) - 1))]:.2f} / {js[len(js) // 2]:.2f}" if js else "—")
        w(f"| {lang} | " + " | ".join(cells) + " |")
    w("")
    w("Unrelated documents (all pairs, 5-gram Jaccard < 0.3): estimated similarity histogram tail, pairs ≥ 0.25:")
    w("")
    for lang in ("zh", "en"):
        npairs, found, hists, cache, _ = R[lang]["pop_long"]
        top = max((est for i, j, _, est, _ in found[name0] if cache[(i, j)] < 0.3), default=0)
        w(f"- {lang}: {npairs:,} pairs, highest estimate of an unrelated pair {top:.3f}; histogram (20ths from 0.25): "
          + ", ".join(str(x) for x in hists[name0][5:]))
    w("")

    # Candidates
    w("## All candidates: minimum recall over the near tiers, and unrelated found per 20,000")
    w("")
    w("`min near` is the lowest recall over " + ", ".join(NEAR_TIERS) + " in either language (long")
    w("texts); `short word1` and `short punct` the lower of the two languages; unrelated per 20,000 for")
    w("documents and short texts, the higher of the two languages. `ok` when min near ≥ 0.95 and both")
    w("unrelated rates ≤ 1.")
    w("")
    w("| config | spec | bands×rows | t | min near (tier, lang) | edit20 zh / en | boilerplate zh / en | short word1 | short punct | unrelated docs / 20k | unrelated short / 20k | ok |")
    w("| --- | --- | --- | ---: | --- | --- | --- | ---: | ---: | ---: | ---: | --- |")
    for name, spec, lshs in CONFIGS:
        for lsh in lshs:
            for t in THRESHOLDS:
                worst = (2, "", "")
                per = {}
                for lang in ("zh", "en"):
                    by, res, _ = recall_table(R, lang, "long", LONG_TIERS)
                    for x in LONG_TIERS:
                        idx = by.get(x, [])
                        if not idx:
                            continue
                        rec = sum(is_found(res[name][i], name, lsh, t) for i in idx) / len(idx)
                        per[(x, lang)] = rec
                        if x in NEAR_TIERS and rec < worst[0]:
                            worst = (rec, x, lang)
                srec = {}
                for lang in ("zh", "en"):
                    by, res, _ = recall_table(R, lang, "short", SHORT_TIERS)
                    for x in ("word1", "punct"):
                        idx = by[x]
                        srec[(x, lang)] = sum(is_found(res[name][i], name, lsh, t) for i in idx) / len(idx)
                ud = max(per20k(*unrelated_found(R, lang, "pop_long", name, lsh, t)) for lang in ("zh", "en"))
                us = max(per20k(*unrelated_found(R, lang, "pop_short", name, lsh, t)) for lang in ("zh", "en"))
                ok = worst[0] >= 0.95 and ud <= 1 and us <= 1
                w(f"| {name} | `{spec}` | {lsh} | {t} | {worst[0]:.3f} ({worst[1]} {worst[2]}) | "
                  f"{per.get(('edit20', 'zh'), 0):.2f} / {per.get(('edit20', 'en'), 0):.2f} | "
                  f"{per.get(('boilerplate', 'zh'), 0):.2f} / {per.get(('boilerplate', 'en'), 0):.2f} | "
                  f"{min(srec[('word1', l)] for l in ('zh', 'en')):.3f} | {min(srec[('punct', l)] for l in ('zh', 'en')):.3f} | "
                  f"{ud:.2f} | {us:.2f} | {'ok' if ok else 'no'} |")
    w("")
    w("Short-text unrelated pairs per lookup at 1M rows (the issue's item 7) = rate per pair × 10^6:")
    w("")
    for lang in ("zh", "en"):
        n, tot = unrelated_found(R, lang, "pop_short", name0, lsh0, t0)
        parts = [f"MinHash {n / tot * 1e6:.1f} ({n} of {tot:,} pairs)"]
        for k in SIMHASH_KS:
            m, tot2 = simhash_unrelated(R, lang, "pop_short", k)
            parts.append(f"SimHash k={k} {m / tot2 * 1e6:.1f} ({m})")
        w(f"- {lang}: " + "; ".join(parts))
    w("")
    w("Examples of unrelated pairs found by the defaults (texts cut to 90 characters):")
    w("")
    for lang in ("zh", "en"):
        for pop in ("pop_long", "pop_short"):
            npairs, found, _, cache, texts = R[lang][pop]
            li = lsh_index(name0, lsh0)
            ex = [(i, j, est) for i, j, _, est, bands in found[name0]
                  if cache[(i, j)] < 0.3 and bands[li] == "1" and est >= t0][:3]
            for i, j, est in ex:
                w(f"- {lang} {pop}, est {est:.2f}, 5-gram J {cache[(i, j)]:.2f}: {texts[i][:90]!r} / {texts[j][:90]!r}")
    with open(os.path.join(RESULTS, "minhash_accuracy.md"), "w") as f:
        f.write("\n".join(L) + "\n")


if __name__ == "__main__":
    main()
