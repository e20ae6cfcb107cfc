#!/usr/bin/env bash
# Suite `async`: queues, queued launches, events, pending-work tracking,
# scopes, queued copies, graphs and futures on CUDA streams
# (docs/async.md): crates/offload/tests/queue.rs built for the GPU, each
# test its own check (so that a failure names the property); then the whole
# file once more with its tests on parallel threads (several queues of
# several host threads at once), with one test that panics on purpose,
# a_scope_leaves_the_queues_error_when_the_closure_returns_its_own (issue
# 11: its panic must reach its own queue while other tests' queues check),
# and without the others: they panic in the same kernel, `panics_at`, on
# their own queues at once, and a context has one panic record, reported to
# the first of the queues with that kernel unchecked (docs/async.md section
# 5); so is the blocking launch's panic in
# a_blocking_launchs_panic_found_by_a_queue_while_it_runs_stays_its_own,
# which, while recorded, would keep the scope test's panic from being
# recorded (a second panic while one is recorded is lost, section 5);
# nor the timing tests (a queued launch returns before its kernel ends, an
# event's wait ends before later work), which another test's driver call
# still stalls now and then on parallel threads (see `run`); then the
# stand-in libcuda check (no GPU
# needed: bench/async/stub-sync-check.sh) that a queued launch while
# another thread allocates and frees makes no synchronizing driver call,
# and that it fails with OFFLOAD_CUDA_MEMPOOL=0 (cuMemAlloc/cuMemFree);
# then the whole file, panics included (the alloc/free stall test left
# out), under compute-sanitizer:
# memcheck (no invalid access, no failed driver call: "ERROR SUMMARY: 0
# errors") and racecheck without the panicking tests ("RACECHECK SUMMARY:
# 0 hazards displayed (0 errors, 0 warnings)"). The sanitizer checks
# are skipped, with a line saying so, where compute-sanitizer is not found
# (PATH, /usr/local/cuda/bin).
what="queues, events, tracking, scopes, copies, graphs, tokio futures, no sync in alloc/free; memcheck, racecheck"
needs="NVIDIA driver; compute-sanitizer (optional); gcc at build"
takes="about 1 min, up to 5 min more with compute-sanitizer"

build() { # dir
    local out=$1 arch=${ARCH:-sm_90} exe
    exe=$(offload test -q --release --arch "$arch" -p offload --test queue --no-run --message-format=json |
        test_executable queue | sort -u)
    cp "$exe" "$out/queue-tests"
    # The stand-in libcuda and its check (bench/async/stub-sync-check.sh).
    mkdir -p "$out/stub"
    gcc -shared -fPIC -O2 -o "$out/stub/libcuda.so" bench/async/stub-libcuda.c || return 1
    ln -sf libcuda.so "$out/stub/libcuda.so.1"
    cp bench/async/stub-sync-check.sh "$out/"
}

# One test of tests/queue.rs, alone, on the GPU.
one() { # check-name test-name
    gpu_check "$1" 0 "1 passed" -- env OFFLOAD_DEVICE=cuda ./queue-tests --exact "$2" --test-threads=1
}

run() { # dir
    cd "$1" || return 1
    one "queued launches return at once and run in order" queued_launches_return_at_once_and_run_in_order
    one "an event orders another queue" an_event_orders_another_queue
    one "a buffer orders a read on another queue after its write" a_buffer_orders_a_read_on_another_queue_after_its_write
    one "a buffer orders a write on another queue after its reads" a_buffer_orders_a_write_on_another_queue_after_its_reads
    one "host access and blocking launches wait for pending work" host_access_waits_for_pending_work
    one "a buffer dropped while in use is freed after its work" a_buffer_dropped_while_in_use_is_freed_after_its_work
    one "a panic in a queued launch arrives at synchronize, the queue goes on" \
        a_panic_in_a_queued_launch_arrives_at_synchronize_and_the_queue_goes_on
    one "launch checks fail at once" launch_checks_fail_at_once
    one "a scope borrows host memory until it ends" a_scope_borrows_host_memory_until_it_ends
    one "a scope returns the closure's error or the queue's" a_scope_returns_the_closures_error_or_the_queues
    one "pinned copies are queued and ordered (async DMA)" pinned_copies_are_queued_and_ordered
    one "dropping a queue waits for its work" dropping_a_queue_waits_for_its_work
    one "generic and module kernels have queued forms" generic_and_module_kernels_have_queued_forms
    one "a kernel in a function body has a queued form" a_kernel_in_a_function_body_has_a_queued_form
    one "a graph replays its launches (cuGraphLaunch)" a_graph_replays_its_launches
    one "a graph keeps its buffers, refuses what it cannot hold" a_graph_keeps_its_buffers_and_refuses_what_it_cannot_hold
    one "a graph replayed many times keeps one pending replay per queue" \
        a_graph_replayed_many_times_keeps_one_pending_replay_per_queue
    one "futures complete on tokio" futures_complete_on_tokio
    one "an event is waited for without the work after it" an_event_is_waited_for_without_the_work_after_it
    one "an event is waited for while another thread waits for a blocking launch" \
        an_event_is_waited_for_while_another_thread_waits_for_a_blocking_launch
    one "a panic is reported on its own queue while another queue runs (issue 11)" \
        a_panic_is_reported_on_its_own_queue_while_another_queue_runs
    one "a blocking launch's panic found by a queue while it runs stays its own" \
        a_blocking_launchs_panic_found_by_a_queue_while_it_runs_stays_its_own
    one "a launch on mapped pinned memory waits for the buffer's queued copies" \
        a_launch_on_mapped_pinned_memory_waits_for_the_buffers_queued_copies
    one "every wait is refused during a capture" every_wait_is_refused_during_a_capture
    one "DeviceGlobal access waits for queued work" device_global_access_waits_for_queued_work
    one "a queued launch returns at once while another thread allocates and frees (stream-ordered pool)" \
        a_queued_launch_returns_at_once_while_another_thread_frees
    one "a buffer allocated after a drop is zeroed (the pool reuses memory)" a_buffer_allocated_after_a_drop_is_zeroed
    one "an allocation gets the memory that drops left in the pool (trim on out of memory)" \
        an_allocation_gets_the_memory_that_drops_left_in_the_pool
    one "an event and a future that outlive their queue report its panic" \
        an_event_that_outlives_its_queue_reports_the_queues_panic
    one "the warning of an uncollected error prints once, where nothing can report it" \
        the_uncollected_error_warning_prints_once_where_nothing_can_report_it
    local panicking=(--skip a_panic_in_a_queued_launch_arrives_at_synchronize_and_the_queue_goes_on
        --skip a_scope_returns_the_closures_error_or_the_queues --skip futures_complete_on_tokio
        --skip a_panic_is_reported_on_its_own_queue_while_another_queue_runs
        --skip a_blocking_launchs_panic_found_by_a_queue_while_it_runs_stays_its_own
        --skip an_event_that_outlives_its_queue_reports_the_queues_panic
        --skip the_uncollected_error_warning_prints_once_where_nothing_can_report_it)
    # Timing properties (a queued launch returns before its kernel ends, an
    # event's wait ends before later work) on parallel threads: another
    # test's DeviceBuffer allocation or free (cuMemAlloc, cuMemFree) on
    # another thread stalled them (6 of 12 runs on 2026-12-02,
    # bench/results/2026-12-02-runbook3). Allocation and free are
    # stream-ordered now (crates/offload/src/runtime/cuda/pool.rs), which
    # made the alloc/free test pass alone (the `one` check above) but not on
    # parallel threads: the run below with the timing tests included failed
    # 4 of 12 times with the pool and 8 of 8 with OFFLOAD_CUDA_MEMPOOL=0
    # (bench/results/2026-12-02-runbook4, par-pool.txt, par-nopool.txt), so
    # another test's driver call still stalls queued launches now and then.
    # Until that call is found, the timing tests run alone only.
    local timing=(--skip queued_launches_return_at_once_and_run_in_order
        --skip an_event_is_waited_for_without_the_work_after_it
        --skip an_event_is_waited_for_while_another_thread_waits_for_a_blocking_launch
        --skip a_queued_launch_returns_at_once_while_another_thread_frees)
    gpu_check "all of tests/queue.rs but the panics in panics_at on several queues and the timing tests, tests on \
parallel threads" 0 "test result: ok" \
        -- env OFFLOAD_DEVICE=cuda ./queue-tests "${panicking[@]}" "${timing[@]}"
    gpu_check "no synchronizing driver call while another thread allocates and frees (stand-in libcuda)" 0 \
        "stub: no synchronizing call in the loop" -- ./stub-sync-check.sh ./queue-tests "$PWD/stub"
    gpu_check "the stand-in check fails with cuMemAlloc/cuMemFree (OFFLOAD_CUDA_MEMPOOL=0)" error \
        "synchronizing call while another thread allocates and frees: cuMemFree_v2" \
        -- env OFFLOAD_CUDA_MEMPOOL=0 ./stub-sync-check.sh ./queue-tests "$PWD/stub"
    # Under the sanitizers each kernel runs instrumented; the test
    # threads one at a time, as the sanitizers report per launch. The
    # alloc/free stall test is a timing property of the driver's allocator,
    # which the sanitizers intercept, and the out-of-memory test allocates
    # 7/8 of the GPU's memory (every other test allocates from the pool
    # under them too).
    local unsanitized=(--skip a_queued_launch_returns_at_once_while_another_thread_frees
        --skip an_allocation_gets_the_memory_that_drops_left_in_the_pool)
    gpu_sanitize "memcheck: all of tests/queue.rs, panics included (not the alloc/free stall and out-of-memory \
tests)" memcheck "test result: ok" -- ./queue-tests --test-threads=1 "${unsanitized[@]}"
    gpu_sanitize "racecheck: tests/queue.rs but the panics and the alloc/free stall and out-of-memory tests" \
        racecheck "test result: ok" -- ./queue-tests --test-threads=1 "${panicking[@]}" "${unsanitized[@]}"
}
