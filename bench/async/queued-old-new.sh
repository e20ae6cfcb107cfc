#!/usr/bin/env bash
# Issue 11's queued-launch gap on the GPU machine: two builds of
# async-bench (OLD and NEW, e.g. before and after a change of the queued
# path) and CUDA C's bench/cuda/async.cu, ROUNDS rounds in rotating order,
# `--only launches` and `--only jacobi`; then bench/async/ctx-cost.cu
# (what cuCtxGetCurrent / cuCtxSetCurrent cost beside cuLaunchKernel).
#
#   OLD=dir/async-bench-old NEW=dir/async-bench bench/async/queued-old-new.sh OUTDIR
#
# Each run's CPU time and context switches (bench/async/rusage.py) go to
# the log as `rusage,round,build,part,user_s,sys_s,vcsw,ivcsw,wall_s`.
# PIN=CPU runs every program under `taskset -c CPU`.
#
# Writes OUTDIR/raw.csv (`round,build,bench,impl,mode,case,size,metric,value`),
# OUTDIR/ctx-cost.csv and OUTDIR/log.txt, and prints the medians.
set -uo pipefail
out=${1:?usage: OLD=… NEW=… queued-old-new.sh OUTDIR}
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
rounds=${ROUNDS:-3}
mkdir -p "$out"
log=$out/log.txt raw=$out/raw.csv
: >"$log"
echo "round,build,bench,impl,mode,case,size,metric,value" >"$raw"
"$nvcc" -O3 -arch=sm_90 -o "$out/async-cuda" bench/cuda/async.cu -lcuda >>"$log" 2>&1 || { echo "nvcc async.cu failed"; exit 1; }
"$nvcc" -O2 -arch=sm_90 -o "$out/ctx-cost" bench/async/ctx-cost.cu -lcuda >>"$log" 2>&1 || { echo "nvcc ctx-cost.cu failed"; exit 1; }
one() { # round build program...
    local r=$1 b=$2
    shift 2
    for part in launches jacobi; do
        echo "round $r $b: $* --only $part --csv" >>"$log"
        python3 bench/async/rusage.py "$r,$b,$part" "$@" --only $part --csv 2>>"$log" | sed "s/^/$r,$b,/" >>"$raw"
    done
}
for r in $(seq 1 "$rounds"); do
    order=(old new cuda)
    case $((r % 3)) in 2) order=(new cuda old) ;; 0) order=(cuda old new) ;; esac
    # Without OLD: ours and CUDA C only, alternating which goes first.
    if [ -z "${OLD:-}" ]; then
        order=(new cuda)
        [ $((r % 2)) -eq 0 ] && order=(cuda new)
    fi
    for b in "${order[@]}"; do
        case $b in
            old) one "$r" old ${PIN:+taskset -c $PIN} env OFFLOAD_DEVICE=cuda "$OLD" ;;
            new) one "$r" new ${PIN:+taskset -c $PIN} env OFFLOAD_DEVICE=cuda "$NEW" ;;
            cuda) one "$r" cuda ${PIN:+taskset -c $PIN} "$out/async-cuda" ;;
        esac
    done
done
"$out/ctx-cost" 10000 5 | tee "$out/ctx-cost.csv"
python3 - "$raw" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
keys = {}
for r in rows:
    if r["metric"] in ("us_per_launch", "us_per_step", "us_submit_per_launch"):
        keys.setdefault((r["bench"], r["case"], r["metric"], r["build"]), []).append(float(r["value"]))
print(f"{'bench':<14} {'case':<16} {'metric':<22} {'old':>8} {'new':>8} {'cuda':>8} {'new/cuda':>9} {'old/cuda':>9}")
for (bench, case, metric) in sorted({k[:3] for k in keys}):
    m = {b: statistics.median(keys[(bench, case, metric, b)]) for b in ("old", "new", "cuda") if (bench, case, metric, b) in keys}
    c = m.get("cuda")
    f = lambda b: f"{m[b]:8.3f}" if b in m else f"{'-':>8}"
    r = lambda b: f"{m[b] / c:9.3f}" if b in m and c else f"{'-':>9}"
    print(f"{bench:<14} {case:<16} {metric:<22} {f('old')} {f('new')} {f('cuda')} {r('new')} {r('old')}")
# The ratio within each round (ours and CUDA C run next to each other):
# machine drift between rounds cancels; quartiles show the spread.
print()
print("per-round ratios new / cuda: median [quartiles] (rounds)")
for (bench, case, metric) in sorted({k[:3] for k in keys}):
    if metric == "us_submit_per_launch":
        continue
    per = {}
    for x in rows:
        if (x["bench"], x["case"], x["metric"]) == (bench, case, metric):
            per.setdefault(x["round"], {})[x["build"]] = float(x["value"])
    q = sorted(v["new"] / v["cuda"] for v in per.values() if "new" in v and "cuda" in v)
    if q:
        qs = statistics.quantiles(q, n=4) if len(q) > 1 else [q[0]] * 3
        print(f"{bench:<14} {case:<16} {statistics.median(q):7.3f} [{qs[0]:.3f}, {qs[2]:.3f}] ({len(q)})")
PY
