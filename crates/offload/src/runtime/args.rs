//! What a launcher accepts for a kernel's slice parameters.
//!
//! A kernel declared with `x: &[T]` is launched with `&x` where `x` is any
//! [`SliceArg<T>`]: a slice, a `Vec<T>`, an array, a `Box<[T]>` (copied to the
//! device for the launch: OpenMP's `map(to:)`), or a
//! [`DeviceBuffer<T>`](crate::DeviceBuffer), which already lives on the device
//! and is not copied (OpenMP's `target data` region). Likewise `y: &mut [T]`
//! takes `&mut y` for any [`SliceArgMut<T>`] (`map(tofrom:)`, or resident).

use core::marker::PhantomData;
use std::sync::Arc;

use crate::runtime::queue::track::Resource;
use crate::runtime::spec::{ArgKind, ArgSpec};
use crate::{DeviceBuffer, DeviceCopy, DisjointSlice, DisjointSliceNd, MapElem};

/// Accepted where a kernel takes `&[T]`. Implemented for `[T]`, `Vec<T>`,
/// `[T; N]`, `Box<[T]>`, [`DeviceBuffer<T>`], [`PinnedBuffer<T>`](crate::PinnedBuffer)
/// and its [`Mapped`](crate::Mapped) view; `T` is plain data (`DeviceCopy`) or an atomic
/// (`MapElem`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be passed where the kernel takes `&[{T}]`",
    label = "expected a reference to `[{T}]`, `Vec<{T}>`, `[{T}; N]`, `Box<[{T}]>`, `DeviceBuffer<{T}>`, `PinnedBuffer<{T}>` or `Mapped<{T}>` (`&pinned.mapped()`)"
)]
pub trait SliceArg<T: MapElem> {
    /// The view a launch maps.
    #[doc(hidden)]
    fn map_in(&self) -> MapIn<'_, T>;
}

/// Accepted where a kernel takes `&mut [T]`. Implemented for `[T]`,
/// `Vec<T>`, `[T; N]`, `Box<[T]>`, [`DeviceBuffer<T>`],
/// [`PinnedBuffer<T>`](crate::PinnedBuffer) and its [`MappedMut`](crate::MappedMut) view.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be passed where the kernel takes `&mut [{T}]`",
    label = "expected `&mut` to `[{T}]`, `Vec<{T}>`, `[{T}; N]`, `Box<[{T}]>`, `DeviceBuffer<{T}>`, `PinnedBuffer<{T}>` or `MappedMut<{T}>` (`&mut pinned.mapped_mut()`)"
)]
pub trait SliceArgMut<T: DeviceCopy> {
    /// The view a launch maps.
    #[doc(hidden)]
    fn map_inout(&mut self) -> MapInOut<'_, T>;
}

/// A `&[T]` argument of one launch (generated code only).
#[doc(hidden)]
pub struct MapIn<'a, T> {
    ptr: *const T,
    len: usize,
    resident: bool,
    /// The buffer's memory, for queued work tracking (null: untracked).
    res: *const Arc<Resource>,
    _borrow: PhantomData<&'a [T]>,
}

impl<T> Clone for MapIn<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for MapIn<'_, T> {}
// SAFETY: a `MapIn` stands for a shared borrow of `T`s; sharing it between
// threads shares `&[T]`, which `T: Sync` permits.
unsafe impl<T: Sync> Sync for MapIn<'_, T> {}
// SAFETY: as above.
unsafe impl<T: Sync> Send for MapIn<'_, T> {}

impl<'a, T: MapElem> MapIn<'a, T> {
    /// Host memory, copied to the device for the launch (and back into the
    /// host's atomics, element by element, for atomic element types).
    pub fn host(s: &'a [T]) -> Self {
        MapIn { ptr: s.as_ptr(), len: s.len(), resident: false, res: core::ptr::null(), _borrow: PhantomData }
    }

    /// `len` elements at `ptr`, an address valid on the device for the
    /// launch (a `DeviceBuffer`, or mapped pinned memory): passed as is,
    /// nothing copied. `ptr` is non-null and aligned even when `len == 0`.
    pub(crate) fn resident(ptr: *const T, len: usize, res: Option<&'a Arc<Resource>>) -> Self {
        let res = res.map_or(core::ptr::null(), |r| r as *const Arc<Resource>);
        MapIn { ptr, len, resident: true, res, _borrow: PhantomData }
    }

    /// Elements of the slice.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the slice is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The argument's description for the backend.
    pub fn spec(&self) -> ArgSpec<'a> {
        if self.resident {
            let (addr, len, res) = (self.ptr as u64, self.len, self.res);
            ArgSpec::new(ArgKind::Resident { addr, len, pass_len: true, write: false, res })
        } else {
            ArgSpec::new(ArgKind::Host {
                ptr: self.ptr as *mut u8,
                bytes: self.len * core::mem::size_of::<T>(),
                len: self.len,
                pass_len: true,
                writeback: T::ATOMIC_BYTES != 0,
                atomic: T::ATOMIC_BYTES as u8,
            })
        }
    }

    /// The slice as the host fallback's threads see it.
    ///
    /// # Safety
    /// Called only by the host fallback, where every address (resident
    /// buffers included) is host memory.
    #[inline(always)]
    pub unsafe fn host_view(self) -> &'a [T] {
        if self.len == 0 {
            &[]
        } else {
            // SAFETY: on the host fallback `ptr` points to `len` initialized
            // `T`s borrowed shared for `'a` (caller's contract).
            unsafe { core::slice::from_raw_parts(self.ptr, self.len) }
        }
    }
}

/// A `&mut [T]` / `&mut T` argument of one launch (generated code only):
/// holds the exclusive borrow for the whole launch and hands each simulated
/// thread of the host fallback its [`DisjointSlice`].
#[doc(hidden)]
pub struct MapInOut<'a, T> {
    ptr: *mut T,
    len: usize,
    pass_len: bool,
    resident: bool,
    /// As in [`MapIn`].
    res: *const Arc<Resource>,
    _borrow: PhantomData<&'a mut [T]>,
}

impl<T> Clone for MapInOut<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for MapInOut<'_, T> {}

// SAFETY: a `MapInOut` is only turned into per-thread `DisjointSlice`s, which
// reach disjoint elements; sharing it between the host fallback's worker
// threads therefore sends elements between threads, which `T: Send` permits.
unsafe impl<T: Send> Sync for MapInOut<'_, T> {}
// SAFETY: as above.
unsafe impl<T: Send> Send for MapInOut<'_, T> {}

impl<'a, T: DeviceCopy> MapInOut<'a, T> {
    /// Host memory, copied to the device and back.
    pub fn host(s: &'a mut [T]) -> Self {
        let (ptr, len, res) = (s.as_mut_ptr(), s.len(), core::ptr::null());
        MapInOut { ptr, len, pass_len: true, resident: false, res, _borrow: PhantomData }
    }

    /// A `&mut T` parameter: one element, passed without a length.
    pub fn reference(r: &'a mut T) -> Self {
        MapInOut {
            ptr: r as *mut T,
            len: 1,
            pass_len: false,
            resident: false,
            res: core::ptr::null(),
            _borrow: PhantomData,
        }
    }

    /// As [`MapIn::resident`], written in place.
    pub(crate) fn resident(ptr: *mut T, len: usize, res: Option<&'a Arc<Resource>>) -> Self {
        let res = res.map_or(core::ptr::null(), |r| r as *const Arc<Resource>);
        MapInOut { ptr, len, pass_len: true, resident: true, res, _borrow: PhantomData }
    }

    /// Elements of the slice.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the slice is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The argument's description for the backend.
    pub fn spec(&self) -> ArgSpec<'a> {
        if self.resident {
            let (addr, len, pass_len, res) = (self.ptr as u64, self.len, self.pass_len, self.res);
            ArgSpec::new(ArgKind::Resident { addr, len, pass_len, write: true, res })
        } else {
            ArgSpec::new(ArgKind::Host {
                ptr: self.ptr as *mut u8,
                bytes: self.len * core::mem::size_of::<T>(),
                len: self.len,
                pass_len: self.pass_len,
                writeback: true,
                atomic: 0,
            })
        }
    }

    /// The view of one simulated GPU thread.
    ///
    /// # Safety
    /// Called only by the host fallback (where every address is host memory),
    /// at most once per simulated thread of the launch that holds this
    /// `MapInOut`, and the result is used only by that thread and only during
    /// the launch.
    #[inline(always)]
    pub unsafe fn disjoint(self) -> DisjointSlice<'a, T> {
        // SAFETY: `ptr`/`len` come from an exclusive borrow held for `'a`;
        // the caller upholds the one-per-thread rule.
        unsafe { DisjointSlice::from_raw_parts(self.ptr, self.len) }
    }

    /// The view of one simulated GPU thread, of an argument declared as an
    /// array with `extents` (`#[kernel(shape(…))]`).
    ///
    /// # Safety
    /// As [`disjoint`](Self::disjoint), with the same `extents` for every
    /// thread of the launch, whose product is `len` (`check_shape`).
    pub unsafe fn disjoint_nd<const N: usize>(self, extents: [usize; N]) -> DisjointSliceNd<'a, T, N> {
        // SAFETY: `ptr` holds `len` elements, exclusively for `'a`; the
        // caller upholds the one-per-thread rule and the extents.
        unsafe { DisjointSliceNd::from_raw_parts(self.ptr, extents) }
    }
}

impl<T: MapElem> SliceArg<T> for [T] {
    fn map_in(&self) -> MapIn<'_, T> {
        MapIn::host(self)
    }
}
impl<T: MapElem> SliceArg<T> for std::vec::Vec<T> {
    fn map_in(&self) -> MapIn<'_, T> {
        MapIn::host(self)
    }
}
impl<T: MapElem, const N: usize> SliceArg<T> for [T; N] {
    fn map_in(&self) -> MapIn<'_, T> {
        MapIn::host(self)
    }
}
impl<T: MapElem> SliceArg<T> for std::boxed::Box<[T]> {
    fn map_in(&self) -> MapIn<'_, T> {
        MapIn::host(self)
    }
}
/// The address a launch passes for a buffer: an empty buffer has no memory
/// (address 0 on the GPU), but a kernel's slice pointer must be non-null and
/// aligned, so it gets a dangling one, which no thread dereferences.
fn buffer_addr<T: DeviceCopy>(b: &DeviceBuffer<T>) -> *mut T {
    if b.is_empty() {
        core::ptr::NonNull::<T>::dangling().as_ptr()
    } else {
        b.addr() as *mut T
    }
}

impl<T: DeviceCopy> SliceArg<T> for DeviceBuffer<T> {
    fn map_in(&self) -> MapIn<'_, T> {
        MapIn::resident(buffer_addr(self), self.len(), Some(&self.res))
    }
}

impl<T: DeviceCopy> SliceArgMut<T> for [T] {
    fn map_inout(&mut self) -> MapInOut<'_, T> {
        MapInOut::host(self)
    }
}
impl<T: DeviceCopy> SliceArgMut<T> for std::vec::Vec<T> {
    fn map_inout(&mut self) -> MapInOut<'_, T> {
        MapInOut::host(self)
    }
}
impl<T: DeviceCopy, const N: usize> SliceArgMut<T> for [T; N] {
    fn map_inout(&mut self) -> MapInOut<'_, T> {
        MapInOut::host(self)
    }
}
impl<T: DeviceCopy> SliceArgMut<T> for std::boxed::Box<[T]> {
    fn map_inout(&mut self) -> MapInOut<'_, T> {
        MapInOut::host(self)
    }
}
impl<T: DeviceCopy> SliceArgMut<T> for DeviceBuffer<T> {
    fn map_inout(&mut self) -> MapInOut<'_, T> {
        MapInOut::resident(buffer_addr(self), self.len(), Some(&self.res))
    }
}
