#!/usr/bin/env python3
"""Module cycles and long files in a crate's `src`: `scripts/module-cycles.py crates/offload/src`
(`--edges` first also lists, per file, the files it imports).

Reads every `.rs` file, finds the paths it names (`use` trees and inline
`crate::…`, `super::…`, `self::…` paths and paths through a child module,
outside comments and macro `$crate` paths), resolves each to the file that defines the named item (following
`pub use` re-exports of `lib.rs` / `mod.rs`), and prints every group of
files that import each other, directly or around a loop (strongly connected
components of the import graph), and every file over the line limit. Exits 1
if there is any.
"""
import os, re, sys

LIMIT = 600


def module_of(root, path):
    rel = os.path.relpath(path, root)[:-3].split(os.sep)
    if rel[-1] in ('lib', 'main', 'mod'):
        rel = rel[:-1]
    return tuple(rel)


# Comments, raw strings, strings and char literals, in one left-to-right
# pass (a `'"'` or a `//` inside a string must not start anything; a
# string may go on after a `\` at the end of a line).
TOKEN = re.compile(r'/\*[\s\S]*?\*/|//[^\n]*|\bb?r(#*)"[\s\S]*?"\1|"(?:\\[\s\S]|[^"\\])*"|\'(?:\\[^\n\']*|[^\\\'])\'')


def strip(text):
    return TOKEN.sub(lambda m: '' if m.group(0).startswith('/') else '""', text)


def inline_modules(text):
    """`super::` inside an inline `mod x { … }` names the file's module: say `self::`."""
    out, i = [], 0
    for m in re.finditer(r'\bmod\s+\w+\s*\{', text):
        if m.start() < i:
            continue
        depth, j = 1, m.end()
        while depth and j < len(text):
            depth += text[j] == '{'
            depth -= text[j] == '}'
            j += 1
        inner = inline_modules(text[m.end():j - 1])
        inner = re.sub(r'\bsuper::', 'self::', inner)
        out += [text[i:m.end()], inner, '}']
        i = j
    out.append(text[i:])
    return ''.join(out)


def expand(tree):
    """`a::{b, c::{d, e}}` -> ['a::b', 'a::c::d', 'a::c::e']."""
    tree = tree.strip()
    i = tree.find('{')
    if i < 0:
        return [tree]
    prefix, body = tree[:i], tree[i + 1:tree.rfind('}')]
    parts, depth, cur = [], 0, ''
    for ch in body:
        if ch == ',' and depth == 0:
            parts.append(cur); cur = ''
            continue
        depth += ch == '{'
        depth -= ch == '}'
        cur += ch
    parts.append(cur)
    out = []
    for p in parts:
        if p.strip():
            out += [prefix + q if q != 'self' else prefix.rstrip(':') for q in expand(p)]
    return out


def main(root, show_edges=False):
    files = {}
    for d, _, names in os.walk(root):
        for n in names:
            if n.endswith('.rs'):
                p = os.path.join(d, n)
                files[module_of(root, p)] = p
    texts = {m: inline_modules(strip(open(p).read())) for m, p in files.items()}
    uses, reexports = {}, {}
    for m, t in texts.items():
        paths, alias = [], {}
        for vis, tree in re.findall(r'(?<![\w$])(pub(?:\([^)]*\))?\s+)?use\s+([^;]+);', t):
            for item in expand(tree):
                full, _, rename = item.partition(' as ')
                full = full.strip()
                paths.append(full)
                alias.setdefault(rename.strip() or full.split('::')[-1], full)
        reexports[m] = alias
        paths += re.findall(r'(?<![\w$:])((?:crate|super|self)(?:::\w+)+)', t)
        # Inline paths through a child module: `flow::written_by(…)` in the
        # file that declares `mod flow;`.
        paths += [p for p in re.findall(r'(?<![\w$:])(\w+(?:::\w+)+)', t) if m + (p.split('::')[0],) in files]
        uses[m] = paths

    # `#[macro_export]` macros live at the crate root but in their file.
    for m, t in texts.items():
        for name in re.findall(r'#\[macro_export\][^!]*?macro_rules!\s*(\w+)', t, flags=re.S):
            reexports[()].setdefault(name, 'crate::' + '::'.join(m + (name,)))

    def absolute(m, path):
        segs = path.split('::')
        base = list(m)
        if segs[0] == 'crate':
            base, segs = [], segs[1:]
        elif segs[0] in ('super', 'self'):
            while segs and segs[0] in ('super', 'self'):
                if segs[0] == 'super':
                    base = base[:-1]
                segs = segs[1:]
        elif tuple(m) + (segs[0],) not in files:
            return None  # an external crate, std, core, or a local item
        return base + segs

    def resolve(segs, depth=0):
        """The module file defining `segs`, through `use` re-exports."""
        for k in range(len(segs), -1, -1):
            mod = tuple(segs[:k])
            if mod in files:
                rest = segs[k:]
                if rest and depth < 20 and rest[0] in reexports[mod]:
                    target = absolute(mod, reexports[mod][rest[0]])
                    if target and tuple(target) != mod + (rest[0],):
                        return resolve(target + rest[1:], depth + 1)
                return mod
        return None

    edges = {m: set() for m in files}
    for m, paths in uses.items():
        for p in paths:
            segs = absolute(m, p)
            if segs is None:
                continue
            t = resolve(segs)
            if t is not None and t != m:
                # A module's own `mod` children are declarations, not imports.
                edges[m].add(t)
    if show_edges:
        for m in sorted(files):
            names = sorted(os.path.relpath(files[t], root) for t in edges[m])
            print(f"{os.path.relpath(files[m], root)} -> {', '.join(names) or '(none)'}")
    # Tarjan's strongly connected components.
    index, low, stack, on, comps, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]; n[0] += 1
        stack.append(v); on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w); low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v:
                    break
            comps.append(comp)

    sys.setrecursionlimit(10000)
    for v in files:
        if v not in index:
            visit(v)
    bad = 0
    for c in comps:
        if len(c) > 1:
            bad += 1
            names = sorted(os.path.relpath(files[m], root) for m in c)
            print('cycle:', ' '.join(names))
            for a in c:
                for b in edges[a]:
                    if b in c:
                        print('   ', os.path.relpath(files[a], root), '->', os.path.relpath(files[b], root))
    for m, p in sorted(files.items()):
        lines = sum(1 for _ in open(p))
        if lines > LIMIT:
            bad += 1
            print(f'long: {os.path.relpath(p, root)} has {lines} lines (limit {LIMIT})')
    print(f'{len(files)} files, {sum(len(e) for e in edges.values())} imports between them, {bad} problem(s)')
    return 1 if bad else 0


if __name__ == '__main__':
    args = [a for a in sys.argv[1:] if a != '--edges']
    sys.exit(main(args[0] if args else 'src', '--edges' in sys.argv[1:]))
