//! (A module of the `phases` tests.) The turns of a grid-stride loop that
//! pauses at steps (one that calls a function of the crate's, so not in
//! lockstep): each thread runs 4 iterations per turn, the first turn
//! included, in linear thread order (README, "What the host fallback
//! costs").

use offload::atomic::{AtomicU32, Ordering::Relaxed};
use offload::prelude::*;
use offload::sync_threads;

/// The next ticket (a function of the crate's: the loop steps).
fn ticket(c: &AtomicU32) -> u32 {
    c.fetch_add(1, Relaxed)
}

/// Each element gets the ticket of the iteration that wrote it.
#[kernel]
fn order(counter: &AtomicU32, out: &mut [u32]) {
    sync_threads();
    for (_, o) in out.grid_stride() {
        *o = ticket(counter);
    }
    sync_threads();
}

#[test]
fn a_stepped_loop_runs_four_iterations_per_turn() {
    let (threads, per_thread) = (4usize, 12usize);
    let counter = AtomicU32::new(0);
    let mut out = vec![u32::MAX; threads * per_thread];
    order(LaunchConfig::new(1u32, threads as u32), &counter, &mut out).unwrap();
    for (i, &got) in out.iter().enumerate() {
        // Element i is thread t's k-th iteration; turn k / 4 of every
        // thread comes before turn k / 4 + 1 of any.
        let (t, k) = (i % threads, i / threads);
        let want = (k / 4) * threads * 4 + t * 4 + k % 4;
        assert_eq!(got, want as u32, "element {i} (thread {t}, iteration {k})");
    }
}

/// A kernel without barriers whose grid-stride loop fits lockstep: each
/// element gets the ticket of the iteration that wrote it, plus the
/// writing thread's index.
#[kernel]
fn plain_order(counter: &AtomicU32, out: &mut [u64]) {
    for (_, o) in out.grid_stride() {
        *o = (counter.fetch_add(1, Relaxed) as u64) << 32 | offload::thread_idx().x as u64;
    }
}

/// Without barriers, in an optimized build, a launch whose grid-stride
/// loop makes at least 4 iterations per thread runs it in lockstep
/// (element `i` of a one-block launch gets ticket `i`); one that makes
/// fewer, and any in a build with debug assertions, runs each thread's
/// iterations in turn. Both write every element with its own thread.
/// (`cargo test --release` tests the lockstep copy.)
#[test]
fn a_kernel_without_barriers_runs_long_grid_stride_loops_in_lockstep() {
    let optimized = cfg!(not(debug_assertions));
    for (threads, per_thread, lockstep) in [(4usize, 12usize, optimized), (4, 3, false), (64, 1, false)] {
        let counter = AtomicU32::new(0);
        let n = threads * per_thread;
        let mut out = vec![u64::MAX; n];
        plain_order(LaunchConfig::new(1u32, threads as u32), &counter, &mut out).unwrap();
        for (i, &o) in out.iter().enumerate() {
            let (t, k) = (i % threads, i / threads);
            let want = if lockstep { i } else { t * per_thread + k };
            assert_eq!(o, (want as u64) << 32 | t as u64, "{threads} threads, {n} elements: element {i}");
        }
    }
}
