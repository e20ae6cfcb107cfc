//! Panic messages with format arguments, recorded as values on the GPU:
//! what `#[offload::kernel]` generates for `panic!("bad {}", i)`,
//! `assert!(c, "…", …)`, `assert_eq!`, `assert_ne!` and `unreachable!("…", …)`
//! in a kernel body, and the tags both sides agree on.
//!
//! In optimized NVPTX builds (no debug assertions), where the GPU cannot
//! afford `core::fmt` (see `gpu::panic`), the kernel macro turns such a
//! macro into a call of `arg_panics::panic_format` with the format string (made
//! explicit: every `{…}` names its argument by index, named and captured
//! arguments included; see offload-macros' `kernel::panics`) and the
//! argument values as `u64` bit patterns with a [tag](TAG_BITS) each. The
//! recorders (`arg_panics`, out of line, cold, `.noreturn`) copy them into
//! the panic record; the host formats the message with them
//! (`panic_format::format_message`), as `format!` would. Elsewhere (the
//! host fallback, builds with debug assertions, AMD GPUs) the kernel keeps
//! the user's macro.
//!
//! Which arguments are recorded: integers of every width (`i128`/`u128`
//! only when the value fits in 64 bits), `f32`, `f64`, `bool`, `char`,
//! `str` ([`T_STR`]: its address and length; the recorder copies its bytes
//! into the record, see [`str_bytes`]), and references to them; the first
//! [`ARGS`]. Any other argument (a type with its own `Display` or `Debug`,
//! an argument of a generic kernel's type parameter, arguments past
//! [`ARGS`]) is written [`PLACEHOLDER`] in the message, which then ends
//! with [`PLACEHOLDER_NOTE`] (which types are recorded, and what to do).
//! The choice is made per argument type at compile time by autoref
//! specialization: the generated code calls
//! `(&FmtArg(&value)).__offload_fmt_arg()`, which resolves to
//! [`FmtValue`] when the type is a [`PanicValue`] (the method takes
//! `&FmtArg`, found first) and to [`FmtPlaceholder`] otherwise (it takes
//! `&&FmtArg`, found after the compiler adds a reference).
//!
//! Why a user's type is not recorded: its `Display` or `Debug` runs on the
//! device or not at all (the host has its code, but not the value: a
//! device value's pointers mean nothing there), and on the device it
//! needs `core::fmt`, whose calls through function pointers are what this
//! module avoids. Copying the value's bytes and formatting a host copy
//! with the type's own impl would be sound only for types without
//! pointers or references (a `&T` field read on the host is a dangling
//! reference), and `DeviceCopy` promises only that the bytes may be copied
//! to the device, not that they are meaningful on the host; `bytemuck`'s
//! `Pod` would, but the kernel macro cannot see an argument's type (it
//! sees tokens; the choice is made by trait resolution), so a per-type
//! host function would need a new opt-in trait and a registry of such
//! functions in the device image, for the cost of one field access at the
//! panic site. Format a field instead: `assert!(p.x < n, "x = {}", p.x)`.

/// How many argument values a panic record holds: eight, [`TAG_BITS`]
/// each in the 32 bits of the packed tags. A recorder's parameters are
/// registers while it claims the record, and ptxas counts a kernel's
/// registers over the functions it calls, so each value passed to the
/// recorder that claims could raise the count of a kernel whose own code
/// uses fewer (measured with `ptxas -v` (sm_90) on a small kernel of 28
/// registers, 24 of its own, when one recorder claimed and took the
/// values: two values cost nothing, three or four 2 registers, six 4, with
/// rustc 1.101 (LLVM 23)). So the values go to a second recorder, after
/// the one that claims with the site and the tags only (`arg_panics`);
/// then two to eight values cost no register (the table in `arg_panics`'
/// docs; `bench/results/2026-12-02-panicargs/`).
pub const ARGS: usize = 8;
/// Bits of one argument's tag in the packed tags (argument `k` at bit
/// `k * TAG_BITS`): `ARGS * TAG_BITS <= 32`.
pub const TAG_BITS: u32 = 4;

/// The text written for an argument that was not recorded (see the module docs).
pub const PLACEHOLDER: &str = "{?}";

/// What the host appends to a message with a [`PLACEHOLDER`]: which
/// arguments are recorded, and what to do about the others.
pub const PLACEHOLDER_NOTE: &str = " [offload: {?} is an argument that optimized GPU builds do not record; they \
     record integers (128-bit ones within 64 bits), floats, bool, char and &str, and references to them, eight \
     arguments at most: pass one of those (a field of a struct, say), or run a dev-profile build or \
     OFFLOAD_DEVICE=host to see the whole message]";

/// Tag: not recorded (written [`PLACEHOLDER`]).
pub const T_NONE: u32 = 0;
/// Tags of the unsigned integers; the value zero-extended.
pub const T_U8: u32 = 1;
/// `u16`.
pub const T_U16: u32 = 2;
/// `u32`.
pub const T_U32: u32 = 3;
/// `u64` and `usize` (64 bits on every target offload supports).
pub const T_U64: u32 = 4;
/// A `u128` below 2^64.
pub const T_U128: u32 = 5;
/// Tags of the signed integers: the value's bits, zero-extended (the host
/// sign-extends them from the type's width): the upper half of a 32-bit
/// value is then a constant 0, which a call's register pair need not keep
/// (see `arg_panics`).
pub const T_I8: u32 = 6;
/// `i16`.
pub const T_I16: u32 = 7;
/// `i32`.
pub const T_I32: u32 = 8;
/// `i64` and `isize`.
pub const T_I64: u32 = 9;
/// An `i128` in `i64`'s range.
pub const T_I128: u32 = 10;
/// `f32`: its bits (`to_bits`) in the low 32 bits.
pub const T_F32: u32 = 11;
/// `f64`: its bits.
pub const T_F64: u32 = 12;
/// `bool`: 0 or 1.
pub const T_BOOL: u32 = 13;
/// `char`: its scalar value.
pub const T_CHAR: u32 = 14;
/// `str`: its address (low 48 bits) and length (high 16 bits, at most
/// `0xffff`) at the panic site; the recorder copies the bytes into the
/// record's message buffer (see [`str_bytes`]), the host reads them from
/// there. A `str` at an address of 48 bits or more has bits 0 (no `str`
/// has the null address) and is written [`PLACEHOLDER`]. Always this tag,
/// never [`T_NONE`]: the tags must be constants at the panic site, where
/// they choose the recorders.
pub const T_STR: u32 = 15;

/// A type whose values a panic record can hold: its tag and bits.
pub trait PanicValue {
    /// The tag ([`T_U8`], …; [`T_NONE`] if this value does not fit) and the bits.
    fn panic_value(&self) -> (u32, u64);
}

macro_rules! panic_values {
    ($($t:ty => $tag:expr, |$v:ident| $bits:expr;)*) => {$(
        impl PanicValue for $t {
            #[inline(always)]
            fn panic_value(&self) -> (u32, u64) {
                let $v = *self;
                ($tag, $bits)
            }
        }
    )*};
}

panic_values! {
    u8 => T_U8, |v| v as u64;
    u16 => T_U16, |v| v as u64;
    u32 => T_U32, |v| v as u64;
    u64 => T_U64, |v| v;
    usize => T_U64, |v| v as u64;
    u128 => if v <= u64::MAX as u128 { T_U128 } else { T_NONE }, |v| v as u64;
    i8 => T_I8, |v| v as u8 as u64;
    i16 => T_I16, |v| v as u16 as u64;
    i32 => T_I32, |v| v as u32 as u64;
    i64 => T_I64, |v| v as u64;
    isize => T_I64, |v| v as i64 as u64;
    i128 => if v as i64 as i128 == v { T_I128 } else { T_NONE }, |v| v as i64 as u64;
    f32 => T_F32, |v| v.to_bits() as u64;
    f64 => T_F64, |v| v.to_bits();
    bool => T_BOOL, |v| v as u64;
    char => T_CHAR, |v| v as u64;
}

impl PanicValue for str {
    #[inline(always)]
    fn panic_value(&self) -> (u32, u64) {
        let (addr, len) = (self.as_ptr() as u64, self.len().min(0xffff) as u64);
        (T_STR, if addr >> 48 == 0 { addr | len << 48 } else { 0 })
    }
}

/// Where the bytes of the `str` arguments go in the record's `message`
/// buffer of `capacity` bytes, the same on the device, which copies them
/// there, and on the host, which reads them: in argument order, each right
/// after the previous one, cut where the buffer ends. Calls `f(k, start,
/// len, copied)` for each argument `k` whose tag is [`T_STR`] (`value(k)`
/// its bits, `len` its length, `copied` the bytes that fit at `start`).
#[inline(always)]
pub fn str_bytes(
    tags: u32,
    capacity: usize,
    value: impl Fn(usize) -> u64,
    mut f: impl FnMut(usize, usize, usize, usize),
) {
    let mut start = 0;
    for k in 0..ARGS {
        if (tags >> (k as u32 * TAG_BITS)) & ((1 << TAG_BITS) - 1) == T_STR {
            let len = (value(k) >> 48) as usize;
            let copied = len.min(capacity - start);
            f(k, start, len, copied);
            start += copied;
        }
    }
}

impl<T: PanicValue + ?Sized> PanicValue for &T {
    #[inline(always)]
    fn panic_value(&self) -> (u32, u64) {
        (**self).panic_value()
    }
}

impl<T: PanicValue + ?Sized> PanicValue for &mut T {
    #[inline(always)]
    fn panic_value(&self) -> (u32, u64) {
        (**self).panic_value()
    }
}

/// One argument of a panic message, for the autoref specialization of
/// [`FmtValue`] / [`FmtPlaceholder`] (see the module docs).
pub struct FmtArg<'a, T: ?Sized>(pub &'a T);

/// The argument's tag and bits, for a `PanicValue`. Found first: its
/// method takes `&FmtArg`.
pub trait FmtValue {
    /// The tag and bits to record.
    fn __offload_fmt_arg(&self) -> (u32, u64);
}

impl<T: PanicValue + ?Sized> FmtValue for FmtArg<'_, T> {
    #[inline(always)]
    fn __offload_fmt_arg(&self) -> (u32, u64) {
        self.0.panic_value()
    }
}

/// `T_NONE` for any other argument. Found second: its method takes
/// `&&FmtArg`.
pub trait FmtPlaceholder {
    /// `T_NONE` and 0.
    fn __offload_fmt_arg(&self) -> (u32, u64);
}

impl<T: ?Sized> FmtPlaceholder for &FmtArg<'_, T> {
    #[inline(always)]
    fn __offload_fmt_arg(&self) -> (u32, u64) {
        (T_NONE, 0)
    }
}

/// Where a panic message with arguments is and what it says: its format
/// string (explicit argument indices; see the module docs) and its
/// location, as a `static` of the device image that the kernel macro makes
/// for each panic site. The recorder records only its address; the host
/// copies it out of the image after the launch, then the strings it points
/// to (device addresses: the fields are raw, `#[repr(C)]`, 40 bytes on
/// nvptx64 and the host alike).
#[repr(C)]
pub struct PanicSite {
    /// The format string's address and length in bytes.
    pub fmt: *const u8,
    /// See `fmt`.
    pub fmt_len: usize,
    /// The file name's address and length in bytes.
    pub file: *const u8,
    /// See `file`.
    pub file_len: usize,
    /// Line and column of the macro (1-based, as `Location`'s).
    pub line: u32,
    /// See `line`.
    pub column: u32,
}

// SAFETY: a `PanicSite` is never written after its constant initializer,
// and its pointers are to `'static` string constants.
unsafe impl Sync for PanicSite {}

impl PanicSite {
    /// The site of `fmt` at `location` (`Location::caller()` in the
    /// `static`'s initializer, spanned at the macro: its file, line and
    /// column).
    pub const fn new(fmt: &'static str, location: &'static core::panic::Location<'static>) -> PanicSite {
        let file = location.file();
        PanicSite {
            fmt: fmt.as_ptr(),
            fmt_len: fmt.len(),
            file: file.as_ptr(),
            file_len: file.len(),
            line: location.line(),
            column: location.column(),
        }
    }
}

#[cfg(all(test, not(any(target_arch = "nvptx64", target_arch = "amdgpu"))))]
mod tests {
    use super::*;

    macro_rules! arg {
        ($e:expr) => {{
            #[allow(unused_imports)]
            use super::{FmtPlaceholder as _, FmtValue as _};
            (&FmtArg(&$e)).__offload_fmt_arg()
        }};
    }

    /// Values pick their tag; other types, literals of unsuffixed type and
    /// references included, compile and pick the placeholder or their tag.
    #[test]
    fn arguments_pick_value_or_placeholder_by_type() {
        assert_eq!(arg!(-3i8), (T_I8, 0xfd));
        assert_eq!(arg!(-3i32), (T_I32, 0xffff_fffd));
        assert_eq!(arg!(40 + 2), (T_I32, 42));
        assert_eq!(arg!(7usize), (T_U64, 7));
        assert_eq!(arg!(&&5u16), (T_U16, 5));
        assert_eq!(arg!(1.5f32), (T_F32, 1.5f32.to_bits() as u64));
        assert_eq!(arg!(2.5), (T_F64, 2.5f64.to_bits()));
        assert_eq!(arg!(true), (T_BOOL, 1));
        assert_eq!(arg!('é'), (T_CHAR, 'é' as u64));
        assert_eq!(arg!(u128::MAX), (T_NONE, u64::MAX));
        assert_eq!(arg!(-5i128), (T_I128, (-5i64) as u64));
        assert_eq!(arg!(i128::MIN).0, T_NONE);
        let text = "text";
        assert_eq!(arg!(text), (T_STR, text.as_ptr() as u64 | 4 << 48));
        assert_eq!(arg!(&text), arg!(text));
        assert_eq!(arg!(std::string::String::from("s")), (T_NONE, 0));
        assert_eq!(arg!([1u32, 2]), (T_NONE, 0));
    }
}
