#!/usr/bin/env bash
# Runs the prebuilt device-model binaries (.carry/device-model, made by
# scripts/build-gpu-device-model.sh) on the GPU, and the same inputs on the
# host fallback for comparison; prints each program's result lines and a
# summary table. Exit status: non-zero if any run failed.
#
#     scripts/gpu-device-model.sh [carry dir]
set -uo pipefail
dir="${1:-$(cd "$(dirname "$0")/.." && pwd)/.carry/device-model}"
[ -x "$dir/device-model" ] || dir="$(cd "$(dirname "$0")" && pwd)"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || true
export OFFLOAD_HOST_THREADS="${OFFLOAD_HOST_THREADS:-$(nproc)}"
summary=()
failed=0
run() { # label, device, timeout, command...
    local label="$1" dev="$2" limit="$3"; shift 3
    local start end status out
    start=$(date +%s.%N)
    out=$(OFFLOAD_DEVICE="$dev" timeout "$limit" "$@" 2>&1)
    status=$?
    end=$(date +%s.%N)
    echo "---- $label [$dev] (exit $status)"
    echo "$out" | grep -v '^device-model print' | tail -n 14
    if [ "$label" = "device-model print" ]; then
        echo "$out" | grep '^device-model print' | sort
    fi
    [ $status -eq 0 ] || failed=$((failed + 1))
    summary+=("$(printf '%-26s %-5s %-5s %7.2f s' "$label" "$dev" "$([ $status -eq 0 ] && echo ok || echo FAIL)" "$(awk "BEGIN { print $end - $start }")")")
}
run "device-model"          cuda 120 "$dir/device-model"
run "device-model"          host 120 "$dir/device-model"
run "device-model print"    cuda 30  "$dir/device-model" print
run "reduction 2^26"        cuda 30  "$dir/reduction" 26
run "reduction 2^22"        cuda 30  "$dir/reduction" 22
run "reduction 2^22"        host 60  "$dir/reduction" 22
run "histogram 2^26"        cuda 30  "$dir/histogram" 26
run "histogram 2^22"        cuda 30  "$dir/histogram" 22
run "histogram 2^22"        host 60  "$dir/histogram" 22
run "matmul 2048"           cuda 60  "$dir/matmul" 2048
run "matmul 256"            cuda 30  "$dir/matmul" 256
run "matmul 256"            host 60  "$dir/matmul" 256
run "nbody 2^16"            cuda 60  "$dir/nbody" 16
run "nbody 2^12"            cuda 30  "$dir/nbody" 12
run "nbody 2^12"            host 60  "$dir/nbody" 12
run "saxpy 2^24"            cuda 30  "$dir/saxpy" 24
echo
echo "==== summary (same-size cuda/host runs should print identical checksums; math ULPs differ: libdevice vs glibc)"
printf '%s\n' "${summary[@]}"
echo "$failed run(s) failed"
exit $((failed > 0))
