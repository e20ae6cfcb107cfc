//! The shared state of a queue ([`QueueInner`]): its device, sequence
//! numbers, progress and backend half (a CUDA stream or a host worker),
//! and how one queue waits for another's work. What buffers' pending work
//! (`track`) refers to, so it sits below them and below captures (`capture`),
//! which hold buffers; the public [`Queue`](crate::Queue) is `handle`'s.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::vec::Vec;

use super::progress::Progress;
use crate::runtime::cuda::queue::{CudaQueue, Fence};
use crate::runtime::device::Device;
use crate::runtime::error::Result;
use crate::runtime::host_queue::HostQueue;

/// The shared state of a queue; buffers and events keep it (not the
/// stream or worker, which [`Queue`](crate::Queue)'s drop ends) alive.
pub(crate) struct QueueInner {
    pub(crate) id: u64,
    /// The device whose work the queue holds.
    pub(crate) device: Device,
    /// The last sequence number handed out. Held while enqueueing, so
    /// that sequence numbers follow the queue's order.
    pub(crate) submit: Mutex<u64>,
    pub(crate) progress: Arc<Progress>,
    pub(crate) imp: Imp,
    /// Whether a capture (`Queue::capture`) collects the queue's work now;
    /// what it has collected is `capture`'s. Set with the submit lock held,
    /// which enqueueing holds while it reads it.
    pub(crate) capturing: AtomicBool,
    /// Events and futures of the queue alive now ([`Waiter`]s): a wait of
    /// theirs may still report the queue's error after the queue is gone.
    waiters: AtomicUsize,
    /// Whether the [`Queue`](crate::Queue) handle has been dropped.
    handle_dropped: AtomicBool,
}

/// Where a queue's operations run.
pub(crate) enum Imp {
    Host(HostQueue),
    Cuda(CudaQueue),
}

impl QueueInner {
    pub(crate) fn lock_submit(&self) -> std::sync::MutexGuard<'_, u64> {
        self.submit.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether `(self, seq)` is known to be complete; on CUDA this asks the
    /// driver about a fence at or after `seq` if there is one.
    pub(crate) fn is_done(&self, seq: u64) -> bool {
        if self.progress.is_done(seq) {
            return true;
        }
        match &self.imp {
            Imp::Host(_) => false,
            Imp::Cuda(c) => c.poll(&self.progress, seq),
        }
    }

    /// Whether `(self, seq)` is complete, where `fence` (CUDA) is an event
    /// that completes after it: that event is asked (`cuEventQuery`), not
    /// only the queue's own fences as in [`is_done`](Self::is_done). What
    /// [`Event::is_complete`](crate::Event::is_complete) and the futures poll.
    pub(crate) fn reached(&self, seq: u64, fence: Option<&Fence>) -> bool {
        match (&self.imp, fence) {
            (Imp::Cuda(c), Some(f)) => c.query(self.id, &self.progress, f, seq),
            _ => self.is_done(seq),
        }
    }

    /// Blocks the calling thread until `(self, seq)` is complete. Errors
    /// are left for the queue's next report.
    pub(crate) fn wait_host(&self, seq: u64) {
        if self.progress.is_done(seq) {
            return;
        }
        match &self.imp {
            Imp::Host(_) => self.progress.block_until(seq),
            Imp::Cuda(c) => c.wait_host(self.id, &self.progress, seq),
        }
    }

    /// Enqueues on `self` (whose submit lock `seq` is) a wait for
    /// `(other, other_seq)`. Nothing if it is already complete or `other`
    /// is `self`. Between two GPUs (of one device or two) the stream waits
    /// for an event of the other's (`cuStreamWaitEvent` takes an event of
    /// another context or device); a host queue's worker waits on the
    /// host; a GPU queue waits for a host queue's work here, on the calling
    /// thread, before it enqueues (a stream cannot wait for a host thread).
    pub(crate) fn wait_for_locked(&self, seq: &mut u64, other: &Arc<QueueInner>, other_seq: u64) -> Result<()> {
        if core::ptr::eq(self, Arc::as_ptr(other)) || other.is_done(other_seq) {
            return Ok(());
        }
        match (&self.imp, &other.imp) {
            (Imp::Cuda(me), Imp::Cuda(them)) => {
                let fence = them.fence(&other.progress, other_seq)?;
                me.wait_event(fence.raw())
            }
            (Imp::Host(me), _) => {
                *seq += 1;
                let other = other.clone();
                me.send(
                    *seq,
                    std::boxed::Box::new(move || {
                        other.wait_host(other_seq);
                        Ok(())
                    }),
                );
                Ok(())
            }
            (Imp::Cuda(_), Imp::Host(_)) => {
                other.wait_host(other_seq);
                Ok(())
            }
        }
    }

    /// CUDA: after a wait, moves what the device recorded (a panic, a
    /// fault) into the queue's pending error. Host: the worker already did.
    pub(crate) fn collect_errors(&self) {
        if let Imp::Cuda(c) = &self.imp {
            if let Some(e) = c.collect_errors(self.id) {
                self.progress.fail(e);
            }
        }
    }
}

impl QueueInner {
    /// The shared state of a new queue (`Queue::new`'s).
    pub(crate) fn new(id: u64, device: Device, progress: Arc<Progress>, imp: Imp) -> QueueInner {
        QueueInner {
            id,
            device,
            submit: Mutex::new(0),
            progress,
            imp,
            capturing: AtomicBool::new(false),
            waiters: AtomicUsize::new(0),
            handle_dropped: AtomicBool::new(false),
        }
    }

    /// The queue's handle is being dropped (its work waited for and its
    /// errors collected): the error no wait reported is printed now, unless
    /// an event or future of the queue is alive, whose wait may still
    /// report it (then the last of them to go prints it if none did).
    pub(crate) fn handle_dropped(&self) {
        self.handle_dropped.store(true, Ordering::SeqCst);
        if self.waiters.load(Ordering::SeqCst) == 0 {
            self.warn_uncollected();
        }
    }

    /// Prints the queue's pending error, if any, as one warning line
    /// (taking it: a race of the handle's drop and the last waiter's prints
    /// it once).
    fn warn_uncollected(&self) {
        if let Err(e) = self.progress.take_error() {
            std::eprintln!("offload: warning: a queue was dropped with an error nobody collected: {e}");
        }
    }
}

/// What an [`Event`](crate::Event) or a future holds of its queue: the
/// shared state, counted among the queue's waiters (see
/// [`QueueInner::handle_dropped`]).
pub(crate) struct Waiter(Arc<QueueInner>);

impl Waiter {
    pub(crate) fn new(queue: &Arc<QueueInner>) -> Waiter {
        queue.waiters.fetch_add(1, Ordering::SeqCst);
        Waiter(queue.clone())
    }
}

impl Clone for Waiter {
    fn clone(&self) -> Waiter {
        Waiter::new(&self.0)
    }
}

impl core::ops::Deref for Waiter {
    type Target = Arc<QueueInner>;
    fn deref(&self) -> &Arc<QueueInner> {
        &self.0
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        if self.0.waiters.fetch_sub(1, Ordering::SeqCst) == 1 && self.0.handle_dropped.load(Ordering::SeqCst) {
            self.0.warn_uncollected();
        }
    }
}

/// Every live queue, for [`wait_queues`].
static QUEUES: Mutex<Vec<Weak<QueueInner>>> = Mutex::new(Vec::new());

/// Notes a new queue (dead ones are dropped here).
pub(crate) fn register_queue(q: &Arc<QueueInner>) {
    let mut all = QUEUES.lock().unwrap_or_else(|e| e.into_inner());
    all.retain(|w| w.strong_count() > 0);
    all.push(Arc::downgrade(q));
}

/// Waits for the work enqueued so far on every queue of `device`: what
/// `DeviceGlobal::read`/`write` wait for, on both backends (CUDA's
/// `cudaMemcpyFromSymbol` waits for the device's work). Queues being
/// captured are skipped: what is captured does not run, and a wait on a
/// capturing stream, like `cuCtxSynchronize` from any thread, would
/// invalidate the capture (`CUDA_ERROR_STREAM_CAPTURE_INVALIDATED`).
/// Errors of that work stay for each queue's next report.
pub(crate) fn wait_queues(device: Device) {
    let queues: Vec<Arc<QueueInner>> =
        QUEUES.lock().unwrap_or_else(|e| e.into_inner()).iter().filter_map(|w| w.upgrade()).collect();
    for q in queues.iter().filter(|q| q.device == device) {
        let seq = *q.lock_submit();
        if !q.capturing.load(std::sync::atomic::Ordering::Acquire) {
            q.wait_host(seq);
        }
    }
}
