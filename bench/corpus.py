"""Real text for the benchmark, read at run time from what Debian packages ship on this machine.

Sources (nothing of it is committed; everything lands in bench/data/, which git ignores):

* English: the English manual pages under /usr/share/man/man1..man8 (roff markup stripped here) and
  the README files under /usr/share/doc.
* Chinese: the Chinese manual pages of the `manpages-zh` package (/usr/share/man/zh_CN) and the
  translated messages (msgstr) of every gettext catalog under /usr/share/locale/zh_CN/LC_MESSAGES,
  decoded with `msgunfmt` from the `gettext` package.

Each source file becomes an ordered list of paragraphs. From those this module builds:

* documents: runs of consecutive paragraphs of one source, 300 to 3000 characters long;
* boilerplate: paragraphs that recur in many different sources (licence blurbs, bug-report
  footers, "this page was translated by" notes, gnulib messages), kept out of the evaluation
  documents and used instead as the header/footer material of the evaluation set.

The output is deterministic for a given set of installed packages (fixed seeds, sorted file lists).
"""

import glob
import gzip
import hashlib
import math
import os
import random
import re
import subprocess
from collections import defaultdict

MIN_DOC = 300
MAX_DOC = 3000

CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")


# --------------------------------------------------------------------------------------------------
# roff (man page) to paragraphs

# Macros whose arguments are running text (man(7) font macros and headings, a few mdoc ones).
TEXT_MACROS = {
    "B", "I", "BR", "BI", "IB", "IR", "RB", "RI", "SB", "SM", "SH", "SS", "IP",
    "Nd", "Sh", "Ss", "Dl", "D1", "Em", "Sy", "Pa", "Nm", "Ar", "Fl", "Cm", "Li", "Ql", "Dq", "Sq",
}
BREAK_MACROS = {"PP", "LP", "P", "TP", "IP", "SH", "SS", "sp", "HP", "Pp", "Sh", "Ss", "It", "Bl", "El"}
NAMED_GLYPHS = {
    "em": "—", "en": "–", "aq": "'", "lq": "“", "rq": "”", "oq": "‘", "cq": "’", "dq": '"',
    "co": "©", "rg": "®", "bu": "•", "mi": "-", "hy": "-", "ti": "~", "ha": "^", "rs": "\\",
    "la": "⟨", "ra": "⟩", "tm": "™", "de": "°", "mu": "×", "pl": "+", "eq": "=", "<=": "≤",
    ">=": "≥", "->": "→", "<-": "←", "sl": "/", "ba": "|", "bv": "|", "fo": "«", "fc": "»",
}

ESCAPE = re.compile(
    r"""\\(?:
        f(?:\[[^\]]*\]|\(..|.)        # font change
      | s[+-]?\d                      # size change
      | \*(?:\[[^\]]*\]|\(..|.)       # string interpolation
      | n(?:\[[^\]]*\]|\(..|.)        # number register
      | \((..)                        # \(xx named glyph
      | \[([^\]]*)\]                  # \[name] named glyph
      | [hvwlLbxo]'[^']*'             # motions and the like
      | ["#].*$                       # comment to end of line
      | (.)                           # any other one-character escape
    )""",
    re.X,
)


def _escape(m):
    glyph = m.group(1) or m.group(2)
    if glyph is not None:
        return NAMED_GLYPHS.get(glyph, "")
    c = m.group(3)
    if c is None:
        return ""
    return {"-": "-", "e": "\\", " ": " ", "~": " ", "0": " ", "t": " ", "\\": "\\", ".": ".",
            "'": "'", "`": "`"}.get(c, "")


def _macro_args(rest):
    args = re.findall(r'"((?:[^"]|"")*)"|(\S+)', rest)
    return [a or b for a, b in args]


def roff_paragraphs(src):
    """Paragraphs of running text in a man page's roff source."""
    paras, cur = [], []
    skip_until = None

    def flush():
        if cur:
            text = " ".join(cur)
            text = re.sub(r"\s+", " ", text).strip()
            if text:
                paras.append(text)
            cur.clear()

    for line in src.splitlines():
        if skip_until:
            if line.startswith(skip_until):
                skip_until = None
            continue
        if line.startswith((".", "'")):
            m = re.match(r"[.']\s*(\S*)\s*(.*)", line)
            name, rest = m.group(1), m.group(2)
            if name in ("de", "de1", "am", "ig"):
                skip_until = ".."
            elif name == "TS":
                skip_until = ".TE"
            elif name == "EQ":
                skip_until = ".EN"
            elif name == "so":
                return []  # an alias page that only includes another one
            if name in BREAK_MACROS:
                flush()
            if name in TEXT_MACROS:
                args = _macro_args(ESCAPE.sub(_escape, rest))
                sep = "" if len(name) == 2 and name.isupper() and name not in ("SH", "SS", "IP", "SM", "SB") else " "
                if name == "IP":
                    args = args[:1]
                text = sep.join(args).strip()
                if text:
                    if name in ("SH", "SS", "Sh", "Ss"):
                        paras.append(text)  # a heading is a paragraph of its own
                    else:
                        cur.append(text)
            continue
        text = ESCAPE.sub(_escape, line).strip()
        if not text:
            flush()
        else:
            cur.append(text)
    flush()
    return paras


def read_man(path):
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rb") as f:
            raw = f.read()
    except (OSError, EOFError):
        return []
    return roff_paragraphs(raw.decode("utf-8", "replace"))


def plain_paragraphs(text):
    """Paragraphs of a plain-text or Markdown README: blank-line separated, lines joined."""
    out = []
    for block in re.split(r"\n\s*\n", text):
        lines = [l.strip().strip("#*>|").strip() for l in block.splitlines()]
        para = re.sub(r"\s+", " ", " ".join(l for l in lines if l)).strip()
        if para and not re.fullmatch(r"[-=_*~`. ]+", para):
            out.append(para)
    return out


# --------------------------------------------------------------------------------------------------
# gettext catalogs

def _po_unquote(s):
    s = s.strip()
    if not (s.startswith('"') and s.endswith('"')):
        return ""
    s = s[1:-1]
    return re.sub(r'\\(.)', lambda m: {"n": "\n", "t": "\t", "r": ""}.get(m.group(1), m.group(1)), s)


def po_messages(po_text):
    """The msgstr strings of a PO file, in file order (plural forms included, header skipped)."""
    out = []
    field, msgid, strs = None, "", []

    def finish():
        if msgid and strs:
            out.extend(s for s in strs if s.strip())

    cur = None
    for line in po_text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        if line.startswith("msgctxt") or (line.startswith("msgid ") and field and field.startswith("msgstr")):
            finish()
            msgid, strs = "", []
        m = re.match(r"(msgctxt|msgid_plural|msgid|msgstr(?:\[\d+\])?)\s+(.*)", line)
        if m:
            field = m.group(1)
            val = _po_unquote(m.group(2))
            if field == "msgid":
                msgid = val
            elif field.startswith("msgstr"):
                strs.append(val)
            cur = field
        elif line.startswith('"'):
            val = _po_unquote(line)
            if cur == "msgid":
                msgid += val
            elif cur and cur.startswith("msgstr"):
                strs[-1] += val
    finish()
    return out


def read_mo(path):
    try:
        po = subprocess.run(["msgunfmt", path], capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return []
    msgs = po_messages(po.decode("utf-8", "replace"))
    return [re.sub(r"\s+", " ", m).strip() for m in msgs if m.strip()]


# --------------------------------------------------------------------------------------------------
# sources per language

def english_sources():
    files = sorted(
        p for d in sorted(glob.glob("/usr/share/man/man[1-8]")) for p in glob.glob(d + "/*")
        if os.path.isfile(p) and not os.path.islink(p)
    )
    # google-cloud-cli ships ~16,600 generated gcloud pages, the alpha and beta ones near-copies of
    # the GA ones: keep one GA page in ten so that they do not drown the other packages' pages.
    gcloud = [p for p in files if os.path.basename(p).startswith("gcloud")]
    ga = [p for p in gcloud if not re.match(r"gcloud_(alpha|beta)_", os.path.basename(p))]
    keep = set(ga[::10])
    files = [p for p in files if not os.path.basename(p).startswith("gcloud") or p in keep]
    for p in files:
        paras = read_man(p)
        if paras:
            yield "man:" + p, paras
    readmes = sorted(
        p for p in glob.glob("/usr/share/doc/*/README*")
        if os.path.isfile(p) and not os.path.islink(p) and re.search(r"README(\.md|\.txt|\.Debian)?(\.gz)?$", p)
    )
    for p in readmes:
        opener = gzip.open if p.endswith(".gz") else open
        try:
            with opener(p, "rb") as f:
                paras = plain_paragraphs(f.read().decode("utf-8", "replace"))
        except (OSError, EOFError):
            continue
        if paras:
            yield "doc:" + p, paras


def chinese_sources():
    files = sorted(
        p for d in sorted(glob.glob("/usr/share/man/zh_CN/man[1-8]")) for p in glob.glob(d + "/*")
        if os.path.isfile(p) and not os.path.islink(p)
    )
    for p in files:
        paras = [x for x in read_man(p) if CJK.search(x)]
        if paras:
            yield "man:" + p, paras
    for p in sorted(glob.glob("/usr/share/locale/zh_CN/LC_MESSAGES/*.mo")):
        paras = [x for x in read_mo(p) if CJK.search(x)]
        if paras:
            yield "mo:" + p, paras


def is_language(text, lang):
    chars = [c for c in text if not c.isspace()]
    if not chars:
        return False
    if lang == "zh":
        return sum(1 for c in chars if CJK.match(c)) >= 0.4 * len(chars)
    return sum(1 for c in chars if ord(c) > 127) <= 0.02 * len(chars)


def boilerplate_key(para):
    return re.sub(r"\d+", "0", re.sub(r"\s+", " ", para.lower())).strip()


class Corpus:
    """All sources of one language, their paragraphs, and the boilerplate that recurs among them."""

    def __init__(self, lang):
        self.lang = lang
        gen = chinese_sources() if lang == "zh" else english_sources()
        seen_text = set()
        self.sources = []  # (name, [paragraph])
        for name, paras in gen:
            # The same page is often shipped twice (e.g. under two names): keep the first copy.
            digest = hashlib.sha1("\n".join(paras).encode()).digest()
            if digest in seen_text:
                continue
            seen_text.add(digest)
            self.sources.append((name, paras))
        spread = defaultdict(set)
        for i, (_, paras) in enumerate(self.sources):
            for p in paras:
                if len(p) >= 12:
                    spread[boilerplate_key(p)].add(i)
        # A paragraph found in 4 or more different sources is boilerplate.
        self.boiler_keys = {k for k, s in spread.items() if len(s) >= 4}
        pool = {}
        for _, paras in self.sources:
            for p in paras:
                k = boilerplate_key(p)
                if k in self.boiler_keys and 25 <= len(p) <= 200 and k not in pool and is_language(p, lang):
                    pool[k] = p
        self.boilerplate = sorted(pool.values())

    def paragraphs(self):
        """Every distinct paragraph of every source (for the band-skew population)."""
        seen = set()
        for _, paras in self.sources:
            for p in paras:
                if p not in seen:
                    seen.add(p)
                    yield p

    def documents(self, seed, drop_boilerplate):
        """[(source index, text)]: consecutive paragraphs of one source, MIN_DOC..MAX_DOC chars."""
        rng = random.Random(seed)
        docs = []
        for si, (_, paras) in enumerate(self.sources):
            if drop_boilerplate:
                paras = [p for p in paras if boilerplate_key(p) not in self.boiler_keys]
            target = _target(rng)
            cur = []
            size = 0
            for p in paras:
                if len(p) > MAX_DOC:
                    p = cut_at_sentence(p, MAX_DOC)
                if size and size + len(p) > MAX_DOC:
                    if size >= MIN_DOC:
                        docs.append((si, " ".join(cur)))
                    cur, size, target = [], 0, _target(rng)
                cur.append(p)
                size += len(p) + 1
                if size >= target:
                    docs.append((si, " ".join(cur)))
                    cur, size, target = [], 0, _target(rng)
            if size >= MIN_DOC:
                docs.append((si, " ".join(cur)))
        return [(si, d) for si, d in docs if is_language(d, self.lang)]


def _target(rng):
    return int(math.exp(rng.uniform(math.log(MIN_DOC), math.log(MAX_DOC))))


def cut_at_sentence(text, limit):
    """The longest prefix of `text` no longer than `limit` that ends a sentence (else a hard cut)."""
    head = text[:limit]
    m = None
    for m in re.finditer(r"[.!?。！？；;]", head):
        pass
    if m and m.end() > limit // 3:
        return head[: m.end()]
    return head


def write_lines(path, texts):
    """One text per line: tabs, carriage returns and newlines become spaces (no tokenizer keeps them)."""
    n = 0
    with open(path, "w", encoding="utf-8") as f:
        for t in texts:
            t = one_line(t)
            f.write(t + "\n")
            n += len(t.encode())
    return n


def one_line(text):
    return re.sub(r"[\t\r\n\u2028\u2029\x0b\x0c\x1c-\x1e\x85]", " ", text)
