//! Asynchronous execution: [`Queue`]s (CUDA streams; worker threads on the
//! host fallback), [`Event`]s, queued launches (`kernel::on`), scopes for
//! borrowed host memory, graphs and futures. The user's contract is
//! `docs/async.md`; this module is its generic half, the backends' halves
//! are `runtime::host_queue` and `runtime::cuda::queue`.
//!
//! Every operation enqueued on a queue gets the next *sequence number* of
//! that queue (1, 2, …); "`(q, n)` is complete" means every operation of
//! `q` up to `n` has finished. Buffers remember their pending work as such
//! pairs (see [`track`]), so a launch on one queue that needs work of
//! another waits for it on the device, and host access waits on the host.

pub(crate) mod copy;
pub(crate) mod enqueue;
mod future;
pub(crate) mod graph;
mod interop;
pub(crate) mod progress;
pub(crate) mod scope;
pub(crate) mod track;

use std::string::String;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::runtime::cuda::queue::{elapsed_ms, CudaQueue, Fence, TimedEvent};
use crate::runtime::device::Device;
use crate::runtime::device_backend::Concrete;
use crate::runtime::error::{Error, Result};
use crate::runtime::host_queue::HostQueue;
use crate::runtime::select::current_device;
use progress::Progress;

pub use enqueue::{Enqueue, QueueSliceArg, QueueSliceArgMut};
pub use future::Wait;
pub use graph::{Capture, Graph};
pub use interop::{cu_context, BufferUse};
pub use scope::{scope, Scope};

/// An in-order queue of work for the device: a CUDA stream
/// (`cuStreamCreate(CU_STREAM_NON_BLOCKING)`), or on the host fallback a
/// worker thread that runs the queue's operations one after the other.
///
/// Launch on it with the queued form every `#[kernel]` has
/// (`saxpy::on(&q, cfg, …)`), copy with [`memcpy_htod`](Self::memcpy_htod),
/// [`memcpy_dtoh`](Self::memcpy_dtoh) and [`memcpy_dtod`](Self::memcpy_dtod);
/// all return as soon as the work is enqueued. Work on one queue runs in
/// the order it was enqueued (CUDA stream semantics); work on different
/// queues is ordered by [`Event`]s, and by the buffers both use (see
/// `docs/async.md`, section 3). Errors of the work arrive at the next
/// [`synchronize`](Self::synchronize) (section 5).
///
/// Dropping a queue waits for its pending work; an error nobody collected
/// is printed to stderr as one warning line.
pub struct Queue {
    pub(crate) inner: Arc<QueueInner>,
}

/// The shared state of a queue; buffers and events keep it (not the
/// stream or worker, which [`Queue`]'s drop ends) alive.
pub(crate) struct QueueInner {
    pub(crate) id: u64,
    /// The device whose work the queue holds.
    pub(crate) device: Device,
    /// The last sequence number handed out. Held while enqueueing, so
    /// that sequence numbers follow the queue's order.
    pub(crate) submit: Mutex<u64>,
    pub(crate) progress: Arc<Progress>,
    pub(crate) imp: Imp,
    /// What a capture in progress has collected (see `graph`).
    pub(crate) capture: Mutex<Option<graph::CaptureState>>,
}

/// Where a queue's operations run.
pub(crate) enum Imp {
    Host(HostQueue),
    Cuda(CudaQueue),
}

static NEXT_QUEUE: AtomicU64 = AtomicU64::new(1);

impl Queue {
    /// A new queue on this thread's device ([`current_device`]).
    ///
    /// # Errors
    /// The runtime's selection errors; as [`on_device`](Self::on_device).
    pub fn new() -> Result<Queue> {
        Self::on_device(current_device()?)
    }

    /// A new queue on `device`: its launches run there and its copies use
    /// that device's copy engines; kernels launched on it take `device`'s
    /// `DeviceBuffer`s (and a peer's, once [`Device::enable_peer_access`]
    /// allowed it). Queues of several devices, driven from one thread or
    /// many, run at the same time.
    ///
    /// # Errors
    /// The device's start error ([`Device::info`]); [`Error::Driver`] if
    /// `cuStreamCreate` fails; [`Error::Queue`] if the host fallback cannot
    /// start the worker thread.
    pub fn on_device(device: Device) -> Result<Queue> {
        let backend = device.concrete()?;
        let id = NEXT_QUEUE.fetch_add(1, Ordering::Relaxed);
        let progress = Arc::new(Progress::new());
        let imp = match backend {
            Concrete::Host(_) => Imp::Host(HostQueue::new(id, progress.clone())?),
            Concrete::Cuda(c) => Imp::Cuda(CudaQueue::new(c)?),
        };
        Ok(Queue {
            inner: Arc::new(QueueInner { id, device, submit: Mutex::new(0), progress, imp, capture: Mutex::new(None) }),
        })
    }

    /// Waits until every operation enqueued so far has finished, then
    /// reports the first error of the queue's work since the last report
    /// (a kernel panic, a stack overflow, a driver fault), naming the
    /// kernel (`docs/async.md`, section 5).
    ///
    /// # Errors
    /// That error; [`Error::Queue`] inside [`capture`](Self::capture).
    pub fn synchronize(&self) -> Result<()> {
        graph::refuse_in_capture(&self.inner, "synchronize a queue")?;
        let seq = *self.inner.lock_submit();
        self.inner.wait_host(seq);
        self.inner.collect_errors();
        track::reap();
        self.inner.progress.take_error()
    }

    /// An [`Event`] that completes when the work enqueued so far has
    /// finished (`cuEventRecord`).
    ///
    /// # Errors
    /// [`Error::Driver`] if `cuEventCreate` / `cuEventRecord` fails;
    /// [`Error::Queue`] inside [`capture`](Self::capture).
    pub fn record(&self) -> Result<Event> {
        graph::refuse_in_capture(&self.inner, "record an event")?;
        let mut seq = self.inner.lock_submit();
        let timing = match &self.inner.imp {
            Imp::Host(h) => {
                *seq += 1;
                let stamp = Arc::new(std::sync::OnceLock::new());
                let s = stamp.clone();
                h.send(
                    *seq,
                    std::boxed::Box::new(move || {
                        let _ = s.set(std::time::Instant::now());
                        Ok(())
                    }),
                );
                Timing::Host(stamp)
            }
            Imp::Cuda(c) => Timing::Cuda(c.record_timed()?),
        };
        Ok(Event { queue: self.inner.clone(), seq: *seq, timing })
    }

    /// Makes the work enqueued on this queue from now on wait until
    /// `event` has completed (`cuStreamWaitEvent`). Returns at once.
    ///
    /// # Errors
    /// [`Error::Driver`] if `cuStreamWaitEvent` fails; [`Error::Queue`]
    /// inside [`capture`](Self::capture).
    pub fn wait(&self, event: &Event) -> Result<()> {
        graph::refuse_in_capture(&self.inner, "wait for an event")?;
        if Arc::ptr_eq(&event.queue, &self.inner) {
            return Ok(());
        }
        let mut seq = self.inner.lock_submit();
        match (&self.inner.imp, &event.timing) {
            (Imp::Cuda(c), Timing::Cuda(e)) => c.wait_event(e.raw())?,
            _ => self.inner.wait_for_locked(&mut seq, &event.queue, event.seq)?,
        }
        Ok(())
    }

    /// The device the queue runs its work on.
    pub fn device(&self) -> Device {
        self.inner.device
    }

    /// A number naming the queue in `OFFLOAD_LOG` lines (for diagnostics).
    #[doc(hidden)]
    pub fn id(&self) -> u64 {
        self.inner.id
    }
}

impl core::fmt::Debug for Queue {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let kind = match self.inner.imp {
            Imp::Host(_) => "host",
            Imp::Cuda(_) => "cuda",
        };
        f.debug_struct("Queue")
            .field("id", &self.inner.id)
            .field("backend", &kind)
            .field("device", &self.inner.device)
            .finish()
    }
}

impl Drop for Queue {
    fn drop(&mut self) {
        let seq = *self.inner.lock_submit();
        self.inner.wait_host(seq);
        self.inner.collect_errors();
        if let Err(e) = self.inner.progress.take_error() {
            std::eprintln!("offload: warning: a queue was dropped with an error nobody collected: {e}");
        }
        if let Imp::Host(h) = &self.inner.imp {
            h.stop();
        }
        track::reap();
    }
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
    /// [`Event::is_complete`] and the futures poll.
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

/// A point in a queue: complete once the work enqueued on its queue before
/// [`Queue::record`] has finished (a CUDA event, `cuEventRecord`; on the
/// host fallback a marker the worker reaches).
///
/// `Send + Sync`; [`Queue::wait`] on any queue, any number of times.
/// `.await` it (see [`Wait`]), or [`synchronize`](Self::synchronize).
pub struct Event {
    pub(crate) queue: Arc<QueueInner>,
    pub(crate) seq: u64,
    timing: Timing,
}

enum Timing {
    Host(Arc<std::sync::OnceLock<std::time::Instant>>),
    Cuda(TimedEvent),
}

impl Event {
    /// Waits until the event has completed, then reports its queue's first
    /// error since the last report, as [`Queue::synchronize`] does.
    ///
    /// # Errors
    /// That error.
    pub fn synchronize(&self) -> Result<()> {
        self.wait_quietly();
        self.queue.collect_errors();
        self.queue.progress.take_error()
    }

    /// Waits for the event itself (CUDA: `cuEventSynchronize` of its event,
    /// not of a later point of its queue); errors are left for the queue's
    /// next report.
    fn wait_quietly(&self) {
        match (&self.timing, &self.queue.imp) {
            (Timing::Cuda(e), Imp::Cuda(c)) => c.wait_timed(self.queue.id, &self.queue.progress, e, self.seq),
            _ => self.queue.wait_host(self.seq),
        }
    }

    /// The CUDA event, as the fence that completes after the event's point.
    pub(crate) fn fence(&self) -> Option<&Arc<Fence>> {
        match &self.timing {
            Timing::Cuda(e) => Some(e.fence()),
            Timing::Host(_) => None,
        }
    }

    /// Whether the event has completed (`cuEventQuery` of its event); does
    /// not wait. A fault the query finds is kept for the queue's next
    /// report (the event then counts as complete: its work is over).
    pub fn is_complete(&self) -> bool {
        self.queue.reached(self.seq, self.fence().map(|f| &**f))
    }

    /// Milliseconds from `self` to `end` (`cuEventElapsedTime`, about
    /// 0.5 µs resolution; the host fallback's clock there). Waits for both
    /// events first; does not report queue errors.
    ///
    /// # Errors
    /// [`Error::Driver`] if `cuEventElapsedTime` fails.
    pub fn elapsed_ms(&self, end: &Event) -> Result<f32> {
        self.wait_quietly();
        end.wait_quietly();
        match (&self.timing, &end.timing) {
            (Timing::Host(a), Timing::Host(b)) => {
                let (a, b) = (a.get().copied(), b.get().copied());
                match (a, b) {
                    (Some(a), Some(b)) => Ok(if b >= a {
                        (b - a).as_secs_f64() as f32 * 1e3
                    } else {
                        -((a - b).as_secs_f64() as f32 * 1e3)
                    }),
                    _ => Err(Error::from(crate::error::Queue {
                        op: "time events",
                        reason: String::from("an event was never reached"),
                    })),
                }
            }
            (Timing::Cuda(a), Timing::Cuda(b)) => elapsed_ms(a, b),
            _ => Err(Error::from(crate::error::Queue {
                op: "time events",
                reason: String::from("the events were recorded on queues of two devices: time events of one device"),
            })),
        }
    }
}

impl core::fmt::Debug for Event {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Event").field("queue", &self.queue.id).field("seq", &self.seq).finish()
    }
}
