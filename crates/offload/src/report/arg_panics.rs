//! The recorders of panic messages with format arguments on the GPU (see
//! [`panic_args`](crate::report::panic_args)): the kernel macro's
//! [`panic_format`] calls them in optimized NVPTX builds.
//!
//! Like `core_panics`' recorders they take scalars only (in parameters, no
//! stack), are cold and out of line, and call no function through a
//! pointer, so a kernel's hot path pays nothing for them but the registers
//! ptxas counts over the functions a kernel calls. The SASS calling
//! convention passes parameters in registers, and a recorder keeps its
//! parameters live while it claims the record (a loop); one recorder per
//! number of values, taking them all, made a small kernel of 28 registers
//! (24 of its own) use 30 with three or four values and 32 with six
//! (rustc 1.101). So a site calls two recorders, chained:
//! `__offload_panic_format_begin(site, tags)` claims the record, writes
//! the site's address ([`PanicSite`]: format string and location) and the
//! tags, and returns (a thread that does not get the
//! record ends there); then `__offload_panic_format_end_N(values…)` (`N`
//! values; `end_str_N` where an argument is a `str`) writes the values
//! and the thread's ids (and copies the `str`s' bytes), publishes the record and ends the
//! thread (`.noreturn` in PTX). The second has no loop but the copy, and
//! across the first only the values are live, which ptxas keeps in
//! registers the first does not use. A message without values calls
//! `__offload_panic_format_0` alone. Which recorders a site calls is
//! decided at compile time: `N` and the tags are constants there.
//!
//! The cost, `ptxas -v` (sm_90) on the kernels `values_0` … `values_8` and
//! `str_2` of `tests/fixtures/panics` (alike but for the number of values
//! of their assert's message; `str_2` is `values_2` with a `&str`),
//! registers / stack bytes, before (one recorder per number of values,
//! at most four, the others `{?}`; `&str`s `{?}`) and after the chain
//! (`bench/results/2026-12-02-panicargs/`):
//!
//! | kernel               | rustc 1.101 (LLVM 23) before | after   | rustc 1.96 (LLVM 22) before | after   |
//! | -------------------- | ---------------------------- | ------- | --------------------------- | ------- |
//! | `values_0`           | 28 / 0                       | 28 / 0  | 28 / 0                      | 28 / 0  |
//! | `values_2`           | 28 / 0                       | 28 / 0  | 28 / 0                      | 28 / 0  |
//! | `values_4`           | 30 / 0                       | 28 / 0  | 30 / 0                      | 28 / 0  |
//! | `values_6`           | 30 / 0                       | 28 / 0  | 30 / 0                      | 28 / 0  |
//! | `values_8`           | 30 / 0                       | 28 / 0  | 30 / 0                      | 28 / 0  |
//! | `str_2`              | 28 / 0                       | 32 / 0  | 28 / 0                      | 32 / 0  |
//! | `names`              | 28 / 0                       | 32 / 8  | 28 / 0                      | 32 / 8  |
//! | `bounded`            | 28 / 0                       | 28 / 0  | 28 / 0                      | 28 / 0  |
//! | `bounded_formatted`  | 28 / 0                       | 28 / 0  | 28 / 0                      | 28 / 0  |
//! | `formatted`          | 28 / 0                       | 28 / 0  | 28 / 0                      | 28 / 0  |
//!
//! `names` builds a string on the thread's stack (its 8 bytes of stack)
//! and validates it (`from_utf8`) only after the chain, whose `&str`s were
//! `{?}` before (and dead code). A `&str` costs the copy loop's registers
//! (`end_str_N`: 4 here); sites without one never call it.

use crate::report::gpu::{claim, exit_thread, publish, write_ids};
use crate::report::panic_args::{str_bytes, PanicSite, ARGS, TAG_BITS, T_STR};
use crate::report::panic_record::{PanicRecord, FORMAT, MESSAGE_BYTES};

/// Writes what the recorder that claims writes into the claimed record
/// `rec`: the tags, the kind and the site. (The thread's ids are written
/// by the recorder that publishes: fewer registers in the one across
/// whose call the values are live.)
///
/// # Safety
/// `rec` is the live record, claimed by this thread (`claim`).
#[inline(always)]
unsafe fn write_head(rec: *mut PanicRecord, site: &'static PanicSite, tags: u32) {
    // SAFETY: the caller's contract: this thread alone writes the record
    // until it publishes it.
    unsafe {
        (*rec).tags = tags;
        (*rec).kind = FORMAT;
        (*rec).message_addr = site as *const PanicSite as u64;
    }
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
/// chained recorders (see the module docs): the first claims the record
/// with `site` and `tags`, the second of `N` values writes them.
#[inline(always)]
pub fn panic_format<const N: usize>(site: &'static PanicSite, tags: u32, values: [u64; N]) -> ! {
    const { assert!(N <= ARGS, "at most ARGS values") };
    let mut v = [0u64; ARGS];
    v[..N].copy_from_slice(&values);
    if N == 0 {
        __offload_panic_format_0(site, tags)
    }
    __offload_panic_format_begin(site, tags);
    // SAFETY: `begin` returned: this thread claimed the record.
    unsafe {
        if has_str(tags) {
            match N {
                1 => __offload_panic_format_end_str_1(v[0]),
                2 => __offload_panic_format_end_str_2(v[0], v[1]),
                3 => __offload_panic_format_end_str_3(v[0], v[1], v[2]),
                4 => __offload_panic_format_end_str_4(v[0], v[1], v[2], v[3]),
                5 => __offload_panic_format_end_str_5(v[0], v[1], v[2], v[3], v[4]),
                6 => __offload_panic_format_end_str_6(v[0], v[1], v[2], v[3], v[4], v[5]),
                7 => __offload_panic_format_end_str_7(v[0], v[1], v[2], v[3], v[4], v[5], v[6]),
                _ => __offload_panic_format_end_str_8(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]),
            }
        }
        match N {
            1 => __offload_panic_format_end_1(v[0]),
            2 => __offload_panic_format_end_2(v[0], v[1]),
            3 => __offload_panic_format_end_3(v[0], v[1], v[2]),
            4 => __offload_panic_format_end_4(v[0], v[1], v[2], v[3]),
            5 => __offload_panic_format_end_5(v[0], v[1], v[2], v[3], v[4]),
            6 => __offload_panic_format_end_6(v[0], v[1], v[2], v[3], v[4], v[5]),
            7 => __offload_panic_format_end_7(v[0], v[1], v[2], v[3], v[4], v[5], v[6]),
            _ => __offload_panic_format_end_8(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]),
        }
    }
}

/// The recorder of a message without values: claims the record, writes
/// `site` and `tags`, publishes the record and ends the thread.
#[unsafe(no_mangle)]
#[cold]
#[inline(never)]
pub extern "C" fn __offload_panic_format_0(site: &'static PanicSite, tags: u32) -> ! {
    if let Some(rec) = claim() {
        // SAFETY: `rec` is the live record this thread claimed.
        unsafe {
            write_head(rec, site, tags);
            write_ids(rec);
            publish(rec);
        }
    }
    exit_thread()
}

/// The first of the two chained recorders (see the module docs): claims
/// the record and writes `site` and `tags`, and returns;
/// a thread that does not get the record ends here. An
/// `__offload_panic_format_end_*` call follows.
#[unsafe(no_mangle)]
#[cold]
#[inline(never)]
pub extern "C" fn __offload_panic_format_begin(site: &'static PanicSite, tags: u32) {
    match claim() {
        // SAFETY: `rec` is the live record this thread claimed.
        Some(rec) => unsafe { write_head(rec, site, tags) },
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

/// Writes `values` and the thread's ids into the claimed record.
///
/// # Safety
/// As [`claimed`].
#[inline(always)]
unsafe fn write_values<const N: usize>(values: [u64; N]) -> *mut PanicRecord {
    // SAFETY: the caller's contract: the record is this thread's; `N <=
    // ARGS` (the callers below), the length of its `values`, whose others
    // are 0 (the host zeroes the record).
    unsafe {
        let rec = claimed();
        let v = core::ptr::addr_of_mut!((*rec).values) as *mut u64;
        for (k, x) in values.into_iter().enumerate() {
            v.add(k).write(x);
        }
        write_ids(rec);
        rec
    }
}

/// Writes `values` and the thread's ids, publishes the record and ends the
/// thread.
///
/// # Safety
/// As [`claimed`].
#[inline(always)]
unsafe fn end_plain<const N: usize>(values: [u64; N]) -> ! {
    // SAFETY: the caller's contract: the record is this thread's.
    unsafe { publish(write_values(values)) };
    exit_thread()
}

/// The second recorders of the chain (see the module docs), one per number
/// of values, each `$end` of its values (`end_plain`, `end_str`).
macro_rules! ends {
    ($doc:literal, $end:ident: $($name:ident($($v:ident),*);)*) => {$(
        #[doc = $doc]
        #[unsafe(no_mangle)]
        #[cold]
        #[inline(never)]
        pub unsafe extern "C" fn $name($($v: u64),*) -> ! {
            // SAFETY: the contract of this function.
            unsafe { $end([$($v),*]) }
        }
    )*};
}

ends! {
    "The second of the two chained recorders (see the module docs): writes
these values, publishes the record and ends the thread.

# Safety
This thread called `__offload_panic_format_begin`, which returned.",
    end_plain:
    __offload_panic_format_end_1(a);
    __offload_panic_format_end_2(a, b);
    __offload_panic_format_end_3(a, b, c);
    __offload_panic_format_end_4(a, b, c, d);
    __offload_panic_format_end_5(a, b, c, d, e);
    __offload_panic_format_end_6(a, b, c, d, e, f);
    __offload_panic_format_end_7(a, b, c, d, e, f, g);
    __offload_panic_format_end_8(a, b, c, d, e, f, g, h);
}

/// Writes `values`, copies the bytes of each `str` argument (its address
/// and length in its value) into the record's message buffer
/// (`panic_args::str_bytes`: in argument order, cut where the buffer
/// ends), publishes the record and ends the thread.
///
/// # Safety
/// As [`claimed`], at a site whose `str` arguments are live (`&str`s of
/// the panic's format arguments).
#[inline(always)]
unsafe fn end_str<const N: usize>(values: [u64; N]) -> ! {
    // SAFETY: the caller's contract: the record is this thread's.
    unsafe {
        let rec = write_values(values);
        // Read back from the record (this thread's own stores), one at a
        // time: no array of the values to keep in registers.
        let values = core::ptr::addr_of!((*rec).values) as *const u64;
        let buf = core::ptr::addr_of_mut!((*rec).message) as *mut u8;
        str_bytes(
            (*rec).tags,
            MESSAGE_BYTES,
            |k| values.add(k).read(),
            |k, start, _, copied| {
                // The address of a live `str` of at least `copied` bytes (the
                // low 48 bits; `panic_args::T_STR`), or 0 with nothing to copy.
                let from = (values.add(k).read() & ((1 << 48) - 1)) as *const u8;
                for i in 0..copied {
                    buf.add(start + i).write(from.add(i).read());
                }
            },
        );
        publish(rec);
    }
    exit_thread()
}

ends! {
    "The second of the two chained recorders for a site with `str`
arguments: writes these values, copies the `str` arguments' bytes into the
record, publishes it and ends the thread.

# Safety
This thread called `__offload_panic_format_begin`, which returned, at a site
whose `str` arguments are live.",
    end_str:
    __offload_panic_format_end_str_1(a);
    __offload_panic_format_end_str_2(a, b);
    __offload_panic_format_end_str_3(a, b, c);
    __offload_panic_format_end_str_4(a, b, c, d);
    __offload_panic_format_end_str_5(a, b, c, d, e);
    __offload_panic_format_end_str_6(a, b, c, d, e, f);
    __offload_panic_format_end_str_7(a, b, c, d, e, f, g);
    __offload_panic_format_end_str_8(a, b, c, d, e, f, g, h);
}
