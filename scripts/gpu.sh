#!/usr/bin/env bash
# The GPU runbook: every check and benchmark that needs an NVIDIA GPU, as
# suites with one entry point. Building and running are separate steps:
# the machine that builds needs the Rust and device toolchains (./setup.sh)
# but no GPU; the machine that runs needs the NVIDIA driver (and, for some
# suites, CUDA's nvcc/ncu) but no Rust. A suite's build writes everything
# its run needs into target/gpu/<suite>/, and the run reads only that
# folder (and, for `bench`, bench/cuda/*.cu).
#
#     scripts/gpu.sh                       list the suites
#     scripts/gpu.sh build SUITE...        build (no GPU needed)
#     scripts/gpu.sh run SUITE...          run on the GPU machine
#     scripts/gpu.sh all SUITE...          both, on a machine that has both
#
# `run` prints each check's output and a line `--- <check>: ok` or
# `--- <check>: FAILED`, then one summary line per suite; it exits non-zero
# if a check failed. Logs and results go to $OUT (default target/gpu/out).
# Each suite is one file, scripts/gpu/<suite>.sh, defining `what`, `needs`,
# `takes`, `build` and `run` (see scripts/gpu/README.md).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# Every scripts/gpu/<suite>.sh, in this order first; a suite defines
# `what` (the shared helpers, lib.sh and mpi.sh, and lib.sh's test,
# lib-test.sh, do not).
suites=(smoke examples device-model cargo hardening bench)
for f in scripts/gpu/*.sh; do
    s=$(basename "$f" .sh)
    grep -q '^what=' "$f" || continue
    [[ " ${suites[*]} " == *" $s "* ]] || suites+=("$s")
done

usage() {
    echo "usage: scripts/gpu.sh [build|run|all] SUITE..."
    echo
    printf '%-13s %-62s %-40s %s\n' suite checks needs "run takes"
    local s
    for s in "${suites[@]}"; do
        (
            # shellcheck source=/dev/null
            source "scripts/gpu/$s.sh"
            printf '%-13s %-62s %-40s %s\n' "$s" "$what" "$needs" "$takes"
        )
    done
}

verb=${1:-}
[ $# -gt 0 ] && shift
case "$verb" in
    build | run | all) ;;
    "" | -h | --help | list) usage; exit 0 ;;
    *) echo "error: unknown verb \`$verb\`" >&2; usage >&2; exit 2 ;;
esac
[ $# -gt 0 ] || { echo "error: name at least one suite" >&2; usage >&2; exit 2; }
for s in "$@"; do
    [[ " ${suites[*]} " == *" $s "* ]] || { echo "error: unknown suite \`$s\` (known: ${suites[*]})" >&2; exit 2; }
done

export OUT=${OUT:-$root/target/gpu/out}
mkdir -p "$OUT"
status=0
summary=()
for s in "$@"; do
    dir=$root/target/gpu/$s
    (
        set -e
        # shellcheck source=/dev/null
        source "scripts/gpu/$s.sh"
        # The suite's helpers (gpu_check, ...) and its folder.
        # shellcheck source=/dev/null
        source scripts/gpu/lib.sh
        if [ "$verb" != run ]; then
            echo "##### build $s"
            rm -rf "$dir" && mkdir -p "$dir"
            build "$dir"
            # A suite's folder travels to the GPU machine: executables go
            # without their symbol tables (a debug test binary or a device-model
            # build is mostly symbols; the device image is an allocated section
            # and stays).
            strip_executables "$dir"
            echo "$s: $(du -sh "$dir" | cut -f1) in $dir"
        fi
        if [ "$verb" != build ]; then
            [ -d "$dir" ] || { echo "error: $dir is missing: run \`scripts/gpu.sh build $s\` first" >&2; exit 1; }
            echo "##### run $s"
            set +e
            gpu_begin
            run "$dir"
            gpu_end "$s"
        fi
    )
    rc=$?
    [ $rc -eq 0 ] || status=1
    summary+=("$(printf '%-13s %s' "$s" "$([ $rc -eq 0 ] && echo ok || echo "FAILED (exit $rc)")")")
done
echo
echo "##### summary ($verb)"
printf '%s\n' "${summary[@]}"
exit $status
