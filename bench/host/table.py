#!/usr/bin/env python3
"""The table of a bench/host run: per case the medians over rounds of ours and
rayon's times, their ratio as speeds (rayon's time / ours), for each build in
raw.csv, with the issue's targets.

    python3 bench/host/table.py DIR      # reads DIR/raw.csv, writes DIR/summary.md, prints it

raw.csv rows: round,bench,impl,mode,case,size,metric,value, as
scripts/gpu/host-bench.sh writes them: `impl` is `offload` and `rayon` for
this tree's build and `offload_before` / `rayon_before` for the build of an
earlier runtime (BEFORE=<rev>). Standard library only.
"""
import csv
import statistics
import sys
from collections import defaultdict
from pathlib import Path

# Issue 14's targets (16 cores): ours/rayon as speeds.
TARGETS = {"triad": 0.9, "nbody": 0.9, "sgemm_naive": 0.9, "dot": 0.5, "sgemm_tiled": 0.5, "histogram": 0.5,
           "jacobi": 0.5, "barrier_loop": 0.2}
ORDER = ["triad", "dot", "nbody", "sgemm_naive", "sgemm_tiled", "barrier_loop", "histogram", "jacobi"]


def main(d):
    d = Path(d)
    data = defaultdict(list)
    sizes = {}
    with open(d / "raw.csv", newline="") as f:
        for row in csv.DictReader(f):
            try:
                v = float(row["value"])
            except (KeyError, ValueError):
                continue
            data[(row["impl"], row["case"], row["metric"])].append(v)
            sizes[row["case"]] = row["size"]
    med = lambda impl, case, metric: statistics.median(data[(impl, case, metric)]) if data.get((impl, case, metric)) else None
    before = any(k[0] == "offload_before" for k in data)
    head = "| case | size | ours ms | rayon ms | ratio |" + (" before: ours ms | rayon ms | ratio |" if before else "")
    head += " target | met |"
    lines = [head, "|" + " --- |" * (head.count("|") - 1)]
    for case in ORDER:
        if med("offload", case, "seconds") is None:
            continue
        # The ratio of the medians of the rounds' times (each a median of
        # the run's timed repetitions).
        r = med("rayon", case, "seconds") / med("offload", case, "seconds")
        valid = min(data.get(("offload", case, "valid"), [0]))
        cells = [case, sizes[case], f"{med('offload', case, 'seconds') * 1e3:.1f}",
                 f"{med('rayon', case, 'seconds') * 1e3:.1f}", f"{r:.3f}"]
        if before:
            ob = med("offload_before", case, "seconds")
            rb = med("rayon_before", case, "seconds") / ob if ob else None
            cells += [f"{med('offload_before', case, 'seconds') * 1e3:.1f}" if rb else "",
                      f"{med('rayon_before', case, 'seconds') * 1e3:.1f}" if rb else "", f"{rb:.3f}" if rb else ""]
        t = TARGETS[case]
        met = "INVALID" if valid < 1 else ("yes" if r >= t else "no")
        cells += [f"{t}", met]
        lines.append("| " + " | ".join(cells) + " |")
    n = max((len(v) for k, v in data.items() if k[0] == "offload" and k[2] == "seconds"), default=0)
    lines.append("")
    lines.append(f"Medians over {n} round(s); ratio = rayon's time / ours (higher is better, 1 is parity).")
    text = "\n".join(lines) + "\n"
    (d / "summary.md").write_text(text)
    print(text, end="")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
