#!/usr/bin/env python3
"""Prints the module graph of a crate (which file uses which) and fails if
it has a cycle.

    scripts/module-dag.py crates/cargo-offload/src [entry.rs]
    scripts/module-dag.py            # every crates/*/src of the repository

A module is a file: `phases/cargo.rs` is `phases::cargo`, `phases/mod.rs`
is `phases`, the crate root (`lib.rs`, `main.rs`) is `crate`; `src/bin/*`
and `src/main.rs` beside a `lib.rs` are separate crates and skipped. An edge
a → b means that a's text names b:

- `crate::b…`, including inside `use crate::{x, y::{z}}` groups;
- `crate::Item` where the root re-exports `Item` (`pub use b::Item;`): the
  edge goes to b, the file that defines it; an item defined in the root
  itself is an edge to `crate`;
- a path that starts with a child module of a (`callgraph::X` in
  `recursion/mod.rs`, `phases::cargo::main` in `main.rs`);
- `super::b` at the top level of a file (its parent's module), or
  `self::b`. `super::` inside an inline module (`mod tests { use super::*;
  }`) is the file itself.

`#[cfg(test)]` modules count too. Declaring a child (`mod x;`) is not an
edge; comments and string literals are ignored.
"""
import os
import re
import sys

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def strip(text):
    """`text` without comments, string and char literals (same length is
    not kept; only paths matter)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif c == "r" and re.match(r'r#*"', text[i:]) and (i == 0 or not re.match(r"\w", text[i - 1])):
            hashes = re.match(r'r(#*)"', text[i:]).group(1)
            end = text.find('"' + hashes, i + 2 + len(hashes))
            out.append('""')
            i = n if end < 0 else end + 1 + len(hashes)
        elif c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            out.append('""')
            i += 1
        elif c == "'" and re.match(r"'(\\.[^']*|[^\\'])'", text[i:]):
            m = re.match(r"'(\\.[^']*|[^\\'])'", text[i:])
            out.append("' '")
            i += m.end()
        else:
            out.append(c)
            i += 1
    return "".join(out)


def expand(tree):
    """`a::{b, c::{d, e}}` → [a::b, a::c::d, a::c::e]."""
    tree = tree.strip()
    m = re.match(r"^((?:%s::)*)\{(.*)\}$" % IDENT, tree, re.S)
    if not m:
        return [tree.split(" as ")[0].strip()]
    prefix, body = m.group(1), m.group(2)
    parts, depth, cur = [], 0, ""
    for ch in body:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [prefix + p for part in parts if part.strip() for p in expand(part)]


def group_at(text, i):
    """The path or `{…}` group that starts at text[i:] (after `crate::`)."""
    m = re.match(r"(?:%s::)*(?:\{|%s|\*)" % (IDENT, IDENT), text[i:])
    if not m:
        return None
    j = i + m.end()
    if text[j - 1] == "{":
        depth = 1
        while j < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
    return text[i:j]


def inline_depths(text):
    """For each index, how many inline `mod x { … }` blocks enclose it."""
    depth_at = [0] * (len(text) + 1)
    opens = {m.end() - 1 for m in re.finditer(r"\bmod\s+%s\s*\{" % IDENT, text)}
    stack, inline = [], 0
    for i, ch in enumerate(text):
        if ch == "{":
            stack.append(i in opens)
            inline += i in opens
        elif ch == "}" and stack:
            inline -= stack.pop()
        depth_at[i] = inline
    return depth_at


def crate_graph(root, entry):
    mods = {}
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not (dirpath == root and d == "bin")]
        for f in files:
            if not f.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, f), root)
            if rel == entry:
                name = "crate"
            elif os.sep not in rel and f in ("main.rs", "lib.rs"):
                continue  # the other crate root of a lib + bin package
            else:
                parts = rel[:-3].split(os.sep)
                if parts[-1] == "mod":
                    parts = parts[:-1]
                name = "::".join(parts)
            mods[name] = os.path.join(dirpath, f)
    texts = {m: strip(open(f).read()) for m, f in mods.items()}

    # Items the root re-exports: name → defining module.
    reexport = {}
    for tree in re.findall(r"\bpub\s+use\s+([^;]+);", texts["crate"]):
        for path in expand(tree.replace("crate::", "")):
            segs = path.split("::")
            if len(segs) >= 2 and "::".join(segs[:-1]) in mods:
                reexport[segs[-1]] = "::".join(segs[:-1])

    def resolve(path):
        """The module that `path` (relative to the crate root) names."""
        segs = [s for s in path.split("::") if s]
        for n in range(len(segs), 0, -1):
            cand = "::".join(segs[:n])
            if cand in mods:
                return cand
        if segs and segs[0] in reexport:
            return reexport[segs[0]]
        return "crate" if segs else None

    def child(m, name):
        return name if m == "crate" else m + "::" + name

    edges = {m: set() for m in mods}
    for m, text in texts.items():
        depths = inline_depths(text)
        for hit in re.finditer(r"(?<![\w:$])(crate|super|self)::", text):
            tree = group_at(text, hit.end())
            if not tree:
                continue
            kind = hit.group(1)
            if kind == "super" and (depths[hit.start()] > 0 or m == "crate"):
                continue  # an inline module's parent: this file
            if kind == "crate":
                base = ""
            elif kind == "self":
                base = "" if m == "crate" else m
            else:
                base = m.rsplit("::", 1)[0] if "::" in m else ""
            for path in expand(tree):
                r = resolve((base + "::" + path) if base else path)
                if r and r != m:
                    edges[m].add(r)
        # Paths that start with a child module's name.
        for hit in re.finditer(r"(?<![\w:$])(%s)::" % IDENT, text):
            c = child(m, hit.group(1))
            if c in mods and c != m:
                edges[m].add(c)
    return mods, edges


def cycles(mods, edges):
    order, state, found = [], {}, []

    def visit(m, stack):
        if state.get(m) == 2:
            return
        if state.get(m) == 1:
            found.append(stack[stack.index(m):] + [m])
            return
        state[m] = 1
        for n in sorted(edges[m]):
            visit(n, stack + [m])
        state[m] = 2
        order.append(m)

    for m in sorted(mods):
        visit(m, [])
    return order, found


def main(argv):
    if len(argv) > 1:
        roots = [(argv[1], argv[2] if len(argv) > 2 else None)]
    else:
        top = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates")
        roots = [(os.path.join(top, c, "src"), None) for c in sorted(os.listdir(top))
                 if os.path.isdir(os.path.join(top, c, "src"))]
    bad = False
    for root, entry in roots:
        if entry is None:
            entry = "lib.rs" if os.path.exists(os.path.join(root, "lib.rs")) else "main.rs"
        mods, edges = crate_graph(root, entry)
        order, found = cycles(mods, edges)
        print(f"== {os.path.normpath(root)} ({entry})")
        for m in order:
            print(f"  {m:<24} -> {', '.join(sorted(edges[m])) or '(leaf)'}")
        for c in found:
            print("  CYCLE: " + " -> ".join(c))
        if found:
            bad = True
        else:
            print(f"  no cycles ({len(mods)} modules, leaves first)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
