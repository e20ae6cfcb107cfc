#!/usr/bin/env python3
"""Prints the module graph of a crate (which file uses which, from `crate::`
paths) and fails if it has a cycle.

    scripts/module-dag.py crates/cargo-offload/src [main.rs]

A module is a file: `phases/cargo.rs` is `phases::cargo`, `phases/mod.rs`
is `phases`. An edge a → b means a names `crate::b…` (in a `use` or a
path); `#[cfg(test)]` modules count too. Declaring a child (`mod x;`) is not
an edge.
"""
import os
import re
import sys

root = sys.argv[1]
entry = sys.argv[2] if len(sys.argv) > 2 else ("main.rs" if os.path.exists(os.path.join(root, "main.rs")) else "lib.rs")

mods = {}
for dirpath, _, files in os.walk(root):
    for f in files:
        if not f.endswith(".rs"):
            continue
        rel = os.path.relpath(os.path.join(dirpath, f), root)
        if rel == entry or (rel.startswith("bin/")):
            name = "crate"
            if rel.startswith("bin/"):
                continue
        else:
            parts = rel[:-3].split(os.sep)
            if parts[-1] == "mod":
                parts = parts[:-1]
            name = "::".join(parts)
        mods[name] = os.path.join(dirpath, f)

def resolve(path):
    """The longest module name that `path` (after `crate::`) starts with."""
    segs = path.split("::")
    for n in range(len(segs), 0, -1):
        cand = "::".join(segs[:n])
        if cand in mods:
            return cand
    return None

edges = {m: set() for m in mods}
for m, f in mods.items():
    text = open(f).read()
    text = re.sub(r"//[^\n]*", "", text)
    for grp in re.findall(r"crate::([A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*)(?:::\{([^}]*)\})?", text):
        base, inner = grp
        targets = [base]
        if inner:
            targets = [base + "::" + x.strip().split(" ")[0] for x in inner.split(",") if x.strip()]
        for t in targets:
            r = resolve(t)
            if r and r != m:
                edges[m].add(r)
    if m != "crate":
        # `super::x` inside a file is its parent's module.
        for t in re.findall(r"\bsuper::([A-Za-z_][A-Za-z0-9_]*)", text):
            parent = m.rsplit("::", 1)[0] if "::" in m else None
            r = resolve((parent + "::" + t) if parent else t)
            if r and r != m and r != parent:
                edges[m].add(r)

order, state, cycle = [], {}, []
def visit(m, stack):
    if state.get(m) == 2:
        return
    if state.get(m) == 1:
        cycle.append(stack[stack.index(m):] + [m])
        return
    state[m] = 1
    for n in sorted(edges[m]):
        visit(n, stack + [m])
    state[m] = 2
    order.append(m)
for m in sorted(mods):
    visit(m, [])

for m in order:
    print(f"{m:<24} -> {', '.join(sorted(edges[m])) or '(leaf)'}")
if cycle:
    for c in cycle:
        print("CYCLE: " + " -> ".join(c))
    sys.exit(1)
print(f"no cycles ({len(mods)} modules, leaves first)")
