//! Device memory of mapped arguments: the per-launch [`Allocations`] and the
//! [`ArgCache`] that keeps them between launches, and the hasher of the
//! per-kernel function table.

use core::hash::Hasher;
use std::vec::Vec;

use cudarc::driver::result::DriverError;
use cudarc::driver::sys;

use super::pool::DeviceMemory;

/// Hashes a `usize` key (an address) as itself; addresses of distinct
/// statics are distinct, so nothing is gained by mixing.
#[derive(Default)]
pub(super) struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }
    fn write_usize(&mut self, n: usize) {
        // Statics are at least 8-aligned: drop the always-zero bits.
        self.0 = (n as u64) >> 3;
    }
}

/// Device memory of one launch's mapped arguments, `(bytes, pointer)`;
/// freed when dropped (error paths), handed to the [`ArgCache`] on success.
/// Freed in `stream`, the launch's, after whatever of the launch was
/// enqueued there (`pool`).
pub(super) struct Allocations {
    pub(super) blocks: Vec<(usize, sys::CUdeviceptr)>,
    memory: DeviceMemory,
    stream: sys::CUstream,
}

impl Allocations {
    /// The allocations of a launch in `stream`, from `memory` (`blocks`
    /// empty: a vector kept for its capacity).
    pub(super) fn new(blocks: Vec<(usize, sys::CUdeviceptr)>, memory: DeviceMemory, stream: sys::CUstream) -> Self {
        Allocations { blocks, memory, stream }
    }

    /// Gives every allocation to `cache` and returns the emptied vector.
    pub(super) fn release(mut self, cache: &mut ArgCache) -> Vec<(usize, sys::CUdeviceptr)> {
        for (size, p) in self.blocks.drain(..) {
            cache.put(size, p, self.stream);
        }
        core::mem::take(&mut self.blocks)
    }
}

impl Drop for Allocations {
    fn drop(&mut self) {
        for &(_, p) in &self.blocks {
            // SAFETY: each pointer came from `memory` for this launch, in the
            // context current since (the launch holds the state), and is
            // freed once; the launch's work in `stream` comes before the
            // free, and its kernel has finished (or never started).
            let _ = unsafe { self.memory.free(p, self.stream) };
        }
    }
}

/// Device memory for the mapped arguments of launches (host `&[T]` and
/// `&mut [T]`), kept between launches and reused by size, as LLVM offload's
/// `MemoryManagerTy` does: a launch that maps data of the sizes an earlier
/// one mapped neither allocates nor frees. At most `cap` bytes (1/16 of the
/// GPU's memory) are kept; when an allocation fails for lack of memory the
/// cache is emptied, the pool's unused memory released, and the allocation
/// tried again. Blocks come from, and go back to, `memory`, in the stream
/// of the backend's state, which every caller passes (see `pool`).
pub(super) struct ArgCache {
    /// `(bytes, pointer)` of unused blocks, oldest first.
    pub(super) free: Vec<(usize, sys::CUdeviceptr)>,
    pub(super) bytes: usize,
    pub(super) cap: usize,
    /// Where the blocks come from; replaced with the context (`rebuild`).
    pub(super) memory: DeviceMemory,
}

impl ArgCache {
    /// A block of at least `bytes` and at most twice as many, the smallest.
    pub(super) fn take(&mut self, bytes: usize) -> Option<(usize, sys::CUdeviceptr)> {
        let i = (0..self.free.len())
            .filter(|&i| self.free[i].0 >= bytes && self.free[i].0 / 2 <= bytes)
            .min_by_key(|&i| self.free[i].0)?;
        let block = self.free.remove(i);
        self.bytes -= block.0;
        Some(block)
    }

    /// Keeps an unused block, evicting the oldest ones beyond `cap` (freed
    /// in `stream`).
    pub(super) fn put(&mut self, size: usize, p: sys::CUdeviceptr, stream: sys::CUstream) {
        if size > self.cap {
            // SAFETY: `p` is an unused block from `memory` in this context,
            // freed once; what used it was enqueued in `stream` before.
            let _ = unsafe { self.memory.free(p, stream) };
            return;
        }
        while self.bytes + size > self.cap {
            let (old, q) = self.free.remove(0);
            self.bytes -= old;
            // SAFETY: as above.
            let _ = unsafe { self.memory.free(q, stream) };
        }
        self.free.push((size, p));
        self.bytes += size;
    }

    /// Frees every kept block, in `stream`.
    pub(super) fn clear(&mut self, stream: sys::CUstream) {
        for (_, p) in self.free.drain(..) {
            // SAFETY: as in `put`.
            let _ = unsafe { self.memory.free(p, stream) };
        }
        self.bytes = 0;
    }

    /// Forgets every kept block: its context was reset, which freed it.
    pub(super) fn forget(&mut self) {
        self.free.clear();
        self.bytes = 0;
    }

    /// `bytes` of device memory usable in `stream`, the state's, whose
    /// context must be current. If the device is out of memory: empties the
    /// cache, hands the pool's unused memory back
    /// ([`DeviceMemory::release_unused`]) and tries again.
    pub(super) fn alloc(
        &mut self,
        bytes: usize,
        stream: sys::CUstream,
    ) -> core::result::Result<sys::CUdeviceptr, DriverError> {
        // SAFETY: the context of `stream` is current (the caller's contract).
        match unsafe { self.memory.alloc(bytes, stream) } {
            Err(e) if e.0 == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY => {
                self.clear(stream);
                // SAFETY: as above.
                unsafe {
                    self.memory.release_unused(stream);
                    self.memory.alloc(bytes, stream)
                }
            }
            r => r,
        }
    }
}
