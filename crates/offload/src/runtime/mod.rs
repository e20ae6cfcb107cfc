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
//! (`device`) and calls the device's backend's `launch_impl`; `buffer`, `pinned` and
//! device globals (`device::global`) call their device's memory operations
//! the same way. `select` lists the devices; `device` starts a device's
//! `cuda::Cuda` or `host::Host` at its first use; both implement
//! `backend::Backend`, read `images` and check `limits`.

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
