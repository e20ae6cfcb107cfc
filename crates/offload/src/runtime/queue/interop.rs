//! Interop with CUDA libraries (cuBLAS, cuFFT, …) and cudarc: the raw
//! handles of queues, buffers and the context, and
//! [`Queue::external`], which orders work that a library enqueues on a
//! queue's stream with the buffers' pending work (docs/async.md, section 10).

use std::vec::Vec;

use cudarc::driver::sys;

use super::capture;
use super::track::{self, Tracker};
use super::{Imp, Queue};
use crate::runtime::error::{Error, Result};
use crate::runtime::select::current_device;
use crate::{BackendKind, DeviceBuffer, DeviceCopy};

/// One buffer that work enqueued by [`Queue::external`] reads
/// ([`DeviceBuffer::read`]) or writes ([`DeviceBuffer::write`]).
pub struct BufferUse<'a> {
    tracker: &'a Tracker,
    write: bool,
}

impl core::fmt::Debug for BufferUse<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("BufferUse").field("write", &self.write).finish()
    }
}

impl<T: DeviceCopy> DeviceBuffer<T> {
    /// Declares that work enqueued by [`Queue::external`] reads the buffer.
    pub fn read(&self) -> BufferUse<'_> {
        BufferUse { tracker: &self.res.tracker, write: false }
    }

    /// Declares that work enqueued by [`Queue::external`] writes the
    /// buffer.
    pub fn write(&mut self) -> BufferUse<'_> {
        BufferUse { tracker: &self.res.tracker, write: true }
    }

    /// The buffer's device address (`CUdeviceptr`) if it is memory of a
    /// GPU (of its [`device`](DeviceBuffer::device)'s context); `None` on
    /// the host fallback. Valid while the buffer lives; using it is ordered
    /// with offload's work only through [`Queue::external`].
    pub fn cu_deviceptr(&self) -> Option<sys::CUdeviceptr> {
        (self.device().kind() == BackendKind::Cuda).then(|| self.addr())
    }
}

/// The CUDA context of this thread's device ([`current_device`]): that
/// GPU's primary context (the one `cudarc::driver::CudaContext::new(ordinal)`
/// retains too); `None` on the host fallback. A queue's or buffer's own
/// device: [`Device::cu_context`](crate::Device::cu_context).
pub fn cu_context() -> Option<sys::CUcontext> {
    current_device().ok()?.cu_context()
}

impl Queue {
    /// The queue's CUDA stream (`CUstream`); `None` on the host fallback.
    /// Work enqueued on it is ordered with the queue's other work by the
    /// stream; with buffers' pending work only through
    /// [`external`](Self::external). Valid while the queue lives.
    pub fn cu_stream(&self) -> Option<sys::CUstream> {
        match &self.inner.imp {
            Imp::Cuda(c) => c.stream().ok(),
            Imp::Host(_) => None,
        }
    }

    /// Runs `f` with the queue's stream, for work a CUDA library enqueues
    /// on it (a cuBLAS call after `cublasSetStream`, a cudarc launch on
    /// `wrap_borrowed_stream`), ordered with offload's tracking: the stream
    /// first waits for the pending work of `uses` on other queues (a write
    /// waits for writes and reads, a read for writes), and afterwards that
    /// work counts as the buffers' latest read or write, so host access,
    /// other queues and drops wait for it (docs/async.md, section 3).
    ///
    /// `f` must enqueue its work on the stream and return; it must not use
    /// offload's graphs (a replay would wait for `f`).
    ///
    /// ```ignore
    /// q.external(&mut [a.read(), b.read(), c.write()], |stream| {
    ///     // cublasSetStream(handle, stream); cublasSgemm(handle, …, a_ptr, b_ptr, c_ptr, …)
    ///     Ok(())
    /// })?;
    /// ```
    ///
    /// # Errors
    /// [`Error::Queue`] on the host fallback (there is no stream) and
    /// inside a capture; `f`'s error.
    pub fn external<R>(&self, uses: &mut [BufferUse<'_>], f: impl FnOnce(sys::CUstream) -> Result<R>) -> Result<R> {
        capture::refuse_in_capture(&self.inner, "run external work on a queue")?;
        let Imp::Cuda(c) = &self.inner.imp else {
            return Err(Error::from(crate::error::Queue {
                op: "run external work on a queue",
                reason: "the host fallback runs kernels: there is no CUDA stream (check `Queue::cu_stream` first)"
                    .into(),
            }));
        };
        let _replays = capture::hold();
        let buffers: Vec<(&Tracker, bool)> = uses.iter().map(|u| (u.tracker, u.write)).collect();
        let stream = {
            let mut seq = self.inner.lock_submit();
            track::order_before(&self.inner, &mut seq, buffers.iter().copied())?;
            c.stream()?
        };
        let r = f(stream)?;
        // After `f`'s work: uses recorded now are covered by fences
        // recorded later, which come after it in the stream.
        let mut seq = self.inner.lock_submit();
        *seq += 1;
        for (t, write) in buffers {
            t.record(&self.inner, *seq, write);
        }
        Ok(r)
    }
}
