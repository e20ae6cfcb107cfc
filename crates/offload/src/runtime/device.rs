//! Devices: the GPUs and the host CPU that this process can run kernels on
//! ([`Device`]; the list and which one a thread uses are `select`'s), peer
//! access between two of them, and the check that work on one device gets
//! only memory it may use (docs/devices.md).
//!
//! The list is made once, at the first use of the runtime (`select`),
//! without starting any device: the CUDA driver is asked for each GPU's
//! name, compute capability and memory (`cuDeviceGetName`,
//! `cuDeviceGetAttribute`, `cuDeviceTotalMem`), which needs no context. A
//! device's backend (for a GPU its primary context, stream and module, the
//! image chosen for *its* architecture) starts at its first use, so that a
//! process on a machine of eight GPUs that uses one of them (an MPI rank,
//! say) holds one context, not eight.
//!
//! A device is a `&'static` handle: the entries are made once per process
//! and never freed, so a [`Device`] is `Copy` and compares by identity.
//!
//! This file is the handle and what is known of a device before it starts:
//! plain data that the errors naming devices (`error`) use. A device's
//! backend, started at its first use, and peer access are
//! `device_backend`'s, a layer above the backends.

use std::boxed::Box;
use std::format;
use std::string::String;
use std::vec::Vec;

use super::cuda::peer_support;
use super::info::BackendKind;

/// Which device an entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DeviceId {
    /// A CUDA GPU, by its ordinal (`cuDeviceGet`, as `CUDA_VISIBLE_DEVICES`
    /// orders them).
    Cuda(u32),
    /// The host CPU: `host`, or with `OFFLOAD_HOST_DEVICES=N` one of `N`
    /// simulated devices `host:0` … `host:N-1` (`count` of them).
    Host { index: u32, count: u32 },
}

/// What is known of a device before it starts (its backend, once started,
/// is `device_backend`'s, found by `index`).
pub(crate) struct Entry {
    /// Position in [`devices`](crate::devices).
    pub(crate) index: usize,
    pub(crate) id: DeviceId,
    pub(crate) name: String,
    pub(crate) compute_capability: Option<(u32, u32)>,
    pub(crate) memory_bytes: u64,
    /// How many devices the process has (the length of [`devices`](crate::devices)).
    pub(crate) count: usize,
}

impl Entry {
    /// A device, not started. `count`: how many devices the process has.
    pub(crate) fn leak(
        index: usize,
        id: DeviceId,
        name: String,
        compute_capability: Option<(u32, u32)>,
        memory_bytes: u64,
        count: usize,
    ) -> Device {
        let e = Entry { index, id, name, compute_capability, memory_bytes, count };
        Device(Box::leak(Box::new(e)))
    }
}

/// One device that runs kernels: a CUDA GPU or the host CPU (the host
/// fallback). Get them from [`devices`](crate::devices); choose one for a thread with
/// [`set_device`](crate::set_device), for a queue with [`Queue::on_device`](crate::Queue::on_device),
/// for a buffer with [`DeviceBuffer::zeroed_on`](crate::DeviceBuffer::zeroed_on).
///
/// `Copy`, `Send + Sync`; two `Device`s are equal if they are the same
/// device. `Display` prints its name as `OFFLOAD_DEVICE` spells it
/// (`cuda:0`, `host`, `host:1`); [`description`](Self::description) says
/// more.
#[derive(Clone, Copy)]
pub struct Device(pub(crate) &'static Entry);

impl PartialEq for Device {
    fn eq(&self, other: &Self) -> bool {
        core::ptr::eq(self.0, other.0)
    }
}
impl Eq for Device {}

impl core::fmt::Display for Device {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.0.id {
            DeviceId::Cuda(n) => write!(f, "cuda:{n}"),
            DeviceId::Host { count: 1, .. } => f.write_str("host"),
            DeviceId::Host { index, .. } => write!(f, "host:{index}"),
        }
    }
}

impl core::fmt::Debug for Device {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Device({self})")
    }
}

impl Device {
    /// Its position in [`devices`](crate::devices).
    pub fn index(&self) -> usize {
        self.0.index
    }

    /// [`BackendKind::Cuda`] for a GPU, [`BackendKind::Host`] for the CPU.
    pub fn kind(&self) -> BackendKind {
        match self.0.id {
            DeviceId::Cuda(_) => BackendKind::Cuda,
            DeviceId::Host { .. } => BackendKind::Host,
        }
    }

    /// The CUDA device ordinal of a GPU (`cuDeviceGet`; the numbering of
    /// `CUDA_VISIBLE_DEVICES` and `nvidia-smi` where nothing reorders it);
    /// the index among the host devices for the CPU.
    pub fn ordinal(&self) -> u32 {
        match self.0.id {
            DeviceId::Cuda(n) => n,
            DeviceId::Host { index, .. } => index,
        }
    }

    /// The device's name: the GPU's (`cuDeviceGetName`, e.g. "NVIDIA
    /// H200"), or "host CPU".
    pub fn name(&self) -> &str {
        &self.0.name
    }

    /// A GPU's compute capability `(major, minor)` (`(9, 0)` is `sm_90`:
    /// CUDA C++ Programming Guide, "Compute Capabilities"); `None` for the
    /// host.
    pub fn compute_capability(&self) -> Option<(u32, u32)> {
        self.0.compute_capability
    }

    /// Bytes of memory: a GPU's global memory (`cuDeviceTotalMem`); the
    /// host's physical memory (`MemTotal` of `/proc/meminfo`, 0 where it
    /// cannot be read).
    pub fn memory_bytes(&self) -> u64 {
        self.0.memory_bytes
    }

    /// One line for people: `cuda:0: NVIDIA H200 (sm_90, 139.8 GiB)`, or
    /// `host: host CPU (125.6 GiB)`.
    pub fn description(&self) -> String {
        let gib = self.0.memory_bytes as f64 / (1u64 << 30) as f64;
        match self.0.compute_capability {
            Some((major, minor)) => format!("{self}: {} (sm_{major}{minor}, {gib:.1} GiB)", self.0.name),
            None => format!("{self}: {} ({gib:.1} GiB)", self.0.name),
        }
    }

    /// Whether kernels of this device can be allowed to use `peer`'s memory
    /// ([`enable_peer_access`](Self::enable_peer_access)): always for the
    /// device itself; between two GPUs what `cuDeviceCanAccessPeer` says
    /// (NVLink or PCIe peer-to-peer); between simulated host devices
    /// (`OFFLOAD_HOST_DEVICES`) always, since they share the host's memory;
    /// never between a GPU and the host.
    pub fn can_access_peer(&self, peer: Device) -> bool {
        match (self.0.id, peer.0.id) {
            _ if *self == peer => true,
            (DeviceId::Cuda(a), DeviceId::Cuda(b)) => peer_support::can_access(a, b),
            (DeviceId::Host { .. }, DeviceId::Host { .. }) => true,
            _ => false,
        }
    }
}

/// The devices as an error lists them: `cuda:0: NVIDIA H200 (sm_90,
/// 139.8 GiB); host: host CPU (125.6 GiB)`.
pub(crate) fn list(devices: &[Device]) -> String {
    let all: Vec<String> = devices.iter().map(Device::description).collect();
    all.join("; ")
}

/// The host's physical memory in bytes (`MemTotal` of `/proc/meminfo`), 0
/// where it cannot be read.
pub(crate) fn host_memory() -> u64 {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|kib| kib.trim().parse::<u64>().ok())
        .map_or(0, |kib| kib * 1024)
}
