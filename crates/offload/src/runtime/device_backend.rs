//! A device's backend, started at its first use (for a GPU its primary
//! context, stream and module, the image chosen for *its* architecture),
//! peer access between two devices, and the check that work on one device
//! gets only memory it may use (docs/devices.md).
//!
//! The layer above the backends (`cuda`, `host`): the device handles and
//! what is known of a device before it starts are `device`'s, below the
//! errors, so that an error can name a device. Each device's state here is
//! found by its position in the device list ([`Device::index`]).

use std::boxed::Box;
use std::format;
use std::string::String;
use std::sync::{Mutex, OnceLock};
use std::vec::Vec;

use super::backend::Backend;
use super::cuda::Cuda;
use super::device::{Device, DeviceId, Entry};
use super::error::{Error, Result};
use super::host::Host;
use super::info::BackendInfo;
use super::kernel::KernelInfo;
use super::spec::{ArgKind, ArgSpec};

/// A device's state once the runtime uses it.
struct Started {
    /// Its backend, or why it cannot start, from its first use on.
    backend: OnceLock<Result<Concrete>>,
    /// Per device (by index): `Some((mine, theirs))` once kernels of this
    /// device may use that device's memory, with both backends'
    /// generations then (a context rebuilt after a fault has lost it).
    peers: Mutex<Vec<Option<(u64, u64)>>>,
}

/// The state of every device of the process, by [`Device::index`]: made at
/// the first use of any, one per device of the list (every `Device` the
/// runtime starts comes from that one list, `select::devices`, whose length
/// each entry keeps as `count`).
static STARTED: OnceLock<Box<[Started]>> = OnceLock::new();

fn started(device: Device) -> &'static Started {
    let count = device.0.count;
    let all = STARTED.get_or_init(|| {
        (0..count).map(|_| Started { backend: OnceLock::new(), peers: Mutex::new(std::vec![None; count]) }).collect()
    });
    assert_eq!(all.len(), count, "{device} is not a device of this process's list");
    &all[device.0.index]
}

fn start(entry: &Entry) -> Result<Concrete> {
    match entry.id {
        DeviceId::Cuda(ordinal) => match Cuda::new(ordinal) {
            Ok(c) => Ok(Concrete::Cuda(Box::new(c))),
            Err(e) => Err(e.into_error()),
        },
        DeviceId::Host { .. } => Ok(Concrete::Host(Host::new())),
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

impl Device {
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
        match started(*self).backend.get_or_init(|| start(entry)) {
            Ok(b) => Ok(b),
            Err(e) => Err(e.clone()),
        }
    }

    /// The backend's generation: it changes when a GPU's context is
    /// rebuilt after a fault (memory and handles of an older generation
    /// are gone). 0 for a device that has not started.
    pub(crate) fn generation(&self) -> u64 {
        match started(*self).backend.get() {
            Some(Ok(b)) => b.backend().generation(),
            _ => 0,
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
        let mut peers = started(*self).peers.lock().unwrap_or_else(|e| e.into_inner());
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
        let enabled = started(*self).peers.lock().unwrap_or_else(|e| e.into_inner())[peer.0.index];
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
