#!/usr/bin/env bash
# Builds (no GPU needed) every Rust binary that bench/run-gpu.sh runs, and
# copies them, their PTX and the miniBUDE deck into $BENCH_DIR (default
# target/gpu/bench), all that the run needs besides bench/cuda/*.cu. Needs
# ./setup.sh done and cargo-offload built from this tree on PATH (see
# bench/README.md); `scripts/gpu.sh build bench` does both.
#
#   bench/build-gpu.sh              # ARCH=sm_90, deck from ../shared/data/minibude/bm1
#   MINIBUDE_DECK=/path/to/bm1 bench/build-gpu.sh
#   BEFORE=<git revision> bench/build-gpu.sh
#
# With BEFORE, also $BENCH_DIR/before/: babelstream, minibude and
# minibude-fast-math built entirely from that revision (its crates, its
# cargo-offload and device linker, its benchmark sources), in
# target/bench-before/, so that bench/run-gpu.sh measures the two builds
# in the same run, alternating (rows `offload_before`; summary group
# `before`): how a change to the runtime or the device link moves them.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${BENCH_DIR:-target/gpu/bench}
arch=${ARCH:-sm_90}
deck=${MINIBUDE_DECK:-../shared/data/minibude/bm1}
ptx_dir() { echo "target/offload/nvptx64-nvidia-cuda-$1/nvptx64-nvidia-cuda/release"; }

if ! cargo offload build --help 2>/dev/null | grep -q -- --fmad; then
    echo "error: the cargo-offload on PATH predates --fmad/--fast-math; build this tree's:" \
        "cargo build -p cargo-offload && export PATH=\$PWD/target/debug:\$PATH" >&2
    exit 1
fi
for f in ligand.in protein.in forcefield.in poses.in ref_energies.out; do
    [ -f "$deck/$f" ] || { echo "error: $deck/$f not found (set MINIBUDE_DECK)" >&2; exit 1; }
done
rm -rf "$out" && mkdir -p "$out/bm1" "$out/ptx"

# Cargo does not see changes of the device linker itself: relink these
# binaries so that their images come from the offload-linker in use.
touch bench/babelstream/src/main.rs bench/minibude/src/main.rs bench/microbench/src/main.rs
# Exact arithmetic (the default) ...
cargo offload build -q --release --arch "$arch" -p babelstream -p minibude -p microbench
cp target/release/babelstream target/release/minibude target/release/microbench "$out/"
for b in babelstream minibude microbench; do cp "$(ptx_dir "$arch")/$b.ptx" "$out/ptx/$b.ptx"; done
# ... then miniBUDE with nvcc's default contraction (--fmad) and with
# nvcc -use_fast_math's meaning (--fast-math).
for mode in fmad fast-math; do
    cargo offload build -q --release --arch "$arch" --$mode -p minibude
    cp target/release/minibude "$out/minibude-$mode"
    cp "$(ptx_dir "$arch-$mode")/minibude.ptx" "$out/ptx/minibude-$mode.ptx"
    if cmp -s "$out/minibude" "$out/minibude-$mode"; then
        echo "error: the --$mode build of minibude is the same binary as the default one" >&2
        exit 1
    fi
done

if [ -n "${BEFORE:-}" ]; then
    # The revision's tree, built with its own cargo-offload.
    rev=$(git rev-parse --verify "$BEFORE^{commit}")
    bsrc=$PWD/target/bench-before/src
    btarget=$PWD/target/bench-before/target
    rm -rf "$bsrc" && mkdir -p "$bsrc" "$out/before/ptx"
    git archive "$rev" | tar -x -C "$bsrc"
    (cd "$bsrc" && CARGO_TARGET_DIR=$btarget cargo build -q -p cargo-offload)
    bdir() { echo "$btarget/offload/nvptx64-nvidia-cuda-$1/nvptx64-nvidia-cuda/release"; }
    before() { (cd "$bsrc" && PATH=$btarget/debug:$PATH CARGO_TARGET_DIR=$btarget cargo offload build -q --release --arch "$arch" "$@"); }
    touch "$bsrc/bench/babelstream/src/main.rs" "$bsrc/bench/minibude/src/main.rs"
    before -p babelstream -p minibude
    cp "$btarget/release/babelstream" "$btarget/release/minibude" "$out/before/"
    for b in babelstream minibude; do cp "$(bdir "$arch")/$b.ptx" "$out/before/ptx/$b.ptx"; done
    before --fast-math -p minibude
    cp "$btarget/release/minibude" "$out/before/minibude-fast-math"
    cp "$(bdir "$arch-fast-math")/minibude.ptx" "$out/before/ptx/minibude-fast-math.ptx"
    echo "before: $rev ($BEFORE): babelstream, minibude, minibude --fast-math, built from that revision's tree" \
        >"$out/before/BUILD"
fi

cp "$deck"/{ligand.in,protein.in,forcefield.in,poses.in,ref_energies.out} "$out/bm1/"
{
    echo "commit $(git rev-parse HEAD)$(git diff --quiet HEAD -- . ':!bench/results' || echo ' (with uncommitted changes)')"
    echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -m), arch $arch"
    # The toolchain cargo offload used (its doctor's `device rustc` line;
    # OFFLOAD_RUSTC or the first complete candidate), not a fixed path.
    echo "device rustc: $(cargo offload doctor 2>/dev/null | sed -n 's/^ *ok *device rustc *//p' | head -1)"
    echo "commands: cargo offload build --release --arch $arch -p babelstream -p minibude -p microbench;" \
        "cargo offload build --release --arch $arch --fmad -p minibude;" \
        "cargo offload build --release --arch $arch --fast-math -p minibude"
    [ ! -f "$out/before/BUILD" ] || cat "$out/before/BUILD"
} > "$out/BUILD"
du -sh "$out"
ls -la "$out"
