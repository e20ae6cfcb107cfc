//! The backend interface: what the generic front of a launch (`launch`),
//! the memory types (`buffer`, `pinned`) and device globals need from a
//! backend, implemented by the CUDA backend (`cuda`) and the host fallback
//! (`host`), and what describes a backend to the user ([`BackendInfo`]).

use std::string::String;

use super::error::{Error, Result};
use super::spec::{ArgSpec, KernelInfo};
use crate::device::config::LaunchConfig;

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

/// The backend interface: the generic front in `launch.rs` validates and
/// traces; a backend maps arguments and runs the kernel.
pub(crate) trait Backend: Send + Sync {
    fn info(&self) -> &BackendInfo;
    /// Changes when a GPU's context is rebuilt after a sticky fault: memory
    /// and handles of an older generation are gone (never freed again).
    fn generation(&self) -> u64 {
        0
    }
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

/// Why the CUDA backend could not start.
#[derive(Debug)]
pub(crate) enum Unusable {
    NoDriver,
    NoGpu,
    Failed(Error),
}

impl Unusable {
    /// The error of a device that was asked for and cannot start.
    pub(crate) fn into_error(self) -> Error {
        match self {
            Unusable::Failed(e) => e,
            other => Error::NoDevice { reason: other.reason().into() },
        }
    }

    pub(crate) fn reason(&self) -> String {
        match self {
            Unusable::NoDriver => "no CUDA driver (libcuda.so was not found)".into(),
            Unusable::NoGpu => "the CUDA driver reports no GPU".into(),
            Unusable::Failed(e) => std::format!("{e}"),
        }
    }
}
