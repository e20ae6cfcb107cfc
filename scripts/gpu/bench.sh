#!/usr/bin/env bash
# Suite `bench`: offload against CUDA C++ (nvcc -O3 -arch=sm_90) in the same
# run: BabelStream, miniBUDE (exact, --fmad, --fast-math), launch overhead
# and 1 GiB transfers. bench/build-gpu.sh builds; bench/run-gpu.sh compiles
# the baselines bench/cuda/*.cu with nvcc and runs every benchmark ROUNDS
# times, alternating ours and CUDA's. Results (raw.csv, summary.md, ...)
# go to $OUT/bench; bench/README.md says how to commit and plot them.
# BEFORE=<git revision> at build: also that revision's babelstream and
# minibude (default, --fast-math), run in the same rounds (summary group
# `before`); a round takes about twice as long (raise BUDGET_S).
what="BabelStream, miniBUDE, launch, transfers vs CUDA C++"
needs="NVIDIA driver, nvcc; ncu, cuobjdump (optional)"
takes="about 5 min (BUDGET_S, ROUNDS; more with BEFORE)"

build() { # dir
    cargo build -q -p cargo-offload
    PATH=$root/target/debug:$PATH BENCH_DIR=$1 bench/build-gpu.sh
}

run() { # dir
    _checks=$((_checks + 1))
    BENCH_DIR=$1 OUT=$OUT/bench bench/run-gpu.sh || _failed=$((_failed + 1))
}
