"""Plots the graph-gap findings of this folder (python3 plot.py → graph-gap.png).

Left: µs per kernel node of a replayed graph (2^16 floats, graphs of 100
launches), medians: CUDA C with 0–3 more streams that have run work
(call 5), offload, and the foreign-kernel harness inside offload's process
before offload starts (call 2: nvcc's and our kernel, same driver calls).
Right: the same harness's kernels at each checkpoint of offload's run
(call 2): the cost appears once offload's queue stream has run work.
"""
import csv
import statistics
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

here = Path(__file__).parent
v = defaultdict(list)
for row in csv.reader(open(here / "call5-streams.csv")):
    if len(row) >= 8 and row[1] == "async_launch" and row[4] == "graph" and row[6] == "us_per_launch":
        v[row[0]].append(float(row[7]))
c = defaultdict(list)
for r in csv.DictReader(open(here / "call2-checkpoints-rows.csv")):
    if r["metric"] == "us_per_launch" and r["case"].startswith("foreign_") and r["variant"].startswith("foreign_none"):
        c[r["case"]].append(float(r["value"]))
med = lambda xs: statistics.median(xs)

fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.5))
labels = ["CUDA C", "CUDA C\n+1 stream", "CUDA C\n+2 streams", "CUDA C\n+3 streams", "offload", "harness,\nnvcc kernel", "harness,\nour kernel"]
vals = [med(v["cuda-x0"]), med(v["cuda-x1"]), med(v["cuda-x2"]), med(v["cuda-x3"]), med(v["ours"]),
        med(c["foreign_before_nvcc"]), med(c["foreign_before_ours"])]
colors = ["#4c72b0"] * 4 + ["#dd8452"] + ["#55a868"] * 2
a.bar(labels, vals, color=colors)
for i, x in enumerate(vals):
    a.text(i, x + 0.01, f"{x:.3f}", ha="center", fontsize=8)
a.set_ylabel("µs per kernel node (graph replay)")
a.set_title("graph replay, 2^16 f32, H200: CUDA C with more streams vs offload")
a.tick_params(axis="x", labelsize=8)
stages = ["before", "init", "blocking", "queued", "after"]
for k, col in [("nvcc", "#55a868"), ("ours", "#c44e52")]:
    b.plot(stages, [med(c[f"foreign_{s}_{k}"]) for s in stages], marker="o", color=col, label=f"{k} kernel, harness's own stream and buffers")
b.set_ylabel("µs per kernel node")
b.set_title("the same driver calls at each point of offload's run")
b.legend(fontsize=8)
b.set_ylim(0.9, 1.4)
fig.tight_layout()
fig.savefig(here / "graph-gap.png", dpi=110)
print("wrote", here / "graph-gap.png")
