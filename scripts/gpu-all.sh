#!/usr/bin/env bash
# Everything the GPU machine checks, in one device call (device time is
# scarce): the issue-2 checks (scripts/gpu-check.sh), the device model
# (scripts/gpu-device-model.sh), the cargo integration (scripts/gpu-cargo.sh)
# and the CUDA comparison (bench/run-gpu.sh, ROUNDS/BUDGET_S as given).
# Needs .carry/{check,device-model,cargo,bench} from the build-gpu-*.sh
# scripts and bench/build-gpu.sh. Writes $OUT/gpu-checks.log and
# $OUT/bench/ (at most 8 files come back from a device call).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT/bench"
fail=0
{
    echo "##### scripts/gpu-check.sh"; scripts/gpu-check.sh || fail=1
    echo; echo "##### scripts/gpu-device-model.sh"; scripts/gpu-device-model.sh || fail=1
    echo; echo "##### scripts/gpu-cargo.sh"; scripts/gpu-cargo.sh || fail=1
} >"$OUT/gpu-checks.log" 2>&1
echo "checks: $([ $fail = 0 ] && echo ok || echo FAILED) (see gpu-checks.log)"
grep -E "^--- |^---- |FAILED|^test result" "$OUT/gpu-checks.log" | head -60
OUT=$OUT/bench bench/run-gpu.sh 2>&1 | tail -60
rm -f "$OUT/bench/ncu.csv"
[ -f "$OUT/bench/sass.txt" ] && gzip -f "$OUT/bench/sass.txt"
exit $fail
