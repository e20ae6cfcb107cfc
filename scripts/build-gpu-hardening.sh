#!/usr/bin/env bash
# Builds, here (no GPU needed), every binary that scripts/gpu-hardening.sh
# runs on a GPU machine for the hardening issue (issue 9), into
# .carry/hardening/ (git-ignored). One function per area; each adds its own
# binaries and is called at the bottom. Needs ./setup.sh done (device
# toolchains, ptxas).
#
#     scripts/build-gpu-hardening.sh        (ARCH=sm_90 by default)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=.carry/hardening
arch=${ARCH:-sm_90}
rm -rf "$out" && mkdir -p "$out"
cargo build -q -p cargo-offload
offload() { "$root/target/debug/cargo-offload" offload "$@"; }

# ---------------------------------------------------------------------------
# c: device semantics — core atomics' orderings, warp collectives in
# divergent code, device globals. The checks are device-model cases
# (`orderings`, `warp_divergence`, `globals`), built with both device
# toolchains: LLVM 22's NVPTX backend drops read-modify-write orderings
# unless the device link fences them, LLVM 23 emits them itself.
build_c_device_model() {
    (cd tests/device-model && offload build -q --release --arch "$arch")
    cp target/release/device-model "$out/device-model-default"
    if [ -x /usr/bin/rustc ]; then
        (cd tests/device-model && OFFLOAD_RUSTC=/usr/bin/rustc offload build -q --release --arch "$arch" \
            --target-dir "$root/target/llvm22")
        cp target/llvm22/release/device-model "$out/device-model-llvm22"
    fi
}

build_c_device_model

cp scripts/gpu-hardening.sh "$out/"
ls -la "$out"
