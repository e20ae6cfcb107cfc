//! `#[offload::host]`: keeps an item out of the device pass.

use proc_macro2::TokenStream;
use quote::quote;

/// `item` under `cfg(not(any(target_arch = "nvptx64", target_arch =
/// "amdgpu")))`.
///
/// # Errors
/// Any argument (the attribute takes none), at the argument; the item is
/// then dropped.
pub(crate) fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    if !attr.is_empty() {
        return syn::Error::new_spanned(attr, "`#[offload::host]` takes no arguments")
            .to_compile_error();
    }
    quote! {
        #[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
        #item
    }
}
