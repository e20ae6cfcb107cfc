//! What describes a backend to the user: its kind ([`BackendKind`], also
//! a [`Device`](crate::Device)'s) and [`BackendInfo`]. Plain data: the
//! device handles (`device`) and the errors below the backends use it.

use std::string::String;

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

/// What runs this process's kernels; see [`backend`](crate::backend).
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
    /// is [`Error::InvalidLaunch`](crate::Error::InvalidLaunch) before anything runs. (The CUDA backend
    /// makes the per-kernel opt-in above 48 KiB itself.)
    pub shared_memory_per_block: u32,
}

impl core::fmt::Display for BackendInfo {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}: {}", self.kind, self.description)
    }
}
