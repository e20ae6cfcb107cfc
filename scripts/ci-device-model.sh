#!/usr/bin/env bash
# CI for the device model without a GPU: builds every feature test and
# example with `cargo offload build --arch sm_90` (ptxas assembles each PTX;
# a ptxas error fails the build), then runs them on the host fallback at
# sizes that fit a CI machine, and the feature tests through `cargo test`.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
cargo build -q -p cargo-offload
export PATH="$root/target/debug:$PATH" OFFLOAD_DEVICE=host
for dir in tests/device-model examples/reduction examples/histogram examples/matmul examples/nbody; do
    (cd "$dir" && cargo offload build --release --arch sm_90)
done
target/release/device-model
target/release/reduction 22
target/release/histogram 22
target/release/matmul 256
target/release/nbody 12
cargo test -q -p device-model
