//! `#[offload::device_global]`: parse → check → generate.
//!
//! `static NAME: T = init;` becomes a `static NAME: offload::DeviceGlobal<T>`
//! in both passes; in the device pass it is exported under a deterministic
//! symbol `__offload_global_<crate>_<name>_<hash>` (hash of the crate, the
//! file, line and column of the name, and the name, as for kernels), which
//! the device link keeps external and the CUDA backend finds with
//! `cuModuleGetGlobal`.

use proc_macro2::TokenStream;
use quote::quote;
use syn::ItemStatic;

use crate::symbol;

/// Expands `#[device_global(attr)] item`.
///
/// # Errors
/// Arguments (it takes none), an item that is not a `static`, and
/// `static mut`, each at the offending tokens.
pub(crate) fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    if !attr.is_empty() {
        let e = syn::Error::new_spanned(&attr, "`#[offload::device_global]` takes no arguments")
            .to_compile_error();
        return quote! { #e #item };
    }
    let st: ItemStatic = match syn::parse2(item.clone()) {
        Ok(s) => s,
        Err(e) => {
            // One error, at the item: syn's own ("expected `static`") would
            // only repeat it.
            let err = syn::Error::new(
                e.span(),
                "`#[offload::device_global]` applies to a `static NAME: T = value;` (T: plain data or an \
                 `offload::atomic` type)",
            )
            .to_compile_error();
            return quote! { #err #item };
        }
    };
    if let syn::StaticMutability::Mut(m) = &st.mutability {
        return syn::Error::new_spanned(
            m,
            "a device global cannot be `static mut`: kernels update it through atomics (`AtomicU32`, …), host code \
             with `write()`",
        )
        .to_compile_error();
    }
    let ItemStatic {
        attrs,
        vis,
        ident,
        ty,
        expr,
        ..
    } = &st;
    let symbol = symbol::global(ident);
    quote! {
        #(#attrs)*
        #[cfg(any(target_arch = "nvptx64", target_arch = "amdgpu"))]
        #[unsafe(export_name = #symbol)]
        #vis static #ident: ::offload::DeviceGlobal<#ty> = ::offload::DeviceGlobal::__device(#expr);
        #(#attrs)*
        #[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
        #vis static #ident: ::offload::DeviceGlobal<#ty> = ::offload::DeviceGlobal::__host(#expr, #symbol);
    }
}
