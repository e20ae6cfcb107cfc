#!/usr/bin/env bash
# Runs on the GPU machine: the binaries from scripts/build-gpu-cargo.sh, each
# on the GPU (OFFLOAD_DEVICE=cuda), compared with its host-fallback output.
set -uo pipefail
cd "$(dirname "$0")/../.carry/cargo"
fail=0
same() { # name: GPU output equals the host fallback's
    echo "=== $1"
    OFFLOAD_DEVICE=cuda "./$1" > "$1.gpu"; local rc=$?
    cat "$1.gpu"
    if [ $rc -eq 0 ] && cmp -s "$1.gpu" "$1.expected"; then echo "--- $1: ok (same as the host fallback)"
    else echo "--- $1: FAILED (exit $rc)"; diff "$1.expected" "$1.gpu"; fail=1; fi
}
same generic
same ws_app_a
same ws_app_b
for t in test-*; do
    echo "=== cargo offload test: $t on the GPU"
    if OFFLOAD_DEVICE=cuda "./$t" --test-threads=1; then echo "--- $t: ok"; else echo "--- $t: FAILED"; fail=1; fi
done
echo "=== sample with images for sm_80 and sm_90: the runtime picks the sm_90 cubin"
OFFLOAD_DEVICE=cuda ./sample_sm80_sm90 | tee sample.out; rc=${PIPESTATUS[0]}
if [ "$rc" -eq 0 ] && grep -q "sm_90 cubin" sample.out; then echo "--- sample: ok"; else echo "--- sample: FAILED"; fail=1; fi
exit $fail
