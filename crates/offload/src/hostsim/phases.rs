//! Kernels whose barriers are `.await`s: a block in *phases*, with no
//! coroutine switch at a barrier.
//!
//! The host side of the kernel macro turns each `sync_threads()` of a
//! kernel's body (outside closures and nested functions) into an await of
//! a [`Barrier`], so that the body is an `async fn` and its future holds
//! one GPU thread's state at a barrier: the locals that live across it, in
//! storage that rustc lays out and type-checks (the per-thread copies of
//! values that cross a barrier of MCUDA and of POCL's work-item loops).
//! A block then runs in phases. A phase polls, in linear thread order, the
//! future of every thread that has not returned, in the plain loop of
//! `threads`; a poll runs its thread to its next barrier (pending) or to
//! its end (ready). When every thread has, the next phase starts: a wait
//! costs a poll instead of two coroutine switches.
//!
//! A grid-stride loop of such a body also pauses its thread every
//! [`STEP_ITERATIONS`] iterations ([`Step`], which the macro awaits at the
//! top of each iteration): a phase is then several *passes*, each polling
//! the threads that paused in the one before, until every thread is at a
//! barrier or has returned. The block's threads so walk the arrays
//! together (per pass a few lines of each region the block strides
//! through) instead of one after another (each a line per element, all
//! in one cache set). A grid-stride loop whose iterations can neither
//! leave it nor wait runs in lockstep instead (`lockstep`): its threads
//! register at their first poll, pause, and after the pass the block runs
//! one iteration of each at a time; the next pass polls them past it.
//!
//! The meaning is the scheduler's (`block`): the block's threads run one
//! after another, each to its next barrier (or pause); all are released
//! when every thread that has not returned waits at a barrier (any `sync_threads`,
//! as PTX `bar.sync 0`), and run again in linear order; a thread that
//! panics ends there (`threads::stopped`) and counts as arrived.
//!
//! What the macro cannot see still works as before: a `sync_threads` or a
//! warp collective reached inside a function that the body calls (or in a
//! closure) suspends the runner of its thread (`entry`); the scheduler
//! starts a runner for the phase's remaining threads, which finds the
//! phase through `Block::phases`, and the runner that drives the phases
//! waits ([`PHASE_END`]) until the scheduler has nothing else to run. A
//! block some of whose threads wait at such a barrier while others wait at
//! one of the body has threads at different barriers: the scheduler
//! reports it as divergence (`deadlock::mixed_barriers`).

use core::cell::Cell;
use core::future::Future;
use core::pin::Pin;
use core::ptr::NonNull;
use core::task::{Context, Poll, Waker};
use std::vec::Vec;

use super::awaits::{arrive, unreleased};
use super::state::{Block, Paused, PollThread, Wait, BLOCK, PHASE_END, YIELDER};
use super::threads::{run_phased, step, ThreadBody};
use crate::device::dim::Dim3;
use crate::device::thread::set_thread_idx;

/// A barrier of a kernel's body on the host (what `sync_threads()` becomes
/// in the body's `async fn`): pending at its first poll, when the thread
/// arrives, ready at the next, when the block has released it (see the
/// module docs).
#[derive(Default)]
pub struct Barrier {
    arrived: bool,
}

impl Future for Barrier {
    type Output = ();

    #[inline(always)]
    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if self.arrived {
            Poll::Ready(())
        } else {
            self.arrived = true;
            Poll::Pending
        }
    }
}

/// Iterations of a grid-stride loop that a thread runs before it pauses at
/// a [`Step`]: each thread of the block then reads the next few elements
/// of every region the block strides through, which stay in the cache for
/// the following threads. Few, because the regions of a grid-stride loop
/// lie a power of two apart (the grid's size in elements) and so fall into
/// the same cache set: a core's L1 and L2 hold 8 lines per set (AMD EPYC,
/// Intel Xeon), and a loop that reads two arrays touches 2 lines per
/// iteration. Measured (dot, 2^26 floats, 1024 blocks of 256 threads, 2
/// cores, a pause every 1, 4, 16 iterations or never): 702, 395, 709, 1131
/// ms; 8 was slower than 4 for dot and histogram alike
/// (bench/results/2026-12-02-hostspeed).
pub(crate) const STEP_ITERATIONS: u32 = 4;

/// The pause of a grid-stride loop of a kernel's body on the host, every
/// `STEP_ITERATIONS` iterations (the kernel macro awaits
/// [`StepCounter::tick`] at the top of each iteration): pending at its
/// first poll in a block in phases, so that the phase polls the block's
/// other threads (to their next pause, barrier or end) before this one
/// goes on. Not a barrier: a thread at a barrier waits; one at a step runs
/// on in the same phase. Ready at once outside a block, between pauses,
/// and once a thread of the pass has waited on its runner's coroutine
/// (`Block::suspended`): the threads that paused before are then polled on
/// by runners that the scheduler starts (`Executor::next_runner`), one
/// per pass, which pausing again would only multiply.
pub struct Step {
    pause: bool,
}

impl Future for Step {
    type Output = ();

    #[inline(always)]
    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if !self.pause {
            return Poll::Ready(());
        }
        self.pause = false;
        let b = BLOCK.with(|c| c.get());
        if b.is_null() {
            return Poll::Ready(());
        }
        // SAFETY: non-null only while `Executor::run_block` runs this block
        // on this OS thread, which outlives the thread polling this.
        let b = unsafe { &*b };
        if b.phases.get().is_none() || b.suspended.get() {
            return Poll::Ready(());
        }
        b.paused.set(Paused::Step);
        Poll::Pending
    }
}

/// A grid-stride loop's count of iterations since its thread last paused
/// (see [`Step`]).
#[derive(Default)]
pub struct StepCounter(u32);

impl StepCounter {
    /// The pause at the top of an iteration: pending before iterations
    /// `STEP_ITERATIONS + 1`, `2 · STEP_ITERATIONS + 1`, … (a thread's
    /// turns are `STEP_ITERATIONS` iterations, the first one included),
    /// else ready.
    #[inline(always)]
    pub fn tick(&mut self) -> Step {
        self.0 += 1;
        let pause = self.0 > STEP_ITERATIONS;
        if pause {
            self.0 = 1;
        }
        Step { pause }
    }
}

/// What the loop of a runner over the block's threads runs in a pass of a
/// phase: a poll of each thread whose `wait` is not in `skip` (a set of
/// [`Wait::bit`]s).
struct Pass<'a, Fut> {
    phases: Phases<'a, Fut>,
    skip: u8,
}

impl<Fut> Clone for Pass<'_, Fut> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<Fut> Copy for Pass<'_, Fut> {}

impl<Fut: Future<Output = ()>> ThreadBody for Pass<'_, Fut> {
    #[inline(always)]
    fn run(&self, t: u32) {
        self.phases.poll(t, self.skip)
    }
}

/// The phases of one block: the body's futures, one per thread.
struct Phases<'a, Fut> {
    block: &'a Block,
    /// `block.wait`, `block.n` elements (a copy of its address that the
    /// loop over the threads keeps in a register).
    wait: &'a [Cell<Wait>],
    /// `block.n` futures, made before the first phase (no test per poll of
    /// whether the thread has one), dropped after the last: a future that
    /// has returned (or panicked) holds nothing more (its locals were
    /// dropped as it ended), and is not polled again (`Wait::Done`).
    futs: *mut Fut,
}

impl<Fut> Clone for Phases<'_, Fut> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<Fut> Copy for Phases<'_, Fut> {}

impl<Fut: Future<Output = ()>> PollThread for Phases<'_, Fut> {
    fn run_pass(&self) {
        // A phase's first pass polls every thread that has not returned, a
        // later one only the threads that paused at a step.
        let skip = if self.block.later_pass.get() { !Wait::Running.bit() } else { Wait::Done.bit() };
        run_phased(self.block, Pass { phases: *self, skip });
    }
}

impl<Fut: Future<Output = ()>> Phases<'_, Fut> {
    /// Polls thread `t` unless its `wait` is in `skip`, and records whether
    /// it paused at a step, waits at a barrier or has returned.
    #[inline(always)]
    fn poll(&self, t: u32, skip: u8) {
        let (b, t) = (self.block, t as usize);
        // SAFETY: `t < b.n`, the length of `wait` (`drive`).
        let wait = unsafe { self.wait.get_unchecked(t) };
        if skip & wait.get().bit() != 0 {
            return;
        }
        // SAFETY: `futs` points to `b.n` elements (`drive`), `t < b.n`, and
        // only the poll of thread `t` makes a reference to element `t` (a
        // thread is polled again only after its previous poll returned).
        // The element does not move: `drive` neither resizes nor moves the
        // vector before dropping it.
        let fut = unsafe { Pin::new_unchecked(&mut *self.futs.add(t)) };
        match fut.poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(()) => wait.set(Wait::Done),
            // `paused` says `Barrier` unless a step or collective set it.
            Poll::Pending => match b.paused.get() {
                Paused::Barrier => {
                    wait.set(Wait::Barrier);
                    b.phase_pending.set(b.phase_pending.get() + 1);
                }
                Paused::Step => {
                    // Paused at a step: it runs on in this phase's next pass
                    // (its `wait` may still say the barrier it left).
                    b.paused.set(Paused::Barrier);
                    wait.set(Wait::Running);
                    b.phase_stepped.set(b.phase_stepped.get() + 1);
                }
                // At a warp collective (its `wait` says so): it runs on when
                // its warp is released (`awaits`).
                Paused::Collective => {
                    b.paused.set(Paused::Barrier);
                    arrive(b, t)
                }
            },
        }
    }
}

/// What a runner of a kernel whose barriers are `.await`s runs
/// (`__private::host_phases`): the first runner of a block drives its
/// phases; a runner that the scheduler starts after a thread waited inside
/// a phase runs the phase's remaining threads.
///
/// # Panics
/// Outside a block of the host scheduler, which alone calls what the launch
/// runs per runner (`Executor::start_runner`): a thread alone would poll
/// the body's future from a second place, and LLVM would no longer inline
/// the poll into the loop over the threads (`threads::run_phased`).
#[inline(always)]
pub(crate) fn run<M: Fn() -> Fut, Fut: Future<Output = ()>>(make: &M) {
    let b = BLOCK.with(|c| c.get());
    if b.is_null() {
        outside_a_block();
    }
    // SAFETY: non-null only while `Executor::run_block` runs this block on
    // this OS thread, which outlives the runner that calls this.
    let b = unsafe { &*b };
    if let Some(phases) = b.phases.get() {
        // SAFETY: set by `drive`, suspended in another runner of this block,
        // which clears it before its frame ends; after a failure the
        // scheduler unwinds the runners it started later (this one) first
        // (`Executor::schedule`).
        unsafe { phases.as_ref() }.run_pass();
        return;
    }
    drive(b, make);
}

/// [`run`] outside a block of the host scheduler.
#[cold]
#[inline(never)]
fn outside_a_block() -> ! {
    panic!("offload: a kernel's host body ran outside a block of the host fallback's scheduler (a bug of offload)")
}

/// Clears `Block::phases` when the phases end, also by unwinding.
struct Clear<'a>(&'a Block);

impl Drop for Clear<'_> {
    fn drop(&mut self) {
        self.0.phases.set(None);
        // The registered loops point into the futures, dropped after this.
        self.0.lockstep.borrow_mut().clear();
    }
}

/// Runs the phases of block `b` until every thread has returned.
fn drive<M: Fn() -> Fut, Fut: Future<Output = ()>>(b: &Block, make: &M) {
    // Made with the thread's index set: a future holds the body's arguments,
    // and an argument may be the calling thread's view (`DisjointSlice`).
    let mut futs: Vec<Fut> = Vec::with_capacity(b.n as usize);
    let mut idx = Dim3::new(0, 0, 0);
    for _ in 0..b.n {
        set_thread_idx(idx);
        futs.push(make());
        step(&mut idx, b.ctx.block_dim);
    }
    b.wait.iter().for_each(|w| w.set(Wait::Running));
    b.phase_warp.set(0);
    let phases = Phases { block: b, wait: &b.wait[..b.n as usize], futs: futs.as_mut_ptr() };
    let erased: NonNull<dyn PollThread + '_> = NonNull::from(&phases as &dyn PollThread);
    // SAFETY: only the lifetime is erased; `_clear` resets the pointer
    // before `phases` and `futs` are dropped (declared after them).
    let erased: NonNull<dyn PollThread + 'static> = unsafe { core::mem::transmute(erased) };
    b.phases.set(Some(erased));
    let _clear = Clear(b);
    loop {
        b.phase_pending.set(0);
        b.later_pass.set(false);
        // The phase's passes: the first polls every thread that has not
        // returned, each later one the threads that paused at a step in
        // the one before.
        loop {
            b.phase_stepped.set(0);
            b.suspended.set(false);
            b.next.set(0);
            b.sequencer.set(b.current.get());
            phases.run_pass();
            if b.sequencer.get() != b.current.get() {
                // A thread waited inside the phase and other runners ran the
                // rest: wait until none can run (the scheduler has them poll
                // the threads that paused at a step: `Block::phase_stepped`).
                wait_phase_end();
            }
            if !b.lockstep.borrow().is_empty() {
                super::lockstep::run(b);
                if b.sequencer.get() != b.current.get() {
                    // A thread waited on this runner's coroutine during the
                    // rounds (see `lockstep::run`).
                    wait_phase_end();
                }
            }
            if b.phase_stepped.get() == 0 {
                break;
            }
            b.later_pass.set(true);
        }
        if b.phase_warp.get() > 0 {
            unreleased(b);
        }
        if b.phase_pending.get() == 0 {
            return;
        }
    }
}

/// Suspends the runner that drives the phases until the scheduler has no
/// other runner to resume (`Executor::next_runner`).
fn wait_phase_end() {
    let y = YIELDER.with(|c| c.get());
    // SAFETY: `y` is the yielder of the running coroutine, set when it
    // started and after every resume, so it is alive.
    unsafe { (*y).suspend(PHASE_END) };
    YIELDER.with(|c| c.set(y));
}
