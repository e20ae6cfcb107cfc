#!/usr/bin/env python3
"""Plots a bench/host run: per case the ratio ours / rayon (as speeds) of this
build and of the build before (BEFORE=<rev>), with the issue's targets.

    python3 bench/host/plot.py DIR     # reads DIR/raw.csv, writes DIR/ratios.png

Green bars meet their target, red ones do not; the grey bars are the
build before. Medians over rounds, as bench/host/table.py computes them.
"""
import csv
import statistics
import sys
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
import table  # noqa: E402


def ratios(d):
    """Per case and build (`offload`, `offload_before`): rayon's median time
    over the rounds / ours, as table.py computes it."""
    data = defaultdict(list)
    with open(d / "raw.csv", newline="") as f:
        for row in csv.DictReader(f):
            if row.get("metric") == "seconds":
                data[(row["impl"], row["case"])].append(float(row["value"]))
    out = defaultdict(dict)
    for (impl, case), v in data.items():
        if impl.startswith("offload"):
            theirs = data.get((impl.replace("offload", "rayon"), case))
            if theirs:
                out[case][impl] = statistics.median(theirs) / statistics.median(v)
    return out


def main(d):
    d = Path(d)
    rows = ratios(d)
    cases = [c for c in table.ORDER if c in rows]
    x = range(len(cases))
    now = [rows[c].get("offload") for c in cases]
    before = [rows[c].get("offload_before") for c in cases]
    fig, ax = plt.subplots(figsize=(9, 4))
    w = 0.38
    if any(b is not None for b in before):
        ax.bar([i - w / 2 for i in x], [b or 0 for b in before], w, color="0.75", label="before")
    colors = ["tab:green" if (r or 0) >= table.TARGETS[c] else "tab:red" for c, r in zip(cases, now)]
    ax.bar([i + w / 2 for i in x], [r or 0 for r in now], w, color=colors, label="this build")
    for i, c in zip(x, cases):
        ax.plot([i - 0.45, i + 0.45], [table.TARGETS[c]] * 2, color="black", linewidth=1)
    ax.set_xticks(list(x))
    ax.set_xticklabels(cases, rotation=20)
    ax.set_ylabel("ours / rayon (speed; 1 = parity)")
    ax.set_title(f"host fallback against rayon ({d.name}); lines: targets")
    ax.legend()
    fig.tight_layout()
    fig.savefig(d / "ratios.png", dpi=110)
    print(d / "ratios.png")


if __name__ == "__main__":
    main(sys.argv[1])
