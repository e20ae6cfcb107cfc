//! The alignment limit of by-value kernel parameters, checked at compile
//! time in both passes.

use super::param::spelled;
use proc_macro2::{Span, TokenStream};
use quote::quote_spanned;
use syn::{Ident, Type};

/// The largest alignment, in bytes, of a kernel parameter passed by value:
/// rustc's `gpu-kernel` ABI for nvptx64 passes an aggregate as a byte array
/// aligned to at most 16 (`compiler/rustc_target/src/callconv/nvptx64.rs`,
/// `compute_ptx_kernel_abi_info`) and stops with an internal compiler error
/// ("Align is given as power of 2 no larger than 16 bytes") on a larger
/// alignment.
const MAX_BY_VALUE_ALIGN: usize = 16;

/// Where the assertion goes.
#[derive(Clone, Copy)]
pub(super) enum Place {
    /// `const _: () = …;`, an item: evaluated with the crate's other
    /// constants, before code generation (for a concrete type).
    Item,
    /// `const { … };`, an inline constant in the launcher's body (for a type
    /// that mentions the kernel's type parameters, evaluated per
    /// instantiation).
    Inline,
}

/// A constant that fails to evaluate, with a message naming the parameter,
/// if the by-value parameter `name: ty` is aligned to more than
/// [`MAX_BY_VALUE_ALIGN`] bytes. Alignment can come from any field's type,
/// so only the compiler knows it: the assertion is evaluated with the other
/// constants of the crate, before code generation, in the host pass and in
/// the device pass (where it must come before rustc computes the entry
/// point's ABI). `written` is the type as the user wrote it, `ty` the one
/// checked (a generic kernel's instantiation on the device).
pub(super) fn check(name: &Ident, written: &Type, ty: &Type, span: Span, place: Place) -> TokenStream {
    let written = spelled(written);
    let checked = spelled(ty);
    let with = if checked == written { String::new() } else { format!(" (here `{checked}`)") };
    let msg = format!(
        "kernel parameter `{name}: {written}`{with} cannot be passed by value: its type is aligned to more than \
         {MAX_BY_VALUE_ALIGN} bytes, the most a GPU kernel parameter can be (rustc's nvptx64 kernel ABI). Pass it by \
         reference (`{name}: &{written}`, copied to the device) or lower its `#[repr(align(N))]` to 16 or less"
    );
    let assert = quote_spanned!(span=> ::core::assert!(::core::mem::align_of::<#ty>() <= #MAX_BY_VALUE_ALIGN, #msg));
    match place {
        Place::Item => quote_spanned!(span=> const _: () = #assert;),
        Place::Inline => quote_spanned!(span=> const { #assert };),
    }
}
