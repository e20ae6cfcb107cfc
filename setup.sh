#!/usr/bin/env bash
# Installs what offload needs on a fresh machine, then installs `cargo offload`
# from this checkout. Safe to run again: it skips what is already there.
#
#   ./setup.sh            # Debian/Ubuntu packages if available, else rustup
#   OFFLOAD_SETUP=rustup ./setup.sh    # force the rustup route
#   OFFLOAD_SETUP=debian ./setup.sh    # force the Debian route
#   OFFLOAD_SETUP=both ./setup.sh      # both routes (CI tests with each)
#   ./setup.sh mpi        # only MPI, for examples/12-mpi-jacobi (optional)
#   OFFLOAD_SETUP_MPI=1 ./setup.sh     # everything, MPI included
#
# Device toolchain (one of):
#   Debian route: rustc-web cargo-web rust-web-src (rustc 1.96 + library
#                 sources, works offline) and llvm-22 lld-22 (LLVM of the same
#                 major version as that rustc).
#   rustup route: nightly with the rust-src and llvm-tools components.
# ptxas (optional, for cubins and PTX checks): PyPI's nvidia-cuda-nvcc wheel.
# MPI (optional, for examples/12-mpi-jacobi only): Debian's Open MPI
# (libopenmpi-dev openmpi-bin: mpicc, mpirun) and libclang-dev (the `mpi`
# crate's build script runs bindgen on mpi.h).
set -euo pipefail
cd "$(dirname "$0")"

if [ -t 2 ]; then G='\033[1;32m' Y='\033[1;33m' N='\033[0m'; else G='' Y='' N=''; fi
say() { printf "${G}%12s${N} %s\n" "$1" "$2" >&2; }
warn() { printf "${Y}warning${N}: %s\n" "$1" >&2; }

sudo_if_needed() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else return 1; fi
}

has_rust_src() { # $1 = rustc
    local sysroot
    sysroot=$("$1" --print sysroot 2>/dev/null) || return 1
    [ -f "$sysroot/lib/rustlib/src/rust/library/core/src/lib.rs" ]
}

llvm_major_of() { # $1 = rustc
    "$1" -vV 2>/dev/null | sed -n 's/^LLVM version: \([0-9]*\).*/\1/p'
}

debian_route() {
    command -v apt-get >/dev/null || return 1
    local pkgs="rustc-web cargo-web rust-web-src llvm-22 lld-22"
    if [ -x /usr/bin/rustc ] && has_rust_src /usr/bin/rustc && command -v llvm-link-22 >/dev/null \
        && command -v opt-22 >/dev/null && command -v llc-22 >/dev/null; then
        say Found "Debian device toolchain ($(/usr/bin/rustc -V), LLVM 22 tools)"
        return 0
    fi
    say Installing "$pkgs (apt-get)"
    if ! apt-cache show rust-web-src >/dev/null 2>&1 || ! apt-cache policy rustc-web | grep -q 'Candidate: 1\.9[6-9]'; then
        sudo_if_needed apt-get update -qq || return 1
    fi
    sudo_if_needed env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $pkgs >/dev/null || return 1
    local major
    major=$(llvm_major_of /usr/bin/rustc)
    if [ "$major" != 22 ]; then
        warn "/usr/bin/rustc uses LLVM $major; install llvm-$major lld-$major as well"
        sudo_if_needed apt-get install -y -qq "llvm-$major" "lld-$major" >/dev/null || return 1
    fi
}

rustup_route() {
    command -v rustup >/dev/null || { echo "error: neither apt-get nor rustup is available; install rustup from https://rustup.rs" >&2; exit 3; }
    say Installing "rustup nightly with rust-src and llvm-tools"
    rustup toolchain install nightly --profile minimal --component rust-src,llvm-tools >/dev/null
}

# The MPI of examples/12-mpi-jacobi: found (mpicc, mpirun and a libclang),
# or installed from Debian's packages.
mpi_route() {
    if command -v mpicc >/dev/null && command -v mpirun >/dev/null \
        && compgen -G '/usr/lib/llvm-*/lib/libclang.so*' >/dev/null; then
        say Found "MPI ($(mpirun --version 2>/dev/null | head -n 1)) and libclang"
        return 0
    fi
    command -v apt-get >/dev/null || {
        echo "error: install an MPI with mpicc and mpirun (Open MPI or MPICH) and libclang with your system's package manager" >&2
        return 1
    }
    say Installing "libopenmpi-dev openmpi-bin libclang-dev (apt-get)"
    sudo_if_needed apt-get update -qq || return 1
    sudo_if_needed env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libopenmpi-dev openmpi-bin libclang-dev \
        >/dev/null || return 1
}

case "${1:-}" in
    "") ;;
    mpi)
        mpi_route || { echo "error: could not install MPI (needs apt-get and root or sudo)" >&2; exit 3; }
        say Ready "try: cd examples/12-mpi-jacobi && cargo offload build --release && mpirun -n 4 target/release/mpi-jacobi"
        exit 0 ;;
    *) echo "error: unknown argument \`$1\` (./setup.sh, or ./setup.sh mpi)" >&2; exit 2 ;;
esac

case "${OFFLOAD_SETUP:-auto}" in
    debian) debian_route || { echo "error: the Debian route failed (needs apt-get and root or sudo)" >&2; exit 3; } ;;
    rustup) rustup_route ;;
    both)
        debian_route || { echo "error: the Debian route failed (needs apt-get and root or sudo)" >&2; exit 3; }
        rustup_route ;;
    auto) debian_route || { warn "Debian packages unavailable; using rustup"; rustup_route; } ;;
    *) echo "error: OFFLOAD_SETUP must be debian, rustup, both or auto" >&2; exit 2 ;;
esac

# ptxas: assembles cubins and checks every PTX image.
if command -v ptxas >/dev/null || [ -x /usr/local/cuda/bin/ptxas ] \
    || python3 -c 'import glob,site,sys; sys.exit(0 if any(glob.glob(p+"/nvidia/cu*/bin/ptxas") for p in site.getsitepackages()+[site.getusersitepackages()]) else 1)' 2>/dev/null; then
    say Found "ptxas"
elif command -v python3 >/dev/null; then
    say Installing "ptxas (PyPI nvidia-cuda-nvcc)"
    python3 -m pip install -q 'nvidia-cuda-nvcc>=13,<14' 2>/dev/null \
        || python3 -m pip install -q --user 'nvidia-cuda-nvcc>=13,<14' 2>/dev/null \
        || python3 -m pip install -q --user --break-system-packages 'nvidia-cuda-nvcc>=13,<14' \
        || warn "could not install ptxas; images will hold PTX only"
else
    warn "python3 not found: no ptxas; images will hold PTX only"
fi

if [ -n "${OFFLOAD_SETUP_MPI:-}" ]; then
    mpi_route || { echo "error: could not install MPI (needs apt-get and root or sudo)" >&2; exit 3; }
fi

say Installing "cargo-offload and offload-linker from this checkout"
cargo install --quiet --locked --force --path crates/cargo-offload
say Ready "try: cargo offload run --manifest-path examples/01-first-kernel/Cargo.toml"
