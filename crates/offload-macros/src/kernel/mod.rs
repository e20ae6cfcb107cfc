//! `#[offload::kernel]`: parse → check → generate.
//!
//! One annotated `fn` becomes, on the device (`target_arch = "nvptx64"` or
//! `"amdgpu"`), the body and its exported entry points ([`entry`]), and on
//! the host a launcher of the same name ([`launcher`]).
//!
//! | module | role |
//! | --- | --- |
//! | [`attr`] | parses `#[kernel(same_len(a, b, …))]` |
//! | [`param`] | classifies a parameter: value, `&[T]`, `&mut [T]`, `&T`, `&mut T`; owning types |
//! | [`check`] | the signature's rules, every error at once → [`check::Kernel`] |
//! | [`instances`] | reads a generic kernel's instantiation list |
//! | [`types`] | substitutes and re-roots types for instantiations |
//! | [`align`] | the by-value alignment limit, a compile-time assertion |
//! | [`barriers`] | the host side's barriers as awaits, for a body that runs in phases |
//! | [`body`] | what both sides share: symbol, bounds, the body's parameters |
//! | [`panics`] | the device body's panic messages with arguments, recorded as values |
//! | [`entry`] | the device side |
//! | [`launcher`] | the host side |
//!
//! Dependencies run one way: `attr`, `param` → `check` → `body` → `entry`,
//! `launcher` (with `types`, `align`, `instances`, `panics`, `barriers`
//! below them).

mod align;
mod attr;
mod barriers;
mod body;
mod check;
mod entry;
mod instances;
mod launcher;
mod lockstep;
pub(crate) mod panics;
mod param;
mod types;

use proc_macro2::TokenStream;
use quote::quote;
use syn::ItemFn;

/// Expands `#[kernel(attr)] item`: the device and host items, or, if the
/// kernel breaks a rule, every error together with a host-only stub of the
/// function.
pub(crate) fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    let func: ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(e) => {
            let mut err =
                syn::Error::new(e.span(), "`#[offload::kernel]` applies to a free function: `fn name(args) { body }`");
            err.combine(e);
            let err = err.to_compile_error();
            return quote! { #err #item };
        }
    };
    match check::check(attr, func.clone()) {
        Ok(kernel) => {
            let b = body::of(&kernel);
            let device = entry::generate(&b);
            let host = launcher::generate(&b);
            quote! { #device #host }
        }
        Err(err) => stub(err, func),
    }
}

/// The errors, and the user's function with its signature kept so that the
/// rest of the crate still resolves and the IDE keeps working; only the
/// error is new. Its body is dropped: written for the kernel (a `&mut [T]`
/// is a `DisjointSlice` there), it would add errors such as "no method
/// `grid_stride` on `&mut [f32]`" that are not the problem. On the host
/// only: the device pass may not even resolve its types.
fn stub(err: syn::Error, mut func: ItemFn) -> TokenStream {
    let err = err.to_compile_error();
    // `panic!` with a literal is allowed in a `const fn`, so a `const`
    // kernel gets only its own error.
    *func.block = syn::parse_quote!({ ::core::panic!("this kernel did not compile") });
    quote! {
        #err
        #[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
        #[allow(dead_code, unused_variables, unused_mut)]
        #func
    }
}
