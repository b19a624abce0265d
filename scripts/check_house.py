"""The house rules of src/ that docs/ARCHITECTURE.md states and no compiler checks.

  python3 scripts/check_house.py

- no file of src/ has more than 800 lines (a file that grows past it is split into rooms);
- the source map (docs/ARCHITECTURE.md §1.4) names every file of src/: a row names a file by its
  path (`src/a/b.rs`), or by its directory (`src/a/`) and its name (`b.rs`) in the same row; a
  directory's `mod.rs` is named by its directory;
- every path of src/ the source map names exists.

Exits 1, listing each file that breaks a rule.
"""

import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
MAX_LINES = 800
SECTION = "### 1.4 Source map"


def source_map_rows(text):
    """The table rows of §1.4, each as the list of `code` spans it holds."""
    lines = text.splitlines()
    try:
        start = lines.index(SECTION)
    except ValueError:
        sys.exit(f"check_house: docs/ARCHITECTURE.md has no line {SECTION!r}")
    rows = []
    for line in lines[start + 1 :]:
        if line.startswith("#"):
            break
        if line.startswith("|"):
            rows.append(re.findall(r"`([^`]+)`", line))
    return rows


def main():
    problems = []
    files = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "src").rglob("*.rs"))
    for f in files:
        n = len((ROOT / f).read_text(encoding="utf-8").splitlines())
        if n > MAX_LINES:
            problems.append(f"{f}: {n} lines, more than {MAX_LINES}: split it (docs/ARCHITECTURE.md §1.4)")
    rows = source_map_rows((ROOT / "docs/ARCHITECTURE.md").read_text(encoding="utf-8"))
    for f in files:
        directory, name = f.rsplit("/", 1)
        named = False
        for spans in rows:
            if f in spans:
                named = True
            elif directory + "/" in spans and (name in spans or name == "mod.rs"):
                named = True
        if not named:
            problems.append(f"{f}: not in the source map of docs/ARCHITECTURE.md §1.4")
    for spans in rows:
        for span in spans:
            if span.startswith("src/") and not (ROOT / span).exists():
                problems.append(f"{span}: named by the source map of docs/ARCHITECTURE.md §1.4, does not exist")
    if problems:
        print("\n".join(problems), file=sys.stderr)
        sys.exit(1)
    print(f"check_house: the {len(files)} files of src/ have at most {MAX_LINES} lines and are in the source map")


if __name__ == "__main__":
    main()
