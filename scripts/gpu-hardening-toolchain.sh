#!/usr/bin/env bash
# Issue 9, toolchain side (helper a): runs on the GPU machine the binaries
# scripts/build-gpu-hardening-toolchain.sh built with each device toolchain
# (.carry/hardening-toolchain/{debian,nightly}/). Prints each command's
# output and `--- <name>: ok` or `--- <name>: FAILED`; exits non-zero if any
# failed. Its functions are meant to become a section of
# scripts/gpu-hardening.sh.
#
#     scripts/gpu-hardening-toolchain.sh              on a GPU
#     DEVICE=host scripts/gpu-hardening-toolchain.sh  on the host fallback
set -uo pipefail
dir="$(cd "$(dirname "$0")/.." && pwd)/.carry/hardening-toolchain"
[ -d "$dir/debian" ] || dir="$(cd "$(dirname "$0")" && pwd)"
dev=${DEVICE:-cuda}
failed=0
check() { # name command...
    local name=$1; shift
    echo "---- $name [$dev]: $*"
    if OFFLOAD_DEVICE=$dev timeout 300 "$@"; then
        echo "--- $name: ok"
    else
        echo "--- $name: FAILED"
        failed=$((failed + 1))
    fi
}

# a: saturating float → i128/u128 casts (exact against the bit-level
# reference, NaN/±inf/±2^127/2^128/subnormals/random), PTX ISA features
# (sm_90 image: mask 0x5a5a0077), warp operations, and the warp examples.
a_toolchain() { # name
    local d="$dir/$1"
    check "a $1 device-model casts features warp" "$d/device-model" casts features warp
    check "a $1 reduction 2^24" "$d/reduction" 24
    check "a $1 babelstream 2^25" "$d/babelstream" -s 33554432 -n 20
}

for tc in debian nightly; do
    a_toolchain "$tc"
done
echo "$failed check(s) failed"
exit $((failed > 0))
