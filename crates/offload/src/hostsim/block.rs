//! The host fallback's model of one thread block: the GPU threads of a
//! block as stackful coroutines on one worker thread, switched only where
//! CUDA threads wait for each other (`sync_threads`, warp collectives).
//!
//! # Execution model
//!
//! A *runner* is a coroutine that executes the block's threads one after
//! another, in linear thread order (x fastest), each to completion, in a
//! plain loop with the kernel's body inlined (`threads`). When a thread
//! reaches a synchronization point it suspends its runner; the scheduler
//! then starts a new runner for the remaining threads. So a kernel without
//! barriers or warp collectives costs one coroutine per block and runs as a
//! plain loop, while a kernel with them gets one coroutine per thread,
//! created only when the previous one waits.
//!
//! The scheduler releases what can proceed:
//! - a warp as soon as its existing lanes (threads `32w .. 32w+31` that
//!   exist in the block) all wait at the same warp collective: the
//!   collective's results are computed from all lanes' inputs at once,
//!   which gives the lockstep semantics of `shfl.sync` / `vote.sync` (PTX
//!   ISA, "Parallel Synchronization and Communication Instructions"); its
//!   lanes run next, so a warp's shuffles follow each other while its
//!   coroutines are still in cache;
//! - when no thread can run and none waits at a warp collective, every
//!   thread that waits at `sync_threads` (PTX `bar.sync 0`; threads that
//!   returned count as arrived, as on current GPUs);
//! - otherwise the block can never finish on a GPU either (a barrier or warp
//!   collective in divergent code): the launch fails with
//!   [`Error::Divergence`](crate::Error) instead of hanging (`deadlock`).
//!
//! A worker keeps its executor, with the coroutine stacks and the block's
//! bookkeeping, from one launch to the next ([`Executor::checkout`]).
//! Shared memory of the block lives in an arena owned by the executor;
//! arenas are never freed (they are reused by later blocks and launches),
//! so the `&'static` references that [`shared_array!`](crate::shared_array)
//! hands out stay valid memory for the life of the process.

use core::cell::{Cell, RefCell};
use std::boxed::Box;
use std::string::ToString;
use std::vec::Vec;

use corosensei::stack::Stack as _;
use corosensei::{Coroutine, CoroutineResult, Yielder};

use super::arena::Arena;
use super::awaits;
use super::collective::{WarpOp, WARP};
use super::deadlock;
use super::failure::{take_panic, Abort, BlockFailure, Divergent};
use super::stack::ThreadStack;
use super::stack_guard;
use super::state::{Block, Paused, Replay, Wait, BLOCK, NO_REWIND, NO_RUNNER, PHASE_END, PRIVATE, YIELDER};
use crate::device::dim::Dim3;
use crate::device::thread::{ThreadCtx, CTX};

/// A runner; it yields the linear index of the thread that waits.
type Runner = Coroutine<(), u32, (), ThreadStack>;

std::thread_local! {
    /// The executor this OS thread keeps between launches.
    static KEPT: RefCell<Option<Executor>> = const { RefCell::new(None) };
}

/// The scheduler's own bookkeeping of the block it runs.
#[derive(Default)]
struct Queues {
    runners: Vec<Option<Runner>>,
    /// What the stack-overflow handler needs to know about each runner.
    guards: Vec<stack_guard::Armed>,
    /// Runners to resume, the next one last.
    ready: Vec<u32>,
    /// The runner of each thread while the thread waits on it, else
    /// `NO_RUNNER`.
    runner_of: Vec<u32>,
    /// Threads waiting at `sync_threads`, in the order they arrived.
    barrier: Vec<u32>,
    /// Per warp, the lanes waiting at a collective.
    warp_waiting: Vec<u32>,
    /// Lanes of all warps waiting at a collective.
    at_warp: usize,
    /// The runner that drives the block's phases while it waits for the
    /// current phase's other runners (`phases`).
    phase_waiter: Option<u32>,
}

/// One worker's executor: reusable block state and coroutine stacks.
pub(crate) struct Executor {
    block: Box<Block>,
    q: Queues,
    stacks: Vec<ThreadStack>,
    /// Stacks made so far (each gets the next color).
    made: usize,
    stack_size: usize,
}

impl Executor {
    /// The executor this OS thread kept from its last launch (see
    /// [`checkin`](Self::checkin)), or a new one, ready for blocks of
    /// `block_dim` threads in a grid of `grid_dim`; `stack_size` bytes of
    /// stack per coroutine, `shared_limit` bytes of shared memory per block.
    pub(crate) fn checkout(block_dim: Dim3, grid_dim: Dim3, stack_size: usize, shared_limit: usize) -> Executor {
        let kept = KEPT.try_with(|k| k.borrow_mut().take()).ok().flatten();
        let mut e = kept.filter(|e| e.stack_size == stack_size).unwrap_or_else(|| Executor::new(stack_size));
        e.prepare(block_dim, grid_dim, shared_limit);
        e
    }

    /// Keeps the executor, its stacks and shared memory for this OS
    /// thread's next launch.
    pub(crate) fn checkin(self) {
        let _ = KEPT.try_with(|k| *k.borrow_mut() = Some(self));
    }

    fn new(stack_size: usize) -> Executor {
        let block = Box::new(Block {
            n: 0,
            ctx: ThreadCtx::SINGLE,
            wait: Vec::new(),
            input: Vec::new(),
            output: Vec::new(),
            key: Vec::new(),
            uniform: Vec::new(),
            lanes: Vec::new(),
            reduced: Vec::new(),
            reduced_state: Vec::new(),
            next: Cell::new(0),
            sequencer: Cell::new(NO_RUNNER),
            current: Cell::new(NO_RUNNER),
            limit: Cell::new(0),
            panic: RefCell::new(None),
            unwinding: Cell::new(false),
            dirty: Cell::new(false),
            phases: Cell::new(None),
            phase_pending: Cell::new(0),
            phase_stepped: Cell::new(0),
            later_pass: Cell::new(false),
            paused: Cell::new(Paused::Barrier),
            phase_warp: Cell::new(0),
            warp_arrived: Vec::new(),
            replay: Cell::new(Replay::NONE),
            rewind: Cell::new(NO_REWIND),
            suspended: Cell::new(false),
            lockstep: RefCell::new(Vec::new()),
            arena: RefCell::new(Arena::checkout()),
            shared_limit: 0,
            sites: Default::default(),
        });
        Executor { block, q: Queues::default(), stacks: Vec::new(), made: 0, stack_size }
    }

    fn prepare(&mut self, block_dim: Dim3, grid_dim: Dim3, shared_limit: usize) {
        let b = &mut *self.block;
        let n = block_dim.volume() as u32;
        b.n = n;
        b.ctx = ThreadCtx { thread: Dim3::new(0, 0, 0), block: Dim3::new(0, 0, 0), block_dim, grid_dim };
        b.shared_limit = shared_limit;
        let n = n as usize;
        b.wait.resize_with(n, || Cell::new(Wait::Done));
        b.input.resize_with(n, || Cell::new((WarpOp::Sync, 0, 0)));
        b.output.resize_with(n, || Cell::new(0));
        b.key.resize_with(n, || Cell::new(0));
        b.lanes.resize_with(n, || Cell::new(0));
        b.reduced.resize_with(n, || Cell::new(0));
        b.reduced_state.resize_with(n.div_ceil(WARP as usize), || Cell::new(0));
        b.uniform.resize_with(n.div_ceil(WARP as usize), || Cell::new(0));
        b.warp_arrived.resize_with(n.div_ceil(WARP as usize), || Cell::new(0));
        self.q.runner_of.resize(n, NO_RUNNER);
        self.q.warp_waiting.resize(n.div_ceil(WARP as usize), 0);
    }

    /// A coroutine stack: a used one, or a new one (which the system may
    /// refuse).
    fn stack(&mut self) -> std::io::Result<ThreadStack> {
        if let Some(s) = self.stacks.pop() {
            return Ok(s);
        }
        self.made += 1;
        ThreadStack::new(self.stack_size, self.made)
    }

    /// Runs every thread of block `block_idx` (see the module docs). `body`
    /// runs the threads of the calling runner: it is
    /// [`run_threads`](super::threads::run_threads) over the kernel's body.
    pub(crate) fn run_block(
        &mut self,
        block_idx: Dim3,
        shared_mem_bytes: u32,
        body: &(dyn Fn() + Sync),
    ) -> Result<(), BlockFailure> {
        {
            // Reset. `Box<Block>` does not move, so the raw pointer taken
            // below stays valid while the block runs.
            let b = &mut *self.block;
            b.ctx.block = block_idx;
            b.next.set(0);
            b.sequencer.set(NO_RUNNER);
            b.phases.set(None);
            b.phase_stepped.set(0);
            b.rewind.set(NO_REWIND);
            *b.panic.get_mut() = None;
            if b.dirty.replace(false) {
                b.wait.iter().for_each(|w| w.set(Wait::Done));
                b.warp_arrived.iter().for_each(|w| w.set(0));
                self.q.runner_of.fill(NO_RUNNER);
            }
            let mut arena = b.arena.borrow_mut();
            arena.reset();
            b.sites.iter().for_each(|s| s.set((0, 0, 0)));
            if shared_mem_bytes > 0 {
                let p = arena.alloc(shared_mem_bytes as usize, 16);
                arena.dynamic = (p, shared_mem_bytes as usize);
            }
            PRIVATE.with(|c| c.set(arena.first_chunk()));
        }
        let block: *const Block = &*self.block;
        BLOCK.with(|c| c.set(block));
        CTX.with(|c| c.set(self.block.ctx));
        let result = self.schedule(block, body);
        // A thread that panicked ended there and the others ran on
        // (`threads::stopped`); the block reports its first panic, also when
        // it then failed otherwise (the other threads of a warp whose lane
        // panicked wait at its next collective for ever), except when its
        // shared memory exceeds the limit, which a GPU reports before the
        // kernel runs.
        let result = match (result, self.block.panic.get_mut().take()) {
            (r @ Err(BlockFailure::Aborted { abort: Abort::SharedMemory { .. }, .. }), _) | (r, None) => r,
            (_, Some((thread, record))) => Err(BlockFailure::Panic { thread, record }),
        };
        BLOCK.with(|c| c.set(core::ptr::null()));
        YIELDER.with(|c| c.set(core::ptr::null()));
        PRIVATE.with(|c| c.set((0, 0)));
        result
    }

    fn schedule(&mut self, block: *const Block, body: &(dyn Fn() + Sync)) -> Result<(), BlockFailure> {
        // SAFETY: `block` points into `self.block`, alive and unmoved for the
        // whole call; only shared references are made from it (state is in
        // `Cell`s / `RefCell`s, used by this OS thread only).
        let b = unsafe { &*block };
        let q = &mut self.q;
        q.runners.clear();
        q.guards.clear();
        q.ready.clear();
        q.barrier.clear();
        q.warp_waiting.fill(0);
        q.at_warp = 0;
        q.phase_waiter = None;
        let outcome = loop {
            let step = match self.next_runner(b, body) {
                Ok(Some(rid)) => self.resume(b, rid),
                Ok(None) => break Ok(()),
                Err(failure) => Err(failure),
            };
            if let Err(failure) = step {
                b.dirty.set(true);
                break Err(failure);
            }
        };
        // Unwind runners still suspended (only after a failure), with the
        // block still installed so that their drops see a sane state, and
        // `unwinding` telling `threads::stopped` that this is no panic;
        // the last started first: a runner that drives phases (`phases`)
        // owns the futures that the runners started after it poll.
        b.unwinding.set(true);
        for co in self.q.runners.iter_mut().rev().flatten() {
            if !co.done() {
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| co.force_unwind()));
            }
        }
        b.unwinding.set(false);
        for co in self.q.runners.drain(..).flatten() {
            if co.done() {
                self.stacks.push(co.into_stack());
            }
        }
        outcome
    }

    /// The runner to resume next: a ready one, else a new one for the
    /// threads not started yet, else the threads waiting at `sync_threads`
    /// once nothing else can run; `None` when every thread has returned.
    fn next_runner(&mut self, b: &Block, body: &(dyn Fn() + Sync)) -> Result<Option<u32>, BlockFailure> {
        loop {
            if let Some(rid) = self.q.ready.pop() {
                return Ok(Some(rid));
            }
            if b.next.get() < b.n {
                return self.start_runner(b, body).map(Some);
            }
            if b.phase_stepped.get() > 0 {
                // Threads paused at a grid-stride loop's step while others
                // wait on coroutines (for them, maybe): a runner polls
                // them on, their steps no longer pausing (`phases`).
                b.phase_stepped.set(0);
                b.later_pass.set(true);
                b.next.set(0);
                continue;
            }
            if self.q.at_warp > 0 {
                if b.phase_warp.get() > 0 && self.meet_seen_and_hidden(b)? {
                    continue;
                }
                return Err(BlockFailure::Divergence { reason: deadlock::diagnose(b) });
            }
            if self.q.barrier.is_empty() {
                // The runner that drives the phases, if it waits, once no
                // other can run: the phase is over.
                return Ok(self.q.phase_waiter.take());
            }
            if b.phases.get().is_some() && b.phase_warp.get() > 0 {
                // Threads wait at warp collectives of the body while others
                // wait at a barrier the macro does not see (`awaits`).
                return Err(BlockFailure::Divergence { reason: deadlock::diagnose(b) });
            }
            if b.phases.get().is_some() && b.phase_pending.get() > 0 {
                return Err(BlockFailure::Divergence {
                    reason: deadlock::mixed_barriers(self.q.barrier.len(), b.phase_pending.get()),
                });
            }
            // In the order they arrived.
            let q = &mut self.q;
            for &t in q.barrier.iter().rev() {
                b.wait[t as usize].set(Wait::Running);
                q.ready.push(core::mem::replace(&mut q.runner_of[t as usize], NO_RUNNER));
            }
            q.barrier.clear();
        }
    }

    /// A runner for the threads from `b.next` on; it holds the sequence.
    fn start_runner(&mut self, b: &Block, body: &(dyn Fn() + Sync)) -> Result<u32, BlockFailure> {
        let stack = self.stack().map_err(|e| BlockFailure::NoStack { error: e.to_string() })?;
        let (limit, base) = (stack.limit().get(), stack.base().get());
        let body: *const (dyn Fn() + Sync + '_) = body;
        // SAFETY (of the transmute): only the lifetime is erased; the
        // coroutine is finished or dropped (unwound) before `schedule`
        // returns, while `body` is alive.
        let body: *const (dyn Fn() + Sync + 'static) = unsafe { core::mem::transmute(body) };
        let f = move |y: &Yielder<(), u32>, ()| {
            YIELDER.with(|c| c.set(y));
            // SAFETY: `body` outlives the coroutine (see above).
            unsafe { (*body)() }
        };
        // SAFETY: the closure borrows nothing (`body` is a raw pointer,
        // valid as said above).
        let co = unsafe { Runner::with_stack_unchecked(stack, f) };
        let rid = self.q.runners.len() as u32;
        self.q.guards.push(stack_guard::Armed::new(co.trap_handler(), limit, base, self.stack_size));
        self.q.runners.push(Some(co));
        b.sequencer.set(rid);
        Ok(rid)
    }

    /// Resumes runner `rid` until its thread waits or its threads return.
    fn resume(&mut self, b: &Block, rid: u32) -> Result<(), BlockFailure> {
        b.current.set(rid);
        b.limit.set(if b.sequencer.get() == rid { b.n } else { 0 });
        let co = self.q.runners[rid as usize].as_mut().expect("a ready runner exists");
        // SAFETY: `guards` is not changed while the runner runs (only
        // `start_runner`, between resumes, adds to it).
        unsafe { stack_guard::arm(&self.q.guards[rid as usize]) };
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| co.resume(())));
        stack_guard::disarm();
        if stack_guard::take_tripped() {
            // The runner hit its guard page and was made to return (its
            // frames abandoned: see `stack_guard`); the stack is intact and
            // can be used again.
            let thread = CTX.with(|c| c.get()).thread;
            if let Some(co) = self.q.runners[rid as usize].take().filter(|co| co.done()) {
                self.stacks.push(co.into_stack());
            }
            return Err(BlockFailure::Aborted { abort: Abort::StackOverflow, thread });
        }
        match r {
            Ok(CoroutineResult::Yield(t)) => {
                if b.sequencer.get() == rid {
                    b.sequencer.set(NO_RUNNER);
                }
                if t == PHASE_END {
                    self.q.phase_waiter = Some(rid);
                    return Ok(());
                }
                self.waits(b, t as usize, rid)
            }
            Ok(CoroutineResult::Return(())) => {
                // A runner returns when its threads are done: it lost the
                // sequence, or it ran the block's last thread.
                assert!(
                    b.sequencer.get() != rid || b.next.get() >= b.n,
                    "offload: bug: a host kernel body ran one thread, not the runner's (hostsim::threads::run_threads)"
                );
                let co = self.q.runners[rid as usize].take().expect("runner");
                self.stacks.push(co.into_stack());
                Ok(())
            }
            Err(payload) => {
                // The runtime stopped the thread (`Abort`): a kernel's panic
                // ends its thread only and is caught in the runner's loop
                // (`threads::stopped`).
                let thread = CTX.with(|c| c.get()).thread;
                // The panicking runner is finished; drop it (its stack is
                // not reused: it may be mid-frame).
                self.q.runners[rid as usize] = None;
                Err(match payload.downcast::<Abort>() {
                    Ok(abort) => BlockFailure::Aborted { abort: *abort, thread },
                    Err(payload) => match payload.downcast::<Divergent>() {
                        Ok(d) => BlockFailure::Divergence { reason: d.0 },
                        Err(_) => BlockFailure::Panic { thread, record: take_panic() },
                    },
                })
            }
        }
    }

    /// Thread `t` of runner `rid` waits (`entry` set its `wait`): records
    /// it, and releases its warp if it was the warp's last lane to arrive.
    fn waits(&mut self, b: &Block, t: usize, rid: u32) -> Result<(), BlockFailure> {
        let q = &mut self.q;
        q.runner_of[t] = rid;
        if b.wait[t].get() == Wait::Barrier {
            q.barrier.push(t as u32);
            return Ok(());
        }
        q.at_warp += 1;
        let w = t / WARP as usize;
        q.warp_waiting[w] += 1;
        if q.warp_waiting[w] as usize == b.lanes(w).len() {
            self.release(b, w)?;
        }
        Ok(())
    }

    /// Releases warp `w`, every lane of which waits at a warp collective,
    /// on a coroutine or (a block in phases, `awaits`) at one of the body:
    /// the former run next, lane 0 first, the latter in the phase's next
    /// pass.
    fn release(&mut self, b: &Block, w: usize) -> Result<(), BlockFailure> {
        let lanes = b.lanes(w);
        awaits::results(b, w, lanes.clone()).map_err(|reason| BlockFailure::Divergence { reason })?;
        let q = &mut self.q;
        let mut on_coroutines = 0;
        for t in lanes.clone().rev() {
            if q.runner_of[t] != NO_RUNNER {
                q.ready.push(core::mem::replace(&mut q.runner_of[t], NO_RUNNER));
                on_coroutines += 1;
            }
            b.wait[t].set(Wait::Running);
        }
        awaits::released_in_body(b, w);
        q.warp_waiting[w] = 0;
        q.at_warp -= on_coroutines;
        Ok(())
    }

    /// Releases a warp whose lanes all wait at collectives, some at one of
    /// the body (`awaits`), the others at one the macro does not see:
    /// whether there was one (no runner can run when this is called).
    fn meet_seen_and_hidden(&mut self, b: &Block) -> Result<bool, BlockFailure> {
        let warps = (b.n as usize).div_ceil(WARP as usize);
        let Some(w) = (0..warps).find(|&w| {
            let waiting = self.q.warp_waiting[w] + b.warp_arrived[w].get();
            self.q.warp_waiting[w] > 0 && waiting as usize == b.lanes(w).len()
        }) else {
            return Ok(false);
        };
        self.release(b, w)?;
        Ok(true)
    }
}

impl Drop for Executor {
    fn drop(&mut self) {
        core::mem::replace(&mut *self.block.arena.borrow_mut(), Arena::empty()).give_back();
    }
}
