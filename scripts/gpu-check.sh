#!/usr/bin/env bash
# Runs on the GPU machine: the binaries from scripts/build-gpu-check.sh.
# Prints each program's output and a summary; exits non-zero if any failed.
set -uo pipefail
cd "$(dirname "$0")/../.carry/check"
nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv,noheader
fail=0
check() { # name, expected exit (0 or nonzero), command...
    local name=$1 want=$2; shift 2
    echo "=== $name"
    "$@"; local rc=$?
    if { [ "$want" = 0 ] && [ $rc -eq 0 ]; } || { [ "$want" != 0 ] && [ $rc -ne 0 ]; }; then
        echo "--- $name: ok (exit $rc)"
    else
        echo "--- $name: FAILED (exit $rc)"; fail=1
    fi
}
check "sample (sm_90 cubin)" 0 env OFFLOAD_LOG=1 ./sample_offload
check "sample (sm_80 PTX, JIT)" 0 ./sample_offload_sm80
check "saxpy 2^24" 0 ./saxpy
check "saxpy 2^28" 0 ./saxpy 28
check "runtime tests on the GPU" 0 env OFFLOAD_DEVICE=cuda ./runtime-tests --test-threads=1
# Again with every large copy staged from the first on (by default the
# first ones go directly while the staging buffers are allocated).
check "runtime tests on the GPU, eager staging" 0 env OFFLOAD_DEVICE=cuda OFFLOAD_CUDA_STAGING=eager ./runtime-tests --test-threads=1
check "plain build, default: host fallback with a warning" 0 ./sample_offload_plain
check "plain build, OFFLOAD_DEVICE=cuda: one-line error" 1 env OFFLOAD_DEVICE=cuda ./sample_offload_plain
echo "=== cargo offload doctor (no Rust toolchain on this machine: expect MISSING device parts)"
./cargo-offload offload doctor
echo "=== kernels seen by the profiler (proof they ran on the GPU)"
timeout 120 ncu --clock-control none --metrics gpu__time_duration.sum ./saxpy 20 2>&1 | grep -E "__offload_kernel|duration" | head -4
exit $fail
