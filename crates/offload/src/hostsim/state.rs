//! The state of the block a worker runs, shared by its scheduler (`block`)
//! and its simulated threads (`threads`, `entry`), and the thread-locals
//! through which the threads find it.

use core::cell::{Cell, RefCell};
use core::ptr::NonNull;
use std::vec::Vec;

use corosensei::Yielder;

use super::arena::Arena;
use super::collective::{WarpOp, WARP};
use super::failure::PanicRecord;
use crate::device::dim::Dim3;
use crate::device::thread::ThreadCtx;

/// What a thread of the block is doing.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Wait {
    Running,
    Barrier,
    Warp,
    Done,
}

impl Wait {
    /// `self` as a bit of a set of states (`phases::Pass`'s `skip`).
    pub(super) const fn bit(self) -> u8 {
        1 << self as u8
    }
}

/// The state of the block a worker is executing.
pub(crate) struct Block {
    pub(super) n: u32,
    /// The block's context; `thread` is set per thread (`threads`).
    pub(super) ctx: ThreadCtx,
    pub(super) wait: Vec<Cell<Wait>>,
    /// Per thread waiting at a warp collective: which, its value, its
    /// lane / offset / mask operand.
    pub(super) input: Vec<Cell<(WarpOp, u64, u32)>>,
    /// Per thread released from a warp collective: its result.
    pub(super) output: Vec<Cell<u64>>,
    /// Per thread waiting at the first shuffle of a warp reduction: which
    /// reduction (`reduce::key`); 0 for any other collective.
    pub(super) key: Vec<Cell<u64>>,
    /// Per warp released from the first shuffle of a reduction that all its
    /// lanes make with the same operands: the reduction's key (else 0), and
    /// in `lanes` the lanes' values, in lane order (`reduce`).
    pub(super) uniform: Vec<Cell<u64>>,
    pub(super) lanes: Vec<Cell<u64>>,
    /// Per thread and per warp: the lanes' results of such a reduction, and
    /// whether they are computed (`reduce::result`).
    pub(super) reduced: Vec<Cell<u64>>,
    pub(super) reduced_state: Vec<Cell<u8>>,
    /// The first thread no runner has started.
    pub(super) next: Cell<u32>,
    /// The runner that starts the next thread when its thread returns.
    pub(super) sequencer: Cell<u32>,
    /// The runner being resumed.
    pub(super) current: Cell<u32>,
    /// Where the loop of the runner being resumed stops outside phases
    /// (`threads`): `n` if the runner holds the sequence, else 0 (its
    /// thread suspended, and the runner ends when that thread returns).
    /// Set at every resume (`Executor::resume`).
    pub(super) limit: Cell<u32>,
    /// The block's first panicking thread (`threadIdx`) and what the panic
    /// hook saw; the block's other threads run on (`threads::stopped`).
    pub(super) panic: RefCell<Option<(Dim3, Option<PanicRecord>)>>,
    /// The scheduler unwinds the runners still suspended after a failure:
    /// the unwinding that a runner's loop catches is no panic of a thread.
    pub(super) unwinding: Cell<bool>,
    /// A failed block left `wait` entries other than `Done`.
    pub(super) dirty: Cell<bool>,
    pub(super) arena: RefCell<Arena>,
    /// While a kernel whose barriers are `.await`s runs its phases
    /// (`phases`): what polls the calling thread, for the runners that the
    /// scheduler starts when a thread waits inside a phase.
    pub(super) phases: Cell<Option<NonNull<dyn PollThread>>>,
    /// Threads that reached a barrier of the body (not returned) in the
    /// current phase.
    pub(super) phase_pending: Cell<u32>,
    /// Threads that paused at a [`Step`](super::phases::Step) (a
    /// grid-stride loop's) in the current pass of a phase: the phase polls
    /// them again before it ends.
    pub(super) phase_stepped: Cell<u32>,
    /// The current pass of the phase is not its first: it polls only the
    /// threads that paused at a step (`Wait::Running`), not those at a
    /// barrier of the body or waiting on a coroutine.
    pub(super) later_pass: Cell<bool>,
    /// Why the thread being polled is pending, if not at a barrier: set by a
    /// `Step` that pauses it or a [`Collective`](super::awaits::Collective)
    /// at which it waits, read back (and reset) by the poll that ran it
    /// (`phases`).
    pub(super) paused: Cell<Paused>,
    /// Threads that wait at a warp collective of the body (`awaits`), not
    /// released yet, in all warps; and per warp.
    pub(super) phase_warp: Cell<u32>,
    pub(super) warp_arrived: Vec<Cell<u32>>,
    /// The replay of a collective of the body in progress (`awaits`), which
    /// `entry::meet` answers instead of suspending the thread.
    pub(super) replay: Cell<Replay>,
    /// The first lane of a warp that a poll of the current runner's loop
    /// released at a collective of the body (`awaits`): the loop polls
    /// the warp again from there (`threads`); [`NO_REWIND`] if none.
    pub(super) rewind: Cell<u32>,
    /// A thread of the current pass waited on its runner's coroutine (a
    /// barrier or warp collective the macro does not see, `entry`): the
    /// pass's `Step`s no longer pause (see `phases`).
    pub(super) suspended: Cell<bool>,
    /// The grid-stride loops that threads of the current pass of a phase
    /// registered to run in lockstep after it (`lockstep`).
    pub(super) lockstep: RefCell<Vec<Entry>>,
    /// Bytes of shared memory, static and dynamic, one block may use.
    pub(super) shared_limit: usize,
    /// The `shared_array!` sites the block has allocated, `(site, size,
    /// address)`, the first [`SITE_CACHE`] of them (site 0: free): what a
    /// thread's `shared_array!` finds without borrowing the arena
    /// (`entry::shared_alloc`). Cleared with the arena for every block.
    pub(super) sites: [Cell<(usize, usize, usize)>; SITE_CACHE],
}

impl Block {
    /// The threads of warp `w` (linear indices): 32, fewer in a partial
    /// last warp.
    pub(super) fn lanes(&self, w: usize) -> core::ops::Range<usize> {
        (w * WARP as usize)..(self.n as usize).min((w + 1) * WARP as usize)
    }
}

/// A thread's grid-stride loop registered with its block to run in
/// lockstep (`lockstep`).
#[derive(Clone, Copy)]
pub(crate) struct Entry {
    /// The thread's linear index and `threadIdx`.
    pub(super) t: u32,
    pub(super) idx: Dim3,
    /// The thread's `lockstep::Lockstep`, pinned in its future.
    pub(super) data: *mut (),
    /// `lockstep::rounds` for the loop's iterator and closure types.
    pub(super) rounds: unsafe fn(&Block, &mut [Entry]) -> Option<u32>,
}

/// The replay of a collective's function in progress on this block (`awaits`): `results` of its first `known` meetings; `used` of
/// them answered so far; whether a meeting beyond them was recorded.
#[derive(Clone, Copy)]
pub(crate) struct Replay {
    pub(super) results: *mut u64,
    pub(super) known: u32,
    pub(super) used: u32,
    pub(super) recorded: bool,
}

impl Replay {
    /// No replay.
    pub(super) const NONE: Replay = Replay { results: core::ptr::null_mut(), known: 0, used: 0, recorded: false };
}

/// The `shared_array!` sites of a block that [`Block::sites`] keeps; a
/// block with more finds the others in its arena.
pub(super) const SITE_CACHE: usize = 4;

/// Why a thread's poll in a block in phases is pending (`Block::paused`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Paused {
    /// At a barrier of the body.
    Barrier,
    /// At a grid-stride loop's step.
    Step,
    /// At a warp collective of the body.
    Collective,
}

/// What a runner of a block in phases (`phases`) runs: a pass over the
/// block's threads from `Block::next` on, polling each (in a later pass,
/// each that paused at a step) and recording whether it waits at a barrier
/// or has returned.
pub(crate) trait PollThread {
    fn run_pass(&self);
}

/// No warp to poll again (of `Block::rewind`).
pub(super) const NO_REWIND: u32 = u32::MAX;

/// What `Block::sequencer` holds, instead of the runner that holds the
/// sequence, from the release of a warp at a collective of the body to the
/// loop's test after the poll (`awaits`, `threads`): the runner goes back to
/// `Block::rewind`.
pub(super) const REWIND: u32 = u32::MAX - 1;

/// No runner (of `sequencer`, `current`).
pub(super) const NO_RUNNER: u32 = u32::MAX;

/// What a runner yields instead of a thread's index when it drives the
/// phases of a block (`phases`) and waits for the threads of the current
/// phase that other runners run.
pub(super) const PHASE_END: u32 = u32::MAX;

std::thread_local! {
    /// The block this OS thread runs; null outside `Executor::run_block`.
    pub(super) static BLOCK: Cell<*const Block> = const { Cell::new(core::ptr::null()) };
    /// The yielder of the runner this OS thread runs.
    pub(super) static YIELDER: Cell<*const Yielder<(), u32>> = const { Cell::new(core::ptr::null()) };
    /// `[lo, hi)`: memory that only the block this OS thread runs uses (the
    /// first chunk of its shared memory); empty outside a block.
    pub(super) static PRIVATE: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
}

/// The linear index (x fastest) of thread `t` in a block of `d` threads.
pub(super) fn linear(t: Dim3, d: Dim3) -> u32 {
    t.x + d.x * (t.y + d.y * t.z)
}
