"""Reads the real text of this machine (corpus.py) and writes every input of the benchmark to
bench/data/ (git-ignored):

  t_zh.txt, t_en.txt        throughput tables: one document per line, THROUGHPUT_MB each; the
                            Chinese text shipped here is smaller than that, so its documents are
                            cycled (repeated in order) until the size is reached
  eval_docs.tsv             lang, id, text            (accuracy set, see evalset.py)
  eval_pairs.tsv            lang, a, b, label, kind
  paragraphs_zh/en.txt      every distinct paragraph (band-skew population)
  sources.txt               how much text each source gave
"""

import os
import sys

import corpus
import evalset
from common import DATA, LANGS, progress

THROUGHPUT_MB = float(os.environ.get("BENCH_THROUGHPUT_MB", "24"))
BASES = int(os.environ.get("BENCH_BASES", "150"))  # x 8 positive pairs per language
N_RANDOM, N_SAME, N_TEMPLATE = 600, 300, 300  # negative pairs per language


def main():
    os.makedirs(DATA, exist_ok=True)
    stats = []
    docs_out = open(os.path.join(DATA, "eval_docs.tsv"), "w", encoding="utf-8")
    pairs_out = open(os.path.join(DATA, "eval_pairs.tsv"), "w", encoding="utf-8")
    for lang in LANGS:
        progress(f"corpus {lang}: reading the text shipped on this machine")
        c = corpus.Corpus(lang)
        kinds = {}
        for name, paras in c.sources:
            k = name.split(":", 1)[0]
            n, b = kinds.get(k, (0, 0))
            kinds[k] = (n + 1, b + sum(len(p.encode()) for p in paras))
        for k, (n, b) in sorted(kinds.items()):
            stats.append(f"{lang}\t{k}\t{n} files\t{b / 1e6:.1f} MB")

        # Throughput table: all documents (boilerplate included: it is real text), in source order.
        docs = [d for _, d in c.documents(seed=11, drop_boilerplate=False)]
        target = int(THROUGHPUT_MB * 1e6)
        out, size, cycles = [], 0, 0
        while size < target and docs:
            for d in docs:
                d = corpus.one_line(d)
                out.append(d)
                size += len(d.encode())
                if size >= target:
                    break
            cycles += 1
        real = sum(len(corpus.one_line(d).encode()) for d in docs)
        corpus.write_lines(os.path.join(DATA, f"t_{lang}.txt"), out)
        stats.append(f"{lang}\tthroughput\t{len(out)} documents\t{size / 1e6:.1f} MB "
                     f"({real / 1e6:.1f} MB of distinct documents, cycled {cycles}x)")

        paras = list(c.paragraphs())
        n = corpus.write_lines(os.path.join(DATA, f"paragraphs_{lang}.txt"), paras)
        stats.append(f"{lang}\tparagraphs\t{len(paras)} distinct\t{n / 1e6:.1f} MB")

        progress(f"corpus {lang}: building the evaluation pairs")
        texts, pairs, dropped = evalset.build(c, BASES, N_RANDOM, N_SAME, N_TEMPLATE, seed=20240 + LANGS.index(lang))
        for i, t in enumerate(texts):
            docs_out.write(f"{lang}\t{i}\t{corpus.one_line(t)}\n")
        for a, b, label, kind in pairs:
            pairs_out.write(f"{lang}\t{a}\t{b}\t{label}\t{kind}\n")
        pos = sum(1 for p in pairs if p[2])
        stats.append(f"{lang}\teval\t{len(texts)} texts, {pos} positive and {len(pairs) - pos} negative pairs, "
                     f"{dropped} negative draws rejected as corpus near-copies, "
                     f"{len(c.boilerplate)} boilerplate paragraphs in the header/footer pool")
    docs_out.close()
    pairs_out.close()
    with open(os.path.join(DATA, "sources.txt"), "w") as f:
        f.write("\n".join(stats) + "\n")
    for s in stats:
        print("   " + s, file=sys.stderr)


if __name__ == "__main__":
    main()
