//! (A module of the `phases` tests.) Reproducers from a review of the
//! lockstep grid-stride loops (`hostsim::lockstep`, the kernel macro's
//! `lockstep.rs`): each kernel is run as written (lockstep) and with the
//! loop forced onto the stepped path (a call of `stepped()`, a user
//! function), and both are compared with the sums computed here.
//!
//! Kernels that were compile regressions in the same review (valid code
//! that compiles as plain loops, not once the loop is a closure) now take
//! the stepped path; `consume`, `assigned_each_iteration` and `slot_kept`
//! below must compile, and give the plain loops' results. Two remain (the
//! kernel macro cannot see them):
//!
//! 1. In an edition-2018 crate (closures capture whole variables), a loop
//!    over one field whose body writes another (E0499):
//!    `let mut pair = (out, 0u32); for (_i, o) in pair.0.grid_stride() { *o = 5; pair.1 += 1; }`
//! 2. A crate-local macro named like an allowed one (`matches`, `assert`,
//!    `print`, …) whose expansion holds `continue` (E0267 "`continue` inside
//!    of a closure"): `macro_rules! matches { ($e:expr) => { if !$e { continue; } } }`
//!    then `for i in grid_stride(n) { matches!(x[i] > 2); s += x[i]; }`.

use offload::prelude::*;
use offload::sync_threads;
#[offload::host]
use offload::Error;

/// Forces a grid-stride loop onto the stepped path (a call of a function
/// of the user's).
#[inline(never)]
fn stepped() {}

/// An inner loop labeled like the grid-stride loop (legal: a
/// `label_shadowing` warning): its `continue 'o` continues the inner loop,
/// so each element adds `x · (1 + 3 + 4) + 100`.
#[kernel]
#[allow(unused_labels)]
fn shadowed_label(force_stepped: bool, x: &[u32], out: &mut [u32]) {
    sync_threads();
    let mut acc = 0u32;
    if force_stepped {
        'o: for i in offload::grid_stride(x.len()) {
            stepped();
            'o: for j in 0..4u32 {
                if j == 1 {
                    continue 'o;
                }
                acc += x[i] * (j + 1);
            }
            acc += 100;
        }
    } else {
        'o: for i in offload::grid_stride(x.len()) {
            'o: for j in 0..4u32 {
                if j == 1 {
                    continue 'o;
                }
                acc += x[i] * (j + 1);
            }
            acc += 100;
        }
    }
    sync_threads();
    if let Some((_, o)) = out.at_thread() {
        *o = acc;
    }
}

#[test]
fn a_continue_to_an_inner_loop_of_the_same_label_continues_that_loop() {
    let x: Vec<u32> = (0..100).map(|i| i % 7 + 1).collect();
    let n = 16;
    let want: Vec<u32> = (0..n).map(|me| (me..x.len()).step_by(n).map(|i| x[i] * 8 + 100).sum()).collect();
    for force_stepped in [true, false] {
        let mut out = vec![0u32; n];
        shadowed_label(LaunchConfig::new(2u32, 8u32), force_stepped, &x, &mut out).unwrap();
        assert_eq!(out, want, "stepped: {force_stepped}");
    }
}

/// Two grid-stride loops under opposite `cfg`s: only the configured one
/// runs (the other adds 1000 per element).
#[kernel]
fn configured_loops(force_stepped: bool, x: &[u32], out: &mut [u32]) {
    sync_threads();
    let mut acc = 0u32;
    if force_stepped {
        #[cfg(any())]
        for i in offload::grid_stride(x.len()) {
            stepped();
            acc += 1000 + x[i];
        }
        #[cfg(not(any()))]
        for i in offload::grid_stride(x.len()) {
            stepped();
            acc += x[i];
        }
    } else {
        #[cfg(any())]
        for i in offload::grid_stride(x.len()) {
            acc += 1000 + x[i];
        }
        #[cfg(not(any()))]
        for i in offload::grid_stride(x.len()) {
            acc += x[i];
        }
    }
    sync_threads();
    if let Some((_, o)) = out.at_thread() {
        *o = acc;
    }
}

#[test]
fn a_grid_stride_loop_configured_out_does_not_run() {
    let x: Vec<u32> = (0..50).collect();
    let n = 8;
    let want: Vec<u32> = (0..n).map(|me| (me..x.len()).step_by(n).map(|i| x[i]).sum()).collect();
    for force_stepped in [true, false] {
        let mut out = vec![0u32; n];
        configured_loops(LaunchConfig::new(1u32, 8u32), force_stepped, &x, &mut out).unwrap();
        assert_eq!(out, want, "stepped: {force_stepped}");
    }
}

/// A barrier that the kernel macro does not see, then a panic of thread
/// `bad`.
struct Gate;

impl Gate {
    fn pass(&self, bad: bool) {
        sync_threads();
        assert!(!bad, "thread panics after a barrier");
    }
}

/// Each thread's grid-stride iterations reach `Gate::pass`; thread `bad`
/// panics in its first.
#[kernel]
fn gated(force_stepped: bool, bad: u32, n: usize, out: &mut [u32]) {
    let g = Gate;
    let t = offload::thread_idx().x;
    sync_threads();
    if force_stepped {
        for _ in offload::grid_stride(n) {
            stepped();
            g.pass(t == bad);
        }
    } else {
        for _ in offload::grid_stride(n) {
            g.pass(t == bad);
        }
    }
    if let Some((_, o)) = out.at_thread() {
        *o = 1;
    }
}

/// Thread 0 panicking after a hidden barrier in a lockstep loop with more
/// than one iteration per thread: the launch reports the panic (as the
/// stepped path does). The rounds used to go on after the panic, running
/// loops that other runners had run meanwhile: the process died of SIGSEGV.
#[test]
fn a_panic_after_a_hidden_barrier_in_a_lockstep_loop_is_reported() {
    for force_stepped in [true, false] {
        for (bad, block, n) in [(0u32, 8u32, 32usize), (0, 2, 4), (1, 8, 16)] {
            let mut out = vec![0u32; block as usize];
            let r = gated(LaunchConfig::new(1u32, block), force_stepped, bad, n, &mut out);
            match r {
                Err(Error::KernelPanic(p)) => {
                    assert_eq!(p.message, "thread panics after a barrier");
                    assert_eq!(p.thread, format!("({bad}, 0, 0)"));
                }
                other => panic!("stepped {force_stepped}, {bad} {block} {n}: {other:?}"),
            }
            let want: Vec<u32> = (0..block).map(|t| (t != bad) as u32).collect();
            assert_eq!(out, want, "stepped {force_stepped}, {bad} {block} {n}");
        }
    }
}

/// A non-`Copy` accumulator replaced by a consuming method in each
/// iteration.
struct Acc {
    sum: u64,
    n: u32,
}

impl Acc {
    fn add(self, v: u32) -> Acc {
        Acc { sum: self.sum + v as u64, n: self.n + 1 }
    }
}

/// Three loops that must stay plain loops: a consuming accumulator, a
/// variable declared before the loop and assigned first in each iteration,
/// a `&mut` into a local array kept across iterations.
#[kernel]
fn kept_as_loops(x: &[u32], out: &mut [u64]) {
    sync_threads();
    let mut a = Acc { sum: 0, n: 0 };
    for i in offload::grid_stride(x.len()) {
        a = a.add(x[i]);
    }
    let mut tmp: u32;
    let mut twice = 0u32;
    for i in offload::grid_stride(x.len()) {
        tmp = x[i];
        twice += 2 * tmp;
    }
    let mut bins = [0u32; 8];
    let mut slot = &mut bins[0];
    for i in offload::grid_stride(x.len()) {
        *slot += 1;
        slot = &mut bins[(x[i] % 8) as usize];
    }
    *slot += 1;
    let filled = bins.iter().filter(|&&c| c > 0).count() as u64;
    if let Some((_, o)) = out.at_thread() {
        *o = (a.sum + a.n as u64) << 24 | (twice as u64) << 8 | filled;
    }
}

#[test]
fn loops_a_closure_cannot_hold_give_the_plain_loops_results() {
    let (grid, n) = (2usize, 32usize);
    let g = grid * n;
    let x: Vec<u32> = (0..g * 5 + 3).map(|i| (i * 11 % 17) as u32).collect();
    let mut out = vec![0u64; g];
    kept_as_loops(LaunchConfig::new(grid as u32, n as u32), &x, &mut out).unwrap();
    for (me, &o) in out.iter().enumerate() {
        let mine: Vec<u32> = (me..x.len()).step_by(g).map(|i| x[i]).collect();
        let a = mine.iter().map(|&v| v as u64).sum::<u64>() + mine.len() as u64;
        let twice = 2 * mine.iter().map(|&v| v as u64).sum::<u64>();
        let mut bins = [0u32; 8];
        let mut slot = 0;
        for &v in &mine {
            bins[slot] += 1;
            slot = (v % 8) as usize;
        }
        bins[slot] += 1;
        let filled = bins.iter().filter(|&&c| c > 0).count() as u64;
        assert_eq!(o, a << 24 | twice << 8 | filled, "thread {me}");
    }
}
