#!/usr/bin/env python3
"""Fingerprint spread and near-duplicate recall of candidate configurations (issue 9, algorithm v2).

Everything is computed with the core crate directly (core/examples/spread.rs: the same code as SQL
simhash(), no server), over real text Debian ships (corpus.py, evalset.py):

* positives: per language, base documents (300-3000 characters) with one edited copy per kind of
  edit (evalset.py: edit2/5/10/20, reorder, boilerplate, format, mixed) and, for Chinese, the base
  converted to traditional characters (`traditional`, character by character with Unihan's
  kTraditionalVariant: data independent of the kSimplifiedVariant table that folding uses);
  short texts (paragraphs of 20-199 characters, titles and messages) with the edits that make sense
  for them (edit5 touches at least one word, edit10, format, traditional);
* unrelated populations: every document of a language (300-3000 characters) and a sample of its
  distinct short paragraphs, all pairs compared (spread.rs `allpairs`; pairs sharing > 30 % of
  their character 4-grams are copies, not unrelated, and are removed).

    python3 bench/studies/spread/spread.py   # writes accuracy.md and bands.md beside it

Needs: `cargo build --release -p simhash_core --example spread`, the Debian packages `manpages-zh`,
`gettext` and `unicode-data`.
"""
import bz2
import math
import os
import pickle
import random
import subprocess
import sys
import time
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))  # bench/studies/spread: the results go here
BENCH = os.path.dirname(os.path.dirname(HERE))  # bench: corpus.py, evalset.py, data/
sys.path.insert(0, BENCH)
import evalset  # noqa: E402
from corpus import Corpus  # noqa: E402

ROOT = os.path.dirname(BENCH)
DATA = os.path.join(BENCH, "data", "spread")
RESULTS = HERE
EXE = os.path.join(ROOT, "target", "release", "examples", "spread")
KS = range(3, 9)
CHECK_K = 14  # pairs up to this distance are checked for copies (spread.rs caps it at 8 past 2M pairs)
ROWS = 1_000_000
BASES = 200
SHORT_BASES = 400
SHORT_POP = 30_000
SEED = 9

# name -> SPEC (tokenizer:shingle:weighting:stopwords:fold)
CONFIGS = [
    ("0.2.0 default", "word:1:tf:false:none"),
    ("word+stop", "word:1:tf:true:none"),
    ("jieba tf", "jieba:1:tf:false:none"),
    ("jieba+stop", "jieba:1:tf:true:none"),
    ("jieba binary", "jieba:1:binary:false:none"),
    ("jieba logtf", "jieba:1:logtf:false:simplified"),
    ("word tfidf+stop", "word:1:tfidf:true:none"),
    ("word logtf+stop", "word:1:logtf:true:simplified"),
    ("word logtfidf", "word:1:logtfidf:false:simplified"),
    ("word logtfidf+stop", "word:1:logtfidf:true:simplified"),
    ("word logtfidf+stop, no fold", "word:1:logtfidf:true:none"),
    ("jieba logtfidf", "jieba:1:logtfidf:false:simplified"),
    ("jieba logtfidf, no fold", "jieba:1:logtfidf:false:none"),
    ("jieba logtfidf+stop", "jieba:1:logtfidf:true:simplified"),
    ("char:2 logtf+stop", "char:2:logtf:true:simplified"),
    ("bigram logtf", "bigram:1:logtf:false:simplified"),
    ("bigram logtf+stop (0.3.0 default)", "bigram:1:logtf:true:simplified"),
    ("bigram logtfidf", "bigram:1:logtfidf:false:simplified"),
    ("bigram logtfidf+stop", "bigram:1:logtfidf:true:simplified"),
    # Further candidates of issue 9, item 1 (see "More candidates" in accuracy.md). `x:` specs
    # are prototypes computed by spread.rs from the core's public pieces, not option values.
    ("bigram pairs logtf+stop", "bigram:2:logtf:true:simplified"),
    ("proto: sqrt tf", "x:w=sqrt"),
    ("proto: tf capped at 2", "x:w=cap2"),
    ("proto: tf capped at 3", "x:w=cap3"),
    ("proto: SpotSigs, chain 2", "x:spot=2"),
    ("proto: SpotSigs, chain 3", "x:spot=3"),
    ("proto: SpotSigs 2 + others × 0.3", "x:spot=2,base=0.3"),
    ("proto: edge taper 25 %", "x:taper=0.25,floor=0.2"),
    ("proto: edge taper 30 %, floor 0.3", "x:taper=0.3,floor=0.3"),
    ("bigram logtfedge+stop", "bigram:1:logtfedge:true:simplified"),
    ("proto: logtfedge, 40 features", "x:edge=40,floor=0.2,unit=tok"),
    ("proto: logtfedge, 100 features", "x:edge=100,floor=0.2,unit=tok"),
    ("proto: logtfedge, floor 0.5", "x:edge=60,floor=0.5,unit=tok"),
    ("proto: edge taper 25 %, cap 2", "x:taper=0.25,floor=0.2,w=cap2"),
    ("proto: logtfedge, cap 2", "x:edge=60,floor=0.2,unit=tok,w=cap2"),
]
DEFAULT_SPEC = "bigram:1:logtf:true:simplified"
SPECS = [s for _, s in CONFIGS]
NAME = {s: n for n, s in CONFIGS}

LONG_KINDS = evalset.POSITIVE_KINDS
SMALL_KINDS = ["edit2", "edit5", "reorder", "boilerplate", "format"]  # the "small edits"
# Added header + footer characters over body characters, for the boilerplate breakdown.
BP_BUCKETS = [0.0, 0.1, 0.2, 0.3, 0.5, 0.75]
BP_LIMITS = [0.1, 0.2, 0.3]


def traditional_table():
    """Simplified -> traditional characters from Unihan's kTraditionalVariant (first value)."""
    out = {}
    with bz2.open("/usr/share/unicode/Unihan_Variants.txt.bz2", "rt", encoding="utf-8") as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            code, field, value = line.rstrip("\n").split("\t")
            if field == "kTraditionalVariant":
                c = chr(int(code[2:], 16))
                vs = [chr(int(v[2:].split("<")[0], 16)) for v in value.split()]
                others = [v for v in vs if v != c]
                if others and c not in vs:
                    out[c] = others[0]
    return out


def corpus(lang):
    path = os.path.join(BENCH, "data", f"corpus_{lang}.pkl")
    if os.path.exists(path):
        with open(path, "rb") as f:
            return pickle.load(f)
    c = Corpus(lang)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        pickle.dump(c, f)
    return c


def one_line(t):
    return evalset_one_line(t)


def evalset_one_line(t):
    from corpus import one_line as ol
    return ol(t)


def positives(c, t2t):
    """[(kind, base, variant)] for long and short texts of one corpus."""
    lang = c.lang
    texts, pairs, _ = evalset.build(c, BASES, 0, 0, 0, SEED)
    long_pairs = [(kind, texts[a], texts[b]) for a, b, _, kind in pairs]
    if lang == "zh":
        bases = sorted({texts[a] for a, _, _, _ in pairs})
        long_pairs += [("traditional", b, "".join(t2t.get(ch, ch) for ch in b)) for b in bases]
    rng = random.Random(SEED + 2)
    shorts = [p for p in c.paragraphs() if 20 <= len(p) < 200 and evalset_is_lang(p, lang)]
    ed = evalset.Editor(lang, rng.sample(shorts, min(2000, len(shorts))), SEED + 3)
    short_pairs = []
    for s in rng.sample(shorts, min(SHORT_BASES, len(shorts))):
        short_pairs.append(("edit5", s, ed.word_edits(s, 0.05)))
        short_pairs.append(("edit10", s, ed.word_edits(s, 0.10)))
        short_pairs.append(("format", s, ed.format(s)))
        if lang == "zh":
            short_pairs.append(("traditional", s, "".join(t2t.get(ch, ch) for ch in s)))
    return long_pairs, short_pairs


def evalset_is_lang(t, lang):
    from corpus import is_language
    return is_language(t, lang)


def populations(c):
    docs = [d for _, d in c.documents(SEED, drop_boilerplate=False)]
    seen, uniq = set(), []
    for d in docs:
        if d not in seen:
            seen.add(d)
            uniq.append(d)
    rng = random.Random(SEED + 4)
    shorts = sorted({p for p in c.paragraphs() if 20 <= len(p) < 200 and evalset_is_lang(p, c.lang)})
    shorts = rng.sample(shorts, min(SHORT_POP, len(shorts)))
    return uniq, shorts


def write(path, texts):
    with open(path, "w", encoding="utf-8") as f:
        for t in texts:
            f.write(one_line(t) + "\n")


def run(args):
    out = subprocess.run([EXE] + args, capture_output=True, text=True, check=True).stdout
    return out


def config_args():
    a = []
    for s in SPECS:
        a += ["--config", s]
    return a


def fingerprints(texts, tag):
    path = os.path.join(DATA, f"{tag}.txt")
    write(path, texts)
    rows = run(["fp", path] + config_args()).splitlines()
    assert len(rows) == len(texts), (tag, len(rows), len(texts))
    return [[None if v == "NULL" else int(v) & (2**64 - 1) for v in r.split("\t")] for r in rows]


def recall(pairs, tag):
    """{spec: {kind: {k: share found}}}, counts per kind, and {spec: [distance per pair]} (65 when a
    text has no fingerprint)."""
    texts = []
    for _, a, b in pairs:
        texts += [a, b]
    fps = fingerprints(texts, tag)
    res = {s: defaultdict(lambda: defaultdict(int)) for s in SPECS}
    dist = {s: [] for s in SPECS}
    n = defaultdict(int)
    for i, (kind, _, _) in enumerate(pairs):
        n[kind] += 1
        fa, fb = fps[2 * i], fps[2 * i + 1]
        for ci, s in enumerate(SPECS):
            if fa[ci] is None or fb[ci] is None:
                dist[s].append(65)
                continue
            d = bin(fa[ci] ^ fb[ci]).count("1")
            dist[s].append(d)
            for k in KS:
                if d <= k:
                    res[s][kind][k] += 1
    return {s: {kind: {k: res[s][kind][k] / n[kind] for k in KS} for kind in n} for s in SPECS}, dict(n), dist


def boilerplate_breakdown(long_pairs):
    """Per boilerplate pair: (added header + footer characters / body characters, {spec: distance})."""
    bp = [(a, b) for kind, a, b in long_pairs if kind == "boilerplate"]
    _, _, dist = recall([("boilerplate", a, b) for a, b in bp], "pos_boilerplate")
    return [((len(b) - len(a)) / len(a), {s: dist[s][i] for s in SPECS}) for i, (a, b) in enumerate(bp)]


def bucket_label(i):
    lo = BP_BUCKETS[i]
    hi = BP_BUCKETS[i + 1] if i + 1 < len(BP_BUCKETS) else None
    return f"{lo:.0%}–{hi:.0%}" if hi is not None else f"≥ {lo:.0%}"


def bucket_of(ratio):
    return max(i for i, lo in enumerate(BP_BUCKETS) if ratio >= lo)


def poisson_emax(lam, buckets=65536):
    """E[max] of `buckets` independent Poisson(lam) counts: sum over m of 1 - F(m)^buckets."""
    e, m, cdf, p = 0.0, 0, 0.0, math.exp(-lam)
    while True:
        cdf += p
        tail = 1 - cdf ** buckets
        if tail < 1e-9:
            break
        e += tail
        m += 1
        p *= lam / m
    return e


def allpairs(texts, tag):
    path = os.path.join(DATA, f"{tag}.txt")
    write(path, texts)
    out = run(["allpairs", path, "--kmax", str(CHECK_K)] + config_args())
    st = {s: {"hist": [0] * 65, "related": [0] * (CHECK_K + 1), "bands": [], "examples": []} for s in SPECS}
    for line in out.splitlines():
        f = line.split("\t")
        s = f[1]
        if f[0] == "NULLS":
            st[s]["nulls"] = int(f[2])
        elif f[0] == "HIST":
            st[s]["hist"][int(f[2])] = int(f[3])
        elif f[0] == "RELATED":
            st[s]["related"][int(f[2])] = int(f[3])
        elif f[0] == "BAND":
            st[s]["bands"].append((int(f[3]), int(f[4])))
        elif f[0] == "EXAMPLE":
            st[s]["examples"].append((int(f[2]), int(f[3]), int(f[4])))
        elif f[0] == "CHECKED":
            st[s]["checked"] = int(f[2])
        elif f[0] == "DISTINCT":
            st[s]["distinct"] = int(f[2])
    for s in SPECS:
        h = st[s]["hist"]
        pairs = sum(h)
        st[s]["pairs"] = pairs
        st[s]["mean"] = sum(d * c for d, c in enumerate(h)) / max(1, pairs)
        acc, p1 = 0, None
        for d, c in enumerate(h):
            acc += c
            if p1 is None and acc >= 0.01 * pairs:
                p1 = d
        st[s]["p1"] = p1
        cum = []
        acc = 0
        for c in h:
            acc += c
            cum.append(acc)
        st[s]["cum"] = cum
        st[s]["false"] = {k: tail_estimate(cum, pairs, k, st[s]["checked"]) for k in KS}
        n = st[s]["bands"][0][1] if st[s]["bands"] else 0
        st[s]["band_max"] = max((b for b, _ in st[s]["bands"]), default=0)
        st[s]["uniform_max"] = poisson_emax(n / 65536) if n else 0
    return st


def tail_estimate(cum, pairs, k, checked):
    """Expected false matches per lookup in a table of ROWS rows at threshold k.

    Empirical: cum[k] / pairs * ROWS when at least 10 unrelated pairs lie within k. Below that the
    count is too small to trust, and the rate is extrapolated from the tail that is measured: a
    straight line through log(cum[x] / pairs) at the first distances x > k, up to the largest distance
    whose pairs were checked for copies, with 10 or more pairs
    (least squares over up to 4 such points). The log of a binomial-like tail is concave, so the
    line lies above the curve below its first point: the estimate errs on the high side.
    Returns (empirical, estimate, how)."""
    emp = cum[k] / pairs * ROWS
    if cum[k] >= 10:
        return emp, emp, "count"
    # Only distances whose pairs were checked for copies: beyond them the copies that packages ship
    # of one another's text would bend the line upwards.
    pts = [(x, math.log(cum[x] / pairs)) for x in range(k + 1, checked + 1) if cum[x] >= 10][:4]
    if len(pts) < 2:
        return emp, 3 / pairs * ROWS, "bound"
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    slope = sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)
    est = math.exp(my + slope * (k - mx)) * ROWS
    return emp, max(est, emp), "fit"


def fmt_false(v):
    emp, est, how = v
    if how == "count":
        return f"{est:.3g}"
    return f"{est:.2g}~"


def main():
    os.makedirs(DATA, exist_ok=True)
    if not os.path.exists(EXE):
        sys.exit("build first: cargo build --release -p simhash_core --example spread")
    t0 = time.time()
    t2t = traditional_table()
    R = {}
    for lang in ("zh", "en"):
        c = corpus(lang)
        long_pairs, short_pairs = positives(c, t2t)
        docs, shorts = populations(c)
        print(f"{lang}: {len(long_pairs)} long positives, {len(short_pairs)} short, {len(docs)} docs, "
              f"{len(shorts)} short texts ({time.time() - t0:.0f}s)", flush=True)
        R[lang] = {
            "long_recall": recall(long_pairs, f"pos_long_{lang}")[:2],
            "short_recall": recall(short_pairs, f"pos_short_{lang}")[:2],
            "boilerplate": boilerplate_breakdown(long_pairs),
            "long_pop": allpairs(docs, f"pop_long_{lang}"),
            "short_pop": allpairs(shorts, f"pop_short_{lang}"),
            "docs": docs,
            "shorts": shorts,
        }
        print(f"{lang} done ({time.time() - t0:.0f}s)", flush=True)
    with open(os.path.join(DATA, "results.pkl"), "wb") as f:
        pickle.dump({k: {kk: vv for kk, vv in v.items() if kk not in ("docs", "shorts")} for k, v in R.items()}, f)
    report(R)


def best_k(st_zh, st_en, limit=0.1):
    """The largest k whose estimated false matches per lookup at 1M rows stay <= limit in both."""
    ok = [k for k in KS if st_zh["false"][k][1] <= limit and st_en["false"][k][1] <= limit]
    return max(ok) if ok else None


def small_recall(R, lang, s, k, limit=None):
    """Mean recall of the small edits at k; with `limit`, boilerplate pairs count only when their
    added header + footer is at most `limit` times the body (characters)."""
    rec, _ = R[lang]["long_recall"]
    kinds = SMALL_KINDS + (["traditional"] if lang == "zh" else [])
    vals = []
    for x in kinds:
        if x == "boilerplate" and limit is not None:
            ds = [d[s] for r, d in R[lang]["boilerplate"] if r <= limit]
            if not ds:
                return None
            vals.append(sum(d <= k for d in ds) / len(ds))
        else:
            vals.append(rec[s][x][k])
    return sum(vals) / len(vals)


def boilerplate_sections(R, w):
    """The boilerplate breakdown of issue 9: which share of added header and footer each configuration
    tolerates, and the small-edit recall with and without the larger additions."""
    w("## Boilerplate: recall by the size of the added header and footer")
    w("")
    w("The `boilerplate` edit (evalset.py `chrome()`) wraps a document in one of its own header and")
    w("footer lines plus one boilerplate paragraph of the corpus on each side (25–200 characters each).")
    w("Its size relative to the document varies with the document: added characters / body characters,")
    for lang in ("zh", "en"):
        rs = sorted(r for r, _ in R[lang]["boilerplate"])
        q = lambda f: rs[int(f * (len(rs) - 1))]  # noqa: E731
        w(f"{'Chinese' if lang == 'zh' else 'English'}: median {q(0.5):.0%}, quartiles {q(0.25):.0%} and {q(0.75):.0%}, "
          f"90th percentile {q(0.9):.0%}, range {rs[0]:.0%}–{rs[-1]:.0%} ({len(rs)} pairs);")
    w("for comparison, `edit5` changes 5 % of the words.")
    w("")
    w("Why no weighting that ignores where a word stands can reach 0.95 here: SimHash sets each bit from")
    w("the sign of a random projection of the weight vector, so two texts differ in a bit with")
    w("probability θ/π, θ the angle between their weight vectors. Added text of equal weights, a share r")
    w("of the body's (squared) weight, gives cos θ = 1/√(1 + r): for independent bits, 95 % of pairs")
    w("within k = 7 needs r ≤ 4.1 % (mean distance 4.1), within k = 8 r ≤ 5.8 %; at r = 10 % the")
    w("expected recall is 0.72 at k = 7, at r = 20 % 0.36, at r = 30 % 0.18. Only weights that make the")
    w("added words count less than the body's can help: an IDF (the chrome's words are common ones) or")
    w("the position (chrome is at the edges).")
    w("")
    w("Recall of `boilerplate` pairs by added / body characters, at k = 7 and 8 (pairs per bucket in the")
    w("header):")
    w("")
    for lang in ("zh", "en"):
        bps = R[lang]["boilerplate"]
        counts = [sum(1 for r, _ in bps if bucket_of(r) == i) for i in range(len(BP_BUCKETS))]
        cols = [i for i in range(len(BP_BUCKETS)) if counts[i]]
        w(f"{'Chinese' if lang == 'zh' else 'English'}:")
        w("")
        w("| configuration | k | " + " | ".join(f"{bucket_label(i)} ({counts[i]})" for i in cols) + " | all |")
        w("| --- | ---: | " + " | ".join("---:" for _ in cols) + " | ---: |")
        for s in SPECS:
            for k in (7, 8):
                cells = []
                for i in cols:
                    ds = [d[s] for r, d in bps if bucket_of(r) == i]
                    cells.append(f"{sum(x <= k for x in ds) / len(ds):.2f}")
                allr = sum(d[s] <= k for _, d in bps) / len(bps)
                w(f"| {NAME[s]} | {k} | " + " | ".join(cells) + f" | {allr:.2f} |")
        w("")
    w("## Small-edit recall counted both ways")
    w("")
    w("The objective's recall (mean over edit2, edit5, reorder, boilerplate and format; Chinese also")
    w("traditional) as the evaluation set has it (`all`), and with the boilerplate kind restricted to the")
    w("pairs whose added header and footer are at most 10 %, 20 % or 30 % of the body — the evaluation set")
    w("itself is unchanged; this only shows how much of the gap is the size of that one edit. False")
    w("matches per lookup at 1M rows (documents) beside it; `ok` when both languages stay ≤ 0.1 and the")
    w("mean unrelated distance is ≥ 29 in both.")
    w("")
    w("| configuration | k | zh all | zh ≤ 10 % | zh ≤ 20 % | zh ≤ 30 % | en all | en ≤ 10 % | en ≤ 20 % | en ≤ 30 % | false/lookup zh / en | ok |")
    w("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for s in SPECS:
        zh, en = R["zh"]["long_pop"][s], R["en"]["long_pop"][s]
        for k in (7, 8):
            ok = (zh["mean"] >= 29 and en["mean"] >= 29 and zh["false"][k][1] <= 0.1 and en["false"][k][1] <= 0.1)
            cells = []
            for lang in ("zh", "en"):
                cells.append(f"{small_recall(R, lang, s, k):.3f}")
                for lim in BP_LIMITS:
                    v = small_recall(R, lang, s, k, lim)
                    cells.append("—" if v is None else f"{v:.3f}")
            w(f"| {NAME[s]} | {k} | " + " | ".join(cells) +
              f" | {fmt_false(zh['false'][k])} / {fmt_false(en['false'][k])} | {'ok' if ok else 'no'} |")
    w("")


def report(R):
    L = []
    w = L.append
    w("# Accuracy and spread of the fingerprint (algorithm v2 candidates)")
    w("")
    w("Generated by `bench/studies/spread/spread.py` (method: its docstring). Fingerprints from the core")
    w("crate (`core/examples/spread.rs`), identical to SQL `simhash()`. Configurations are")
    w("`tokenizer:shingle:weighting:stopwords:fold`.")
    w("")
    w("False matches per lookup: unrelated rows found within distance k of a new text in a table of")
    w("1,000,000 rows, i.e. 10^6 × (unrelated pairs within k) / (unrelated pairs). A number with `~`")
    w("had fewer than 10 pairs within k and is extrapolated from the measured tail (log-linear fit of")
    w("the cumulative share at the next distances up to 14 with ≥ 10 pairs; the log of such a tail is")
    w("concave, so the line is expected to lie above it), or is the rule-of-three bound 3/pairs when no")
    w("fit is possible; a plain number is the count itself.")
    w("")
    w("## Summary: the objective of issue 9")
    w("")
    w("Per configuration, on documents: whether unrelated documents sit at least 29 bits apart on")
    w("average in both languages, the largest k whose false matches per lookup at 1M rows stay ≤ 0.1 in")
    w("both languages (`—`: none from 3 up), and the recall of small edits at that k (mean over edit2,")
    w("edit5, reorder, boilerplate and format; Chinese also traditional) with the worst kind; then the same")
    w("recall at k = 8 with its false matches, for comparison.")
    w("")
    w("| configuration | spec | mean ≥ 29 | k | small-edit recall zh (worst) | small-edit recall en (worst) | at k=8: zh (worst) | en (worst) | false/lookup k=8 zh / en |")
    w("| --- | --- | --- | ---: | --- | --- | --- | --- | --- |")
    for s in SPECS:
        zh, en = R["zh"]["long_pop"][s], R["en"]["long_pop"][s]
        ok = zh["mean"] >= 29 and en["mean"] >= 29
        bk = best_k(zh, en)

        def small(lang, k):
            rec, n = R[lang]["long_recall"]
            kinds = SMALL_KINDS + (["traditional"] if lang == "zh" else [])
            vals = [(rec[s][x][k], x) for x in kinds]
            worst = min(vals)
            return f"{sum(v for v, _ in vals) / len(vals):.2f} ({worst[1]} {worst[0]:.2f})"

        at = (f"{small('zh', bk)} | {small('en', bk)}") if bk else "— | —"
        w(f"| {NAME[s]} | `{s}` | {'yes' if ok else 'no'} | {bk or '—'} | {at} | {small('zh', 8)} | {small('en', 8)} | "
          f"{fmt_false(zh['false'][8])} / {fmt_false(en['false'][8])} |")
    w("")
    boilerplate_sections(R, w)
    for pop, title in (("long", "Documents (300-3000 characters)"), ("short", "Short texts (20-199 characters)")):
        w(f"## {title}")
        w("")
        zh, en = R["zh"][f"{pop}_pop"], R["en"][f"{pop}_pop"]
        s0 = SPECS[0]
        w(f"Unrelated populations: Chinese {len(R['zh']['docs' if pop == 'long' else 'shorts'])} texts, "
          f"{zh[s0]['pairs']:,} pairs; English {len(R['en']['docs' if pop == 'long' else 'shorts'])} texts, "
          f"{en[s0]['pairs']:,} pairs (0.2.0 default; related pairs removed).")
        w("")
        w("| configuration | spec | mean zh | p1 zh | mean en | p1 en | " +
          " | ".join(f"false/lookup k={k} zh / en" for k in KS) + " | largest k ≤ 0.1 |")
        w("| --- | --- | ---: | ---: | ---: | ---: | " + " | ".join("---:" for _ in KS) + " | ---: |")
        for s in SPECS:
            bk = best_k(zh[s], en[s])
            w(f"| {NAME[s]} | `{s}` | {zh[s]['mean']:.1f} | {zh[s]['p1']} | {en[s]['mean']:.1f} | {en[s]['p1']} | " +
              " | ".join(f"{fmt_false(zh[s]['false'][k])} / {fmt_false(en[s]['false'][k])}" for k in KS) +
              f" | {bk if bk is not None else '—'} |")
        w("")
        for lang in ("zh", "en"):
            rec, n = R[lang][f"{pop}_recall"]
            kinds = list(n)
            w(f"Recall of near-duplicates, {'Chinese' if lang == 'zh' else 'English'} {pop} texts, at k = 3..8 "
              f"(pairs per kind: {', '.join(f'{k} {n[k]}' for k in kinds)})")
            w("")
            w("| configuration | k | " + " | ".join(kinds) + " |")
            w("| --- | ---: | " + " | ".join("---:" for _ in kinds) + " |")
            for s in SPECS:
                for k in KS:
                    w(f"| {NAME[s]} | {k} | " + " | ".join(f"{rec[s][kind][k]:.2f}" for kind in kinds) + " |")
            w("")
    with open(os.path.join(RESULTS, "accuracy.md"), "w") as f:
        f.write("\n".join(L) + "\n")

    B = []
    w = B.append
    w("# Band skew of the candidate configurations (four bands of 16 bits)")
    w("")
    w("Generated by `bench/studies/spread/spread.py`. Largest bucket over the four 16-bit bands of each population")
    w("(all texts with a fingerprint) against the expected largest bucket of uniformly random")
    w("fingerprints (Poisson occupancy, E[max] = Σ_m 1 − F(m)^65536 with λ = N/65536).")
    w("")
    w("| configuration | spec | population | N | distinct fingerprints | largest bucket (bands 0-3) | uniform E[max] | × uniform |")
    w("| --- | --- | --- | ---: | ---: | --- | ---: | ---: |")
    for lang in ("zh", "en"):
        for pop in ("long", "short"):
            st = R[lang][f"{pop}_pop"]
            for s in SPECS:
                b = st[s]["bands"]
                n = b[0][1]
                w(f"| {NAME[s]} | `{s}` | {lang} {pop} | {n} | {st[s]['distinct']} | "
                  f"{', '.join(str(x) for x, _ in b)} | {st[s]['uniform_max']:.1f} | {st[s]['band_max'] / st[s]['uniform_max']:.1f} |")
    w("")
    w("Examples of unrelated pairs within distance 3 (texts cut to 100 characters):")
    w("")
    for lang in ("zh", "en"):
        for pop in ("long", "short"):
            st = R[lang][f"{pop}_pop"]
            texts = R[lang]["docs" if pop == "long" else "shorts"]
            for s in (SPECS[0],):
                for i, j, d in st[s]["examples"][:3]:
                    w(f"- {lang} {pop}, `{s}`, d = {d}: {texts[i][:100]!r} / {texts[j][:100]!r}")
    with open(os.path.join(RESULTS, "bands.md"), "w") as f:
        f.write("\n".join(B) + "\n")


if __name__ == "__main__":
    main()
