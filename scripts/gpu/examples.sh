#!/usr/bin/env bash
# Suite `examples`: the numbered tutorials of examples/ (examples/README.md),
# each on the GPU, at its default size and at the larger size the README
# suggests for a GPU, and on the host fallback at its default size. Every
# tutorial checks its results against an independent host computation,
# prints "all results match the host reference" and exits non-zero on a
# mismatch; 08-panics also checks that each KernelPanic names the kernel,
# line, block and thread, and that the next launch works.
what="the tutorials of examples/ on the GPU and the host fallback"
needs="NVIDIA driver"
takes="about 1 min"

# Package names of examples/01-… to examples/09-… and 13-image, in order.
examples_packages=(sample_offload saxpy resident-buffers matmul histogram reduction generics panics nbody blur)

build() { # dir
    local out=$1 arch=${ARCH:-sm_90} p args=()
    for p in "${examples_packages[@]}"; do
        args+=(-p "$p")
    done
    offload build -q --release --arch "$arch" "${args[@]}"
    for p in "${examples_packages[@]}"; do
        cp "target/release/$p" "$out/"
    done
}

run() { # dir
    cd "$1" || return 1
    export OFFLOAD_HOST_THREADS="${OFFLOAD_HOST_THREADS:-$(nproc)}"
    local ok="all results match the host reference" p
    for p in "${examples_packages[@]}"; do
        gpu_check "$p on the GPU" 0 "offload backend: cuda" "$ok" -- env OFFLOAD_DEVICE=cuda "./$p"
    done
    # The sizes examples/README.md gives for a GPU.
    local args
    for args in "saxpy 26" "resident-buffers 22 200" "matmul 2048" "histogram 26" "reduction 26" "nbody 16" \
        "blur 3840 2160"; do
        gpu_check "$args on the GPU" 0 "offload backend: cuda" "$ok" -- env OFFLOAD_DEVICE=cuda ./$args
    done
    # Both panics name the kernel, block and thread (checked by the program
    # too); optimized GPU builds keep the literal message only.
    gpu_check "panics on the GPU: the errors" 0 "kernel +panics::checked_sqrt" "message +negative input" \
        "block +\\(3, 0, 0\\)" "thread +\\(232, 0, 0\\)" "kernel +panics::differences" "block +\\(15, 0, 0\\)" \
        "thread +\\(255, 0, 0\\)" -- env OFFLOAD_DEVICE=cuda ./panics
    for p in "${examples_packages[@]}"; do
        gpu_check "$p on the host fallback" 0 "offload backend: host" "$ok" -- env OFFLOAD_DEVICE=host "./$p"
    done
}
