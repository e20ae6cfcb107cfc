//! The recorders of panic messages with format arguments on the GPU (see
//! [`panic_args`](crate::report::panic_args)): the kernel macro's
//! [`panic_format`] calls the one
//! for its number of values in optimized NVPTX builds.
//!
//! Like `core_panics`' recorders they take scalars only (in parameters, no
//! stack), are cold and out of line, call no function through a pointer
//! and end the thread themselves (`.noreturn` in PTX), so a kernel's hot
//! path pays nothing for them. One recorder per number of values, and one
//! address for the format string and the location together
//! ([`PanicSite`]): the SASS calling convention passes parameters in
//! registers, which the recorder keeps live while it claims the record, so
//! every parameter a panic site does not need would raise the register
//! count of a kernel whose own hot path uses fewer (ptxas counts a
//! kernel's registers over the functions it calls).

use crate::report::gpu::{claim, exit_thread, publish, write_ids};
use crate::report::panic_args::{PanicSite, ARGS};
use crate::report::panic_record::FORMAT;

/// Records a panic at `site` whose `N` arguments are `values` with `tags`
/// (see `panic_args`) and ends the thread.
#[inline(always)]
fn record<const N: usize>(site: &'static PanicSite, tags: u32, values: [u64; N]) -> ! {
    // Claimed first, the values written next: the fewer values live across
    // the claim's loop, the fewer registers. The site goes by address (the
    // host reads format string and location from it): no constants to
    // write.
    if let Some(rec) = claim() {
        // SAFETY: `rec` is the live record this thread claimed (`claim`):
        // it alone writes it until it publishes it; `N <= ARGS` (the
        // callers below), the length of its `values`, whose others are 0
        // (the host zeroes the record).
        unsafe {
            let v = core::ptr::addr_of_mut!((*rec).values) as *mut u64;
            for (k, x) in values.into_iter().enumerate() {
                v.add(k).write(x);
            }
            (*rec).tags = tags;
            (*rec).kind = FORMAT;
            (*rec).message_addr = site as *const PanicSite as u64;
            write_ids(rec);
            publish(rec);
        }
    }
    exit_thread()
}

/// Panics with `site`'s message whose `N <= ARGS` arguments are `values`
/// with `tags` (argument `k`'s tag at bit `k * TAG_BITS`): records them for
/// the host, which formats the message, and ends the thread. Calls the
/// recorder of `N` values, so that a panic site passes only its own values.
#[inline(always)]
pub fn panic_format<const N: usize>(site: &'static PanicSite, tags: u32, values: [u64; N]) -> ! {
    const { assert!(N <= ARGS, "at most ARGS values") };
    let mut v = [0u64; ARGS];
    v[..N].copy_from_slice(&values);
    match N {
        0 => __offload_panic_format_0(site, tags),
        1 => __offload_panic_format_1(site, tags, v[0]),
        2 => __offload_panic_format_2(site, tags, v[0], v[1]),
        3 => __offload_panic_format_3(site, tags, v[0], v[1], v[2]),
        _ => __offload_panic_format_4(site, tags, v[0], v[1], v[2], v[3]),
    }
}

macro_rules! recorders {
    ($($name:ident($($v:ident),*);)*) => {$(
        /// Records a panic at `site` with these argument values and their
        /// `tags` (see `panic_args`), and ends the thread.
        #[unsafe(no_mangle)]
        #[cold]
        #[inline(never)]
        pub extern "C" fn $name(site: &'static PanicSite, tags: u32, $($v: u64),*) -> ! {
            record(site, tags, [$($v),*])
        }
    )*};
}

recorders! {
    __offload_panic_format_0();
    __offload_panic_format_1(a);
    __offload_panic_format_2(a, b);
    __offload_panic_format_3(a, b, c);
    __offload_panic_format_4(a, b, c, d);
}
