#!/usr/bin/env bash
# Checks, without a GPU, that queued launches while another thread
# allocates and frees DeviceBuffers make no driver call that synchronizes
# the device: runs tests/queue.rs's
# a_queued_launch_returns_at_once_while_another_thread_frees (from a
# `cargo offload` build of the test, which carries a device image) on the
# stand-in libcuda (bench/async/stub-libcuda.c), counting calls from the
# test's first cuEventRecord on (start-up left out; each queue wait made
# to take 50 ms, as the kernel would), and fails if any of
# cuMemFree, cuMemAlloc, cuMemsetD8 (non-Async) or cuCtxSynchronize was
# called ("API synchronization behavior", CUDA Driver API: cuMemFree may
# synchronize the device, a non-Async memset is synchronous), or if the
# stream-ordered calls that replace them (cuMemAllocFromPoolAsync,
# cuMemFreeAsync) were not. The test's own verdict means nothing on the
# stand-in (kernels never run, every event is complete at once) and is
# ignored.
#
#   bench/async/stub-sync-check.sh QUEUE_TESTS [STUB_DIR]
#
# QUEUE_TESTS: the test binary (`scripts/gpu.sh build async` leaves it in
# target/gpu/async/queue-tests). STUB_DIR: a folder with the stand-in's
# libcuda.so and libcuda.so.1 (that build leaves them in
# target/gpu/async/stub); without it the stand-in is compiled with gcc into
# a temporary folder. Extra environment (OFFLOAD_CUDA_MEMPOOL=0 brings back
# cuMemAlloc/cuMemFree, and the check fails) passes through.
set -uo pipefail
exe=${1:?usage: stub-sync-check.sh QUEUE_TESTS [STUB_DIR]}
stub=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
tmp=
if [ -z "$stub" ]; then
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    stub=$tmp
    gcc -shared -fPIC -O2 -o "$stub/libcuda.so" "$here/stub-libcuda.c" || exit 1
    ln -sf libcuda.so "$stub/libcuda.so.1"
fi
test=a_queued_launch_returns_at_once_while_another_thread_frees
# Each of the test's 10 synchronizes takes 50 ms, as a kernel would, so
# that the other thread allocates and frees meanwhile.
out=$(env LD_LIBRARY_PATH="$stub" STUB_COUNTS=1 STUB_COUNT_FROM=cuEventRecord STUB_EVENT_WAIT_US=50000 OFFLOAD_DEVICE=cuda \
    "$exe" --exact "$test" --test-threads=1 2>&1)
echo "$out" | grep '^stub ' || true
count() { awk -v f="$1" '$1 == "stub" && $2 == f { n = $3 } END { print n + 0 }' <<<"$out"; }
bad=0
for f in cuMemFree_v2 cuMemAlloc_v2 cuMemsetD8_v2 cuCtxSynchronize; do
    n=$(count "$f")
    if [ "$n" -ne 0 ]; then
        echo "synchronizing call while another thread allocates and frees: $f, $n time(s)"
        bad=1
    fi
done
launches=$(count cuLaunchKernel) allocs=$(count cuMemAllocFromPoolAsync) frees=$(count cuMemFreeAsync)
if [ "$launches" -lt 9 ]; then
    echo "only $launches queued launch(es) counted (expected 9 after the first record): did the test run?"
    echo "$out" | tail -n 20
    bad=1
fi
if [ "$allocs" -eq 0 ] || [ "$frees" -eq 0 ]; then
    echo "no stream-ordered allocation ($allocs) or free ($frees) counted: is the memory pool in use?"
    bad=1
fi
if [ $bad -eq 0 ]; then
    echo "stub: no synchronizing call in the loop ($launches launches, $allocs cuMemAllocFromPoolAsync, $frees cuMemFreeAsync)"
fi
exit $bad
