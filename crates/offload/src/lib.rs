//! Single-source GPU offload for Rust.
//!
//! Write kernels as ordinary functions in the same crate as the host code,
//! mark them `#[offload::kernel]`, build and run with `cargo offload run`.
//! The kernels run on the GPU with their data moved for them; where no GPU is
//! usable the same program runs them on the host CPU (the *host fallback*),
//! with the same results.
//!
//! ```ignore
//! use offload::{kernel, DisjointSlice};
//!
//! /// y = a·x + y, one element per GPU thread.
//! #[kernel]
//! fn saxpy(a: f32, x: &[f32], y: &mut [f32]) {
//!     // `y` is a `DisjointSlice` here: each thread reaches only its own element.
//!     if let Some((i, yi)) = y.at_thread() {
//!         *yi += a * x[i];
//!     }
//! }
//!
//! #[offload::host]
//! fn main() -> Result<(), offload::Error> {
//!     let x = vec![1.0f32; 1 << 20];
//!     let mut y = vec![2.0f32; 1 << 20];
//!     saxpy(offload::for_len(y.len()), 3.0, &x, &mut y)?;
//!     assert!(y.iter().all(|&v| v == 5.0));
//!     Ok(())
//! }
//! ```
//!
//! # How it is built
//!
//! `cargo offload` compiles the crate twice, as rustc's experimental
//! `std::offload` does: a *device pass* for `nvptx64-nvidia-cuda` in which the
//! crate is a `cdylib` whose only exports are the kernels, linked into one
//! device image (PTX, plus a cubin where `ptxas` is found), and a *host pass*
//! that embeds that image in the binary. Code that only makes sense on the
//! host (`fn main`, I/O, `std`) is kept out of the device pass with
//! [`#[offload::host]`](host) or `#[cfg(not(offload_device))]`.
//!
//! # Mapping arguments
//!
//! A kernel's parameters decide how data moves (as in OpenMP's `map` clause):
//!
//! | parameter | moved | the body sees |
//! | --- | --- | --- |
//! | `x: T` (`T: DeviceCopy`) | by value, as a kernel parameter | `T` |
//! | `x: &[T]` | to the device before the launch | `&[T]` |
//! | `x: &T` | to the device before the launch | `&T` |
//! | `x: &mut [T]` | to the device, and back after the launch | [`DisjointSlice<T>`] |
//! | `x: &mut T` | to the device, and back after the launch | one-element [`DisjointSlice<T>`] |
//!
//! Any other parameter type is a compile-time error on that parameter. A
//! value parameter's type may be aligned to at most 16 bytes (rustc's
//! nvptx64 kernel ABI passes it as a byte array of alignment ≤ 16): a
//! `#[repr(align(32))]` type, or one with such a field, is an error at the
//! parameter on both passes; pass it as `x: &T` instead.
//!
//! # Soundness of writes
//!
//! Every GPU thread runs the body at once, so a body that received
//! `&mut [T]` would hand every thread a unique reference to the same memory.
//! Instead a `&mut [T]` parameter arrives as a [`DisjointSlice`], through
//! which a thread reaches only the elements it *owns*: index `i` belongs to
//! the thread whose [`global_index`] is `i % global_size()`. Two threads never
//! reach the same element, so no data race is reachable from safe code; other
//! access patterns are `unsafe` ([`DisjointSlice::as_mut_ptr`]).
#![no_std]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(stdarch_nvptx, allow_internal_unstable, asm_experimental_arch, link_llvm_intrinsics)
)]
#![cfg_attr(target_arch = "amdgpu", feature(stdarch_amdgpu, allow_internal_unstable, link_llvm_intrinsics))]
#![cfg_attr(any(target_arch = "nvptx64", target_arch = "amdgpu"), allow(internal_features))]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

#[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
extern crate std;

// The crate in three roles (each folder's `mod.rs` says what is in it and
// who calls whom): the device API that kernels call, compiled in both
// passes; the host runtime that host code calls (backends, memory,
// launches); the host block scheduler that runs a block's GPU threads on
// the host fallback. `report` is what the two sides agree on when a GPU
// thread fails; `__private` is the glue of the generated code.
mod device;
#[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
mod hostsim;
mod report;
#[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
mod runtime;

#[doc(hidden)]
pub mod __private;

pub use device::config::{for_len, IntoLaunchConfig, LaunchConfig, DEFAULT_BLOCK};
pub use device::device_copy::{DeviceCopy, MapElem};
pub use device::dim::Dim3;
pub use device::disjoint::{DisjointSlice, GridStride};
pub use device::disjoint_nd::{DisjointSlice2d, DisjointSlice3d, DisjointSliceNd, GridStrideNd};
pub use device::global::DeviceGlobal;
pub use device::math;
pub use device::thread::{
    block_dim, block_idx, global_dim, global_index, global_size, global_thread_idx, grid_dim, grid_stride, thread_idx,
    GridStrideRange,
};
#[cfg(not(target_arch = "amdgpu"))]
pub use device::{
    atomic, print,
    shared::{dynamic_shared, sync_threads, SharedArray, SharedElem, SharedSlice},
    warp,
};
pub use report::panic_record::{UNFORMATTED_PANIC_MESSAGE, UNRECORDED_PANIC_MESSAGE};

/// The cudarc that offload uses, so that interop code names the same types
/// (`offload::cudarc::driver::sys::CUstream`; docs/async.md, section 10).
#[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
pub use cudarc;
/// The payloads of [`Error`]'s boxed variants (`Error::KernelPanic(Box<error::KernelPanic>)`, …).
#[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
pub use runtime::error;
#[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
pub use runtime::queue::{
    cu_context, scope, BufferUse, Capture, Enqueue, Event, Graph, Queue, QueueSliceArg, QueueSliceArgMut, Scope, Wait,
};
#[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
pub use runtime::{
    backend, current_device, devices, set_device, BackendInfo, BackendKind, Device, DeviceBuffer, Error, Mapped,
    MappedMut, PinnedBuffer, Result, SliceArg, SliceArgMut,
};

/// The names most kernels and launchers need, importable on both sides:
/// `use offload::prelude::*;` compiles in the device pass too, where the
/// host-only items (`DeviceBuffer`, `Error`, …) do not exist.
pub mod prelude {
    pub use crate::{
        block_dim, block_idx, for_len, global_dim, global_index, global_size, global_thread_idx, grid_dim, grid_stride,
        host, kernel, thread_idx, DeviceCopy, Dim3, DisjointSlice, DisjointSlice2d, DisjointSlice3d, LaunchConfig,
    };
    // `x.sin()` and `std`'s other float methods in kernels. Hidden, so that
    // rustc's hint for a kernel without it names `offload::math` (rustc
    // prefers paths that are not `doc(hidden)`).
    #[doc(hidden)]
    pub use crate::math::methods::FloatMethods;
    /// Shared memory is not available in AMD GPU images yet.
    #[cfg(not(target_arch = "amdgpu"))]
    pub use crate::{dynamic_shared, shared_array, sync_threads};
    #[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
    pub use crate::{scope, DeviceBuffer, Event, PinnedBuffer, Queue, SliceArg, SliceArgMut};
}

/// Turns an ordinary `fn` into a GPU kernel.
///
/// ```ignore
/// #[offload::kernel]
/// fn scale(k: f32, v: &mut [f32]) {
///     for (_, x) in v.grid_stride() { *x *= k; }
/// }
/// // host:
/// scale(offload::for_len(v.len()), 2.0, &mut v)?;
/// ```
///
/// On the device the function becomes exactly one exported kernel entry
/// point; its symbol is `__offload_kernel_<crate>_<fn>_<hash>`, derived from
/// the crate, the source position and the name, so two kernels never collide
/// and the host finds the kernel without `#[no_mangle]`.
///
/// On the host the function becomes a *launcher* with the same name, the
/// same parameters preceded by a launch configuration
/// (`impl `[`IntoLaunchConfig`]: a [`LaunchConfig`]), returning `offload::Result<()>`. It
/// maps the arguments by type (see the [crate docs](crate#mapping-arguments)),
/// launches the kernel on the GPU (or runs the body on the host CPU, once per
/// simulated GPU thread) and waits for it to finish.
///
/// `#[offload::kernel(same_len(a, b, …))]` declares slice parameters of
/// equal length: the launcher checks the lengths before anything is mapped
/// (a difference is [`Error::InvalidLaunch`], naming the slices and their
/// lengths) and the kernel may then assume them, so `b[i]` for an index `i`
/// of `a` needs no bounds check on the GPU. In a bandwidth-bound kernel with
/// one element per thread that check (or `&b[..a.len()]`) is a branch
/// before the first load: BabelStream's copy on an H200 went from 0.956× to
/// 0.972× of CUDA's bandwidth without it.
///
/// ```ignore
/// #[offload::kernel(same_len(x, y))]
/// fn axpy(a: f32, x: &[f32], y: &mut [f32]) {
///     for (i, yi) in y.grid_stride() { *yi += a * x[i]; }
/// }
/// ```
///
/// `#[offload::kernel(shape(out = (w, h)))]` declares that the `&mut [T]`
/// parameter `out` holds a row-major `w × h` array (`(nx, ny, nz)`: 3-D),
/// its extents by-value unsigned integer parameters or literals: the body
/// gets a [`DisjointSliceNd`] (`DisjointSlice2d`, `DisjointSlice3d`) whose
/// element `(x, y)` belongs to the thread at `global_thread_idx() = (x, y)`,
/// so a grid rounded up past the array's edges needs no `unsafe`; the
/// launcher checks that the extents multiply to the slice's length
/// ([`Error::InvalidLaunch`] otherwise). `same_len` and `shape` combine:
/// `#[kernel(same_len(a, out), shape(out = (w, h)))]`.
///
/// ```ignore
/// #[offload::kernel(shape(out = (w, h)))]
/// fn fill(w: u32, h: u32, out: &mut [f32]) {
///     if let Some(([x, y], px)) = out.at_thread() { *px = (x + y) as f32; }
/// }
/// // host: 16×16 blocks, rounded up
/// fill(LaunchConfig::new((w.div_ceil(16), h.div_ceil(16)), (16u32, 16u32)), w, h, &mut img)?;
/// ```
///
/// A kernel cannot call or launch another kernel: inside a kernel, another
/// kernel's name is its host launcher (and, in the device pass, a function no
/// call type-checks), and the error says so.
///
/// Rules, each checked at compile time with an error on the offending token:
/// parameters are plain names; the return type is `()`; no `async`,
/// `const`, `unsafe`, `extern`, `self` or const generic parameters; every value or
/// element type implements [`DeviceCopy`]; a value parameter's type is
/// aligned to at most 16 bytes (a constant assertion, evaluated before code
/// generation, names the parameter otherwise).
pub use offload_macros::kernel;

/// Keeps an item out of the device pass: `#[offload::host] fn main() {…}`.
///
/// Expands to `#[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]`,
/// so it needs no `check-cfg` entry. Use it on `fn main`, on `use std::…`
/// imports and on anything else that needs `std`; `#[cfg(not(offload_device))]`
/// does the same under `cargo offload`.
pub use offload_macros::host;

/// Declares a variable of the device: `#[offload::device_global] static
/// HITS: AtomicU32 = AtomicU32::new(0);` makes `HITS` a
/// [`DeviceGlobal<AtomicU32>`](DeviceGlobal) (CUDA's `__device__`
/// variables). Kernels use it with [`DeviceGlobal::with`], host code with
/// [`DeviceGlobal::read`] / [`DeviceGlobal::write`]; see [`DeviceGlobal`].
/// `T` is plain data or an [`atomic`] type; `static mut` is rejected.
pub use offload_macros::device_global;

/// Formats a function's panic messages on the GPU as a kernel body's are:
/// `#[offload::record_panics] fn check(i: usize, n: usize) { assert!(i < n,
/// "i = {i} n = {n}") }`, for a function that kernels call.
///
/// In optimized NVPTX builds (no debug assertions) the GPU does not run
/// `core::fmt` (see [`UNFORMATTED_PANIC_MESSAGE`]); a kernel body's
/// `panic!`, `assert!`, `assert_eq!`, `assert_ne!`, `unreachable!`,
/// `todo!` and `unimplemented!` with format arguments record their values
/// instead, and the host formats the message. This attribute does the same
/// in the function it marks (closures inside it included; nested items
/// not): up to eight arguments that are integers, `f32`, `f64`, `bool`,
/// `char` or `&str` (or references to them) are formatted, any other
/// (a type with its own `Display` or `Debug`) prints `{?}`, followed by a
/// note that says so; a width or precision taken from an argument gives
/// [`UNRECORDED_PANIC_MESSAGE`]. The location is the macro's, as in a
/// kernel. Nothing changes on the host fallback or in builds with debug
/// assertions, where the macros run as written. It goes on a `fn` (free or
/// a method), not a `const fn`.
///
/// ```ignore
/// #[offload::record_panics]
/// fn at(v: &[f32], i: usize) -> f32 {
///     assert!(i < v.len(), "index {} of {}", i, v.len());
///     v[i]
/// }
/// ```
pub use offload_macros::record_panics;

/// Derives [`DeviceCopy`] for a `#[repr(C)]` struct whose fields are all
/// `DeviceCopy`; the struct must also be `Copy`.
pub use offload_macros::DeviceCopy;
