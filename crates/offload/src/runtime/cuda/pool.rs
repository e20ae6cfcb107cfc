//! Where the CUDA backend's device memory comes from: the GPU's default
//! memory pool, allocated and freed in stream order, or, where the device
//! or driver has no memory pools, `cuMemAlloc`/`cuMemFree`.
//!
//! `cuMemFree` "may synchronize the device" and a non-`Async`
//! `cuMemset*` is synchronous (CUDA Driver API, "API synchronization
//! behavior"): on the H200, one thread's `DeviceBuffer` allocations and
//! drops made other threads' queued launches return only after their
//! kernels (2–3 of 10, `tests/queue.rs`,
//! `a_queued_launch_returns_at_once_while_another_thread_frees`). The
//! stream-ordered allocator (CUDA C++ Programming Guide, "Stream Ordered
//! Memory Allocator"; CUDA Driver API, `cuMemAllocFromPoolAsync`,
//! `cuMemFreeAsync`) allocates and frees as operations of a stream, and
//! neither call waits for the device: `cuMemFreeAsync` returns the memory
//! to the pool when the stream reaches the free.
//!
//! Every allocation and free here is in the backend's own stream (the
//! state's, used under its lock), after what used the memory:
//! - a `DeviceBuffer`'s memory is zeroed there (`cuMemsetD8Async`) and the
//!   stream waited for before the buffer is handed out, so other streams
//!   may use it at once ("Stream Ordered Memory Allocator": an allocation
//!   is usable by other streams once its stream has been synchronized);
//! - a `DeviceBuffer`'s memory is freed only once no queued work uses it
//!   (`queue::track::free_when_idle`: its tracked work, graphs' replays,
//!   which keep the memory until dropped, have finished), so the free may
//!   be in any stream: nothing after it uses the memory;
//! - a blocking launch's argument memory (`memory::ArgCache`) is used by
//!   that launch's copies and kernel in the same stream, so the free is
//!   ordered after them by the stream.
//!
//! The pool keeps what is freed for reuse: its release threshold
//! (`CU_MEMPOOL_ATTR_RELEASE_THRESHOLD`, 0 by default, so that every
//! synchronization hands freed memory back to the system) is set to
//! `u64::MAX`, as the Programming Guide suggests for allocations that
//! repeat. An allocation that finds the device out of memory empties the
//! argument cache, waits for the stream (so that every free has happened)
//! and trims the pool (`cuMemPoolTrimTo(pool, 0)`) before it tries again
//! ([`DeviceMemory::release_unused`]).
//!
//! `OFFLOAD_CUDA_MEMPOOL=0` (or `false`, `no`, `off`) keeps
//! `cuMemAlloc`/`cuMemFree`, to compare; `1` (`true`, `yes`, `on`) or unset
//! is the default; other values warn and keep the default.

use std::format;
use std::string::String;
use std::sync::OnceLock;

use cudarc::driver::result::{self, DriverError};
use cudarc::driver::sys;

/// How device memory is allocated in one context: from `pool` in stream
/// order, or with `cuMemAlloc`/`cuMemFree` where `pool` is `None`.
#[derive(Clone, Copy)]
pub(super) struct DeviceMemory {
    pool: Option<sys::CUmemoryPool>,
}

// SAFETY: a memory pool handle may be used from any host thread (CUDA
// Driver API, "Stream Ordered Memory Allocator"); it is only used with the
// backend's context current.
unsafe impl Send for DeviceMemory {}

impl DeviceMemory {
    /// The memory of `dev`, whose context is current: its default memory
    /// pool, with the release threshold raised, where the driver (11.2 or
    /// later) and the device support memory pools
    /// (`CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED`) and
    /// `OFFLOAD_CUDA_MEMPOOL` allows it; else `cuMemAlloc`/`cuMemFree`.
    pub(super) fn new(dev: sys::CUdevice) -> Self {
        if !wanted() || !supported(dev) {
            return DeviceMemory { pool: None };
        }
        // SAFETY: `dev` came from `cuDeviceGet`; the driver has the entry
        // point (version checked in `supported`).
        let Ok(pool) = (unsafe { result::device::get_default_mem_pool(dev) }) else {
            return DeviceMemory { pool: None };
        };
        let mut threshold: u64 = u64::MAX;
        // SAFETY: the attribute's value is a `cuuint64_t` (CUDA Driver API,
        // `CUmemPool_attribute`); `threshold` outlives the call. Failing
        // only means that freed memory goes back at synchronizations.
        let _ = unsafe {
            result::mem_pool::set_attribute(
                pool,
                sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                &mut threshold as *mut u64 as *mut core::ffi::c_void,
            )
        };
        DeviceMemory { pool: Some(pool) }
    }

    /// The pool, null for none (kept in an atomic: `context::Current`).
    pub(super) fn raw(&self) -> sys::CUmemoryPool {
        self.pool.unwrap_or(core::ptr::null_mut())
    }

    /// The inverse of [`raw`](Self::raw).
    pub(super) fn from_raw(pool: sys::CUmemoryPool) -> Self {
        DeviceMemory { pool: (!pool.is_null()).then_some(pool) }
    }

    /// Whether allocations are stream-ordered, from the pool.
    pub(super) fn is_pooled(&self) -> bool {
        self.pool.is_some()
    }

    /// Lets kernels of device `dev` use this memory, where
    /// `cuCtxEnablePeerAccess` lets them use the context's other memory:
    /// a pool's allocations are reached only by the devices in its own
    /// access list (`cuMemPoolSetAccess`), which peer access between
    /// contexts does not change (CUDA C++ Programming Guide, "Stream
    /// Ordered Memory Allocator", "Device Accessibility for Multi-GPU
    /// Support"). Nothing to do without a pool.
    pub(super) fn grant_access(&self, dev: sys::CUdevice) -> Result<(), DriverError> {
        let Some(pool) = self.pool else {
            return Ok(());
        };
        let desc = sys::CUmemAccessDesc {
            location: sys::CUmemLocation { type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE, id: dev },
            flags: sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
        };
        // SAFETY: one access descriptor, valid for the call; the pool is
        // the device's default pool, which lives as long as the process.
        unsafe { sys::cuMemPoolSetAccess(pool, &desc, 1) }.result()
    }

    /// The driver call that allocates, for errors.
    pub(super) fn alloc_op(&self) -> &'static str {
        if self.is_pooled() {
            "cuMemAllocFromPoolAsync"
        } else {
            "cuMemAlloc"
        }
    }

    /// `bytes` of uninitialized device memory, usable in `stream` at once
    /// and in other streams once `stream` has been waited for.
    ///
    /// # Safety
    /// The context of `stream` (this memory's) is current.
    pub(super) unsafe fn alloc(&self, bytes: usize, stream: sys::CUstream) -> Result<sys::CUdeviceptr, DriverError> {
        match self.pool {
            // SAFETY: the pool and stream belong to the current context.
            Some(pool) => unsafe { result::mem_pool::alloc_async(pool, bytes, stream) },
            // SAFETY: allocating has no precondition beyond a current context.
            None => unsafe { result::malloc_sync(bytes) },
        }
    }

    /// Frees `p` when `stream` reaches this point (pool), or now.
    ///
    /// # Safety
    /// The context of `stream` is current; `p` came from
    /// [`alloc`](Self::alloc) of this `DeviceMemory` in that context and is
    /// freed once; no work uses it after this point of `stream` (work in
    /// other streams has finished).
    pub(super) unsafe fn free(&self, p: sys::CUdeviceptr, stream: sys::CUstream) -> Result<(), DriverError> {
        match self.pool {
            // SAFETY: the caller's contract; stream-ordered, so the memory
            // goes back to the pool after `stream`'s earlier work.
            Some(_) => unsafe { result::free_async(p, stream) },
            // SAFETY: the caller's contract.
            None => unsafe { result::free_sync(p) },
        }
    }

    /// After an allocation found the device out of memory, and the caller
    /// has freed what it could spare: waits for `stream`, so that those
    /// frees have happened, and hands the pool's unused memory back to the
    /// system (`cuMemPoolTrimTo(pool, 0)`), where `cuMemAlloc` and other
    /// pools can use it. Nothing to do without a pool.
    ///
    /// # Safety
    /// The context of `stream` is current.
    pub(super) unsafe fn release_unused(&self, stream: sys::CUstream) {
        if let Some(pool) = self.pool {
            // SAFETY: the stream and pool belong to the current context.
            unsafe {
                let _ = result::stream::synchronize(stream);
                let _ = result::mem_pool::trim_to(pool, 0);
            }
        }
    }
}

/// Whether `OFFLOAD_CUDA_MEMPOOL` allows the pool, read once (a warning
/// for a value it does not know, once, not at every GPU's start).
fn wanted() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| {
        let (on, warning) = parse_setting(&std::env::var("OFFLOAD_CUDA_MEMPOOL").unwrap_or_default());
        if let Some(w) = warning {
            std::eprintln!("offload: warning: {w}");
        }
        on
    })
}

/// Whether the driver (11.2 or later, `cuDriverGetVersion`) and device
/// `dev` support memory pools. Asked in this order: an older driver has
/// neither the attribute nor the entry points (cudarc would panic looking
/// one up).
fn supported(dev: sys::CUdevice) -> bool {
    let mut version: core::ffi::c_int = 0;
    // SAFETY: writes one int.
    if unsafe { sys::cuDriverGetVersion(&mut version) }.result().is_err() || version < 11020 {
        return false;
    }
    // SAFETY: `dev` came from `cuDeviceGet` after a successful `cuInit`.
    let attr = unsafe {
        result::device::get_attribute(dev, sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED)
    };
    matches!(attr, Ok(1))
}

/// `OFFLOAD_CUDA_MEMPOOL`'s value as (pool on, warning for an unknown
/// value): `0`/`false`/`no`/`off` turn it off, unset or `1`/`true`/`yes`/`on`
/// is the default; anything else keeps the default with a warning.
fn parse_setting(raw: &str) -> (bool, Option<String>) {
    match super::setting::switch(raw) {
        Some(on) => (on, None),
        None if raw.trim().is_empty() => (true, None),
        None => (
            true,
            Some(format!(
                "OFFLOAD_CUDA_MEMPOOL={raw:?} is not one of 0 or 1; stream-ordered allocation stays on (its default)"
            )),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mempool_setting_values() {
        assert_eq!(parse_setting(""), (true, None));
        assert_eq!(parse_setting(" Off "), (false, None));
        assert_eq!(parse_setting("0"), (false, None));
        assert_eq!(parse_setting("no"), (false, None));
        assert_eq!(parse_setting("YES"), (true, None));
        let (on, warning) = parse_setting("fast");
        assert!(on);
        assert_eq!(
            warning.as_deref(),
            Some(
                "OFFLOAD_CUDA_MEMPOOL=\"fast\" is not one of 0 or 1; stream-ordered allocation stays on (its default)"
            )
        );
    }
}
