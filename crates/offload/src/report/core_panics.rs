//! Where `core`'s panics that carry values go on the GPU: the device link
//! (offload-linker's `panics`, `redirect_core_panics`) replaces every call
//! to one of these `core` functions by a call to offload's function of the
//! same parameters, which records the values for the host instead of
//! formatting them:
//!
//! | `core` (1.96, 1.101)                                  | here                                  | record            |
//! | ----------------------------------------------------- | ------------------------------------- | ----------------- |
//! | `panicking::panic_bounds_check(index, len)`           | [`__offload_panic_bounds_check`]      | `BOUNDS`          |
//! | `slice::index::slice_index_fail(start, end, len)`     | [`__offload_panic_slice_index_fail`]  | `SLICE_INDEX`     |
//! | `slice::copy_from_slice_impl::len_mismatch_fail(d, s)` | [`__offload_panic_len_mismatch_fail`] | `LEN_MISMATCH`    |
//! | `option::expect_failed(msg)`                          | [`__offload_panic_expect_failed`]     | the text of `msg` |
//!
//! The host writes the message from the values (`panic_record::core_message`)
//! in `core`'s words, so a GPU panic reads as the host fallback's, in every
//! profile. `core` formats these messages with `core::fmt`, whose calls
//! through function pointers would make ptxas budget 255 registers for every
//! kernel that can reach them (see offload-linker's `panics`); these
//! functions take scalars only (in parameters, no stack), are cold and out
//! of line, and call no function through a pointer, so a kernel's hot path
//! pays one call's parameters at each panic site, as it did for `core`'s
//! function.
//!
//! The parameters are those of `core`'s functions as LLVM sees them
//! (`#[track_caller]` adds the `&Location` last), which the device link
//! checks before it redirects a call; a `core` whose functions differ keeps
//! its own (its messages then follow the panic handler's rules).

use core::panic::Location;

use crate::report::gpu::{begin, exit_thread, publish};
use crate::report::panic_record::{BOUNDS, LEN_MISMATCH, MESSAGE_BYTES, SLICE_INDEX};

/// `core::panicking::panic_bounds_check(index, len)`: `a[index]` with
/// `a.len() == len` (see the module docs).
#[unsafe(no_mangle)]
#[cold]
#[inline(never)]
pub extern "C" fn __offload_panic_bounds_check(index: usize, len: usize, location: &'static Location<'static>) -> ! {
    record_values(location, BOUNDS, index as u64, len as u64, 0)
}

/// `core::slice::index::slice_index_fail(start, end, len)`: `&a[start..end]`
/// (or another range) out of `a.len() == len`; `end` is inclusive for
/// `..=` ranges, as in `core` (see the module docs).
#[unsafe(no_mangle)]
#[cold]
#[inline(never)]
pub extern "C" fn __offload_panic_slice_index_fail(
    start: usize,
    end: usize,
    len: usize,
    location: &'static Location<'static>,
) -> ! {
    record_values(location, SLICE_INDEX, start as u64, end as u64, len as u64)
}

/// `copy_from_slice`'s `len_mismatch_fail(dst_len, src_len)` (see the module
/// docs).
#[unsafe(no_mangle)]
#[cold]
#[inline(never)]
pub extern "C" fn __offload_panic_len_mismatch_fail(
    dst_len: usize,
    src_len: usize,
    location: &'static Location<'static>,
) -> ! {
    record_values(location, LEN_MISMATCH, dst_len as u64, src_len as u64, 0)
}

/// `core::option::expect_failed(msg)`: `None.expect(msg)`, whose message is
/// `msg` itself (`core` formats it with `{}`). `msg` need not be a constant
/// of the image, so its bytes are copied into the record (at most
/// `MESSAGE_BYTES`; the host marks a cut message with `...`).
///
/// # Safety
/// `msg` points to `len` readable bytes of UTF-8 (a `&str`: the device
/// link passes `core`'s argument).
#[unsafe(no_mangle)]
#[cold]
#[inline(never)]
pub unsafe extern "C" fn __offload_panic_expect_failed(
    msg: *const u8,
    len: usize,
    location: &'static Location<'static>,
) -> ! {
    if let Some(rec) = begin(Some(location)) {
        let n = len.min(MESSAGE_BYTES);
        // SAFETY: `rec` is the live record this thread claimed (`begin`): it
        // alone writes it until it publishes it; `msg` has `len >= n`
        // readable bytes (the caller's contract), the record's message
        // buffer `MESSAGE_BYTES >= n`, and they do not overlap (the record
        // is mapped host memory written by no one else now).
        unsafe {
            core::ptr::copy_nonoverlapping(msg, core::ptr::addr_of_mut!((*rec).message) as *mut u8, n);
            (*rec).message_len = n as u32;
            (*rec).truncated = (n < len) as u32;
            publish(rec);
        }
    }
    exit_thread()
}

/// Records a panic of `kind` with `values` `[a, b, c]` at `location`
/// (`panic_record::core_message` says what they are) and ends the thread.
#[inline(never)]
fn record_values(location: &Location<'_>, kind: u32, a: u64, b: u64, c: u64) -> ! {
    if let Some(rec) = begin(Some(location)) {
        // SAFETY: as in `__offload_panic_expect_failed`: this thread's
        // claimed record.
        unsafe {
            (*rec).kind = kind;
            (*rec).values[0] = a;
            (*rec).values[1] = b;
            (*rec).values[2] = c;
            publish(rec);
        }
    }
    exit_thread()
}
