//! Thread, block and grid indices: CUDA's `threadIdx`, `blockIdx`,
//! `blockDim` and `gridDim` built-in variables (CUDA C++ Programming Guide,
//! "Built-in Variables"; PTX ISA, "Special Registers": `%tid`, `%ctaid`,
//! `%ntid`, `%nctaid`).
//!
//! On the device they read the special registers. On the host fallback they
//! read the simulated thread that the runtime is executing; outside a kernel
//! they describe a grid of one thread (every index 0, every extent 1), so a
//! kernel body called directly from host code behaves as a one-thread launch.

use crate::device::dim::Dim3;

#[cfg(target_arch = "nvptx64")]
mod imp {
    use crate::device::dim::Dim3;
    use core::arch::nvptx;

    macro_rules! sreg {
        ($name:ident, $x:ident, $y:ident, $z:ident) => {
            #[inline(always)]
            pub fn $name() -> Dim3 {
                // SAFETY: reading a PTX special register has no preconditions
                // inside a kernel, which is the only place device code runs.
                unsafe { Dim3 { x: nvptx::$x() as u32, y: nvptx::$y() as u32, z: nvptx::$z() as u32 } }
            }
        };
    }
    sreg!(thread_idx, _thread_idx_x, _thread_idx_y, _thread_idx_z);
    sreg!(block_idx, _block_idx_x, _block_idx_y, _block_idx_z);
    sreg!(block_dim, _block_dim_x, _block_dim_y, _block_dim_z);
    sreg!(grid_dim, _grid_dim_x, _grid_dim_y, _grid_dim_z);
}

#[cfg(target_arch = "amdgpu")]
mod imp {
    use crate::device::dim::Dim3;
    use core::arch::amdgpu as a;

    extern "C" {
        /// The HSA kernel dispatch packet (`hsa_kernel_dispatch_packet_t`),
        /// from `llvm.amdgcn.dispatch.ptr`. Rust cannot name its address
        /// space (4, constant), so offload-linker links a definition that
        /// casts it to a generic pointer.
        fn __offload_amdgpu_dispatch_ptr() -> *const u8;
    }

    #[inline(always)]
    pub fn thread_idx() -> Dim3 {
        Dim3 { x: a::workitem_id_x(), y: a::workitem_id_y(), z: a::workitem_id_z() }
    }
    #[inline(always)]
    pub fn block_idx() -> Dim3 {
        Dim3 { x: a::workgroup_id_x(), y: a::workgroup_id_y(), z: a::workgroup_id_z() }
    }
    #[inline(always)]
    pub fn block_dim() -> Dim3 {
        // The dispatch packet holds workgroup_size_x/y/z as u16 at byte
        // offsets 4, 6, 8 (HSA Platform System Architecture Specification,
        // "Kernel Dispatch Packet").
        // SAFETY: the dispatch pointer is valid for the whole kernel and the
        // packet layout is fixed by the HSA specification.
        unsafe {
            let p = __offload_amdgpu_dispatch_ptr() as *const u16;
            Dim3 { x: *p.add(2) as u32, y: *p.add(3) as u32, z: *p.add(4) as u32 }
        }
    }
    #[inline(always)]
    pub fn grid_dim() -> Dim3 {
        // grid_size_x/y/z in work-items, u32 at byte offsets 12, 16, 20.
        let b = block_dim();
        // SAFETY: as in `block_dim`.
        let (gx, gy, gz) = unsafe {
            let p = __offload_amdgpu_dispatch_ptr() as *const u32;
            (*p.add(3), *p.add(4), *p.add(5))
        };
        Dim3 { x: gx.div_ceil(b.x), y: gy.div_ceil(b.y), z: gz.div_ceil(b.z) }
    }
}

#[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
pub(crate) mod imp {
    use crate::device::dim::Dim3;
    use core::cell::Cell;

    /// The simulated GPU thread a host worker is executing.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct ThreadCtx {
        pub thread: Dim3,
        pub block: Dim3,
        pub block_dim: Dim3,
        pub grid_dim: Dim3,
    }

    impl ThreadCtx {
        pub(crate) const SINGLE: ThreadCtx = ThreadCtx {
            thread: Dim3::new(0, 0, 0),
            block: Dim3::new(0, 0, 0),
            block_dim: Dim3::new(1, 1, 1),
            grid_dim: Dim3::new(1, 1, 1),
        };
    }

    std::thread_local! {
        pub(crate) static CTX: Cell<ThreadCtx> = const { Cell::new(ThreadCtx::SINGLE) };
    }

    #[inline]
    fn get() -> ThreadCtx {
        CTX.with(|c| c.get())
    }

    /// Sets `threadIdx` of the simulated thread this OS thread runs (the
    /// host scheduler's loop over a block's threads: one 12-byte store).
    #[inline(always)]
    pub(crate) fn set_thread_idx(t: Dim3) {
        // SAFETY: the cell belongs to this OS thread, and no reference into
        // it lives (it is only read and written by copy, `get`/`set`).
        CTX.with(|c| unsafe { (*c.as_ptr()).thread = t });
    }

    /// Sets `threadIdx.x` alone (the loop over the threads of a 1-D block).
    #[inline(always)]
    pub(crate) fn set_thread_x(x: u32) {
        // SAFETY: as in `set_thread_idx`.
        CTX.with(|c| unsafe { (*c.as_ptr()).thread.x = x });
    }

    #[inline]
    pub fn thread_idx() -> Dim3 {
        get().thread
    }
    #[inline]
    pub fn block_idx() -> Dim3 {
        get().block
    }
    #[inline]
    pub fn block_dim() -> Dim3 {
        get().block_dim
    }
    #[inline]
    pub fn grid_dim() -> Dim3 {
        get().grid_dim
    }
}

#[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
pub(crate) use imp::{set_thread_idx, set_thread_x, ThreadCtx, CTX};

/// This thread's index within its block (`threadIdx`), each component
/// `< block_dim()`.
#[inline(always)]
pub fn thread_idx() -> Dim3 {
    imp::thread_idx()
}

/// This block's index within the grid (`blockIdx`), each component
/// `< grid_dim()`.
#[inline(always)]
pub fn block_idx() -> Dim3 {
    imp::block_idx()
}

/// Threads per block in each dimension (`blockDim`).
#[inline(always)]
pub fn block_dim() -> Dim3 {
    imp::block_dim()
}

/// Blocks per grid in each dimension (`gridDim`).
#[inline(always)]
pub fn grid_dim() -> Dim3 {
    imp::grid_dim()
}

/// This thread's index in the whole grid, unique per thread, in
/// `0..global_size()`: the row-major (x fastest) position of
/// [`global_thread_idx`] in a grid of [`global_dim`] threads,
/// `x + X·(y + Y·z)`.
///
/// For a 1-D launch it is CUDA's `blockIdx.x * blockDim.x + threadIdx.x`;
/// for a 2-D launch whose x-extent `X = gridDim.x * blockDim.x` equals the
/// width of a row-major matrix, it is the index of element `(row, col) =
/// (y, x)`, so [`DisjointSlice::at_thread`](crate::DisjointSlice::at_thread)
/// hands each thread of a 2-D grid its own matrix element.
/// [`DisjointSlice`](crate::DisjointSlice) uses it to decide which elements a
/// thread owns.
#[inline(always)]
pub fn global_index() -> usize {
    let bd = block_dim();
    let gd = grid_dim();
    // CUDA's 1-D index, also the first term of the general formula.
    let x = block_idx().x as usize * bd.x as usize + thread_idx().x as usize;
    // 1-D launches (the common case) stop here; the extents tested are
    // uniform across the grid, so the branch never diverges. Entry points
    // also compile a copy of the kernel in which this test is known true
    // (see `__private::kernel_entry`).
    if is_1d(bd, gd) {
        return x;
    }
    let t = thread_idx();
    let b = block_idx();
    let y = b.y as usize * bd.y as usize + t.y as usize;
    let z = b.z as usize * bd.z as usize + t.z as usize;
    let w = gd.x as usize * bd.x as usize;
    let h = gd.y as usize * bd.y as usize;
    x + w * (y + h * z)
}

/// Whether a launch of `gd` blocks of `bd` threads is 1-D: y and z extents 1.
#[inline(always)]
pub(crate) fn is_1d(bd: Dim3, gd: Dim3) -> bool {
    bd.y == 1 && bd.z == 1 && gd.y == 1 && gd.z == 1
}

/// Hidden entry-point argument: the launch is 1-D (see
/// `__private::kernel_entry`).
pub const SHAPE_1D: u32 = 1;
/// Hidden entry-point argument: the launch may have any shape.
pub const SHAPE_ANY: u32 = 0;

/// The hidden launch-shape argument for a launch of `gd` blocks of `bd`
/// threads.
#[cfg_attr(any(target_arch = "nvptx64", target_arch = "amdgpu"), allow(dead_code))]
pub(crate) fn launch_shape(bd: Dim3, gd: Dim3) -> u32 {
    if is_1d(bd, gd) {
        SHAPE_1D
    } else {
        SHAPE_ANY
    }
}

/// The number of threads in the grid: `grid_dim().volume() * block_dim().volume()`,
/// at most `isize::MAX` (the launcher rejects larger grids, see
/// [`LaunchConfig`](crate::LaunchConfig)).
#[inline(always)]
pub fn global_size() -> usize {
    let bd = block_dim();
    let gd = grid_dim();
    let row = gd.x as usize * bd.x as usize;
    if is_1d(bd, gd) {
        return row;
    }
    row * (gd.y as usize * bd.y as usize) * (gd.z as usize * bd.z as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outside_a_kernel_is_a_one_thread_grid() {
        assert_eq!(global_index(), 0);
        assert_eq!(global_size(), 1);
        assert_eq!(block_dim(), Dim3::new(1, 1, 1));
    }

    #[test]
    fn global_index_is_unique_and_dense() {
        let bd = Dim3::new(4, 3, 2);
        let gd = Dim3::new(3, 2, 2);
        let mut seen = std::vec![false; (bd.volume() * gd.volume()) as usize];
        for bz in 0..gd.z {
            for by in 0..gd.y {
                for bx in 0..gd.x {
                    for tz in 0..bd.z {
                        for ty in 0..bd.y {
                            for tx in 0..bd.x {
                                CTX.with(|c| {
                                    c.set(ThreadCtx {
                                        thread: Dim3::new(tx, ty, tz),
                                        block: Dim3::new(bx, by, bz),
                                        block_dim: bd,
                                        grid_dim: gd,
                                    })
                                });
                                let g = global_index();
                                assert!(!seen[g], "index {g} twice");
                                seen[g] = true;
                                assert_eq!(global_size(), seen.len());
                            }
                        }
                    }
                }
            }
        }
        CTX.with(|c| c.set(ThreadCtx::SINGLE));
        assert!(seen.iter().all(|&s| s));
        // 1-D launches: CUDA's formula
        CTX.with(|c| {
            c.set(ThreadCtx {
                thread: Dim3::new(5, 0, 0),
                block: Dim3::new(7, 0, 0),
                block_dim: Dim3::new(256, 1, 1),
                grid_dim: Dim3::new(100, 1, 1),
            })
        });
        assert_eq!(global_index(), 7 * 256 + 5);
        CTX.with(|c| c.set(ThreadCtx::SINGLE));
    }
}

/// This thread's index in the whole grid *per dimension*:
/// `blockIdx * blockDim + threadIdx` for x, y and z — the `(col, row)` of
/// a 2-D launch (`col = blockIdx.x * blockDim.x + threadIdx.x`).
#[inline(always)]
pub fn global_thread_idx() -> Dim3 {
    let t = thread_idx();
    let b = block_idx();
    let d = block_dim();
    Dim3 { x: b.x * d.x + t.x, y: b.y * d.y + t.y, z: b.z * d.z + t.z }
}

/// Threads in the grid per dimension: `gridDim * blockDim`.
#[inline(always)]
pub fn global_dim() -> Dim3 {
    let g = grid_dim();
    let d = block_dim();
    Dim3 { x: g.x * d.x, y: g.y * d.y, z: g.z * d.z }
}

/// The indices `global_index()`, `+ global_size()`, … below `n`: CUDA's
/// grid-stride loop `for (i = gid; i < n; i += stride)` as an iterator,
/// which compiles to the same loop (two registers, one add and one compare
/// per step). For writing to a `&mut [T]` argument use
/// [`DisjointSlice::grid_stride`](crate::DisjointSlice::grid_stride).
#[inline(always)]
pub fn grid_stride(n: usize) -> GridStrideRange {
    GridStrideRange { next: global_index(), end: n, stride: global_size() }
}

/// Iterator of [`grid_stride`].
#[derive(Debug, Clone)]
pub struct GridStrideRange {
    next: usize,
    end: usize,
    stride: usize,
}

impl Iterator for GridStrideRange {
    type Item = usize;

    #[inline(always)]
    fn next(&mut self) -> Option<usize> {
        let i = self.next;
        if i < self.end {
            self.next = i.saturating_add(self.stride);
            Some(i)
        } else {
            None
        }
    }
}
