//! The recorder of panic messages with format arguments on the GPU (see
//! [`panic_args`](crate::report::panic_args)): the kernel macro's
//! [`panic_format`](crate::report::panic_args::panic_format) calls it in
//! optimized NVPTX builds.
//!
//! Like `core_panics`' recorders it takes scalars only (in parameters, no
//! stack), is cold and out of line, calls no function through a pointer and
//! ends the thread itself (`.noreturn` in PTX), so a kernel's hot path pays
//! nothing for it; the panic site sets up the call's parameters in its cold
//! block.

use core::panic::Location;

use crate::report::gpu::{begin, exit_thread, publish};
use crate::report::panic_record::FORMAT;

/// Records a panic whose message is `fmt` (a string constant of the image,
/// recorded by address) with argument values `a`…`f` and their `tags`
/// (see `panic_args`), at `location`, and ends the thread.
#[unsafe(no_mangle)]
#[cold]
#[inline(never)]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn __offload_panic_format(
    fmt: &'static &'static str,
    tags: u32,
    a: u64,
    b: u64,
    c: u64,
    d: u64,
    e: u64,
    f: u64,
    location: &'static Location<'static>,
) -> ! {
    if let Some(rec) = begin(Some(location)) {
        // SAFETY: `rec` is the live record this thread claimed (`begin`): it
        // alone writes it until it publishes it.
        unsafe {
            (*rec).kind = FORMAT;
            (*rec).message_addr = fmt.as_ptr() as u64;
            (*rec).message_len = fmt.len() as u32;
            (*rec).tags = tags;
            (*rec).values = [a, b, c, d, e, f];
            publish(rec);
        }
    }
    exit_thread()
}
