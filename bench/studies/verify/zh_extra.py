"""More real Chinese text for bench/studies/verify/verify_eval.py's precision populations: the HTML manuals of the
Debian packages gimp-help-zh-cn, debian-reference-zh-cn and debian-edu-doc-zh-cn, unpacked (not
installed) under bench/data/zhextra/root (git ignores bench/data/):

    mkdir -p bench/data/zhextra && cd bench/data/zhextra
    apt-get download gimp-help-zh-cn debian-reference-zh-cn debian-edu-doc-zh-cn
    for f in *.deb; do dpkg -x "$f" root; done

Paragraphs are the text of <p>, <li>, <dd>, <dt>, <td>, <h1>-<h4> and <title> elements (scripts,
styles and <pre> skipped), whitespace collapsed, kept when they are Chinese (evalset's test).
Documents: runs of consecutive paragraphs of one file, 300-3000 characters (as corpus.py builds
them); short texts: paragraphs and sentences (split after 。！？；) of 20-199 characters. Both
deduplicated exactly."""
import glob
import html.parser
import os
import random
import re

import sys

HERE = os.path.dirname(os.path.abspath(__file__))  # bench/studies/verify
BENCH = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, BENCH)
sys.path.insert(0, os.path.join(BENCH, "studies", "spread"))
import spread  # noqa: E402

ROOT = os.path.join(BENCH, "data", "zhextra", "root")
BLOCK = {"p", "li", "dd", "dt", "td", "th", "h1", "h2", "h3", "h4", "title", "div", "br", "tr"}
SKIP = {"script", "style", "pre"}


class _P(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.paras, self.cur, self.skip = [], [], 0

    def flush(self):
        t = re.sub(r"\s+", " ", "".join(self.cur)).strip()
        if t:
            self.paras.append(t)
        self.cur = []

    def handle_starttag(self, tag, attrs):
        if tag in SKIP:
            self.skip += 1
        if tag in BLOCK:
            self.flush()

    def handle_endtag(self, tag):
        if tag in SKIP and self.skip:
            self.skip -= 1
        if tag in BLOCK:
            self.flush()

    def handle_data(self, data):
        if not self.skip:
            self.cur.append(data)


def paragraphs():
    """[[paragraph]] per file, files sorted."""
    out = []
    for path in sorted(glob.glob(os.path.join(ROOT, "**", "*.htm*"), recursive=True)):
        p = _P()
        with open(path, encoding="utf-8", errors="replace") as f:
            p.feed(f.read())
        p.flush()
        paras = [x for x in p.paras if spread.evalset_is_lang(x, "zh")]
        if paras:
            out.append(paras)
    return out


def populations(seed=43):
    files = paragraphs()
    rng = random.Random(seed)
    docs, shorts = [], []
    for paras in files:
        cur, size = [], 0
        target = int(300 * (10 ** rng.uniform(0, 1)))
        for p in paras:
            p = p[:3000]
            if size and size + len(p) > 3000:
                if size >= 300:
                    docs.append(" ".join(cur))
                cur, size, target = [], 0, int(300 * (10 ** rng.uniform(0, 1)))
            cur.append(p)
            size += len(p) + 1
            if size >= target:
                docs.append(" ".join(cur))
                cur, size, target = [], 0, int(300 * (10 ** rng.uniform(0, 1)))
        if size >= 300:
            docs.append(" ".join(cur))
        for p in paras:
            parts = [p] + [s.strip() for s in re.split(r"(?<=[。！？；])", p)]
            for s in parts:
                if 20 <= len(s) < 200 and spread.evalset_is_lang(s, "zh"):
                    shorts.append(s)
    docs = list(dict.fromkeys(d for d in docs if spread.evalset_is_lang(d, "zh")))
    shorts = list(dict.fromkeys(shorts))
    return docs, shorts


if __name__ == "__main__":
    d, s = populations()
    print(len(d), len(s), sum(map(len, d)) // max(1, len(d)), sum(map(len, s)) // max(1, len(s)))
    for x in random.Random(1).sample(d, 2) + random.Random(1).sample(s, 5):
        print(repr(x[:150]))
