//! The device API: what kernel bodies call, compiled in both passes (the
//! device pass for `nvptx64`/`amdgcn`, and the host pass, where the host
//! fallback runs the same bodies).
//!
//! | module | what |
//! | --- | --- |
//! | `thread`, `dim` | thread, block and grid indices and extents |
//! | `disjoint` | [`DisjointSlice`](crate::DisjointSlice), the per-thread view of a `&mut [T]` |
//! | `disjoint_nd` | [`DisjointSliceNd`](crate::DisjointSliceNd), the same for a 2-D or 3-D array, owned by coordinates |
//! | `owner` | the debug-build panic naming the thread that owns an element |
//! | `shared` | shared memory and `sync_threads` |
//! | `warp` | warp shuffles, votes and reductions |
//! | `atomic` | atomics on global and shared memory |
//! | `math` | `sin`, `exp`, … for `f32` and `f64` |
//! | `print` | `println!` from kernels |
//! | `global` | `#[device_global]` variables |
//! | `device_copy` | which types cross between host and device |
//! | `config` | [`LaunchConfig`](crate::LaunchConfig), plain data of both passes |
//!
//! Who calls whom: kernel code calls these functions. On the GPU they read
//! special registers and run PTX instructions; a collective in divergent
//! code is reported through `report::gpu`. On the host they call the host
//! block scheduler (`hostsim`: `sync_threads`, warp collectives, shared
//! memory, the stack check before anything that locks or allocates) and
//! the host runtime (`runtime`: device globals' reads and writes). Nothing
//! here is called by `hostsim` or `runtime` except the plain data (`Dim3`,
//! `LaunchConfig`, `DeviceCopy`) and the thread context of `thread`, which
//! the host fallback sets for each simulated GPU thread.

// AMD GPU code objects have no atomics, shared memory, printing or warp
// collectives yet.
#[cfg(not(target_arch = "amdgpu"))]
pub mod atomic;
pub(crate) mod config;
pub(crate) mod device_copy;
pub(crate) mod dim;
pub(crate) mod disjoint;
pub(crate) mod disjoint_nd;
pub(crate) mod global;
pub mod math;
#[cfg_attr(not(debug_assertions), allow(dead_code))]
mod owner;
#[cfg(not(target_arch = "amdgpu"))]
pub mod print;
#[cfg(not(target_arch = "amdgpu"))]
pub(crate) mod shared;
pub(crate) mod thread;
#[cfg(not(target_arch = "amdgpu"))]
pub mod warp;
