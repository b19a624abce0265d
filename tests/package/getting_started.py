"""Runs the README's "Getting started" as a reader pastes it and checks that psql prints what the
README shows.

    python3 tests/package/getting_started.py --port PORT [--psql PATH] [--host DIR] [--user NAME]

Every ```sql block of the section is sent, exactly as written, to psql (standard input, no psqlrc)
in one fresh database, simhash_getting_started, whose extension the first block creates; the
```text block right after it must equal what psql printed, errors included (trailing spaces of a
line and trailing blank lines of a block aside). A block without its output block fails the test,
so nothing in the section goes unchecked. Exits 1 with a diff per block that differs.
"""

import argparse
import difflib
import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
SECTION = "## Getting started"
DATABASE = "simhash_getting_started"


def section_blocks(readme: str) -> list[tuple[str, str, int]]:
    """The fenced code blocks of the section: (language, text, line number of the fence)."""
    lines = readme.splitlines()
    try:
        start = lines.index(SECTION)
    except ValueError:
        sys.exit(f"getting_started: README.md has no line {SECTION!r}")
    blocks, fence, lang, body = [], None, "", []
    for number, line in enumerate(lines[start + 1 :], start + 2):
        if fence is None and line.startswith("## "):
            break
        if fence is None and line.startswith("```"):
            fence, lang, body = number, line[3:].strip(), []
        elif fence is not None and line.startswith("```"):
            blocks.append((lang, "\n".join(body) + "\n", fence))
            fence = None
        elif fence is not None:
            body.append(line)
    return blocks


def pairs(blocks: list[tuple[str, str, int]]) -> list[tuple[str, str, int]]:
    """(sql, expected output, line) for each sql block, which must be followed by a text block."""
    out, i = [], 0
    while i < len(blocks):
        lang, text, line = blocks[i]
        if lang != "sql":
            sys.exit(f"getting_started: README.md line {line}: a ```{lang} block with no ```sql block before it")
        if i + 1 >= len(blocks) or blocks[i + 1][0] != "text":
            sys.exit(f"getting_started: README.md line {line}: the sql block is not followed by a ```text block of its output")
        out.append((text, blocks[i + 1][1], line))
        i += 2
    if not out:
        sys.exit(f"getting_started: no sql blocks under {SECTION!r} in README.md")
    return out


def normalized(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", required=True)
    ap.add_argument("--psql", default="psql")
    ap.add_argument("--host", default="/tmp")
    ap.add_argument("--user", default="postgres")
    args = ap.parse_args()

    env = dict(os.environ, PGCLIENTENCODING="UTF8")
    base = [args.psql, "-X", "-h", args.host, "-p", str(args.port), "-U", args.user]

    def psql(database: str, sql: str) -> str:
        run = subprocess.run(base + ["-d", database], input=sql, text=True, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        return run.stdout

    subprocess.run(base + ["-q", "-d", "postgres", "-v", "ON_ERROR_STOP=1", "-c", "SET client_min_messages = warning",
                           "-c", f"DROP DATABASE IF EXISTS {DATABASE}", "-c", f"CREATE DATABASE {DATABASE}"],
                   check=True, env=env)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    failed = 0
    checked = pairs(section_blocks(readme))
    for sql, expected, line in checked:
        got = psql(DATABASE, sql)
        if normalized(got) != normalized(expected):
            failed += 1
            print(f"getting_started: the sql block at README.md line {line} printed something else:", file=sys.stderr)
            sys.stderr.writelines(
                d + "\n" for d in difflib.unified_diff(normalized(expected), normalized(got), "README.md", "psql", lineterm="")
            )
    if failed:
        sys.exit(f"getting_started: {failed} of {len(checked)} blocks differ from README.md")
    print(f"getting_started: {len(checked)} sql blocks of README.md's Getting started printed exactly their output blocks")


if __name__ == "__main__":
    main()
