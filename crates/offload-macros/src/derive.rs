//! `#[derive(DeviceCopy)]`: parse → check → generate.
//!
//! A type may cross to the device by value, or as the element of a mapped
//! slice, only if its bytes mean the same thing there: a `#[repr(C)]` (or
//! `#[repr(transparent)]`) struct whose fields are all `DeviceCopy` and that
//! is `Copy` (no `Drop`, no heap, no references). The derive checks the repr
//! here and the fields through the type system.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Data, DeriveInput};

/// Expands `#[derive(DeviceCopy)]` on `input`.
///
/// # Errors
/// An enum, a union, or a struct without `#[repr(C)]`/`#[repr(transparent)]`,
/// at the offending token; fields that are not `DeviceCopy` are the type
/// system's errors, at the field's type.
pub(crate) fn expand(input: TokenStream) -> TokenStream {
    let input: DeriveInput = match syn::parse2(input) {
        Ok(i) => i,
        Err(e) => return e.to_compile_error(),
    };
    match check_and_generate(&input) {
        Ok(ts) => ts,
        Err(e) => e.to_compile_error(),
    }
}

fn has_c_repr(input: &DeriveInput) -> bool {
    let mut ok = false;
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("repr")) {
        let _ = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("C") || meta.path.is_ident("transparent") {
                ok = true;
            }
            Ok(())
        });
    }
    ok
}

fn check_and_generate(input: &DeriveInput) -> syn::Result<TokenStream> {
    let fields = match &input.data {
        Data::Struct(s) => &s.fields,
        Data::Enum(e) => {
            return Err(syn::Error::new_spanned(
                e.enum_token,
                "`DeviceCopy` cannot be derived for an enum: not every bit pattern is a valid value; pass a `u32` tag instead",
            ))
        }
        Data::Union(u) => {
            return Err(syn::Error::new_spanned(u.union_token, "`DeviceCopy` cannot be derived for a union"))
        }
    };
    if !has_c_repr(input) {
        return Err(syn::Error::new_spanned(
            &input.ident,
            "`DeviceCopy` needs a fixed layout: add `#[repr(C)]` so that host and device agree on field offsets",
        ));
    }
    let name = &input.ident;
    let mut generics = input.generics.clone();
    for tp in generics.type_params_mut() {
        tp.bounds.push(syn::parse_quote!(::offload::DeviceCopy));
    }
    let (impl_g, ty_g, where_c) = generics.split_for_impl();
    let checks = fields.iter().map(|f| {
        let ty = &f.ty;
        quote_spanned!(ty.span()=> ::offload::__private::assert_device_copy::<#ty>();)
    });
    Ok(quote! {
        // SAFETY: the type is `#[repr(C)]`/`#[repr(transparent)]` (checked by the
        // derive) and every field is `DeviceCopy` (checked below), so its bytes
        // are plain data with the same layout on the host and the device.
        unsafe impl #impl_g ::offload::DeviceCopy for #name #ty_g #where_c {}
        const _: () = {
            #[allow(dead_code)]
            fn __offload_check_fields #impl_g () #where_c { #(#checks)* }
        };
    })
}
