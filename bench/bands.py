"""Band skew: how evenly real-text fingerprints fill the 65,536 buckets of each 16-bit band
(simhash_bands(fp, 4)), against what uniformly random 64-bit values would give.

Population: every distinct paragraph of the benchmark corpus (data/paragraphs_*.txt, see
corpus.py) with a fingerprint, fingerprinted by the SQL function in the benchmark server. Real
text has real near-duplicates (generated manual pages, translated UI strings that differ by one
word), which share bands by design; the "distinct fingerprints" rows drop exact fingerprint repeats
so that what remains is closer to the hash's own behaviour.

Uniform expectation for N values in m = 65,536 buckets: occupancy ~ Poisson(λ = N/m); expected
maximum E[max] = Σ_k (1 − F(k)^m); 99.9th percentile = the Poisson quantile; share of rows in
buckets holding more than 10λ = Σ_{j>10λ} j·p(j)/λ (≈ 0).
"""

import math
import os
import threading
from collections import Counter

from common import DATA, LANG_NAME, LANGS, connect, copy_rows, md_table, progress, read_lines, write_result

M = 1 << 16
NBANDS = 4
MASK = (1 << 64) - 1
CONFIGS = [("jieba", 1, "tf"), ("jieba", 1, "tfidf"), ("char", 3, "tf")]
LONG = 200  # characters: the "longer paragraphs" population


def poisson(lam, kmax):
    p = [math.exp(-lam)]
    for k in range(1, kmax + 1):
        p.append(p[-1] * lam / k)
    return p


def uniform_stats(n):
    lam = n / M
    kmax = int(lam + 30 * math.sqrt(lam) + 60)
    p = poisson(lam, kmax)
    tails, acc = [0.0] * (kmax + 1), 0.0
    for k in range(kmax, -1, -1):
        tails[k] = acc  # P(X > k)
        acc += p[k]
    e_max = sum(1 - math.exp(M * math.log1p(-t)) if t < 1 else 1.0 for t in tails)
    cdf, q999 = 0.0, None
    for k, pk in enumerate(p):
        cdf += pk
        if cdf >= 0.999:
            q999 = k
            break
    over = sum(j * p[j] for j in range(len(p)) if j > 10 * lam) / lam if lam else 0.0
    return lam, e_max, q999, over, M * math.exp(-lam)


def band_stats(bands_of_rows, band):
    counts = Counter(b[band] for b in bands_of_rows)
    n = len(bands_of_rows)
    lam = n / M
    sizes = sorted(list(counts.values()) + [0] * (M - len(counts)))
    q999 = sizes[math.ceil(0.999 * M) - 1]
    over = sum(c for c in counts.values() if c > 10 * lam) / n
    return max(sizes), q999, over, M - len(counts), counts


def fingerprints(config):
    conn = connect()
    rows = conn.execute(
        "SELECT lang, id, fp, simhash_bands(fp, 4) FROM "
        "(SELECT lang, id, simhash(body, tokenizer => %s, shingle => %s, weighting => %s) AS fp FROM paras OFFSET 0) s "
        "WHERE fp IS NOT NULL", config).fetchall()
    nulls = conn.execute("SELECT count(*) FROM paras").fetchone()[0] - len(rows)
    conn.close()
    out = []
    for lang, pid, fp, bands in rows:
        u = fp & MASK
        # docs/ARCHITECTURE.md §4.1: band i covers bits [16i, 16i+16), unsigned.
        assert bands == [(u >> (16 * i)) & 0xFFFF for i in range(NBANDS)], (fp, bands)
        out.append((lang, pid, u, tuple(bands)))
    return out, nulls


def main():
    conn = connect()
    conn.execute("DROP TABLE IF EXISTS paras")
    conn.execute("CREATE TABLE paras (lang text, id int, body text)")
    texts = {}
    for lang in LANGS:
        paras = read_lines(os.path.join(DATA, f"paragraphs_{lang}.txt"))
        texts[lang] = paras
        copy_rows(conn, "paras", ["lang", "id", "body"], ((lang, i, t) for i, t in enumerate(paras)))
    conn.execute("VACUUM ANALYZE paras")
    conn.close()
    progress(f"bands: {sum(len(v) for v in texts.values())} paragraphs loaded; fingerprinting with "
             + ", ".join(":".join(map(str, c)) for c in CONFIGS) + " (one statement per configuration, two at a time)")
    results = {}

    todo = list(CONFIGS)

    def run():
        while todo:
            c = todo.pop(0)
            results[c] = fingerprints(c)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    out = ["## Band skew: 16-bit band buckets (4 bands) on real-text fingerprints", ""]
    out.append("Population: every distinct paragraph of the benchmark corpus that has a fingerprint "
               f"({len(texts['zh'])} Chinese, {len(texts['en'])} English paragraphs before dropping NULL fingerprints). "
               "Per band: max = largest bucket, p99.9 = 99.9th percentile of the 65,536 bucket sizes, "
               ">10λ = share of rows in buckets holding more than 10× the uniform expectation λ = N/65,536; "
               "the `uniform` columns are what uniformly random fingerprints would give.")
    out.append("")
    rows, bitrows, biggest = [], [], []
    for tok, sh, w in CONFIGS:
        cfg = f"{tok}:{sh}:{w}"
        data, nulls = results[(tok, sh, w)]
        pops = [(LANG_NAME[l] + " paragraphs", [r for r in data if r[0] == l]) for l in LANGS]
        pops.append(("all paragraphs", data))
        seen, distinct = set(), []
        for r in data:
            if r[2] not in seen:
                seen.add(r[2])
                distinct.append(r)
        pops.append(("all, distinct fingerprints", distinct))
        # Short texts have few features: ties (v[i] = 0 gives bit 0) and one dominant token decide
        # most bits. Longer paragraphs alone show how much of the skew that explains.
        pops.append((f"all, >= {LONG} characters", [r for r in data if len(texts[r[0]][r[1]]) >= LONG]))
        for name, pop in pops:
            n = len(pop)
            lam, e_max, uq, uover, uempty = uniform_stats(n)
            bl = [r[3] for r in pop]
            for b in range(NBANDS):
                mx, q, over, empty, counts = band_stats(bl, b)
                rows.append([cfg, name, b, n, f"{lam:.2f}", mx, f"{e_max:.1f}", q, uq,
                             f"{100 * over:.2f}%", f"{100 * uover:.2f}%", empty, f"{uempty:.0f}"])
                if name == "all paragraphs":
                    v, c = counts.most_common(1)[0]
                    biggest.append((c, cfg, b, v, [r for r in pop if r[3][b] == v]))
        # Bit balance: share of ones per bit.
        for name, pop in pops[-2:]:
            n = len(pop)
            ones = [sum((r[2] >> i) & 1 for r in pop) / n for i in range(64)]
            sigma = 0.5 / math.sqrt(n)
            worst = max(range(64), key=lambda i: abs(ones[i] - 0.5))
            bitrows.append([cfg, name, n, f"{min(ones):.4f}", f"{sum(ones) / 64:.4f}", f"{max(ones):.4f}",
                            worst, f"{abs(ones[worst] - 0.5) / sigma:.1f}", nulls])
    out.append(md_table(["config", "population", "band", "N", "λ", "max", "uniform E[max]", "p99.9",
                         "uniform p99.9", ">10λ", "uniform >10λ", "empty buckets", "uniform empty"], rows))
    out.append("")
    out.append("**Bit balance** (share of 1s per bit; uniformly random fingerprints stay within about ±4σ "
               "of 0.5, σ = 0.5/√N; NULL = paragraphs without a fingerprint)")
    out.append("")
    out.append(md_table(["config", "population", "N", "min share of 1s", "mean", "max share of 1s", "worst bit",
                         "worst |share−0.5| in σ", "NULL"], bitrows))
    out.append("")
    out.append("**The largest bucket of each configuration** (all paragraphs), with a few of its texts:")
    out.append("")
    for tok, sh, w in CONFIGS:
        cfg = f"{tok}:{sh}:{w}"
        c, _, b, v, members = max((x for x in biggest if x[1] == cfg), key=lambda x: x[0])
        nfp = len({r[2] for r in members})
        out.append(f"- `{cfg}`, band {b}, value {v}: {c} rows, {nfp} distinct fingerprints. Examples:")
        for r in members[:4]:
            t = texts[r[0]][r[1]]
            out.append(f"  - {t[:90]!r}{'…' if len(t) > 90 else ''}")
    text = "\n".join(out)
    write_result("bands_sql.md", text)
    print(text)


if __name__ == "__main__":
    main()
