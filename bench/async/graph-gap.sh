#!/usr/bin/env bash
# Why offload's graph replay is slower than CUDA C's (issue 11): the same
# replays under three changes, and both sides' kernels under ncu.
#
#     bench/async/graph-gap.sh DIR     DIR: `scripts/gpu.sh build async-bench`'s
#                                      folder (target/gpu/async-bench)
#
# Hypotheses, one run each, both sides alternating, ROUNDS (2) rounds:
# - the per-thread stack limit: offload sets CU_LIMIT_STACK_SIZE to 8 KiB,
#   CUDA C keeps the default (1 KiB): ours with OFFLOAD_CUDA_STACK_BYTES=1024,
#   CUDA C with --stack-bytes 8192;
# - the kernel's code: Rust's bounds checks (and their inlined panic path)
#   in the Jacobi kernel: ours with --jacobi-unchecked;
# - per-kernel GPU time, registers and occupancy: ncu on a few launches of
#   each kernel (needs ncu; skipped without it).
# PARTS (default "hypotheses ncu") also takes `shapes`, `foreign` and
# `streams`, described where they run below. What they found (2026-12-01/02,
# bench/results/2026-12-02-graph-gap): the stack limit and the panic slot
# change nothing; Rust's kernel code costs ~0.10 µs per node; the rest
# (~0.18 µs per node) is the CUDA driver's, once a second stream of the
# context has run work, in CUDA C as well (PARTS=streams).
# Rows go to $OUT/graph-gap/rows.csv (variant,<the programs' CSV row>),
# ncu's to $OUT/graph-gap/ncu-*.csv; the table is printed at the end.
set -uo pipefail
dir=${1:?usage: graph-gap.sh DIR}
root=$(cd "$(dirname "$0")/../.." && pwd)
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
ncu=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
res=${OUT:-$root/target/gpu/out}/graph-gap
mkdir -p "$res"
rows=$res/rows.csv
echo "variant,bench,impl,mode,case,size,metric,value" >"$rows"
[ -x "$dir/async-cuda" ] || "$nvcc" -O3 -arch=sm_90 -o "$dir/async-cuda" "$root/bench/cuda/async.cu" -lcuda || exit 1

one() { # variant command...
    local v=$1
    shift
    "$@" --csv 2>>"$res/stderr.txt" | sed "s/^/$v,/" >>"$rows"
    echo "  $v: exit ${PIPESTATUS[0]}"
}
# PARTS: which experiments (default "hypotheses ncu"); "shapes" replays the
# chain in graphs of 2, 100 and 10 000 launches over 2^16 and 2^20 floats,
# both sides, to tell a cost per replay from one per kernel node, and one
# that grows with the data from one that does not.
parts=" ${PARTS:-hypotheses ncu} "
if [[ $parts == *" shapes "* ]]; then
    for r in $(seq 1 "${ROUNDS:-2}"); do
        for k in 16 20; do
            for g in 2 100 10000; do
                one "ours-k$k-g$g" "$dir/async-bench" --only launches --log2-elems $k --graph-len $g --launches 10000
                one "cuda-k$k-g$g" "$dir/async-cuda" --only launches --log2-elems $k --graph-len $g --launches 10000
            done
        done
    done
    python3 - "$rows" <<'EOF'
import csv, statistics, sys
from collections import defaultdict
v = defaultdict(list)
for r in csv.DictReader(open(sys.argv[1])):
    if r["case"] == "graph" and r["metric"] == "us_per_launch" and "-k" in r["variant"]:
        v[r["variant"]].append(float(r["value"]))
print("| floats | launches per graph | ours µs/launch | CUDA C µs/launch | ratio |")
print("|---|---:|---:|---:|---:|")
for k in (16, 20):
    for g in (2, 100, 10000):
        o, c = v.get(f"ours-k{k}-g{g}"), v.get(f"cuda-k{k}-g{g}")
        if o and c:
            mo, mc = statistics.median(o), statistics.median(c)
            print(f"| 2^{k} | {g} | {mo:.3f} | {mc:.3f} | {mo / mc:.3f} |")
EOF
fi
# PARTS=foreign: nvcc's `inc` and ours (the image's PTX, which the build
# copies into DIR), replayed with the driver API alone inside async-bench's
# process (--foreign, src/foreign.rs): before offload starts, after its
# graph replay, and on offload's buffers and queue stream. The same
# harness steps as foreign-kernel.cu, in the runtime's process: tells
# whether the runtime's extra cost per kernel node follows the process or
# offload's objects.
if [[ $parts == *" foreign "* ]]; then
    "$nvcc" -O3 -arch=sm_90 -ptx -o "$dir/async-cuda.ptx" "$root/bench/cuda/async.cu" || exit 1
    sym=$(grep -o '__offload_kernel_async_bench_inc_[0-9A-Za-z_]*' "$dir/async-bench.ptx" | head -1)
    # Checkpoints in each process: before offload starts, after its start
    # (`init`), after its blocking, queued and graph runs; on offload's
    # buffers and stream. FOREIGN_PREWORK=K:keep|destroy: before offload
    # starts, K more streams run work (kept alive or destroyed).
    for r in $(seq 1 "${ROUNDS:-2}"); do
        for pre in ${PREWORK:-none 1:keep 1:destroy 2:keep}; do
            env=()
            [ "$pre" = none ] || env=(FOREIGN_PREWORK=$pre)
            one "foreign_pre${pre/:/_}-k16" env "${env[@]}" "$dir/async-bench" --only launches \
                --foreign "$dir/async-cuda.ptx:inc:4:nvcc" --foreign "$dir/async-bench.ptx:$sym:5:ours"
        done
        one "cuda-k16" "$dir/async-cuda" --only launches
    done
    python3 - "$rows" <<'EOF'
import csv, statistics, sys
from collections import defaultdict
v = defaultdict(list)
for r in csv.DictReader(open(sys.argv[1])):
    side, _, k = r["variant"].partition("-")
    if r["metric"] == "us_per_launch" and side.startswith(("foreign", "cuda")) and k.startswith("k"):
        v[(k, side + ": " + r["case"])].append(float(r["value"]))
print("| floats | side: case | µs per launch (median) |")
print("|---|---|---:|")
for (k, c), xs in sorted(v.items()):
    print(f"| 2^{k[1:]} | {c} | {statistics.median(xs):.3f} |")
EOF
fi
# PARTS=streams: ours against CUDA C with 0 to 3 more streams that have
# run work (async.cu --extra-streams K), launches and Jacobi, ROUNDS
# rounds: the per-node cost of graph replay follows the streams a context
# has used, in CUDA C as in offload.
if [[ $parts == *" streams "* ]]; then
    for r in $(seq 1 "${ROUNDS:-2}"); do
        for part in launches jacobi; do
            one ours "$dir/async-bench" --only $part
            for k in 0 1 2 3; do
                one "cuda-x$k" "$dir/async-cuda" --only $part --extra-streams $k
            done
        done
    done
    python3 - "$rows" <<'EOF'
import csv, statistics, sys
from collections import defaultdict
v = defaultdict(list)
for r in csv.DictReader(open(sys.argv[1])):
    if r["metric"] in ("us_per_launch", "us_per_step") and r["variant"] in ("ours",) + tuple(f"cuda-x{k}" for k in range(4)):
        v[(r["bench"], r["case"], r["variant"])].append(float(r["value"]))
cols = ["ours", "cuda-x0", "cuda-x1", "cuda-x2", "cuda-x3"]
print("| bench | case | " + " | ".join(cols) + " | ours / x0 | ours / x1 |")
print("|---|---|" + "---:|" * (len(cols) + 2))
for b, c in sorted({(b, c) for b, c, _ in v}):
    m = {x: statistics.median(v[(b, c, x)]) for x in cols if v.get((b, c, x))}
    cells = [f"{m[x]:.3f}" if x in m else "" for x in cols]
    r0 = f"{m['ours'] / m['cuda-x0']:.3f}" if "ours" in m and "cuda-x0" in m else ""
    r1 = f"{m['ours'] / m['cuda-x1']:.3f}" if "ours" in m and "cuda-x1" in m else ""
    print(f"| {b} | {c} | " + " | ".join(cells) + f" | {r0} | {r1} |")
EOF
fi
[[ $parts == *" hypotheses "* ]] || exit 0
for r in $(seq 1 "${ROUNDS:-2}"); do
    echo "round $r"
    for part in launches jacobi; do
        one ours "$dir/async-bench" --only "$part"
        one cuda "$dir/async-cuda" --only "$part"
        one ours-stack1k env OFFLOAD_CUDA_STACK_BYTES=1024 "$dir/async-bench" --only "$part"
        one cuda-stack8k "$dir/async-cuda" --only "$part" --stack-bytes 8192
    done
    one ours-unchecked "$dir/async-bench" --only jacobi --jacobi-unchecked
done

echo
echo "== medians (µs per launch or step; graph and queued rows)"
python3 - "$rows" <<'EOF'
import csv, statistics, sys
from collections import defaultdict
v = defaultdict(list)
for r in csv.DictReader(open(sys.argv[1])):
    if r["metric"] in ("us_per_launch", "us_per_step"):
        v[(r["bench"], r["case"], r["variant"])].append(float(r["value"]))
cases = sorted({(b, c) for b, c, _ in v})
variants = ["ours", "cuda", "ours-stack1k", "cuda-stack8k", "ours-unchecked"]
print("| bench | case | " + " | ".join(variants) + " |")
print("|---|---|" + "---:|" * len(variants))
for b, c in cases:
    cells = [f"{statistics.median(v[(b, c, x)]):.3f}" if v.get((b, c, x)) else "" for x in variants]
    print(f"| {b} | {c} | " + " | ".join(cells) + " |")
EOF

if [[ $parts != *" ncu "* ]]; then
    :
elif [ -x "$ncu" ]; then
    echo
    echo "== ncu: GPU time, registers, stack and occupancy per kernel (a few launches each)"
    m=gpu__time_duration.sum,launch__registers_per_thread,launch__occupancy_limit_registers,sm__warps_active.avg.pct_of_peak_sustained_active,launch__stack_size
    for side in ours cuda; do
        prog=$dir/async-bench
        [ $side = cuda ] && prog=$dir/async-cuda
        for part in launches jacobi; do
            "$ncu" --csv --metrics "$m" --launch-skip 10 --launch-count 6 "$prog" --only "$part" --reps 1 \
                --launches 200 --jacobi-steps 20 >"$res/ncu-$side-$part.csv" 2>>"$res/stderr.txt"
            echo "  $side $part: exit $?"
        done
    done
    "$ncu" --csv --metrics "$m" --launch-skip 10 --launch-count 6 "$dir/async-bench" --only jacobi --reps 1 \
        --jacobi-steps 20 --jacobi-unchecked >"$res/ncu-ours-unchecked-jacobi.csv" 2>>"$res/stderr.txt"
    python3 - "$res" <<'EOF'
import csv, glob, io, os, statistics, sys
from collections import defaultdict
for f in sorted(glob.glob(os.path.join(sys.argv[1], "ncu-*.csv"))):
    text = open(f).read()
    start = text.find('"ID"')
    if start < 0:
        print(f"{os.path.basename(f)}: no rows"); continue
    vals = defaultdict(list)
    for r in csv.DictReader(io.StringIO(text[start:])):
        try:
            vals[(r["Kernel Name"][:40], r["Metric Name"], r["Metric Unit"])].append(float(r["Metric Value"].replace(",", "")))
        except (KeyError, ValueError):
            pass
    for (k, name, unit), xs in sorted(vals.items()):
        print(f"{os.path.basename(f)}: {k}: {name} = {statistics.median(xs):g} {unit}")
EOF
else
    echo "ncu not found: no per-kernel metrics"
fi
