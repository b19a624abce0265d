"""Every `requires = [...]` of an `extension_sql!`/`extension_sql_file!` (or `#[pg_extern]`) in src/
that names a Rust function names one whose SQL pgrx writes. pgrx resolves such a path by the Rust
function's own name (the last segment, its module path as a suffix), not by its SQL `name = ...`,
so a requirement that names a `#[pg_extern(sql = false)]` function (one kept only for its C
symbol) orders nothing: the SQL that needs the real function can then land before its CREATE
FUNCTION in the install script, depending on the build. Exits non-zero with a message otherwise."""

import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
PG_EXTERN = re.compile(r"#\[pg_extern(?:\(([^)]*)\))?\]\s*(?:#\[[^\]]*\]\s*|//[^\n]*\n\s*)*"
                       r"(?:pub(?:\([^)]*\))?\s+)?(?:unsafe\s+)?fn\s+(\w+)")
REQUIRES = re.compile(r"requires\s*=\s*\[([^\]]*)\]")

skipped, written, requirements = {}, set(), []
for path in sorted((ROOT / "src").rglob("*.rs")):
    source = path.read_text()
    for m in PG_EXTERN.finditer(source):
        if re.search(r"\bsql\s*=\s*false\b", m.group(1) or ""):
            skipped.setdefault(m.group(2), f"{path.relative_to(ROOT)}:{source.count(chr(10), 0, m.start()) + 1}")
        else:
            written.add(m.group(2))
    for m in REQUIRES.finditer(source):
        line = source.count("\n", 0, m.start()) + 1
        for item in (i.strip() for i in re.sub(r"//[^\n]*", "", m.group(1)).split(",")):
            if item and not item.startswith('"'):
                requirements.append((f"{path.relative_to(ROOT)}:{line}", item))

errors = [f"{where}: requires {item}, which names the sql = false function at {skipped[item.split('::')[-1]]}"
          for where, item in requirements if item.split("::")[-1] in skipped]
unknown = [f"{where}: requires {item}, which names no #[pg_extern] function"
           for where, item in requirements
           if item.split("::")[-1] not in skipped and item.split("::")[-1] not in written]
for e in errors:
    print("extension SQL requires:", e, file=sys.stderr)
# Not errors: a requirement may name a type or another entity pgrx knows.
for u in unknown:
    print("extension SQL requires (not a function, not checked):", u)
print(f"extension SQL requires: {len(requirements)} paths, none to a function without SQL" if not errors else "")
sys.exit(1 if errors else 0)
