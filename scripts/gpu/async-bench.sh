#!/usr/bin/env bash
# Suite `async-bench`: offload's queues, graphs and overlapped copies
# against CUDA C written with streams and graphs, in the same run
# (issue 11, "Benchmarks"; bench/README.md, section "Asynchronous
# execution"), and the two interop/pipeline examples on the GPU.
#
# build: bench/async (the `async-bench` binary) and examples/10-streams and
#   examples/11-cublas, release, sm_90, stripped (≈ 10 MB in all).
# run: compiles bench/cuda/async.cu with nvcc, runs ours and CUDA's
#   ROUNDS times alternating which goes first, then the examples, then
#   prints the table of medians, ratios and targets (bench/summarize.py).
#   Results in $OUT/async-bench: raw.csv (every row of every round),
#   summary.md / summary.csv, env.txt, log.txt (commands and stderr).
#
# Knobs (environment): ROUNDS (3), BUDGET_S (150: no new round starts
# after this many seconds), ASYNC_ARGS (extra flags for both programs, e.g.
# "--reps 9" or "--only overlap"), NVCC (/usr/local/cuda/bin/nvcc),
# OFFLOAD_DEVICE (cuda: ours must run on the GPU, or fail at once; `host`
# only to test this script on a machine without a GPU, with a stand-in NVCC).
what="queued launches, graphs, overlap, Jacobi vs CUDA C; streams, cublas"
needs="NVIDIA driver, nvcc, libcublas"
takes="about 1.5 min"

build() { # dir
    local out=$1 arch=${ARCH:-sm_90} b
    offload build -q --release --arch "$arch" -p async-bench -p streams -p cublas
    for b in async-bench streams cublas; do
        cp "target/release/$b" "$out/$b"
        # Symbols only: the device image is an allocated section and stays.
        strip "$out/$b"
    done
    # The device image's PTX, for bench/async/graph-gap.sh's foreign-kernel
    # replays (PARTS=foreign).
    cp "target/offload/nvptx64-nvidia-cuda-$arch/nvptx64-nvidia-cuda/release/async-bench.ptx" "$out/" 2>/dev/null || true
    {
        echo "commit $(git rev-parse HEAD)$(git diff --quiet HEAD -- . ':!bench/results' || echo ' (with uncommitted changes)')"
        echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -m), arch $arch"
        echo "command: cargo offload build --release --arch $arch -p async-bench -p streams -p cublas"
    } >"$out/BUILD"
    du -sh "$out"
}

run() { # dir
    local dir=$1 res=$OUT/async-bench r start rc
    local nvcc=${NVCC:-/usr/local/cuda/bin/nvcc} device=${OFFLOAD_DEVICE:-cuda}
    mkdir -p "$res"
    local raw=$res/raw.csv log=$res/log.txt
    : >"$log"
    echo "round,bench,impl,mode,case,size,metric,value" >"$raw"
    start=$(date +%s)
    {
        echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
        nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,pcie.link.gen.current,pcie.link.width.current --format=csv
        echo "nvcc: $("$nvcc" --version | tail -1)"
        echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)  cores: $(nproc)"
        cat "$dir/BUILD"
        echo "args: ${ASYNC_ARGS:-(defaults)}"
    } >"$res/env.txt" 2>&1
    cat "$res/env.txt"

    gpu_check "nvcc bench/cuda/async.cu (the CUDA C baseline)" 0 -- \
        "$nvcc" -O3 -arch=sm_90 -o "$dir/async-cuda" bench/cuda/async.cu -lcuda
    [ -x "$dir/async-cuda" ] || return 0

    # One program, one round: its CSV rows, prefixed with the round, into
    # raw.csv; its stderr into the log; a failure (a wrong result exits 1)
    # is a failed check.
    one() { # round name program
        local round=$1 name=$2
        shift 2
        _checks=$((_checks + 1))
        echo "[$(($(date +%s) - start))s] round $round: $* --csv ${ASYNC_ARGS:-}" >>"$log"
        # shellcheck disable=SC2086
        "$@" --csv ${ASYNC_ARGS:-} 2>>"$log" | sed "s/^/$round,/" >>"$raw"
        rc=${PIPESTATUS[0]}
        if [ "$rc" -eq 0 ]; then
            echo "--- round $round, $name: ok"
        else
            echo "--- round $round, $name: FAILED (exit $rc; see $log)"
            _failed=$((_failed + 1))
        fi
    }
    local rounds=${ROUNDS:-3} budget=${BUDGET_S:-150}
    for r in $(seq 1 "$rounds"); do
        if [ $(($(date +%s) - start)) -ge "$budget" ]; then
            echo "time budget ($budget s) reached: skipping rounds $r..$rounds" | tee -a "$log"
            break
        fi
        if [ $((r % 2)) -eq 1 ]; then
            one "$r" offload env OFFLOAD_DEVICE="$device" "$dir/async-bench"
            one "$r" "CUDA C" "$dir/async-cuda"
        else
            one "$r" "CUDA C" "$dir/async-cuda"
            one "$r" offload env OFFLOAD_DEVICE="$device" "$dir/async-bench"
        fi
        # CUDA C with one more stream that has run work, as offload's
        # blocking API has beside a queue: the driver's cost per graph
        # kernel node rises with it (bench/README.md, "the graph gap").
        for part in launches jacobi; do
            one "$r" "CUDA C, one more stream, $part" "$dir/async-cuda" --only $part --extra-streams 1
        done
    done
    echo "invalid results (rows 'valid' = 0): $(grep -c ',valid,0' "$raw")"
    gpu_check "async-bench: every variant's result is exact, ours and CUDA's" 0 -- \
        bash -c "! grep ',valid,0' '$raw' && grep -q ',offload,.*,valid,1' '$raw' && grep -q ',cuda,.*,valid,1' '$raw'"

    # The examples on the GPU, cuBLAS from the toolkit next to nvcc. cudarc
    # looks for libcublas.so (and .so.12, .so.11, …), so a toolkit with only
    # libcublas.so.13 gets a libcublas.so link of our own.
    local cudalib so libdir=$dir/lib
    cudalib=$(cd "$(dirname "$nvcc")/.." && pwd)
    so=$(ls "$cudalib"/lib64/libcublas.so* "$cudalib"/targets/*/lib/libcublas.so* \
        /usr/lib/x86_64-linux-gnu/libcublas.so* 2>/dev/null | head -1)
    mkdir -p "$libdir"
    [ -n "$so" ] && ln -sf "$so" "$libdir/libcublas.so"
    echo "cuBLAS library: ${so:-none found under $cudalib}"
    gpu_check "examples/10-streams on the GPU" 0 "backend: cuda" "streams: all [0-9]+ elements match the host" -- \
        env OFFLOAD_DEVICE="$device" "$dir/streams" 1024 64 3
    gpu_check "examples/11-cublas on the GPU: cuBLAS SGEMM on the queue, then an offload kernel" 0 \
        "backend: cuda" "cuBLAS: cublasSgemm_v2 .* enqueued on the offload queue's stream" \
        "cublas: C and out match the host SGEMM" -- \
        env OFFLOAD_DEVICE="$device" LD_LIBRARY_PATH="$libdir:${so:+$(dirname "$so"):}$cudalib/lib64:${LD_LIBRARY_PATH:-}" \
        "$dir/cublas" 1024 512 256

    echo
    echo "== offload vs CUDA C, asynchronous execution, on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) (medians of the rounds; µs rows: lower is better)"
    python3 bench/summarize.py "$res"
    echo "targets met: $(grep -v '^| validation' "$res/summary.md" | grep -c '| yes |') of" \
        "$(grep -v '^| validation' "$res/summary.md" | grep -cE '\| (yes|NO) \|'); results valid:" \
        "$(grep '^| validation' "$res/summary.md" | grep -c '| yes |') of 2"
    echo "results: $res (raw.csv, summary.md, env.txt, log.txt); $(($(date +%s) - start)) s"
}
