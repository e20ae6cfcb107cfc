//! Page-locked host memory: fast host ↔ device copies.

use core::marker::PhantomData;
use core::ops::{Deref, DerefMut};
use core::ptr::NonNull;

use super::device::Device;
use super::select::current_device;
use crate::runtime::args::{MapIn, MapInOut};
use crate::runtime::error::{Error, Result};
use crate::runtime::queue::track::Tracker;
use crate::{DeviceCopy, SliceArg, SliceArgMut};

/// `len` elements of `T` in page-locked ("pinned") host memory
/// (`cuMemHostAlloc`), usable as a slice on the host.
///
/// The GPU's copy engines read and write page-locked memory directly, so
/// copies between it and the device run at the full speed of the
/// interconnect; ordinary (pageable) memory is first staged through a
/// driver buffer, which roughly halves the rate (CUDA C++ Best Practices
/// Guide, "Pinned Memory"). Use it for data that moves often or in bulk:
/// as the source or destination of [`DeviceBuffer`](crate::DeviceBuffer)
/// copies, or as a kernel argument (`&buf` / `&mut buf`, copied for the
/// launch like a `Vec`, only faster). Pinned memory is a scarce system
/// resource: allocate it once and reuse it. On the host fallback it is
/// ordinary memory.
///
/// ```ignore
/// let mut staging = offload::PinnedBuffer::<f32>::zeroed(n)?;
/// staging.copy_from_slice(&input);   // the slice method: panics if the lengths differ
/// let dev = offload::DeviceBuffer::from_slice(&staging)?;   // full-speed copy
/// ```
///
/// Queued copies into or out of it ([`Queue::memcpy_dtoh`](crate::Queue::memcpy_dtoh),
/// [`Queue::memcpy_htod`](crate::Queue::memcpy_htod)) are tracked: using it
/// as a slice waits for a pending copy into it, as `&mut [T]` also for
/// pending copies out of it, and dropping it waits for both
/// (`docs/async.md`, section 3).
pub struct PinnedBuffer<T: DeviceCopy> {
    ptr: NonNull<T>,
    len: usize,
    /// The device that allocated it (and frees it).
    device: Device,
    pub(crate) tracker: Tracker,
    _elem: PhantomData<T>,
}

// SAFETY: the buffer owns its memory like a `Box<[T]>`; `T: DeviceCopy` is
// `Send + Sync`.
unsafe impl<T: DeviceCopy> Send for PinnedBuffer<T> {}
// SAFETY: as above; `&PinnedBuffer` only reads.
unsafe impl<T: DeviceCopy> Sync for PinnedBuffer<T> {}

impl<T: DeviceCopy> PinnedBuffer<T> {
    /// `len` elements, every byte zero (a valid value of every `DeviceCopy`
    /// type). Page-locked for every GPU (`cuMemHostAlloc` with
    /// `CU_MEMHOSTALLOC_PORTABLE`, through this thread's device if it is a
    /// GPU, else through the first GPU that starts), so that queues of any
    /// GPU copy from and to it at full speed and kernels of any GPU can map
    /// it; ordinary memory where no GPU starts.
    ///
    /// # Errors
    /// [`Error::Memory`] if the size overflows; [`Error::Driver`]
    /// (`cuMemHostAlloc`) if the system cannot lock that much memory; the
    /// runtime's selection errors (see [`current_device`]).
    pub fn zeroed(len: usize) -> Result<Self> {
        let device = allocator(current_device()?);
        let bytes = len.checked_mul(core::mem::size_of::<T>()).ok_or_else(|| {
            Error::from(crate::error::Memory {
                op: "allocate pinned memory",
                reason: std::format!("{len} elements of {} bytes overflow usize", core::mem::size_of::<T>()),
            })
        })?;
        let ptr = if bytes == 0 {
            NonNull::dangling()
        } else {
            let p = device.backend()?.alloc_pinned(bytes)? as *mut T;
            // Both backends return memory aligned to at least 256 bytes
            // (cuMemHostAlloc: page-aligned).
            NonNull::new(p).ok_or_else(|| {
                Error::from(crate::error::Memory { op: "allocate pinned memory", reason: "null pointer".into() })
            })?
        };
        Ok(PinnedBuffer { ptr, len, device, tracker: Tracker::default(), _elem: PhantomData })
    }

    /// A pinned copy of `data`.
    ///
    /// # Errors
    /// As [`zeroed`](Self::zeroed).
    pub fn from_slice(data: &[T]) -> Result<Self> {
        let mut b = Self::zeroed(data.len())?;
        b.copy_from_slice(data);
        Ok(b)
    }
}

/// The device that allocates pinned memory for a thread whose device is
/// `current`: `current` if it is a GPU, else the first GPU that starts,
/// else `current` (the host).
fn allocator(current: Device) -> Device {
    if current.kind() == crate::BackendKind::Cuda {
        return current;
    }
    let gpus = crate::devices().iter().filter(|d| d.kind() == crate::BackendKind::Cuda);
    gpus.copied().find(|d| d.backend().is_ok()).unwrap_or(current)
}

impl<T: DeviceCopy> PinnedBuffer<T> {
    /// The buffer as a kernel argument the GPU reads in place, over the
    /// interconnect, with no copy before the launch: CUDA's *mapped pinned
    /// memory* ("zero-copy"; CUDA C++ Programming Guide, "Mapped Memory").
    /// Pass `&buf.mapped()` where a kernel takes `&[T]`.
    ///
    /// Worth it for data a kernel reads once, or little of: each access
    /// crosses the host link (tens of GB/s, microseconds of latency), so data
    /// read repeatedly belongs in a [`DeviceBuffer`](crate::DeviceBuffer).
    /// On the host fallback it is ordinary memory.
    pub fn mapped(&self) -> Mapped<'_, T> {
        Mapped { buf: self }
    }

    /// As [`mapped`](Self::mapped), for a kernel's `&mut [T]` parameter:
    /// the kernel's writes land in this host memory directly and nothing is
    /// copied back after the launch. This is how BabelStream's CUDA version
    /// returns its per-block dot products: the kernel writes them into
    /// `cudaHostAlloc` memory.
    pub fn mapped_mut(&mut self) -> MappedMut<'_, T> {
        MappedMut { buf: self }
    }

    /// The address kernels use for the buffer. Memory from `cuMemHostAlloc`
    /// is mapped into the device address space at the same address on every
    /// device with unified addressing (CUDA Driver API, "Unified
    /// Addressing"), which all 64-bit GPUs offload supports (sm_70 and later)
    /// have; on the host fallback it is host memory anyway.
    pub(crate) fn device_ptr(&self) -> *mut T {
        self.ptr.as_ptr()
    }
}

/// A [`PinnedBuffer`] passed to a kernel's `&[T]` parameter without a copy;
/// see [`PinnedBuffer::mapped`].
pub struct Mapped<'a, T: DeviceCopy> {
    buf: &'a PinnedBuffer<T>,
}

/// A [`PinnedBuffer`] passed to a kernel's `&mut [T]` parameter without
/// copies; see [`PinnedBuffer::mapped_mut`].
pub struct MappedMut<'a, T: DeviceCopy> {
    buf: &'a mut PinnedBuffer<T>,
}

impl<T: DeviceCopy> Deref for PinnedBuffer<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // A queued copy into the buffer may still be writing it.
        self.tracker.wait_host(false);
        // SAFETY: `ptr` holds `len` initialized (zeroed, then written) `T`s
        // owned by `self`; no queued work writes them (waited for above,
        // and new work that writes needs `&mut self`).
        unsafe { core::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: DeviceCopy> DerefMut for PinnedBuffer<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // Queued copies may still read or write the buffer.
        self.tracker.wait_host(true);
        // SAFETY: as in `deref`, and `&mut self` is exclusive: no queued
        // work reads or writes them any more, and none can be added while
        // the slice lives.
        unsafe { core::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: DeviceCopy> Drop for PinnedBuffer<T> {
    fn drop(&mut self) {
        let bytes = self.len * core::mem::size_of::<T>();
        if bytes == 0 {
            return;
        }
        // Queued copies from and to it finish first.
        self.tracker.wait_host(true);
        if let Ok(backend) = self.device.backend() {
            // SAFETY: allocated by this backend's `alloc_pinned(bytes)`, freed
            // once; launches that used it are synchronous and over, queued
            // copies too (waited for above).
            unsafe { backend.free_pinned(self.ptr.as_ptr() as *mut u8, bytes) };
        }
    }
}

impl<T: DeviceCopy> SliceArg<T> for PinnedBuffer<T> {
    fn map_in(&self) -> MapIn<'_, T> {
        MapIn::host(self)
    }
}

impl<T: DeviceCopy> SliceArgMut<T> for PinnedBuffer<T> {
    fn map_inout(&mut self) -> MapInOut<'_, T> {
        MapInOut::host(self)
    }
}

// A mapped pinned buffer is passed like a resident one: its address is valid
// on the device (see `PinnedBuffer::device_ptr`), so nothing is copied. Its
// pointer is non-null and aligned even when empty (`NonNull::dangling`).
// Its launches are blocking (queued launches do not take `Mapped`), and the
// buffer's queued copies are not ordered with them by a stream: like the
// host's own access (`Deref`, `DerefMut`), the launch first waits for the
// copies that write the buffer (a read) or that use it at all (a write).
impl<T: DeviceCopy> SliceArg<T> for Mapped<'_, T> {
    fn map_in(&self) -> MapIn<'_, T> {
        self.buf.tracker.wait_host(false);
        MapIn::resident(self.buf.device_ptr(), self.buf.len(), None)
    }
}

impl<T: DeviceCopy> SliceArgMut<T> for MappedMut<'_, T> {
    fn map_inout(&mut self) -> MapInOut<'_, T> {
        self.buf.tracker.wait_host(true);
        MapInOut::resident(self.buf.device_ptr(), self.buf.len(), None)
    }
}

impl<T: DeviceCopy + core::fmt::Debug> core::fmt::Debug for PinnedBuffer<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PinnedBuffer").field("len", &self.len).finish()
    }
}
