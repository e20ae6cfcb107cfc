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

use std::boxed::Box;
use std::format;
use std::string::String;
use std::sync::{Mutex, OnceLock};
use std::vec::Vec;

use super::backend::{Backend, BackendInfo, BackendKind};
use super::cuda::Cuda;
use super::error::{Error, Result};
use super::host::Host;
use super::spec::{ArgKind, ArgSpec, KernelInfo};

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

/// What is known of a device before it starts, and its backend once it has.
pub(crate) struct Entry {
    /// Position in [`devices`].
    pub(crate) index: usize,
    pub(crate) id: DeviceId,
    pub(crate) name: String,
    pub(crate) compute_capability: Option<(u32, u32)>,
    pub(crate) memory_bytes: u64,
    backend: OnceLock<Result<Concrete>>,
    /// Per device (by index): `Some((mine, theirs))` once kernels of this
    /// device may use that device's memory, with both backends'
    /// generations then (a context rebuilt after a fault has lost it).
    peers: Mutex<Vec<Option<(u64, u64)>>>,
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
        let peers = Mutex::new(std::vec![None; count]);
        let e = Entry { index, id, name, compute_capability, memory_bytes, backend: OnceLock::new(), peers };
        Device(Box::leak(Box::new(e)))
    }

    fn start(&self) -> Result<Concrete> {
        match self.id {
            DeviceId::Cuda(ordinal) => match Cuda::new(ordinal) {
                Ok(c) => Ok(Concrete::Cuda(Box::new(c))),
                Err(e) => Err(e.into_error()),
            },
            DeviceId::Host { .. } => Ok(Concrete::Host(Host::new())),
        }
    }
}

/// A started device's backend as its concrete type, for the queues
/// (`runtime::queue`), whose two implementations differ too much to share
/// one interface; everything else uses it as a [`Backend`]. (`Cuda` is
/// boxed: it is much larger than `Host`.)
pub(crate) enum Concrete {
    Host(Host),
    Cuda(Box<Cuda>),
}

impl Concrete {
    fn backend(&self) -> &dyn Backend {
        match self {
            Concrete::Host(h) => h,
            Concrete::Cuda(c) => &**c,
        }
    }
}

/// One device that runs kernels: a CUDA GPU or the host CPU (the host
/// fallback). Get them from [`devices`]; choose one for a thread with
/// [`set_device`], for a queue with [`Queue::on_device`](crate::Queue::on_device),
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
    /// Its position in [`devices`].
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

    /// Starts the device if it has not started yet (for a GPU: its primary
    /// context, a stream, the device image chosen for its compute
    /// capability) and describes its backend.
    ///
    /// # Errors
    /// Why the device cannot run kernels: [`Error::NoImage`] if the binary
    /// has no image for the GPU's architecture, [`Error::Driver`] if the
    /// driver fails. The error stays: every later use of the device
    /// returns it.
    pub fn info(&self) -> Result<BackendInfo> {
        self.backend().map(|b| b.info().clone())
    }

    /// The device's backend, started now if it has not been.
    pub(crate) fn backend(&self) -> Result<&'static dyn Backend> {
        self.concrete().map(Concrete::backend)
    }

    /// [`backend`](Self::backend) as its concrete type.
    pub(crate) fn concrete(&self) -> Result<&'static Concrete> {
        let entry: &'static Entry = self.0;
        match entry.backend.get_or_init(|| entry.start()) {
            Ok(b) => Ok(b),
            Err(e) => Err(e.clone()),
        }
    }

    /// The backend's generation: it changes when a GPU's context is
    /// rebuilt after a fault (memory and handles of an older generation
    /// are gone). 0 for a device that has not started.
    pub(crate) fn generation(&self) -> u64 {
        match self.0.backend.get() {
            Some(Ok(b)) => b.backend().generation(),
            _ => 0,
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
            (DeviceId::Cuda(a), DeviceId::Cuda(b)) => super::cuda::peer::can_access(a, b),
            (DeviceId::Host { .. }, DeviceId::Host { .. }) => true,
            _ => false,
        }
    }

    /// Lets kernels (and copies) of this device use `peer`'s memory
    /// directly: a launch on this device may then take `peer`'s
    /// `DeviceBuffer`s (reads and writes go over NVLink or PCIe). One
    /// direction only, as in CUDA (`cuCtxEnablePeerAccess` with this
    /// device's context current, CUDA Driver API, "Peer Context Memory
    /// Access"); call it on `peer` too for the other. Starts both devices.
    /// Enabling twice is not an error.
    ///
    /// # Errors
    /// [`Error::Memory`] if [`can_access_peer`](Self::can_access_peer) is
    /// false; the devices' start errors; [`Error::Driver`] if the driver
    /// refuses.
    pub fn enable_peer_access(&self, peer: Device) -> Result<()> {
        if *self == peer {
            return Ok(());
        }
        if !self.can_access_peer(peer) {
            return Err(Error::from(crate::error::Memory {
                op: "enable peer access",
                reason: format!(
                    "{self} cannot access the memory of {peer} (cuDeviceCanAccessPeer says no, or one of them is the \
                     host); copy between them with `Queue::memcpy_peer` instead"
                ),
            }));
        }
        let (mine, theirs) = (self.concrete()?, peer.concrete()?);
        if let (Concrete::Cuda(a), Concrete::Cuda(b)) = (mine, theirs) {
            a.enable_peer_access(b)?;
        }
        let mut peers = self.0.peers.lock().unwrap_or_else(|e| e.into_inner());
        peers[peer.0.index] = Some((mine.backend().generation(), theirs.backend().generation()));
        Ok(())
    }

    /// Whether [`enable_peer_access`](Self::enable_peer_access) has let
    /// this device use `peer`'s memory (and neither context has been
    /// rebuilt since); always true for the device itself.
    pub fn peer_access_enabled(&self, peer: Device) -> bool {
        if *self == peer {
            return true;
        }
        let enabled = self.0.peers.lock().unwrap_or_else(|e| e.into_inner())[peer.0.index];
        enabled == Some((self.generation(), peer.generation()))
    }

    /// A GPU's primary context (the one cudarc's `CudaContext::new(ordinal)`
    /// retains too), starting the device; `None` for the host or a device
    /// that cannot start.
    pub fn cu_context(&self) -> Option<cudarc::driver::sys::CUcontext> {
        match self.concrete().ok()? {
            Concrete::Cuda(c) => Some(c.context()),
            Concrete::Host(_) => None,
        }
    }
}

/// The check made before a launch on `device` runs or is enqueued: every
/// `DeviceBuffer` argument is memory of `device`, or of a device whose
/// memory `device` may use ([`Device::enable_peer_access`]).
///
/// # Errors
/// [`Error::WrongDevice`] naming the kernel, the argument and both devices.
pub(crate) fn check_args(kernel: &KernelInfo, device: Device, args: &[ArgSpec<'_>]) -> Result<()> {
    for (i, a) in args.iter().enumerate() {
        let ArgKind::Resident { res, .. } = a.kind else { continue };
        if res.is_null() {
            continue;
        }
        // SAFETY: `res` points into a buffer the launcher borrows for as
        // long as `args` lives (see `ArgKind::Resident`).
        let owner = unsafe { &*res }.device;
        if owner != device && !device.peer_access_enabled(owner) {
            let argument = kernel.params.get(i).copied().unwrap_or("?");
            return Err(wrong_device(format!("kernel `{}`", kernel.path()), argument, device, owner));
        }
    }
    Ok(())
}

/// The check of a queued copy on a queue of `device`: `buffer` (the
/// argument named `argument` of `op`) is memory `device` may use.
pub(crate) fn check_buffer(op: &str, argument: &'static str, device: Device, buffer: Device) -> Result<()> {
    if buffer == device || device.peer_access_enabled(buffer) {
        return Ok(());
    }
    Err(wrong_device(format!("`{op}`"), argument, device, buffer))
}

fn wrong_device(op: String, argument: &'static str, device: Device, buffer_device: Device) -> Error {
    Error::from(crate::error::WrongDevice { op, argument, device, buffer_device })
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
