//! The devices of this process ([`devices`]), listed once, at the first use
//! of the runtime; the device of each thread ([`set_device`],
//! [`current_device`]); and the default one, chosen once, at its first use
//! (a launch, allocation or queue of a thread that has not called
//! [`set_device`], or [`backend`]), from `OFFLOAD_DEVICE`:
//!
//! | `OFFLOAD_DEVICE` | default device |
//! | --- | --- |
//! | unset or empty | the first CUDA GPU if it can run this binary's kernels, else the host CPU with one warning line on stderr |
//! | `cuda` | the first CUDA GPU; if none is usable every use returns [`Error::NoDevice`] |
//! | `cuda:N` | GPU `N` (the driver's ordinal); [`Error::NoSuchDevice`], listing the devices, if there is no GPU `N` |
//! | `host` | the host CPU, silently (`host:N` names one of `OFFLOAD_HOST_DEVICES`) |
//! | anything else | every use returns [`Error::InvalidDeviceSetting`] |
//!
//! The default is what a thread uses until it calls [`set_device`]. "Usable" means: the CUDA
//! driver library loads, `cuInit` succeeds, the device exists, and the
//! binary carries a device image that runs on it. Probing comes first and
//! never panics (as LLVM offload's CUDA plugin `initImpl`). The device list
//! is made whatever the setting, so that an error can list it.
//!
//! `OFFLOAD_HOST_DEVICES=N` (1 to 64, default 1) makes the host `N`
//! devices, `host:0` … `host:N-1`, each with its own worker threads and
//! buffers, for testing multi-device code without GPUs (as XLA's
//! `--xla_force_host_platform_device_count`). `OFFLOAD_LOG=1` (any value
//! but empty, `0`, `false`, `no`, `off`) prints one line per launch
//! (kernel, device, geometry, time) to stderr.

use core::cell::Cell;
use std::string::String;
use std::sync::OnceLock;
use std::vec::Vec;

use super::cuda::probe::{self, Gpu, Unusable};
use super::device::{self, Device, DeviceId, Entry};
use super::error::{Error, Result};
use super::info::BackendInfo;

/// The process's devices and its default one.
pub(crate) struct Runtime {
    /// The GPUs by ordinal, then the host device(s).
    pub(crate) devices: Vec<Device>,
    /// Why the driver listed no GPU, if it did not.
    no_gpu: Option<Unusable>,
    /// The default device, or why `OFFLOAD_DEVICE` gives none: chosen at
    /// its first use, so that a program that chooses its devices itself
    /// (an MPI rank taking its own GPU) neither starts the first GPU nor
    /// sees the fallback's warning.
    default: OnceLock<Result<Device>>,
    /// `OFFLOAD_LOG`: one line per launch.
    pub(crate) trace: bool,
}

impl Runtime {
    /// The default device (see the module docs), chosen now if this is
    /// its first use.
    pub(crate) fn default_device(&self) -> Result<Device> {
        let chosen = self.default.get_or_init(|| {
            let setting = std::env::var("OFFLOAD_DEVICE").unwrap_or_default();
            match parse_setting(&setting) {
                Some(s) => choose(s, setting.trim(), &self.devices, self.no_gpu.as_ref()),
                None => Err(Error::InvalidDeviceSetting(setting.trim().into())),
            }
        });
        chosen.clone()
    }
}

static RUNTIME: OnceLock<Runtime> = OnceLock::new();

/// The runtime, made now if this is its first use.
pub(crate) fn runtime() -> &'static Runtime {
    RUNTIME.get_or_init(start)
}

/// Every device of this process: the CUDA GPUs the driver reports, by
/// ordinal (`cuda:0`, `cuda:1`, …), then the host CPU (`host`; with
/// `OFFLOAD_HOST_DEVICES=N`, `N` simulated devices `host:0` …, for testing
/// multi-device code without GPUs). With no GPU (or no driver) the host is
/// the only device. Listing starts no device.
///
/// ```ignore
/// let gpus: Vec<offload::Device> =
///     offload::devices().iter().copied().filter(|d| d.kind() == offload::BackendKind::Cuda).collect();
/// ```
pub fn devices() -> &'static [Device] {
    &runtime().devices
}

std::thread_local! {
    /// The device [`set_device`] chose for this thread.
    static CURRENT: Cell<Option<Device>> = const { Cell::new(None) };
}

/// Makes `device` this thread's device: blocking launches, new
/// [`DeviceBuffer`](crate::DeviceBuffer)s, [`PinnedBuffer`](crate::PinnedBuffer)s
/// and [`Queue`](crate::Queue)s, [`DeviceGlobal`](crate::DeviceGlobal)
/// access and [`backend`](crate::backend) of this thread use it (CUDA's
/// `cudaSetDevice`, which is per thread too). Other threads keep theirs;
/// a thread that never calls it uses the process's default device
/// (`OFFLOAD_DEVICE`, see [`current_device`]). Starts the device.
///
/// # Errors
/// The device's start error ([`Device::info`]); the thread's device is
/// then unchanged.
pub fn set_device(device: Device) -> Result<()> {
    device.backend()?;
    CURRENT.with(|c| c.set(Some(device)));
    Ok(())
}

/// This thread's device: the one [`set_device`] chose, else the process's
/// default, which `OFFLOAD_DEVICE` selects (docs/devices.md): unset, the
/// first GPU if it can run this binary's kernels, else the host (with one
/// warning line); `cuda` / `cuda:N` a GPU; `host` / `host:N` the CPU.
///
/// # Errors
/// For the default: [`Error::NoSuchDevice`] (listing the devices) if
/// `OFFLOAD_DEVICE` names one this process does not have,
/// [`Error::InvalidDeviceSetting`] if it is malformed, [`Error::NoDevice`]
/// if `OFFLOAD_DEVICE=cuda` and no GPU can be used, or the chosen GPU's
/// start error.
pub fn current_device() -> Result<Device> {
    match CURRENT.with(Cell::get) {
        Some(d) => Ok(d),
        None => runtime().default_device(),
    }
}

/// What runs this thread's kernels: the backend of its
/// [`current_device`], started now if it has not been (see the module docs
/// for the rule).
///
/// # Errors
/// As [`current_device`]; the device's start error ([`Error::NoImage`],
/// [`Error::Driver`]).
pub fn backend() -> Result<BackendInfo> {
    current_device()?.info()
}

/// What `OFFLOAD_DEVICE` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Setting {
    /// Unset or empty: the first GPU if usable, else the host.
    Auto,
    /// `cuda` (`None`: the first GPU) or `cuda:N`.
    Cuda(Option<u32>),
    /// `host` (`None`: the first host device) or `host:N`.
    Host(Option<u32>),
}

/// Parses `OFFLOAD_DEVICE`: `cuda`, `cuda:N`, `host`, `host:N` (`N`
/// decimal digits only), or empty; surrounding blanks are ignored. `None`
/// for anything else.
pub(crate) fn parse_setting(value: &str) -> Option<Setting> {
    let value = value.trim();
    if value.is_empty() {
        return Some(Setting::Auto);
    }
    let (kind, number) = match value.split_once(':') {
        Some((kind, n)) => (kind, Some(n)),
        None => (value, None),
    };
    let number = match number {
        None => None,
        Some(n) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => Some(n.parse::<u32>().ok()?),
        Some(_) => return None,
    };
    match kind {
        "cuda" => Some(Setting::Cuda(number)),
        "host" => Some(Setting::Host(number)),
        _ => None,
    }
}

/// `OFFLOAD_HOST_DEVICES`: 1 to 64 simulated host devices; anything else
/// is one, with a warning.
fn host_devices() -> u32 {
    let Ok(v) = std::env::var("OFFLOAD_HOST_DEVICES") else { return 1 };
    match v.trim().parse::<u32>() {
        Ok(n @ 1..=64) => n,
        _ => {
            std::eprintln!(
                "offload: warning: OFFLOAD_HOST_DEVICES={v:?} is not a number of devices from 1 to 64; using 1"
            );
            1
        }
    }
}

fn start() -> Runtime {
    let trace = std::env::var("OFFLOAD_LOG")
        .is_ok_and(|v| !matches!(v.trim().to_ascii_lowercase().as_str(), "" | "0" | "false" | "no" | "off"));
    let gpus = probe::enumerate();
    let devices = make_devices(gpus.as_deref().unwrap_or(&[]), host_devices());
    Runtime { devices, no_gpu: gpus.err(), default: OnceLock::new(), trace }
}

/// The device list: `gpus`, then `hosts` host devices.
fn make_devices(gpus: &[Gpu], hosts: u32) -> Vec<Device> {
    let count = gpus.len() + hosts as usize;
    let mut devices = Vec::with_capacity(count);
    for g in gpus {
        let id = DeviceId::Cuda(g.ordinal);
        devices.push(Entry::leak(devices.len(), id, g.name.clone(), Some((g.major, g.minor)), g.memory, count));
    }
    let memory = device::host_memory();
    for index in 0..hosts {
        let id = DeviceId::Host { index, count: hosts };
        devices.push(Entry::leak(devices.len(), id, "host CPU".into(), None, memory, count));
    }
    devices
}

/// The default device for `setting` (spelled `text`) among `devices`;
/// `no_gpu` is why the driver reported none, if it did not.
pub(crate) fn choose(setting: Setting, text: &str, devices: &[Device], no_gpu: Option<&Unusable>) -> Result<Device> {
    let of = |kind| devices.iter().copied().filter(move |d| d.kind() == kind);
    let (mut gpus, mut hosts) = (of(super::BackendKind::Cuda), of(super::BackendKind::Host));
    let no_such = || Error::from(crate::error::NoSuchDevice { requested: text.into(), available: devices.to_vec() });
    let why_none = || no_gpu.map_or_else(|| String::from("the CUDA driver reports no GPU"), Unusable::reason);
    match setting {
        Setting::Auto => {
            let reason = match gpus.next() {
                Some(gpu) => match gpu.backend() {
                    Ok(_) => return Ok(gpu),
                    Err(e) => std::format!("{e}"),
                },
                None => why_none(),
            };
            std::eprintln!(
                "offload: warning: {reason}; running kernels on the host CPU (set OFFLOAD_DEVICE=host to choose this \
                 without the warning)"
            );
            hosts.next().ok_or_else(no_such)
        }
        Setting::Cuda(None) => match gpus.next() {
            Some(gpu) => gpu.backend().map(|_| gpu).map_err(|e| Error::NoDevice { reason: std::format!("{e}").into() }),
            None => Err(Error::NoDevice { reason: why_none().into() }),
        },
        Setting::Cuda(Some(n)) => {
            let gpu = gpus.find(|d| d.ordinal() == n).ok_or_else(no_such)?;
            gpu.backend().map(|_| gpu)
        }
        Setting::Host(n) => hosts.nth(n.unwrap_or(0) as usize).ok_or_else(no_such),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_parse_or_are_rejected() {
        let ok = [
            ("", Setting::Auto),
            ("  ", Setting::Auto),
            ("cuda", Setting::Cuda(None)),
            ("cuda:0", Setting::Cuda(Some(0))),
            (" cuda:12 ", Setting::Cuda(Some(12))),
            ("cuda:007", Setting::Cuda(Some(7))),
            ("host", Setting::Host(None)),
            ("host:3", Setting::Host(Some(3))),
        ];
        for (text, want) in ok {
            assert_eq!(parse_setting(text), Some(want), "{text:?}");
        }
        let bad = [
            "cuda:",
            "cuda:x",
            "cuda:-1",
            "cuda:+1",
            "cuda: 1",
            "cuda:1:2",
            "cuda:1.0",
            "cuda:99999999999",
            "CUDA",
            "gpu",
            "gpu:0",
            ":0",
            "host:",
            "host:a",
            "cuda0",
        ];
        for text in bad {
            assert_eq!(parse_setting(text), None, "{text:?}");
        }
    }

    /// Two GPUs that are never started, then `hosts` host devices.
    fn fake(hosts: u32) -> Vec<Device> {
        let gpus = [
            Gpu { ordinal: 0, name: "GPU A".into(), major: 8, minor: 0, memory: 40 << 30 },
            Gpu { ordinal: 1, name: "GPU B".into(), major: 9, minor: 0, memory: 80 << 30 },
        ];
        make_devices(&gpus, hosts)
    }

    #[test]
    fn the_list_has_the_gpus_then_the_hosts() {
        let d = fake(2);
        let names: Vec<String> = d.iter().map(|d| std::format!("{d}")).collect();
        assert_eq!(names, ["cuda:0", "cuda:1", "host:0", "host:1"]);
        assert_eq!(d[1].description(), "cuda:1: GPU B (sm_90, 80.0 GiB)");
        assert_eq!(d[1].compute_capability(), Some((9, 0)));
        assert_eq!((d[3].index(), d[3].ordinal(), d[3].kind()), (3, 1, super::super::BackendKind::Host));
        assert_eq!(std::format!("{}", fake(1)[2]), "host");
        assert!(d[2].can_access_peer(d[3]) && !d[0].can_access_peer(d[2]) && d[0].can_access_peer(d[0]));
    }

    #[test]
    fn a_missing_device_is_an_error_that_lists_the_devices() {
        let d = fake(1);
        for (setting, text) in [(Setting::Cuda(Some(2)), "cuda:2"), (Setting::Host(Some(1)), "host:1")] {
            let e = choose(setting, text, &d, None).unwrap_err();
            assert_eq!(e, Error::from(crate::error::NoSuchDevice { requested: text.into(), available: d.clone() }));
            let msg = std::format!("{e}");
            assert!(msg.starts_with(&std::format!("OFFLOAD_DEVICE={text} names no device of this process")), "{msg}");
            assert!(msg.contains("cuda:0: GPU A (sm_80, 40.0 GiB); cuda:1: GPU B (sm_90, 80.0 GiB); host: host CPU"));
        }
        assert_eq!(choose(Setting::Host(None), "host", &d, None), Ok(d[2]));
        assert_eq!(choose(Setting::Host(Some(0)), "host:0", &d, None), Ok(d[2]));
        let none = make_devices(&[], 1);
        let e = choose(Setting::Cuda(None), "cuda", &none, Some(&Unusable::NoDriver)).unwrap_err();
        assert!(std::format!("{e}").contains("no CUDA driver (libcuda.so was not found)"), "{e}");
        assert!(matches!(choose(Setting::Cuda(Some(0)), "cuda:0", &none, None), Err(Error::NoSuchDevice { .. })));
    }
}
