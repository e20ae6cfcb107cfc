#!/usr/bin/env bash
# Runs on the GPU machine: the hardening checks (issue 9) on the binaries
# from scripts/build-gpu-hardening.sh (.carry/hardening/). Prints each
# command's output and `--- <name>: ok` or `--- <name>: FAILED` per check;
# exits non-zero if any failed. One function per area.
#
#     scripts/gpu-hardening.sh              on a GPU (the kernels run there)
#     scripts/gpu-hardening.sh b_stack ...  only these sections (gpu_<name>)
#     DEVICE=host scripts/gpu-hardening.sh  the same checks on the host
#                                           fallback, where they apply
set -uo pipefail
dir="$(cd "$(dirname "$0")/.." && pwd)/.carry/hardening"
[ -d "$dir" ] || dir="$(cd "$(dirname "$0")" && pwd)"
cd "$dir"
dev=${DEVICE:-cuda}
nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader 2>/dev/null || echo "(no nvidia-smi)"
fail=0

# check NAME WANT [PATTERN...] -- COMMAND...
# Runs COMMAND (at most 300 s) and prints its output (the last 40 lines).
# ok if its exit status is WANT (0, or `error`: non-zero but neither a
# signal nor a timeout, i.e. no crash) and every PATTERN (an extended regex)
# occurs in the output; a PATTERN `N*REGEX` must occur exactly N times.
check() {
    local name=$1 want=$2
    shift 2
    local patterns=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do
        patterns+=("$1")
        shift
    done
    shift
    echo "=== $name"
    local out rc ok=1
    out=$(timeout 300 "$@" 2>&1)
    rc=$?
    echo "$out" | tail -n 40
    if [ "$want" = 0 ]; then
        [ $rc -eq 0 ] || ok=0
    elif [ $rc -eq 0 ] || [ $rc -ge 124 ]; then
        ok=0
    fi
    local p n re
    for p in "${patterns[@]}"; do
        if [[ "$p" =~ ^([0-9]+)\*(.*)$ ]]; then
            n=${BASH_REMATCH[1]} re=${BASH_REMATCH[2]}
            if [ "$(grep -Ec -- "$re" <<<"$out")" != "$n" ]; then
                echo "(expected $n line(s) matching: $re)"
                ok=0
            fi
        elif ! grep -Eq -- "$p" <<<"$out"; then
            echo "(missing: $p)"
            ok=0
        fi
    done
    if [ $ok = 1 ]; then
        echo "--- $name: ok (exit $rc)"
    else
        echo "--- $name: FAILED (exit $rc)"
        fail=1
    fi
}

# ---------------------------------------------------------------------------
# a: toolchains. Saturating float → i128/u128 casts (exact against a
# bit-level reference), PTX ISA features (sm_90 image: mask 0x5a5a0077),
# warp operations, and the warp examples, from each device toolchain.
gpu_a_toolchain() { # debian | nightly
    local d=./$1
    check "a $1: device-model casts, features, warp" 0 \
        "casts +ok .*values \\(NaN, ±inf, ±2\\^127, 2\\^128, subnormals, random\\) exact" \
        "features +ok .*ptx70\\.\\.ptx78 and sm_90 on \\(0x5a5a0077\\)" "warp +ok" \
        -- env OFFLOAD_DEVICE="$dev" "$d/device-model" casts features warp
    check "a $1: reduction 2^24" 0 -- env OFFLOAD_DEVICE="$dev" "$d/reduction" 24
    check "a $1: babelstream 2^25" 0 -- env OFFLOAD_DEVICE="$dev" "$d/babelstream" -s 33554432 -n 20
}

# ---------------------------------------------------------------------------
# b: runtime and images.

# Dynamic shared memory above 48 KiB: 64 and 200 KiB reduce correctly (the
# H200 allows 227 KiB per block once a kernel opts in); 1 MiB is
# InvalidLaunch naming request and limit; static shared memory counts.
gpu_b_shared_memory() {
    # On an H200 (227 KiB per block) 200 KiB must run; elsewhere it may be
    # refused, naming the limit.
    local big="200 KiB of dynamic shared memory: ran, sums right"
    [ "$dev" = cuda ] || big="200 KiB of dynamic shared memory: (ran, sums right|refused, the limit is)"
    check "b shared memory: 64 and 200 KiB run, 1 MiB is refused naming the limit" 0 \
        "64 KiB of dynamic shared memory: ran, sums right" "$big" "test result: ok. 1 passed" \
        -- env OFFLOAD_DEVICE="$dev" ./runtime-tests --exact dynamic_shared_memory_above_48_kib --nocapture
    check "b shared memory: static shared memory counts against the limit" 0 "test result: ok. 1 passed" \
        -- env OFFLOAD_DEVICE="$dev" ./runtime-tests --exact static_shared_memory_counts_against_the_limit
}

# Recursion too deep for a GPU thread's stack: Error::StackOverflow naming
# the kernel (single and mutual recursion), then normal launches work in
# the same process; and the whole runtime suite passes after it. On the
# GPU the checks compare with the floor the runtime measured with the
# image's stack probe (printed); with the default 8 KiB stack and with
# 64 KiB the deepest recursion must fit the stack and not stop short (the
# test asserts both). First, the CUDA C probe of the stack's layout
# (bench/probe/stack.cu): the same initial stack pointer T for every
# kernel and stack limit L, [T - L, T) writable, recursion as deep as that
# allows, and offload's floor at or above the lowest writable address.
gpu_b_stack() {
    if [ "$dev" = cuda ]; then
        # Built with this machine's CUDA if it has one (its cudart matches
        # the driver), else the binary built with the stack.cu beside it.
        local nvcc=${NVCC:-/usr/local/cuda/bin/nvcc} probe=./stack-probe
        if [ -x "$nvcc" ] && "$nvcc" -O3 -arch=sm_90 -o stack-probe-here stack.cu 2>/dev/null; then
            probe=./stack-probe-here
        fi
        check "b stack: CUDA C probe: [T - L, T) is the usable stack of every kernel, offload's floor is safe" 0 \
            "\(1\) T the same for k_small, k_big and krec at L=1024 and 65536: yes" \
            "\(2\) L=8192: .*usable stack [0-9]+ bytes, (exactly|more than) L" "verdict: PASS" \
            -- timeout 20 "$probe"
    fi
    local floor=()
    [ "$dev" = cuda ] && floor=("stack floor of the recursion checks: local 0x[0-9a-f]+")
    local bytes
    for bytes in 8192 65536; do
        check "b stack: deep recursion is StackOverflow, the next launches work ($bytes-byte stack)" 0 \
            "deep recursion: kernel .runtime::recursive. overflowed the stack of a GPU thread" \
            "deep mutual recursion: kernel .runtime::mutually_recursive. overflowed the stack of a GPU thread" \
            "deepest recursion of .recurse. that runs on $dev: [0-9]+ calls" \
            "${floor[@]}" "test result: ok. 1 passed" \
            -- env OFFLOAD_DEVICE="$dev" OFFLOAD_CUDA_STACK_BYTES=$bytes \
            ./runtime-tests --exact too_deep_recursion_is_an_error_and_the_next_launch_works --nocapture
    done
    check "b stack: the whole runtime suite, overflows included, in one process" 0 "test result: ok" \
        -- env OFFLOAD_DEVICE="$dev" ./runtime-tests --test-threads=1
}

# Corrupted images: never a crash. A damaged cubin → the PTX of the same
# binary (one warning naming the image), right results; PTX and cubin
# damaged → the host fallback (right results), or with OFFLOAD_DEVICE=cuda
# a one-line error.
gpu_b_images() {
    local right="all results match the host reference"
    local warned="1*offload: warning: the embedded sm_90 (cubin|PTX) image is corrupted"
    if [ "$dev" = cuda ]; then
        check "b images: intact binary runs its cubin" 0 "offload backend: cuda: .*image: sm_90 cubin" "$right" -- ./sample_offload
        local k
        for k in 0 1 2 3 4 5 6 7 8 9 10; do
            check "b images: cubin corrupted (copy $k of 11): PTX instead, right results" 0 "$warned" \
                "offload backend: cuda: .*image: sm_90 PTX, JIT-compiled" "$right" -- ./sample_offload-cubin-$k
        done
        check "b images: PTX corrupted: the cubin runs" 0 "$warned" "offload backend: cuda: .*image: sm_90 cubin" "$right" \
            -- ./sample_offload-ptx
        check "b images: OFFLOAD_DEVICE=cuda, cubin corrupted: still the GPU, from the PTX" 0 "$warned" \
            "offload backend: cuda: .*PTX" "$right" -- env OFFLOAD_DEVICE=cuda ./sample_offload-cubin-5
    else
        check "b images: cubin corrupted, host fallback: one warning, right results" 0 "$warned" "$right" \
            -- env OFFLOAD_DEVICE=host ./sample_offload-cubin-5
    fi
    check "b images: cubin and PTX corrupted: host fallback, right results" 0 \
        "2*offload: warning: the embedded sm_90 (cubin|PTX) image is corrupted" "offload backend: host" "$right" \
        -- ./sample_offload-both
    local why="no usable CUDA GPU: "
    [ "$dev" = cuda ] && why="no usable CUDA GPU: no device image for .*every device image in this binary is corrupted"
    check "b images: cubin and PTX corrupted, OFFLOAD_DEVICE=cuda: a one-line error, no crash" error \
        "OFFLOAD_DEVICE=cuda but $why" -- env OFFLOAD_DEVICE=cuda ./sample_offload-both
}

# ---------------------------------------------------------------------------
# c: device semantics.

# core::sync::atomic with every operation x ordering (96 kernels, values
# checked), and message passing between blocks through RMW flags: the
# check fails on any stale read with Release/Acquire, AcqRel or SeqCst, or
# on fewer than 80,000 observed pairs; Relaxed's count is only printed (a
# non-zero one there shows the test can see reordering on this GPU).
# `debian`: Debian rustc 1.96, whose RMW orderings come from the device
# link's fences; `nightly`: rustup nightly (LLVM 23).
gpu_c_atomics() {
    local tc
    for tc in debian nightly; do
        [ -x "./$tc/device-model" ] || continue
        check "c atomics ($tc): every op x ordering, message passing with 0 stale reads" 0 \
            "device-model on $dev" "orderings +ok .*96 kernels \\(op x ordering\\) exact" \
            "Release/Acquire 0/[0-9]{5,}, AcqRel 0/[0-9]{5,}, SeqCst 0/[0-9]{5,}" \
            -- env OFFLOAD_DEVICE="$dev" "./$tc/device-model" orderings atomics
    done
}

# A warp collective reached by part of a warp (reduce_sum after an early
# return, inside `if lane < 16`; ballot after a return): Error::Divergence
# with the host fallback's exact text; late reconvergence and a reduction
# in each branch are not reported and give the host's values.
gpu_c_warp_divergence() {
    local tc
    for tc in debian nightly; do
        [ -x "./$tc/device-model" ] || continue
        check "c warp divergence ($tc): same Error::Divergence as the host, no false reports" 0 \
            "device-model on $dev" "warp_divergence +ok" "warp +ok" \
            -- env OFFLOAD_DEVICE="$dev" "./$tc/device-model" warp_divergence warp
    done
}

# Device globals: the initializer is the device's first value, kernels'
# updates persist across launches and reach the host only through read(),
# write() reaches the kernels.
gpu_c_globals() {
    local tc
    for tc in debian nightly; do
        [ -x "./$tc/device-model" ] || continue
        check "c device globals ($tc): read/write through the image's symbols" 0 \
            "device-model on $dev" "globals +ok +[0-9.]+ ms  first read 7; " \
            -- env OFFLOAD_DEVICE="$dev" "./$tc/device-model" globals
    done
}

# With arguments, only those sections: `scripts/gpu-hardening.sh b_stack`.
if [ $# -gt 0 ]; then
    for section in "$@"; do
        "gpu_$section"
    done
    exit $fail
fi

gpu_a_toolchain debian
gpu_a_toolchain nightly
gpu_b_shared_memory
gpu_b_stack
gpu_b_images
gpu_c_atomics
gpu_c_warp_divergence
gpu_c_globals

exit $fail
