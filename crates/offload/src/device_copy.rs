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
