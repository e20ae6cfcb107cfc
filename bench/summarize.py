#!/usr/bin/env python3
"""Medians and ratios of a bench/run-gpu.sh run, or of the async-bench suite
(scripts/gpu/async-bench.sh: bench/async vs bench/cuda/async.cu).

    python3 bench/summarize.py DIR            # reads DIR/raw.csv (and DIR/ncu.csv if present),
                                              # writes DIR/summary.csv and DIR/summary.md, prints the table
    python3 bench/summarize.py --best-config RAW MODE   # prints CUDA's best miniBUDE "ppwi wgsize impl"

raw.csv rows: round,bench,impl,mode,case,size,metric,value. `impl` is `offload`
for ours; `cuda` (and `cuda_aligned` for miniBUDE) for the CUDA C++ baselines;
`offload_before` for the BEFORE revision's build (bench/build-gpu.sh), which the
group `before` compares ours with (the "CUDA/C" column is then that build).
Every figure is the median over the rounds of the same run. Standard library only.
"""
import csv
import statistics
import sys
from collections import defaultdict
from pathlib import Path

TARGETS = {"babelstream": 0.98, "minibude": 0.95, "launch": 1.2, "pinned": 0.95, "pageable": 1.0,
           # Issue 11 (async-bench): time ratios, lower is better, except the
           # overlap rows (throughput ratios). The Jacobi bar is the launch
           # chain's (the issue names no number for it).
           "async_queued": 1.1, "async_graph": 1.1, "async_overlap": 0.95, "async_speedup": 1.8,
           "async_jacobi": 1.1}
# Run-to-run noise allowed when comparing equal operations (pageable copies).
NOISE = 0.02


def load(raw):
    data = defaultdict(list)
    with open(raw, newline="") as f:
        for row in csv.DictReader(f):
            try:
                v = float(row["value"])
            except (KeyError, ValueError):
                continue
            data[(row["bench"], row["impl"], row["mode"], row["case"], row["size"], row["metric"])].append(v)
    return data


def med(data, *key):
    v = data.get(key)
    return statistics.median(v) if v else None


def minibude_best(data, mode, impls=("cuda", "cuda_aligned")):
    """The (rate, impl, case) of the fastest valid configuration among `impls`."""
    best = None
    for (bench, impl, m, case, size, metric), vals in data.items():
        if bench != "minibude" or m != mode or impl not in impls or metric != "ginteractions_per_sec":
            continue
        valid = data.get((bench, impl, m, case, size, "valid"), [])
        if not valid or min(valid) < 1:
            continue
        r = statistics.median(vals)
        if best is None or r > best[0]:
            best = (r, impl, case, size)
    return best


def all_valid(data, bench, impl):
    vals = [v for k, vs in data.items() if k[0] == bench and k[1] == impl and k[5] == "valid" for v in vs]
    return (len(vals) > 0 and min(vals) >= 1), len(vals)


def ncu_kernel_times(path):
    """Median gpu__time_duration per kernel name from ncu --csv output, in µs."""
    times = defaultdict(list)
    try:
        lines = Path(path).read_text(errors="replace").splitlines()
    except OSError:
        return {}
    start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
    if start is None:
        return {}
    for row in csv.DictReader(lines[start:]):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        try:
            v = float(row["Metric Value"].replace(",", ""))
        except (KeyError, ValueError):
            continue
        unit = row.get("Metric Unit", "")
        scale = {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3, "second": 1e6}.get(unit, 1e-3)
        times[row.get("Kernel Name", "?")].append(v * scale)
    return {k: statistics.median(v) for k, v in times.items()}


def summarize_async(data, add, rows):
    """Rows of the async-bench suite (bench/async vs bench/cuda/async.cu)."""
    def get(bench, impl, case, metric):
        size = next((k[4] for k in data if k[0] == bench and k[1] == impl and k[3] == case and k[5] == metric), None)
        return None if size is None else med(data, bench, impl, "default", case, size, metric)

    if any(k[0] == "async_launch" for k in data):
        b, m, u = "async_launch", "us_per_launch", "µs/launch"
        n = next(k[4] for k in data if k[0] == b)
        g = f"async launches (2^{int(n).bit_length() - 1} f32)"
        add(g, "queued, chain of launches + sync", get(b, "offload", "queued", m), get(b, "cuda", "queued", m), u,
            TARGETS["async_queued"], higher=False, note="CUDA: <<<>>> on one non-blocking stream")
        add(g, "queued vs CUDA cuLaunchKernel", get(b, "offload", "queued", m), get(b, "cuda", "queued_driver", m), u,
            None, higher=False, note="information: the driver call offload makes")
        add(g, "graph replay", get(b, "offload", "graph", m), get(b, "cuda", "graph", m), u,
            TARGETS["async_graph"], higher=False, note="a graph of --graph-len (100) launches, replayed")
        add(g, "graph replay vs CUDA C with one more stream", get(b, "offload", "graph", m),
            get(b, "cuda_x1", "graph", m), u, None, higher=False,
            note="information: CUDA C after a second stream ran work, as offload's blocking API's stream has")
        add(g, "blocking launch (C: launch + sync)", get(b, "offload", "blocking", m), get(b, "cuda", "blocking", m), u,
            None, higher=False, note="information: today's blocking launch")
        for case, cc in [("queued", "queued"), ("queued", "queued_driver"), ("graph", "graph")]:
            add(g, f"host submit: {case} vs C {cc}", get(b, "offload", case, "us_submit_per_launch"),
                get(b, "cuda", cc, "us_submit_per_launch"), u, None, higher=False,
                note="information: host time until the last launch call returned; near the total = host-bound")
    if any(k[0] == "async_overlap" for k in data):
        b, m, u = "async_overlap", "gbytes_per_sec", "GB/s"
        size = next(k[4] for k in data if k[0] == b)
        g = f"async overlap ({int(size) >> 20} MiB)"
        ks = sorted({int(k[3].split("_")[1]) for k in data if k[0] == b and k[3].startswith("queues_")})
        for k in ks:
            add(g, f"{k} queue(s) vs {k} stream(s)", get(b, "offload", f"queues_{k}", m), get(b, "cuda", f"queues_{k}", m),
                u, None, note="information")
        best = lambda impl: max((v for k in ks if 2 <= k <= 4 and (v := get(b, impl, f"queues_{k}", m)) is not None),
                                default=None)
        add(g, "best of 2-4 queues vs CUDA's best of 2-4 streams", best("offload"), best("cuda"), u,
            TARGETS["async_overlap"], note="H2D, kernel, D2H per chunk, from and to pinned memory")
        add(g, "blocking vs C blocking", get(b, "offload", "blocking", m), get(b, "cuda", "blocking", m), u, None,
            note="information")
        sg = "async speedup"
        add(sg, "offload: best of 2-4 queues vs offload blocking", best("offload"), get(b, "offload", "blocking", m), u,
            TARGETS["async_speedup"], note="second column: offload's blocking API (not CUDA)")
        add(sg, "CUDA C: best of 2-4 streams vs C blocking", best("cuda"), get(b, "cuda", "blocking", m), u,
            None, note="information: what this machine allows (second column: C blocking)")
    if any(k[0] == "async_jacobi" for k in data):
        b, m, u = "async_jacobi", "us_per_step", "µs/step"
        n = next(k[4] for k in data if k[0] == b)
        g = f"async jacobi ({n}²)"
        for case, tgt, note in [("queued", TARGETS["async_jacobi"], "one stream, sync at the end"),
                                ("graph_all", TARGETS["async_jacobi"], "every step in one graph"),
                                ("graph_2", None, "information: a graph of 2 steps, replayed"),
                                ("blocking", None, "information: launch + sync per step")]:
            add(g, case, get(b, "offload", case, m), get(b, "cuda", case, m), u, tgt, higher=False, note=note)
            if case == "graph_all":
                add(g, "graph_all vs CUDA C with one more stream", get(b, "offload", case, m),
                    get(b, "cuda_x1", case, m), u, None, higher=False,
                    note="information: CUDA C after a second stream ran work")
    for impl in ["offload", "cuda"]:
        vals = [v for k, vs in data.items() if k[0].startswith("async_") and k[1] == impl and k[5] == "valid" for v in vs]
        if vals:
            rows.append(["validation", f"async {impl}", None, None, "", None, None, True,
                         "yes" if min(vals) >= 1 else "NO", f"{len(vals)} checked runs (exact)"])


def summarize(out):
    data = load(out / "raw.csv")
    rows = []  # group, item, ours, cuda, unit, ratio, target, higher_is_better, met, note

    def add(group, item, ours, cuda, unit, target, higher=True, note="", ratio=None, tol=0.0):
        if ours is None or cuda is None:
            rows.append([group, item, ours, cuda, unit, None, target, higher, "no data", note])
            return
        ratio = ours / cuda if ratio is None else ratio
        if target is None:  # information only
            rows.append([group, item, ours, cuda, unit, ratio, None, higher, "", note])
            return
        met = ratio >= target - tol if higher else ratio <= target + tol
        rows.append([group, item, ours, cuda, unit, ratio, target, higher, "yes" if met else "NO", note])

    # BabelStream
    sizes = sorted({int(k[4]) for k in data if k[0] == "babelstream"})
    for n in sizes:
        exp = n.bit_length() - 1
        label = f"2^{exp}" if n == 1 << exp else str(n)
        for kernel in ["copy", "mul", "add", "triad", "dot", "nstream"]:
            o = med(data, "babelstream", "offload", "default", kernel, str(n), "gbytes_per_sec")
            c = med(data, "babelstream", "cuda", "default", kernel, str(n), "gbytes_per_sec")
            note = ("both: 1 launch, block reduction, block sums written into mapped pinned host memory"
                    if kernel == "dot" else "")
            add("babelstream", f"{kernel} {label}", o, c, "GB/s", TARGETS["babelstream"], note=note)
    for impl in ["offload", "cuda"]:
        ok, n = all_valid(data, "babelstream", impl)
        if n:
            rows.append(["validation", f"babelstream {impl}", None, None, "", None, None, True, "yes" if ok else "NO", f"{n} runs"])

    # miniBUDE: ours at CUDA's best configuration, per mode. Ours `fmad`
    # (contraction only) compares with CUDA's default build, which contracts.
    for mode, cuda_mode in [("default", "default"), ("fmad", "default"), ("fast-math", "fast-math")]:
        best = minibude_best(data, cuda_mode)
        if best is None:
            continue
        rate, impl, case, size = best
        o = med(data, "minibude", "offload", mode, case, size, "ginteractions_per_sec")
        if o is None:
            continue
        note = {"default": "ours rounds every a*b+c twice (Rust); nvcc contracts to FMA by default",
                "fmad": "ours with --fmad: contraction as nvcc's default",
                "fast-math": "both: FMA, ftz, approximate div/sqrt/sin/cos"}[mode]
        add("minibude", f"{mode} at CUDA's best {case.replace('_', ' ')} ({impl}, {cuda_mode})", o, rate,
            "GInteractions/s", TARGETS["minibude"], note=note)
        ours_best = minibude_best(data, mode, impls=("offload",))
        if ours_best:
            add("minibude", f"{mode}, each at its best (ours {ours_best[2].replace('_', ' ')})", ours_best[0], rate,
                "GInteractions/s", TARGETS["minibude"], note="information")
    for impl in ["offload", "cuda", "cuda_aligned"]:
        ok, n = all_valid(data, "minibude", impl)
        if n:
            rows.append(["validation", f"minibude {impl} (every pose)", None, None, "", None, None, True,
                         "yes" if ok else "NO", f"{n} configurations x runs"])

    # Launch overhead: time per launch + synchronize, lower is better
    launch_cases = [] if not any(k[0] == "launch" for k in data) else [
        ("empty", ""), ("resident_args", "two resident slices"),
        ("host_arg_4B", "information: mapped 4-byte slice vs C with resident args")]
    for case, note in launch_cases:
        o = med(data, "launch", "offload", "default", case, "0", "us_median")
        c = med(data, "launch", "cuda", "default", "resident_args" if case == "host_arg_4B" else case, "0", "us_median")
        add("launch", f"{case} launch+sync", o, c, "µs", TARGETS["launch"], higher=False, note=note)
    o = med(data, "launch", "cuda", "default", "runtime_empty", "0", "us_median")
    c = med(data, "launch", "cuda", "default", "empty", "0", "us_median")
    if launch_cases:
        add("launch", "C runtime API <<<>>> vs driver API", o, c, "µs", TARGETS["launch"], higher=False, note="information")
    o = med(data, "launch", "cuda", "default", "launch_only_x100", "0", "us_median")
    if o is not None:
        rows.append(["launch", "C cuLaunchKernel alone (per launch)", None, o / 100, "µs", None, None, False, "", "information"])

    # Transfers
    tsize = next((k[4] for k in data if k[0] == "transfer"), None)
    if tsize:
        for case, tgt, note in [("htod_pinned", "pinned", "PinnedBuffer vs cudaMemcpy pinned"),
                                ("dtoh_pinned", "pinned", "PinnedBuffer vs cudaMemcpy pinned"),
                                ("htod_pageable", "pageable", "Vec vs cudaMemcpy pageable"),
                                ("dtoh_pageable", "pageable", "Vec vs cudaMemcpy pageable")]:
            o = med(data, "transfer", "offload", "default", case, tsize, "gbytes_per_sec")
            c = med(data, "transfer", "cuda", "default", case, tsize, "gbytes_per_sec")
            add("transfer", f"{case} {int(tsize) >> 20} MiB", o, c, "GB/s", TARGETS[tgt], note=note,
                tol=NOISE if tgt == "pageable" else 0.0)
        o = med(data, "transfer", "offload", "default", "launch_mapped_pageable", tsize, "gbytes_per_sec")
        c = med(data, "transfer", "cuda", "default", "htod_pageable", tsize, "gbytes_per_sec")
        add("transfer", "launch with a mapped host slice", o, c, "GB/s", TARGETS["pageable"], tol=NOISE,
            note="map (cached device memory) + copy + launch vs cudaMemcpy pageable")
        r = med(data, "transfer", "offload", "default", "ten_launches_resident", tsize, "ms")
        m = med(data, "transfer", "offload", "default", "ten_launches_mapped", tsize, "ms")
        if r is not None and m is not None:
            rows.append(["residency", "10 launches on the same data: DeviceBuffer vs Vec", r, m, "ms", r / m, None, False, "",
                         "resident launches move no data"])

    summarize_before(data, add, rows)
    summarize_async(data, add, rows)

    # Kernel-only times from ncu, where the machine allowed it
    nk = ncu_kernel_times(out / "ncu.csv")
    if nk:
        for name in sorted(nk):
            rows.append(["ncu", name[:70], nk[name], None, "µs", None, None, False, "", "gpu__time_duration, median"])

    with open(out / "summary.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["group", "item", "ours", "cuda", "unit", "ratio", "target", "higher_is_better", "met", "note"])
        for r in rows:
            w.writerow(["" if v is None else (f"{v:.6g}" if isinstance(v, float) else v) for v in r])

    def fmt(v, p=3):
        return "" if v is None else (f"{v:.{p}f}" if isinstance(v, float) else str(v))

    lines = ["| group | item | ours | CUDA/C | unit | ratio | target | met | note |", "|---|---|---:|---:|---|---:|---:|---|---|"]
    for g, item, o, c, unit, ratio, tgt, higher, met, note in rows:
        t = "" if tgt is None else ("≥ " if higher else "≤ ") + fmt(tgt, 2)
        lines.append(f"| {g} | {item} | {fmt(o)} | {fmt(c)} | {unit} | {fmt(ratio)} | {t} | {met} | {note} |")
    table = "\n".join(lines)
    (out / "summary.md").write_text(
        "Medians over the rounds of one run; ratio = ours / CUDA (rows in µs: time ratio, lower is better).\n\n" + table + "\n")
    return table


def summarize_before(data, add, rows):
    """Ours against the BEFORE revision's build (`offload_before`), measured
    in the same rounds: BabelStream per kernel and size; miniBUDE at CUDA's
    best configuration of each mode and at each build's own best. Ratios
    above 1: this build is faster. Information only (no target)."""
    if not any(k[1] == "offload_before" for k in data):
        return
    note = "this build / BEFORE's, same rounds"
    for n in sorted({int(k[4]) for k in data if k[0] == "babelstream" and k[1] == "offload_before"}):
        exp = n.bit_length() - 1
        label = f"2^{exp}" if n == 1 << exp else str(n)
        for kernel in ["copy", "mul", "add", "triad", "dot", "nstream"]:
            o = med(data, "babelstream", "offload", "default", kernel, str(n), "gbytes_per_sec")
            b = med(data, "babelstream", "offload_before", "default", kernel, str(n), "gbytes_per_sec")
            add("before", f"babelstream {kernel} {label}", o, b, "GB/s", None, note=note)
    for mode in ["default", "fast-math"]:
        best = minibude_best(data, mode)
        if best is not None:
            _, _, case, size = best
            o = med(data, "minibude", "offload", mode, case, size, "ginteractions_per_sec")
            b = med(data, "minibude", "offload_before", mode, case, size, "ginteractions_per_sec")
            add("before", f"minibude {mode} at CUDA's best {case.replace('_', ' ')}", o, b, "GInteractions/s", None,
                note=note)
        ours, theirs = minibude_best(data, mode, impls=("offload",)), minibude_best(data, mode, impls=("offload_before",))
        if ours and theirs:
            add("before", f"minibude {mode}, each at its best (ours {ours[2].replace('_', ' ')}, BEFORE's "
                f"{theirs[2].replace('_', ' ')})", ours[0], theirs[0], "GInteractions/s", None, note=note)
    ok, n = all_valid(data, "babelstream", "offload_before")
    if n:
        rows.append(["validation", "babelstream offload_before", None, None, "", None, None, True, "yes" if ok else "NO",
                     f"{n} runs"])
    ok, n = all_valid(data, "minibude", "offload_before")
    if n:
        rows.append(["validation", "minibude offload_before (every pose)", None, None, "", None, None, True,
                     "yes" if ok else "NO", f"{n} configurations x runs"])


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--best-config":
        best = minibude_best(load(sys.argv[2]), sys.argv[3])
        if best:
            p, w = best[2][1:].split("_w")
            print(p, w, best[1])
        return
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    print(summarize(Path(sys.argv[1])))


if __name__ == "__main__":
    main()
