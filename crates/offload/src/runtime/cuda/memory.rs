//! Device memory of mapped arguments: the per-launch [`Allocations`] and the
//! [`ArgCache`] that keeps them between launches, and the hasher of the
//! per-kernel function table.

use core::hash::Hasher;
use std::vec::Vec;

use cudarc::driver::result::{self, DriverError};
use cudarc::driver::sys;

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
pub(super) struct Allocations(pub(super) Vec<(usize, sys::CUdeviceptr)>);

impl Allocations {
    /// Gives every allocation to `cache` and returns the emptied vector.
    pub(super) fn release(mut self, cache: &mut ArgCache) -> Vec<(usize, sys::CUdeviceptr)> {
        for (size, p) in self.0.drain(..) {
            cache.put(size, p);
        }
        core::mem::take(&mut self.0)
    }
}

impl Drop for Allocations {
    fn drop(&mut self) {
        for &(_, p) in &self.0 {
            // SAFETY: each pointer came from `cuMemAlloc` for this launch and
            // is freed once; the kernel has finished (or never started).
            let _ = unsafe { result::free_sync(p) };
        }
    }
}

/// Device memory for the mapped arguments of launches (host `&[T]` and
/// `&mut [T]`), kept between launches and reused by size, as LLVM offload's
/// `MemoryManagerTy` does: a launch that maps data of the sizes an earlier
/// one mapped neither allocates nor frees (`cuMemFree` also waits for the
/// whole device). At most `cap` bytes (1/16 of the GPU's memory) are kept;
/// when an allocation fails for lack of memory the cache is emptied and the
/// allocation tried again.
pub(super) struct ArgCache {
    /// `(bytes, pointer)` of unused blocks, oldest first.
    pub(super) free: Vec<(usize, sys::CUdeviceptr)>,
    pub(super) bytes: usize,
    pub(super) cap: usize,
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

    /// Keeps an unused block, evicting the oldest ones beyond `cap`.
    pub(super) fn put(&mut self, size: usize, p: sys::CUdeviceptr) {
        if size > self.cap {
            // SAFETY: `p` is an unused block from `cuMemAlloc`, freed once.
            let _ = unsafe { result::free_sync(p) };
            return;
        }
        while self.bytes + size > self.cap {
            let (old, q) = self.free.remove(0);
            self.bytes -= old;
            // SAFETY: as above.
            let _ = unsafe { result::free_sync(q) };
        }
        self.free.push((size, p));
        self.bytes += size;
    }

    /// Frees every kept block.
    pub(super) fn clear(&mut self) {
        for (_, p) in self.free.drain(..) {
            // SAFETY: as in `put`.
            let _ = unsafe { result::free_sync(p) };
        }
        self.bytes = 0;
    }

    /// `cuMemAlloc`, emptying the cache and trying again if the device is
    /// out of memory. The context must be current.
    pub(super) fn alloc(&mut self, bytes: usize) -> core::result::Result<sys::CUdeviceptr, DriverError> {
        // SAFETY: allocating has no preconditions beyond a current context.
        match unsafe { result::malloc_sync(bytes) } {
            Err(e) if e.0 == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY && !self.free.is_empty() => {
                self.clear();
                // SAFETY: as above.
                unsafe { result::malloc_sync(bytes) }
            }
            r => r,
        }
    }
}
