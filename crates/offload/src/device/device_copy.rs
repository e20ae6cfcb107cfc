//! Which types may cross between host and device.

/// Plain data whose bytes mean the same on the host and on the device, so it
/// can be passed to a kernel by value or as the element type of a mapped
/// slice or reference.
///
/// Implemented for the integer and floating-point types, `bool`, `char`,
/// [`Dim3`](crate::Dim3) and arrays of `DeviceCopy` types; derive it for your
/// own `#[repr(C)]` structs with `#[derive(Clone, Copy, offload::DeviceCopy)]`.
/// Not implemented for references, raw pointers (a host address means nothing
/// on the device), tuples and `repr(Rust)` structs (their layout may differ
/// between the compilers of the two passes), or anything that owns memory.
///
/// # Safety
///
/// Implementors guarantee that the type has the same size, alignment and field
/// offsets on every target (`#[repr(C)]` or `#[repr(transparent)]` with
/// `DeviceCopy` fields), holds no pointers or references, and that any value
/// produced by safe device code, copied back byte for byte, is a valid value
/// on the host.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be moved to the device",
    label = "kernel arguments and mapped elements must be plain data (`DeviceCopy`)",
    note = "by value: integers, floats, `bool`, arrays of them, and `#[repr(C)]` structs with `#[derive(Clone, Copy, offload::DeviceCopy)]`",
    note = "by reference: `&[T]` / `&T` are copied to the device, `&mut [T]` / `&mut T` to and from it, for such a `T`"
)]
pub unsafe trait DeviceCopy: Copy + Send + Sync + 'static {}

macro_rules! impl_device_copy {
    ($($t:ty),*) => {
        $(
            // SAFETY: a primitive with a target-independent layout and no pointers.
            unsafe impl DeviceCopy for $t {}
        )*
    };
}

impl_device_copy!(u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize, f32, f64, bool, char);

// SAFETY: `#[repr(C)]` struct of three `u32`.
unsafe impl DeviceCopy for crate::Dim3 {}

// SAFETY: an array of `DeviceCopy` elements has the elements' layout, repeated.
unsafe impl<T: DeviceCopy, const N: usize> DeviceCopy for [T; N] {}

/// Element types of a mapped `&[T]` or `&T` kernel argument: every
/// [`DeviceCopy`] type (copied to the device), and the atomics of
/// [`atomic`](crate::atomic) — `AtomicU32`, `AtomicI32`, `AtomicU64`,
/// `AtomicI64`, [`AtomicF32`](crate::atomic::AtomicF32),
/// [`AtomicF64`](crate::atomic::AtomicF64) — which are copied to the device
/// *and back*, since kernels update them through a shared reference.
///
/// # Safety
///
/// Implementors have the same layout on host and device, hold no pointers,
/// and every bit pattern the device can leave is a valid value;
/// `ATOMIC_BYTES` is 0 for plain data, else the size of the atomic (4 or 8),
/// which must be `size_of::<Self>()`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be moved to the device",
    label = "kernel arguments and mapped elements must be plain data (`DeviceCopy`) or an `offload::atomic` type",
    note = "by value: integers, floats, `bool`, arrays of them, and `#[repr(C)]` structs with `#[derive(Clone, Copy, offload::DeviceCopy)]`"
)]
pub unsafe trait MapElem: Sync + 'static {
    /// 0 for plain data (copied to the device only); 4 or 8 for atomics,
    /// whose new values are stored back into the host's atomics after the
    /// launch, element by element with relaxed atomic stores.
    const ATOMIC_BYTES: usize;
}

// SAFETY: `DeviceCopy` guarantees the layout and validity rules.
unsafe impl<T: DeviceCopy> MapElem for T {
    const ATOMIC_BYTES: usize = 0;
}

macro_rules! map_atomic {
    ($($t:ty = $n:expr),*) => {$(
        // SAFETY: an atomic has the layout of its integer (`#[repr(C,
        // align(N))]` in core, `repr(transparent)` for the float ones), no
        // pointers, and every bit pattern is valid.
        unsafe impl MapElem for $t {
            const ATOMIC_BYTES: usize = $n;
        }
    )*};
}
map_atomic!(
    core::sync::atomic::AtomicU32 = 4,
    core::sync::atomic::AtomicI32 = 4,
    core::sync::atomic::AtomicU64 = 8,
    core::sync::atomic::AtomicI64 = 8
);
#[cfg(not(target_arch = "amdgpu"))]
map_atomic!(crate::device::atomic::AtomicF32 = 4, crate::device::atomic::AtomicF64 = 8);
