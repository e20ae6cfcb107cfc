//! How a failing GPU thread reports to the host: what both passes agree on
//! (the layout of the panic record, the text of a warp collective reached by
//! part of a warp) and, on the GPU only, the code that writes it (the panic
//! handler, the recursion check the device linker inserts, the divergence
//! trap).
//!
//! Who calls whom: `gpu` (device pass) writes a [`PanicRecord`](panic_record::PanicRecord)
//! with texts from `divergence`; the CUDA backend (`runtime::cuda::recover`)
//! reads the record back, and the host block scheduler (`hostsim`) writes
//! the same `divergence` text for the host fallback. Nothing here calls the
//! host runtime or the scheduler.

pub(crate) mod divergence;
#[cfg(any(target_arch = "nvptx64", target_arch = "amdgpu"))]
pub(crate) mod gpu;
pub(crate) mod panic_record;
