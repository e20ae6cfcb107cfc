#!/usr/bin/env bash
# Suite `device-model`: the device programming model's feature tests
# (tests/device-model: geometry, shared memory, atomics and their orderings,
# warp operations and divergence, math, casts, PTX features, printing,
# device globals, panics) and the examples that exercise it, each on the
# GPU and at a smaller size on the host fallback; same-size runs print the
# same checksums.
what="device-model feature tests; reduction, histogram, matmul, nbody"
needs="NVIDIA driver"
takes="about 1 min"

build() { # dir
    local out=$1 arch=${ARCH:-sm_90} bin
    offload build -q --release --arch "$arch" -p device-model -p reduction -p histogram -p matmul -p nbody -p saxpy
    for bin in device-model reduction histogram matmul nbody saxpy; do
        cp "target/release/$bin" "$out/"
    done
}

run() { # dir
    cd "$1" || return 1
    export OFFLOAD_HOST_THREADS="${OFFLOAD_HOST_THREADS:-$(nproc)}"
    CHECK_TAIL=30
    # Built here with ptxas: the GPU runs its cubin (`cargo test` builds
    # device-model without one; ptxas takes minutes on this image).
    gpu_check "device-model on the GPU, from its cubin" 0 "device-model on cuda.*image: sm_[0-9]+a? cubin" \
        -- env OFFLOAD_DEVICE=cuda ./device-model
    gpu_check "device-model on the host fallback" 0 "device-model on host" -- env OFFLOAD_DEVICE=host ./device-model
    gpu_check "device-model print on the GPU" 0 "print +ok" -- env OFFLOAD_DEVICE=cuda ./device-model print
    local args dev
    for args in "reduction 26" "reduction 22" "histogram 26" "histogram 22" "matmul 2048" "matmul 256" \
        "nbody 16" "nbody 12" "saxpy 24"; do
        gpu_check "$args on the GPU" 0 -- env OFFLOAD_DEVICE=cuda ./$args
    done
    for args in "reduction 22" "histogram 22" "matmul 256" "nbody 12"; do
        gpu_check "$args on the host fallback" 0 -- env OFFLOAD_DEVICE=host ./$args
    done
}
