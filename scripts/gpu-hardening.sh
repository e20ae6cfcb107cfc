#!/usr/bin/env bash
# Runs on the GPU machine: the hardening checks (issue 9) on the binaries
# from scripts/build-gpu-hardening.sh (.carry/hardening/). Prints each
# command's output and `--- <name>: ok` or `--- <name>: FAILED` per check;
# exits non-zero if any failed. One function per area.
#
#     scripts/gpu-hardening.sh              on a GPU (the kernels run there)
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
# c: device semantics.

# core::sync::atomic with every operation x ordering (96 kernels, values
# checked), and message passing between blocks through RMW flags: the
# check fails on any stale read with Release/Acquire, AcqRel or SeqCst, or
# on fewer than 80,000 observed pairs; Relaxed's count is only printed (a
# non-zero one there shows the test can see reordering on this GPU).
# `llvm22`: Debian rustc 1.96, whose RMW orderings come from the device
# link's fences; `default`: rustup nightly (LLVM 23).
gpu_c_atomics() {
    local tc
    for tc in llvm22 default; do
        [ -x "./device-model-$tc" ] || continue
        check "c atomics ($tc): every op x ordering, message passing with 0 stale reads" 0 \
            "device-model on $dev" "orderings +ok .*96 kernels \\(op x ordering\\) exact" \
            "Release/Acquire 0/[0-9]{5,}, AcqRel 0/[0-9]{5,}, SeqCst 0/[0-9]{5,}" \
            -- env OFFLOAD_DEVICE="$dev" "./device-model-$tc" orderings atomics
    done
}

# A warp collective reached by part of a warp (reduce_sum after an early
# return, inside `if lane < 16`; ballot after a return): Error::Divergence
# with the host fallback's exact text; late reconvergence and a reduction
# in each branch are not reported and give the host's values.
gpu_c_warp_divergence() {
    local tc
    for tc in llvm22 default; do
        [ -x "./device-model-$tc" ] || continue
        check "c warp divergence ($tc): same Error::Divergence as the host, no false reports" 0 \
            "device-model on $dev" "warp_divergence +ok" "warp +ok" \
            -- env OFFLOAD_DEVICE="$dev" "./device-model-$tc" warp_divergence warp
    done
}

# Device globals: the initializer is the device's first value, kernels'
# updates persist across launches and reach the host only through read(),
# write() reaches the kernels.
gpu_c_globals() {
    local tc
    for tc in llvm22 default; do
        [ -x "./device-model-$tc" ] || continue
        check "c device globals ($tc): read/write through the image's symbols" 0 \
            "device-model on $dev" "globals +ok +[0-9.]+ ms  first read 7; " \
            -- env OFFLOAD_DEVICE="$dev" "./device-model-$tc" globals
    done
}

gpu_c_atomics
gpu_c_warp_divergence
gpu_c_globals

exit $fail
