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
use std::string::String;
use std::sync::Mutex;
use std::vec::Vec;

use corosensei::stack::{DefaultStack, Stack as _};
use corosensei::{Coroutine, CoroutineResult, Yielder};

use crate::stack_guard;
use crate::thread::{ThreadCtx, CTX};
use crate::Dim3;

/// Threads per warp (CUDA `warpSize`).
pub(crate) const WARP: u32 = 32;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Wait {
    Running,
    Barrier,
    Warp,
    Done,
}

/// A warp collective; `arg` is the lane / offset / mask operand.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum WarpOp {
    ShflIdx,
    ShflUp,
    ShflDown,
    ShflXor,
    All,
    Any,
    Ballot,
    Sync,
}

impl WarpOp {
    fn name(self) -> &'static str {
        use crate::warp::names;
        match self {
            WarpOp::ShflIdx => names::SHUFFLE_IDX,
            WarpOp::ShflUp => names::SHUFFLE_UP,
            WarpOp::ShflDown => names::SHUFFLE_DOWN,
            WarpOp::ShflXor => names::SHUFFLE_XOR,
            WarpOp::All => names::ALL,
            WarpOp::Any => names::ANY,
            WarpOp::Ballot => names::BALLOT,
            WarpOp::Sync => names::SYNC_WARP,
        }
    }
}

/// Applies a warp collective to the inputs of the `m` existing lanes of one
/// warp. `inputs[l] = (value, arg)`; returns lane `l`'s result. A source
/// lane outside `0..m` (possible only in the last, partial warp of a block)
/// yields the lane's own value; on the GPU that value is undefined.
pub(crate) fn warp_result(op: WarpOp, inputs: &[(u64, u32)], l: usize) -> u64 {
    let m = inputs.len() as u64;
    let (own, arg) = inputs[l];
    let lane = l as u64;
    let pick = |j: Option<u64>| match j {
        Some(j) if j < m && j < WARP as u64 => inputs[j as usize].0,
        _ => own,
    };
    match op {
        WarpOp::ShflIdx => pick(Some(arg as u64 & 31)),
        WarpOp::ShflUp => pick(lane.checked_sub(arg as u64)),
        WarpOp::ShflDown => pick(Some(lane + arg as u64)),
        WarpOp::ShflXor => pick(Some(lane ^ arg as u64)),
        WarpOp::All => inputs.iter().all(|&(v, _)| v != 0) as u64,
        WarpOp::Any => inputs.iter().any(|&(v, _)| v != 0) as u64,
        WarpOp::Ballot => {
            inputs.iter().enumerate().filter(|(_, &(v, _))| v != 0).fold(0u64, |b, (i, _)| b | (1u64 << i))
        }
        WarpOp::Sync => 0,
    }
}

// ---------------------------------------------------------------------------
// Shared-memory arena

/// Bump allocator for one block's shared memory. Chunks are leaked on
/// purpose (see the module docs) and reused.
pub(crate) struct Arena {
    chunks: Vec<(*mut u8, usize)>,
    chunk: usize,
    offset: usize,
    sites: Vec<(usize, *mut u8, usize)>,
    dynamic: (*mut u8, usize),
    /// Bytes of the `sites` (static shared memory) of the current block.
    static_bytes: usize,
}

// SAFETY: the arena only hands out pointers into leaked chunks; it is used
// by one worker at a time (checked out of `ARENAS` under its mutex).
unsafe impl Send for Arena {}

static ARENAS: Mutex<Vec<Arena>> = Mutex::new(Vec::new());

impl Arena {
    fn checkout() -> Arena {
        let mut pool = ARENAS.lock().unwrap_or_else(|e| e.into_inner());
        pool.pop().unwrap_or(Arena {
            chunks: Vec::new(),
            chunk: 0,
            offset: 0,
            sites: Vec::new(),
            dynamic: (core::ptr::null_mut(), 0),
            static_bytes: 0,
        })
    }

    fn give_back(self) {
        ARENAS.lock().unwrap_or_else(|e| e.into_inner()).push(self);
    }

    fn reset(&mut self) {
        self.chunk = 0;
        self.offset = 0;
        self.sites.clear();
        self.dynamic = (core::ptr::null_mut(), 0);
        self.static_bytes = 0;
    }

    fn alloc(&mut self, size: usize, align: usize) -> *mut u8 {
        let align = align.max(16);
        loop {
            if let Some(&(base, cap)) = self.chunks.get(self.chunk) {
                let start = (base as usize + self.offset).next_multiple_of(align) - base as usize;
                if start + size <= cap {
                    self.offset = start + size;
                    // SAFETY: `start + size <= cap`, inside the chunk.
                    return unsafe { base.add(start) };
                }
                self.chunk += 1;
                self.offset = 0;
                continue;
            }
            let cap = (size + align).max(64 * 1024);
            let layout = std::alloc::Layout::from_size_align(cap, 16).expect("shared-memory chunk layout");
            // SAFETY: `cap > 0`.
            let p = unsafe { std::alloc::alloc_zeroed(layout) };
            if p.is_null() {
                std::alloc::handle_alloc_error(layout);
            }
            self.chunks.push((p, cap));
        }
    }
}

// ---------------------------------------------------------------------------
// Block state

/// The state of the block a worker is executing.
pub(crate) struct Block {
    n: u32,
    ctx: ThreadCtx,
    wait: Vec<Cell<Wait>>,
    input: Vec<Cell<(WarpOp, u64, u32)>>,
    output: Vec<Cell<u64>>,
    runner_of: Vec<Cell<u32>>,
    next: Cell<u32>,
    sequencer: Cell<u32>,
    /// The runner being resumed.
    current: Cell<u32>,
    /// A failed block left `wait` entries other than `Done`.
    dirty: Cell<bool>,
    arena: RefCell<Arena>,
    /// Bytes of shared memory, static and dynamic, one block may use.
    shared_limit: usize,
}

const NO_RUNNER: u32 = u32::MAX;

std::thread_local! {
    static BLOCK: Cell<*const Block> = const { Cell::new(core::ptr::null()) };
    static YIELDER: Cell<*const Yielder<(), ()>> = const { Cell::new(core::ptr::null()) };
}

/// Why a block did not complete.
pub(crate) enum BlockFailure {
    /// A thread panicked; the panic hook recorded the message. `thread` is
    /// `threadIdx` of the panicking thread.
    Panic { thread: Dim3 },
    /// No thread can make progress (barrier or warp collective in divergent
    /// code); the text says who waits where.
    Divergence { reason: String },
    /// The runtime stopped thread `thread` (`threadIdx`) (see [`Abort`]).
    Aborted { abort: Abort, thread: Dim3 },
}

/// Why the runtime itself stopped a simulated GPU thread (it is no panic of
/// the kernel's code): the payload of a `resume_unwind` (which runs no
/// panic hook) that the block's scheduler catches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Abort {
    /// The block's static shared memory (`shared_array!`s, counted as they
    /// are first used) and its dynamic shared memory exceed the limit.
    SharedMemory { static_bytes: u32, dynamic: u32 },
    /// The thread's coroutine stack is exhausted (see `stack_guard`).
    StackOverflow,
}

fn unlinear(i: u64, d: Dim3) -> Dim3 {
    let x = (i % d.x as u64) as u32;
    let y = ((i / d.x as u64) % d.y as u64) as u32;
    let z = (i / (d.x as u64 * d.y as u64)) as u32;
    Dim3 { x, y, z }
}

fn linear(t: Dim3, d: Dim3) -> u32 {
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

    fn stack(&mut self) -> DefaultStack {
        match self.stacks.pop() {
            Some(s) => s,
            None => DefaultStack::new(self.stack_size).expect("could not allocate a coroutine stack for the host fallback"),
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
                let stack = self.stack();
                let limit = stack.limit().get();
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
                guards.push(stack_guard::Armed::new(co.trap_handler(), limit));
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
            let waiting: Vec<usize> = lanes.clone().filter(|&t| b.wait[t].get() == Wait::Warp).map(|t| t - lanes.start).collect();
            if waiting.is_empty() || waiting.len() == lanes.len() {
                continue;
            }
            let op = b.input[lanes.start + waiting[0]].get().0;
            // The same text as a GPU thread writes (`divergence`).
            let mask = |want: Wait| {
                lanes.clone().filter(|&t| b.wait[t].get() == want).fold(0u32, |m, t| m | 1 << (t - lanes.start))
            };
            let mut buf = [0u8; 512];
            let mut text = crate::divergence::Bytes { buf: &mut buf, len: 0 };
            crate::divergence::write_reason(
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
        let arena = core::mem::replace(
            &mut *self.block.arena.borrow_mut(),
            Arena {
                chunks: Vec::new(),
                chunk: 0,
                offset: 0,
                sites: Vec::new(),
                dynamic: (core::ptr::null_mut(), 0),
                static_bytes: 0,
            },
        );
        arena.give_back();
    }
}

// ---------------------------------------------------------------------------
// Entry points used by the device-model API on the host

fn current() -> Option<(&'static Block, usize)> {
    let b = BLOCK.with(|c| c.get());
    if b.is_null() {
        return None;
    }
    // SAFETY: non-null only while `run_block` runs on this OS thread, and
    // every caller is code of that block's threads.
    let b: &'static Block = unsafe { &*b };
    let t = linear(CTX.with(|c| c.get()).thread, b.ctx.block_dim) as usize;
    Some((b, t))
}

/// Suspends the calling GPU thread until the scheduler resumes it, then
/// restores its thread context.
fn suspend() {
    let y = YIELDER.with(|c| c.get());
    let ctx = CTX.with(|c| c.get());
    // SAFETY: `y` is the yielder of the running coroutine, set when it
    // started and after every resume (below), so it is alive.
    unsafe { (*y).suspend(()) };
    YIELDER.with(|c| c.set(y));
    CTX.with(|c| c.set(ctx));
}

/// `sync_threads` on the host: wait until every thread of the block that has
/// not returned is here. Outside a launch (a one-thread grid) it returns.
pub(crate) fn sync_threads() {
    if let Some((b, t)) = current() {
        stack_guard::check();
        b.wait[t].set(Wait::Barrier);
        b.runner_of[t].set(b.current.get());
        suspend();
    }
}

/// A warp collective on the host; outside a launch the warp is the calling
/// thread alone.
pub(crate) fn warp_collective(op: WarpOp, value: u64, arg: u32) -> u64 {
    match current() {
        Some((b, t)) => {
            stack_guard::check();
            b.input[t].set((op, value, arg));
            b.wait[t].set(Wait::Warp);
            b.runner_of[t].set(b.current.get());
            suspend();
            b.output[t].get()
        }
        None => warp_result(op, &[(value, arg)], 0),
    }
}

/// The shared memory of declaration `site` (`size` bytes, `align`): one
/// allocation per block, the same for every thread of the block.
///
/// # Panics
/// Outside a kernel launch, or if the same site asks for another size.
/// Stops the launch ([`Abort::SharedMemory`]) if the block's shared memory
/// would exceed the limit.
pub(crate) fn shared_alloc(site: usize, size: usize, align: usize) -> *mut u8 {
    let Some((b, _)) = current() else {
        panic!("offload: shared memory exists only inside a kernel launch (shared_array! was called outside one)");
    };
    stack_guard::check();
    let mut arena = b.arena.borrow_mut();
    if let Some(&(_, p, s)) = arena.sites.iter().find(|(k, _, _)| *k == site) {
        assert_eq!(s, size, "one shared_array! declaration with two sizes");
        return p;
    }
    let static_bytes = arena.static_bytes + size;
    let dynamic = arena.dynamic.1;
    if static_bytes + dynamic > b.shared_limit {
        drop(arena);
        // On a GPU the launch would not start: the sizes fit in u32 there.
        let (static_bytes, dynamic) = (static_bytes.min(u32::MAX as usize) as u32, dynamic as u32);
        std::panic::resume_unwind(Box::new(Abort::SharedMemory { static_bytes, dynamic }));
    }
    let p = arena.alloc(size.max(1), align);
    arena.sites.push((site, p, size));
    arena.static_bytes = static_bytes;
    p
}

/// The dynamic shared memory of the current block: base and size in bytes
/// (`LaunchConfig::shared_mem_bytes`); `(null, 0)` outside a launch.
pub(crate) fn dynamic_shared() -> (*mut u8, usize) {
    match current() {
        Some((b, _)) => {
            stack_guard::check();
            b.arena.borrow().dynamic
        }
        None => (core::ptr::null_mut(), 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lanes(v: &[u64]) -> Vec<(u64, u32)> {
        v.iter().map(|&x| (x, 0)).collect()
    }

    #[test]
    fn shuffle_rules_follow_ptx() {
        let vals: Vec<(u64, u32)> = (0..32u64).map(|l| (100 + l, 3)).collect();
        // down by 3: lane 28 reads lane 31, lane 29 keeps its own value
        assert_eq!(warp_result(WarpOp::ShflDown, &vals, 28), 131);
        assert_eq!(warp_result(WarpOp::ShflDown, &vals, 29), 129);
        // up by 3: lane 2 keeps, lane 3 reads lane 0
        assert_eq!(warp_result(WarpOp::ShflUp, &vals, 2), 102);
        assert_eq!(warp_result(WarpOp::ShflUp, &vals, 3), 100);
        // xor 3
        assert_eq!(warp_result(WarpOp::ShflXor, &vals, 5), 106);
        // idx 3 for everyone; idx 35 wraps to 3
        assert_eq!(warp_result(WarpOp::ShflIdx, &vals, 17), 103);
        let v35: Vec<(u64, u32)> = (0..32u64).map(|l| (l, 35)).collect();
        assert_eq!(warp_result(WarpOp::ShflIdx, &v35, 0), 3);
        // partial warp of 5 lanes: xor 4 from lane 2 reads lane 6, absent → own
        let part: Vec<(u64, u32)> = (0..5u64).map(|l| (l * 10, 4)).collect();
        assert_eq!(warp_result(WarpOp::ShflXor, &part, 2), 20);
        assert_eq!(warp_result(WarpOp::ShflXor, &part, 0), 40);
    }

    #[test]
    fn votes() {
        let v = lanes(&[1, 0, 5, 0]);
        assert_eq!(warp_result(WarpOp::Ballot, &v, 0), 0b0101);
        assert_eq!(warp_result(WarpOp::Any, &v, 3), 1);
        assert_eq!(warp_result(WarpOp::All, &v, 3), 0);
        assert_eq!(warp_result(WarpOp::All, &lanes(&[2, 3]), 1), 1);
    }
}
