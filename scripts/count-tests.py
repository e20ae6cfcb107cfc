#!/usr/bin/env python3
"""Counts the tests and the assertions of the workspace, per crate.

    scripts/count-tests.py [REPO]          # a table
    scripts/count-tests.py --json [REPO]   # the same numbers as JSON

What is counted, statically (a test in a loop counts once):
- tests: `#[test]` functions (a `#[test]` attribute) in test code;
- asserts: `assert!`, `assert_eq!`, `assert_ne!` (and `assert_matches!`)
  invocations in test code;
- checks: calls of the test helpers that assert themselves
  (`.assert_success()`, and functions named `assert_*`/`check_*`/`expect_*`
  defined in test code of the same crate), call sites only;
- ui: trybuild cases (`tests/ui/**/*.rs` with a `.stderr` beside them).

Test code is every `.rs` file under a crate's `tests/` (its integration
tests and their helpers) and, in `src/`, the items under `#[cfg(test)]`
(the `mod tests { … }` blocks). Crates under `tests/fixtures/` are the
end-to-end tests' inputs: their own tests run inside those tests, and are
listed under their own names (marked `fixture`).

Comments and string literals are skipped, so an `assert!` quoted in a
message or a doc comment is not counted.
"""
import json
import os
import re
import sys


def strip(src):
    """The source with comments and the contents of string and char
    literals blanked (newlines kept), so that braces and macro names are
    real tokens."""
    out = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif src.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        elif c == "r" and re.match(r'r#*"', src[i:]) and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_")):
            m = re.match(r'r(#*)"', src[i:])
            end = '"' + m.group(1)
            j = src.find(end, i + len(m.group(0)))
            j = n if j < 0 else j + len(end)
            out.append('""' + re.sub(r"[^\n]", " ", src[i + 2 : j]))
            i = j
        elif c == '"' or (c == "b" and src.startswith('b"', i)):
            j = i + (2 if c == "b" else 1)
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            j += 1
            out.append('""' + re.sub(r"[^\n]", " ", src[i + 2 : j]))
            i = j
        elif c == "'":
            # A char literal ('x', '\n', '\u{..}'), else a lifetime.
            m = re.match(r"'(\\u\{[0-9a-fA-F]+\}|\\.|[^\\'])'", src[i:])
            if m:
                out.append("' '" + " " * (len(m.group(0)) - 3))
                i += len(m.group(0))
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def matching_brace(s, open_at):
    depth = 0
    for j in range(open_at, len(s)):
        if s[j] == "{":
            depth += 1
        elif s[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(s)


def test_regions(s, whole):
    """The parts of a stripped file that are test code."""
    if whole:
        return [s]
    regions = []
    for m in re.finditer(r"#\[cfg\(test\)\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{", s):
        open_at = m.end() - 1
        regions.append(s[open_at : matching_brace(s, open_at) + 1])
    return regions


ASSERT = re.compile(r"(?<![\w:])(?:std::|core::)?(assert|assert_eq|assert_ne|assert_matches)!")
TEST = re.compile(r"#\[test\]")
HELPER_DEF = re.compile(r"\bfn\s+((?:assert|check|expect)_\w+)")


def package_of(path, root):
    d = os.path.dirname(path)
    while True:
        manifest = os.path.join(d, "Cargo.toml")
        if os.path.isfile(manifest):
            text = open(manifest).read()
            m = re.search(r'^\[package\][^\[]*?^name\s*=\s*"([^"]+)"', text, re.M | re.S)
            if m:
                return m.group(1), d
        if os.path.abspath(d) == os.path.abspath(root):
            return None, None
        d = os.path.dirname(d)


def count(root):
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [x for x in dirnames if x not in ("target", ".git", ".carry", "node_modules") and not x.startswith(".")]
        files += [os.path.join(dirpath, f) for f in filenames if f.endswith(".rs")]
    crates = {}
    per_file = {}
    for f in sorted(files):
        name, cdir = package_of(f, root)
        if name is None:
            continue
        rel = os.path.relpath(f, cdir)
        fixture = "tests/fixtures/" in os.path.relpath(f, root)
        if rel.startswith("tests/ui/") or rel.startswith("tests" + os.sep + "ui" + os.sep):
            key = name + (" (fixture)" if fixture else "")
            c = crates.setdefault(key, {"tests": 0, "asserts": 0, "checks": 0, "ui": 0})
            if os.path.isfile(f[:-3] + ".stderr"):
                c["ui"] += 1
            continue
        whole = rel.startswith("tests" + os.sep) or rel.startswith("benches" + os.sep)
        s = strip(open(f, encoding="utf-8", errors="replace").read())
        regions = test_regions(s, whole)
        per_file[f] = (name, fixture, regions)
    helpers = {}
    for f, (name, fixture, regions) in per_file.items():
        for r in regions:
            helpers.setdefault(name, set()).update(HELPER_DEF.findall(r))
    for f, (name, fixture, regions) in per_file.items():
        key = name + (" (fixture)" if fixture else "")
        c = crates.setdefault(key, {"tests": 0, "asserts": 0, "checks": 0, "ui": 0})
        calls = re.compile(r"(?<!fn )\b(" + "|".join(sorted(helpers.get(name, set()) | {"assert_success"})) + r")\s*\(")
        for r in regions:
            c["tests"] += len(TEST.findall(r))
            c["asserts"] += len(ASSERT.findall(r))
            c["checks"] += len(calls.findall(r))
    return {k: v for k, v in sorted(crates.items()) if any(v.values())}


def main():
    args = [a for a in sys.argv[1:] if a != "--json"]
    root = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    crates = count(root)
    if "--json" in sys.argv:
        print(json.dumps(crates, indent=1))
        return
    cols = ["tests", "asserts", "checks", "ui"]
    print(f"{'crate':<32}" + "".join(f"{c:>9}" for c in cols))
    total = {c: 0 for c in cols}
    for k, v in crates.items():
        print(f"{k:<32}" + "".join(f"{v[c]:>9}" for c in cols))
        if "(fixture)" not in k:
            for c in cols:
                total[c] += v[c]
    print(f"{'total (without fixtures)':<32}" + "".join(f"{total[c]:>9}" for c in cols))


if __name__ == "__main__":
    main()
