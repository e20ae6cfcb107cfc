//! Procedural macros of `offload`: `#[kernel]`, `#[host]` and
//! `#[derive(DeviceCopy)]`. Use them through the `offload` crate, which
//! re-exports them and documents the programming model; generated code names
//! only `::offload::__private::…` and `::offload::…`.
//!
//! Each macro is split into parse → check → generate (see `kernel.rs`);
//! every diagnostic is a `syn::Error` on the offending token, and errors are
//! emitted next to the user's item so that the rest of the crate still
//! type-checks.

mod derive;
mod global;
mod kernel;

#[cfg(test)]
mod expand_tests;

use proc_macro::TokenStream;

/// Turns an ordinary `fn` into a GPU kernel. See `offload::kernel` for the
/// full documentation.
#[proc_macro_attribute]
pub fn kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    kernel::expand(attr.into(), item.into()).into()
}

/// Declares a device global (`static NAME: T = value;` becomes an
/// `offload::DeviceGlobal<T>`). See `offload::device_global`.
#[proc_macro_attribute]
pub fn device_global(attr: TokenStream, item: TokenStream) -> TokenStream {
    global::expand(attr.into(), item.into()).into()
}

/// Keeps an item out of the device pass. See `offload::host`.
#[proc_macro_attribute]
pub fn host(attr: TokenStream, item: TokenStream) -> TokenStream {
    let attr = proc_macro2::TokenStream::from(attr);
    let item = proc_macro2::TokenStream::from(item);
    if !attr.is_empty() {
        return syn::Error::new_spanned(attr, "`#[offload::host]` takes no arguments")
            .to_compile_error()
            .into();
    }
    quote::quote! {
        #[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
        #item
    }
    .into()
}

/// Implements `offload::DeviceCopy` for a `#[repr(C)]` plain-data struct.
/// See `offload::DeviceCopy`.
#[proc_macro_derive(DeviceCopy)]
pub fn derive_device_copy(input: TokenStream) -> TokenStream {
    derive::expand(input.into()).into()
}
