"""Per-round ratios ours / CUDA C of call 4 (13 rounds): `python3 plot.py` writes ratios.png."""
import csv
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

rows = list(csv.DictReader(open("call4/raw.csv")))
cases = [("async_launch", "queued", "us_per_launch", "queued launches"),
         ("async_jacobi", "queued", "us_per_step", "Jacobi queued"),
         ("async_launch", "graph", "us_per_launch", "graph replay"),
         ("async_jacobi", "graph_all", "us_per_step", "Jacobi, one graph")]
fig, ax = plt.subplots(figsize=(7, 4))
for i, (bench, case, metric, label) in enumerate(cases):
    per = {}
    for r in rows:
        if (r["bench"], r["case"], r["metric"]) == (bench, case, metric):
            per.setdefault(r["round"], {})[r["build"]] = float(r["value"])
    ratios = [v["new"] / v["cuda"] for v in per.values() if "new" in v and "cuda" in v]
    ax.scatter([i] * len(ratios), ratios, alpha=0.6)
    ax.plot([i - 0.2, i + 0.2], [sorted(ratios)[len(ratios) // 2]] * 2, color="k")
ax.axhline(1.10, color="r", linestyle="--", label="target 1.10")
ax.set_xticks(range(len(cases)), [c[3] for c in cases])
ax.set_ylabel("offload / CUDA C, per round (lower is better)")
ax.set_title("H200, 13 rounds side by side (2026-12-02, call 4)")
ax.legend()
fig.tight_layout()
fig.savefig("ratios.png", dpi=120)
