"""The module graph of a crate, checked statically: import circles, floors and layer rules.

  python3 scripts/check_layers.py                  # src/ and core/src/
  python3 scripts/check_layers.py --crate src      # one crate
  python3 scripts/check_layers.py --self-test      # a fake crate with known findings

A module is a file: `x.rs` is `x`, `d/mod.rs` is `d`, `d/x.rs` is `d::x` (`lib.rs`, files named
`tests.rs` and modules declared under `#[cfg(test)]` are left out). An edge is a reference of one
module to another, after comments and string literals are blanked and `#[cfg(test)]` items cut:
the paths of `use` trees, `crate::`/`super::`/`self::` paths anywhere, and paths through a child
module; a path goes to its longest prefix that is a module file. Exits 1 on a circle, a layer
violation or a module that is in no layer, or in more than one. docs/ARCHITECTURE.md §1.2."""

import argparse
import pathlib
import re
import sys
import tempfile

# Per crate, its layers from the bottom up: (name, module patterns). "a" is the module a, "a::*"
# is a and every module under it, "*" is every module. A module may use its own layer or a lower one.
# src/ is §1.2 of docs/ARCHITECTURE.md, which names neither lsh (MinHash locks and lookups: put
# beside search) nor minhash (SQL wrappers of the core: put beside fingerprint). ARCHITECTURE.md
# gives simhash_core no layers.
LAYERS = {
    # The floors of docs/ARCHITECTURE.md section 1.2, bottom up.
    "src": [
        ("foundation", ["errors", "text", "compat", "spi", "catalog", "privileges", "progress"]),
        ("attachment", ["attachment::*"]),
        ("storage", ["storage::*", "partitions", "citus"]),
        ("check", ["check::*"]),
        ("methods", ["method::*"]),
        ("write, dedup and DDL", ["write::*", "dedup::*", "citus::dedup", "online"]),
        ("SQL surface", ["api::*"]),
    ],
    "core/src": [("core", ["*"])],
}

ROOT = pathlib.Path(__file__).resolve().parent.parent
LEXEMES = re.compile(r"""//|/\*|(?<![\w$])[bc]?r(#*)"|(?<![\w$])[bc]?"|'(?:\\(?:x\w\w|u\{\w+\}|.)|[^\\'\n])'""")
CFG_TEST = re.compile(r"#\[cfg\(([^\]]*)\)\]")
PATH = re.compile(r"(?<![\w$])(?<!::)(\$?crate|\w+)((?:\s*::\s*\w+)+)")
USE = re.compile(r"(?<![\w$])use\s+([^;]*);")
TOKEN = re.compile(r"::|[{},*]|\$?\w+")


def blank(src):
    """src with comments, string and char literals turned to spaces (newlines kept)."""
    out, i = list(src), 0

    def wipe(a, b):
        out[a:b] = [c if c == "\n" else " " for c in src[a:b]]

    while m := LEXEMES.search(src, i):
        s, tok = m.start(), m.group(0)
        if tok == "//":
            e = src.find("\n", s)
            e = len(src) if e < 0 else e
        elif tok == "/*":
            depth, e = 1, s + 2
            while e < len(src) and depth:
                depth += {"/*": 1, "*/": -1}.get(src[e:e + 2], 0)
                e += 2 if src[e:e + 2] in ("/*", "*/") else 1
        elif tok.endswith('"') and "r" in tok:
            e = src.find('"' + m.group(1), m.end())
            e = len(src) if e < 0 else e + 1 + len(m.group(1))
        elif tok.endswith('"'):
            e = m.end()
            while e < len(src) and src[e] != '"':
                e += 2 if src[e] == "\\" else 1
            e += 1
        else:
            e = m.end()
        wipe(s, e)
        i = e
    return "".join(out)


def block_end(text, i):
    """The end of the item that starts at i: after its first `;` or its `{...}` block at depth 0."""
    depth = 0
    while i < len(text):
        c = text[i]
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif depth == 0 and c == ";":
            return i + 1
        elif depth == 0 and c == "{":
            level = 0
            for j in range(i, len(text)):
                level += {"{": 1, "}": -1}.get(text[j], 0)
                if level == 0:
                    return j + 1
            return len(text)
        i += 1
    return len(text)


def cut_tests(text):
    """text without its #[cfg(test)] items, and the names of the `mod x;` among them."""
    test_mods = set()
    for m in reversed(list(CFG_TEST.finditer(text))):
        if not re.search(r"\btest\b", m.group(1)) or "not(" in m.group(1):
            continue
        end = block_end(text, m.end())
        decl = re.match(r"(?:\s*#\[[^\]]*\])*\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", text[m.end():end])
        if decl:
            test_mods.add(decl.group(1))
        text = text[:m.start()] + re.sub(r"[^\n]", " ", text[m.start():end]) + text[end:]
    return text, test_mods


def rel(f):
    return f.relative_to(ROOT) if f.is_relative_to(ROOT) else f


def line_of(text, pos):
    return text.count("\n", 0, pos) + 1


def use_paths(tree, base):
    """(position, segments) of every leaf of a use tree `tree` that starts at offset base."""
    toks = [(m.group(0), base + m.start()) for m in TOKEN.finditer(tree)]
    out = []

    def walk(i, prefix):
        path = list(prefix)
        while i < len(toks):
            t, pos = toks[i]
            if t == "{":
                i += 1
                while i < len(toks) and toks[i][0] != "}":
                    i = walk(i, path)
                    i += toks[i][0] == "," if i < len(toks) else 0
                return i + 1
            if t == "*" or t in ",}":
                out.append((pos, path))
                return i + (t == "*")
            if t != "::":
                if not (t == "self" and path):
                    path.append(t)
                if i + 2 < len(toks) and toks[i + 1][0] == "as":
                    i += 2
                if i + 1 >= len(toks) or toks[i + 1][0] != "::":
                    out.append((pos, path))
                    return i + 1
            i += 1
        return i

    walk(0, [])
    return out


def module_files(crate):
    """{module path (tuple): file} of the crate directory, test modules left out."""
    mods, tests = {}, set()
    for f in sorted(crate.rglob("*.rs")):
        parts = f.relative_to(crate).with_suffix("").parts
        mod = parts[:-1] if parts[-1] == "mod" else parts
        if mod in (("lib",), ("main",)):
            mod = ()  # the root: its `mod x;` lines are read for test modules, it is no node
        elif "tests" not in mod:
            mods[mod] = f
        tests |= {mod + (t,) for t in cut_tests(blank(f.read_text()))[1]}
    return {m: f for m, f in mods.items() if not any(m[:len(t)] == t for t in tests)}


def analyse(crate):
    """The module graph of a crate directory: modules, edges {(a, b): 'file:line'} and its code."""
    mods = module_files(crate)
    edges, code = {}, {}
    for mod, f in mods.items():
        text, _ = cut_tests(blank(f.read_text()))
        code[mod] = (f, text)
        inline = [(m.start(), block_end(text, m.end() - 1), m.group(1))
                  for m in re.finditer(r"\bmod\s+(\w+)\s*\{", text)]
        refs = []
        for m in USE.finditer(text):
            refs += use_paths(m.group(1), m.start(1))
        no_use = USE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
        no_use = re.sub(r"\bpub\s*\(\s*in\b[^)]*\)", "", no_use)
        refs += [(m.start(), [m.group(1)] + re.findall(r"\w+", m.group(2))) for m in PATH.finditer(no_use)]
        for pos, segs in sorted((r for r in refs if r[1]), key=lambda r: r[0]):
            scope = list(mod) + [name for s, e, name in inline if s < pos < e]
            if segs[0] in ("crate", "$crate"):
                full = segs[1:]
            elif segs[0] in ("self", "super"):
                while segs and segs[0] in ("self", "super"):
                    scope = scope[:-1] if segs.pop(0) == "super" else scope
                full = scope + segs
            elif tuple(scope + segs[:1]) in mods:
                full = scope + segs
            else:
                continue
            target = next((tuple(full[:n]) for n in range(len(full), 0, -1) if tuple(full[:n]) in mods), None)
            if target and target != mod:
                edges.setdefault((mod, target), f"{rel(f)}:{line_of(text, pos)}")
    return mods, edges, code


def components(nodes, succ):
    """Strongly connected components (Tarjan), each a sorted list."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in succ[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while not comp or comp[-1] != v:
                comp.append(stack.pop())
                on.discard(comp[-1])
            out.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def shortest(succ, start, goal, allowed):
    """The shortest path start..goal through the nodes of allowed (BFS)."""
    prev, todo = {start: None}, [start]
    for v in todo:
        if v == goal:
            path = [v]
            while prev[path[-1]] is not None:
                path.append(prev[path[-1]])
            return path[::-1]
        for w in sorted(succ[v]):
            if w in allowed and w not in prev:
                prev[w] = v
                todo.append(w)
    return None


def layer_of(mod, layers):
    name = "::".join(mod)
    return [i for i, (_, pats) in enumerate(layers) for p in pats
            if p in (name, "*") or (p.endswith("::*") and (name == p[:-3] or name.startswith(p[:-2])))]


def functions(code):
    """(lines, 'file:line name') of every Rust fn with a body."""
    out = []
    for f, text in code.values():
        for m in re.finditer(r"\bfn\s+(?:r#)?(\w+)", text):
            end = block_end(text, m.end())
            if text[end - 1] == "}":
                first = line_of(text, m.start())
                out.append((line_of(text, end - 1) - first + 1, f"{rel(f)}:{first} {m.group(1)}"))
    return sorted(out, key=lambda x: -x[0])


def check(crate, layers, show=print):
    """Checks one crate directory; returns the findings (circles, violations, unassigned)."""
    mods, edges, code = analyse(crate)
    name = lambda m: "::".join(m)
    succ = {m: set() for m in mods}
    for a, b in edges:
        succ[a].add(b)
    show(f"{rel(crate)}: {len(mods)} module files, {len(edges)} imports")
    comps = components(mods, succ)
    circles = [c for c in comps if len(c) > 1]
    show(f"  circles: {len(circles)}")
    for comp in circles:
        show(f"    {{{', '.join(map(name, comp))}}}")
        covered, shown = set(), set()
        for a, b in sorted(e for e in edges if e[0] in comp and e[1] in comp):
            if (a, b) in covered:
                continue
            cycle = [a] + shortest(succ, b, a, set(comp))
            steps = list(zip(cycle, cycle[1:]))
            covered |= set(steps)
            show("      " + " -> ".join(map(name, cycle)))
            for e in steps:
                if e not in shown:
                    shown.add(e)
                    show(f"        {name(e[0])} -> {name(e[1])}: {edges[e]}")
    floor = {}
    for comp in comps:  # Tarjan yields a component after every component it reaches
        below = [floor[w] for v in comp for w in succ[v] if w not in comp]
        floor.update({v: 1 + max(below, default=0) for v in comp})
    show(f"  floors: {max(floor.values(), default=0)} (* in a circle)")
    for n in range(1, max(floor.values(), default=0) + 1):
        show(f"    {n}: " + ", ".join(name(m) + ("*" if any(m in c for c in circles) else "")
                                   for m in sorted(mods) if floor[m] == n))
    unassigned = [m for m in sorted(mods) if len(layer_of(m, layers)) != 1]
    for m in unassigned:
        show(f"  {rel(mods[m])}: {name(m)} is in {len(layer_of(m, layers))} layers, not one")
    violations = []
    for (a, b), where in sorted(edges.items(), key=lambda e: e[1]):
        la, lb = layer_of(a, layers), layer_of(b, layers)
        if len(la) == 1 and len(lb) == 1 and lb[0] > la[0]:
            violations.append((a, b))
            show(f"  {where}: {name(a)} (layer {la[0] + 1} {layers[la[0]][0]}) imports "
                 f"{name(b)} (layer {lb[0] + 1} {layers[lb[0]][0]})")
    show(f"  layer violations: {len(violations)}, modules in no single layer: {len(unassigned)}")
    longest = functions(code)[:5]
    show("  longest fns: " + "; ".join(f"{where} ({n} lines)" for n, where in longest))
    return circles, violations, unassigned, edges, floor


def longest_plpgsql():
    """The longest CREATE FUNCTION|PROCEDURE ... $$; in LANGUAGE plpgsql of sql/src/*.sql."""
    best = (0, "none")
    for f in sorted((ROOT / "sql" / "src").glob("*.sql")):
        text = f.read_text()
        for m in re.finditer(r"CREATE\s+(?:OR\s+REPLACE\s+)?(?:FUNCTION|PROCEDURE)\s+([\w.\"]+)\s*\(", text, re.I):
            body = re.compile(r"\$(\w*)\$").search(text, m.end())
            close = text.find(body.group(0), body.end()) if body else -1
            end = text.find(";", close) if close > 0 else -1
            if end > 0 and re.search(r"LANGUAGE\s+plpgsql", text[m.end():body.start()] + text[close:end], re.I):
                lines = line_of(text, end) - line_of(text, m.start()) + 1
                best = max(best, (lines, f"{f.relative_to(ROOT)}:{line_of(text, m.start())} {m.group(1)}"))
    print(f"longest PL/pgSQL function: {best[1]} ({best[0]} lines)")


def self_test():
    files = {
        "lib.rs": "mod a; mod b; mod c; mod d; mod dir; mod u;\n#[cfg(test)]\nmod tests;\n",
        "a.rs": "use crate::b::f; // use crate::d::x;\nconst S: &str = \"crate::d::y\";\npub fn k() {}\n",
        "b.rs": "use crate::{\n    dir::{x::{g, h as hh}, self},\n    d,\n};\npub fn f() { crate::a::k() }\n",
        "c.rs": "use crate::d::y as yy;\nfn z() -> char { let _ = r#\"crate::u\"#; '\"' }\nfn w() { crate::a::k(); }\n",
        "d.rs": "/* crate::a::z /* nested */ crate::u */\npub fn y() {}\n#[cfg(test)]\nmod t { use crate::a::k; }\n",
        "dir/mod.rs": "pub mod x;\npub mod y;\npub use y::yy;\n",
        "dir/x.rs": "pub fn g() { super::super::d::y(); }\npub fn h() { self::g() }\n",
        "dir/y.rs": "use super::x::g;\npub fn yy() {}\n",
        "u.rs": "pub fn u() {}\n",
        "tests.rs": "use crate::u::*;\n",
    }
    layers = [("base", ["d", "c"]), ("mid", ["dir::*"]), ("top", ["a", "b"])]
    with tempfile.TemporaryDirectory() as tmp:
        for rel, text in files.items():
            (pathlib.Path(tmp) / rel).parent.mkdir(parents=True, exist_ok=True)
            (pathlib.Path(tmp) / rel).write_text(text)
        lines = []
        circles, violations, unassigned, edges, floor = check(pathlib.Path(tmp), layers, lines.append)
    got = {("::".join(a), "::".join(b)) for a, b in edges}
    want = {("a", "b"), ("b", "a"), ("b", "dir"), ("b", "dir::x"), ("b", "d"), ("c", "d"), ("c", "a"),
            ("dir", "dir::y"), ("dir::x", "d"), ("dir::y", "dir::x")}
    assert got == want, (got ^ want, lines)
    assert circles == [[("a",), ("b",)]], circles
    assert violations == [(("c",), ("a",))], violations
    assert unassigned == [("u",)], unassigned
    assert {"::".join(m): n for m, n in floor.items()} == {
        "d": 1, "u": 1, "dir::x": 2, "dir::y": 3, "dir": 4, "a": 5, "b": 5, "c": 6}, floor
    assert any(": c (layer 1 base) imports a (layer 3 top)" in s for s in lines), lines
    print("self-test passed")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crate", choices=sorted(LAYERS), help="check one crate (default: all)")
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    failed = False
    for crate in [args.crate] if args.crate else LAYERS:
        circles, violations, unassigned, _, _ = check(ROOT / crate, LAYERS[crate])
        failed |= bool(circles or violations or unassigned)
    if (args.crate or "src") == "src":
        longest_plpgsql()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
