//! Which GPU thread owns an element, for the message of a `get_mut` that
//! reaches another thread's element (builds with debug assertions only).
//!
//! The checks themselves are the views' (`DisjointSlice::owns`,
//! `DisjointSliceNd::owns`): O(1), no allocation. This module runs only once
//! a check has failed: it turns the owner's global position back into the
//! block and thread indices that `Error::KernelPanic` also reports, and
//! panics. Out of line and cold, so that the hot path keeps one compare and
//! one branch; `#[track_caller]`, so that the panic's location is the
//! kernel's `get_mut` call.

use core::fmt;

use crate::device::dim::Dim3;
use crate::device::thread::{block_dim, grid_dim};

/// A thread as `Error::KernelPanic` names one: `thread (x, y, z) of block
/// (x, y, z)`.
struct Thread {
    block: Dim3,
    thread: Dim3,
}

impl Thread {
    /// The thread at global position `(x, y, z)` (`global_thread_idx()`) of
    /// the running launch.
    fn at(x: usize, y: usize, z: usize) -> Thread {
        let b = block_dim();
        let (bx, by, bz) = (b.x as usize, b.y as usize, b.z as usize);
        // Each quotient is below `grid_dim()` and each remainder below
        // `block_dim()`, both `u32`.
        Thread {
            block: Dim3::new((x / bx) as u32, (y / by) as u32, (z / bz) as u32),
            thread: Dim3::new((x % bx) as u32, (y % by) as u32, (z % bz) as u32),
        }
    }

    /// The thread whose `global_index()` is `g` (`g < global_size()`): the
    /// inverse of `x + X·(y + Y·z)`.
    fn of_global_index(g: usize) -> Thread {
        let (b, gd) = (block_dim(), grid_dim());
        let gx = gd.x as usize * b.x as usize;
        let gy = gd.y as usize * b.y as usize;
        Thread::at(g % gx, (g / gx) % gy, g / (gx * gy))
    }
}

impl fmt::Display for Thread {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (t, b) = (self.thread, self.block);
        write!(f, "thread ({}, {}, {}) of block ({}, {}, {})", t.x, t.y, t.z, b.x, b.y, b.z)
    }
}

/// `DisjointSlice::get_mut(i)` reached element `i`, which the thread whose
/// `global_index()` is `i % size` owns, not the caller.
#[cold]
#[inline(never)]
#[track_caller]
pub(crate) fn not_owned_1d(i: usize, size: usize) -> ! {
    let owner = Thread::of_global_index(i % size);
    panic!(
        "DisjointSlice::get_mut({i}): element {i} belongs to {owner}, not to this thread (element i belongs to \
         the thread whose global_index() is i % {size}); for a 2-D or 3-D array declare its shape, \
         #[kernel(shape(name = (width, height)))], or use get_mut_if_owned to skip other threads' elements"
    )
}

/// `DisjointSliceNd::get_mut(at)` reached the element at `at`, which the
/// thread at global position `owner` owns, not the caller.
#[cold]
#[inline(never)]
#[track_caller]
pub(crate) fn not_owned_nd(at: &[usize], owner: [usize; 3]) -> ! {
    let thread = Thread::at(owner[0], owner[1], owner[2]);
    panic!(
        "DisjointSliceNd::get_mut({at:?}): the element belongs to {thread}, not to this thread (element (x, y, z) \
         belongs to the thread whose global_thread_idx() is (x, y, z) modulo global_dim(), 0 on the axes the \
         array lacks); use get_mut_if_owned to skip other threads' elements"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::thread::{ThreadCtx, CTX};
    use std::string::ToString;

    #[test]
    fn names_block_and_thread_of_a_global_position() {
        CTX.with(|c| {
            c.set(ThreadCtx {
                thread: Dim3::new(0, 0, 0),
                block: Dim3::new(0, 0, 0),
                block_dim: Dim3::new(16, 4, 2),
                grid_dim: Dim3::new(3, 5, 2),
            })
        });
        // Global x 40 = block 2 · 16 + 8; y 13 = 3 · 4 + 1; z 3 = 1 · 2 + 1.
        assert_eq!(Thread::at(40, 13, 3).to_string(), "thread (8, 1, 1) of block (2, 3, 1)");
        // global_index = x + 48 · (y + 20 · z)
        let g = 40 + 48 * (13 + 20 * 3);
        assert_eq!(Thread::of_global_index(g).to_string(), "thread (8, 1, 1) of block (2, 3, 1)");
        CTX.with(|c| c.set(ThreadCtx::SINGLE));
    }
}
