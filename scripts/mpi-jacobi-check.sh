#!/usr/bin/env bash
# Runs examples/12-mpi-jacobi on RANKS MPI ranks and as one rank, and
# fails unless both print the same checksum of the final grid (FNV-1a over
# the bits of every value) and both say that the grid equals the serial
# host reference bit for bit.
#
#     scripts/mpi-jacobi-check.sh BINARY [RANKS [NX NY ITERS]]
#
# RANKS defaults to 4, the grid to the program's (256 x 256, 200 sweeps).
# MPIRUN names the launcher (default `mpirun`, Open MPI's: the flags below
# are its own; `--oversubscribe` lets RANKS exceed the cores,
# `--allow-run-as-root` lets CI's root run it). The ranks' devices are the
# program's choice (the GPUs, else the host; OFFLOAD_DEVICE overrides it).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: scripts/mpi-jacobi-check.sh BINARY [RANKS [NX NY ITERS]]" >&2; exit 2; }
bin=$1
ranks=${2:-4}
shift $(($# < 2 ? $# : 2))
mpirun=${MPIRUN:-mpirun}
# The host fallback's blocks on one worker per rank: RANKS processes
# share the cores already.
export OFFLOAD_HOST_THREADS=${OFFLOAD_HOST_THREADS:-1}

run() { # ranks
    local out
    echo "\$ $mpirun --allow-run-as-root --oversubscribe -n $1 $bin ${*:2}" >&2
    out=$("$mpirun" --allow-run-as-root --oversubscribe -n "$1" "$bin" "${@:2}" 2>&1) || {
        echo "$out" >&2
        echo "error: $1 rank(s) failed" >&2
        return 1
    }
    echo "$out" >&2
    grep -q 'equals the serial host reference bit for bit' <<<"$out" || { echo "error: $1 rank(s): no match with the serial reference" >&2; return 1; }
    grep -o 'checksum fnv1a64=0x[0-9a-f]*' <<<"$out"
}

one=$(run 1 "$@")
many=$(run "$ranks" "$@")
if [ -z "$one" ] || [ "$one" != "$many" ]; then
    echo "MISMATCH: 1 rank: ${one:-no checksum}; $ranks ranks: ${many:-no checksum}" >&2
    exit 1
fi
echo "ok: $ranks ranks and 1 rank print the same $one"
