//! Copies on a CUDA queue: [`CudaQueue::copy`], an asynchronous copy in
//! the stream.

use core::ffi::c_void;

use cudarc::driver::sys;

use super::super::error::driver_error;
use super::CudaQueue;
use crate::runtime::error::Result;

impl CudaQueue {
    /// Enqueues `copy` in the stream (the caller holds the submit lock).
    ///
    /// # Safety
    /// The memory of `copy` stays valid until the copy has finished; host
    /// memory of an `HtoD` / `DtoH` copy is page-locked (a `PinnedBuffer`)
    /// or pageable (a host device's buffer), which the driver stages at the
    /// call (`HtoD`) or copies into before it returns (`DtoH`: "for
    /// transfers from device memory to pageable host memory, the function
    /// will return only once the copy has completed", CUDA Driver API, "API
    /// synchronization behavior"); the memory of a `Peer` copy belongs to
    /// the contexts it names.
    pub(crate) unsafe fn copy(&self, copy: crate::runtime::queue::copy::CopyOp) -> Result<()> {
        use crate::runtime::queue::copy::Dir;
        let stream = self.stream()?;
        let (dst, src, n) = (copy.dst, copy.src, copy.bytes);
        // SAFETY: the caller's contract; the stream belongs to the current
        // context. From page-locked memory the copies are asynchronous DMA
        // (CUDA Driver API, "API synchronization behavior": "for transfers
        // from pinned host memory ... the function returns immediately").
        let r = unsafe {
            match copy.dir {
                Dir::HtoD => sys::cuMemcpyHtoDAsync_v2(dst, src as *const c_void, n, stream),
                Dir::DtoH => sys::cuMemcpyDtoHAsync_v2(dst as *mut c_void, src, n, stream),
                Dir::DtoD => sys::cuMemcpyDtoDAsync_v2(dst, src, n, stream),
                Dir::Peer { dst_ctx, src_ctx } => {
                    let (d, s) = (dst_ctx as sys::CUcontext, src_ctx as sys::CUcontext);
                    return super::super::peer::copy(dst, d, src, s, n, stream);
                }
            }
        };
        let op = match copy.dir {
            Dir::HtoD => "cuMemcpyHtoDAsync",
            Dir::DtoH => "cuMemcpyDtoHAsync",
            Dir::DtoD | Dir::Peer { .. } => "cuMemcpyDtoDAsync",
        };
        r.result().map_err(|e| driver_error(op, None, e))
    }
}
