"""Release metadata agrees with Cargo.toml: META.json is valid PGXN metadata (the required keys of
meta-spec 1.0.0) naming the same version, CHANGELOG.md's newest entry is that version, and every
released version before it has an upgrade path in sql/. sql/ holds one full install script, the
base, of the oldest release (every later one installs from it through the update scripts; pgrx
generates the current version's), and update scripts that each go one release up.
Exits non-zero with a message otherwise."""

import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
errors = []

cargo = (ROOT / "Cargo.toml").read_text()
version = re.search(r'^version = "([^"]+)"', cargo, re.M).group(1)

try:
    meta = json.loads((ROOT / "META.json").read_text())
except (OSError, ValueError) as e:
    sys.exit(f"META.json: {e}")
for key in ("name", "abstract", "version", "maintainer", "license", "provides", "meta-spec"):
    if key not in meta:
        errors.append(f"META.json lacks the required key {key!r}")
if meta.get("version") != version:
    errors.append(f"META.json version {meta.get('version')!r} is not Cargo.toml's {version!r}")
provided = meta.get("provides", {}).get("simhash_ext", {})
if provided.get("version") != version:
    errors.append(f"META.json provides simhash_ext {provided.get('version')!r}, not {version!r}")
if meta.get("license") != "mit" or 'license = "MIT"' not in cargo:
    errors.append("META.json and Cargo.toml must both say MIT")
if "MIT License" not in (ROOT / "LICENSE").read_text():
    errors.append("LICENSE is not the MIT licence")

changelog = (ROOT / "CHANGELOG.md").read_text()
entries = re.findall(r"^## \[?(\d+\.\d+\.\d+)\]?", changelog, re.M)
if not entries or entries[0] != version:
    errors.append(f"CHANGELOG.md's newest entry is {entries[:1]}, not {version}")
key = lambda v: tuple(int(x) for x in v.split("."))
if entries != sorted(entries, key=key, reverse=True):
    errors.append(f"CHANGELOG.md entries are not newest first: {entries}")
for older, newer in zip(sorted(entries, key=key), sorted(entries, key=key)[1:]):
    if not (ROOT / "sql" / f"simhash_ext--{older}--{newer}.sql").exists():
        errors.append(f"no upgrade script sql/simhash_ext--{older}--{newer}.sql")

# ALTER EXTENSION ... UPDATE warns as CREATE EXTENSION does about who may create in the extension's
# schema: the update script to this version ends by calling the check.
WARN_CALL = "SELECT simhash_internal.warn_on_schema_grants();"
if len(entries) > 1:
    last = ROOT / "sql" / f"simhash_ext--{sorted(entries, key=key)[-2]}--{version}.sql"
    lines = [l.strip() for l in last.read_text().splitlines() if l.strip()] if last.exists() else []
    if lines[-1:] != [WARN_CALL]:
        errors.append(f"{last.relative_to(ROOT)} does not end with {WARN_CALL}")
scripts = sorted(p.name for p in (ROOT / "sql").glob("simhash_ext--*.sql"))
full = [n for n in scripts if re.fullmatch(r"simhash_ext--\d+\.\d+\.\d+\.sql", n)]
oldest = min(entries, key=key) if entries else None
if full != [f"simhash_ext--{oldest}.sql"]:
    errors.append(f"sql/ holds the full install scripts {full}: it keeps one, the base, of the oldest"
                  f" release {oldest} (older versions install from it through the update scripts)")
released = sorted(entries, key=key)
for n in scripts:
    m = re.fullmatch(r"simhash_ext--(\d+\.\d+\.\d+)--(\d+\.\d+\.\d+)\.sql", n)
    if n in full:
        continue
    if not m:
        errors.append(f"sql/{n}: neither an install script simhash_ext--X.sql nor an update script simhash_ext--X--Y.sql")
    elif m.group(1) not in released or m.group(2) not in released or \
            released.index(m.group(2)) != released.index(m.group(1)) + 1:
        errors.append(f"sql/{n}: not an update from one release of CHANGELOG.md to the next")

for e in errors:
    print("release metadata:", e, file=sys.stderr)
print(f"release metadata: version {version} in Cargo.toml, META.json and CHANGELOG.md" if not errors else "")
sys.exit(1 if errors else 0)
