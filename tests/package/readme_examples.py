"""Runs every SQL example of README.md as a reader pastes it into psql and checks that psql prints
what the README shows.

    python3 tests/package/readme_examples.py --port PORT [--psql PATH] [--host DIR] [--user NAME]

Every ```sql block of the README is sent, exactly as written, to psql (standard input, no psqlrc),
and the ```text block right after it must equal what psql printed, errors included (trailing spaces
of a line and trailing blank lines of a block aside). A ```sql block without its output block fails
the test, so no example goes unchecked. A block meant to fail says so in a comment on the failing
statement, `-- fails with SQLSTATE` (five characters): its output must hold as many ERROR lines as
the block has such comments, and psql's LAST_ERROR_SQLSTATE must be the last one named; a block
without the comment must print no ERROR.

The blocks run in three ways, each in fresh databases (simhash_readme_*), and must print the same
every time:

- the blocks above the first section, in a database of their own (the README's first lines);
- "Getting started", then every later section in the README's order, in one database: a reader
  pasting the whole README;
- each later section alone, in a copy of the database as Getting started left it: a reader who
  skips to that section.

Exits 1 with a diff per block that differs.
"""

import argparse
import difflib
import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIRST = "Getting started"
PREFIX = "simhash_readme"
FAILS = re.compile(r"--\s*fails with ([0-9A-Z]{5})\b")


class Example:
    def __init__(self, section: str, line: int, sql: str, expected: str):
        self.section, self.line, self.sql, self.expected = section, line, sql, expected
        self.codes = FAILS.findall(sql)


def sections(readme: str) -> list[tuple[str, list[tuple[str, str, int]]]]:
    """(title, fenced blocks) per level-2 section, the lines above the first one titled ""; a block
    is (language, text, line number of its fence)."""
    out, title, blocks, fence, lang, body = [], "", [], None, "", []
    for number, line in enumerate(readme.splitlines(), 1):
        if fence is None and line.startswith("## "):
            out.append((title, blocks))
            title, blocks = line[3:].strip(), []
        elif fence is None and line.startswith("```"):
            fence, lang, body = number, line[3:].strip(), []
        elif fence is not None and line.startswith("```"):
            blocks.append((lang, "\n".join(body) + "\n", fence))
            fence = None
        elif fence is not None:
            body.append(line)
    out.append((title, blocks))
    return out


def examples(title: str, blocks: list[tuple[str, str, int]]) -> list[Example]:
    """The sql blocks of a section with the text block that must follow each."""
    out = []
    for i, (lang, text, line) in enumerate(blocks):
        if lang != "sql":
            continue
        if i + 1 >= len(blocks) or blocks[i + 1][0] != "text":
            sys.exit(f"readme_examples: README.md line {line}: the sql block is not followed by a ```text block of its output")
        out.append(Example(title, line, text, blocks[i + 1][1]))
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
    env.pop("PGOPTIONS", None)
    base = [args.psql, "-X", "-h", args.host, "-p", str(args.port), "-U", args.user]
    marker = "readme_examples: last error "

    def admin(*sql: str) -> None:
        cmd = base + ["-q", "-d", "postgres", "-v", "ON_ERROR_STOP=1", "-c", "SET client_min_messages = warning"]
        for s in sql:
            cmd += ["-c", s]
        subprocess.run(cmd, check=True, env=env)

    def fresh(name: str, template: str | None = None) -> str:
        db = f"{PREFIX}_{name}"
        admin(f"DROP DATABASE IF EXISTS {db}", f"CREATE DATABASE {db}" + (f" TEMPLATE {template}" if template else ""))
        return db

    failures = []

    def run(database: str, ex: Example, how: str) -> None:
        # psql's LAST_ERROR_SQLSTATE after the block, on a line of its own that is not compared.
        sql = ex.sql + f"\\echo '{marker}' :LAST_ERROR_SQLSTATE\n"
        got = subprocess.run(base + ["-d", database], input=sql, text=True, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT).stdout
        lines = normalized(got)
        last = lines.pop() if lines and lines[-1].startswith(marker) else ""
        lines = normalized("\n".join(lines))
        problems = []
        if lines != normalized(ex.expected):
            problems += [d + "\n" for d in difflib.unified_diff(normalized(ex.expected), lines, "README.md", "psql", lineterm="")]
        errors = sum(1 for line in lines if line.startswith("ERROR:"))
        if errors != len(ex.codes):
            problems.append(f"{errors} ERROR lines, {len(ex.codes)} '-- fails with' comments in the block\n")
        if ex.codes and last.split()[-1:] != [ex.codes[-1]]:
            problems.append(f"the last error's SQLSTATE is {last[len(marker):].strip() or 'none'}, the block says {ex.codes[-1]}\n")
        if problems:
            failures.append(f"README.md line {ex.line} ({ex.section or 'the first lines'}; {how}):\n" + "".join(problems))

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    parts = [(title, examples(title, blocks)) for title, blocks in sections(readme)]
    titles = [title for title, _ in parts]
    if FIRST not in titles:
        sys.exit(f"readme_examples: README.md has no section '## {FIRST}'")
    first = titles.index(FIRST)
    before = [ex for _, exs in parts[:first] for ex in exs]
    started = parts[first][1]
    later = [(title, exs) for title, exs in parts[first + 1 :] if exs]
    if not started:
        sys.exit(f"readme_examples: no sql blocks under '## {FIRST}'")

    if before:
        db = fresh("intro")
        for ex in before:
            run(db, ex, "in a database of its own")
    base_db = fresh("started")
    for ex in started:
        run(base_db, ex, "Getting started")
    whole = fresh("whole", base_db)
    for _, exs in later:
        for ex in exs:
            run(whole, ex, "after every section above it")
    for i, (title, exs) in enumerate(later):
        db = fresh(f"section{i}", base_db)
        for ex in exs:
            run(db, ex, "alone after Getting started")
    count = len(before) + len(started) + sum(len(exs) for _, exs in later)
    if failures:
        sys.stderr.write("\n".join(failures))
        sys.exit(f"readme_examples: {len(failures)} runs of the {count} sql blocks of README.md differ from it")
    for name in ["intro", "started", "whole"] + [f"section{i}" for i in range(len(later))]:
        admin(f"DROP DATABASE IF EXISTS {PREFIX}_{name}")
    print(f"readme_examples: the {count} sql blocks of README.md ({len(later)} sections after Getting started, "
          "each also alone) printed exactly their output blocks")


if __name__ == "__main__":
    main()
