//! Procedural macros of `offload`: `#[kernel]`, `#[device_global]`,
//! `#[host]`, `#[record_panics]` and `#[derive(DeviceCopy)]`. Use them
//! through the `offload` crate, which re-exports them and documents the
//! programming model; generated code names only `::offload::__private::…`
//! and `::offload::…`.
//!
//! This file is the entry only. Each macro is a module split parse → check →
//! generate ([`kernel`] has one module per role; `symbol` names the
//! exported symbols of kernels and device globals). Every diagnostic is a
//! `syn::Error` on the offending token; a kernel's are collected in a
//! `ctxt::Ctxt` so that all of them come at once. Errors are emitted next
//! to the user's item (a rejected kernel keeps a host-only stub of its
//! signature) so that the rest of the crate still type-checks. The macros
//! never panic.
//! Each diagnostic has a UI test in `crates/offload/tests/ui/{kernel,derive,
//! device_global,host,record_panics}/` (trybuild), and `tests/expand/` pins
//! the generated code (see `expand_tests`).

mod ctxt;
mod derive;
mod global;
mod host;
mod kernel;
mod record_panics;
mod symbol;

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
    host::expand(attr.into(), item.into()).into()
}

/// Records the values of a function's panic messages on the GPU, as in a
/// kernel body. See `offload::record_panics`.
#[proc_macro_attribute]
pub fn record_panics(attr: TokenStream, item: TokenStream) -> TokenStream {
    record_panics::expand(attr.into(), item.into()).into()
}

/// Implements `offload::DeviceCopy` for a `#[repr(C)]` plain-data struct.
/// See `offload::DeviceCopy`.
#[proc_macro_derive(DeviceCopy)]
pub fn derive_device_copy(input: TokenStream) -> TokenStream {
    derive::expand(input.into()).into()
}
