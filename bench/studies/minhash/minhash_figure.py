"""Draws docs/methods.svg from minhash_accuracy.md beside it (written by minhash_eval.py):
recall per near tier of MinHash (the defaults) and SimHash at k = 3 and k = 7, per language, and the
S-curve of the default LSH bands with the measured points beside the formula.

    python3 bench/studies/minhash/minhash_figure.py [RESULTS_MD] [OUT_SVG]

Plain SVG written by hand: no plotting library needed.
"""

import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "minhash_accuracy.md")
OUT = os.path.join(HERE, "..", "..", "..", "docs", "methods.svg")

TIERS = ["format", "hf20-35", "reorder", "edit1", "edit3", "edit5", "edit10"]
TIER_LABELS = ["format", "header+footer", "reorder", "1 % edits", "3 % edits", "5 % edits", "10 % edits"]
METHODS = [("MinHash", "MinHash 32x4", "#1b6ca8"), ("SimHash k=7", "SimHash k=7", "#e08a2e"),
           ("SimHash k=3", "SimHash k=3", "#c9c9c9")]


def table_after(text, heading):
    """The rows (lists of cells) of the first markdown table after a heading line."""
    start = text.index(heading)
    rows = []
    for line in text[start:].splitlines()[1:]:
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if not set(cells[0]) <= set("-: "):
                rows.append(cells)
        elif rows:
            break
    return rows


def recalls(text):
    """{(method prefix, lang): {tier: recall}} from the documents table."""
    rows = table_after(text, "### Documents")
    header, body = rows[0], rows[1:]
    out = {}
    for cells in body:
        for _, prefix, _ in METHODS:
            if cells[0].startswith(prefix):
                out[(prefix, cells[1])] = {
                    tier: float(cells[header.index(tier)].split()[0]) for tier in TIERS
                }
    return out


def s_curve(text):
    """(bands, rows) and [(J, shares a band, found)] from the S-curve section."""
    m = re.search(r"one of (\d+) bands of (\d+) rows", text)
    bands, rows = int(m.group(1)), int(m.group(2))
    points = [(float(c[0]), float(c[2]), float(c[3])) for c in table_after(text, "## S-curve")[1:]]
    return bands, rows, points


def svg(recall, bands, rows, points):
    w, h = 1010, 490
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
           'font-family="Helvetica, Arial, sans-serif" font-size="12">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           '<text x="20" y="24" font-size="15" font-weight="bold">Near-duplicates found per edit tier '
           '(real documents, 200 pairs each)</text>']
    # Recall panels: one per language.
    px, pw, ph = 60, 560, 160
    group = pw / len(TIERS)
    bar = group / (len(METHODS) + 1)
    for li, (lang, title) in enumerate([("zh", "Chinese"), ("en", "English")]):
        top = 50 + li * (ph + 55)
        out.append(f'<text x="{px}" y="{top - 6}" font-weight="bold">{title}</text>')
        for tick in (0, 0.5, 1):
            y = top + ph * (1 - tick)
            out.append(f'<line x1="{px}" x2="{px + pw}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e5e5e5"/>')
            out.append(f'<text x="{px - 8}" y="{y + 4:.1f}" text-anchor="end">{tick:g}</text>')
        for ti, tier in enumerate(TIERS):
            for mi, (_, prefix, colour) in enumerate(METHODS):
                r = recall.get((prefix, lang), {}).get(tier)
                if r is None:
                    continue
                x = px + ti * group + (mi + 0.5) * bar
                out.append(f'<rect x="{x:.1f}" y="{top + ph * (1 - r):.1f}" width="{bar * 0.9:.1f}" '
                           f'height="{ph * r:.1f}" fill="{colour}"><title>{prefix} {lang} {tier}: {r:.3f}</title></rect>')
            if li == 1:
                out.append(f'<text x="{px + (ti + 0.5) * group:.1f}" y="{top + ph + 16}" text-anchor="middle">'
                           f'{TIER_LABELS[ti]}</text>')
    for mi, (label, _, colour) in enumerate(METHODS):
        x = px + mi * 150
        out.append(f'<rect x="{x}" y="{h - 22}" width="12" height="12" fill="{colour}"/>')
        out.append(f'<text x="{x + 18}" y="{h - 12}">{label}</text>')
    # S-curve panel.
    sx, sy, sw, sh = 690, 60, 260, 290
    out.append(f'<text x="{sx}" y="{sy - 14}" font-weight="bold">MinHash: chance a pair is a candidate</text>')
    out.append(f'<text x="{sx}" y="{sy - 1}" fill="#555">{bands} bands × {rows} rows, by true Jaccard J</text>')
    for tick in (0, 0.25, 0.5, 0.75, 1):
        y = sy + 10 + sh * (1 - tick)
        x = sx + sw * tick
        out.append(f'<line x1="{sx}" x2="{sx + sw}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e5e5e5"/>')
        out.append(f'<text x="{sx - 6}" y="{y + 4:.1f}" text-anchor="end">{tick:g}</text>')
        out.append(f'<text x="{x:.1f}" y="{sy + sh + 26}" text-anchor="middle">{tick:g}</text>')
    curve = []
    for i in range(101):
        j = i / 100
        p = 1 - (1 - j ** rows) ** bands
        curve.append(f"{sx + sw * j:.1f},{sy + 10 + sh * (1 - p):.1f}")
    out.append(f'<polyline points="{" ".join(curve)}" fill="none" stroke="#1b6ca8" stroke-width="2"/>')
    for j, shares, found in points:
        x = sx + sw * j
        out.append(f'<circle cx="{x:.1f}" cy="{sy + 10 + sh * (1 - shares):.1f}" r="4" fill="none" stroke="#1b6ca8">'
                   f'<title>J {j}: shares a band {shares}</title></circle>')
        out.append(f'<circle cx="{x:.1f}" cy="{sy + 10 + sh * (1 - found):.1f}" r="3.5" fill="#e0442e">'
                   f'<title>J {j}: found (band and estimate at least 0.5) {found}</title></circle>')
    out.append(f'<text x="{sx + sw / 2}" y="{sy + sh + 42}" text-anchor="middle">J (shingle Jaccard of the pair)</text>')
    ly = sy + sh + 62
    out.append(f'<line x1="{sx}" x2="{sx + 18}" y1="{ly - 4}" y2="{ly - 4}" stroke="#1b6ca8" stroke-width="2"/>')
    out.append(f'<text x="{sx + 24}" y="{ly}">1 − (1 − J^{rows})^{bands}</text>')
    out.append(f'<circle cx="{sx + 9}" cy="{ly + 14}" r="4" fill="none" stroke="#1b6ca8"/>')
    out.append(f'<text x="{sx + 24}" y="{ly + 18}">measured: shares a band</text>')
    out.append(f'<circle cx="{sx + 9}" cy="{ly + 32}" r="3.5" fill="#e0442e"/>')
    out.append(f'<text x="{sx + 24}" y="{ly + 36}">measured: found (band and estimate ≥ 0.5)</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    source = sys.argv[1] if len(sys.argv) > 1 else RESULTS
    target = sys.argv[2] if len(sys.argv) > 2 else OUT
    text = open(source, encoding="utf-8").read()
    recall = recalls(text)
    missing = [(p, l) for _, p, _ in METHODS for l in ("zh", "en") if (p, l) not in recall]
    if missing:
        sys.exit(f"minhash_figure: no documents row for {missing} in {source}")
    bands, rows, points = s_curve(text)
    with open(target, "w", encoding="utf-8") as f:
        f.write(svg(recall, bands, rows, points))
    print(f"wrote {os.path.normpath(target)}")


if __name__ == "__main__":
    main()
