//! The host fallback's model of one thread block: the GPU threads of a
//! block as stackful coroutines on one worker thread, switched only where
//! CUDA threads wait for each other (`sync_threads`, warp collectives).
//!
//! # Execution model
//!
//! A *runner* is a coroutine that executes the block's threads one after
//! another, in linear thread order (x fastest), each to completion. When a
//! thread reaches a synchronization point it suspends its runner; the
//! scheduler then starts a new runner for the remaining threads, which is
//! why a kernel without barriers or warp collectives costs one coroutine per
//! block and runs as fast as a plain loop, while a kernel with them gets one
//! coroutine per thread, created only when the previous one blocks.
//!
//! When every thread of the block is blocked or finished, the scheduler
//! releases what can proceed:
//! - a warp whose existing lanes (threads `32w .. 32w+31` that exist in the
//!   block) all wait at the same warp collective: the collective's results
//!   are computed from all lanes' inputs at once, which gives the lockstep
//!   semantics of `shfl.sync` / `vote.sync` (PTX ISA, "Parallel
//!   Synchronization and Communication Instructions");
//! - otherwise, if every thread that has not returned waits at
//!   `sync_threads`, all of them (PTX `bar.sync 0`; threads that returned
//!   count as arrived, as on current GPUs);
//! - otherwise the block can never finish on a GPU either (a barrier or warp
//!   collective in divergent code): the launch fails with
//!   [`Error::Divergence`](crate::Error) instead of hanging.
//!
//! Shared memory of the block lives in an arena owned by the worker; arenas
//! are never freed (they are reused by later blocks and launches), so the
//! `&'static` references that [`shared_array!`](crate::shared_array) hands
//! out stay valid memory for the life of the process.

use core::cell::{Cell, RefCell};
use std::boxed::Box;
use std::collections::VecDeque;
use std::format;
use std::string::{String, ToString};
use std::vec::Vec;

use corosensei::stack::{DefaultStack, Stack as _};
use corosensei::{Coroutine, CoroutineResult, Yielder};

use super::arena::Arena;
use super::collective::{warp_result, WarpOp, WARP};
use super::failure::{Abort, BlockFailure};
use super::stack_guard;
use crate::device::dim::Dim3;
use crate::device::thread::{ThreadCtx, CTX};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Wait {
    Running,
    Barrier,
    Warp,
    Done,
}

/// The state of the block a worker is executing.
pub(crate) struct Block {
    pub(super) n: u32,
    pub(super) ctx: ThreadCtx,
    pub(super) wait: Vec<Cell<Wait>>,
    pub(super) input: Vec<Cell<(WarpOp, u64, u32)>>,
    pub(super) output: Vec<Cell<u64>>,
    pub(super) runner_of: Vec<Cell<u32>>,
    pub(super) next: Cell<u32>,
    pub(super) sequencer: Cell<u32>,
    /// The runner being resumed.
    pub(super) current: Cell<u32>,
    /// A failed block left `wait` entries other than `Done`.
    pub(super) dirty: Cell<bool>,
    pub(super) arena: RefCell<Arena>,
    /// Bytes of shared memory, static and dynamic, one block may use.
    pub(super) shared_limit: usize,
}

const NO_RUNNER: u32 = u32::MAX;

std::thread_local! {
    pub(super) static BLOCK: Cell<*const Block> = const { Cell::new(core::ptr::null()) };
    pub(super) static YIELDER: Cell<*const Yielder<(), ()>> = const { Cell::new(core::ptr::null()) };
}

fn unlinear(i: u64, d: Dim3) -> Dim3 {
    let x = (i % d.x as u64) as u32;
    let y = ((i / d.x as u64) % d.y as u64) as u32;
    let z = (i / (d.x as u64 * d.y as u64)) as u32;
    Dim3 { x, y, z }
}

pub(super) fn linear(t: Dim3, d: Dim3) -> u32 {
    t.x + d.x * (t.y + d.y * t.z)
}

type Runner = Coroutine<(), (), (), DefaultStack>;

/// One worker's executor: reusable block state and coroutine stacks.
pub(crate) struct Executor {
    block: Box<Block>,
    stacks: Vec<DefaultStack>,
    stack_size: usize,
}

impl Executor {
    /// An executor for blocks of `block_dim` threads; `stack_size` bytes of
    /// stack per coroutine, `shared_limit` bytes of shared memory per block.
    pub(crate) fn new(block_dim: Dim3, grid_dim: Dim3, stack_size: usize, shared_limit: usize) -> Executor {
        let n = block_dim.volume() as u32;
        let block = Box::new(Block {
            n,
            ctx: ThreadCtx { thread: Dim3::new(0, 0, 0), block: Dim3::new(0, 0, 0), block_dim, grid_dim },
            wait: (0..n).map(|_| Cell::new(Wait::Done)).collect(),
            input: (0..n).map(|_| Cell::new((WarpOp::Sync, 0, 0))).collect(),
            output: (0..n).map(|_| Cell::new(0)).collect(),
            runner_of: (0..n).map(|_| Cell::new(NO_RUNNER)).collect(),
            next: Cell::new(0),
            sequencer: Cell::new(NO_RUNNER),
            current: Cell::new(NO_RUNNER),
            dirty: Cell::new(false),
            arena: RefCell::new(Arena::checkout()),
            shared_limit,
        });
        Executor { block, stacks: Vec::new(), stack_size }
    }

    /// A coroutine stack: a used one, or a new one (which the system may
    /// refuse).
    fn stack(&mut self) -> std::io::Result<DefaultStack> {
        match self.stacks.pop() {
            Some(s) => Ok(s),
            None => DefaultStack::new(self.stack_size),
        }
    }

    /// Runs every thread of block `block_idx` (see the module docs).
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
            if b.dirty.replace(false) {
                b.wait.iter().for_each(|w| w.set(Wait::Done));
            }
            let mut arena = b.arena.borrow_mut();
            arena.reset();
            if shared_mem_bytes > 0 {
                let p = arena.alloc(shared_mem_bytes as usize, 16);
                arena.dynamic = (p, shared_mem_bytes as usize);
            }
        }
        let block: *const Block = &*self.block;
        BLOCK.with(|c| c.set(block));
        let result = self.schedule(block, body);
        BLOCK.with(|c| c.set(core::ptr::null()));
        YIELDER.with(|c| c.set(core::ptr::null()));
        result
    }

    fn schedule(&mut self, block: *const Block, body: &(dyn Fn() + Sync)) -> Result<(), BlockFailure> {
        // SAFETY: `block` points into `self.block`, alive and unmoved for the
        // whole call; only shared references are made from it (state is in
        // `Cell`s / `RefCell`s, used by this OS thread only).
        let b = unsafe { &*block };
        let mut runners: Vec<Option<Runner>> = Vec::new();
        // What the stack-overflow handler needs to know about each runner.
        let mut guards: Vec<stack_guard::Armed> = Vec::new();
        let mut ready: VecDeque<u32> = VecDeque::new();
        let outcome = loop {
            let rid = if let Some(r) = ready.pop_front() {
                r
            } else if b.next.get() < b.n {
                let rid = runners.len() as u32;
                let stack = match self.stack() {
                    Ok(s) => s,
                    Err(e) => {
                        b.dirty.set(true);
                        break Err(BlockFailure::NoStack { error: e.to_string() });
                    }
                };
                let (limit, base) = (stack.limit().get(), stack.base().get());
                let body_ptr: *const (dyn Fn() + Sync) = body;
                let f = move |y: &Yielder<(), ()>, ()| {
                    YIELDER.with(|c| c.set(y));
                    // SAFETY: see `schedule`; the coroutine is finished or
                    // dropped before `schedule` returns.
                    let b = unsafe { &*block };
                    // Fast path: threads that never wait cost no bookkeeping;
                    // their `wait` entry stays `Done` (the state between
                    // blocks). A thread that suspended lost this runner the
                    // sequence (`sequencer`), so the runner ends with it.
                    loop {
                        let t = b.next.get();
                        if t >= b.n {
                            return;
                        }
                        b.next.set(t + 1);
                        let ctx = ThreadCtx { thread: unlinear(t as u64, b.ctx.block_dim), ..b.ctx };
                        CTX.with(|c| c.set(ctx));
                        // SAFETY: `body` outlives the coroutine (see above).
                        unsafe { (*body_ptr)() };
                        if b.sequencer.get() != rid {
                            b.wait[t as usize].set(Wait::Done);
                            return;
                        }
                    }
                };
                // SAFETY: everything the closure borrows (`block`, `body`)
                // outlives the coroutine: every coroutine is run to
                // completion or dropped (which unwinds it) before this
                // function returns.
                let co = unsafe { Runner::with_stack_unchecked(stack, f) };
                guards.push(stack_guard::Armed::new(co.trap_handler(), limit, base, self.stack_size));
                runners.push(Some(co));
                b.sequencer.set(rid);
                rid
            } else {
                match self.release(b) {
                    Ok(Some(released)) => {
                        ready.extend(released);
                        continue;
                    }
                    Ok(None) => break Ok(()),
                    Err(reason) => {
                        b.dirty.set(true);
                        break Err(BlockFailure::Divergence { reason });
                    }
                }
            };
            b.current.set(rid);
            let co = runners[rid as usize].as_mut().expect("a ready runner exists");
            stack_guard::arm(guards[rid as usize]);
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| co.resume(())));
            stack_guard::disarm();
            if stack_guard::take_tripped() {
                // The runner hit its guard page and was made to return (its
                // frames abandoned: see `stack_guard`); the stack is intact
                // and can be used again.
                let thread = CTX.with(|c| c.get()).thread;
                b.dirty.set(true);
                if let Some(co) = runners[rid as usize].take().filter(|co| co.done()) {
                    self.stacks.push(co.into_stack());
                }
                break Err(BlockFailure::Aborted { abort: Abort::StackOverflow, thread });
            }
            match r {
                Ok(CoroutineResult::Yield(())) => {
                    if b.sequencer.get() == rid {
                        b.sequencer.set(NO_RUNNER);
                    }
                }
                Ok(CoroutineResult::Return(())) => {
                    let co = runners[rid as usize].take().expect("runner");
                    self.stacks.push(co.into_stack());
                }
                Err(payload) => {
                    let thread = CTX.with(|c| c.get()).thread;
                    b.dirty.set(true);
                    // The panicking runner is finished; drop it (its stack
                    // is not reused: it may be mid-frame).
                    runners[rid as usize] = None;
                    break Err(match payload.downcast::<Abort>() {
                        Ok(abort) => BlockFailure::Aborted { abort: *abort, thread },
                        Err(_) => BlockFailure::Panic { thread },
                    });
                }
            }
        };
        // Unwind runners still suspended (only after a failure), with the
        // block still installed so that their drops see a sane state.
        for co in runners.iter_mut().flatten() {
            if !co.done() {
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| co.force_unwind()));
            }
        }
        for co in runners.into_iter().flatten() {
            if co.done() {
                self.stacks.push(co.into_stack());
            }
        }
        outcome
    }

    /// Everything is blocked or done: decides what proceeds. `Ok(None)`: all
    /// threads returned.
    fn release(&self, b: &Block) -> Result<Option<Vec<u32>>, String> {
        let n = b.n as usize;
        let mut released = Vec::new();
        let mut at_barrier = 0usize;
        let mut at_warp = 0usize;
        let mut done = 0usize;
        let mut inputs: Vec<(u64, u32)> = Vec::with_capacity(WARP as usize);
        for w in 0..n.div_ceil(WARP as usize) {
            let lanes = (w * WARP as usize)..n.min((w + 1) * WARP as usize);
            let waiting = lanes.clone().filter(|&t| b.wait[t].get() == Wait::Warp).count();
            at_barrier += lanes.clone().filter(|&t| b.wait[t].get() == Wait::Barrier).count();
            done += lanes.clone().filter(|&t| b.wait[t].get() == Wait::Done).count();
            at_warp += waiting;
            if waiting == 0 || waiting != lanes.len() {
                continue;
            }
            let op = b.input[lanes.start].get().0;
            if let Some(t) = lanes.clone().find(|&t| b.input[t].get().0 != op) {
                return Err(format!(
                    "lanes of warp {w} reached different warp collectives: lane 0 {} and lane {} {}",
                    op.name(),
                    t - lanes.start,
                    b.input[t].get().0.name()
                ));
            }
            inputs.clear();
            inputs.extend(lanes.clone().map(|t| {
                let (_, v, a) = b.input[t].get();
                (v, a)
            }));
            for t in lanes.clone() {
                b.output[t].set(warp_result(op, &inputs, t - lanes.start));
                b.wait[t].set(Wait::Running);
                released.push(b.runner_of[t].get());
            }
        }
        if !released.is_empty() {
            return Ok(Some(released));
        }
        if done == n {
            return Ok(None);
        }
        if at_warp == 0 && at_barrier > 0 {
            for t in 0..n {
                if b.wait[t].get() == Wait::Barrier {
                    b.wait[t].set(Wait::Running);
                    released.push(b.runner_of[t].get());
                }
            }
            return Ok(Some(released));
        }
        // Deadlock: describe the first incomplete warp collective.
        for w in 0..n.div_ceil(WARP as usize) {
            let lanes = (w * WARP as usize)..n.min((w + 1) * WARP as usize);
            let waiting: Vec<usize> =
                lanes.clone().filter(|&t| b.wait[t].get() == Wait::Warp).map(|t| t - lanes.start).collect();
            if waiting.is_empty() || waiting.len() == lanes.len() {
                continue;
            }
            let op = b.input[lanes.start + waiting[0]].get().0;
            // The same text as a GPU thread writes (`divergence`).
            let mask = |want: Wait| {
                lanes.clone().filter(|&t| b.wait[t].get() == want).fold(0u32, |m, t| m | 1 << (t - lanes.start))
            };
            let mut buf = [0u8; 512];
            let mut text = crate::report::divergence::Bytes { buf: &mut buf, len: 0 };
            crate::report::divergence::write_reason(
                &mut text,
                op.name(),
                w as u32,
                mask(Wait::Warp),
                mask(Wait::Done),
                mask(Wait::Barrier),
            );
            let n = text.len;
            return Err(String::from_utf8_lossy(&buf[..n]).into_owned());
        }
        Err(format!("{at_barrier} thread(s) wait at sync_threads while {at_warp} wait at warp collectives; the block cannot proceed"))
    }
}

impl Drop for Executor {
    fn drop(&mut self) {
        core::mem::replace(&mut *self.block.arena.borrow_mut(), Arena::empty()).give_back();
    }
}
