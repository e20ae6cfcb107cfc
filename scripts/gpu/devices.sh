#!/usr/bin/env bash
# Suite `devices`: devices you can choose (docs/devices.md) on a machine
# with one GPU: crates/offload/tests/devices.rs built for the GPU, its GPU
# tests each a check (devices() shows the GPU and the host;
# OFFLOAD_DEVICE=cuda:0 runs on it; cuda:1 is an error that lists the
# devices; a GPU's buffers refused on the host and the other way round,
# copies between them, a queue driven from a thread that never used the
# GPU), then the whole file (its host-device tests too); then
# examples/12-mpi-jacobi under `mpirun -n 2`, both ranks on the one GPU,
# against one rank and the serial host reference (bit for bit). The GPU
# machine cannot fetch packages: the build downloads Debian's Open MPI
# runtime (scripts/gpu/mpi.sh) and the run unpacks it in the suite's
# folder. Runs on several GPUs belong to the issue "Run the multi-device
# suite on two GPUs".
what="devices(): GPU and host; OFFLOAD_DEVICE=cuda:0, cuda:1's error; per-device buffers and queues; mpirun -n 2 mpi-jacobi"
needs="NVIDIA driver (Open MPI comes with the build)"
takes="about 1 min"

# shellcheck source=scripts/gpu/mpi.sh
source "$root/scripts/gpu/mpi.sh"

build() { # dir
    local out=$1 arch=${ARCH:-sm_90} exe
    exe=$(offload test -q --release --arch "$arch" -p offload --test devices --no-run --message-format=json |
        test_executable devices | sort -u)
    cp "$exe" "$out/devices-tests"
    # Its own workspace (it needs MPI to build: ./setup.sh mpi).
    (cd "$root/examples/12-mpi-jacobi" && offload build -q --release --arch "$arch")
    cp "$root/examples/12-mpi-jacobi/target/release/mpi-jacobi" "$root/scripts/mpi-jacobi-check.sh" "$out/"
    mpi_download "$out/mpi"
}

# One GPU test of tests/devices.rs: passes if it ran (not skipped for want
# of a GPU) and printed every PATTERN.
one() { # check-name test-name [PATTERN...]
    local name=$1 test=$2
    shift 2
    gpu_check "$name" 0 "1 passed" "0*skipped: no GPU" "$@" -- ./devices-tests --exact "$test" --nocapture --test-threads=1
}

run() { # dir
    cd "$1" || return 1
    one "devices() shows the GPU and the host; buffers, queues and copies of each" a_gpu_and_the_host_are_both_devices \
        "device cuda:0: .+ \(sm_[0-9]+, [0-9.]+ GiB\)" "device host: host CPU \([0-9.]+ GiB\)"
    one "OFFLOAD_DEVICE=cuda:0 runs kernels on the GPU" offload_device_cuda_0_selects_the_first_gpu \
        "OFFLOAD_DEVICE=cuda:0 runs on cuda:0: "
    one "OFFLOAD_DEVICE=cuda:1 is an error listing the devices" a_gpu_past_the_last_is_an_error_listing_the_devices \
        'OFFLOAD_DEVICE="cuda:1": OFFLOAD_DEVICE=cuda:1 names no device of this process, whose devices are: cuda:0: .+; host: host CPU'
    gpu_check "all of tests/devices.rs (host devices, errors, threads, peer copies too)" 0 "test result: ok. 9 passed" \
        -- ./devices-tests --test-threads=1
    if ! mpi_use "$1/mpi"; then
        echo "=== mpirun -n 2"
        echo "--- mpirun -n 2: skipped (the build downloaded no Open MPI: run \`scripts/gpu.sh build devices\` where apt-get works)"
        return 0
    fi
    gpu_check "mpirun -n 2 of mpi-jacobi, both ranks on the GPU, equals 1 rank and the serial host reference" 0 \
        "ok: 2 ranks and 1 rank print the same checksum" "2*rank [01] of 2: rows .+ on cuda:0: " \
        "rank 0 of 1: rows 1\.\.1023 on cuda:0: " -- ./mpi-jacobi-check.sh ./mpi-jacobi 2 1024 1024 500
    # The host fallback's grid has the same bits as the GPU's (both equal
    # the serial reference, which the check compares with).
    gpu_check "mpirun -n 2 of mpi-jacobi on the host fallback, the same" 0 \
        "ok: 2 ranks and 1 rank print the same checksum" "2*rank [01] of 2: rows .+ on host: " \
        -- env OFFLOAD_DEVICE=host ./mpi-jacobi-check.sh ./mpi-jacobi 2 256 256 100
}
