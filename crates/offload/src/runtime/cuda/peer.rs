//! Peer access between GPUs (CUDA Driver API, "Peer Context Memory
//! Access"): letting one GPU reach another's memory
//! (`cuCtxEnablePeerAccess`, and `cuMemPoolSetAccess` for memory of the
//! peer's pool; whether it can is `peer_support`'s), and
//! copies between the memory of two GPUs (`cuMemcpyPeerAsync`, which works
//! with or without peer access: without it the driver stages the copy
//! through host memory).

use cudarc::driver::result;
use cudarc::driver::sys;

use super::context::Cuda;
use super::error::driver_error;
use crate::runtime::error::Result;

impl Cuda {
    /// Lets kernels of this GPU's context use the memory of `peer`'s
    /// (`cuCtxEnablePeerAccess(peer's context, 0)` with ours current);
    /// already enabled is success. The peer's `DeviceBuffer`s come from its
    /// memory pool (see `pool`), whose own access list is extended to this
    /// GPU too (`cuMemPoolSetAccess`).
    pub(crate) fn enable_peer_access(&self, peer: &Cuda) -> Result<()> {
        let theirs = peer.context();
        let their_memory = peer.memory();
        let st = self.enter("cuCtxSetCurrent")?;
        // SAFETY: our context is current (`enter`), `theirs` is the peer's
        // live primary context; flags must be 0.
        match unsafe { sys::cuCtxEnablePeerAccess(theirs, 0) }.result() {
            Ok(()) => {}
            Err(e) if e.0 == sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => {}
            Err(e) => return Err(driver_error("cuCtxEnablePeerAccess", None, e)),
        }
        their_memory.grant_access(st.dev).map_err(|e| driver_error("cuMemPoolSetAccess", None, e))
    }
}

/// Enqueues a copy of `bytes` from `src` (memory of the context
/// `src_ctx`) to `dst` (of `dst_ctx`) in `stream` (`cuMemcpyPeerAsync`).
///
/// # Safety
/// Both ranges are live allocations of their contexts with room for
/// `bytes`, which stay allocated until the copy has finished; `stream`
/// belongs to the current context.
pub(crate) unsafe fn copy(
    dst: sys::CUdeviceptr,
    dst_ctx: sys::CUcontext,
    src: sys::CUdeviceptr,
    src_ctx: sys::CUcontext,
    bytes: usize,
    stream: sys::CUstream,
) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe { result::memcpy_peer_async(dst_ctx, dst, src_ctx, src, bytes, stream) }
        .map_err(|e| driver_error("cuMemcpyPeerAsync", None, e))
}
