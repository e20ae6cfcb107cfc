//! What a capture in progress collects (see `graph`): the kernels, the
//! buffers' memory, the host fallback's operations; what a capture refuses;
//! and the lock that orders graph replays with work that looks at buffers'
//! pending work.
//!
//! A replay writes buffers without borrowing them (the graph keeps their
//! memory, not a borrow), so unlike a launch it can meet other work on its
//! buffers that has already looked at their pending work. Every enqueue
//! that orders itself by buffers (launches, copies) and every blocking use
//! of a buffer therefore holds [`REPLAYS`] shared while it looks and
//! registers; a replay holds it exclusively. A replay thus either comes
//! after such a use (and waits for it as pending work) or before it (and
//! the use waits for the replay), never in between.
//!
//! A queue carries only the flag that it is being captured
//! (`QueueInner::capturing`); what the capture collects is kept here, by
//! queue, since it holds buffers, whose pending work refers to queues.

use std::cell::Cell;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::vec::Vec;

use super::inner::QueueInner;
use super::track::Resource;
use crate::runtime::error::{Error, Result};
use crate::runtime::kernel::KernelInfo;

/// A recorded host operation, re-runnable (a graph replays it).
pub(crate) type HostOp = Arc<dyn Fn() -> Result<()> + Send + Sync + 'static>;

/// See the module docs.
static REPLAYS: RwLock<()> = RwLock::new(());

/// Held while work orders itself by buffers' pending work (see the module
/// docs).
pub(crate) fn hold() -> RwLockReadGuard<'static, ()> {
    REPLAYS.read().unwrap_or_else(|e| e.into_inner())
}

/// Held by a replay (see the module docs).
pub(crate) fn hold_exclusive() -> RwLockWriteGuard<'static, ()> {
    REPLAYS.write().unwrap_or_else(|e| e.into_inner())
}

std::thread_local! {
    /// This thread is inside [`Queue::capture`](crate::Queue::capture).
    static CAPTURING: Cell<bool> = const { Cell::new(false) };
}

/// What a capture collects.
#[derive(Default)]
pub(crate) struct CaptureState {
    pub(crate) kernels: Vec<&'static KernelInfo>,
    /// Device memory the graph uses, and whether it writes it.
    pub(crate) buffers: Vec<(Arc<Resource>, bool)>,
    pub(crate) host_ops: Vec<HostOp>,
}

impl CaptureState {
    fn keep(&mut self, res: &Arc<Resource>, write: bool) {
        match self.buffers.iter_mut().find(|(r, _)| Arc::ptr_eq(r, res)) {
            Some(entry) => entry.1 |= write,
            None => self.buffers.push((res.clone(), write)),
        }
    }
}

/// What the captures in progress have collected, by queue id.
static CAPTURES: Mutex<Vec<(u64, CaptureState)>> = Mutex::new(Vec::new());

/// Whether `queue` is being captured.
pub(crate) fn is_capturing(queue: &QueueInner) -> bool {
    queue.capturing.load(Ordering::Acquire)
}

/// Starts collecting `queue`'s work (the caller holds its submit lock and
/// has checked that it is not being captured).
pub(crate) fn begin(queue: &QueueInner) {
    CAPTURES.lock().unwrap_or_else(|e| e.into_inner()).push((queue.id, CaptureState::default()));
    queue.capturing.store(true, Ordering::Release);
}

/// Ends the capture of `queue`: what it collected.
pub(crate) fn end(queue: &QueueInner) -> CaptureState {
    queue.capturing.store(false, Ordering::Release);
    let mut all = CAPTURES.lock().unwrap_or_else(|e| e.into_inner());
    match all.iter().position(|(id, _)| *id == queue.id) {
        Some(i) => all.swap_remove(i).1,
        None => CaptureState::default(),
    }
}

/// Runs `f` on what the capture of `queue` has collected, if it is being
/// captured.
fn collect(queue: &QueueInner, f: impl FnOnce(&mut CaptureState)) {
    if !is_capturing(queue) {
        return;
    }
    let mut all = CAPTURES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, c)) = all.iter_mut().find(|(id, _)| *id == queue.id) {
        f(c);
    }
}

/// Marks the calling thread as inside [`Queue::capture`](crate::Queue::capture) (or no longer).
pub(crate) fn set_thread_capturing(yes: bool) {
    CAPTURING.with(|c| c.set(yes));
}

/// [`Error::Queue`] for an operation that a capture cannot contain: a
/// synchronization, an event, a wait, on any queue of a thread that is
/// capturing (CUDA: `cudaErrorStreamCaptureUnsupported`, which also
/// invalidates the capture).
pub(crate) fn refuse_in_capture(queue: &QueueInner, op: &'static str) -> Result<()> {
    refuse_captured_by_another_thread(queue, op)?;
    if CAPTURING.with(|c| c.get()) {
        return Err(Error::from(crate::error::Queue {
            op,
            reason: "inside `Queue::capture` only queued launches and `memcpy_dtod` on the captured queue are allowed \
                     (CUDA forbids synchronizing during stream capture); do it before or after the capture"
                .into(),
        }));
    }
    Ok(())
}

/// [`Error::Queue`] for work enqueued on a queue that another thread is
/// capturing into a graph. CUDA would capture it (a capturing stream takes
/// work from every thread): it would not run now but at every replay of a
/// graph whose code never named it, a silent wrong answer for the thread
/// that enqueued it.
pub(crate) fn refuse_captured_by_another_thread(queue: &QueueInner, op: &'static str) -> Result<()> {
    if is_capturing(queue) && !CAPTURING.with(|c| c.get()) {
        return Err(captured_by_another_thread(op));
    }
    Ok(())
}

fn captured_by_another_thread(op: &'static str) -> Error {
    Error::from(crate::error::Queue {
        op,
        reason: "another thread is capturing this queue into a graph (`Queue::capture`), so nothing enqueued on it \
                 runs until that graph is launched; wait until the capture has ended, or use another queue"
            .into(),
    })
}

/// [`Error::Queue`] for queued work on a queue other than the one being
/// captured, from the capturing thread (its tracking could join the
/// captured stream with another, which CUDA forbids).
pub(crate) fn refuse_other_queue_in_capture(op: &'static str) -> Result<()> {
    if CAPTURING.with(|c| c.get()) {
        return Err(Error::from(crate::error::Queue {
            op,
            reason: "inside `Queue::capture` only the captured queue takes work; enqueue on other queues before or \
                     after the capture"
                .into(),
        }));
    }
    Ok(())
}

/// [`Error::InvalidLaunch`] for a blocking launch inside a capture.
pub(crate) fn refuse_blocking_in_capture(kernel: &KernelInfo) -> Result<()> {
    if CAPTURING.with(|c| c.get()) {
        return Err(Error::from(crate::error::InvalidLaunch {
            kernel: kernel.path(),
            reason:
                "a blocking launch inside `Queue::capture` (it would synchronize, which CUDA forbids during stream \
                     capture): use `kernel::on(g, …)` with the capture, or launch it before or after"
                    .into(),
        }));
    }
    Ok(())
}

/// [`Error::Queue`] for a blocking copy inside a capture.
pub(crate) fn refuse_copy_in_capture(op: &'static str) -> Result<()> {
    if CAPTURING.with(|c| c.get()) {
        return Err(Error::from(crate::error::Queue {
            op,
            reason: "a blocking copy inside `Queue::capture` (CUDA forbids synchronous copies during stream capture): \
                     use `g.memcpy_dtod`, or copy before or after the capture"
                .into(),
        }));
    }
    Ok(())
}

/// A launch of `kernel` being captured on `queue` with `buffers`.
pub(crate) fn note_launch<'r>(
    queue: &QueueInner,
    kernel: &'static KernelInfo,
    buffers: impl IntoIterator<Item = (&'r Arc<Resource>, bool)>,
) {
    collect(queue, |c| {
        if !c.kernels.iter().any(|k| core::ptr::eq(*k, kernel)) {
            c.kernels.push(kernel);
        }
        for (r, w) in buffers {
            c.keep(r, w);
        }
    });
}

/// A copy being captured on `queue`.
pub(crate) fn note_copy(queue: &QueueInner, keep: &[(&Arc<Resource>, bool)]) {
    collect(queue, |c| {
        for &(r, w) in keep {
            c.keep(r, w);
        }
    });
}

/// Host fallback: an operation captured on `queue`.
pub(crate) fn push_host_op(queue: &QueueInner, op: HostOp) {
    collect(queue, |c| c.host_ops.push(op));
}
