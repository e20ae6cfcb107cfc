//! Warp collectives of a kernel's body as `.await`s: met by the block's
//! phases (`phases`), with no coroutine switch.
//!
//! The host side of the kernel macro turns each call of a warp collective
//! that it sees in a body with barriers (`warp::shuffle_*`, `warp::all`,
//! `any`, `ballot`, `sync_warp`, `reduce_sum`, `reduce_max`, `reduce_min`)
//! into an await of a [`Collective`], which holds the callee and its
//! arguments. Polled in a block in phases, it runs offload's function in
//! *replay*: the function's meetings with the warp (`entry::meet`, one for
//! a shuffle or vote, one or more for a reduction) are answered from the
//! results the future has collected; the first meeting beyond them records
//! the lane's operands, as a lane that waits, and the future is pending
//! (the function's result, computed from placeholders, is dropped). When
//! every lane of the warp waits at a collective ([`arrive`]), the warp is
//! released as the scheduler releases one (`block`): the results from all
//! lanes' inputs at once ([`warp_results`]), the values of a reduction
//! that the whole warp starts (`reduce::snapshot`), the lanes running
//! again: the loop that polled the last lane polls the warp again from its
//! first lane (`Block::rewind`), or, if that runner ends (its thread
//! waited on a coroutine before), the phase's next pass does. The poll that follows runs the
//! function once more, which now gets its result: a shuffle or vote is
//! two polls, a reduction of the whole warp too (its lanes compute the
//! rest from the warp's values, `reduce`).
//!
//! The meaning is the scheduler's: the same releases, the same results, the
//! same reports. A warp some of whose lanes wait at a collective while the
//! others have returned or wait at a barrier is divergent: reported when
//! the phase ends ([`unreleased`]). A warp whose lanes wait at collectives
//! of different kinds is reported at once. A collective the macro does not
//! see (in a function the body calls, in a closure) meets on coroutines as
//! before; a warp whose lanes wait partly at one the macro sees and partly
//! at one it does not meets once no runner can go on: the scheduler
//! releases it (`Executor::next_runner`), as lanes at two collectives of
//! the same kind meet on a GPU. Outside a block in phases, or where the callee is not
//! offload's (a function of the user's of the same name), the future calls
//! the callee once, as written.

use core::future::Future;
use core::ops::Range;
use core::pin::Pin;
use core::task::{Context, Poll};
use std::boxed::Box;
use std::string::String;

use super::collective::{warp_results, WARP};
use super::deadlock;
use super::entry::current;
use super::failure::Divergent;
use super::state::{Block, Paused, Replay, Wait, REWIND};

/// The most meetings one collective makes with its warp: a reduction of a
/// partial warp, five shuffles down and a broadcast (`device::warp`).
const MAX_MEETS: usize = 8;

/// Ends the replay, also when the function panics.
struct EndReplay<'a>(&'a Block);

impl Drop for EndReplay<'_> {
    fn drop(&mut self) {
        self.0.replay.set(Replay::NONE);
    }
}

/// A function called with a tuple of arguments: how a [`Collective`] calls
/// its callee, whatever its arity.
pub trait CallWith<A> {
    /// The callee's result.
    type Output;
    /// Calls `self` with the arguments `a`.
    fn call_with(self, a: A) -> Self::Output;
}

impl<F: FnOnce() -> R, R> CallWith<()> for F {
    type Output = R;
    #[inline(always)]
    fn call_with(self, _: ()) -> R {
        self()
    }
}

impl<F: FnOnce(A0) -> R, A0, R> CallWith<(A0,)> for F {
    type Output = R;
    #[inline(always)]
    fn call_with(self, (a0,): (A0,)) -> R {
        self(a0)
    }
}

impl<F: FnOnce(A0, A1) -> R, A0, A1, R> CallWith<(A0, A1)> for F {
    type Output = R;
    #[inline(always)]
    fn call_with(self, (a0, a1): (A0, A1)) -> R {
        self(a0, a1)
    }
}

/// The warp collectives of [`crate::warp`] that the kernel macro makes
/// awaits of a [`Collective`] in a body with barriers, by name.
#[derive(Clone, Copy)]
pub enum WarpFn {
    /// [`crate::warp::shuffle_idx`].
    ShuffleIdx,
    /// [`crate::warp::shuffle_up`].
    ShuffleUp,
    /// [`crate::warp::shuffle_down`].
    ShuffleDown,
    /// [`crate::warp::shuffle_xor`].
    ShuffleXor,
    /// [`crate::warp::all`].
    All,
    /// [`crate::warp::any`].
    Any,
    /// [`crate::warp::ballot`].
    Ballot,
    /// [`crate::warp::sync_warp`].
    SyncWarp,
    /// [`crate::warp::reduce_sum`].
    ReduceSum,
    /// [`crate::warp::reduce_max`].
    ReduceMax,
    /// [`crate::warp::reduce_min`].
    ReduceMin,
}

/// Whether `f`, the function a kernel's body calls by the name of warp
/// collective `which`, is offload's (and not a function of the user's of
/// that name), as `__private::is_sync_threads` tells; for a generic one, any
/// instance. The names of function item types are constants, which the
/// optimizer compares at compile time.
#[inline(always)]
pub fn is_warp_fn<F>(f: &F, which: WarpFn) -> bool {
    use crate::warp;
    use core::any::type_name_of_val as name;
    // A generic function's instance for `u32`, which its name ends with.
    let (theirs, generic) = match which {
        WarpFn::ShuffleIdx => (name(&warp::shuffle_idx::<u32>), true),
        WarpFn::ShuffleUp => (name(&warp::shuffle_up::<u32>), true),
        WarpFn::ShuffleDown => (name(&warp::shuffle_down::<u32>), true),
        WarpFn::ShuffleXor => (name(&warp::shuffle_xor::<u32>), true),
        WarpFn::All => (name(&warp::all), false),
        WarpFn::Any => (name(&warp::any), false),
        WarpFn::Ballot => (name(&warp::ballot), false),
        WarpFn::SyncWarp => (name(&warp::sync_warp), false),
        WarpFn::ReduceSum => (name(&warp::reduce_sum::<u32>), true),
        WarpFn::ReduceMax => (name(&warp::reduce_max::<u32>), true),
        WarpFn::ReduceMin => (name(&warp::reduce_min::<u32>), true),
    };
    let ours = name(f).as_bytes();
    if !generic {
        return ours == theirs.as_bytes();
    }
    // `path<u32>` against `path<T>`: the same path, then `<`.
    let path = &theirs.as_bytes()[..theirs.len() - "u32>".len()];
    ours.len() > path.len() && &ours[..path.len()] == path
}

/// A warp collective of a kernel's body on the host (what the macro makes
/// of a call of one; see the module docs): the callee `F`, its arguments
/// `A`, and the results of the meetings with the warp so far.
pub struct Collective<F, A> {
    call: Option<(F, A)>,
    /// The callee is offload's collective (else it is called once).
    offload: bool,
    /// The thread waits at its last recorded meeting.
    waiting: bool,
    known: u32,
    results: [u64; MAX_MEETS],
}

// The callee and its arguments are never pinned: the future moves them out
// (`Option::take`) or copies them, and makes no `Pin` of them.
impl<F, A> Unpin for Collective<F, A> {}

impl<F: CallWith<A>, A> Collective<F, A> {
    /// The collective `f(a…)`, called by the name of `which`: replayed if
    /// `f` is offload's function of that name ([`is_warp_fn`], decided here
    /// so that no caller can claim it for another function), whose
    /// arguments are all `Copy` values (`WarpValue`s, `u32`, `bool`); else
    /// called once, as written.
    #[inline(always)]
    pub fn new(f: F, a: A, which: WarpFn) -> Self {
        let offload = is_warp_fn(&f, which);
        Collective { call: Some((f, a)), offload, waiting: false, known: 0, results: [0; MAX_MEETS] }
    }

    /// Calls the callee as written, once.
    #[inline(always)]
    fn once(&mut self) -> F::Output {
        let (f, a) = self.call.take().expect("a collective is polled after it completed");
        f.call_with(a)
    }
}

impl<F: CallWith<A>, A> Future for Collective<F, A> {
    type Output = F::Output;

    #[inline(always)]
    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.get_mut();
        if !this.offload {
            return Poll::Ready(this.once());
        }
        let Some((b, t)) = current().filter(|(b, _)| b.phases.get().is_some()) else {
            return Poll::Ready(this.once());
        };
        if this.waiting {
            // Released (a thread at a collective is polled only then): its
            // result is the next the replay knows.
            assert!((this.known as usize) < MAX_MEETS, "offload: bug: a warp collective met its warp too often");
            this.results[this.known as usize] = b.output[t].get();
            this.known += 1;
            this.waiting = false;
        }
        let (f, a) = this.call.as_ref().expect("a collective is polled after it completed");
        b.replay.set(Replay { results: this.results.as_mut_ptr(), known: this.known, used: 0, recorded: false });
        let end = EndReplay(b);
        // SAFETY: `offload` (set by `new` from `F`'s type): `F` is a function
        // item of offload's (zero-sized, `Copy`) and its arguments are `Copy` values, so the copies are
        // values of their own; the originals stay in `call` for the next
        // replay and are dropped (a no-op) with it.
        let r = unsafe { core::ptr::read(f).call_with(core::ptr::read(a)) };
        let recorded = b.replay.get().recorded;
        drop(end);
        if recorded {
            this.waiting = true;
            b.paused.set(Paused::Collective);
            return Poll::Pending;
        }
        this.call = None;
        Poll::Ready(r)
    }
}

/// Thread `t` of block `b` waits at a collective of the body (its poll
/// recorded it): counts it, and releases its warp if it was the warp's
/// last lane to arrive.
pub(super) fn arrive(b: &Block, t: usize) {
    b.phase_warp.set(b.phase_warp.get() + 1);
    let w = t / WARP as usize;
    let lanes = b.lanes(w);
    let arrived = b.warp_arrived[w].get() + 1;
    b.warp_arrived[w].set(arrived);
    if arrived as usize == lanes.len() {
        release(b, w, lanes);
    }
}

/// Releases warp `w` (threads `lanes`), every lane of which waits at a
/// collective of the body: their results, and the lanes run on in the
/// phase's next pass. Stops the block (`Divergent`) if the lanes wait at
/// collectives of different kinds.
fn release(b: &Block, w: usize, lanes: Range<usize>) {
    if let Err(reason) = results(b, w, lanes.clone()) {
        std::panic::resume_unwind(Box::new(Divergent(reason)));
    }
    let first = lanes.start as u32;
    lanes.for_each(|t| b.wait[t].set(Wait::Running));
    if b.sequencer.get() == b.current.get() {
        // The poll returns to the loop of this runner, which goes on: it
        // polls the warp again at once, while the lanes' futures are in
        // the cache.
        take_arrived(b, w);
        b.rewind.set(first);
        // The loop's test after each thread, that the runner still holds
        // the sequence, finds the rewind (`threads`).
        b.sequencer.set(REWIND);
    } else {
        // The thread waited on its runner's coroutine before; its runner
        // ends after this poll.
        released_in_body(b, w);
    }
}

/// The lanes of warp `w` that waited at a collective of the body run on in
/// the phase's next pass (they were released).
pub(super) fn released_in_body(b: &Block, w: usize) {
    let m = take_arrived(b, w);
    b.phase_stepped.set(b.phase_stepped.get() + m);
}

/// Forgets the lanes of warp `w` counted as waiting at a collective of the
/// body (it was released); returns how many there were.
fn take_arrived(b: &Block, w: usize) -> u32 {
    let m = b.warp_arrived[w].replace(0);
    b.phase_warp.set(b.phase_warp.get() - m);
    m
}

/// The results of the collective at which every lane of warp `w` (threads
/// `lanes`) waits, by whatever path (`awaits`, or `entry::meet` on a
/// coroutine), into `Block::output`, or the values of a reduction that
/// they all start (`reduce::snapshot`; the lanes compute their results,
/// the first shuffle's too if they need it); or the error of lanes at
/// collectives of different kinds.
pub(super) fn results(b: &Block, w: usize, lanes: Range<usize>) -> Result<(), String> {
    if let Some(reason) = deadlock::mixed_collectives(b, w, lanes.clone()) {
        return Err(reason);
    }
    if super::reduce::snapshot(b, w, lanes.clone()) {
        return Ok(());
    }
    let m = lanes.len();
    let mut inputs = [(0u64, 0u32); WARP as usize];
    let mut out = [0u64; WARP as usize];
    for (i, t) in lanes.clone().enumerate() {
        let (_, v, a) = b.input[t].get();
        inputs[i] = (v, a);
    }
    warp_results(b.input[lanes.start].get().0, &inputs[..m], &mut out[..m]);
    for (t, &r) in lanes.zip(&out[..m]) {
        b.output[t].set(r);
    }
    Ok(())
}

/// The end of a phase in which threads still wait at collectives of the
/// body (their warps can never meet): stops the block with the reason.
#[cold]
pub(super) fn unreleased(b: &Block) -> ! {
    std::panic::resume_unwind(Box::new(Divergent(deadlock::diagnose(b))))
}
