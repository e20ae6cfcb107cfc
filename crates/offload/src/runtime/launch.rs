//! The generic front of every launch: validate the geometry, trace, then
//! hand over to a backend's `launch_impl` (the shape of LLVM offload's
//! `GenericKernelTy::launch` → `launchImpl`).

use std::format;

use super::device_backend;
use super::error::{Error, Result};
use super::kernel::KernelInfo;
use super::select::{self, current_device};
use super::spec::{self, ArgSpec};
use crate::device::config::LaunchConfig;

/// Launches `kernel`: validates `cfg`, then runs it on this thread's device
/// ([`current_device`]), whose memory every `DeviceBuffer` argument must
/// be (or a peer's it may use: [`Error::WrongDevice`]).
/// `host` runs the simulated threads of one runner of the host scheduler
/// (`__private::host_threads`); only the host fallback calls it.
pub fn launch(
    kernel: &'static KernelInfo,
    cfg: LaunchConfig,
    args: &[ArgSpec<'_>],
    host: &(dyn Fn() + Sync),
) -> Result<()> {
    if let Err(reason) = cfg.validate() {
        return Err(Error::from(crate::error::InvalidLaunch { kernel: kernel.path(), reason }));
    }
    if cfg.threads() == 0 {
        return Ok(());
    }
    crate::runtime::queue::capture::refuse_blocking_in_capture(kernel)?;
    let device = current_device()?;
    let backend = device.backend()?;
    device_backend::check_args(kernel, device, args)?;
    // Buffers with pending queued work: the launch comes after it (and a
    // graph replay enqueued meanwhile after the launch: see `queue::graph`).
    let _replays = crate::runtime::queue::capture::hold();
    for (res, write) in spec::tracked(args) {
        res.tracker.wait_host(write);
    }
    let trace = select::runtime().trace;
    let start = trace.then(std::time::Instant::now);
    // A divergence a GPU thread recorded as a panic is reported as the
    // host fallback reports it.
    let result = backend.launch_impl(kernel, &cfg, args, host).map_err(super::cuda::recover::divergence_from_record);
    if let Some(start) = start {
        let status = match &result {
            Ok(()) => "ok",
            Err(_) => "failed",
        };
        std::eprintln!(
            "offload: {} {} on {} (grid {}, block {}): {:.3} ms",
            kernel.path(),
            status,
            device,
            cfg.grid,
            cfg.block,
            start.elapsed().as_secs_f64() * 1e3
        );
    }
    result
}

/// The check of `#[kernel(same_len(a, b, …))]`, made by the launcher before
/// anything is mapped: every named slice argument has the length of the
/// first, so the kernel may assume it.
///
/// # Errors
/// [`Error::InvalidLaunch`](Error::InvalidLaunch) naming the first
/// slice that differs.
pub fn check_same_len(kernel: &KernelInfo, names: &[&str], lens: &[usize]) -> Result<()> {
    for (name, &len) in names.iter().zip(lens).skip(1) {
        if len != lens[0] {
            return Err(Error::from(crate::error::InvalidLaunch {
                kernel: kernel.path(),
                reason: format!(
                    "the kernel declares `same_len({})`, but `{}` has {} elements and `{name}` has {len}",
                    names.join(", "),
                    names[0],
                    lens[0]
                ),
            }));
        }
    }
    Ok(())
}

/// The check of `#[kernel(shape(name = (e0, e1[, e2])))]`, made by the
/// launcher before anything is mapped: the extents, `(label, value)` each,
/// multiply to the slice's `len`, so that every element of the array is an
/// element of the slice and each thread's view reaches only those.
///
/// # Errors
/// [`Error::InvalidLaunch`](Error::InvalidLaunch) naming the slice, its
/// length and the extents.
pub fn check_shape(kernel: &KernelInfo, name: &str, len: usize, extents: &[(&str, usize)]) -> Result<()> {
    let product = extents.iter().try_fold(1usize, |p, &(_, e)| p.checked_mul(e));
    if product == Some(len) {
        return Ok(());
    }
    let labels: std::vec::Vec<&str> = extents.iter().map(|&(l, _)| l).collect();
    let values: std::vec::Vec<std::string::String> = extents.iter().map(|(l, e)| format!("{l} = {e}")).collect();
    let product = product.map_or_else(|| "more than usize::MAX".into(), |p| format!("{p}"));
    Err(Error::from(crate::error::InvalidLaunch {
        kernel: kernel.path(),
        reason: format!(
            "the kernel declares `shape({name} = ({}))`, but `{name}` has {len} elements and {} make {product}: \
             pass a slice of exactly the array's elements",
            labels.join(", "),
            values.join(", "),
        ),
    }))
}
