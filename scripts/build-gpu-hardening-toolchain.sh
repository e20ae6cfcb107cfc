#!/usr/bin/env bash
# Issue 9, toolchain side (helper a): builds, here (no GPU needed), what
# scripts/gpu-hardening-toolchain.sh runs on a GPU, once per device
# toolchain, into .carry/hardening-toolchain/<toolchain>/ (git-ignored):
#   - device-model (checks `casts`: f64/f32 → i128/u128 saturating casts,
#     `features`: cfg!(target_feature = "ptx78") on sm_90, `warp`),
#   - reduction and babelstream (offload::warp, which rustc 1.101 ICEd on).
# Toolchains: Debian's /usr/bin/rustc (LLVM 22) and rustup's nightly (LLVM 23).
# Its functions are meant to become a section of scripts/build-gpu-hardening.sh.
#
#     scripts/build-gpu-hardening-toolchain.sh     (ARCH=sm_90 by default)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=.carry/hardening-toolchain
arch=${ARCH:-sm_90}
rm -rf "$out" && mkdir -p "$out"
cargo build -q -p cargo-offload
offload() { "$root/target/debug/cargo-offload" offload "$@"; }

# ---------------------------------------------------------------------------
# a: toolchains — the same binaries from each device toolchain.
build_a_toolchain() { # name rustc
    local name=$1 rustc=$2 target="$root/target/hardening-$1"
    echo "== $name: $("$rustc" -V)"
    OFFLOAD_RUSTC="$rustc" offload build --release --arch "$arch" --target-dir "$target" \
        -p device-model -p reduction -p babelstream
    mkdir -p "$out/$name"
    for bin in device-model reduction babelstream; do
        cp "$target/release/$bin" "$out/$name/"
    done
}

build_a_toolchain debian /usr/bin/rustc
build_a_toolchain nightly "$(rustup which --toolchain nightly rustc)"

cp scripts/gpu-hardening-toolchain.sh "$out/"
ls -laR "$out"
