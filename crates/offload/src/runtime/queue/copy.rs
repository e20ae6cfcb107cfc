//! Queued copies: `Queue::memcpy_htod` / `memcpy_dtoh` / `memcpy_dtod`
//! (true asynchronous DMA between `PinnedBuffer`s and `DeviceBuffer`s),
//! and the generic enqueue they and the scope's copies share.

use std::boxed::Box;
use std::sync::Arc;

use super::track::{self, Resource, Tracker};
use super::{graph, Imp, Queue, QueueInner};
use crate::runtime::error::{Error, Result};
use crate::{DeviceBuffer, DeviceCopy, PinnedBuffer};

/// Which way a copy goes (CUDA needs to know; on the host fallback every
/// address is host memory).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Dir {
    HtoD,
    DtoH,
    DtoD,
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
        unsafe {
            core::ptr::copy_nonoverlapping(self.src as *const u8, self.dst as *mut u8, self.bytes)
        }
    }
}

/// The length check of every queued copy: equal element counts.
pub(crate) fn check_len(op: &'static str, src: usize, dst: usize) -> Result<()> {
    if src != dst {
        return Err(Error::from(crate::error::Memory {
            op,
            reason: std::format!(
                "the source has {src} elements but the destination has {dst}; nothing was enqueued"
            ),
        }));
    }
    Ok(())
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
    let _replays = graph::hold();
    let mut seq = queue.lock_submit();
    let capturing = graph::is_capturing(queue);
    if !capturing {
        graph::refuse_other_queue_in_capture("enqueue a copy")?;
    }
    if capturing {
        if copy.dir != Dir::DtoD || scoped {
            return Err(Error::from(crate::error::Queue {
                op: "capture a copy",
                reason: "a graph captures copies between DeviceBuffers only (`memcpy_dtod`): host memory, pinned \
                         included, cannot be kept borrowed by a graph"
                    .into(),
            }));
        }
        graph::note_copy(queue, keep);
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
                graph::push_host_op(queue, op);
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
    pub fn memcpy_htod<T: DeviceCopy>(
        &self,
        src: &PinnedBuffer<T>,
        dst: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        check_len("enqueue a copy into a DeviceBuffer", src.len(), dst.len())?;
        let copy = CopyOp {
            dir: Dir::HtoD,
            dst: dst.addr(),
            src: src.device_ptr() as u64,
            bytes: bytes_of::<T>(src.len()),
        };
        // SAFETY: both buffers are tracked: `src` cannot be written or freed
        // (its `DerefMut` and drop wait) and `dst` cannot be freed (its
        // drop defers) before the copy has finished.
        unsafe {
            enqueue(
                &self.inner,
                copy,
                &[(&src.tracker, false), (&dst.res.tracker, true)],
                &[(&dst.res, true)],
                false,
            )
        }
    }

    /// Enqueues a copy of `src` into `dst` (device → host,
    /// `cuMemcpyDtoHAsync`: asynchronous DMA into page-locked memory).
    /// Returns at once; reading `dst` (its `Deref`) waits for the copy.
    ///
    /// # Errors
    /// As [`memcpy_htod`](Self::memcpy_htod).
    pub fn memcpy_dtoh<T: DeviceCopy>(
        &self,
        src: &DeviceBuffer<T>,
        dst: &mut PinnedBuffer<T>,
    ) -> Result<()> {
        check_len("enqueue a copy out of a DeviceBuffer", src.len(), dst.len())?;
        let copy = CopyOp {
            dir: Dir::DtoH,
            dst: dst.device_ptr() as u64,
            src: src.addr(),
            bytes: bytes_of::<T>(src.len()),
        };
        // SAFETY: as in `memcpy_htod`.
        unsafe {
            enqueue(
                &self.inner,
                copy,
                &[(&src.res.tracker, false), (&dst.tracker, true)],
                &[(&src.res, false)],
                false,
            )
        }
    }

    /// Enqueues a copy of `src` into `dst` (device → device,
    /// `cuMemcpyDtoDAsync`). Returns at once.
    ///
    /// # Errors
    /// As [`memcpy_htod`](Self::memcpy_htod).
    pub fn memcpy_dtod<T: DeviceCopy>(
        &self,
        src: &DeviceBuffer<T>,
        dst: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        check_len("enqueue a copy between DeviceBuffers", src.len(), dst.len())?;
        let copy = CopyOp {
            dir: Dir::DtoD,
            dst: dst.addr(),
            src: src.addr(),
            bytes: bytes_of::<T>(src.len()),
        };
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
}
