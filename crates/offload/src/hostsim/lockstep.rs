//! Grid-stride loops of a kernel whose barriers are `.await`s, run in
//! *lockstep*: one iteration of every thread of the block, then the next
//! iteration of every thread, instead of each thread's iterations in turn.
//!
//! The kernel macro makes a grid-stride loop of such a body (`for … in
//! grid_stride(n)` or `x.grid_stride()`) whose iterations cannot leave the
//! loop or wait (no `break`, `return`, `?`, jump to an outer label, barrier,
//! warp collective, or call of a function outside `core`/`std` and the
//! primitive types, which could wait where the macro cannot see) an await
//! of [`lockstep`]: the loop's body becomes a closure over the thread's
//! locals, which the thread's future keeps. A block in phases (`phases`)
//! polls each thread to that await, which registers the thread's iterator
//! and closure with the block and pauses it (as a [`Step`](super::phases::Step)
//! does); after the pass, [`run`] runs the registered loops round by
//! round, each round one iteration of each thread in linear order; the
//! next pass polls the threads on past their loops.
//!
//! The threads of a block so read the arrays they stride through as the
//! GPU's warps do: thread `t`'s element `i + t` next to thread `t + 1`'s,
//! each cache line once, in order. A round calls the loops' closures of
//! one site with no future in between (the closure inlined into the loop
//! of [`rounds`]): no state machine to resume, no step counter, no values
//! reloaded from a thread's future for each iteration. Measured on this
//! project's dot product (bench/host): see
//! bench/results/2026-12-02-lockstep.
//!
//! The meaning is that of the threads running one after another between
//! barriers, as any interleaving of a GPU's threads between barriers is:
//! a thread's iterations run in its order, other threads' iterations in
//! between. A thread that panics ends there (the block's first panic is
//! reported, the other threads run on). If a thread waits at a barrier or
//! warp collective that the macro did not see (a method that calls
//! `sync_threads`), the rounds stop and the phase's later passes run every
//! registered thread's remaining iterations itself, as they do for a
//! thread paused at a step (`Block::suspended`).

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use std::panic::{catch_unwind, AssertUnwindSafe};

use super::state::{Block, Entry, Paused, BLOCK, NO_RUNNER};
use super::threads::ended;
use crate::device::thread::{set_thread_idx, CTX};

/// The loop `for item in iter { f(item) }` of one GPU thread, as an await
/// (generated code only): see the module docs. Outside a block of the host
/// scheduler, or once a thread of the block waited on its runner's
/// coroutine, the loop runs when polled, all of it.
pub fn lockstep<I: IntoIterator, F: FnMut(I::Item)>(iter: I, f: F) -> Lockstep<I::IntoIter, F> {
    Lockstep { iter: iter.into_iter(), f, registered: false }
}

/// The future of [`lockstep`].
pub struct Lockstep<I, F> {
    iter: I,
    f: F,
    /// The rounds may run (or have run) this loop: the next poll finishes it.
    registered: bool,
}

impl<I: Iterator, F: FnMut(I::Item)> Future for Lockstep<I, F> {
    type Output = ();

    #[inline(always)]
    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        // SAFETY: nothing is moved out of the future; its address is what
        // the block's rounds keep while it is pending.
        let this = unsafe { self.get_unchecked_mut() };
        let b = BLOCK.with(|c| c.get());
        if !this.registered && !b.is_null() {
            // SAFETY: non-null only while `Executor::run_block` runs this
            // block on this OS thread, which outlives the thread polling this.
            let b = unsafe { &*b };
            if b.phases.get().is_some() && !b.suspended.get() {
                let thread = CTX.with(|c| c.get()).thread;
                let t = super::state::linear(thread, b.ctx.block_dim);
                let data = this as *mut Self as *mut ();
                b.lockstep.borrow_mut().push(Entry { t, idx: thread, data, rounds: rounds::<I, F> });
                this.registered = true;
                b.paused.set(Paused::Step);
                return Poll::Pending;
            }
        }
        // The rest of the loop (all of it if the rounds did not run it).
        for item in this.iter.by_ref() {
            (this.f)(item);
        }
        Poll::Ready(())
    }
}

/// Runs the grid-stride loops registered in the pass that just ended
/// (`phases::drive`, after the pass and before the next), site by site:
/// the entries of consecutive threads at one site run their rounds
/// together. If a thread of the pass waited on its runner's coroutine
/// (`Block::suspended`), the registered threads' next polls run their
/// loops instead, and this forgets them.
///
/// A thread may wait on the coroutine of the runner that drives the
/// phases during the rounds (a barrier the macro does not see): the
/// scheduler then has the phase's later passes run the other registered
/// threads' loops (they are paused, `Wait::Running`), and must not start
/// a runner for threads of the pass (`next` is past them, and no runner
/// holds the sequence, so that `entry::suspend` leaves it there). When
/// the waiting thread's call returns, the rounds stop; the caller waits
/// for the other runners, and a later pass (counted here) runs what is
/// left of the loops.
pub(super) fn run(b: &Block) {
    let mut entries = core::mem::take(&mut *b.lockstep.borrow_mut());
    let rid = b.current.get();
    b.next.set(b.n);
    b.sequencer.set(NO_RUNNER);
    let mut rest = &mut entries[..];
    while !rest.is_empty() && !b.suspended.get() {
        let site = rest[0].rounds;
        let end = rest.iter().position(|e| !core::ptr::fn_addr_eq(e.rounds, site)).unwrap_or(rest.len());
        let (group, later) = rest.split_at_mut(end);
        if !run_site(b, site, group) {
            break;
        }
        rest = later;
    }
    if b.suspended.get() {
        b.phase_stepped.set(b.phase_stepped.get() + 1);
    } else {
        b.sequencer.set(rid);
    }
    // The table keeps its allocation for the next pass.
    entries.clear();
    *b.lockstep.borrow_mut() = entries;
}

/// Runs one site's rounds until its loops have ended, a thread's panic
/// ending its loop; `false` if a thread waited on its runner's coroutine
/// (the rounds stop: see the module docs).
fn run_site(b: &Block, site: unsafe fn(&Block, &mut [Entry]) -> Option<u32>, group: &mut [Entry]) -> bool {
    loop {
        // SAFETY: every entry was registered by a pending `Lockstep` of
        // this site's types, pinned in a live future of this block: the
        // futures are polled again only after this returns, and are dropped
        // only after the table is cleared (`phases::drive`).
        match catch_unwind(AssertUnwindSafe(|| unsafe { site(b, group) })) {
            Ok(None) => return true,
            Ok(Some(_)) => return false,
            Err(payload) => {
                let t = ended(b, payload);
                if b.suspended.get() {
                    // It panicked after waiting on this runner's coroutine:
                    // other runners have run the others' loops meanwhile.
                    return false;
                }
                group.iter_mut().filter(|e| e.t == t).for_each(|e| e.data = core::ptr::null_mut());
            }
        }
    }
}

/// The rounds of the loops `entries`, all of this site's iterator type
/// `I` and closure type `F`: until every loop has ended, one iteration of
/// each in turn. `None` when they have; `Some(t)` if thread `t` waited on
/// its runner's coroutine meanwhile. An entry whose loop has ended is
/// marked (a null `data`); a panic leaves `entries` as they are.
///
/// # Safety
/// Each entry's non-null `data` points to a pinned, live `Lockstep<I, F>`
/// that nothing else uses during the call.
unsafe fn rounds<I: Iterator, F: FnMut(I::Item)>(b: &Block, entries: &mut [Entry]) -> Option<u32> {
    loop {
        let mut live = false;
        for e in entries.iter_mut() {
            if e.data.is_null() {
                continue;
            }
            // SAFETY: the caller's contract.
            let l = unsafe { &mut *(e.data as *mut Lockstep<I, F>) };
            set_thread_idx(e.idx);
            let Some(item) = l.iter.next() else {
                e.data = core::ptr::null_mut();
                continue;
            };
            live = true;
            (l.f)(item);
            if b.suspended.get() {
                return Some(e.t);
            }
        }
        if !live {
            return None;
        }
    }
}
