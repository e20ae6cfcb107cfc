//! Kernels whose barriers are in the body, which the host fallback runs in
//! phases (`hostsim::phases`: the body's `sync_threads()` calls become
//! awaits and the values that live across them stay in each thread's
//! future): values carried across barriers, barriers reached in different
//! branches, a barrier hidden in a called function, a warp collective
//! between barriers, panics after a barrier and in a grid-stride loop, many
//! `shared_array!` sites. Every output is compared with
//! the block simulated here, step by step, on the host.

#[path = "phases/lockstep.rs"]
mod lockstep;
#[path = "phases/lockstep_breaks.rs"]
mod lockstep_breaks;
#[path = "phases/steps.rs"]
mod steps;

use offload::prelude::*;
#[offload::host]
use offload::Error;
use offload::{block_dim, block_idx, shared_array, sync_threads, thread_idx, warp};

/// Threads of a block, at most: the shared array's length.
const MAX: usize = 64;

/// Per round, two barriers: every thread publishes `v`, reads its two
/// neighbours (in linear order, cyclic), then mixes them into `v` with an
/// element of its block's `row`. Carried across both barriers: `v`, `acc`
/// (f64), a counter, a `Vec` (a heap value, moved between phases) and
/// `row`, a borrow of the argument.
#[kernel]
fn carried(rounds: u32, input: &[f32], out: &mut [f64]) {
    let s = shared_array!(f32; MAX);
    let t = thread_idx();
    let n = (block_dim().x * block_dim().y) as usize;
    let me = (t.x + block_dim().x * t.y) as usize;
    let base = block_idx().x as usize * n;
    let row = &input[base..base + n];
    let mut v = row[me];
    let mut acc = 0.0f64;
    let mut count = 0u32;
    let mut seen = Vec::new();
    for r in 0..rounds as usize {
        s.set(me, v);
        sync_threads();
        let left = s.get((me + n - 1) % n);
        let right = s.get((me + 1) % n);
        sync_threads();
        v = 0.5 * v + 0.25 * (left + right) + row[(me + r) % n];
        acc += v as f64 * (r + 1) as f64;
        count += 1;
        seen.push(left);
    }
    let h: f64 = seen.iter().map(|&x| x as f64).sum();
    if let Some((_, o)) = out.at_thread() {
        *o = acc + h + count as f64 * 1000.0;
    }
}

/// `carried` for one block of `n` threads whose inputs are `row`, the
/// threads stepped in lockstep: each thread's output, by linear index.
fn carried_on_host(rounds: usize, row: &[f32]) -> Vec<f64> {
    let n = row.len();
    let mut v: Vec<f32> = row.to_vec();
    let (mut acc, mut seen) = (vec![0.0f64; n], vec![0.0f64; n]);
    for r in 0..rounds {
        let s = v.clone();
        for me in 0..n {
            let (left, right) = (s[(me + n - 1) % n], s[(me + 1) % n]);
            v[me] = 0.5 * v[me] + 0.25 * (left + right) + row[(me + r) % n];
            acc[me] += v[me] as f64 * (r + 1) as f64;
            seen[me] += left as f64;
        }
    }
    (0..n).map(|me| acc[me] + seen[me] + rounds as f64 * 1000.0).collect()
}

#[test]
fn values_cross_two_barriers_per_round_of_a_loop() {
    let rounds = 5u32;
    // A 1-D block and a 2-D one (the thread loop's two copies).
    for (grid, block) in [(3u32, Dim3::new(64, 1, 1)), (2, Dim3::new(8, 6, 1))] {
        let n = block.volume() as usize;
        let input: Vec<f32> = (0..grid as usize * n).map(|i| ((i * 37 % 101) as f32 - 50.0) / 16.0).collect();
        let mut out = vec![f64::NAN; input.len()];
        carried(LaunchConfig::new(grid, block), rounds, &input, &mut out).unwrap();
        for b in 0..grid as usize {
            let want = carried_on_host(rounds as usize, &input[b * n..(b + 1) * n]);
            for (me, &w) in want.iter().enumerate() {
                // `at_thread`'s element: x + X·y, X the grid's x-extent.
                let (x, y) = (me % block.x as usize, me / block.x as usize);
                let i = b * block.x as usize + x + grid as usize * block.x as usize * y;
                let got = out[i];
                assert!((got - w).abs() <= 1e-9 * w.abs().max(1.0), "block {b} thread {me}: {got} != {w} ({block:?})");
            }
        }
    }
}

/// The first half of the block waits at one barrier, the second at
/// another (as `bar.sync 0`, they meet): each half then reads what the
/// other wrote before it.
#[kernel]
fn two_branches(out: &mut [u32]) {
    let s = shared_array!(u32; MAX);
    let (t, n) = (thread_idx().x as usize, block_dim().x as usize);
    let v;
    if t < n / 2 {
        s.set(t, 1000 + t as u32);
        sync_threads();
        v = s.get(t + n / 2);
    } else {
        s.set(t, 2000 + t as u32);
        sync_threads();
        v = s.get(t - n / 2);
    }
    if let Some((_, o)) = out.at_thread() {
        *o = v;
    }
}

#[test]
fn barriers_in_two_branches_release_together() {
    let mut out = vec![0u32; 2 * 32];
    two_branches(LaunchConfig::new(2u32, 32u32), &mut out).unwrap();
    for (i, &v) in out.iter().enumerate() {
        let t = i % 32;
        let want = if t < 16 { 2000 + t + 16 } else { 1000 + t - 16 };
        assert_eq!(v, want as u32, "element {i}");
    }
}

/// A barrier inside a function the kernel calls: the macro does not see it.
fn hidden_barrier() {
    sync_threads();
}

/// Between the body's two barriers, every thread reaches a barrier the
/// macro does not see and a warp reduction: the scheduler runs the rest of
/// the phase on coroutines. `mixed`: the first half of the block reaches
/// the hidden barrier, the rest a barrier of the body: different barriers.
#[kernel]
fn hidden_in_phase(mixed: bool, out: &mut [u32]) {
    let s = shared_array!(u32; MAX);
    let (t, n) = (thread_idx().x as usize, block_dim().x as usize);
    s.set(t, t as u32 * 3);
    sync_threads();
    let left = s.get((t + n - 1) % n);
    if !mixed || t < n / 2 {
        hidden_barrier();
    } else {
        sync_threads();
    }
    s.set(t, left + 1);
    let sum = warp::reduce_sum(left);
    sync_threads();
    if let Some((_, o)) = out.at_thread() {
        *o = s.get((t + 1) % n) * 100_000 + sum;
    }
}

#[test]
fn a_barrier_in_a_called_function_and_a_warp_reduction_inside_a_phase() {
    let (grid, n) = (3usize, 64usize);
    let mut out = vec![0u32; grid * n];
    hidden_in_phase(LaunchConfig::new(grid as u32, n as u32), false, &mut out).unwrap();
    let left = |t: usize| ((t + n - 1) % n) as u32 * 3;
    for (i, &v) in out.iter().enumerate() {
        let t = i % n;
        let warp = t / 32 * 32;
        let sum: u32 = (warp..warp + 32).map(left).sum();
        assert_eq!(v, (left((t + 1) % n) + 1) * 100_000 + sum, "element {i}");
    }
}

#[test]
fn a_barrier_in_a_called_function_and_one_of_the_body_are_different_barriers() {
    let mut out = vec![0u32; 64];
    let e = hidden_in_phase(LaunchConfig::new(1u32, 64u32), true, &mut out).unwrap_err();
    assert!(matches!(e, Error::Divergence { .. }), "{e}");
    let text = e.to_string();
    assert!(
        text.contains(
            "32 thread(s) wait at sync_threads inside a function the kernel calls while 32 wait at a \
                       sync_threads of the kernel's body"
        ),
        "{text}"
    );
}

/// Global thread `a.0` panics in round `a.1` and `b.0` in round `b.1`,
/// after the round's first barrier.
#[kernel]
fn panics_in_round(a: [u32; 2], b: [u32; 2], out: &mut [u32]) {
    let s = shared_array!(u32; MAX);
    let (t, n) = (thread_idx().x, block_dim().x);
    let me = block_idx().x * n + t;
    let mut v = me;
    for r in 0..3 {
        s.set(t as usize, v);
        sync_threads();
        assert!([me, r] != a && [me, r] != b, "thread {me} panics in round {r}");
        v = v.wrapping_mul(31).wrapping_add(s.get(((t + 1) % n) as usize));
        sync_threads();
    }
    if let Some((_, o)) = out.at_thread() {
        *o = v;
    }
}

/// What `panics_in_round` leaves in each element of the block of `n`
/// threads from global thread `first` on, whose threads in `dead` (global
/// index, round) stop in that round, after publishing their value of that
/// round and before computing the next: the others keep reading the last
/// value they published. `None`: a dead thread's element, never written.
fn panics_on_host(first: u32, n: u32, dead: &[(u32, u32)]) -> Vec<Option<u32>> {
    let mut v: Vec<u32> = (first..first + n).collect();
    let mut shared = vec![0u32; n as usize];
    let stopped = |t: u32, r: u32| dead.iter().any(|&(d, dr)| d == first + t && r >= dr);
    for r in 0..3 {
        for t in 0..n {
            if !stopped(t, r) || dead.contains(&(first + t, r)) {
                shared[t as usize] = v[t as usize];
            }
        }
        for t in (0..n).filter(|&t| !stopped(t, r)) {
            let next = shared[((t + 1) % n) as usize];
            v[t as usize] = v[t as usize].wrapping_mul(31).wrapping_add(next);
        }
    }
    (0..n).map(|t| (!stopped(t, 3)).then_some(v[t as usize])).collect()
}

/// The block's first panic is the first in the GPU's order of events: a
/// panic in an earlier round comes first, whatever the threads' indices
/// (a host that ran each thread through all its rounds before the next
/// would report the lower index).
#[test]
fn a_panic_after_a_barrier_names_its_thread_and_block() {
    let (grid, n) = (3u32, 64u32);
    // Two threads of one block; the first to panic is the earlier round's,
    // or in one round the lower index's.
    for (a, b) in [((70, 2), (100, 1)), ((5, 1), (6, 2)), ((130, 2), (191, 0)), ((129, 2), (128, 2))] {
        let want = if (a.1, a.0) < (b.1, b.0) { a } else { b };
        let mut out = vec![u32::MAX; (grid * n) as usize];
        let e = panics_in_round(LaunchConfig::new(grid, n), [a.0, a.1], [b.0, b.1], &mut out).unwrap_err();
        let Error::KernelPanic(p) = &e else { panic!("{e}") };
        assert_eq!(p.message, format!("thread {} panics in round {}", want.0, want.1), "{a:?} {b:?}: {e}");
        assert_eq!(
            (p.block.as_str(), p.thread.as_str()),
            (&*format!("({}, 0, 0)", want.0 / n), &*format!("({}, 0, 0)", want.0 % n))
        );
        for blk in 0..grid {
            for (t, w) in panics_on_host(blk * n, n, &[a, b]).into_iter().enumerate() {
                let i = (blk * n) as usize + t;
                assert_eq!(out[i], w.unwrap_or(u32::MAX), "{a:?} {b:?}: element {i}");
            }
        }
    }
}

/// A value whose destructor waits at a barrier (as a RAII "everyone is
/// done" guard would).
struct BarrierOnDrop;

impl Drop for BarrierOnDrop {
    fn drop(&mut self) {
        sync_threads();
    }
}

/// Every thread holds a [`BarrierOnDrop`] across two body barriers; thread
/// `bad` panics between them, so its unwinding runs the destructor.
#[kernel]
fn guard_panics(bad: u32, out: &mut [u32]) {
    let _guard = BarrierOnDrop;
    let t = thread_idx().x + block_dim().x * block_idx().x;
    sync_threads();
    if t == bad {
        panic!("thread {} panics holding the guard", t);
    }
    sync_threads();
    if let Some((i, o)) = out.at_thread() {
        *o = i as u32 + 1;
    }
}

/// A panicking thread has left the kernel (a GPU's panic traps and runs no
/// destructors): a barrier its unwinding reaches does not wait, the panic
/// is reported with its thread and block, and the next launch runs. (The
/// process aborted: the thread was suspended in mid-unwind.)
#[test]
fn a_barrier_in_the_destructor_of_a_panicking_thread_does_not_wait() {
    let (grid, n) = (2u32, 32u32);
    let mut out = vec![0u32; (grid * n) as usize];
    let e = guard_panics(LaunchConfig::new(grid, n), 37, &mut out).unwrap_err();
    let Error::KernelPanic(p) = &e else { panic!("{e}") };
    assert_eq!(p.message, "thread 37 panics holding the guard", "{e}");
    assert_eq!((p.block.as_str(), p.thread.as_str()), ("(1, 0, 0)", "(5, 0, 0)"));
    let mut out = vec![0u32; (grid * n) as usize];
    guard_panics(LaunchConfig::new(grid, n), u32::MAX, &mut out).unwrap();
    assert_eq!(out, (1..=grid * n).collect::<Vec<_>>());
}

/// A `shared_array!` site in a function: the block allocates it when a
/// thread first calls the function.
fn site_a() -> &'static offload::SharedArray<u32, MAX> {
    shared_array!(u32; MAX)
}

/// Another site, as [`site_a`].
fn site_b() -> &'static offload::SharedArray<u32, MAX> {
    shared_array!(u32; MAX)
}

/// Six `shared_array!` sites, more than the block's cache of sites holds,
/// two of them allocated in an order that depends on the block (even
/// blocks `site_a` first, odd ones `site_b`): every thread stores into
/// each array, waits, and sums its neighbours' values of all six. An
/// array that another site's memory stood in for (a stale or wrong entry
/// of the cache) changes the sums.
#[kernel]
fn six_sites(out: &mut [u32]) {
    let (t, n, blk) = (thread_idx().x as usize, block_dim().x as usize, block_idx().x);
    let (a, b) = if blk % 2 == 0 {
        let a = site_a();
        (a, site_b())
    } else {
        let b = site_b();
        (site_a(), b)
    };
    let arrays =
        [a, b, shared_array!(u32; MAX), shared_array!(u32; MAX), shared_array!(u32; MAX), shared_array!(u32; MAX)];
    for (k, s) in arrays.iter().enumerate() {
        s.set(t, (k as u32 + 1) * 1000 + blk * 100 + t as u32);
    }
    sync_threads();
    let mut sum = 0;
    for (k, s) in arrays.iter().enumerate() {
        sum += s.get((t + k + 1) % n) * (k as u32 + 1);
    }
    if let Some((_, o)) = out.at_thread() {
        *o = sum;
    }
}

#[test]
fn every_shared_array_site_has_its_own_memory_in_every_block() {
    let (blocks, n) = (4usize, 40usize);
    let mut out = vec![0u32; blocks * n];
    six_sites(LaunchConfig::new(blocks as u32, n as u32), &mut out).unwrap();
    for (i, &got) in out.iter().enumerate() {
        let (blk, t) = (i / n, i % n);
        let want: usize = (0..6).map(|k| ((k + 1) * 1000 + blk * 100 + (t + k + 1) % n) * (k + 1)).sum();
        assert_eq!(got as usize, want, "block {blk} thread {t}");
    }
}

/// A grid-stride loop of a body with barriers, whose iterations pause
/// every few (`hostsim::phases::Step`) while the block's other threads
/// take their turn. Each thread sums its elements of `x` (weighted by
/// position); `mode` 2 also exchanges each element with its neighbour
/// through shared memory, at two barriers the macro does not see, inside
/// the loop (every thread must make the same number of iterations). Then
/// a warp reduction and a barrier (`mode` 1: the macro does not see it),
/// after which each thread reads its neighbours' sums. With trip counts
/// that differ between threads, threads that paused in the loop meet
/// threads that went on to the reduction or barrier on coroutines.
#[kernel]
fn strided(mode: u32, x: &[u32], out: &mut [u64]) {
    let s = shared_array!(u32; MAX);
    let (t, n) = (thread_idx().x as usize, block_dim().x as usize);
    sync_threads();
    let mut acc = 0u32;
    for i in offload::grid_stride(x.len()) {
        acc += x[i] * (i % 7 + 1) as u32;
        if mode == 2 {
            s.set(t, x[i]);
            hidden_barrier();
            acc += s.get((t + 1) % n);
            hidden_barrier();
        }
    }
    let sum = warp::reduce_sum(acc);
    s.set(t, acc);
    if mode == 1 {
        hidden_barrier();
    } else {
        sync_threads();
    }
    let near = s.get((t + 1) % n) + s.get((t + n - 1) % n);
    if let Some((_, o)) = out.at_thread() {
        *o = (sum as u64) << 32 | near as u64;
    }
}

/// `strided` computed here: per global thread, its output.
fn strided_on_host(mode: u32, x: &[u32], grid: usize, n: usize) -> Vec<u64> {
    let g = grid * n;
    let acc: Vec<u32> = (0..g)
        .map(|me| {
            let (blk, t) = (me / n, me % n);
            let next = blk * n + (t + 1) % n;
            // Mode 2: the neighbour's element of the same iteration (all
            // threads make the same number).
            (me..x.len())
                .step_by(g)
                .map(|i| x[i] * (i % 7 + 1) as u32 + if mode == 2 { x[i - me + next] } else { 0 })
                .sum()
        })
        .collect();
    (0..g)
        .map(|me| {
            let (blk, t) = (me / n, me % n);
            let w = me / 32 * 32;
            let sum: u32 = acc[w..w + 32].iter().sum();
            let near = acc[blk * n + (t + 1) % n] + acc[blk * n + (t + n - 1) % n];
            (sum as u64) << 32 | near as u64
        })
        .collect()
}

#[test]
fn threads_that_pause_in_a_grid_stride_loop_meet_the_others_at_barriers_and_reductions() {
    let (grid, n) = (2usize, MAX);
    let g = grid * n;
    // Trip counts: thread 0 one more than the others (it pauses in the
    // loop while they reach the reduction and the barrier), several
    // uneven ones, all equal (mode 2 needs it).
    for (mode, len) in [(0, 3 * g + 1), (1, 3 * g + 1), (0, 9 * g + 37), (1, 9 * g + 37), (0, 2), (2, 6 * g)] {
        let x: Vec<u32> = (0..len).map(|i| (i * 37 % 101) as u32).collect();
        let mut out = vec![0u64; g];
        strided(LaunchConfig::new(grid as u32, n as u32), mode, &x, &mut out)
            .unwrap_or_else(|e| panic!("mode {mode}, {len} elements: {e}"));
        let want = strided_on_host(mode, &x, grid, n);
        for (me, (&o, &w)) in out.iter().zip(&want).enumerate() {
            assert_eq!(o, w, "mode {mode}, {len} elements, thread {me}: sum {} near {}", o >> 32, o as u32);
        }
    }
}

/// Global thread `a.0` panics in iteration `a.1` of a grid-stride loop
/// and `b.0` in iteration `b.1`; the others sum their elements.
#[kernel]
fn panics_in_loop(a: [u32; 2], b: [u32; 2], x: &[u32], out: &mut [u32]) {
    let me = offload::global_index() as u32;
    sync_threads();
    let (mut k, mut acc) = (0u32, 0u32);
    for i in offload::grid_stride(x.len()) {
        assert!([me, k] != a && [me, k] != b, "thread {me} panics in iteration {k}");
        acc += x[i];
        k += 1;
    }
    sync_threads();
    if let Some((_, o)) = out.at_thread() {
        *o = acc;
    }
}

/// Threads pause in a grid-stride loop and take turns: a panic in an early
/// iteration comes before one many iterations later, whatever the threads'
/// indices (as on a GPU, whose threads run the loop side by side); in the
/// same iteration the lower index comes first. The other threads finish.
#[test]
fn a_panic_in_an_early_iteration_of_a_grid_stride_loop_comes_first() {
    let (grid, n) = (3u32, 64u32);
    let g = (grid * n) as usize;
    let x: Vec<u32> = (0..g * 25).map(|i| (i * 7 % 13) as u32).collect();
    for (a, b, want) in [((70, 20), (100, 1), (100, 1)), ((5, 1), (6, 1), (5, 1)), ((130, 24), (191, 0), (191, 0))] {
        let mut out = vec![u32::MAX; g];
        let e = panics_in_loop(LaunchConfig::new(grid, n), [a.0, a.1], [b.0, b.1], &x, &mut out).unwrap_err();
        let Error::KernelPanic(p) = &e else { panic!("{e}") };
        assert_eq!(p.message, format!("thread {} panics in iteration {}", want.0, want.1), "{a:?} {b:?}: {e}");
        for (me, &o) in out.iter().enumerate() {
            let sum: u32 = (me..x.len()).step_by(g).map(|i| x[i]).sum();
            let dead = me == a.0 as usize || me == b.0 as usize;
            assert_eq!(o, if dead { u32::MAX } else { sum }, "{a:?} {b:?}: thread {me}");
        }
    }
}

/// A grid-stride loop over a `DisjointSlice`'s elements (each a `&mut`
/// held across the loop's pause) after a barrier.
#[kernel]
fn stride_elements(out: &mut [u32]) {
    let s = shared_array!(u32; MAX);
    s.set(thread_idx().x as usize, block_idx().x + 1);
    sync_threads();
    for (i, o) in out.grid_stride() {
        *o = i as u32 * 3 + s.get(0);
    }
}

#[test]
fn a_grid_stride_loop_over_elements_pauses_with_its_element() {
    let (grid, n) = (2u32, 32u32);
    let mut out = vec![0u32; (grid * n) as usize * 9 + 5];
    stride_elements(LaunchConfig::new(grid, n), &mut out).unwrap();
    for (i, &o) in out.iter().enumerate() {
        let blk = i % (grid * n) as usize / n as usize;
        assert_eq!(o, i as u32 * 3 + blk as u32 + 1, "element {i}");
    }
}
