//! Sound per-thread writes to a mapped `&mut [T]`.

use core::marker::PhantomData;

use crate::device::thread::{global_index, global_size};

/// A kernel's view of a `&mut [T]` argument: every GPU thread runs the body
/// at once, so each may reach only the elements it *owns*.
///
/// **Ownership rule.** In a launch of `S = global_size()` threads, element `i`
/// is owned by the thread whose [`global_index`] is `i % S`. Every element has
/// exactly one owner, so two threads never reach the same element and no data
/// race is reachable from safe code. The methods below only hand out owned
/// elements, and only through `&mut self`, so one thread cannot hold two
/// references to the same element either.
///
/// The usual CUDA patterns are covered:
/// - one element per thread: [`at_thread`](Self::at_thread);
/// - a grid-stride loop (`for (i = gid; i < n; i += stride)`):
///   [`grid_stride`](Self::grid_stride);
/// - any owned index: [`get_mut`](Self::get_mut), or
///   [`get_mut_if_owned`](Self::get_mut_if_owned) where the thread does not
///   know whether it owns the element (`if let Some(c) =
///   count.get_mut_if_owned(0)`: "the owner of element 0").
///
/// Ownership follows the launch, not the data: in a 2-D launch whose
/// x-extent (`gridDim.x * blockDim.x`) is not the row length of the array
/// the slice holds, the thread at `(x, y)` does not own element `y·w + x`.
/// Declare the array's shape instead (`#[kernel(shape(out = (w, h)))]`):
/// the kernel then gets a [`DisjointSliceNd`](crate::DisjointSliceNd), whose
/// ownership follows the array's coordinates.
///
/// **A wrong index is loud in debug builds.** [`get_mut`](Self::get_mut) of
/// an element that another thread owns panics, naming the owner's block and
/// thread, in builds with debug assertions (the dev profile; on the GPU the
/// launch returns `Error::KernelPanic`); without them it returns `None`, as
/// `get_mut_if_owned` always does.
///
/// Any other pattern (threads writing a contiguous chunk, a scatter, a
/// reduction into one element) goes through [`as_mut_ptr`](Self::as_mut_ptr)
/// in `unsafe` code, whose author promises that no two threads write the same
/// element and no thread reads an element another thread writes.
///
/// On the host fallback the same rule holds, so a kernel that is correct on
/// one backend is correct on the other.
///
/// **One GPU thread's view.** The owner is fixed when the slice is made for
/// its thread (the launch makes one per thread): its [`global_index`] and
/// [`global_size`] are read then and kept, so what the slice reaches never
/// depends on which thread later calls it. A `DisjointSlice` and its
/// iterators are neither `Send` nor `Sync`: the view of one GPU thread does
/// not move to another OS thread (host-only code in a kernel body that
/// spawns threads cannot take it along; a `&mut T` element it handed out
/// can go, as any exclusive reference).
pub struct DisjointSlice<'a, T> {
    ptr: *mut T,
    len: usize,
    /// The owner's `global_index()`, read when the slice was made.
    index: usize,
    /// The launch's `global_size()`, read when the slice was made.
    stride: usize,
    /// (`ptr`, a raw pointer, makes the type neither `Send` nor `Sync`.)
    _borrow: PhantomData<&'a mut [T]>,
}

impl<'a, T> DisjointSlice<'a, T> {
    /// Wraps `len` elements at `ptr` for the calling GPU thread: the slice
    /// reaches the elements that [`global_index`] owns in a launch of
    /// [`global_size`] threads, both read now.
    ///
    /// # Safety
    ///
    /// - `ptr` is valid for reads and writes of `len` initialized `T`s for `'a`
    ///   (or `len == 0`; then `ptr` may be null);
    /// - during `'a`, the memory is reached only through `DisjointSlice`s
    ///   created by the threads of one launch, at most one per thread (so
    ///   the ownership rule above holds).
    #[inline(always)]
    pub unsafe fn from_raw_parts(ptr: *mut T, len: usize) -> Self {
        DisjointSlice { ptr, len, index: global_index(), stride: global_size(), _borrow: PhantomData }
    }

    /// Number of elements in the whole slice (all threads' elements).
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// `true` if the slice has no elements.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether this thread owns element `i` (see the ownership rule).
    #[inline(always)]
    pub fn owns(&self, i: usize) -> bool {
        i < self.len && i % self.stride == self.index
    }

    /// The owner's element, `global_index()`, with its index; `None` if the
    /// slice is shorter than that (the usual `if (i < n)` guard of a kernel
    /// launched with more threads than elements).
    #[inline(always)]
    pub fn at_thread(&mut self) -> Option<(usize, &mut T)> {
        let i = self.index;
        if i < self.len {
            // SAFETY: `i` is in bounds and owned by this slice's thread
            // (`i == index < len`; `index < stride`, so `i % stride ==
            // index`); `&mut self` prevents a second reference through it.
            Some((i, unsafe { &mut *self.ptr.add(i) }))
        } else {
            None
        }
    }

    /// Element `i`, which this thread owns; `None` if `i` is out of bounds.
    ///
    /// # Panics
    /// With debug assertions, if another thread owns element `i`: the
    /// message names that thread and its block (a kernel whose indices do
    /// not follow the ownership rule loses writes otherwise). Without debug
    /// assertions it returns `None` then. Use
    /// [`get_mut_if_owned`](Self::get_mut_if_owned) when not owning the
    /// element is expected.
    #[inline(always)]
    #[track_caller]
    pub fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        if self.owns(i) {
            // SAFETY: in bounds and owned by this thread; see `at_thread`.
            Some(unsafe { &mut *self.ptr.add(i) })
        } else {
            #[cfg(debug_assertions)]
            if i < self.len {
                crate::device::owner::not_owned_1d(i, self.stride);
            }
            None
        }
    }

    /// Element `i` if this thread owns it, else `None` (out of bounds, or
    /// another thread's element), never a panic.
    #[inline(always)]
    pub fn get_mut_if_owned(&mut self, i: usize) -> Option<&mut T> {
        if self.owns(i) {
            // SAFETY: in bounds and owned by this thread; see `at_thread`.
            Some(unsafe { &mut *self.ptr.add(i) })
        } else {
            None
        }
    }

    /// All elements this thread owns, in increasing order:
    /// `global_index()`, `+ global_size()`, `+ 2·global_size()`, … — the
    /// grid-stride loop of CUDA kernels, yielding `(index, &mut element)`.
    #[inline(always)]
    pub fn grid_stride(&mut self) -> GridStride<'_, T> {
        GridStride { ptr: self.ptr, len: self.len, next: self.index, stride: self.stride, _borrow: PhantomData }
    }

    /// The slice's base pointer, for access patterns the ownership rule does
    /// not cover. Dereferencing it is `unsafe`: the caller must ensure that no
    /// two threads write the same element and that no thread reads an element
    /// another thread writes during the launch (unless both use atomics).
    #[inline(always)]
    pub fn as_mut_ptr(&mut self) -> *mut T {
        self.ptr
    }
}

/// Iterator over the elements a thread owns; see
/// [`DisjointSlice::grid_stride`]. Neither `Send` nor `Sync`, as the slice.
pub struct GridStride<'s, T> {
    ptr: *mut T,
    len: usize,
    next: usize,
    stride: usize,
    _borrow: PhantomData<&'s mut [T]>,
}

impl<'s, T> Iterator for GridStride<'s, T> {
    type Item = (usize, &'s mut T);

    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        let i = self.next;
        if i < self.len {
            self.next = if core::mem::size_of::<T>() == 0 {
                // A slice of zero-sized elements may be `usize::MAX` long.
                i.saturating_add(self.stride)
            } else {
                // No overflow: `i < len ≤ isize::MAX` (a slice of sized
                // elements) and `stride ≤ isize::MAX` (the launcher's limit),
                // so `i + stride < usize::MAX`. A plain add keeps the loop
                // as short as CUDA's.
                i + self.stride
            };
            // SAFETY: `i` is in bounds and `i % stride == index` (the
            // slice's owner), so the owner owns it; the iterator yields each
            // index once and borrows the `DisjointSlice` mutably for its
            // whole life.
            Some((i, unsafe { &mut *self.ptr.add(i) }))
        } else {
            None
        }
    }
}
