#!/usr/bin/env python3
"""Plots ours vs CUDA per benchmark item from committed results.

    python3 bench/plot.py bench/results/<date>     # reads summary.csv, writes ratios.png beside it

Each bar is a performance ratio of offload to the CUDA C++ / C baseline of
the same run (1.0 = equal; above = ours faster). For launch overhead, where
lower time is better, the bar is C time / our time and the target line is
1 / 1.2. Green bars meet their target, red ones do not, grey ones carry
information without a target.
"""
import csv
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    d = Path(sys.argv[1])
    rows = []
    with open(d / "summary.csv", newline="") as f:
        for r in csv.DictReader(f):
            # Residency, the async speedup and `before` compare two of our
            # own paths or builds (or two of CUDA's), not ours with CUDA's.
            if not r["ratio"] or r["group"] in ("residency", "async speedup", "before"):
                continue
            ratio = float(r["ratio"])
            higher = r["higher_is_better"] == "True"
            target = float(r["target"]) if r["target"] else None
            perf = ratio if higher else 1.0 / ratio
            tperf = None if target is None else (target if higher else 1.0 / target)
            rows.append((r["group"], r["item"], perf, tperf, r["met"], r["note"]))
    if not rows:
        sys.exit(f"{d / 'summary.csv'}: no ratios to plot")
    fig, ax = plt.subplots(figsize=(10, 0.32 * len(rows) + 1.5))
    y = list(range(len(rows)))[::-1]
    colors = []
    for g, item, perf, tperf, met, note in rows:
        if tperf is None or note.startswith("information"):
            colors.append("#999999")
        else:
            colors.append("#2a9d55" if met == "yes" else "#d1495b")
    # Bars beyond 1.5 are clipped (their value is written beside them).
    cap = 1.5
    ax.barh(y, [min(r[2], cap) for r in rows], color=colors)
    for yi, (g, item, perf, tperf, met, note) in zip(y, rows):
        if tperf is not None and not note.startswith("information"):
            ax.plot([tperf, tperf], [yi - 0.4, yi + 0.4], color="black", linewidth=1.2)
        ax.text(min(perf, cap) + 0.01, yi, f"{perf:.3f}", va="center", fontsize=7)
    ax.set_yticks(y)
    ax.set_yticklabels([f"{g}: {item}" for g, item, *_ in rows], fontsize=7)
    ax.axvline(1.0, color="#444444", linestyle=":", linewidth=1)
    ax.set_xlim(0, min(cap, max(r[2] for r in rows)) + 0.12)
    ax.set_xlabel("performance of offload relative to CUDA C++ / C (same run; black tick: target)")
    env = (d / "env.txt").read_text(errors="replace").splitlines() if (d / "env.txt").exists() else []
    gpu = next((l for l in env if "H200" in l or "NVIDIA" in l), "")
    ax.set_title(f"offload vs CUDA — {d.name} {gpu}", fontsize=9)
    fig.tight_layout()
    fig.savefig(d / "ratios.png", dpi=130)
    print(d / "ratios.png")


if __name__ == "__main__":
    main()
