//! Device globals: variables that live on the device and that kernels share
//! across launches (CUDA's `__device__` variables, copied with
//! `cudaMemcpyToSymbol` / `cudaMemcpyFromSymbol`).
//!
//! ```ignore
//! use offload::atomic::{AtomicU32, Ordering::Relaxed};
//!
//! #[offload::device_global]
//! static HITS: AtomicU32 = AtomicU32::new(0);
//!
//! #[offload::kernel]
//! fn count(x: &[f32]) {
//!     for i in offload::grid_stride(x.len()) {
//!         if x[i] > 0.5 {
//!             HITS.with(|h| h.fetch_add(1, Relaxed));
//!         }
//!     }
//! }
//!
//! // host
//! HITS.write(AtomicU32::new(0))?;
//! count(offload::for_len(x.len()), &x)?;
//! let hits = HITS.read()?.into_inner();
//! ```
//!
//! The same meaning on both backends: kernels see the *device's* copy,
//! which starts with the initializer and keeps its value from launch to
//! launch; host code sees it only through [`read`](DeviceGlobal::read) and
//! changes it only through [`write`](DeviceGlobal::write). On a GPU the
//! copy is a global of the device image (`.visible .global` in PTX, found
//! by the CUDA backend with `cuModuleGetGlobal`); on the host fallback it
//! is the static's own storage, which host code cannot reach otherwise.
//!
//! A plain `static` that a kernel writes (an atomic counter, say) is not
//! that: on the host fallback the kernels would change the host's static,
//! on a GPU a copy in the image that the host never sees. The device link
//! refuses such kernels and names the static (see offload-linker's
//! `statics`).

use core::cell::UnsafeCell;

use crate::device::device_copy::MapElem;

/// A variable of the device; declare one with
/// [`#[offload::device_global]`](crate::device_global) on a `static`.
///
/// `T` is plain data or an atomic of [`atomic`](crate::atomic)
/// ([`MapElem`]): kernels read it, and update atomics, through
/// [`with`](Self::with); host code copies it with [`read`](Self::read) and
/// [`write`](Self::write), or for a large `T` (which would not fit the
/// stack by value) [`read_into`](Self::read_into) and
/// [`write_from`](Self::write_from).
pub struct DeviceGlobal<T> {
    value: UnsafeCell<T>,
    /// The device image's symbol (`__offload_global_…`).
    #[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
    symbol: &'static str,
}

// SAFETY: kernels reach the value only as `&T` (`with`), which `T: Sync`
// allows from many threads; host code writes it (`write`) only while no
// kernel runs on the host fallback (the launch lock) and never through a
// reference a kernel holds (`with` lends it only for the closure, inside a
// kernel). On a GPU host code never touches the host's storage.
unsafe impl<T: Sync> Sync for DeviceGlobal<T> {}

impl<T: MapElem> DeviceGlobal<T> {
    /// The device pass's value (generated code only).
    #[doc(hidden)]
    #[cfg(any(target_arch = "nvptx64", target_arch = "amdgpu"))]
    pub const fn __device(value: T) -> Self {
        DeviceGlobal { value: UnsafeCell::new(value) }
    }

    /// The host pass's value and the device symbol (generated code only).
    #[doc(hidden)]
    #[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
    pub const fn __host(value: T, symbol: &'static str) -> Self {
        DeviceGlobal { value: UnsafeCell::new(value), symbol }
    }

    /// Calls `f` with the device's copy, inside a kernel: `HITS.with(|h|
    /// h.fetch_add(1, Relaxed))`. The reference lives only for the call.
    ///
    /// # Panics
    /// On the host outside a kernel (host code uses [`read`](Self::read)
    /// and [`write`](Self::write); on a GPU backend host code has no
    /// access to the device's copy either).
    #[inline(always)]
    pub fn with<R>(&'static self, f: impl FnOnce(&T) -> R) -> R {
        #[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
        if !crate::runtime::host::in_host_kernel() {
            panic!(
                "offload: DeviceGlobal `{}` used outside a kernel: host code reads it with `read()` and changes it with `write()`",
                self.symbol
            );
        }
        // SAFETY: the value is only mutated by `write`, which waits for
        // every kernel of the host fallback to finish, and the reference
        // cannot outlive the call.
        f(unsafe { &*self.value.get() })
    }
}

#[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
impl<T: MapElem> DeviceGlobal<T> {
    /// The device's copy, copied to the host (CUDA `cudaMemcpyFromSymbol`).
    /// Waits first for the work queued so far on every queue of the device
    /// (but queues being captured into a graph), and for blocking launches
    /// running on other threads, on both backends.
    ///
    /// # Errors
    /// [`Error::InvalidLaunch`](crate::Error) inside a kernel (use
    /// [`with`](Self::with)); [`Error::Memory`](crate::Error) if the device
    /// image has no such global (an image built by another build of the
    /// crate); the backend's errors.
    ///
    /// The value is returned on the stack: for a large `T` use
    /// [`read_into`](Self::read_into).
    pub fn read(&'static self) -> crate::Result<T> {
        let mut out = core::mem::MaybeUninit::<T>::uninit();
        self.copy(|rt, addr, bytes| {
            // SAFETY: `out` has room for `bytes = size_of::<T>()`; `addr`
            // is the backend's copy of as many bytes.
            unsafe { rt.copy_from_device(out.as_mut_ptr() as *mut u8, addr, bytes) }
        })?;
        // SAFETY: fully written above; every bit pattern the device can
        // leave is a valid `T` (`MapElem`).
        Ok(unsafe { out.assume_init() })
    }

    /// The device's copy, copied into `out` (as [`read`](Self::read), which
    /// returns a `T` by value: for a large `T`, such as a table of a
    /// million floats, that value alone can overflow the caller's stack).
    /// Keep a large `out` on the heap:
    ///
    /// ```ignore
    /// let mut table: Box<[f32; 1 << 20]> = vec![0.0; 1 << 20].try_into().unwrap();
    /// TABLE.read_into(&mut table)?;
    /// ```
    ///
    /// # Errors
    /// As [`read`](Self::read); `out` is unchanged then.
    pub fn read_into(&'static self, out: &mut T) -> crate::Result<()> {
        self.copy(|rt, addr, bytes| {
            // SAFETY: `out` is `bytes = size_of::<T>()` bytes, borrowed
            // exclusively; `addr` is the backend's copy of as many. Every
            // bit pattern the device can leave is a valid `T` (`MapElem`).
            unsafe { rt.copy_from_device(out as *mut T as *mut u8, addr, bytes) }
        })
    }

    /// Replaces the device's copy with a copy of `*value` (as
    /// [`write`](Self::write), without moving a `T`: see
    /// [`read_into`](Self::read_into) for large `T`).
    ///
    /// # Errors
    /// As [`read`](Self::read).
    pub fn write_from(&'static self, value: &T) -> crate::Result<()> {
        self.copy(|rt, addr, bytes| {
            // SAFETY: `value` holds `bytes` bytes; `addr` is the backend's
            // copy, with room for as many.
            unsafe { rt.copy_to_device(addr, value as *const T as *const u8, bytes) }
        })
    }

    /// Replaces the device's copy (CUDA `cudaMemcpyToSymbol`); later
    /// launches see `value`. Waits first for the work queued so far on
    /// every queue of the device, as [`read`](Self::read). For a large `T` use
    /// [`write_from`](Self::write_from).
    ///
    /// # Errors
    /// As [`read`](Self::read).
    pub fn write(&'static self, value: T) -> crate::Result<()> {
        let value = core::mem::ManuallyDrop::new(value);
        self.copy(|rt, addr, bytes| {
            // SAFETY: `value` holds `bytes` bytes; `addr` is the
            // backend's copy, with room for as many.
            unsafe { rt.copy_to_device(addr, &*value as *const T as *const u8, bytes) }
        })
    }

    fn copy(
        &'static self,
        f: impl FnOnce(&dyn crate::runtime::Backend, u64, usize) -> crate::Result<()>,
    ) -> crate::Result<()> {
        if crate::runtime::host::in_host_kernel() {
            return Err(crate::Error::from(crate::error::InvalidLaunch {
                kernel: self.symbol.into(),
                reason: "a DeviceGlobal was read or written by host code inside a kernel body; kernels use `with()`"
                    .into(),
            }));
        }
        let device = crate::runtime::select::current_device()?;
        let backend = device.backend()?;
        // The work queued so far on every queue of the device first
        // (before the lock below, which the host fallback's kernels take);
        // the backend waits for blocking launches of other threads.
        crate::runtime::queue::wait_queues(device);
        // No kernel of the host fallback runs while this is held.
        let _no_kernels = crate::runtime::host::LAUNCHES.write().unwrap_or_else(|e| e.into_inner());
        let bytes = core::mem::size_of::<T>();
        let addr = backend.global(self.symbol, bytes, self.value.get() as *mut u8)?;
        if bytes == 0 {
            return Ok(());
        }
        f(backend, addr, bytes)
    }
}
