//! Backend selection and the backend interface.
//!
//! The runtime is chosen once, at the first launch (or the first call of
//! [`backend`]), from `OFFLOAD_DEVICE`:
//!
//! | `OFFLOAD_DEVICE` | backend |
//! | --- | --- |
//! | unset or empty | the CUDA GPU if one is usable, else the host CPU with one warning line on stderr |
//! | `cuda` | the CUDA GPU; if none is usable every launch returns [`Error::NoDevice`] |
//! | `host` | the host CPU, silently |
//! | anything else | every launch returns [`Error::InvalidDeviceSetting`] |
//!
//! "Usable" means: the CUDA driver library loads, `cuInit` succeeds, a device
//! exists, and the binary carries a device image that can run on it. Probing
//! comes first and never panics (as LLVM offload's CUDA plugin `initImpl`).
//! `OFFLOAD_LOG=1` (any value but empty, `0`, `false`, `no`, `off`) prints one line per launch (kernel, backend, geometry,
//! time) to stderr.

mod cuda;
pub(crate) mod cuda_queue;
mod cuda_recover;
mod cuda_staging;
mod host;
pub(crate) mod host_queue;
mod images;
mod limits;

pub(crate) use host::{in_host_kernel, LAUNCHES};

use std::boxed::Box;
use std::string::String;
use std::sync::OnceLock;

use crate::error::{Error, Result};
use crate::launch::{ArgSpec, KernelInfo};
use crate::LaunchConfig;

/// Which kind of backend runs kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendKind {
    /// An NVIDIA GPU through the CUDA driver API.
    Cuda,
    /// The host CPU (the host fallback).
    Host,
}

impl core::fmt::Display for BackendKind {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            BackendKind::Cuda => "cuda",
            BackendKind::Host => "host",
        })
    }
}

/// What runs this process's kernels; see [`backend`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendInfo {
    /// The backend kind.
    pub kind: BackendKind,
    /// A one-line description: the GPU's name, compute capability, memory,
    /// driver version and the image loaded; or the host's worker threads.
    pub description: String,
    /// Units that run blocks concurrently: the GPU's streaming
    /// multiprocessors (`CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT`), or the
    /// host fallback's worker threads. Sizes grids as CUDA code sizes them
    /// from `cudaDeviceProp::multiProcessorCount`.
    pub multiprocessors: u32,
    /// Bytes of shared memory one block may use, static and dynamic
    /// together: the GPU's opt-in limit
    /// (`CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`, CUDA's
    /// `cudaDeviceProp::sharedMemPerBlockOptin`, e.g. 232448 = 227 KiB on an
    /// H200), or on the host fallback the same limit of the architecture the
    /// binary's images were built for. A launch may ask for this much
    /// dynamic shared memory minus the kernel's static shared memory; more
    /// is [`Error::InvalidLaunch`] before anything runs. (The CUDA backend
    /// makes the per-kernel opt-in above 48 KiB itself.)
    pub shared_memory_per_block: u32,
}

impl core::fmt::Display for BackendInfo {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}: {}", self.kind, self.description)
    }
}

/// Incremented when the CUDA context is rebuilt after a sticky fault:
/// handles of queues (streams, events) and buffers from an older
/// generation are dead and never used again (see `cuda_queue`).
pub(crate) static GENERATION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A backend as its concrete type, for the queues (`queue`), whose two
/// implementations differ too much to share one interface.
pub(crate) enum Concrete<'a> {
    Host(&'a host::Host),
    Cuda(&'a cuda::Cuda),
}

/// The backend interface: the generic front in `launch.rs` validates and
/// traces; a backend maps arguments and runs the kernel.
pub(crate) trait Backend: Send + Sync {
    fn info(&self) -> &BackendInfo;
    /// This backend as its concrete type.
    fn concrete(&self) -> Concrete<'_>;
    fn launch_impl(
        &self,
        kernel: &'static KernelInfo,
        cfg: &LaunchConfig,
        args: &[ArgSpec<'_>],
        host: &(dyn Fn() + Sync),
    ) -> Result<()>;

    /// `bytes` of zeroed memory of this backend; returns its address.
    fn alloc_zeroed(&self, bytes: usize) -> Result<u64>;

    /// Frees memory from [`alloc_zeroed`](Backend::alloc_zeroed).
    ///
    /// # Safety
    /// `addr` came from `alloc_zeroed(bytes)` of this backend, is freed once,
    /// and is not in use.
    unsafe fn free(&self, addr: u64, bytes: usize);

    /// `bytes` of zeroed page-locked ("pinned") host memory, which the GPU's
    /// copy engines reach directly: host ↔ device copies from and to it run
    /// at the interconnect's full speed, with no staging copy. The host
    /// fallback allocates ordinary memory.
    fn alloc_pinned(&self, bytes: usize) -> Result<*mut u8>;

    /// Frees memory from [`alloc_pinned`](Backend::alloc_pinned).
    ///
    /// # Safety
    /// `ptr` came from `alloc_pinned(bytes)` of this backend, is freed once,
    /// and is not in use.
    unsafe fn free_pinned(&self, ptr: *mut u8, bytes: usize);

    /// Copies `bytes` from host memory at `src` to this backend's memory.
    ///
    /// # Safety
    /// `dst` is this backend's memory with room for `bytes`; `src` is valid
    /// for reads of `bytes`.
    unsafe fn copy_to_device(&self, dst: u64, src: *const u8, bytes: usize) -> Result<()>;

    /// Copies `bytes` from this backend's memory to host memory at `dst`.
    ///
    /// # Safety
    /// `src` is this backend's memory holding `bytes`; `dst` is valid for
    /// writes of `bytes`.
    unsafe fn copy_from_device(&self, dst: *mut u8, src: u64, bytes: usize) -> Result<()>;

    /// The address, for [`copy_to_device`](Backend::copy_to_device) and
    /// [`copy_from_device`](Backend::copy_from_device), of the device
    /// image's global `symbol` of `bytes` bytes (CUDA `cuModuleGetGlobal`);
    /// `host` is the host fallback's storage for it.
    fn global(&self, symbol: &str, bytes: usize, host: *mut u8) -> Result<u64>;
}

pub(crate) struct Runtime {
    pub backend: Box<dyn Backend>,
    pub trace: bool,
}

static RUNTIME: OnceLock<core::result::Result<Runtime, Error>> = OnceLock::new();

pub(crate) fn get() -> Result<&'static Runtime> {
    RUNTIME.get_or_init(select).as_ref().map_err(Clone::clone)
}

/// Which backend runs kernels in this process, selecting it now if no
/// kernel has been launched yet (see the module docs for the rule).
///
/// # Errors
/// [`Error::NoDevice`] with `OFFLOAD_DEVICE=cuda` and no usable GPU;
/// [`Error::InvalidDeviceSetting`] for an unknown `OFFLOAD_DEVICE`.
pub fn backend() -> Result<BackendInfo> {
    get().map(|rt| rt.backend.info().clone())
}

fn select() -> core::result::Result<Runtime, Error> {
    let trace = std::env::var("OFFLOAD_LOG")
        .is_ok_and(|v| !matches!(v.trim().to_ascii_lowercase().as_str(), "" | "0" | "false" | "no" | "off"));
    let setting = std::env::var("OFFLOAD_DEVICE").unwrap_or_default();
    let backend: Box<dyn Backend> = match setting.trim() {
        "host" => Box::new(host::Host::new()),
        "cuda" => match cuda::Cuda::new() {
            Ok(c) => Box::new(c),
            Err(e) => return Err(Error::NoDevice { reason: e.to_string_reason() }),
        },
        "" => match cuda::Cuda::new() {
            Ok(c) => Box::new(c),
            Err(e) => {
                std::eprintln!(
                    "offload: warning: {}; running kernels on the host CPU (set OFFLOAD_DEVICE=host to choose this without the warning)",
                    e.to_string_reason()
                );
                Box::new(host::Host::new())
            }
        },
        other => return Err(Error::InvalidDeviceSetting(other.into())),
    };
    Ok(Runtime { backend, trace })
}

/// Why the CUDA backend could not start.
#[derive(Debug)]
pub(crate) enum Unusable {
    NoDriver,
    NoGpu,
    Failed(Error),
}

impl Unusable {
    fn to_string_reason(&self) -> String {
        match self {
            Unusable::NoDriver => "no CUDA driver (libcuda.so was not found)".into(),
            Unusable::NoGpu => "the CUDA driver reports no GPU".into(),
            Unusable::Failed(e) => std::format!("{e}"),
        }
    }
}
