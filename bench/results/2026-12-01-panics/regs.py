#!/usr/bin/env python3
"""regs.py PTX...: per kernel of each PTX file: registers, stack frame and spill store bytes
(`ptxas -v -arch=sm_90 -O3`; $PTXAS, default `ptxas` on PATH), and the indirect calls (`prototype`)."""
import os
import re
import subprocess
import sys

P = os.environ.get("PTXAS", "ptxas")
for f in sys.argv[1:]:
    out = subprocess.run([P, "-v", "-arch=sm_90", "-O3", f, "-o", "/dev/null"], capture_output=True, text=True).stderr
    rows = []
    for m in re.finditer(r"Function properties for (__offload_kernel_\w+?)_[0-9a-f]{8}\n\s+(\d+) bytes stack frame, (\d+) bytes spill stores.*\n.*Used (\d+) registers", out):
        rows.append((m.group(1).replace("__offload_kernel_", ""), int(m.group(4)), int(m.group(2)), int(m.group(3))))
    def key(r):
        n = re.findall(r"\d+$", r[0]); return (re.sub(r"\d+$", "", r[0]), int(n[0]) if n else 0)
    for r in sorted(rows, key=key):
        print(f"{f} {r[0]} regs={r[1]} stack={r[2]} spill={r[3]}")
    print(f"  prototype (indirect call) lines: {open(f).read().count('prototype')}, bytes: {os.path.getsize(f)}")
