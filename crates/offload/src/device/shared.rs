//! Shared memory: per-block memory that all threads of a block see (CUDA
//! `__shared__`, PTX state space `.shared`; CUDA C++ Programming Guide,
//! "Shared Memory"), and the block barrier that orders it.
//!
//! # Soundness
//!
//! Every thread of a block runs the kernel body at once, so shared memory is
//! shared *mutable* state. The safe API makes every access an atomic access
//! (relaxed unless stated: [`SharedArray::get`] / [`SharedArray::set`] are
//! `ld.relaxed` / `st.relaxed`, the `atomic_*` methods are `atom`), so no
//! data race is reachable from safe code, whatever the barriers. What the
//! barrier adds is *ordering*: after [`sync_threads`], every shared (and
//! global) memory write a thread of the block made before it is visible to
//! every thread of the block (PTX ISA, `bar.sync`: "guarantees memory
//! ordering among threads participating in the barrier", it has the
//! semantics of `fence.acq_rel.cta`). A missing barrier therefore gives
//! stale values, never undefined behaviour.
//!
//! Contents are *unspecified* at kernel start (PTX cannot initialize
//! `.shared` variables): any bit pattern, which is why the element types
//! ([`SharedElem`]) are plain integers and floats, for which every bit
//! pattern is a valid value. Write before you read.
//!
//! For non-atomic access (e.g. vectorized loads of a tile), the `unsafe`
//! escape hatch is [`SharedArray::as_mut_ptr`]: its user promises that no
//! two threads access an element concurrently unless all are reads.

use core::marker::PhantomData;
use core::sync::atomic::{AtomicI32, AtomicI64, AtomicU32, AtomicU64, Ordering::Relaxed};

use crate::device::atomic::{AtomicF32, AtomicF64};

/// Waits until every thread of the block has reached this call, then makes
/// every memory write made before it by a thread of the block visible to
/// every thread of the block (CUDA `__syncthreads()`, PTX `bar.sync 0`).
///
/// Every thread of the block that has not returned must reach the *same*
/// call (not one in another branch): on a GPU a barrier in divergent code
/// hangs or misbehaves (PTX ISA, `bar.sync`); the host fallback detects
/// it and the launch returns [`Error::Divergence`](crate::Error). Threads
/// that have returned count as arrived, as on current GPUs. Outside a
/// kernel launch (a one-thread grid) it returns at once.
#[inline(always)]
pub fn sync_threads() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: `bar.sync 0` has no memory-safety preconditions; only
    // divergent use is an error, which costs progress, not soundness.
    unsafe {
        core::arch::nvptx::_syncthreads()
    }
    #[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
    crate::hostsim::entry::sync_threads()
}

/// The host fallback's memory for one `shared_array!` site in the current
/// block (see `hostsim`).
#[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
#[inline(always)]
pub fn host_shared_array<T: SharedElem, const N: usize>(site: &'static u8) -> &'static SharedArray<T, N> {
    let p = crate::hostsim::entry::shared_alloc(
        site as *const u8 as usize,
        core::mem::size_of::<SharedArray<T, N>>(),
        core::mem::align_of::<SharedArray<T, N>>(),
    );
    // SAFETY: `p` is suitably sized and aligned, lives forever (arenas are
    // never freed), holds initialized bytes (zeroed, then only ever written
    // with element values), every bit pattern is a valid atomic cell, and
    // cells are only accessed atomically (or through `unsafe` pointers).
    unsafe { &*(p as *const SharedArray<T, N>) }
}

mod sealed {
    pub trait Sealed {}
}

/// Element types of shared memory: integers and floats of 4 or 8 bytes,
/// each stored in its atomic cell type ([`SharedElem::Cell`]).
pub trait SharedElem: Copy + sealed::Sealed + 'static {
    /// The atomic cell that holds one element (`AtomicU32`, [`AtomicF32`], …).
    type Cell: Sync + 'static;
    /// A cell holding zero (used only to build statics; on the GPU the
    /// initial contents are unspecified).
    #[doc(hidden)]
    const ZERO: Self::Cell;
    /// Relaxed load.
    fn load(c: &Self::Cell) -> Self;
    /// Relaxed store.
    fn store(c: &Self::Cell, v: Self);
}

macro_rules! shared_elem {
    ($($t:ty => $cell:ty, $zero:expr);* $(;)?) => {$(
        impl sealed::Sealed for $t {}
        impl SharedElem for $t {
            type Cell = $cell;
            const ZERO: $cell = $zero;
            #[inline(always)]
            fn load(c: &$cell) -> $t { c.load(Relaxed) }
            #[inline(always)]
            fn store(c: &$cell, v: $t) { c.store(v, Relaxed) }
        }
    )*};
}

shared_elem! {
    u32 => AtomicU32, AtomicU32::new(0);
    i32 => AtomicI32, AtomicI32::new(0);
    u64 => AtomicU64, AtomicU64::new(0);
    i64 => AtomicI64, AtomicI64::new(0);
    f32 => AtomicF32, AtomicF32::new(0.0);
    f64 => AtomicF64, AtomicF64::new(0.0);
}

/// A fixed-size shared-memory array of `N` elements of `T` per block
/// (CUDA `__shared__ T a[N];`). Declare one with [`shared_array!`](crate::shared_array!); every
/// thread of a block gets the same array, every block its own.
///
/// Every access is atomic (`get` / `set` are PTX `ld.relaxed` /
/// `st.relaxed`, the `atomic_*` methods `atom`), so they are safe from any thread;
/// order them with [`sync_threads`].
/// Indices out of bounds panic, as slices do.
#[repr(transparent)]
pub struct SharedArray<T: SharedElem, const N: usize> {
    cells: [T::Cell; N],
    _t: PhantomData<T>,
}

impl<T: SharedElem, const N: usize> SharedArray<T, N> {
    /// The initializer used by [`shared_array!`] on the device; the device
    /// linker drops it (shared memory starts unspecified).
    #[doc(hidden)]
    pub const UNSPECIFIED: Self = SharedArray { cells: [T::ZERO; N], _t: PhantomData };

    /// `N`.
    #[inline(always)]
    pub const fn len(&self) -> usize {
        N
    }

    /// `N == 0`.
    #[inline(always)]
    pub const fn is_empty(&self) -> bool {
        N == 0
    }

    /// Element `i` (relaxed atomic load). Panics if `i >= N`.
    #[inline(always)]
    pub fn get(&self, i: usize) -> T {
        T::load(&self.cells[i])
    }

    /// Sets element `i` (relaxed atomic store). Panics if `i >= N`.
    #[inline(always)]
    pub fn set(&self, i: usize, v: T) {
        T::store(&self.cells[i], v)
    }

    /// The atomic cell of element `i`, for read-modify-write operations
    /// (`fetch_add`, …, and the scoped operations of
    /// [`atomic`](crate::atomic)). Panics if `i >= N`.
    #[inline(always)]
    pub fn atomic(&self, i: usize) -> &T::Cell {
        &self.cells[i]
    }

    /// All cells as a slice.
    #[inline(always)]
    pub fn cells(&self) -> &[T::Cell] {
        &self.cells
    }

    /// Base pointer for non-atomic access. Dereferencing it is `unsafe`:
    /// no two threads may access an element concurrently unless all
    /// accesses are reads or atomic; a [`sync_threads`] between a write and
    /// another thread's access orders them.
    #[inline(always)]
    pub fn as_mut_ptr(&self) -> *mut T {
        self.cells.as_ptr() as *mut T
    }
}

/// The dynamic shared memory of the block, viewed as elements of `T`
/// (CUDA `extern __shared__ T s[];`): `LaunchConfig::shared_mem_bytes /
/// size_of::<T>()` elements, 16-byte aligned. Same access rules as
/// [`SharedArray`]. All calls in one kernel see the same bytes, whatever `T`.
#[derive(Clone, Copy)]
pub struct SharedSlice<T: SharedElem> {
    cells: &'static [T::Cell],
}

impl<T: SharedElem> SharedSlice<T> {
    /// Number of elements.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.cells.len()
    }

    /// `len() == 0` (no dynamic shared memory was requested).
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    /// Element `i` (relaxed atomic load). Panics if out of bounds.
    #[inline(always)]
    pub fn get(&self, i: usize) -> T {
        T::load(&self.cells[i])
    }

    /// Sets element `i` (relaxed atomic store). Panics if out of bounds.
    #[inline(always)]
    pub fn set(&self, i: usize, v: T) {
        T::store(&self.cells[i], v)
    }

    /// The atomic cell of element `i`. Panics if out of bounds.
    #[inline(always)]
    pub fn atomic(&self, i: usize) -> &'static T::Cell {
        &self.cells[i]
    }

    /// Base pointer for non-atomic access; see [`SharedArray::as_mut_ptr`].
    #[inline(always)]
    pub fn as_mut_ptr(&self) -> *mut T {
        self.cells.as_ptr() as *mut T
    }
}

#[cfg(target_arch = "nvptx64")]
extern "C" {
    /// The dynamic shared memory: the device linker turns this declaration
    /// into `.extern .shared .align 16 .b8 __offload_dynamic_shared[];`.
    static __offload_dynamic_shared: [u8; 0];
    #[link_name = "llvm.nvvm.read.ptx.sreg.dynamic_smem_size"]
    fn dynamic_smem_size() -> u32;
}

/// The block's dynamic shared memory as `T`s; see [`SharedSlice`].
#[inline(always)]
pub fn dynamic_shared<T: SharedElem>() -> SharedSlice<T> {
    #[cfg(target_arch = "nvptx64")]
    let (ptr, bytes) = {
        // SAFETY: reading `%dynamic_smem_size` has no preconditions; the
        // address of the extern shared array is that of the dynamic shared
        // memory, which is `bytes` long and 16-byte aligned.
        unsafe { (core::ptr::addr_of!(__offload_dynamic_shared) as *const u8, dynamic_smem_size() as usize) }
    };
    #[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
    let (ptr, bytes) = {
        let (p, b) = crate::hostsim::entry::dynamic_shared();
        (p as *const u8, b)
    };
    // AMD GPU code objects are built but not run by this runtime yet (no HIP
    // backend); their dynamic shared memory is empty.
    #[cfg(target_arch = "amdgpu")]
    let (ptr, bytes) = (core::ptr::NonNull::<u128>::dangling().as_ptr() as *const u8, 0usize);
    let len = bytes / core::mem::size_of::<T::Cell>();
    if len == 0 {
        return SharedSlice { cells: &[] };
    }
    // SAFETY: `ptr` is 16-byte aligned (≥ the cell alignment) and valid for
    // `bytes` bytes for the whole launch (on the host: forever, the arena is
    // never freed); the cells are atomics, so sharing them between threads
    // is sound, and every bit pattern is a valid cell.
    SharedSlice { cells: unsafe { core::slice::from_raw_parts(ptr as *const T::Cell, len) } }
}

/// Declares a shared-memory array of the block and evaluates to a
/// `&'static` [`SharedArray`]: `let tile = shared_array!(f32; 256);`
/// (CUDA `__shared__ float tile[256];`).
///
/// Each use site is one array per block: every thread of the block that
/// evaluates it gets the same array; another site (another macro call) is
/// another array. `N` is a constant expression; the element type is one of
/// [`SharedElem`]'s; the site may not be inside a generic function whose
/// parameters the type mentions (as for any `static`).
///
/// On the GPU the array is a `.shared` variable (the device linker moves the
/// static the macro declares into PTX's shared state space); on the host
/// fallback it is memory of the block being simulated.
#[macro_export]
macro_rules! shared_array {
    ($t:ty; $n:expr) => {{
        #[cfg(any(target_arch = "nvptx64", target_arch = "amdgpu"))]
        let array: &'static $crate::SharedArray<$t, { $n }> = {
            // The device linker moves every static of this section to the
            // shared state space (addrspace 3) and drops its initializer.
            #[unsafe(link_section = ".offload.shared")]
            static SHARED: $crate::SharedArray<$t, { $n }> = $crate::SharedArray::UNSPECIFIED;
            &SHARED
        };
        #[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
        let array: &'static $crate::SharedArray<$t, { $n }> = {
            static SITE: u8 = 0;
            $crate::__private::host_shared_array::<$t, { $n }>(&SITE)
        };
        array
    }};
}
