//! The plain loop over a block's threads: what a runner (see `block`)
//! executes. It is generic over the kernel's body, so that the body is
//! inlined into the loop: running one more GPU thread costs a store of its
//! index (`threadIdx`, which the body reads back), a counter and a compare,
//! not a call through a pointer and a division of the linear index (the
//! work-item loops of POCL and MCUDA, with the thread index as the loop
//! variable).
//!
//! The loop starts at the block's next thread not yet started and runs one
//! thread after another, each to its end, while this runner holds the
//! block's *sequence*. A thread that waits (`sync_threads`, a warp
//! collective) suspends the whole runner; the scheduler then starts a new
//! runner for the following threads, and when the waiting thread is
//! resumed and returns, its runner ends (it lost the sequence).
//!
//! A thread that panics ends there, as a GPU thread that panics exits
//! (docs/device-model.md, "Panics"): the loop runs inside one
//! `catch_unwind` (a landing pad, nothing per thread), and after a panic
//! [`stopped`] records the block's first panic and the runner goes on with
//! the next thread, or ends if it no longer holds the sequence. The
//! threads that returned, the panicking one included, count as arrived at
//! later barriers. A panic of the runtime itself ([`Abort`]) goes on to
//! the scheduler and stops the block, as does the scheduler's unwinding of
//! suspended runners after a failure.

use std::any::Any;
use std::boxed::Box;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

use super::failure::{take_panic, Abort, Divergent};
use super::state::{linear, Block, Wait, BLOCK, NO_REWIND, REWIND};
use crate::device::dim::Dim3;
use crate::device::thread::{is_1d, set_thread_idx, set_thread_x, CTX};

/// The index of linear thread `t` in a block of `d` threads (x fastest).
pub(super) fn unlinear(t: u32, d: Dim3) -> Dim3 {
    Dim3 { x: t % d.x, y: (t / d.x) % d.y, z: t / (d.x * d.y) }
}

/// Runs the threads of the calling runner with `body` (one GPU thread's
/// work, the kernel's body with its arguments) inlined (see the module
/// docs). Outside a block of the host scheduler it runs `body` once, for
/// the thread context that is set.
///
/// As the GPU's entry points do (`__private::kernel_entry`), a 1-D launch
/// gets its own copy of the loop, in which the body's geometry functions
/// know that the y and z extents are 1: `global_index()` is then
/// `blockIdx.x · blockDim.x + threadIdx.x`, with no test of the others.
/// Both copies tell the optimizer the block's index and extents, which it
/// then keeps in registers.
#[inline(always)]
pub(crate) fn run_threads<F: Fn()>(body: &F) {
    let b = BLOCK.with(|c| c.get());
    if b.is_null() {
        body();
        return;
    }
    // SAFETY: non-null only while `Executor::run_block` runs this block on
    // this OS thread, which outlives the runner that calls this.
    run_threads_of(unsafe { &*b }, body);
}

/// One GPU thread's work as the loop over a block's threads runs it, given
/// the thread's linear index; inlined into the loop.
pub(super) trait ThreadBody {
    fn run(&self, t: u32);
}

/// A kernel's body that reads its thread's index from the thread context.
impl<F: Fn()> ThreadBody for F {
    #[inline(always)]
    fn run(&self, _: u32) {
        self()
    }
}

/// [`run_threads`] in block `b`.
#[inline(always)]
fn run_threads_of<F: ThreadBody>(b: &Block, body: &F) {
    // Each pass starts at `b.next`, the thread after one that panicked.
    while let Err(payload) = catch_unwind(AssertUnwindSafe(|| run_loop_apart(b, body))) {
        if !stopped(b, payload) {
            return;
        }
    }
}

/// [`run_threads_of`] for a pass of a block in phases (`phases`):
/// `body`, a poll, skips the threads that it need not poll (those that
/// have returned, and in a later pass of a phase those not paused at a
/// step), and records what each thread does next itself.
///
/// One copy of the loop, whatever the launch's shape ([`threads_phased`]):
/// the body's future is then polled from one place only, which LLVM
/// inlines (a function called once) into the loop; `body` comes by value,
/// so that its fields stay in registers while the body stores through
/// pointers that might, as far as LLVM knows, point to it. A poll call per
/// thread and phase, and those reloads, cost a barrier loop (16 rounds of
/// a shared store, `sync_threads`, a shared load) a fifth of its
/// instructions.
#[inline(always)]
pub(super) fn run_phased<F: ThreadBody + Copy>(b: &Block, body: F) {
    let geometry = (b.ctx.block, b.ctx.block_dim, b.ctx.grid_dim);
    // Each pass starts at `b.next`, the thread after one that panicked.
    while let Err(payload) = catch_unwind(AssertUnwindSafe(|| threads_phased(b, body, geometry))) {
        if !stopped(b, payload) {
            return;
        }
    }
}

/// [`run_loop`], out of line (one call per pass of a runner): inlined into
/// [`run_threads_of`], the values that the loop keeps in registers were
/// live across its `catch_unwind`, a call, and the register allocator kept
/// them on the stack, reloading them for every thread.
#[inline(never)]
fn run_loop_apart<F: ThreadBody>(b: &Block, body: &F) {
    run_loop(b, body, (b.ctx.block, b.ctx.block_dim, b.ctx.grid_dim))
}

/// The loop over the threads of the calling runner: [`threads_1d`] for a
/// 1-D launch, else [`threads`], with the optimizer told the block's index and the launch's
/// extents `(bi, bd, gd)`. The body reads them from the thread context
/// (thread-local) again for every thread: stores through the kernel's
/// pointers may alias it as far as the optimizer knows. Telling it, before
/// each thread, what they are lets it use the values it has in registers
/// and drop those loads.
#[inline(always)]
fn run_loop<F: ThreadBody>(b: &Block, body: &F, (bi, bd, gd): (Dim3, Dim3, Dim3)) {
    let one_d = is_1d(bd, gd);
    if one_d {
        // A 1-D launch gets its own copy of the loop, in which the body's
        // geometry functions know that the y and z extents are 1.
        let (bx, bdx, gdx) = (bi.x, bd.x, gd.x);
        let hint = || {
            let (i, d, g) = (crate::block_idx(), crate::block_dim(), crate::grid_dim());
            // SAFETY: the thread context holds this block's index and the
            // launch's extents, which is 1-D (`one_d`).
            unsafe {
                core::hint::assert_unchecked(i.x == bx && i.y == 0 && i.z == 0);
                core::hint::assert_unchecked(d.x == bdx && d.y == 1 && d.z == 1);
                core::hint::assert_unchecked(g.x == gdx && g.y == 1 && g.z == 1);
            }
        };
        threads_1d(b, body, hint);
    } else {
        let hint = || {
            let (i, d, g) = (crate::block_idx(), crate::block_dim(), crate::grid_dim());
            // SAFETY: the thread context holds this block's index and the
            // launch's extents, which is not 1-D (`one_d`).
            unsafe { core::hint::assert_unchecked(i == bi && d == bd && g == gd && !is_1d(d, g)) }
        };
        threads(b, body, hint);
    }
}

/// The calling GPU thread of block `b` panicked with `payload` (the runner
/// caught it): the thread has ended, and the block's first panic is kept.
/// Whether the runner goes on with the next thread (it holds the
/// sequence). A panic of the runtime itself ([`Abort`]) goes on to the
/// scheduler, and so does the scheduler's own unwinding of a suspended
/// runner after the block failed (`Block::unwinding`; corosensei's
/// `force_unwind` must reach the coroutine's root).
#[cold]
#[inline(never)]
fn stopped(b: &Block, payload: Box<dyn Any + Send>) -> bool {
    let t = ended(b, payload);
    if b.sequencer.get() != b.current.get() {
        return false;
    }
    b.next.set(t + 1);
    true
}

/// The calling GPU thread of block `b` (whose `threadIdx` is set) panicked
/// with `payload`: it is done, and the block keeps its first panic; returns
/// the thread's linear index. A panic of the runtime itself ([`Abort`],
/// `Divergent`) and the scheduler's unwinding go on. Shared by the loops
/// over the threads ([`stopped`]) and the lockstep rounds (`lockstep`).
#[cold]
#[inline(never)]
pub(super) fn ended(b: &Block, payload: Box<dyn Any + Send>) -> u32 {
    if b.unwinding.get() || payload.is::<Abort>() || payload.is::<Divergent>() {
        resume_unwind(payload);
    }
    drop(payload);
    let thread = CTX.with(|c| c.get()).thread;
    let t = linear(thread, b.ctx.block_dim);
    b.wait[t as usize].set(Wait::Done);
    let record = take_panic();
    let mut first = b.panic.borrow_mut();
    if first.is_none() {
        *first = Some((thread, record));
    }
    t
}

/// The loop of [`run_threads`] for a 1-D launch outside phases: only
/// `threadIdx.x` changes from one thread to the next. It runs threads
/// while `t < b.limit`, which is the block's size while this runner holds
/// the sequence and 0 once the scheduler resumed it after its thread
/// suspended (`Executor::resume`): one compare per thread tests both.
/// `hint` runs before each thread's body. (`b.next`, the first thread not
/// started, is kept up to date by a thread that suspends,
/// `entry::suspend`, and here at the end: the scheduler reads it only
/// then.)
#[inline(always)]
fn threads_1d<F: ThreadBody, H: Fn()>(b: &Block, body: &F, hint: H) {
    let mut t = b.next.get();
    set_thread_idx(Dim3::new(t, 0, 0));
    while t < b.limit.get() {
        let u = opaque(t);
        set_thread_x(u);
        hint();
        body.run(u);
        t += 1;
    }
    if b.limit.get() == 0 {
        // Thread `t - 1` suspended (the runner lost the sequence) and has
        // now returned: so does the runner. (The limit was the block's
        // size when the loop started, so it ran a thread.)
        lost(b, t - 1);
    } else {
        b.next.set(b.n);
    }
}

/// The loop of [`run_threads`] for a launch of any shape outside phases:
/// the threads row by row (a row: the threads that differ in x only), so
/// that in the inner loop only `threadIdx.x` changes and what the body
/// computes from y and z alone is computed once per row; see
/// [`threads_1d`].
#[inline(always)]
fn threads<F: ThreadBody, H: Fn()>(b: &Block, body: &F, hint: H) {
    let (n, d) = (b.n, b.ctx.block_dim);
    let start = b.next.get();
    let Dim3 { x: mut x0, mut y, mut z } = unlinear(start, d);
    // The linear index of thread (0, y, z).
    let mut row = start - x0;
    while row < n {
        set_thread_idx(Dim3::new(x0, y, z));
        for x in x0..d.x {
            let u = opaque(x);
            set_thread_x(u);
            hint();
            let i = crate::thread_idx();
            // SAFETY: the thread context holds this row's index (set above);
            // the optimizer cannot know, as a store of the body may alias it.
            unsafe { core::hint::assert_unchecked(i.y == y && i.z == z) };
            body.run(row + u);
            if b.limit.get() == 0 {
                // As in `threads_1d`.
                lost(b, row + x);
                return;
            }
        }
        (x0, row, y) = (0, row + d.x, y + 1);
        if y == d.y {
            (y, z) = (0, z + 1);
        }
    }
    b.next.set(n);
}

/// Thread `t` of the calling runner suspended (the runner lost the
/// sequence) and has now returned: it is done. Out of line, so that the
/// loops keep no register for it.
#[cold]
#[inline(never)]
fn lost(b: &Block, t: u32) {
    b.wait[t as usize].set(Wait::Done);
}

/// `t`, which the optimizer may no longer relate to the loop's counter:
/// the loop's index then stays one register, instead of one pointer per
/// array that the body indexes with it (loop strength reduction turns
/// `a[base + t]` into pointers that all step with `t`, more registers
/// than the loop has).
#[inline(always)]
fn opaque(mut t: u32) -> u32 {
    // The 32-bit name of the register (no extension to 64 bits around it).
    #[cfg(target_arch = "x86_64")]
    macro_rules! reg32 {
        () => {
            "/* {0:e} */"
        };
    }
    #[cfg(target_arch = "aarch64")]
    macro_rules! reg32 {
        () => {
            "/* {0:w} */"
        };
    }
    // SAFETY: the assembly is a comment: it reads and writes no memory and
    // leaves `t` as it is.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    unsafe {
        core::arch::asm!(reg32!(), inout(reg) t, options(pure, nomem, nostack, preserves_flags))
    };
    // Elsewhere `asm!` may not be stable: the standard library's barrier.
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        t = core::hint::black_box(t);
    }
    t
}

/// The loop of [`run_phased`]: [`threads`]' loop, going back to the first
/// lane of a warp that a poll released at a collective (`Block::rewind`).
/// It stores `threadIdx.x` for every thread, y and z when they change.
/// The optimizer is told the block's index and the extents `(bi, bd, gd)`,
/// not that a 1-D launch's y and z extents are 1 (which would take a
/// second copy of the loop, see [`run_phased`]).
#[inline(always)]
fn threads_phased<F: ThreadBody>(b: &Block, body: F, (bi, bd, gd): (Dim3, Dim3, Dim3)) {
    let (rid, n) = (b.current.get(), b.n);
    let mut t = b.next.get();
    let mut idx = unlinear(t.min(n.saturating_sub(1)), bd);
    set_thread_idx(idx);
    while t < n {
        set_thread_x(idx.x);
        let (i, d, g) = (crate::block_idx(), crate::block_dim(), crate::grid_dim());
        // SAFETY: the thread context holds this block's index and the
        // launch's extents.
        unsafe { core::hint::assert_unchecked(i == bi && d == bd && g == gd) }
        body.run(t);
        if b.sequencer.get() != rid {
            if b.sequencer.get() == REWIND {
                // The poll released the thread's warp at a collective: its
                // lanes run on now (`awaits`).
                b.sequencer.set(rid);
                t = b.rewind.replace(NO_REWIND);
                idx = unlinear(t, bd);
                set_thread_idx(idx);
                continue;
            }
            // The thread waited on this runner's coroutine (which lost the
            // sequence) and has now reached its next barrier or its end,
            // which it recorded: so does the runner.
            return;
        }
        t += 1;
        if step(&mut idx, bd) {
            set_thread_idx(idx);
        }
    }
    b.next.set(n);
}

/// `idx`, a thread index in a block of `d` threads, to the next thread
/// (x fastest); whether y or z changed.
#[inline(always)]
pub(super) fn step(idx: &mut Dim3, d: Dim3) -> bool {
    idx.x += 1;
    if idx.x < d.x {
        return false;
    }
    idx.x = 0;
    idx.y += 1;
    if idx.y == d.y {
        idx.y = 0;
        idx.z += 1;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unlinear_is_x_fastest() {
        let d = Dim3::new(4, 3, 2);
        let mut t = 0;
        for z in 0..2 {
            for y in 0..3 {
                for x in 0..4 {
                    assert_eq!(unlinear(t, d), Dim3::new(x, y, z));
                    t += 1;
                }
            }
        }
    }
}
