#!/usr/bin/env bash
# Suite `smoke`: the basics on a GPU. The sample from its sm_90 cubin and,
# built for sm_80 only, from PTX the driver JIT-compiles; saxpy at 2^24 and
# 2^28; the runtime test suite (crates/offload/tests/runtime.rs) with the
# default and the eager staging of large copies; the ownership tests
# (crates/offload/tests/ownership.rs: `#[kernel(shape(…))]`, grids larger
# and smaller than the array, in a release build and in a debug build, where
# `get_mut` of another thread's element is an `Error::KernelPanic` naming
# the owner, formatted on the GPU); a plain `cargo build` of
# the sample (no image: host fallback with a warning, or a one-line error
# under OFFLOAD_DEVICE=cuda); `cargo offload doctor`; and Nsight Compute
# seeing offload's kernels.
what="sample (cubin, JIT PTX), saxpy, runtime tests, ownership tests, plain build"
needs="NVIDIA driver; ncu (optional)"
takes="about 1 min"

build() { # dir
    local out=$1 arch=${ARCH:-sm_90} exe
    offload build -q --release --arch "$arch" -p sample_offload -p saxpy
    cp target/release/sample_offload target/release/saxpy "$out/"
    exe=$(offload test -q --release --arch "$arch" -p offload --test runtime --no-run --message-format=json |
        test_executable runtime)
    cp "$exe" "$out/runtime-tests"
    exe=$(offload test -q --release --arch "$arch" -p offload --test ownership --no-run --message-format=json |
        test_executable ownership)
    cp "$exe" "$out/ownership-tests"
    exe=$(offload test -q --arch "$arch" -p offload --test ownership --no-run --message-format=json |
        test_executable ownership)
    cp "$exe" "$out/ownership-tests-debug"
    offload build -q --release --arch sm_80 -p sample_offload
    cp target/release/sample_offload "$out/sample_offload_sm80"
    cargo build -q --release -p sample_offload
    cp target/release/sample_offload "$out/sample_offload_plain"
    cp target/debug/cargo-offload target/debug/offload-linker "$out/"
    strip "$out/cargo-offload" "$out/offload-linker"
}

run() { # dir
    cd "$1" || return 1
    gpu_check "sample (sm_90 cubin)" 0 "image: sm_90 cubin" -- env OFFLOAD_LOG=1 ./sample_offload
    gpu_check "sample (sm_80 PTX, JIT-compiled)" 0 "PTX, JIT" -- ./sample_offload_sm80
    gpu_check "saxpy 2^24" 0 -- ./saxpy
    gpu_check "saxpy 2^28" 0 -- ./saxpy 28
    gpu_check "runtime tests" 0 "test result: ok" -- env OFFLOAD_DEVICE=cuda ./runtime-tests --test-threads=1
    # Every large copy staged from the first on (by default the first ones
    # go directly while the staging buffers are allocated).
    gpu_check "runtime tests, eager staging" 0 "test result: ok" \
        -- env OFFLOAD_DEVICE=cuda OFFLOAD_CUDA_STAGING=eager ./runtime-tests --test-threads=1
    gpu_check "ownership tests (release)" 0 "test result: ok. 4 passed" \
        -- env OFFLOAD_DEVICE=cuda ./ownership-tests --test-threads=1
    gpu_check "ownership tests (debug: the owner named in a GPU panic)" 0 "test result: ok. 5 passed" \
        -- env OFFLOAD_DEVICE=cuda ./ownership-tests-debug --test-threads=1
    gpu_check "plain build: host fallback with a warning" 0 "warning" -- ./sample_offload_plain
    gpu_check "plain build, OFFLOAD_DEVICE=cuda: a one-line error" error "OFFLOAD_DEVICE=cuda" \
        -- env OFFLOAD_DEVICE=cuda ./sample_offload_plain
    echo "=== cargo offload doctor (no Rust toolchain on this machine: the device parts are MISSING)"
    ./cargo-offload offload doctor
    if command -v ncu >/dev/null || [ -x /usr/local/cuda/bin/ncu ]; then
        local ncu
        ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
        gpu_check "Nsight Compute sees offload's kernels" 0 "__offload_kernel" \
            -- "$ncu" --clock-control none --metrics gpu__time_duration.sum ./saxpy 20
    fi
}
