#!/usr/bin/env bash
# The performance comparison of offload against CUDA C++, in one call on the
# GPU machine. Run from the repository root with $BENCH_DIR (default
# target/gpu/bench, made by bench/build-gpu.sh): builds no Rust, compiles the CUDA
# baselines bench/cuda/*.cu with nvcc, runs every benchmark ROUNDS times
# alternating ours and CUDA's (the order flips every round), and prints the
# table of medians and ratios last.
#
# Writes to $OUT (default ./bench-out): raw.csv (every measurement), env.txt
# (GPU, driver, toolkit, build), log.txt (commands and their stderr),
# ncu.csv (kernel times from Nsight Compute, where it works), sass.txt
# (resource usage and machine code of the compared kernels), summary.csv and
# summary.md (bench/summarize.py).
#
# With $BENCH_DIR/before/ (BEFORE=<rev> at build: bench/build-gpu.sh), each
# round also runs that revision's babelstream and minibude (default and
# --fast-math), before or after ours in turn; their rows have impl
# `offload_before`, and the summary compares ours with them (group
# `before`).
#
# Knobs (environment): ROUNDS (3), BUDGET_S (240: no new round starts after
# this many seconds), BS_TIMES (100), BS_SIZES ("33554432 268435456"),
# MB_PPWI ("1,2,4,8,16,32"), MB_WGSIZE ("32,64,128,256"), MB_POSES (0: the
# whole deck), LAUNCH_ITERS
# (20000), TRANSFER_MIB (1024), NVCC (/usr/local/cuda/bin/nvcc).
set -uo pipefail
cd "$(dirname "$0")/.."
C=${BENCH_DIR:-target/gpu/bench}
if [ ! -x "$C/babelstream" ] || [ ! -x "$C/minibude-fast-math" ] || [ ! -f "$C/bm1/poses.in" ]; then
    echo "error: $C is incomplete: run bench/build-gpu.sh (or scripts/gpu.sh build bench) first" >&2
    exit 1
fi
OUT=${OUT:-$PWD/bench-out}
mkdir -p "$OUT"
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
CUDA_BIN=$(dirname "$NVCC")
CUOBJDUMP=$(command -v cuobjdump || echo "$CUDA_BIN/cuobjdump")
NCU=$(command -v ncu || echo "$CUDA_BIN/ncu")
ROUNDS=${ROUNDS:-3}
BUDGET_S=${BUDGET_S:-240}
BS_TIMES=${BS_TIMES:-100}
BS_SIZES=${BS_SIZES:-"33554432 268435456"}
MB_PPWI=${MB_PPWI:-1,2,4,8,16,32}
MB_WGSIZE=${MB_WGSIZE:-32,64,128,256}
MB_POSES=${MB_POSES:-0}
LAUNCH_ITERS=${LAUNCH_ITERS:-20000}
TRANSFER_MIB=${TRANSFER_MIB:-1024}
# Ours must run on the GPU: fail at once rather than fall back to the host
# (OFFLOAD_DEVICE=host only to test this script without a GPU).
export OFFLOAD_DEVICE=${OFFLOAD_DEVICE:-cuda}
START=$(date +%s)
RAW=$OUT/raw.csv
LOG=$OUT/log.txt
B=$(mktemp -d)
elapsed() { echo $(($(date +%s) - START)); }
say() { echo "[$(elapsed)s] $*" | tee -a "$LOG"; }
: >"$LOG"
echo "round,bench,impl,mode,case,size,metric,value" >"$RAW"

# --- environment --------------------------------------------------------------
{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,power.limit,temperature.gpu --format=csv
    echo "nvcc: $("$NVCC" --version | tail -1)"
    echo "kernel: $(uname -r)  cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)  cores: $(nproc)"
    echo "--- build ($C/BUILD)"
    cat "$C/BUILD"
    echo "--- our backend"
    "$C/babelstream" -s 1024 -n 2 2>&1 | grep -E "Backend|warning"
    echo "--- commands"
    echo "nvcc -O3 -arch=sm_90 [-use_fast_math] [-DBUDE_ALIGNED] bench/cuda/*.cu (launch.cu with -lcuda)"
    echo "rounds $ROUNDS; babelstream -s {$BS_SIZES} -n $BS_TIMES; minibude --deck $C/bm1 -p $MB_PPWI -w $MB_WGSIZE;" \
        "microbench launch --iters $LAUNCH_ITERS; microbench transfer --mib $TRANSFER_MIB"
} >"$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

# --- CUDA baselines -------------------------------------------------------------
say "compiling the CUDA baselines"
nv() { "$NVCC" -O3 -arch=sm_90 "$@" 2>>"$LOG" || say "FAILED: nvcc $*"; }
nv -o "$B/babelstream-cuda" bench/cuda/babelstream.cu &
nv -o "$B/minibude-cuda" bench/cuda/minibude.cu &
nv -DBUDE_ALIGNED -o "$B/minibude-cuda-aligned" bench/cuda/minibude.cu &
nv -use_fast_math -o "$B/minibude-cuda-fast" bench/cuda/minibude.cu &
nv -use_fast_math -DBUDE_ALIGNED -o "$B/minibude-cuda-aligned-fast" bench/cuda/minibude.cu &
nv -o "$B/launch-cuda" bench/cuda/launch.cu -lcuda &
nv -o "$B/transfer-cuda" bench/cuda/transfer.cu &
wait
say "compiled: $(ls "$B" | tr '\n' ' ')"

# run ROUND CMD...: CSV rows to raw.csv prefixed with the round; stderr to the log.
run() {
    local r=$1
    shift
    echo "[$(elapsed)s] round $r: $*" >>"$LOG"
    "$@" 2>>"$LOG" | sed "s/^/$r,/" >>"$RAW"
    local rc=${PIPESTATUS[0]}
    [ "$rc" -eq 0 ] || say "FAILED (exit $rc): $*"
}
# pair ROUND "OURS CMD" "CUDA CMD": both, ours first in odd rounds.
pair() {
    if [ $(($1 % 2)) -eq 1 ]; then run "$1" $2; run "$1" $3; else run "$1" $3; run "$1" $2; fi
}
# before ROUND CMD...: `run` for the BEFORE build ($C/before), its rows'
# impl renamed `offload_before`.
BEFORE_DIR=$C/before
[ -x "$BEFORE_DIR/babelstream" ] || BEFORE_DIR=
before() {
    local r=$1
    shift
    echo "[$(elapsed)s] round $r (before): $*" >>"$LOG"
    "$@" 2>>"$LOG" | sed -e "s/^\([a-z]*\),offload,/\1,offload_before,/" -e "s/^/$r,/" >>"$RAW"
    local rc=${PIPESTATUS[0]}
    [ "$rc" -eq 0 ] || say "FAILED (exit $rc): $*"
}
# the BEFORE build's runs of round ROUND (nothing without one)
before_round() {
    [ -n "$BEFORE_DIR" ] || return 0
    local n
    for n in $BS_SIZES; do
        before "$1" "$BEFORE_DIR/babelstream" -s "$n" -n "$BS_TIMES" --csv
    done
    before "$1" "$BEFORE_DIR/minibude" $MB --mode default
    before "$1" "$BEFORE_DIR/minibude-fast-math" $MB --mode fast-math
}

MB="--deck $C/bm1 -n $MB_POSES -p $MB_PPWI -w $MB_WGSIZE --csv"
for r in $(seq 1 "$ROUNDS"); do
    if [ "$(elapsed)" -ge "$BUDGET_S" ]; then
        say "time budget reached: skipping rounds $r..$ROUNDS"
        break
    fi
    say "round $r"
    # The BEFORE build's runs: first in even rounds, last in odd ones.
    [ $((r % 2)) -eq 1 ] || before_round "$r"
    for n in $BS_SIZES; do
        pair "$r" "$C/babelstream -s $n -n $BS_TIMES --csv" "$B/babelstream-cuda -s $n -n $BS_TIMES --csv"
    done
    pair "$r" "$C/microbench launch --iters $LAUNCH_ITERS --csv" "$B/launch-cuda --iters $LAUNCH_ITERS --csv"
    pair "$r" "$C/microbench transfer --mib $TRANSFER_MIB --csv" "$B/transfer-cuda --mib $TRANSFER_MIB --csv"
    pair "$r" "$C/minibude $MB --mode default" "$B/minibude-cuda $MB --mode default"
    run "$r" "$B/minibude-cuda-aligned" $MB --mode default
    run "$r" "$C/minibude-fmad" $MB --mode fmad
    pair "$r" "$C/minibude-fast-math $MB --mode fast-math" "$B/minibude-cuda-fast $MB --mode fast-math"
    run "$r" "$B/minibude-cuda-aligned-fast" $MB --mode fast-math
    [ $((r % 2)) -eq 0 ] || before_round "$r"
done

# --- kernel-only times (Nsight Compute; not every machine allows it) ------------
if [ -x "$NCU" ] && [ "$(elapsed)" -lt $((BUDGET_S + 30)) ]; then
    say "ncu: kernel durations"
    read -r P W I <<<"$(python3 bench/summarize.py --best-config "$RAW" default)"
    PROF="timeout 60 $NCU --clock-control none --csv --metrics gpu__time_duration.sum,dram__bytes.sum,sm__inst_executed.sum,launch__registers_per_thread"
    {
        $PROF "$C/babelstream" -s 33554432 -n 3 --csv
        $PROF "$B/babelstream-cuda" -s 33554432 -n 3 --csv
        if [ -n "${P:-}" ]; then
            $PROF "$C/minibude" --deck "$C/bm1" -p "$P" -w "$W" -i 1 --warmup 0 --csv
            $PROF "$B/minibude-${I//_/-}" --deck "$C/bm1" -p "$P" -w "$W" -i 1 --warmup 0 --csv
        fi
    } >"$OUT/ncu.csv" 2>&1 || say "ncu did not complete (see ncu.csv)"
fi

# --- machine code of the compared kernels ------------------------------------------
{
    for f in babelstream minibude minibude-fmad minibude-fast-math; do
        echo "=== resource usage: ours $f (ptxas -v)"
        "$CUDA_BIN/ptxas" -arch=sm_90 -O3 -v "$C/ptx/$f.ptx" -o "$B/$f.cubin" 2>&1 |
            grep -E "entry function|Used|stack frame" | grep -v "^ *0 bytes stack" | paste -s -d' ' | sed 's/ptxas info *: Compiling/\nCompiling/g'
        echo
    done
    for f in babelstream minibude minibude-fast-math; do
        [ -n "$BEFORE_DIR" ] || break
        echo "=== resource usage: BEFORE's $f (ptxas -v)"
        "$CUDA_BIN/ptxas" -arch=sm_90 -O3 -v "$BEFORE_DIR/ptx/$f.ptx" -o /dev/null 2>&1 |
            grep -E "entry function|Used|stack frame" | grep -v "^ *0 bytes stack" | paste -s -d' ' | sed 's/ptxas info *: Compiling/\nCompiling/g'
        echo
    done
    for f in babelstream-cuda minibude-cuda minibude-cuda-fast minibude-cuda-aligned minibude-cuda-aligned-fast; do
        echo "=== resource usage: $f"
        "$CUOBJDUMP" --dump-resource-usage "$B/$f" 2>&1 | grep -E "Function|REG" | paste - - | sed 's/ \+/ /g'
    done
    sass() { # FILE REGEX: the SASS of functions whose name matches
        "$CUOBJDUMP" -sass "$1" 2>&1 | awk -v re="$2" '/Function :/ {keep = ($0 ~ re)} keep'
    }
    echo "=== SASS: BabelStream triad and dot, ours"
    sass "$B/babelstream.cubin" "triad|dot_partial"
    echo "=== SASS: BabelStream triad and dot, CUDA"
    sass "$B/babelstream-cuda" "triad|dot"
    if [ -n "${P:-}" ]; then
        echo "=== SASS: miniBUDE PPWI=$P, ours (default, fmad, then fast-math)"
        sass "$B/minibude.cubin" "fasten_${P}_"
        sass "$B/minibude-fmad.cubin" "fasten_${P}_"
        sass "$B/minibude-fast-math.cubin" "fasten_${P}_"
        echo "=== SASS: miniBUDE PPWI=$P, CUDA $I (default, then -use_fast_math)"
        sass "$B/minibude-${I//_/-}" "fasten_mainILi${P}E"
        sass "$B/minibude-${I//_/-}-fast" "fasten_mainILi${P}E"
    fi
} >"$OUT/sass.txt" 2>&1

say "done in $(elapsed)s; results in $OUT"
echo
grep -h "FAILED\|budget" "$LOG" || true
echo "== offload vs CUDA C++ on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) (medians of $ROUNDS rounds)"
python3 bench/summarize.py "$OUT"
