//! Sound per-thread writes to a `&mut [T]` argument that holds a 2-D or 3-D
//! array: ownership by the array's coordinates, so that a grid larger than
//! the array (the usual `ceil(w / 16) × ceil(h / 16)` blocks of 16×16
//! threads) reaches every element with no `unsafe`.
//!
//! Why a separate type, fixed by the kernel's signature
//! (`#[kernel(shape(out = (width, height)))]`) instead of a method taking
//! the width: two threads that used different widths (`at_thread_2d(w)` with
//! a `w` each computes) or different rules (one thread the 1-D rule of
//! [`DisjointSlice`](crate::DisjointSlice), another the 2-D one) could reach
//! the same element, a data race from safe code. The extents come from the
//! kernel's by-value parameters (or literals), read by the entry point
//! before the body runs: every thread of the launch sees the same ones, and
//! the launcher checks that they multiply to the slice's length.

use core::marker::PhantomData;

use crate::device::thread::{block_dim, block_idx, grid_dim, thread_idx};

/// A kernel's view of a `&mut [T]` argument declared as an `N`-dimensional
/// row-major array (`N` is 2 or 3): `extents = [width, height]` or `[nx, ny,
/// nz]`, x varying fastest, so element `(x, y, z)` is at index
/// `x + nx·(y + ny·z)`.
///
/// **Ownership rule.** In a launch of `global_dim() = (X, Y, Z)` threads, the
/// element at `(x, y)` of a 2-D array belongs to the thread whose
/// [`global_thread_idx`](crate::global_thread_idx) is `(x mod X, y mod Y,
/// 0)`; the element at `(x, y, z)` of a 3-D array to the thread at `(x mod X,
/// y mod Y, z mod Z)`. Each element has exactly one owner and each thread
/// owns the elements congruent to its position, so no two threads reach the
/// same element; when the grid covers the array (`X ≥ width`, `Y ≥ height`),
/// each thread owns at most one element, the one at its own position, and
/// threads outside the array own none. In a 3-D launch, only the threads of
/// the plane `z = 0` own elements of a 2-D array.
///
/// - [`at_thread`](Self::at_thread): the element at this thread's position,
///   or `None` outside the array (CUDA's `if (x < w && y < h)`);
/// - [`grid_stride`](Self::grid_stride): every owned element, for grids
///   smaller than the array;
/// - [`get_mut`](Self::get_mut): an owned element by coordinates; in debug
///   builds, another thread's element panics naming that thread.
///
/// As [`DisjointSlice`](crate::DisjointSlice): one GPU thread's view, fixed
/// when the entry point makes it, neither `Send` nor `Sync`; the same rule
/// on the GPU and on the host fallback.
pub struct DisjointSliceNd<'a, T, const N: usize> {
    ptr: *mut T,
    /// The array's extents, x first.
    extents: [usize; N],
    /// Their product, the number of elements.
    len: usize,
    /// This thread's `global_thread_idx()` on the array's axes.
    at: [usize; N],
    /// `global_dim()` on the array's axes: the step between owned elements.
    grid: [usize; N],
    /// Whether this thread's `global_thread_idx()` is 0 on the axes the
    /// array lacks (only such threads own elements).
    in_plane: bool,
    _borrow: PhantomData<&'a mut [T]>,
}

/// A 2-D array, `extents = [width, height]`: see [`DisjointSliceNd`].
pub type DisjointSlice2d<'a, T> = DisjointSliceNd<'a, T, 2>;
/// A 3-D array, `extents = [nx, ny, nz]`: see [`DisjointSliceNd`].
pub type DisjointSlice3d<'a, T> = DisjointSliceNd<'a, T, 3>;

impl<'a, T, const N: usize> DisjointSliceNd<'a, T, N> {
    /// Wraps the `extents[0] · … · extents[N-1]` elements at `ptr` for the
    /// calling GPU thread, whose position is read now.
    ///
    /// # Safety
    ///
    /// - `ptr` is valid for reads and writes of that many initialized `T`s
    ///   for `'a` (or the product is 0; then `ptr` may be dangling), and the
    ///   product does not overflow `usize`;
    /// - during `'a`, the memory is reached only through views created by
    ///   the threads of one launch, at most one per thread, all with the
    ///   same `extents` and `N` (so the ownership rule above holds).
    #[inline(always)]
    pub unsafe fn from_raw_parts(ptr: *mut T, extents: [usize; N]) -> Self {
        const { assert!(N >= 2 && N <= 3, "DisjointSliceNd is 2-D or 3-D") };
        let (t, b, d, g) = (thread_idx(), block_idx(), block_dim(), grid_dim());
        // Computed in `usize`: `blockIdx.x * blockDim.x` can exceed `u32`.
        let pos = |t: u32, b: u32, d: u32| b as usize * d as usize + t as usize;
        let here = [pos(t.x, b.x, d.x), pos(t.y, b.y, d.y), pos(t.z, b.z, d.z)];
        let dims = [g.x as usize * d.x as usize, g.y as usize * d.y as usize, g.z as usize * d.z as usize];
        let mut at = [0; N];
        let mut grid = [0; N];
        at.copy_from_slice(&here[..N]);
        grid.copy_from_slice(&dims[..N]);
        let in_plane = here[N..].iter().all(|&c| c == 0);
        let len = extents.iter().product();
        DisjointSliceNd { ptr, extents, len, at, grid, in_plane, _borrow: PhantomData }
    }

    /// The array's extents, x first: `[width, height]` or `[nx, ny, nz]`.
    #[inline(always)]
    pub fn extents(&self) -> [usize; N] {
        self.extents
    }

    /// Number of elements in the whole array (all threads' elements).
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// `true` if the array has no elements.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether `at` is inside the array.
    #[inline(always)]
    fn contains(&self, at: [usize; N]) -> bool {
        (0..N).all(|k| at[k] < self.extents[k])
    }

    /// The row-major index of `at` (inside the array).
    #[inline(always)]
    fn index(&self, at: [usize; N]) -> usize {
        (0..N).rev().fold(0, |i, k| i * self.extents[k] + at[k])
    }

    /// Whether this thread owns the element at `at` (see the ownership rule).
    #[inline(always)]
    pub fn owns(&self, at: [usize; N]) -> bool {
        self.in_plane && self.contains(at) && (0..N).all(|k| at[k] % self.grid[k] == self.at[k])
    }

    /// The element at this thread's position, `global_thread_idx()` on the
    /// array's axes, with its coordinates; `None` if that position is
    /// outside the array (the `if (x < w && y < h)` of a CUDA kernel whose
    /// grid is rounded up to whole blocks).
    #[inline(always)]
    pub fn at_thread(&mut self) -> Option<([usize; N], &mut T)> {
        let at = self.at;
        if self.in_plane && self.contains(at) {
            // SAFETY: inside the array, and owned by this thread (`at[k] <
            // grid[k]`, so `at[k] % grid[k] == at[k]`); `&mut self` prevents
            // a second reference through this view.
            Some((at, unsafe { &mut *self.ptr.add(self.index(at)) }))
        } else {
            None
        }
    }

    /// The element at `at`, which this thread owns; `None` if `at` is
    /// outside the array.
    ///
    /// # Panics
    /// With debug assertions, if another thread owns the element: the
    /// message names that thread and its block. Without debug assertions it
    /// returns `None` then, as [`get_mut_if_owned`](Self::get_mut_if_owned)
    /// always does.
    #[inline(always)]
    #[track_caller]
    pub fn get_mut(&mut self, at: [usize; N]) -> Option<&mut T> {
        if self.owns(at) {
            // SAFETY: inside the array and owned by this thread.
            Some(unsafe { &mut *self.ptr.add(self.index(at)) })
        } else {
            #[cfg(debug_assertions)]
            if self.contains(at) {
                let mut owner = [0; 3];
                for k in 0..N {
                    owner[k] = at[k] % self.grid[k];
                }
                crate::device::owner::not_owned_nd(&at, owner);
            }
            None
        }
    }

    /// The element at `at` if this thread owns it, else `None` (outside the
    /// array, or another thread's element), never a panic.
    #[inline(always)]
    pub fn get_mut_if_owned(&mut self, at: [usize; N]) -> Option<&mut T> {
        if self.owns(at) {
            // SAFETY: inside the array and owned by this thread.
            Some(unsafe { &mut *self.ptr.add(self.index(at)) })
        } else {
            None
        }
    }

    /// Every element this thread owns, in row-major order, with its
    /// coordinates: x from `global_thread_idx().x` in steps of
    /// `global_dim().x` inside rows from `global_thread_idx().y` in steps of
    /// `global_dim().y` (and planes likewise): CUDA's 2-D grid-stride loop.
    #[inline(always)]
    pub fn grid_stride(&mut self) -> GridStrideNd<'_, T, N> {
        let done = !(self.in_plane && self.contains(self.at));
        GridStrideNd {
            ptr: self.ptr,
            extents: self.extents,
            start: self.at,
            step: self.grid,
            next: self.at,
            done,
            _borrow: PhantomData,
        }
    }

    /// The array's base pointer, for access patterns the ownership rule does
    /// not cover; as [`DisjointSlice::as_mut_ptr`](crate::DisjointSlice::as_mut_ptr).
    #[inline(always)]
    pub fn as_mut_ptr(&mut self) -> *mut T {
        self.ptr
    }
}

/// Iterator over the elements a thread owns in a [`DisjointSliceNd`]; see
/// [`DisjointSliceNd::grid_stride`]. Neither `Send` nor `Sync`.
pub struct GridStrideNd<'s, T, const N: usize> {
    ptr: *mut T,
    extents: [usize; N],
    start: [usize; N],
    step: [usize; N],
    next: [usize; N],
    done: bool,
    _borrow: PhantomData<&'s mut [T]>,
}

impl<'s, T, const N: usize> Iterator for GridStrideNd<'s, T, N> {
    type Item = ([usize; N], &'s mut T);

    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let at = self.next;
        let i = (0..N).rev().fold(0, |i, k| i * self.extents[k] + at[k]);
        // Advance like an odometer, x fastest; each axis restarts at this
        // thread's own coordinate.
        let mut k = 0;
        loop {
            self.next[k] = self.next[k].saturating_add(self.step[k]);
            if self.next[k] < self.extents[k] {
                break;
            }
            self.next[k] = self.start[k];
            k += 1;
            if k == N {
                self.done = true;
                break;
            }
        }
        // SAFETY: `at` is inside the array and congruent to the owner's
        // position on every axis, so the view's thread owns it; each
        // position is yielded once, and the iterator borrows the view
        // mutably for its whole life.
        Some((at, unsafe { &mut *self.ptr.add(i) }))
    }
}

#[cfg(test)]
#[path = "disjoint_tests.rs"]
mod tests;
