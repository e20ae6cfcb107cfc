#!/usr/bin/env bash
# Builds, here (no GPU needed), what scripts/gpu-cargo.sh runs on a GPU
# machine for the cargo integration: the generic-kernel fixture, every test
# binary and app of the workspace fixture (`cargo offload test`), and the
# sample with images for two architectures. Each program's host-fallback
# output is saved beside it as the expected output. Needs ./setup.sh done.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=$root/.carry/cargo
work=${TMPDIR:-/tmp}/offload-gpu-cargo
rm -rf "$out" "$work" && mkdir -p "$out" "$work"
copy_fixture() { # name
    cp -r "tests/fixtures/$1" "$work/$1"
    find "$work/$1" -name Cargo.toml -exec sed -i "s#@OFFLOAD@#$root/crates/offload#" {} +
    grep -q '^\[workspace\]' "$work/$1/Cargo.toml" || printf '\n[workspace]\n' >> "$work/$1/Cargo.toml"
}
expect() { # exe name: run on the host fallback here, save the output
    OFFLOAD_DEVICE=host "$1" > "$out/$2.expected"
    cp "$1" "$out/$2"
}
copy_fixture generic
(cd "$work/generic" && cargo offload build -q --arch sm_90)
expect "$work/generic/target/debug/fixture_generic" generic

copy_fixture workspace
(cd "$work/workspace" && cargo offload build -q --arch sm_90 --workspace)
expect "$work/workspace/target/debug/ws_app_a" ws_app_a
expect "$work/workspace/target/debug/ws_app_b" ws_app_b
(cd "$work/workspace" && cargo offload test -q --arch sm_90 --workspace --no-run --message-format=json) \
    | python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l) if l.startswith("{") else {}
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        print(m["target"]["name"], m["target"]["kind"][0], m["executable"])' \
    | while read -r name kind exe; do cp "$exe" "$out/test-$name-$kind"; done

cargo offload build -q --release --arch sm_80,sm_90 -p sample_offload
cp target/release/sample_offload "$out/sample_sm80_sm90"
# Debug info is not needed there (and the device tool carries 64 MiB at most);
# the images are in their own section, which strip keeps.
find "$out" -type f -perm -u+x -exec strip {} +
ls -la "$out"
