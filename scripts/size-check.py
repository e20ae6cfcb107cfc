#!/usr/bin/env python3
"""Lists the source files longer than 600 lines and the functions longer
than 80 lines (signature to closing brace, blank lines and comments
included) of crates' `src` directories; fails if there is one.

    scripts/size-check.py [crate …]     # default: every crates/*
    scripts/size-check.py --max-fn 100 cargo-offload

Test modules (`mod tests { … }`, `tests.rs`) count for the file but their
functions, tables of cases, are not held to the function limit.
"""
import os
import re
import sys

MAX_FILE = 600


def blank_strings(text):
    """`text` with string and char literal contents and comments replaced
    by spaces (newlines kept), so braces in them do not count."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:]) and (i == 0 or not re.match(r"\w", text[i - 1])):
            hashes = re.match(r'r(#*)"', text[i:]).group(1)
            end = text.find('"' + hashes, i + 2 + len(hashes))
            end = n if end < 0 else end + 1 + len(hashes)
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(re.sub(r"[^\n]", " ", text[i:j + 1]))
            i = j + 1
        elif c == "'" and re.match(r"'(\\.[^']*|[^\\'])'", text[i:]):
            m = re.match(r"'(\\.[^']*|[^\\'])'", text[i:])
            out.append(" " * m.end())
            i += m.end()
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(path):
    """(name, first line, length in lines, in a test module) of each fn."""
    text = blank_strings(open(path).read())
    lines = text.split("\n")
    offsets, pos = [], 0
    for l in lines:
        offsets.append(pos)
        pos += len(l) + 1

    def line_of(i):
        lo, hi = 0, len(offsets) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if offsets[mid] <= i:
                lo = mid
            else:
                hi = mid - 1
        return lo

    test_ranges = []
    for m in re.finditer(r"#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{", text):
        start = m.end() - 1
        end = match_brace(text, start)
        test_ranges.append((start, end))
    out = []
    for m in re.finditer(r"\bfn\s+(\w+)", text):
        # The body: the first `{` after the signature, unless a `;` (a
        # declaration in a trait) comes first.
        j = m.end()
        depth = 0
        while j < len(text):
            ch = text[j]
            if ch in "(<[":
                depth += 1
            elif ch in ")>]":
                depth -= 1
            elif ch == ";" and depth <= 0:
                j = -1
                break
            elif ch == "{" and depth <= 0:
                break
            j += 1
        if j < 0 or j >= len(text):
            continue
        end = match_brace(text, j)
        first, last = line_of(m.start()), line_of(end)
        in_test = os.path.basename(path) == "tests.rs" or any(s <= m.start() <= e for s, e in test_ranges)
        out.append((m.group(1), first + 1, last - first + 1, in_test))
    return out


def match_brace(text, open_at):
    depth = 0
    for k in range(open_at, len(text)):
        if text[k] == "{":
            depth += 1
        elif text[k] == "}":
            depth -= 1
            if depth == 0:
                return k
    return len(text) - 1


def main(argv):
    max_fn = 80
    args = argv[1:]
    if args[:1] == ["--max-fn"]:
        max_fn, args = int(args[1]), args[2:]
    top = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates")
    crates = args or sorted(c for c in os.listdir(top) if os.path.isdir(os.path.join(top, c, "src")))
    bad = False
    longest_file = (0, "")
    for c in crates:
        src = os.path.join(top, c, "src")
        for dirpath, _, files in os.walk(src):
            for f in sorted(files):
                if not f.endswith(".rs"):
                    continue
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, os.path.join(top, ".."))
                n = sum(1 for _ in open(path))
                longest_file = max(longest_file, (n, rel))
                if n > MAX_FILE:
                    print(f"file {rel}: {n} lines (> {MAX_FILE})")
                    bad = True
                for name, line, length, in_test in functions(path):
                    if length > max_fn and not in_test:
                        print(f"fn   {rel}:{line} {name}: {length} lines (> {max_fn})")
                        bad = True
    print(f"longest file: {longest_file[1]} ({longest_file[0]} lines)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
