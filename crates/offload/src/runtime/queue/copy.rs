//! Queued copies: `Queue::memcpy_htod` / `memcpy_dtoh` / `memcpy_dtod`
//! (true asynchronous DMA between `PinnedBuffer`s and `DeviceBuffer`s),
//! and the generic enqueue they and the scope's copies share.

use std::boxed::Box;
use std::sync::Arc;

use super::capture;
use super::track::{self, Resource, Tracker};
use super::{Imp, Queue, QueueInner};
use crate::runtime::device::Device;
use crate::runtime::device_backend::check_buffer;
use crate::runtime::error::{Error, Result};
use crate::{BackendKind, DeviceBuffer, DeviceCopy, PinnedBuffer};

/// Which way a copy goes (CUDA needs to know; on the host fallback every
/// address is host memory).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Dir {
    HtoD,
    DtoH,
    DtoD,
    /// Between the memory of two GPUs (`cuMemcpyPeerAsync`), whose
    /// contexts (`CUcontext`s, as integers so that the copy is `Send`) own
    /// the destination and the source.
    Peer {
        dst_ctx: usize,
        src_ctx: usize,
    },
}

/// One copy: `bytes` from `src` to `dst` (device addresses, or host
/// pointers as integers).
#[derive(Clone, Copy, Debug)]
pub(crate) struct CopyOp {
    pub(crate) dir: Dir,
    pub(crate) dst: u64,
    pub(crate) src: u64,
    pub(crate) bytes: usize,
}

impl CopyOp {
    /// Runs the copy on the host fallback.
    ///
    /// # Safety
    /// `src` and `dst` are valid host memory of `bytes` bytes that do not
    /// overlap, and nothing else accesses `dst` meanwhile.
    pub(crate) unsafe fn run_host(&self) {
        // SAFETY: the caller's contract.
        unsafe { core::ptr::copy_nonoverlapping(self.src as *const u8, self.dst as *mut u8, self.bytes) }
    }
}

/// The length check of every queued copy: equal element counts.
pub(crate) fn check_len(op: &'static str, src: usize, dst: usize) -> Result<()> {
    if src != dst {
        return Err(Error::from(crate::error::Memory {
            op,
            reason: std::format!("the source has {src} elements but the destination has {dst}; nothing was enqueued"),
        }));
    }
    Ok(())
}

/// [`Error::Queue`] for a copy from or to host memory on a queue being
/// captured.
pub(crate) fn host_copy_in_capture() -> Error {
    Error::from(crate::error::Queue {
        op: "capture a copy",
        reason: "a graph captures copies between DeviceBuffers only (`memcpy_dtod`): host memory, pinned included, \
                 cannot be kept borrowed by a graph"
            .into(),
    })
}

/// Enqueues `copy` on `queue`, after the conflicting work of `buffers`
/// (`(tracker, written)`), and records it on them. `keep`: the device
/// memory involved, which a graph being captured keeps alive. `scoped`:
/// the copy involves memory of a scope, which a graph cannot keep.
///
/// # Safety
/// The memory of `copy` stays valid until the copy has finished (tracked
/// buffers, or host memory a scope borrows).
pub(crate) unsafe fn enqueue(
    queue: &Arc<QueueInner>,
    copy: CopyOp,
    buffers: &[(&Tracker, bool)],
    keep: &[(&Arc<Resource>, bool)],
    scoped: bool,
) -> Result<()> {
    if copy.bytes == 0 {
        return Ok(());
    }
    let _replays = capture::hold();
    let mut seq = queue.lock_submit();
    let capturing = capture::is_capturing(queue);
    capture::refuse_captured_by_another_thread(queue, "enqueue a copy")?;
    if !capturing {
        capture::refuse_other_queue_in_capture("enqueue a copy")?;
    }
    if capturing {
        if copy.dir != Dir::DtoD || scoped {
            return Err(host_copy_in_capture());
        }
        capture::note_copy(queue, keep);
    } else {
        track::order_before(queue, &mut seq, buffers.iter().copied())?;
    }
    match &queue.imp {
        Imp::Host(h) => {
            // SAFETY: the caller's contract; the worker runs it before the
            // copy is complete.
            let op = Arc::new(move || {
                unsafe { copy.run_host() };
                Ok(())
            });
            if capturing {
                capture::push_host_op(queue, op);
                return Ok(());
            }
            *seq += 1;
            h.send(*seq, Box::new(move || op()));
        }
        Imp::Cuda(c) => {
            // SAFETY: the caller's contract.
            unsafe { c.copy(copy)? };
            if capturing {
                return Ok(());
            }
            *seq += 1;
        }
    }
    for &(t, write) in buffers {
        t.record(queue, *seq, write);
    }
    Ok(())
}

fn bytes_of<T>(len: usize) -> usize {
    len * core::mem::size_of::<T>()
}

impl Queue {
    /// Enqueues a copy of `src` into `dst` (host → device,
    /// `cuMemcpyHtoDAsync`: asynchronous DMA from page-locked memory).
    /// Returns at once; `src` may not be written until the copy has finished
    /// (writing it through `&mut` waits for that), `dst` is ordered with
    /// its other queued work (`docs/async.md`, sections 3 and 7).
    ///
    /// # Errors
    /// [`Error::Memory`] if the lengths differ (nothing is enqueued);
    /// [`Error::Driver`] if the driver refuses the copy.
    pub fn memcpy_htod<T: DeviceCopy>(&self, src: &PinnedBuffer<T>, dst: &mut DeviceBuffer<T>) -> Result<()> {
        check_len("enqueue a copy into a DeviceBuffer", src.len(), dst.len())?;
        check_buffer("Queue::memcpy_htod", "dst", self.inner.device, dst.device())?;
        let copy =
            CopyOp { dir: Dir::HtoD, dst: dst.addr(), src: src.device_ptr() as u64, bytes: bytes_of::<T>(src.len()) };
        // SAFETY: both buffers are tracked: `src` cannot be written or freed
        // (its `DerefMut` and drop wait) and `dst` cannot be freed (its
        // drop defers) before the copy has finished.
        unsafe {
            enqueue(&self.inner, copy, &[(&src.tracker, false), (&dst.res.tracker, true)], &[(&dst.res, true)], false)
        }
    }

    /// Enqueues a copy of `src` into `dst` (device → host,
    /// `cuMemcpyDtoHAsync`: asynchronous DMA into page-locked memory).
    /// Returns at once; reading `dst` (its `Deref`) waits for the copy.
    ///
    /// # Errors
    /// As [`memcpy_htod`](Self::memcpy_htod).
    pub fn memcpy_dtoh<T: DeviceCopy>(&self, src: &DeviceBuffer<T>, dst: &mut PinnedBuffer<T>) -> Result<()> {
        check_len("enqueue a copy out of a DeviceBuffer", src.len(), dst.len())?;
        check_buffer("Queue::memcpy_dtoh", "src", self.inner.device, src.device())?;
        let copy =
            CopyOp { dir: Dir::DtoH, dst: dst.device_ptr() as u64, src: src.addr(), bytes: bytes_of::<T>(src.len()) };
        // SAFETY: as in `memcpy_htod`.
        unsafe {
            enqueue(&self.inner, copy, &[(&src.res.tracker, false), (&dst.tracker, true)], &[(&src.res, false)], false)
        }
    }

    /// Enqueues a copy of `src` into `dst` (device → device,
    /// `cuMemcpyDtoDAsync`), both on the queue's device (between devices:
    /// [`memcpy_peer`](Self::memcpy_peer)). Returns at once.
    ///
    /// # Errors
    /// As [`memcpy_htod`](Self::memcpy_htod); [`Error::WrongDevice`] if a
    /// buffer belongs to another device.
    pub fn memcpy_dtod<T: DeviceCopy>(&self, src: &DeviceBuffer<T>, dst: &mut DeviceBuffer<T>) -> Result<()> {
        check_len("enqueue a copy between DeviceBuffers", src.len(), dst.len())?;
        check_buffer("Queue::memcpy_dtod", "src", self.inner.device, src.device())?;
        check_buffer("Queue::memcpy_dtod", "dst", self.inner.device, dst.device())?;
        let copy = CopyOp { dir: Dir::DtoD, dst: dst.addr(), src: src.addr(), bytes: bytes_of::<T>(src.len()) };
        // SAFETY: as in `memcpy_htod`; two buffers never share memory (`dst`
        // is borrowed exclusively).
        unsafe {
            enqueue(
                &self.inner,
                copy,
                &[(&src.res.tracker, false), (&dst.res.tracker, true)],
                &[(&src.res, false), (&dst.res, true)],
                false,
            )
        }
    }

    /// Enqueues a copy of `src` into `dst` where the two may belong to
    /// different devices (`cuMemcpyPeerAsync` between two GPUs: directly
    /// over NVLink or PCIe where peer access is possible, staged through
    /// host memory by the driver otherwise; a copy in host memory between
    /// host devices; `cuMemcpyHtoDAsync` / `cuMemcpyDtoHAsync` between the
    /// host and a GPU). The queue must be on one of the two devices; work
    /// of other queues on either buffer is ordered before the copy, and
    /// later work after it, as for any queued copy (docs/async.md,
    /// section 3). Returns at once (from or into a host device's buffer on
    /// a GPU's queue the driver may wait for the copy).
    ///
    /// # Errors
    /// [`Error::Memory`] if the lengths differ; [`Error::Queue`] if the
    /// queue is on neither device, or a copy between a GPU and the host is
    /// enqueued on the host's queue (enqueue it on the GPU's); the
    /// devices' start errors; [`Error::Driver`] if the driver refuses.
    pub fn memcpy_peer<T: DeviceCopy>(&self, src: &DeviceBuffer<T>, dst: &mut DeviceBuffer<T>) -> Result<()> {
        check_len("enqueue a copy between devices", src.len(), dst.len())?;
        let dir = peer_dir(self.inner.device, src.device(), dst.device())?;
        let copy = CopyOp { dir, dst: dst.addr(), src: src.addr(), bytes: bytes_of::<T>(src.len()) };
        // SAFETY: as in `memcpy_dtod`; the memory of a host device is host
        // memory, valid while its buffer lives (tracked like any buffer).
        unsafe {
            enqueue(
                &self.inner,
                copy,
                &[(&src.res.tracker, false), (&dst.res.tracker, true)],
                &[(&src.res, false), (&dst.res, true)],
                false,
            )
        }
    }
}

/// A GPU's primary context, as an integer (see [`Dir::Peer`]), starting it.
fn context(gpu: Device) -> Result<usize> {
    gpu.backend()?;
    gpu.cu_context().map(|c| c as usize).ok_or_else(|| {
        Error::from(crate::error::Queue {
            op: "enqueue a copy between devices",
            reason: std::format!("{gpu} has no CUDA context"),
        })
    })
}

/// How a queue on `queue` copies from memory of `from` to memory of `to`.
fn peer_dir(queue: Device, from: Device, to: Device) -> Result<Dir> {
    let refuse =
        |reason: std::string::String| Error::from(crate::error::Queue { op: "enqueue a copy between devices", reason });
    if queue != from && queue != to {
        return Err(refuse(std::format!(
            "the queue is on {queue} but the copy goes from {from} to {to}: enqueue it on a queue of either"
        )));
    }
    if from == to {
        return Ok(Dir::DtoD);
    }
    Ok(match (from.kind(), to.kind(), queue.kind()) {
        (BackendKind::Cuda, BackendKind::Cuda, _) => Dir::Peer { dst_ctx: context(to)?, src_ctx: context(from)? },
        (BackendKind::Host, BackendKind::Host, _) => Dir::DtoD,
        (BackendKind::Host, BackendKind::Cuda, BackendKind::Cuda) => Dir::HtoD,
        (BackendKind::Cuda, BackendKind::Host, BackendKind::Cuda) => Dir::DtoH,
        _ => {
            return Err(refuse(std::format!(
                "a copy from {from} to {to} between a GPU and the host goes on a queue of the GPU, not of the host"
            )))
        }
    })
}
