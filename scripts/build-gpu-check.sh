#!/usr/bin/env bash
# Builds, here (no GPU needed), every binary that scripts/gpu-check.sh runs on
# a GPU machine, into .carry/check/ (git-ignored). Needs ./setup.sh done.
set -euo pipefail
cd "$(dirname "$0")/.."
out=.carry/check
rm -rf "$out" && mkdir -p "$out"
arch=${ARCH:-sm_90}
cargo offload build -q --release --arch "$arch" -p sample_offload -p saxpy
cp target/release/sample_offload target/release/saxpy "$out/"
# The runtime test suite, its kernels in the image of the test binary.
exe=$(cargo offload test -q --release --arch "$arch" -p offload --test runtime --no-run --message-format=json \
    | python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l) if l.startswith("{") else {}
    if m.get("reason") == "compiler-artifact" and m.get("executable") and "runtime" in m["target"]["name"]:
        print(m["executable"])')
cp "$exe" "$out/runtime-tests"
# The sample built for sm_80 only: on an sm_90 GPU the driver JIT-compiles its PTX.
cargo offload build -q --release --arch sm_80 -p sample_offload
cp target/release/sample_offload "$out/sample_offload_sm80"
# The sample built by plain cargo: no image.
cargo build -q --release -p sample_offload
cp target/release/sample_offload "$out/sample_offload_plain"
# cargo offload itself, for `cargo offload doctor` on the GPU machine.
cargo build -q -p cargo-offload
cp target/debug/cargo-offload target/debug/offload-linker "$out/"
strip "$out/cargo-offload" "$out/offload-linker"
ls -la "$out"
