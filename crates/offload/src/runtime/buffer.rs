//! Device-resident memory: data that stays on the device across launches.

use core::marker::PhantomData;
use std::boxed::Box;
use std::sync::Arc;
use std::vec::Vec;

use super::device::Device;
use super::select::current_device;
use crate::device::device_copy::DeviceCopy;
use crate::runtime::error::{Error, Result};
use crate::runtime::queue::track::{self, Resource};

/// `len` elements of `T` in the memory of one [`Device`] (GPU global
/// memory of its context, from the GPU's default memory pool in stream
/// order, `cuMemAllocFromPoolAsync`/`cuMemFreeAsync`, or `cuMemAlloc` where
/// the GPU has no pools; host memory on the host fallback), kept there
/// until the buffer is dropped. Neither allocating nor dropping a buffer
/// waits for the device's queued work (`docs/async.md`, section 3). The buffer
/// belongs to that device: launches and copies on another device refuse
/// it ([`Error::WrongDevice`]) unless peer access lets them use it
/// ([`Device::enable_peer_access`]); [`Queue::memcpy_peer`](crate::Queue::memcpy_peer)
/// copies between devices.
///
/// Pass `&buf` where a kernel takes `&[T]` and `&mut buf` where it takes
/// `&mut [T]`: the launch uses the memory in place, with no copy, so data
/// that consecutive launches share moves once (OpenMP's `target data`
/// region). Move data in and out explicitly with [`from_slice`](Self::from_slice),
/// [`copy_from_slice`](Self::copy_from_slice), [`copy_to_slice`](Self::copy_to_slice)
/// and [`to_vec`](Self::to_vec).
///
/// ```ignore
/// let mut y_dev = offload::DeviceBuffer::from_slice(&y)?;
/// for _ in 0..100 {
///     saxpy(offload::for_len(n), a, &x_dev, &mut y_dev)?;   // no transfers
/// }
/// y_dev.copy_to_slice(&mut y)?;
/// ```
///
/// Queued work (`kernel::on`, [`Queue::memcpy_htod`](crate::Queue::memcpy_htod), …)
/// that uses the buffer is tracked: host access and blocking launches wait
/// for it, and dropping the buffer while it is pending frees the memory
/// once that work has finished (`docs/async.md`, section 3).
pub struct DeviceBuffer<T: DeviceCopy> {
    pub(crate) res: Arc<Resource>,
    len: usize,
    _elem: PhantomData<T>,
}

// SAFETY: the buffer owns its memory like a `Box<[T]>`; device memory may be
// used from any host thread (the runtime serializes driver calls), and
// `T: DeviceCopy` is `Send + Sync`.
unsafe impl<T: DeviceCopy> Send for DeviceBuffer<T> {}
// SAFETY: `&DeviceBuffer` only reads (copies out, or maps as `&[T]`).
unsafe impl<T: DeviceCopy> Sync for DeviceBuffer<T> {}

fn bytes_of<T>(len: usize) -> Result<usize> {
    len.checked_mul(core::mem::size_of::<T>()).ok_or_else(|| {
        Error::from(crate::error::Memory {
            op: "allocate",
            reason: std::format!("{len} elements of {} bytes overflow usize", core::mem::size_of::<T>()),
        })
    })
}

/// `bytes` of zeroed memory of `device`, freed through its backend (once
/// its pending work has finished, see `track`).
fn alloc(device: Device, bytes: usize) -> Result<Resource> {
    track::reap();
    let backend = device.backend()?;
    let generation = backend.generation();
    let addr = backend.alloc_zeroed(bytes)?;
    let free = move || {
        // SAFETY: `addr` was allocated by this device's backend with `bytes`
        // bytes in context generation `generation` (memory of a context
        // that was reset after a fault went with it: the backend skips it)
        // and is freed once; no work uses it any more (`free_when_idle`),
        // and no buffer or graph refers to it (the last owner is gone).
        unsafe { backend.free(addr, bytes, generation) };
    };
    Ok(Resource::new(addr, device, Box::new(free)))
}

impl<T: DeviceCopy> DeviceBuffer<T> {
    /// `len` elements on this thread's device ([`current_device`]), every
    /// byte zero (a valid value of every `DeviceCopy` type).
    ///
    /// # Errors
    /// [`Error::Driver`] if the device is out of memory; the runtime's
    /// selection errors (see [`current_device`]).
    pub fn zeroed(len: usize) -> Result<Self> {
        Self::zeroed_on(current_device()?, len)
    }

    /// `len` zeroed elements on `device`.
    ///
    /// # Errors
    /// As [`zeroed`](Self::zeroed); the device's start error ([`Device::info`]).
    pub fn zeroed_on(device: Device, len: usize) -> Result<Self> {
        let bytes = bytes_of::<T>(len)?;
        Ok(DeviceBuffer { res: Arc::new(alloc(device, bytes)?), len, _elem: PhantomData })
    }

    /// A buffer on this thread's device holding a copy of `data` (one
    /// host → device transfer).
    ///
    /// # Errors
    /// As [`zeroed`](Self::zeroed).
    pub fn from_slice(data: &[T]) -> Result<Self> {
        Self::from_slice_on(current_device()?, data)
    }

    /// A buffer on `device` holding a copy of `data`.
    ///
    /// # Errors
    /// As [`zeroed_on`](Self::zeroed_on).
    pub fn from_slice_on(device: Device, data: &[T]) -> Result<Self> {
        let mut b = Self::zeroed_on(device, data.len())?;
        b.copy_from_slice(data)?;
        Ok(b)
    }

    /// The device whose memory the buffer is.
    pub fn device(&self) -> Device {
        self.res.device
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// `true` if the buffer has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The memory's address: a device address on the GPU, a host address on
    /// the host fallback. Useful for debugging; not dereferenceable on the host
    /// in general.
    pub fn addr(&self) -> u64 {
        self.res.addr
    }

    fn check_len(&self, other: usize, op: &'static str) -> Result<()> {
        if other != self.len {
            return Err(Error::from(crate::error::Memory {
                op,
                reason: std::format!("the buffer has {} elements but the slice has {other}", self.len),
            }));
        }
        Ok(())
    }

    /// Overwrites the buffer with `data` (host → device), after the queued
    /// work that reads or writes the buffer.
    ///
    /// # Errors
    /// [`Error::Memory`] if `data.len() != self.len()`; [`Error::Driver`] if
    /// the copy fails.
    pub fn copy_from_slice(&mut self, data: &[T]) -> Result<()> {
        self.check_len(data.len(), "copy into a DeviceBuffer")?;
        if self.len == 0 {
            return Ok(());
        }
        crate::runtime::queue::capture::refuse_copy_in_capture("copy into a DeviceBuffer")?;
        let _replays = crate::runtime::queue::capture::hold();
        self.res.tracker.wait_host(true);
        // SAFETY: `addr` holds `len` elements (allocated by this backend);
        // `data` is valid for reads of as many; `&mut self` excludes other
        // users of the buffer, queued work that used it has finished
        // (waited for above) and no graph replay starts before we are done
        // (`_replays`).
        unsafe {
            self.res.device.backend()?.copy_to_device(
                self.res.addr,
                data.as_ptr() as *const u8,
                bytes_of::<T>(self.len)?,
            )
        }
    }

    /// Copies the buffer into `out` (device → host), after the queued work
    /// that writes the buffer.
    ///
    /// # Errors
    /// [`Error::Memory`] if `out.len() != self.len()`; [`Error::Driver`] if
    /// the copy fails.
    pub fn copy_to_slice(&self, out: &mut [T]) -> Result<()> {
        self.check_len(out.len(), "copy out of a DeviceBuffer")?;
        if self.len == 0 {
            return Ok(());
        }
        crate::runtime::queue::capture::refuse_copy_in_capture("copy out of a DeviceBuffer")?;
        let _replays = crate::runtime::queue::capture::hold();
        self.res.tracker.wait_host(false);
        // SAFETY: as in `copy_from_slice` (queued writers finished, no
        // replay starts meanwhile); bytes written into `out` were copied
        // from values of `T`, which stay valid (DeviceCopy contract).
        unsafe {
            self.res.device.backend()?.copy_from_device(
                out.as_mut_ptr() as *mut u8,
                self.res.addr,
                bytes_of::<T>(self.len)?,
            )
        }
    }

    /// The buffer's contents as a new `Vec` (device → host).
    ///
    /// # Errors
    /// As [`copy_to_slice`](Self::copy_to_slice).
    pub fn to_vec(&self) -> Result<Vec<T>> {
        let mut v = Vec::with_capacity(self.len);
        // SAFETY: `DeviceCopy` types are valid when all bytes are zero.
        unsafe {
            core::ptr::write_bytes(v.as_mut_ptr(), 0, self.len);
            v.set_len(self.len);
        }
        self.copy_to_slice(&mut v)?;
        Ok(v)
    }
}

impl<T: DeviceCopy + core::fmt::Debug> core::fmt::Debug for DeviceBuffer<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("DeviceBuffer")
            .field("len", &self.len)
            .field("device", &self.res.device)
            .field("addr", &format_args!("{:#x}", self.res.addr))
            .finish()
    }
}
