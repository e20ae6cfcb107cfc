//! [`Queue`]: the public handle of a queue, made on a device, synchronized,
//! dropped. Its shared state is `inner`'s; events (`event`), copies
//! (`copy`), captures (`graph`) and interoperation (`interop`) add methods.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::capture::refuse_in_capture;
use super::inner::{Imp, QueueInner};
use super::progress::Progress;
use super::track;
use crate::runtime::cuda::queue::CudaQueue;
use crate::runtime::device::Device;
use crate::runtime::device_backend::Concrete;
use crate::runtime::error::Result;
use crate::runtime::host_queue::HostQueue;
use crate::runtime::select::current_device;

/// An in-order queue of work for the device: a CUDA stream
/// (`cuStreamCreate(CU_STREAM_NON_BLOCKING)`), or on the host fallback a
/// worker thread that runs the queue's operations one after the other.
///
/// Launch on it with the queued form every `#[kernel]` has
/// (`saxpy::on(&q, cfg, …)`), copy with [`memcpy_htod`](Self::memcpy_htod),
/// [`memcpy_dtoh`](Self::memcpy_dtoh) and [`memcpy_dtod`](Self::memcpy_dtod);
/// all return as soon as the work is enqueued. Work on one queue runs in
/// the order it was enqueued (CUDA stream semantics); work on different
/// queues is ordered by [`Event`](crate::Event)s, and by the buffers both use (see
/// `docs/async.md`, section 3). Errors of the work arrive at the next
/// [`synchronize`](Self::synchronize) (section 5).
///
/// Dropping a queue waits for its pending work. An error of that work
/// that no wait reported is printed to stderr as one warning line, then,
/// or, while an event or future of the queue is alive (its wait reports
/// the error), when the last of them is dropped if none did.
pub struct Queue {
    pub(crate) inner: Arc<QueueInner>,
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
    /// The device's start error ([`Device::info`]); [`Error::Driver`](crate::Error::Driver) if
    /// `cuStreamCreate` fails; [`Error::Queue`](crate::Error::Queue) if the host fallback cannot
    /// start the worker thread.
    pub fn on_device(device: Device) -> Result<Queue> {
        let backend = device.concrete()?;
        let id = NEXT_QUEUE.fetch_add(1, Ordering::Relaxed);
        let progress = Arc::new(Progress::new());
        let imp = match backend {
            Concrete::Host(_) => Imp::Host(HostQueue::new(id, progress.clone())?),
            Concrete::Cuda(c) => Imp::Cuda(CudaQueue::new(c)?),
        };
        let inner = Arc::new(QueueInner::new(id, device, progress, imp));
        super::inner::register_queue(&inner);
        Ok(Queue { inner })
    }

    /// Waits until every operation enqueued so far has finished, then
    /// reports the first error of the queue's work since the last report
    /// (a kernel panic, a stack overflow, a driver fault), naming the
    /// kernel (`docs/async.md`, section 5).
    ///
    /// On a GPU, whose context records one panic at a time for all its
    /// queues, the attribution is exact when the panic is in the kernel's
    /// own body (its location lies within the kernel's lines): it is
    /// reported here only if this queue launched that kernel, else kept
    /// for the queue that did. A panic elsewhere (a function the kernel
    /// calls, defined outside it) is reported by the first wait of any
    /// queue that sees it, naming the unchecked kernels as candidates.
    ///
    /// # Errors
    /// That error; [`Error::Queue`](crate::Error::Queue) inside [`capture`](Self::capture).
    pub fn synchronize(&self) -> Result<()> {
        refuse_in_capture(&self.inner, "synchronize a queue")?;
        let seq = *self.inner.lock_submit();
        self.inner.wait_host(seq);
        self.inner.collect_errors();
        track::reap();
        self.inner.progress.take_error()
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
        self.inner.handle_dropped();
        if let Imp::Host(h) = &self.inner.imp {
            h.stop();
        }
        track::reap();
    }
}
