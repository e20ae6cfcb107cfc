//! How a failing GPU thread reports to the host: what both passes agree on
//! (the layout of the panic record, the text of a warp collective reached by
//! part of a warp) and, on the GPU only, the code that writes it (the panic
//! handler, the recursion check the device linker inserts, the divergence
//! trap).
//!
//! Who calls whom: `gpu` (device pass) writes a [`PanicRecord`](panic_record::PanicRecord)
//! with texts from `divergence`; `core_panics` (device pass, NVPTX), which
//! the device link calls in place of `core`'s panics with numbers, writes
//! the record through `gpu`; so does `arg_panics` (device pass, NVPTX) for
//! panic messages with format arguments, which kernel bodies record as
//! values through `panic_args`; the CUDA backend (`runtime::cuda::recover`)
//! reads the record back, with `panic_record::core_message` for the text of
//! those numbers and `panic_format` for the messages with arguments, and
//! the host block scheduler (`hostsim`) writes the same `divergence` text
//! for the host fallback. Nothing here calls the host runtime or the
//! scheduler.

#[cfg(target_arch = "nvptx64")]
pub(crate) mod arg_panics;
#[cfg(target_arch = "nvptx64")]
pub(crate) mod core_panics;
pub(crate) mod divergence;
#[cfg(any(target_arch = "nvptx64", target_arch = "amdgpu"))]
pub(crate) mod gpu;
pub(crate) mod panic_args;
#[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
pub(crate) mod panic_format;
pub(crate) mod panic_record;
