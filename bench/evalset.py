"""The accuracy evaluation set: labelled pairs of real documents and realistic edits of them.

Per language (Chinese, English), from the documents of corpus.py (boilerplate paragraphs removed):

Positives (near-duplicates): a base document and one edited copy of it, one pair per kind of edit:
  edit2 / edit5 / edit10 / edit20  word-level insertions, deletions and substitutions touching about
                                   2 / 5 / 10 / 20 % of the words (English) or characters (Chinese)
  reorder      about a quarter of the sentences moved elsewhere in the text
  boilerplate  a site header and footer wrapped around the text
  format       punctuation changes (dropped commas, full-width <-> half-width punctuation, quote
               styles), full-width Latin letters and digits, upper/title case, extra whitespace
  mixed        edit5 + reorder + boilerplate + format together

Negatives (not duplicates):
  random       two documents from different source files
  same-source  two different parts of one source file (same topic, same author, different text)
  template     one header + footer (the same boilerplate) wrapped around two different short bodies

A negative whose two texts (bodies, for template pairs) share more than 30 % of their character
4-grams is a mislabelled near-duplicate of the corpus itself (packages ship copies of one another's
pages) and is replaced by another draw.
"""

import math
import random
import re

from corpus import cut_at_sentence

POSITIVE_KINDS = ["edit2", "edit5", "edit10", "edit20", "reorder", "boilerplate", "format", "mixed"]
NEGATIVE_KINDS = ["random", "same-source", "template"]
EDIT_RATES = {"edit2": 0.02, "edit5": 0.05, "edit10": 0.10, "edit20": 0.20}

# Site chrome of the kind that gets wrapped around copied text; written for this benchmark.
OWN_HEADERS = {
    "zh": [
        "【内部文档】本文由知识库自动同步，最后更新于 2023 年 4 月 12 日。",
        "首页 > 技术文档 > 系统管理 > 命令参考",
        "温馨提示：本页内容仅供参考，具体以实际环境为准。",
        "本文转自运维笔记专栏，作者：小王，阅读时间约 5 分钟。",
    ],
    "en": [
        "Home > Documentation > Administration > Command reference",
        "This article was imported automatically from the internal wiki on 12 April 2023.",
        "Note: the content below is provided for reference only and may be out of date.",
        "Posted in Ops Notes by admin | 5 min read | 3 comments",
    ],
}
OWN_FOOTERS = {
    "zh": [
        "版权所有 © 2023 示例科技有限公司。未经许可，禁止转载。",
        "如果本文对您有帮助，欢迎点赞、收藏并分享给更多的朋友。",
        "相关阅读：Linux 常用命令速查表 | Shell 脚本入门 | 系统调优指南",
        "以上内容如有错误，请在评论区留言指正，我们会尽快更新。",
    ],
    "en": [
        "Copyright © 2023 Example Corp. All rights reserved. Do not reproduce without permission.",
        "Was this page helpful? Share it with your colleagues and tell us what we can improve.",
        "Related reading: Shell scripting basics | Linux command cheat sheet | Tuning guide",
        "Found a mistake? Leave a comment below and we will update the page as soon as we can.",
    ],
}

SENTENCE = re.compile(r"[^.!?。！？；;]*[.!?。！？；;]+\s*|[^.!?。！？；;]+$")


def _units(text, lang):
    """Edit units: words (English); CJK characters and Latin words (Chinese); with separators."""
    if lang == "en":
        return re.findall(r"\S+|\s+", text)
    return re.findall(r"[A-Za-z0-9_]+|\s+|.", text)


def _is_content(u):
    return any(c.isalnum() for c in u)


class Editor:
    def __init__(self, lang, vocabulary_texts, seed):
        self.lang = lang
        self.rng = random.Random(seed)
        # Words to insert or substitute: real words (English) or real 1-3 character runs (Chinese)
        # drawn from other documents of the corpus.
        vocab = []
        for t in vocabulary_texts:
            if lang == "en":
                vocab.extend(w.strip(".,;:()[]\"'") for w in t.split() if w.isascii() and any(c.isalpha() for c in w))
            else:
                for run in re.findall(r"[\u4e00-\u9fff]+", t):
                    for _ in range(max(1, len(run) // 4)):
                        n = self.rng.choice((1, 2, 2, 3))
                        if len(run) >= n:
                            i = self.rng.randrange(len(run) - n + 1)
                            vocab.append(run[i:i + n])
        self.vocab = [w for w in vocab if w] or ["x"]

    def word_edits(self, text, rate):
        rng = self.rng
        us = _units(text, self.lang)
        content = sum(1 for u in us if _is_content(u))
        span = 1 if self.lang == "en" else 1.6  # a Chinese edit touches 1-2 characters
        n = max(1, round(rate * content / span))
        for _ in range(n):
            idx = [i for i, u in enumerate(us) if _is_content(u)]
            if not idx:
                break
            i = rng.choice(idx)
            op = rng.choice(("ins", "del", "sub"))
            word = rng.choice(self.vocab)
            if self.lang == "en":
                if op == "ins":
                    us[i:i] = [word, " "]
                elif op == "del":
                    del us[i:i + 2]
                else:
                    us[i] = word
            else:
                width = rng.choice((1, 2))
                if op == "ins":
                    us[i:i] = list(word)
                elif op == "del":
                    del us[i:i + width]
                else:
                    us[i:i + width] = list(word)
        return "".join(us)

    def reorder(self, text):
        rng = self.rng
        sents = [s for s in SENTENCE.findall(text) if s.strip()]
        if len(sents) < 3:
            sents = [s for s in re.findall(r"[^,，]*[,，]?\s*", text) if s]
        if len(sents) < 2:
            return text
        for _ in range(max(1, round(0.25 * len(sents)))):
            s = sents.pop(rng.randrange(len(sents)))
            sents.insert(rng.randrange(len(sents) + 1), s)
        out = ""
        for s in sents:
            if self.lang == "en" and out and not out[-1].isspace() and not s[0].isspace():
                out += " "
            out += s
        return out

    def chrome(self, boilerplate):
        """A (header, footer) pair: own site chrome plus boilerplate paragraphs of the corpus."""
        rng = self.rng
        header = rng.choice(OWN_HEADERS[self.lang])
        footer = rng.choice(OWN_FOOTERS[self.lang])
        if boilerplate:
            header += " " + rng.choice(boilerplate)
            footer = rng.choice(boilerplate) + " " + footer
        return header, footer

    def wrap(self, text, header, footer):
        return f"{header} {text} {footer}"

    def copy(self, kind, text, boilerplate):
        """One copy of `text` of the positive kind `kind` (POSITIVE_KINDS)."""
        if kind in EDIT_RATES:
            return self.word_edits(text, EDIT_RATES[kind])
        if kind == "reorder":
            return self.reorder(text)
        if kind == "boilerplate":
            return self.wrap(text, *self.chrome(boilerplate))
        if kind == "format":
            return self.format(text)
        if kind == "mixed":
            return self.format(self.wrap(self.reorder(self.word_edits(text, 0.05)), *self.chrome(boilerplate)))
        raise ValueError(f"no such kind of copy: {kind}")

    def format(self, text):
        rng = self.rng
        if self.lang == "en":
            words = text.split(" ")
            out = []
            for w in words:
                r = rng.random()
                if r < 0.08:
                    w = w.upper()
                elif r < 0.16:
                    w = w.capitalize() if w[:1].islower() else w.lower()
                elif r < 0.24:
                    w = to_fullwidth(w)
                if w.endswith(",") and rng.random() < 0.3:
                    w = w[:-1]
                elif w.endswith(".") and rng.random() < 0.2:
                    w = w[:-1] + ";"
                out.append(w)
                if rng.random() < 0.05:
                    out.append("")  # a doubled space
            text = " ".join(out)
            text = text.replace('"', "”").replace("'", "’").replace("--", "—")
            return text
        # Chinese: swap punctuation between full and half width, widen Latin text, upper-case it.
        half = {"，": ",", "。": ".", "：": ":", "；": ";", "（": "(", "）": ")", "！": "!", "？": "?"}
        full = {v: k for k, v in half.items()}
        chars = []
        for c in text:
            if c in half and rng.random() < 0.5:
                c = half[c]
            elif c in full and rng.random() < 0.5:
                c = full[c]
            chars.append(c)
            if "\u4e00" <= c <= "\u9fff" and rng.random() < 0.02:
                chars.append(" ")
        text = "".join(chars)

        def latin(m):
            w = m.group(0)
            r = rng.random()
            if r < 0.4:
                return to_fullwidth(w)
            if r < 0.7:
                return w.upper()
            return w

        return re.sub(r"[A-Za-z0-9]+", latin, text)


def to_fullwidth(s):
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in s)


def char4(text):
    t = re.sub(r"\s+", "", text.lower())
    return {t[i:i + 4] for i in range(max(1, len(t) - 3))}


def jaccard(a, b):
    return len(a & b) / max(1, len(a | b))


def build(corpus, per_lang_bases, n_random, n_same, n_template, seed):
    """Returns (texts, pairs): texts is a list of strings, pairs a list of
    (index a, index b, label, kind)."""
    lang = corpus.lang
    rng = random.Random(seed)
    docs = corpus.documents(seed, drop_boilerplate=True)
    by_source = {}
    for si, d in docs:
        by_source.setdefault(si, []).append(d)
    sources = sorted(by_source)
    vocab_docs = [d for _, d in rng.sample(docs, min(400, len(docs)))]
    ed = Editor(lang, vocab_docs, seed + 1)
    texts, pairs = [], []

    def add(t):
        texts.append(t)
        return len(texts) - 1

    # Positives: one base per source, as many sources as bases.
    for si in rng.sample(sources, min(per_lang_bases, len(sources))):
        base = rng.choice(by_source[si])
        b = add(base)
        for kind in POSITIVE_KINDS:
            pairs.append((b, add(ed.copy(kind, base, corpus.boilerplate)), 1, kind))

    dropped = 0

    def distinct(x, y):
        nonlocal dropped
        if jaccard(char4(x), char4(y)) > 0.3:
            dropped += 1
            return False
        return True

    multi = [s for s in sources if len(by_source[s]) >= 2]
    made = {"random": 0, "same-source": 0, "template": 0}
    tries = 0
    while made["random"] < n_random and tries < 50 * n_random:
        tries += 1
        s1, s2 = rng.sample(sources, 2)
        x, y = rng.choice(by_source[s1]), rng.choice(by_source[s2])
        if distinct(x, y):
            pairs.append((add(x), add(y), 0, "random"))
            made["random"] += 1
    tries = 0
    while made["same-source"] < n_same and multi and tries < 50 * n_same:
        tries += 1
        s = rng.choice(multi)
        x, y = rng.sample(by_source[s], 2)
        if distinct(x, y):
            pairs.append((add(x), add(y), 0, "same-source"))
            made["same-source"] += 1
    tries = 0
    while made["template"] < n_template and tries < 50 * n_template:
        tries += 1
        s1, s2 = rng.sample(sources, 2)
        # Short bodies, so that the shared template is a large part of each text.
        x = cut_at_sentence(rng.choice(by_source[s1]), int(math.exp(rng.uniform(math.log(150), math.log(1200)))))
        y = cut_at_sentence(rng.choice(by_source[s2]), int(math.exp(rng.uniform(math.log(150), math.log(1200)))))
        if distinct(x, y):
            header, footer = ed.chrome(corpus.boilerplate)
            pairs.append((add(ed.wrap(x, header, footer)), add(ed.wrap(y, header, footer)), 0, "template"))
            made["template"] += 1
    return texts, pairs, dropped
