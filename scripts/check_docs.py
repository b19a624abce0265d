"""The docs agree with the code, in the ways that drift.

    python3 scripts/check_docs.py                    # without a server
    python3 scripts/check_docs.py --port PORT [--psql PATH] [--host DIR] [--user NAME]

Without a server (README.md, CHANGELOG.md and docs/*.md):
- a package or install script named with a version (postgresql-15-simhash-ext_X.Y.Z-1_amd64.deb,
  simhash_ext--X.Y.Z.sql) names Cargo.toml's version, or a script that sql/ holds;
- every relative link points to a file that exists, and its #anchor to a heading there;
- every repository path written as code (`bench/dedup.sh`) exists, or is one git ignores (made by a
  script).
With --port, against a server where simhash_ext is installed (in a fresh database it creates):
- the Functions section of docs/reference.md lists every function and procedure of the extension's
  schema exactly once per signature, with the installed argument names, types of the required
  arguments, defaults of the optional ones and result type (`procedure` for a procedure), and nothing
  else;
- its Settings section lists exactly the simhash.* settings, with their defaults;
- the README's Reference section links to docs/reference.md.
Exits 1 and names each difference.
"""

import argparse
import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
REPO_DIRS = ("scripts", "tests", "bench", "docs", "examples", "sql", "src", "core", "data", "demo")
errors: list[str] = []


def version() -> str:
    cargo = (ROOT / "Cargo.toml").read_text()
    return re.search(r'^version = "([^"]+)"', cargo, re.M).group(1)


def prose(text: str) -> str:
    """The text without fenced code blocks (links and paths there are not checked)."""
    return re.sub(r"(?ms)^```.*?^```", "", text)


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: pathlib.Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for line in prose(path.read_text(encoding="utf-8")).splitlines():
        m = re.match(r"#{1,6} (.+)", line)
        if m:
            base = slug(m.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
    return out


def check_versions() -> None:
    v = version()
    for doc in DOCS:
        if doc.name == "CHANGELOG.md":
            continue  # names the versions of its time
        text = doc.read_text(encoding="utf-8")
        for m in re.finditer(r"simhash-ext_(\d+\.\d+\.\d+)-\d+_", text):
            if m.group(1) != v:
                errors.append(f"{doc.relative_to(ROOT)}: package file name with version {m.group(1)}, Cargo.toml says {v}")
        for m in re.finditer(r"simhash_ext--(\d+\.\d+\.\d+(?:--\d+\.\d+\.\d+)?)\.sql", text):
            name = f"simhash_ext--{m.group(1)}.sql"
            if m.group(1) != v and not (ROOT / "sql" / name).exists():
                errors.append(f"{doc.relative_to(ROOT)}: names {name}, which sql/ does not hold (version {v})")


def check_links() -> None:
    cache: dict[pathlib.Path, set[str]] = {}
    for doc in DOCS:
        text = prose(doc.read_text(encoding="utf-8"))
        code_free = re.sub(r"`[^`\n]*`", "", text)
        for target in re.findall(r"\]\(([^)\s]+)\)", code_free):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            dest = (doc.parent / path).resolve() if path else doc
            where = f"{doc.relative_to(ROOT)}: link {target}"
            if not dest.exists():
                errors.append(f"{where}: no such file")
            elif anchor and dest.suffix == ".md":
                if dest not in cache:
                    cache[dest] = anchors(dest)
                if anchor not in cache[dest]:
                    errors.append(f"{where}: no heading with that anchor")
        for path in re.findall(r"`((?:%s)/[\w./-]*)`" % "|".join(REPO_DIRS), text):
            if re.search(r"\bNN\b|\bNAME\b|--X\b|\bX\.sql|<|\*", path):
                continue
            if (ROOT / path).exists():
                continue
            # A path git ignores (a venv, build output) is made by a script: it need not exist yet.
            ignored = subprocess.run(["git", "-C", str(ROOT), "check-ignore", "--no-index", path, path + "/x"],
                                     stdout=subprocess.DEVNULL).returncode == 0
            if not ignored:
                errors.append(f"{doc.relative_to(ROOT)}: `{path}` does not exist")


TYPES = {"int": "integer", "int4": "integer", "int8": "bigint", "float8": "double precision", "bool": "boolean"}


def norm_type(t: str) -> str:
    t = re.sub(r"\s+", " ", t.strip().lower()).replace('"', "")  # pg quotes names such as "bit"
    return re.sub(r"\b(int|int4|int8|float8|bool)\b", lambda m: TYPES[m.group(1)], t)


def norm_default(d: str) -> str:
    d = d.strip()
    while True:
        stripped = re.sub(r"::[a-z ]+(\[\])?$", "", d)
        if stripped == d:
            break
        d = stripped.strip()
    return "NULL" if d.upper() == "NULL" else d


def split_args(args: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in args:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def installed_signature(name: str, args: str, result: str) -> str:
    """name(a type, b => default) -> result, from pg_get_function_arguments / _result."""
    parts = []
    for arg in split_args(args):
        m = re.match(r'(?:(?:IN|VARIADIC) )?"?(\w+)"? (.+?)(?: DEFAULT (.+))?$', arg)
        if not m:
            errors.append(f"{name}: cannot read the installed argument {arg!r}")
            continue
        arg_name, arg_type, default = m.groups()
        parts.append(f"{arg_name} => {norm_default(default)}" if default else f"{arg_name} {norm_type(arg_type)}")
    return f"{name}({', '.join(parts)}) -> {norm_type(result)}"


def readme_signature(call: str, result: str) -> str:
    m = re.fullmatch(r"(\w+)\((.*)\)", call.strip())
    if not m:
        return f"{call} -> {result}"
    parts = []
    for arg in split_args(m.group(2)):
        if "=>" in arg:
            arg_name, default = (x.strip() for x in arg.split("=>", 1))
            parts.append(f"{arg_name} => {norm_default(default)}")
        else:
            arg_name, _, arg_type = arg.partition(" ")
            parts.append(f"{arg_name} {norm_type(arg_type)}")
    return f"{m.group(1)}({', '.join(parts)}) -> {norm_type(result)}"


REFERENCE = ROOT / "docs" / "reference.md"


def section(path: pathlib.Path, title: str) -> str | None:
    """The text of the level-2 section `title` of `path` (up to the next level-2 heading)."""
    m = re.search(r"(?ms)^## %s\n(.*?)(?=^## |\Z)" % re.escape(title), path.read_text(encoding="utf-8"))
    return m.group(1) if m else None


def reference_rows() -> tuple[list[str], dict[str, str]]:
    readme = section(ROOT / "README.md", "Reference")
    if readme is None:
        errors.append("README.md has no '## Reference' section")
    elif "](docs/reference.md" not in readme:
        errors.append("README.md's Reference section does not link to docs/reference.md")
    parts = {title: section(REFERENCE, title) for title in ("Functions", "Settings")}
    for title, text in parts.items():
        if text is None:
            errors.append(f"docs/reference.md has no '## {title}' section")
    functions, settings = [], {}
    for title, text in parts.items():
        for line in (text or "").splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
            if len(cells) < 2 or not cells[0].startswith("`"):
                continue
            first, second = cells[0].strip("`"), re.findall(r"`([^`]*)`", cells[1])
            if title == "Settings" and first.startswith("simhash.") and second:
                settings[first] = second[0]
            elif title == "Functions" and "(" in first and second:
                functions.append(readme_signature(first, second[0]))
            elif second:
                errors.append(f"docs/reference.md, {title}: cannot read the row {line.strip()[:60]!r}")
    return functions, settings


def check_server(args: argparse.Namespace) -> None:
    env = dict(os.environ, PGCLIENTENCODING="UTF8")
    base = [args.psql, "-X", "-q", "-h", args.host, "-p", str(args.port), "-U", args.user, "-v", "ON_ERROR_STOP=1"]
    db = "simhash_check_docs"
    subprocess.run(base + ["-d", "postgres", "-c", "SET client_min_messages = warning",
                           "-c", f"DROP DATABASE IF EXISTS {db}", "-c", f"CREATE DATABASE {db}"],
                   check=True, env=env)

    def rows(*sql: str) -> list[list[str]]:
        cmd = base + ["-d", db, "-A", "-t", "-F", "\x1f"]
        for s in sql:
            cmd += ["-c", s]
        out = subprocess.run(cmd, check=True, env=env, text=True, stdout=subprocess.PIPE).stdout
        return [line.split("\x1f") for line in out.splitlines() if line]

    rows("CREATE EXTENSION simhash_ext")
    installed = sorted(installed_signature(*r) for r in rows(
        """SELECT p.proname, pg_get_function_arguments(p.oid),
                  CASE WHEN p.prokind = 'p' THEN 'procedure' ELSE pg_get_function_result(p.oid) END
           FROM pg_proc p
           JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
           JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'simhash_ext'
           WHERE p.pronamespace = e.extnamespace"""))
    settings = {name: boot for name, boot in rows(
        "LOAD 'simhash_ext'", "SELECT name, boot_val FROM pg_settings WHERE name LIKE 'simhash.%'")}
    documented, documented_settings = reference_rows()
    for sig in sorted(set(installed) - set(documented)):
        errors.append(f"docs/reference.md Functions lacks (or misstates) the installed {sig}")
    for sig in sorted(set(documented) - set(installed)):
        errors.append(f"docs/reference.md Functions shows {sig}, which is not installed so")
    for sig in sorted({s for s in documented if documented.count(s) > 1}):
        errors.append(f"docs/reference.md Functions lists {sig} more than once")
    for name in sorted(set(settings) | set(documented_settings)):
        if name not in documented_settings:
            errors.append(f"docs/reference.md Settings lacks {name} (default {settings[name]})")
        elif name not in settings:
            errors.append(f"docs/reference.md Settings shows {name}, which the extension does not define")
        elif documented_settings[name] != settings[name]:
            errors.append(f"docs/reference.md Settings gives {name} the default {documented_settings[name]!r}, the extension {settings[name]!r}")
    if not errors:
        print(f"docs: docs/reference.md matches the installed extension ({len(installed)} functions, {len(settings)} settings)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port")
    ap.add_argument("--psql", default="psql")
    ap.add_argument("--host", default="/tmp")
    ap.add_argument("--user", default="postgres")
    args = ap.parse_args()
    if args.port:
        check_server(args)
    else:
        check_versions()
        check_links()
        if not errors:
            print(f"docs: versions, links and paths of {len(DOCS)} files agree with the repository (version {version()})")
    for e in errors:
        print("docs:", e, file=sys.stderr)
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
