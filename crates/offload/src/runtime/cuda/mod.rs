//! The CUDA backend, on the driver API through `cudarc`'s `sys`/`result`
//! layers. The driver library is loaded at run time (`dlopen`), so building
//! needs no CUDA installation and a machine without one falls back to the
//! host.
//!
//! One [`Cuda`] per GPU the process uses (`runtime::device` starts it at
//! the GPU's first use): its primary context, one non-blocking stream and
//! one module loaded from the embedded image chosen for *its* compute
//! capability (`probe::choose_image`), so GPUs of different architectures
//! run side by side. Each GPU's blocking launches are serialized by its
//! own mutex; GPUs do not wait for each other. Every driver call makes its
//! GPU's context current on the calling thread first (`Cuda::enter`,
//! `Cuda::set_current`): contexts are per thread in CUDA, and a thread that
//! drives several GPUs (or a queue's work after another GPU's) must never
//! run a call in the context it happened to have last.
//!
//! | module | what |
//! | --- | --- |
//! | `probe` | the GPUs before any starts (names, compute capabilities, memory), the image each one loads |
//! | `context` | start-up (context, module), the per-kernel function table, rebuilding after a failed kernel |
//! | `launch` | the [`Backend`](super::backend::Backend) operations: memory, copies, device globals, the launch path |
//! | `memory` | device memory of mapped arguments, cached between launches |
//! | `pool` | where device memory comes from: the default memory pool, allocated and freed in stream order |
//! | `staging` | pinned staging of large copies from and to pageable memory |
//! | `setting` | the on/off words of the backend's environment settings |
//! | `recover` | what happens around a kernel that fails: panic records, stack floor, atomic copy-back |
//! | `panics` | the panic record and its attribution behind their own lock, the blocking launch in flight |
//! | `peer_support` | whether one GPU can reach another's memory (before either starts) |
//! | `peer` | peer access between GPUs and copies between their memory |
//! | `error` | driver errors as [`Error::Driver`](crate::Error::Driver) |
//!
//! Who calls whom: `runtime::select` lists the GPUs with `probe`;
//! `runtime::device` creates a [`Cuda`] per GPU; `launch` locks its
//! `context::State` and uses `memory`, `pool`, `staging`, `recover` and
//! `panics`; `context` uses `probe`, `recover` (after a failed kernel),
//! `panics`, `staging` and `pool`; `memory` and `queue` use `pool`;
//! `panics` uses `recover` and `queue::attrib`; `peer` uses `context` and
//! `pool`; everything uses `error`. The generic launch
//! front (`runtime::launch`) decodes a divergence recorded as a panic with
//! `recover::divergence_from_record`.

mod context;
mod error;
mod launch;
mod memory;
mod panics;
pub(crate) mod peer;
pub(crate) mod peer_support;
mod pool;
pub(crate) mod probe;
pub(crate) mod queue;
pub(crate) mod recover;
mod setting;
mod staging;

pub(crate) use context::Cuda;

