#!/usr/bin/env bash
# Builds, here (no GPU needed), every binary that scripts/gpu-hardening.sh
# runs on a GPU machine for the hardening issue (issue 9), into
# .carry/hardening/ (git-ignored). One function per area; each adds its own
# binaries and is called at the bottom. Needs ./setup.sh done (device
# toolchains, and ptxas: the image checks corrupt the embedded cubin).
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

# The executable cargo builds for a `--no-run` test build, from its JSON messages.
test_executable() { # name-fragment
    python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l) if l.startswith("{") else {}
    if m.get("reason") == "compiler-artifact" and m.get("executable") and sys.argv[1] in m["target"]["name"]:
        print(m["executable"])' "$1"
}

# ---------------------------------------------------------------------------
# a: toolchains — device-model (casts, PTX ISA features, warp; and section
# c's checks), reduction and babelstream (offload::warp, which rustc 1.101
# ICEd on), from each device toolchain: Debian's /usr/bin/rustc (LLVM 22,
# whose NVPTX backend drops read-modify-write orderings unless the device
# link fences them) and rustup's nightly (LLVM 23).
build_a_toolchain() { # name rustc
    local name=$1 rustc=$2 target="$root/target/hardening-$1"
    echo "== $name: $("$rustc" -V)"
    OFFLOAD_RUSTC="$rustc" offload build -q --release --arch "$arch" --target-dir "$target" \
        -p device-model -p reduction -p babelstream
    mkdir -p "$out/$name"
    for bin in device-model reduction babelstream; do
        cp "$target/release/$bin" "$out/$name/"
    done
}

# ---------------------------------------------------------------------------
# b: runtime and images — dynamic shared memory above 48 KiB, stack
# overflow in recursive kernels, corrupted images (architecture suffixes are
# covered by offload-image's unit tests).

# The runtime test suite (it runs on both backends), release, with the
# kernels of crates/offload/tests/runtime.rs in its image.
build_b_runtime_tests() {
    local exe
    exe=$(offload test -q --release --arch "$arch" -p offload --test runtime --no-run --message-format=json | test_executable runtime)
    cp "$exe" "$out/runtime-tests"
    # The recursive functions carry the device link's stack checks: their
    # names are string constants of the image (raw bytes in the cubin).
    for f in 'runtime::recurse' 'runtime::p[io]ng'; do
        if ! grep -aqE "$f" "$out/runtime-tests"; then
            echo "error: no recursion check for $f in the image of runtime-tests" >&2
            exit 1
        fi
    done
}

# sample_offload (sm_90 PTX + cubin) and copies with corrupted images: the
# cubin damaged at 11 places (the issue's 11 copies crashed 3 times), the
# PTX damaged, both damaged.
build_b_images() {
    offload build -q --release --arch "$arch" -p sample_offload
    local exe=target/release/sample_offload
    cp "$exe" "$out/sample_offload"
    for k in 0 1 2 3 4 5 6 7 8 9 10; do
        python3 scripts/corrupt-image.py "$exe" "$out/sample_offload-cubin-$k" cubin "$(awk "BEGIN { print $k / 11 }")" 16 >/dev/null
    done
    python3 scripts/corrupt-image.py "$exe" "$out/sample_offload-ptx" ptx 0.5 16 >/dev/null
    python3 scripts/corrupt-image.py "$out/sample_offload-ptx" "$out/sample_offload-both" cubin 0.5 16 >/dev/null
}

build_a_toolchain debian /usr/bin/rustc
build_a_toolchain nightly "$(rustup which --toolchain nightly rustc)"
build_b_runtime_tests
build_b_images

cp scripts/gpu-hardening.sh "$out/"
ls -la "$out"
