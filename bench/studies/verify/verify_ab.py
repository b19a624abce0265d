"""Summary of bench/studies/verify/verify_ab.sh's rounds: medians, B/A, and each build's counts side by side.

    python3 bench/studies/verify/verify_ab.py ROUNDS_FILE KIND:COUNT:SCALE:UNIT...

ROUNDS_FILE has a line "round build kind ms cpu_ns total_ns hits" per measurement (lookups: ms and
cpu_ns are the p50 of one lookup, total_ns its mean CPU time; the others: totals of COUNT operations,
total_ns = cpu_ns). Each SPEC's figures are per COUNT operations times SCALE, in UNIT. The builds'
counts (hits) are expected to differ where verification drops candidates: they are printed, not
compared; a build whose counts change from round to round is marked.
"""

import statistics
import sys


def quartiles(xs):
    return statistics.quantiles(xs, n=4) if len(xs) > 1 else [xs[0]] * 3


def main():
    rows = []
    with open(sys.argv[1]) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 7 and parts[0].isdigit():
                rows.append(parts)
    table = []
    for spec in sys.argv[2:]:
        kind, n, scale, unit = spec.split(":", 3)
        n, scale = int(n), float(scale)
        got = {b: sorted((r for r in rows if r[1] == b and r[2] == kind), key=lambda r: int(r[0])) for b in "AB"}
        if not got["A"] or not got["B"]:
            continue
        per = lambda r, i, div: float(r[i]) / div * scale / n
        wall = {b: [per(r, 3, 1) for r in got[b]] for b in "AB"}
        cpu = {b: [per(r, 4, 1e6) for r in got[b]] for b in "AB"}
        mean = {b: [per(r, 5, 1e6) for r in got[b]] for b in "AB"}
        med = lambda xs: statistics.median(xs)
        pw = [b / a for a, b in zip(wall["A"], wall["B"]) if a > 0]
        pc = [b / a for a, b in zip(cpu["A"], cpu["B"]) if a > 0]
        pm = [b / a for a, b in zip(mean["A"], mean["B"]) if a > 0]
        qw, qc = quartiles(pw), quartiles(pc)
        found = {b: sorted({r[6] for r in got[b]}) for b in "AB"}
        shown = {b: found[b][0] if len(found[b]) == 1 else "VARIES " + "|".join(found[b]) for b in "AB"}
        lookup = kind.startswith("lookup")
        table.append((
            kind, unit, str(len(got["A"])),
            f"{med(wall['A']):.4f}", f"{med(wall['B']):.4f}", f"{med(wall['B']) / med(wall['A']):.3f}",
            f"{med(pw):.3f} [{qw[0]:.2f}-{qw[2]:.2f}]",
            f"{med(cpu['A']):.4f}", f"{med(cpu['B']):.4f}", f"{med(cpu['B']) / med(cpu['A']):.3f}",
            f"{med(pc):.3f} [{qc[0]:.2f}-{qc[2]:.2f}]",
            f"{min(cpu['B']) / min(cpu['A']):.3f}",
            f"{med(mean['A']):.4f} / {med(mean['B']):.4f} = {med(pm):.3f}" if lookup else "-",
            shown["A"], shown["B"],
        ))
    head = ("kind", "unit", "rounds", "A", "B", "B/A", "paired B/A [quartiles]", "CPU A", "CPU B", "CPU B/A",
            "CPU paired [quartiles]", "CPU fastest B/A", "mean CPU A / B = paired B/A", "found A", "found B")
    widths = [max(len(r[i]) for r in [head] + table) for i in range(len(head))]
    for r in [head] + table:
        print("  ".join(c.ljust(w) if i < 2 or i > 12 else c.rjust(w)
                        for i, (c, w) in enumerate(zip(r, widths))).rstrip())
    print()
    print("found: lookups rows:sum of ids over the pass; writes rows written; pairs pairs:md5; clusters rows in "
          "clusters of two or more:md5. A and B differ where B's verification drops candidates.")


if __name__ == "__main__":
    main()
