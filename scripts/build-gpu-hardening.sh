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
    # names are string constants of the image (raw bytes in the cubin); and
    # the image has the stack probe and the floor the checks read.
    for f in 'runtime::recurse' 'runtime::p[io]ng' '__offload_stack_probe' '__offload_stack_floor'; do
        if ! grep -aqE "$f" "$out/runtime-tests"; then
            echo "error: no $f (recursion check) in the image of runtime-tests" >&2
            exit 1
        fi
    done
}

# The CUDA C stack probe (bench/probe/stack.cu: where a thread's stack
# starts and ends, for the recursion checks' floor): its source, and a
# binary if nvcc is found here (PATH, /usr/local/cuda, the PyPI
# nvidia-cuda-nvcc wheel that setup.sh installs for ptxas); otherwise
# gpu-hardening.sh compiles it on the GPU machine.
build_b_stack_probe() {
    cp bench/probe/stack.cu "$out/stack.cu"
    local nvcc
    nvcc=$(command -v nvcc || true)
    [ -n "$nvcc" ] || [ ! -x /usr/local/cuda/bin/nvcc ] || nvcc=/usr/local/cuda/bin/nvcc
    [ -n "$nvcc" ] || nvcc=$(python3 -c 'import glob,site
print(next(iter(sorted(g for p in site.getsitepackages()+[site.getusersitepackages()] for g in glob.glob(p+"/nvidia/cu*/bin/nvcc"))), ""))' 2>/dev/null || true)
    if [ -n "$nvcc" ]; then
        # (ptxas warns that krec's stack cannot be bounded: it recurses.)
        PATH="$(dirname "$nvcc"):$PATH" "$nvcc" -O3 -arch="$arch" -o "$out/stack-probe" bench/probe/stack.cu
        # The searches' logic, without a GPU: a stack of exactly L passes,
        # one 576 bytes short fails.
        if ! STACK_PROBE_SIMULATE=0 "$out/stack-probe" >/dev/null || STACK_PROBE_SIMULATE=-576 "$out/stack-probe" >/dev/null; then
            echo "error: bench/probe/stack.cu's simulated searches give the wrong verdicts" >&2
            exit 1
        fi
    else
        echo "note: no nvcc here; gpu-hardening.sh compiles bench/probe/stack.cu on the GPU machine"
    fi
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
build_b_stack_probe
build_b_images

cp scripts/gpu-hardening.sh "$out/"
ls -la "$out"
