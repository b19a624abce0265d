"""Accuracy of near-duplicate detection on the evaluation pairs of evalset.py (built by prepare.py).

Fingerprints are computed by the SQL function simhash() in the benchmark's PostgreSQL server, one
statement per configuration over all evaluation texts, two configurations at a time (two cores).
A pair is predicted "near-duplicate" at threshold k when both texts have a fingerprint and
hamming(a, b) <= k (a NULL fingerprint is nobody's duplicate, docs/ARCHITECTURE.md §2.9). pg_trgm's
similarity(a, b) is computed on the same pairs in the same server, predicted duplicate at >= t.
"""

import os
import queue
import threading
from collections import Counter

from common import DATA, LANG_NAME, LANGS, connect, copy_rows, md_table, progress, write_result
from evalset import NEGATIVE_KINDS, POSITIVE_KINDS

THRESHOLDS = range(0, 9)
TRGM_THRESHOLDS = [round(0.05 * i, 2) for i in range(1, 20)]
DEFAULT = ("jieba", 1, "tf", True)
MASK = (1 << 64) - 1


def configs():
    out = []
    for tok in ("jieba", "word", "char"):
        for shingle in (1, 2, 3):
            for weighting in ("tf", "binary", "tfidf"):
                if weighting == "tfidf" and shingle != 1:
                    continue  # docs/ARCHITECTURE.md §2.7: tfidf only with shingle = 1
                for stop in (True, False):
                    out.append((tok, shingle, weighting, stop))
    return out


def label(c):
    return f"{c[0]}:{c[1]}:{c[2]}:{'true' if c[3] else 'false'}"


def load(conn):
    conn.execute("DROP TABLE IF EXISTS eval_docs, eval_pairs")
    conn.execute("CREATE TABLE eval_docs (lang text, id int, body text, PRIMARY KEY (lang, id))")
    conn.execute("CREATE TABLE eval_pairs (lang text, a int, b int, label int, kind text)")
    with open(os.path.join(DATA, "eval_docs.tsv"), encoding="utf-8") as f:
        rows = (line.rstrip("\n").split("\t", 2) for line in f)
        copy_rows(conn, "eval_docs", ["lang", "id", "body"], ((l, int(i), t) for l, i, t in rows))
    pairs = []
    with open(os.path.join(DATA, "eval_pairs.tsv"), encoding="utf-8") as f:
        for line in f:
            lang, a, b, lab, kind = line.rstrip("\n").split("\t")
            pairs.append((lang, int(a), int(b), int(lab), kind))
    copy_rows(conn, "eval_pairs", ["lang", "a", "b", "label", "kind"], pairs)
    conn.execute("VACUUM ANALYZE eval_docs, eval_pairs")
    return pairs


def fingerprints(all_configs):
    """{config: {(lang, id): fp or None}}, two statements at a time."""
    todo = queue.Queue()
    for c in all_configs:
        todo.put(c)
    out, errors = {}, []
    lock = threading.Lock()

    def worker():
        conn = connect()
        conn.execute("SET max_parallel_workers_per_gather = 0")
        while True:
            try:
                c = todo.get_nowait()
            except queue.Empty:
                break
            try:
                rows = conn.execute(
                    "SELECT lang, id, simhash(body, tokenizer => %s, shingle => %s, weighting => %s, stopwords => %s) "
                    "FROM eval_docs", c).fetchall()
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append((c, e))
                continue
            with lock:
                out[c] = {(l, i): (fp & MASK if fp is not None else None) for l, i, fp in rows}
                progress(f"  fingerprints {label(c)} ({len(out)}/{len(all_configs)})")
        conn.close()

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise RuntimeError(f"simhash() failed: {errors[:3]}")
    return out


def trigram_similarity(conn):
    rows = conn.execute(
        "SELECT p.lang, p.a, p.b, similarity(x.body, y.body) FROM eval_pairs p "
        "JOIN eval_docs x ON x.lang = p.lang AND x.id = p.a "
        "JOIN eval_docs y ON y.lang = p.lang AND y.id = p.b").fetchall()
    return {(l, a, b): s for l, a, b, s in rows}


def scores(pairs, predict):
    """precision, recall, f1, tp, fp, fn, Counter of predicted-positive kinds."""
    tp = fp = fn = 0
    hits = Counter()
    for p in pairs:
        yes = predict(p)
        if yes:
            hits[p[4]] += 1
        if p[3] and yes:
            tp += 1
        elif p[3]:
            fn += 1
        elif yes:
            fp += 1
    prec = tp / (tp + fp) if tp + fp else None
    rec = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * prec * rec / (prec + rec) if prec and rec else 0.0
    return prec, rec, f1, tp, fp, fn, hits


def f2(x):
    return "—" if x is None else f"{x:.2f}"


def main():
    conn = connect()
    conn.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    progress("accuracy: loading the evaluation set")
    pairs = load(conn)
    all_configs = configs()
    progress(f"accuracy: {len(all_configs)} configurations x {conn.execute('SELECT count(*) FROM eval_docs').fetchone()[0]} texts through SQL simhash()")
    fps = fingerprints(all_configs)
    progress("accuracy: pg_trgm similarity() on the same pairs")
    trgm = trigram_similarity(conn)
    conn.close()

    out = ["## Accuracy: precision and recall of near-duplicate detection", ""]
    out.append("Fingerprints computed by the SQL function `simhash()` (PostgreSQL 15, this extension). "
               "Configurations are written `tokenizer:shingle:weighting:stopwords`, the arguments of "
               f"`simhash()`; the current default is `{label(DEFAULT)}`. A pair counts as found at "
               "threshold k when hamming(a, b) <= k. Best k is the threshold with the highest F1 (ties: "
               "the smaller k); 4 bands of 16 bits find every pair up to k = 3 (pigeonhole), so the `k<=3` column "
               "is what the default band index can deliver. k = 8 is the top of the range measured: where the "
               "best k is 8, F1 may still rise beyond it.")
    out.append("")
    summary = {}
    for lang in LANGS:
        lp = [p for p in pairs if p[0] == lang]
        npos = sum(1 for p in lp if p[3])
        kinds = Counter(p[4] for p in lp)
        out.append(f"### {LANG_NAME[lang]}")
        out.append("")
        out.append(f"{len(lp)} pairs: {npos} near-duplicates ("
                   + ", ".join(f"{k} {kinds[k]}" for k in POSITIVE_KINDS) + f"), {len(lp) - npos} negatives ("
                   + ", ".join(f"{k} {kinds[k]}" for k in NEGATIVE_KINDS) + ").")
        out.append("")
        best_rows, grid_rows, per = [], [], {}
        for c in all_configs:
            fp = fps[c]
            nulls = sum(1 for (l, _), v in fp.items() if l == lang and v is None)

            def pred_k(k, fp=fp):
                def f(p):
                    a, b = fp[(p[0], p[1])], fp[(p[0], p[2])]
                    return a is not None and b is not None and bin(a ^ b).count("1") <= k
                return f

            res = {k: scores(lp, pred_k(k)) for k in THRESHOLDS}
            best_k = max(THRESHOLDS, key=lambda k: (res[k][2], -k))
            best3 = max((k for k in THRESHOLDS if k <= 3), key=lambda k: (res[k][2], -k))
            per[c] = (res, best_k, best3, nulls)
            summary[(lang, c)] = res
        order = sorted(all_configs, key=lambda c: -per[c][0][per[c][1]][2])
        for c in order:
            res, k, k3, nulls = per[c]
            prec, rec, f1, tp, fp_, fn, hits = res[k]
            best_rows.append([("**" + label(c) + "**") if c == DEFAULT else label(c), k, f2(prec), f2(rec), f2(f1),
                              f"{res[k3][2]:.2f} (k={k3})",
                              hits["random"], hits["same-source"], hits["template"], nulls])
            grid_rows.append([label(c)] + [f"{f2(res[k][0])}/{res[k][1]:.2f}" for k in THRESHOLDS])
        out.append("**Best threshold per configuration** (sorted by F1; FP columns: false positives by kind of "
                   "negative at best k; NULL: texts without a fingerprint)")
        out.append("")
        out.append(md_table(["configuration", "best k", "P", "R", "F1", "best F1 at k<=3", "FP random",
                             "FP same-source", "FP template", "NULL"], best_rows))
        out.append("")
        out.append("**Precision/recall at each Hamming threshold k**")
        out.append("")
        out.append(md_table(["configuration"] + [f"k={k}" for k in THRESHOLDS], grid_rows))
        out.append("")
        # Recall by kind of edit, at k = 3, for the default and the five best configurations.
        shown = [DEFAULT] + [c for c in order if c != DEFAULT][:5]
        rows = []
        for c in shown:
            res = per[c][0][3]
            hits = res[6]
            rows.append([label(c)] + [f"{hits[k] / kinds[k]:.2f}" for k in POSITIVE_KINDS]
                        + [f"{hits[k] / kinds[k]:.2f}" for k in NEGATIVE_KINDS])
        out.append("**Share of pairs found at k = 3, by kind** (positives: recall, higher is better; negatives: "
                   "false-positive rate, lower is better)")
        out.append("")
        out.append(md_table(["configuration"] + POSITIVE_KINDS + ["neg: " + k for k in NEGATIVE_KINDS], rows))
        out.append("")
        # pg_trgm.
        trows, best = [], None
        for t in TRGM_THRESHOLDS:
            r = scores(lp, lambda p, t=t: trgm[(p[0], p[1], p[2])] >= t)
            trows.append([f"{t:.2f}", f2(r[0]), f"{r[1]:.2f}", f"{r[2]:.2f}", r[6]["random"], r[6]["same-source"],
                          r[6]["template"]])
            if best is None or r[2] > best[1][2]:
                best = (t, r)
        summary[(lang, "trgm")] = best
        out.append("**pg_trgm `similarity(a, b) >= t`** on the same pairs")
        out.append("")
        out.append(md_table(["t", "P", "R", "F1", "FP random", "FP same-source", "FP template"], trows))
        out.append("")
        t, r = best
        bc = order[0]
        bres, bk = per[bc][0], per[bc][1]
        dres, dk = per[DEFAULT][0], per[DEFAULT][1]
        c3 = max(all_configs, key=lambda c: per[c][0][per[c][2]][2])
        r3, k3 = per[c3][0], per[c3][2]
        out.append(f"Summary {LANG_NAME[lang]}: best simhash `{label(bc)}` F1 {bres[bk][2]:.2f} at k={bk} "
                   f"(P {f2(bres[bk][0])}, R {bres[bk][1]:.2f}); best within k<=3 `{label(c3)}` F1 {r3[k3][2]:.2f} "
                   f"at k={k3} (P {f2(r3[k3][0])}, R {r3[k3][1]:.2f}); default `{label(DEFAULT)}` F1 "
                   f"{dres[dk][2]:.2f} at k={dk}, {dres[per[DEFAULT][2]][2]:.2f} at k={per[DEFAULT][2]}; "
                   f"pg_trgm best F1 {r[2]:.2f} at t={t:.2f} (P {f2(r[0])}, R {r[1]:.2f}).")
        out.append("")

    # One configuration and one k for both languages (mixed-language tables).
    rows = []
    for c in all_configs:
        for k in THRESHOLDS:
            f_zh, f_en = summary[("zh", c)][k][2], summary[("en", c)][k][2]
            rows.append(((f_zh + f_en) / 2, c, k, f_zh, f_en))
    rows.sort(key=lambda r: (-r[0], r[2]))
    out.append("### One setting for both languages")
    out.append("")
    out.append("Mean of the Chinese and English F1 at the same configuration and k (top 8, and the default at its best k):")
    out.append("")
    top = rows[:8]
    dflt = max((r for r in rows if r[1] == DEFAULT), key=lambda r: r[0])
    if dflt not in top:
        top.append(dflt)
    out.append(md_table(["configuration", "k", "mean F1", "F1 Chinese", "F1 English"],
                        [[label(c), k, f"{m:.3f}", f"{a:.2f}", f"{b:.2f}"] for m, c, k, a, b in top]))
    out.append("")
    out.append("The same within k <= 3 (what 4 bands of 16 bits guarantee to find), top 8 and the default:")
    out.append("")
    low = [r for r in rows if r[2] <= 3]
    top = low[:8]
    dflt = max((r for r in low if r[1] == DEFAULT), key=lambda r: r[0])
    if dflt not in top:
        top.append(dflt)
    out.append(md_table(["configuration", "k", "mean F1", "F1 Chinese", "F1 English"],
                        [[label(c), k, f"{m:.3f}", f"{a:.2f}", f"{b:.2f}"] for m, c, k, a, b in top]))
    text = "\n".join(out)
    write_result("accuracy_balanced.md", text)
    print(text)


if __name__ == "__main__":
    main()
