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
//!
//! A site with more than four values, or with a `str` argument, calls two
//! recorders in a row, neither with more than four values: the first
//! (`__offload_panic_format_begin`) claims the record, writes values 0 to
//! 3 and returns; the second (`__offload_panic_format_end_*`) writes the
//! others, copies the `str` arguments' bytes into the record (the
//! `_str` one; see `panic_args::str_bytes`), publishes the record and ends
//! the thread. Which recorders a site calls is decided at compile time:
//! the tags are constants there. Sites of at most four values and no `str`
//! call the one recorder of their number of values, as before.
//!
//! The cost, `ptxas -v` (sm_90) on the kernels `values_0` … `values_8` of
//! `tests/fixtures/panics` (alike but for the number of values of their
//! assert's message), registers / stack bytes, before the chain (at most
//! four values recorded, the others `{?}`) and with it
//! (`bench/results/2026-12-02-panicargs/`):
//!
//! | values | rustc 1.101 (LLVM 23) before | after | rustc 1.96 (LLVM 22) before | after |
//! | ------ | ---------------------------- | ----- | --------------------------- | ----- |
//! | 0      | 28 / 0                       | @N0   | @D0                         | @E0   |
//! | 2      | 28 / 0                       | @N2   | @D2                         | @E2   |
//! | 4      | 30 / 0                       | @N4   | @D4                         | @E4   |
//! | 6      | 30 / 0                       | @N6   | @D6                         | @E6   |
//! | 8      | 30 / 0                       | @N8   | @D8                         | @E8   |

use crate::report::gpu::{claim, exit_thread, publish, write_ids};
use crate::report::panic_args::{str_bytes, PanicSite, ARGS, TAG_BITS, T_STR};
use crate::report::panic_record::{PanicRecord, FORMAT, MESSAGE_BYTES};

/// Writes what every recorder writes into the claimed record `rec`: the
/// first `N` values, the tags, the kind and the site, and the thread's ids.
///
/// # Safety
/// `rec` is the live record, claimed by this thread (`claim`); `N <= 4`.
#[inline(always)]
unsafe fn write_head<const N: usize>(rec: *mut PanicRecord, site: &'static PanicSite, tags: u32, values: [u64; N]) {
    // SAFETY: the caller's contract: this thread alone writes the record
    // until it publishes it; `N <= ARGS`, the length of its `values`,
    // whose others are 0 (the host zeroes the record).
    unsafe {
        let v = core::ptr::addr_of_mut!((*rec).values) as *mut u64;
        for (k, x) in values.into_iter().enumerate() {
            v.add(k).write(x);
        }
        (*rec).tags = tags;
        (*rec).kind = FORMAT;
        (*rec).message_addr = site as *const PanicSite as u64;
        write_ids(rec);
    }
}

/// Records a panic at `site` whose `N` arguments are `values` with `tags`
/// (see `panic_args`) and ends the thread.
#[inline(always)]
fn record<const N: usize>(site: &'static PanicSite, tags: u32, values: [u64; N]) -> ! {
    // Claimed first, the values written next: the fewer values live across
    // the claim's loop, the fewer registers. The site goes by address (the
    // host reads format string and location from it): no constants to
    // write.
    if let Some(rec) = claim() {
        // SAFETY: `rec` is the live record this thread claimed (`claim`);
        // `N <= 4` (the callers below).
        unsafe {
            write_head(rec, site, tags, values);
            publish(rec);
        }
    }
    exit_thread()
}

/// Whether `tags` (constants at every call site) has a `str` argument.
#[inline(always)]
const fn has_str(tags: u32) -> bool {
    let mut k = 0;
    while k < ARGS as u32 {
        if (tags >> (k * TAG_BITS)) & ((1 << TAG_BITS) - 1) == T_STR {
            return true;
        }
        k += 1;
    }
    false
}

/// Panics with `site`'s message whose `N <= ARGS` arguments are `values`
/// with `tags` (argument `k`'s tag at bit `k * TAG_BITS`): records them for
/// the host, which formats the message, and ends the thread. Calls the
/// recorder of `N` values, or the two chained ones (see the module docs),
/// so that a panic site passes only its own values, four at most per call.
#[inline(always)]
pub fn panic_format<const N: usize>(site: &'static PanicSite, tags: u32, values: [u64; N]) -> ! {
    const { assert!(N <= ARGS, "at most ARGS values") };
    let mut v = [0u64; ARGS];
    v[..N].copy_from_slice(&values);
    if has_str(tags) {
        __offload_panic_format_begin(site, tags, v[0], v[1], v[2], v[3]);
        // SAFETY: `begin` returned: this thread claimed the record and
        // wrote values 0 to 3.
        unsafe { __offload_panic_format_end_str(v[4], v[5], v[6], v[7]) }
    }
    match N {
        0 => __offload_panic_format_0(site, tags),
        1 => __offload_panic_format_1(site, tags, v[0]),
        2 => __offload_panic_format_2(site, tags, v[0], v[1]),
        3 => __offload_panic_format_3(site, tags, v[0], v[1], v[2]),
        4 => __offload_panic_format_4(site, tags, v[0], v[1], v[2], v[3]),
        _ => {
            __offload_panic_format_begin(site, tags, v[0], v[1], v[2], v[3]);
            // SAFETY: as above.
            unsafe {
                match N {
                    5 => __offload_panic_format_end_1(v[4]),
                    6 => __offload_panic_format_end_2(v[4], v[5]),
                    7 => __offload_panic_format_end_3(v[4], v[5], v[6]),
                    _ => __offload_panic_format_end_4(v[4], v[5], v[6], v[7]),
                }
            }
        }
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

/// The first of two chained recorders (see the module docs): claims the
/// record and writes `site`, `tags` and values 0 to 3, and returns; a
/// thread that does not get the record ends here. An
/// `__offload_panic_format_end_*` call follows.
#[unsafe(no_mangle)]
#[cold]
#[inline(never)]
pub extern "C" fn __offload_panic_format_begin(site: &'static PanicSite, tags: u32, a: u64, b: u64, c: u64, d: u64) {
    match claim() {
        // SAFETY: `rec` is the live record this thread claimed.
        Some(rec) => unsafe { write_head(rec, site, tags, [a, b, c, d]) },
        None => exit_thread(),
    }
}

/// The record this thread claimed in `__offload_panic_format_begin`.
///
/// # Safety
/// This thread called `__offload_panic_format_begin`, which returned.
#[inline(always)]
unsafe fn claimed() -> *mut PanicRecord {
    // SAFETY: the slot is written only by the host, before the launch; it
    // is not null, or `begin` would not have returned.
    unsafe { core::ptr::read_volatile(core::ptr::addr_of!(crate::report::gpu::__offload_global_panic_slot)) }
}

/// Writes `values` at 4 and after into the claimed record, publishes it
/// and ends the thread.
///
/// # Safety
/// As [`claimed`].
#[inline(always)]
unsafe fn end<const N: usize>(values: [u64; N]) -> ! {
    // SAFETY: the caller's contract: the record is this thread's, `4 + N
    // <= ARGS` (the callers below).
    unsafe {
        let rec = claimed();
        let v = core::ptr::addr_of_mut!((*rec).values) as *mut u64;
        for (k, x) in values.into_iter().enumerate() {
            v.add(4 + k).write(x);
        }
        publish(rec);
    }
    exit_thread()
}

macro_rules! ends {
    ($($name:ident($($v:ident),*);)*) => {$(
        /// The second of two chained recorders (see the module docs):
        /// writes these values after the first four, publishes the record
        /// and ends the thread.
        ///
        /// # Safety
        /// This thread called `__offload_panic_format_begin`, which returned.
        #[unsafe(no_mangle)]
        #[cold]
        #[inline(never)]
        pub unsafe extern "C" fn $name($($v: u64),*) -> ! {
            // SAFETY: the contract of this function.
            unsafe { end([$($v),*]) }
        }
    )*};
}

ends! {
    __offload_panic_format_end_1(e);
    __offload_panic_format_end_2(e, f);
    __offload_panic_format_end_3(e, f, g);
    __offload_panic_format_end_4(e, f, g, h);
}

/// The second of two chained recorders for a site with `str` arguments:
/// writes values 4 to 7, copies the bytes of each `str` argument (its
/// address and length in its value) into the record's message buffer
/// (`panic_args::str_bytes`: in argument order, cut where the buffer
/// ends), publishes the record and ends the thread.
///
/// # Safety
/// This thread called `__offload_panic_format_begin`, which returned, at a
/// site whose `str` arguments are live (`&str`s of the panic's format
/// arguments).
#[unsafe(no_mangle)]
#[cold]
#[inline(never)]
pub unsafe extern "C" fn __offload_panic_format_end_str(e: u64, f: u64, g: u64, h: u64) -> ! {
    // SAFETY: the contract of this function: the record is this thread's.
    unsafe {
        let rec = claimed();
        let v = core::ptr::addr_of_mut!((*rec).values) as *mut u64;
        for (k, x) in [e, f, g, h].into_iter().enumerate() {
            v.add(4 + k).write(x);
        }
        // Read back from the record (this thread's own stores): the first
        // four values are not parameters here.
        let values = core::ptr::read(core::ptr::addr_of!((*rec).values));
        let buf = core::ptr::addr_of_mut!((*rec).message) as *mut u8;
        str_bytes((*rec).tags, &values, MESSAGE_BYTES, |k, start, _, copied| {
            // The address of a live `str` of `copied <= len` bytes (its
            // value's low 48 bits; `panic_args::T_STR`).
            let from = (values[k] & ((1 << 48) - 1)) as *const u8;
            for i in 0..copied {
                buf.add(start + i).write(from.add(i).read());
            }
        });
        publish(rec);
    }
    exit_thread()
}
