//! CUDA's half of an `offload::scope` (`runtime::queue::scope`): the
//! device memory of the scope's borrowed host arguments, copied in when a
//! launch or copy is enqueued and back at the scope's end ([`ScopeCopies`]).

use core::ffi::c_void;
use std::vec::Vec;

use cudarc::driver::result::DriverError;
use cudarc::driver::sys;

use super::super::context::Cuda;
use super::super::error::driver_error;
use crate::runtime::error::Result;

/// The device memory of one scope (CUDA): copies of the host memory its
/// launches read, and those they write, copied back at its end.
#[derive(Default)]
pub(crate) struct ScopeCopies {
    /// Device copies of read-only host memory: `(host, bytes, device)`,
    /// reused when the same slice is passed again.
    reads: Vec<(usize, usize, u64)>,
    /// Device memory copied to host memory at the end:
    /// `(device, host, bytes, atomic element size or 0)`.
    writes: Vec<(u64, usize, usize, u8)>,
    /// Every allocation, freed at the end: `(device, generation)`.
    allocs: Vec<(u64, u64)>,
}

// SAFETY: holds addresses only; the memory they name is the scope's.
unsafe impl Send for ScopeCopies {}

impl ScopeCopies {
    /// `bytes` of device memory, allocated in the queue's `stream` (from
    /// the memory pool, in stream order: no wait for the device, see
    /// `cuda::pool`), where the scope's copies and launches use it.
    ///
    /// # Safety
    /// The context of `stream` is current; `stream` is not being captured
    /// (a stream-ordered allocation there would be a node of the graph).
    unsafe fn alloc(
        &mut self,
        cuda: &Cuda,
        stream: sys::CUstream,
        bytes: usize,
    ) -> core::result::Result<u64, (&'static str, DriverError)> {
        // Read first: memory allocated while a rebuild runs is labelled
        // with the older generation, so never freed (leaked, not freed in
        // the new context, where its address may be another's).
        let generation = cuda.generation();
        let memory = cuda.memory();
        // SAFETY: the caller's contract.
        let d = unsafe { memory.alloc(bytes, stream) }.map_err(|e| (memory.alloc_op(), e))?;
        self.allocs.push((d, generation));
        Ok(d)
    }

    /// Device memory holding `bytes` of host memory at `ptr`, copied in
    /// `stream` (from pageable memory, `cuMemcpyHtoDAsync` returns once the
    /// driver has staged it); copied back at the scope's end if `writeback`
    /// (`atomic`: element size of atomics, stored one by one).
    ///
    /// # Safety
    /// `ptr` is valid for `bytes` until the scope ends (the scope's borrow);
    /// the context of `stream` is current and `stream` is not being
    /// captured.
    pub(crate) unsafe fn upload(
        &mut self,
        cuda: &Cuda,
        stream: sys::CUstream,
        ptr: *mut u8,
        bytes: usize,
        writeback: bool,
        atomic: u8,
    ) -> core::result::Result<u64, (&'static str, DriverError)> {
        if !writeback {
            if let Some(&(_, _, d)) = self.reads.iter().find(|&&(h, b, _)| h == ptr as usize && b == bytes) {
                return Ok(d);
            }
        }
        // SAFETY: the caller's contract.
        let d = unsafe { self.alloc(cuda, stream, bytes) }?;
        // SAFETY: `d` holds `bytes`; `ptr` is valid for `bytes` (the
        // caller's contract); from pageable memory the call returns once
        // the driver has staged the data, so `ptr` is read by then.
        unsafe { sys::cuMemcpyHtoDAsync_v2(d, ptr as *const c_void, bytes, stream) }
            .result()
            .map_err(|e| ("cuMemcpyHtoDAsync", e))?;
        if writeback {
            self.writes.push((d, ptr as usize, bytes, atomic));
        } else {
            self.reads.push((ptr as usize, bytes, d));
        }
        Ok(d)
    }

    /// Device memory of `bytes`, usable in the queue's `stream`, that the
    /// scope's end copies to `host`.
    ///
    /// # Safety
    /// `host` is valid for writes of `bytes` until the scope ends; the
    /// context of `stream` is current and `stream` is not being captured.
    pub(crate) unsafe fn download_later(
        &mut self,
        cuda: &Cuda,
        stream: sys::CUstream,
        host: *mut u8,
        bytes: usize,
    ) -> Result<u64> {
        // SAFETY: the caller's contract.
        let d = unsafe { self.alloc(cuda, stream, bytes) }.map_err(|(op, e)| driver_error(op, None, e))?;
        self.writes.push((d, host as usize, bytes, 0));
        Ok(d)
    }

    /// At the scope's end, after its queue has been waited for: copies the
    /// written memory back (in the order it was enqueued) and frees
    /// everything. Memory of a context that was reset is gone: nothing to
    /// copy or free.
    pub(crate) fn finish(&mut self, cuda: &Cuda) -> Result<()> {
        let mut first: Result<()> = Ok(());
        let live = |g: u64| g == cuda.generation();
        {
            use crate::runtime::backend::Backend;
            for (d, host, bytes, atomic) in self.writes.drain(..) {
                let g = self.allocs.iter().find(|(a, _)| *a == d).map_or(0, |x| x.1);
                if !live(g) {
                    continue;
                }
                let r = if atomic == 0 {
                    // SAFETY: `host` is valid for writes of `bytes` (the
                    // scope's borrow, still held); `d` holds `bytes` and the
                    // work that wrote it has finished.
                    unsafe { cuda.copy_from_device(host as *mut u8, d, bytes) }
                } else {
                    cuda.make_current().and_then(|()| {
                        // SAFETY: as above; `host` holds atomics of `atomic`
                        // bytes.
                        unsafe {
                            super::super::recover::copy_back(host as *mut u8, d, bytes, atomic, "a scope's launch")
                        }
                    })
                };
                if first.is_ok() {
                    first = r;
                }
            }
        }
        self.reads.clear();
        // Under the state's lock, so that no rebuild resets the context
        // between the generation's check and the free.
        if let Ok(st) = cuda.enter("cuCtxSetCurrent") {
            for (d, g) in self.allocs.drain(..) {
                if live(g) {
                    // SAFETY: allocated by `alloc` from this generation's
                    // memory (the state's is the same, `Cuda::memory`),
                    // freed once; the queue was waited for, so no work uses
                    // it and the free may be in any stream of the context.
                    let _ = unsafe { st.cache.memory.free(d, st.stream) };
                }
            }
        }
        first
    }
}
