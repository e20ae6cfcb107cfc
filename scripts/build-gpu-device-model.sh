#!/usr/bin/env bash
# Builds the device-model feature tests and the device-model examples with
# `cargo offload build --release --arch sm_90` (PTX + ptxas cubin, embedded)
# and collects the binaries in .carry/device-model/ for scripts/gpu-device-model.sh.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
cargo build -q -p cargo-offload
export PATH="$root/target/debug:$PATH"
out="$root/.carry/device-model"
rm -rf "$out"
mkdir -p "$out"
for dir in tests/device-model examples/reduction examples/histogram examples/matmul examples/nbody examples/saxpy; do
    echo "== cargo offload build --release --arch sm_90 in $dir"
    (cd "$dir" && cargo offload build --release --arch sm_90)
done
for bin in device-model reduction histogram matmul nbody saxpy; do
    cp "target/release/$bin" "$out/"
done
cp scripts/gpu-device-model.sh "$out/"
ls -la "$out"
