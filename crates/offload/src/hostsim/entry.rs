//! The entry points of the device API on the host (`sync_threads`, warp
//! collectives, `shared_array!`, dynamic shared memory): they find the block
//! the calling simulated GPU thread belongs to (`block`), record what the
//! thread waits for and suspend it; the scheduler resumes it.

use std::boxed::Box;

use super::collective::{warp_result, WarpOp};
use super::failure::Abort;
use super::stack_guard;
use super::state::{linear, Block, Replay, Wait, BLOCK, PRIVATE, YIELDER};
use crate::device::thread::{set_thread_idx, CTX};

pub(super) fn current() -> Option<(&'static Block, usize)> {
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

/// Suspends the calling GPU thread, linear index `t` of block `b`, until
/// the scheduler resumes it, then restores its `threadIdx`.
fn suspend(b: &Block, t: usize) {
    b.suspended.set(true);
    if b.sequencer.get() == b.current.get() {
        // The runner's loop is at thread `t`: the scheduler starts the next
        // runner after it (`threads`).
        b.next.set(t as u32 + 1);
    }
    let y = YIELDER.with(|c| c.get());
    let thread = CTX.with(|c| c.get()).thread;
    // SAFETY: `y` is the yielder of the running coroutine, set when it
    // started and after every resume (below), so it is alive.
    unsafe { (*y).suspend(t as u32) };
    YIELDER.with(|c| c.set(y));
    set_thread_idx(thread);
}

/// `sync_threads` on the host: wait until every thread of the block that has
/// not returned is here. Outside a launch (a one-thread grid) it returns.
pub(crate) fn sync_threads() {
    // A panicking thread has left the kernel (on a GPU a panic traps and
    // runs no destructors): a barrier in a destructor that its unwinding
    // runs does not wait for the others. Waiting would suspend the thread
    // in mid-unwind, which the phase scheduler cannot resume (it aborted
    // the process: "panic in a destructor during cleanup").
    if std::thread::panicking() {
        return;
    }
    if let Some((b, t)) = current() {
        stack_guard::check();
        b.wait[t].set(Wait::Barrier);
        suspend(b, t);
    }
}

/// A warp collective on the host; outside a launch the warp is the calling
/// thread alone.
pub(crate) fn warp_collective(op: WarpOp, value: u64, arg: u32) -> u64 {
    match current() {
        Some((b, t)) => meet(b, t, op, value, arg, 0),
        None => warp_result(op, &[(value, arg)], 0),
    }
}

/// Thread `t` of block `b` waits at warp collective `op` (`key`: the
/// reduction it starts, or 0); returns its result.
pub(super) fn meet(b: &Block, t: usize, op: WarpOp, value: u64, arg: u32, key: u64) -> u64 {
    let r = b.replay.get();
    if !r.results.is_null() {
        return replay_meet(b, t, r, (op, value, arg), key);
    }
    stack_guard::check();
    b.input[t].set((op, value, arg));
    b.key[t].set(key);
    b.wait[t].set(Wait::Warp);
    suspend(b, t);
    b.output[t].get()
}

/// What a replay answers thread `t` of block `b` at its next meeting with
/// the warp (`op`, `value`, `arg`, `key` as in `entry::meet`): a result it
/// knows, or a placeholder 0 after recording the first meeting beyond them
/// as the thread's wait.
pub(super) fn replay_meet(b: &Block, t: usize, mut r: Replay, input: (WarpOp, u64, u32), key: u64) -> u64 {
    let out = if r.used < r.known {
        // SAFETY: `results` points to the `known` results of the future that
        // runs the replay, alive and unmoved while it polls (`Collective`).
        unsafe { *r.results.add(r.used as usize) }
    } else {
        if !r.recorded {
            b.input[t].set(input);
            b.key[t].set(key);
            b.wait[t].set(Wait::Warp);
            r.recorded = true;
        }
        0
    };
    r.used += 1;
    b.replay.set(r);
    out
}

/// `r` is the result of the first shuffle of the reduction that the calling
/// thread runs, which the release of its warp did not compute (`reduce`,
/// `WarpValues::first_shuffle`): a collective of the body being replayed
/// (`awaits`) answers its first meeting with it from now on.
pub(crate) fn first_shuffle_was(r: u64) {
    let b = BLOCK.with(|c| c.get());
    if b.is_null() {
        return;
    }
    // SAFETY: non-null only while `Executor::run_block` runs this block on
    // this OS thread, and the caller is one of its threads.
    let rep = unsafe { &*b }.replay.get();
    if !rep.results.is_null() {
        // SAFETY: `results` points to the results of the future that runs
        // the replay (`Collective`), alive, unmoved and not otherwise
        // borrowed while it polls; the reduction's first shuffle is the
        // collective's first meeting.
        unsafe { *rep.results = r };
    }
}

/// Whether the calling thread's collective is being recorded, not answered
/// (its function's result will be dropped): what is left of it need not
/// run.
#[inline(always)]
pub(crate) fn recording() -> bool {
    let b = BLOCK.with(|c| c.get());
    // SAFETY: non-null only while `Executor::run_block` runs this block on
    // this OS thread, and the caller is one of its threads.
    !b.is_null() && unsafe { &*b }.replay.get().recorded
}

/// The shared memory of declaration `site` (`size` bytes, `align`): one
/// allocation per block, the same for every thread of the block.
///
/// Every thread of the block calls this for each `shared_array!` it runs;
/// after the block's first, the site is in the block's cache
/// (`Block::sites`), found with one thread-local load and a few compares,
/// no borrow, lock or call (so no stack check either: nothing here can
/// reach the guard page).
///
/// # Panics
/// Outside a kernel launch, or if the same site asks for another size.
/// Stops the launch ([`Abort::SharedMemory`]) if the block's shared memory
/// would exceed the limit.
#[inline(always)]
pub(crate) fn shared_alloc(site: usize, size: usize, align: usize) -> *mut u8 {
    let b = BLOCK.with(|c| c.get());
    if !b.is_null() {
        // SAFETY: non-null only while `run_block` runs on this OS thread,
        // and every caller is code of that block's threads.
        let b = unsafe { &*b };
        for c in &b.sites {
            let (s, z, p) = c.get();
            // A site with another size takes the slow path, which panics.
            if s == site && z == size {
                return p as *mut u8;
            }
        }
    }
    shared_alloc_slow(site, size, align)
}

/// [`shared_alloc`] for a site not in the block's cache: its first use in
/// the block (or a block with more than `SITE_CACHE` sites).
#[inline(never)]
fn shared_alloc_slow(site: usize, size: usize, align: usize) -> *mut u8 {
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
    PRIVATE.with(|c| c.set(arena.first_chunk()));
    if let Some(free) = b.sites.iter().find(|c| c.get().0 == 0) {
        free.set((site, size, p as usize));
    }
    p
}

/// Whether the `bytes` bytes at `addr` are shared memory of the block that
/// the calling thread belongs to, which no other OS thread uses: a
/// block-scoped atomic operation on them needs no atomic instruction (the
/// block's threads run one at a time on this OS thread, switching only at
/// barriers and warp collectives). `false` outside a launch, and for
/// shared memory beyond the block's first arena chunk (which then takes
/// the atomic instruction: still correct).
#[inline(always)]
pub(crate) fn block_private(addr: usize, bytes: usize) -> bool {
    let (lo, hi) = PRIVATE.with(|c| c.get());
    addr >= lo && addr.saturating_add(bytes) <= hi
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
