//! Backend selection: which backend runs this process's kernels.
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

use std::boxed::Box;
use std::sync::OnceLock;

use super::backend::{Backend, BackendInfo};
use super::error::{Error, Result};
use super::{cuda, host};

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
            Err(e) => return Err(Error::NoDevice { reason: e.reason().into() }),
        },
        "" => match cuda::Cuda::new() {
            Ok(c) => Box::new(c),
            Err(e) => {
                std::eprintln!(
                    "offload: warning: {}; running kernels on the host CPU (set OFFLOAD_DEVICE=host to choose this without the warning)",
                    e.reason()
                );
                Box::new(host::Host::new())
            }
        },
        other => return Err(Error::InvalidDeviceSetting(other.into())),
    };
    Ok(Runtime { backend, trace })
}
