//! The CUDA backend, on the driver API through `cudarc`'s `sys`/`result`
//! layers. The driver library is loaded at run time (`dlopen`), so building
//! needs no CUDA installation and a machine without one falls back to the
//! host.
//!
//! One process uses device 0 (as `CUDA_VISIBLE_DEVICES` orders them), its
//! primary context, one non-blocking stream and one module loaded from the
//! embedded image chosen by `offload_image::select`. Launches are serialized
//! by a mutex.
//!
//! | module | what |
//! | --- | --- |
//! | `context` | start-up (probe, context, module), the per-kernel function table, rebuilding after a failed kernel |
//! | `launch` | the [`Backend`](super::backend::Backend) operations: memory, copies, device globals, the launch path |
//! | `memory` | device memory of mapped arguments, cached between launches |
//! | `staging` | pinned staging of large copies from and to pageable memory |
//! | `recover` | what happens around a kernel that fails: panic records, stack floor, atomic copy-back |
//! | `error` | driver errors as [`Error::Driver`](crate::Error::Driver) |
//!
//! Who calls whom: `runtime::select` creates a [`Cuda`]; `launch` locks its
//! `context::State` and uses `memory`, `staging` and `recover`; `context`
//! uses `recover` (after a failed kernel) and `staging`; everything uses
//! `error`.

mod context;
mod error;
mod launch;
mod memory;
mod recover;
mod staging;

pub(crate) use context::Cuda;
