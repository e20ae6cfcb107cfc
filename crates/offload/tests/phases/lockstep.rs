//! (A module of the `phases` tests: one test binary less to link.)
//!
//! Grid-stride loops that the host fallback runs in lockstep (a kernel
//! whose barriers are in the body; `hostsim::lockstep`: one iteration of
//! every thread of the block at a time): per-thread sums carried into the
//! rest of the kernel, 2-D blocks, `continue`, two loops one after the
//! other and in different branches, a barrier that a method called in the
//! loop reaches (the macro does not see it), panics. Every output is
//! compared with the computation done here on the host.

use offload::prelude::*;
#[offload::host]
use offload::Error;
use offload::{block_dim, shared_array, sync_threads, thread_idx, warp, SharedArray};

/// Threads of a block, at most.
const MAX: usize = 128;

/// Each thread sums `x[i] · (i mod 5 + 1)` over its grid-stride elements,
/// skipping multiples of 3 (`continue`), then its elements' count in a
/// second loop over `out`'s elements (each written with its index and the
/// writing thread's `threadIdx`); after a barrier each thread adds its
/// linear neighbour's sum, and thread 0 of each warp stores the warp's
/// total through a reduction.
#[kernel]
fn sums(x: &[u32], out: &mut [u32], per_thread: &mut [u64]) {
    let s = shared_array!(u32; MAX);
    let d = block_dim();
    let t = (thread_idx().x + d.x * thread_idx().y) as usize;
    let n = (d.x * d.y) as usize;
    let mut acc = 0u32;
    for i in offload::grid_stride(x.len()) {
        if i % 3 == 0 {
            continue;
        }
        acc += x[i] * (i % 5 + 1) as u32;
    }
    let mut count = 0u32;
    for (i, o) in out.grid_stride() {
        let ti = thread_idx();
        *o = (i as u32) << 16 | ti.y << 8 | ti.x;
        count += 1;
    }
    s.set(t, acc);
    sync_threads();
    let near = s.get((t + 1) % n);
    let warp_total = warp::reduce_sum(acc);
    if let Some((_, p)) = per_thread.at_thread() {
        *p = (acc as u64 + near as u64) << 32 | (warp_total as u64 & 0xffff) << 16 | count as u64;
    }
}

#[test]
fn sums_carried_out_of_lockstep_loops_in_2d_blocks() {
    for (grid, block, len, olen) in
        [(3u32, (8u32, 4u32), 1000usize, 777usize), (2, (32, 2), 128, 128), (1, (4, 8), 5, 0)]
    {
        let (bx, by) = block;
        let n = (bx * by) as usize;
        let g = grid as usize * n;
        let x: Vec<u32> = (0..len).map(|i| (i * 31 % 97) as u32).collect();
        let mut out = vec![u32::MAX; olen];
        let mut per_thread = vec![0u64; g];
        sums(LaunchConfig::new(grid, block), &x, &mut out, &mut per_thread).unwrap();
        // Thread `t` (linear, x fastest) of block `blk`: its global index
        // (`global_index()`: row-major in the grid's x-extent), and the
        // sum of its first loop.
        let gx = grid as usize * bx as usize;
        let global = |blk: usize, t: usize| blk * bx as usize + t % bx as usize + gx * (t / bx as usize);
        let acc = |blk: usize, t: usize| -> u32 {
            (global(blk, t)..len).step_by(g).filter(|i| i % 3 != 0).map(|i| x[i] * (i % 5 + 1) as u32).sum()
        };
        for blk in 0..grid as usize {
            for t in 0..n {
                let me = global(blk, t);
                let near = acc(blk, (t + 1) % n);
                let w = t / 32 * 32;
                let warp_total: u32 = (w..(w + 32).min(n)).map(|u| acc(blk, u)).sum();
                let count = (me..olen).step_by(g).count() as u64;
                let want = (acc(blk, t) as u64 + near as u64) << 32 | (warp_total as u64 & 0xffff) << 16 | count;
                assert_eq!(per_thread[me], want, "grid {grid}, block {block:?}, block {blk} thread {t}");
            }
        }
        for (i, &o) in out.iter().enumerate() {
            // The thread whose global index is `i mod g`.
            let (gxi, ty) = (i % g % gx, i % g / gx);
            let want = (i as u32) << 16 | (ty as u32) << 8 | (gxi % bx as usize) as u32;
            assert_eq!(o, want, "grid {grid}, block {block:?}, element {i}");
        }
    }
}

/// Exchanges values through shared memory at two barriers that the kernel
/// macro does not see (inside a method).
struct Exchange(&'static SharedArray<u32, MAX>);

impl Exchange {
    /// Publishes `v` as thread `t` of `n`, returns thread `t + 1`'s.
    fn swap(&self, t: usize, n: usize, v: u32) -> u32 {
        self.0.set(t, v);
        sync_threads();
        let r = self.0.get((t + 1) % n);
        sync_threads();
        r
    }
}

/// A grid-stride loop that calls a method reaching barriers: with the same
/// number of iterations in every thread (as CUDA requires), each iteration
/// adds the neighbour's element of the same iteration.
#[kernel]
fn exchanged(x: &[u32], out: &mut [u32]) {
    let ex = Exchange(shared_array!(u32; MAX));
    let (t, n) = (thread_idx().x as usize, block_dim().x as usize);
    sync_threads();
    let mut acc = 0u32;
    for i in offload::grid_stride(x.len()) {
        acc += x[i] * 3 + ex.swap(t, n, x[i]);
    }
    sync_threads();
    if let Some((_, o)) = out.at_thread() {
        *o = acc;
    }
}

#[test]
fn a_barrier_that_a_method_reaches_in_a_lockstep_loop_waits_for_every_thread() {
    let (grid, n) = (3usize, 64usize);
    let g = grid * n;
    for rounds in [1, 4] {
        let x: Vec<u32> = (0..g * rounds).map(|i| (i * 13 % 29) as u32).collect();
        let mut out = vec![0u32; g];
        exchanged(LaunchConfig::new(grid as u32, n as u32), &x, &mut out).unwrap();
        for me in 0..g {
            let next = me / n * n + (me % n + 1) % n;
            let want: u32 = (me..x.len()).step_by(g).map(|i| x[i] * 3 + x[i - me + next]).sum();
            assert_eq!(out[me], want, "{rounds} rounds, thread {me}");
        }
    }
}

/// Thread `bad` panics in its iteration `at` of a lockstep loop; every
/// other thread sums its elements, in two loops in different branches.
#[kernel]
fn branches(bad: u32, at: u32, x: &[u32], out: &mut [u32]) {
    let me = offload::global_index() as u32;
    sync_threads();
    let mut acc = 0u32;
    let mut k = 0u32;
    if me.is_multiple_of(2) {
        for i in offload::grid_stride(x.len()) {
            assert!(me != bad || k != at, "thread {me} panics in iteration {k}");
            acc += x[i];
            k += 1;
        }
    } else {
        for i in offload::grid_stride(x.len()) {
            assert!(me != bad || k != at, "thread {me} panics in iteration {k}");
            acc += 2 * x[i];
            k += 1;
        }
    }
    sync_threads();
    if let Some((_, o)) = out.at_thread() {
        *o = acc;
    }
}

#[test]
fn a_panic_in_a_lockstep_loop_ends_its_thread_alone() {
    let (grid, n) = (2u32, 64u32);
    let g = (grid * n) as usize;
    let x: Vec<u32> = (0..g * 7 + 3).map(|i| (i * 7 % 13) as u32).collect();
    for (bad, at) in [(5u32, 0u32), (70, 3), (127, 6), (u32::MAX, 0)] {
        let mut out = vec![u32::MAX; g];
        let r = branches(LaunchConfig::new(grid, n), bad, at, &x, &mut out);
        match r {
            Err(Error::KernelPanic(p)) => {
                assert_eq!(p.message, format!("thread {bad} panics in iteration {at}"), "{bad} {at}")
            }
            other => assert!(bad == u32::MAX && other.is_ok(), "{bad} {at}: {other:?}"),
        }
        for (me, &o) in out.iter().enumerate() {
            let sum: u32 = (me..x.len()).step_by(g).map(|i| x[i] * if me % 2 == 0 { 1 } else { 2 }).sum();
            assert_eq!(o, if me as u32 == bad { u32::MAX } else { sum }, "{bad} {at}: thread {me}");
        }
    }
}
