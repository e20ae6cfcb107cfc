//! The host runtime: what host code calls to run kernels and move data.
//! Host pass only.
//!
//! | module | what |
//! | --- | --- |
//! | `launch` | the generic front of every launch (validate, trace, hand over to the backend) |
//! | `kernel`, `spec` | what a generated launcher describes: the kernel; how each argument travels |
//! | `args` | what a launcher accepts for slice parameters ([`SliceArg`], [`SliceArgMut`]) |
//! | `buffer`, `pinned` | device-resident and page-locked memory |
//! | `error` | [`Error`], everything a launch can report |
//! | `device` | [`Device`]s: the GPUs and the host, what is known of them before they start |
//! | `device_backend` | each device's backend, started at its first use; peer access; the check that work gets only its device's memory |
//! | `select` | the device list, each thread's device and the default device (`OFFLOAD_DEVICE`, `OFFLOAD_HOST_DEVICES`) |
//! | `backend` | the backend interface |
//! | `info` | [`BackendKind`] and [`BackendInfo`] |
//! | `cuda` | the CUDA backend |
//! | `host` | the host fallback's backend (blocks on worker threads; the threads of a block in `hostsim`) |
//! | `images`, `limits` | the embedded device images; per-block limits both backends check |
//! | `queue` | asynchronous execution: queues, events, queued launches, pending-work tracking, scopes, graphs, futures (docs/async.md) |
//! | `host_queue` | the host fallback's queues (a worker thread each); CUDA's are `cuda::queue` |
//!
//! Who calls whom: a generated launcher (through `__private`) maps its
//! arguments with `args` and `spec` and calls `launch::launch`, which takes
//! the thread's device from `select`, checks its arguments' devices
//! (`device_backend`) and calls the device's backend's `launch_impl`; `buffer`, `pinned` and
//! device globals (`device::global`) call their device's memory operations
//! the same way. `select` lists the devices; `device_backend` starts a device's
//! `cuda::Cuda` or `host::Host` at its first use; both implement
//! `backend::Backend`, read `images` and check `limits`.
//!
//! Layers, each importing only those below it (`scripts/module-cycles.py`
//! checks that no files import each other, as cudarc's `sys` → `result` →
//! safe API):
//!
//! 1. plain data: `info`, `kernel`, `images`, `limits`, `cuda::peer_support`;
//! 2. `device` (the handles), then `error`, which names devices;
//! 3. the backends' lower halves: the CUDA context, probe and recovery, a CUDA
//!    queue's stream and events (`cuda::queue`), `host_queue`, `queue::progress`;
//! 4. a queue's shared state (`queue::inner`), buffers' pending work
//!    (`queue::track`), what a launch describes (`spec`, which names tracked
//!    memory), the `backend` interface and its implementations (`cuda`'s
//!    launch paths, `host`);
//! 5. `device_backend` (each device's started backend), `select`;
//! 6. the memory types (`buffer`, `pinned`, `args`), `launch`, and the rest
//!    of `queue` (captures, queues, events, queued work, graphs, futures).

pub(crate) mod args;
mod backend;
mod buffer;
pub(crate) mod cuda;
pub(crate) mod device;
pub(crate) mod device_backend;
pub mod error;
pub(crate) mod host;
pub(crate) mod host_queue;
mod images;
mod info;
pub(crate) mod kernel;
pub(crate) mod launch;
mod limits;
mod pinned;
pub(crate) mod queue;
pub(crate) mod select;
pub(crate) mod spec;

pub use args::{SliceArg, SliceArgMut};
pub(crate) use backend::Backend;
pub use buffer::DeviceBuffer;
pub use device::Device;
pub use error::{Error, Result};
pub use info::{BackendInfo, BackendKind};
pub use pinned::{Mapped, MappedMut, PinnedBuffer};
pub use select::{backend, current_device, devices, set_device};
