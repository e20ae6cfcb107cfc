//! The record a panicking GPU thread leaves for the host: the layout both
//! sides agree on (`#[repr(C)]`, same on nvptx64 and the host).
//!
//! The host allocates one record in page-locked host memory mapped into the
//! device's address space (`cuMemHostAlloc(DEVICEMAP)`), and stores its
//! device address in the image's global [`SLOT_SYMBOL`] after loading the
//! module. The device's panic handler claims the record through the
//! image's global [`CLAIM_SYMBOL`] in device memory (a GPU-scope
//! compare-exchange [`EMPTY`] → [`WRITING`]: no atomic touches the host
//! memory), writes the record with plain stores, publishes it (claim
//! [`DONE`], then `state` = [`DONE`] with a volatile store, between
//! system-scope fences) and the thread exits. The host reads it after the
//! launch, zeroes it and resets the claim to [`EMPTY`] (`cuMemsetD32Async`).
//! Strings that are constants of the image (the file name, a literal
//! message) are recorded by address and copied out by the host, so that the
//! recorder has no copy loops: every kernel that can panic pays for the
//! recorder's registers.
//!
//! `core`'s panics whose messages carry numbers (an index out of bounds, a
//! slice range out of bounds, `copy_from_slice` of another length) are
//! recorded as a [`kind`](PanicRecord::kind) and the numbers: the device
//! linker redirects them to offload's recorders (`gpu::__offload_panic_*`;
//! offload-linker's `panics`), which pass only scalars, and the host
//! writes the text ([`core_message`]), in `core`'s words, so that the GPU
//! reports the message the host fallback prints, in every profile.

use crate::report::panic_args::ARGS;

/// Bytes of the file name kept.
pub(crate) const FILE_BYTES: usize = 192;
/// Bytes of the panic message kept.
pub(crate) const MESSAGE_BYTES: usize = 512;

/// The device global holding the record's address (a `*mut PanicRecord`).
#[cfg_attr(any(target_arch = "nvptx64", target_arch = "amdgpu"), allow(dead_code))]
pub(crate) const SLOT_SYMBOL: &str = "__offload_global_panic_slot";

/// The device global that decides which thread writes the record (a
/// `u32` in device memory holding [`EMPTY`], [`WRITING`] or [`DONE`]; see
/// `gpu::__offload_global_panic_claim`), reset by the host after it takes
/// a record.
#[cfg_attr(any(target_arch = "nvptx64", target_arch = "amdgpu"), allow(dead_code))]
pub(crate) const CLAIM_SYMBOL: &str = "__offload_global_panic_claim";

/// State: empty.
#[cfg_attr(target_arch = "amdgpu", allow(dead_code))]
pub(crate) const EMPTY: u32 = 0;
/// State: a thread is writing the record.
#[cfg_attr(not(any(target_arch = "nvptx64", target_arch = "amdgpu")), allow(dead_code))]
pub(crate) const WRITING: u32 = 1;
/// State: complete.
pub(crate) const DONE: u32 = 2;

/// The message a GPU panic arrives with, in
/// [`Error::KernelPanic`](crate::Error)'s `message`, when the panic's
/// message has format arguments and is not written in a kernel body (a
/// `panic!("bad index {i}")` or `assert!(c, "{x}")` in a function that a
/// kernel calls, `Result::unwrap`'s error) and the device code was built
/// without debug assertions (an optimized profile such as `--release`): the
/// GPU does not format it there, because `core::fmt`'s calls through
/// function pointers would make ptxas reserve 255 registers in every kernel
/// that can panic (see `docs/device-model.md`, "Panics"). Literal
/// messages, `core`'s messages with numbers (index out of bounds: `the len
/// is 3 but the index is 7`, slice ranges, `copy_from_slice` lengths),
/// `Option::expect`'s message, messages with format arguments of
/// `panic!`, `assert!`, `assert_eq!`, `assert_ne!` and `unreachable!` in a
/// kernel body or in a function marked
/// [`#[offload::record_panics]`](crate::record_panics) (recorded as values; arguments other than numbers, `bool`,
/// `char` and `&str`, and those past the eighth, print `{?}`), the location, the
/// block and the thread are always reported; builds with debug assertions
/// and the host fallback format every message. Compare with it to tell
/// this known limitation from a message.
pub const UNFORMATTED_PANIC_MESSAGE: &str =
    "(a message with format arguments, not formatted on the GPU in optimized builds; a dev-profile build or \
     OFFLOAD_DEVICE=host prints it, and so does #[offload::record_panics] on the function whose panic!, assert! \
     or similar macro it is)";

/// The text of [`UNRECORDED_PANIC_MESSAGE`], a literal for `panic!`.
macro_rules! unrecorded_panic_message {
    () => {
        "(a message whose format string takes a width or precision from an argument, `1$` or `.*` in a spec, \
         which offload does not record on the GPU in optimized builds; a literal width or precision is \
         recorded, and a dev-profile build or OFFLOAD_DEVICE=host prints the message)"
    };
}

/// The message a GPU panic arrives with in optimized NVPTX builds when the
/// `panic!`, `assert!`, `assert_eq!`, `assert_ne!`, `unreachable!`,
/// `todo!` or `unimplemented!` of a kernel body or of a function marked
/// [`#[offload::record_panics]`](crate::record_panics) takes a width or
/// precision from an argument (`{:1$}`, `{:.*}`): the record holds the
/// values of the arguments only, so such a message is not recorded. The
/// location, block and thread are reported; the host fallback and builds
/// with debug assertions format the message.
pub const UNRECORDED_PANIC_MESSAGE: &str = unrecorded_panic_message!();

/// Panics with [`UNRECORDED_PANIC_MESSAGE`] at the caller's location: what
/// the kernel macro generates for such a message (see there).
#[track_caller]
#[inline(always)]
pub fn panic_unrecorded() -> ! {
    panic!(unrecorded_panic_message!())
}

/// [`PanicRecord::kind`]: the message is text (`message_addr` or `message`).
#[cfg_attr(any(target_arch = "nvptx64", target_arch = "amdgpu"), allow(dead_code))]
pub(crate) const TEXT: u32 = 0;
/// [`PanicRecord::kind`]: `core::panicking::panic_bounds_check`, `values`
/// = `[index, len]`.
#[cfg_attr(target_arch = "amdgpu", allow(dead_code))]
pub(crate) const BOUNDS: u32 = 1;
/// [`PanicRecord::kind`]: `core::slice::index::slice_index_fail`, `values`
/// = `[start, end, len]` (`&s[start..end]` and the other ranges).
#[cfg_attr(target_arch = "amdgpu", allow(dead_code))]
pub(crate) const SLICE_INDEX: u32 = 2;
/// [`PanicRecord::kind`]: `copy_from_slice`'s `len_mismatch_fail`,
/// `values` = `[dst_len, src_len]`.
#[cfg_attr(target_arch = "amdgpu", allow(dead_code))]
pub(crate) const LEN_MISMATCH: u32 = 3;

/// [`PanicRecord::kind`]: a message with format arguments (`panic_args`):
/// `message_addr` is the device address of its `PanicSite` (format string
/// and location; the record's own location fields are 0), the arguments
/// are in `values` with their `tags`; the host formats it
/// (`panic_format::format_message`).
#[cfg_attr(target_arch = "amdgpu", allow(dead_code))]
pub(crate) const FORMAT: u32 = 4;

/// The message `core` panics with for a record of `kind` with `values`
/// (see [`PanicRecord::kind`]), word for word as `core` writes it
/// (`library/core/src/panicking.rs`, `panic_bounds_check`;
/// `library/core/src/slice/index.rs`, `slice_index_fail`;
/// `library/core/src/slice/mod.rs`, `len_mismatch_fail`: the same in Rust
/// 1.96 and 1.101), so that a GPU panic reads as the host fallback's;
/// `None` for [`TEXT`] or an unknown kind.
#[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
pub(crate) fn core_message(kind: u32, values: [u64; 3]) -> Option<std::string::String> {
    use std::format;
    let [a, b, c] = values;
    Some(match kind {
        BOUNDS => format!("index out of bounds: the len is {b} but the index is {a}"),
        // The branches of `slice_index_fail(start, end, len)`, in its order.
        SLICE_INDEX if a > c => format!("range start index {a} out of range for slice of length {c}"),
        SLICE_INDEX if b > c => format!("range end index {b} out of range for slice of length {c}"),
        SLICE_INDEX if a > b => format!("slice index starts at {a} but ends at {b}"),
        // Only an inclusive range ending at `len` gets here.
        SLICE_INDEX => format!("range end index {b} out of range for slice of length {c}"),
        LEN_MISMATCH => {
            format!("copy_from_slice: source slice length ({b}) does not match destination slice length ({a})")
        }
        _ => return None,
    })
}

/// The message of a record that reports a stack overflow instead of a
/// panic: the recursion check the device linker inserts (see
/// `gpu::__offload_stack_guard`) records it, with the recursive
/// function's name in place of the file name and line and column 0.
pub(crate) const STACK_OVERFLOW: &str = "offload: stack overflow in a recursive function";

#[repr(C)]
pub(crate) struct PanicRecord {
    pub state: u32,
    pub line: u32,
    pub column: u32,
    pub block: [u32; 3],
    pub thread: [u32; 3],
    pub file_len: u32,
    pub message_len: u32,
    /// 1 if the message was cut to `MESSAGE_BYTES`.
    pub truncated: u32,
    /// What the message is: [`TEXT`], a panic of `core`'s whose text the
    /// host writes from `values` ([`BOUNDS`], [`SLICE_INDEX`],
    /// [`LEN_MISMATCH`]; see [`core_message`]), or a message with format
    /// arguments ([`FORMAT`]).
    pub kind: u32,
    /// Device address of the file name (a string constant of the image),
    /// which the host copies out after the launch; 0: the name is in `file`.
    pub file_addr: u64,
    /// Device address of a literal message; 0: the message is in `message`.
    pub message_addr: u64,
    /// The numbers of a `kind` other than [`TEXT`] (the first three for
    /// `core`'s kinds; [`FORMAT`]'s arguments).
    pub values: [u64; ARGS],
    /// [`FORMAT`]: the arguments' tags (`panic_args::TAG_BITS` bits each).
    pub tags: u32,
    pub file: [u8; FILE_BYTES],
    pub message: [u8; MESSAGE_BYTES],
}

#[cfg(all(test, not(any(target_arch = "nvptx64", target_arch = "amdgpu"))))]
mod tests {
    use super::*;
    use std::string::String;
    use std::vec::Vec;

    /// The message of the panic `f` raises on the host, as the host
    /// fallback reports it (the payload `std` formats).
    fn host_panic(f: impl FnOnce() + std::panic::UnwindSafe) -> String {
        let payload = std::panic::catch_unwind(f).expect_err("the closure panics");
        payload.downcast_ref::<String>().cloned().expect("a formatted message")
    }

    /// Each kind's text equals what the host's `core` prints for the same
    /// panic, for every branch of `slice_index_fail` (exclusive and
    /// inclusive ranges, both ends) and values past `u32`.
    #[test]
    fn core_messages_are_the_hosts_word_for_word() {
        // Zero-sized elements: a slice of any length without memory.
        let s: Vec<()> = std::vec![(); 10];
        let big: Vec<()> = std::vec![(); 1 << 33];
        let b = std::hint::black_box;
        let cases: Vec<(u32, [u64; 3], String)> = std::vec![
            (BOUNDS, [12, 10, 0], host_panic(|| s[b(12)])),
            (BOUNDS, [10, 10, 0], host_panic(|| s[b(10)])),
            (BOUNDS, [(1 << 33) + 5, 1 << 33, 0], host_panic(|| big[b((1 << 33) + 5)])),
            (SLICE_INDEX, [11, 12, 10], host_panic(|| _ = &s[b(11)..b(12)])),
            (SLICE_INDEX, [11, 10, 10], host_panic(|| _ = &s[b(11)..])),
            (SLICE_INDEX, [2, 12, 10], host_panic(|| _ = &s[b(2)..b(12)])),
            (SLICE_INDEX, [0, 12, 10], host_panic(|| _ = &s[..b(12)])),
            (SLICE_INDEX, [5, 3, 10], host_panic(|| _ = &s[b(5)..b(3)])),
            (SLICE_INDEX, [0, 10, 10], host_panic(|| _ = &s[..=b(10)])),
            (SLICE_INDEX, [3, 10, 10], host_panic(|| _ = &s[b(3)..=b(10)])),
            (SLICE_INDEX, [3, 11, 10], host_panic(|| _ = &s[b(3)..=b(11)])),
            (LEN_MISMATCH, [10, 3, 0], host_panic(|| s.clone().copy_from_slice(&s[..b(3)]))),
        ];
        for (kind, values, host) in cases {
            assert_eq!(core_message(kind, values).as_deref(), Some(host.as_str()), "{kind} {values:?}");
        }
        assert_eq!(core_message(TEXT, [1, 2, 3]), None);
        assert_eq!(core_message(99, [1, 2, 3]), None);
    }

    /// `panic_unrecorded` panics with a literal message (what the GPU's
    /// panic handler keeps in optimized builds), `UNRECORDED_PANIC_MESSAGE`.
    #[test]
    fn the_unrecorded_message_is_a_literal() {
        let payload = std::panic::catch_unwind(|| panic_unrecorded()).expect_err("it panics");
        assert_eq!(payload.downcast_ref::<&str>(), Some(&UNRECORDED_PANIC_MESSAGE));
    }
}
