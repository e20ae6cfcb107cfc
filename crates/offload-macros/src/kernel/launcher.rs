//! The host side of a kernel: a launcher of the kernel's name taking
//! `(launch: impl Into<LaunchConfig>, <the user's parameters>)` and
//! returning `offload::Result<()>`. It maps the arguments by type and either
//! launches the device entry point or runs the body on the CPU (the host
//! fallback), once per simulated GPU thread.

use super::align::{self, Place};
use super::body::Body;
use super::param::{Mapping, Param};
use super::types::mentions;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::Ident;

/// The host-side items of the kernel: the launcher and, for a generic
/// kernel, its instance marker.
pub(super) fn generate(b: &Body) -> TokenStream {
    let func = &b.kernel.func;
    let (attrs, vis, name, generics, body) = (
        &func.attrs,
        &func.vis,
        b.name,
        &func.sig.generics,
        &func.block,
    );
    let (body_params, where_clause, sym) = (&b.params, &b.where_clause, &b.sym);
    let mut parts = Parts::default();
    for p in &b.kernel.params {
        parts.param(p, &b.type_params);
    }
    let Parts {
        prep,
        specs,
        call_args,
        user_params,
    } = parts;
    let same_len_check = same_len_check(&b.kernel.same_len);
    let launch_ident = Ident::new("__offload_launch", Span::mixed_site());
    let base_info = kernel_info(&name.to_string(), sym);
    // "symbol\tfile:line[\tgeneric]\0" in section `offload_kernels`: after
    // linking, `cargo offload` checks that the image has every kernel a
    // binary can launch (for a generic kernel, every instantiation it finds
    // in the binary's symbols).
    let record_tail = if b.generic() { "\tgeneric\0" } else { "\0" };
    let (select, marker_fn) = select(b);
    quote! {
        #(#attrs)*
        #[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
        #[allow(clippy::too_many_arguments, clippy::needless_lifetimes)]
        #vis fn #name #generics (
            #launch_ident: impl ::core::convert::Into<::offload::LaunchConfig>,
            #(#user_params),*
        ) -> ::offload::Result<()> #where_clause {
            #[allow(unused_mut, clippy::needless_lifetimes)]
            fn __offload_body #generics (#(#body_params),*) #where_clause #body

            static __OFFLOAD_KERNEL: ::offload::__private::KernelInfo = #base_info;
            const __OFFLOAD_RECORD: &str =
                ::core::concat!(#sym, "\t", ::core::file!(), ":", ::core::line!(), #record_tail);
            #[cfg_attr(target_os = "linux", link_section = "offload_kernels")]
            #[used]
            static __OFFLOAD_KERNEL_RECORD: [u8; __OFFLOAD_RECORD.len()] =
                ::offload::__private::record_bytes(__OFFLOAD_RECORD);
            #select
            #(#prep)*
            #same_len_check
            let __offload_args: &[::offload::__private::ArgSpec<'_>] = &[#(#specs),*];
            let __offload_host = move || __offload_body(#(#call_args),*);
            ::offload::__private::launch(
                __offload_kernel,
                ::core::convert::Into::into(#launch_ident),
                __offload_args,
                &__offload_host,
            )
        }

        #marker_fn
    }
}

/// The launcher's pieces.
#[derive(Default)]
struct Parts {
    /// Statements that map the arguments (and check by-value alignment).
    prep: Vec<TokenStream>,
    /// The mapped arguments' `ArgSpec`s, in the entry point's order.
    specs: Vec<TokenStream>,
    /// The arguments of the host fallback's call of the body.
    call_args: Vec<TokenStream>,
    /// The launcher's parameters after the launch configuration.
    user_params: Vec<TokenStream>,
}

impl Parts {
    /// Parameter `p` of a kernel with type parameters `type_params`. Slice
    /// parameters take anything that implements `SliceArg<T>` /
    /// `SliceArgMut<T>` (slices, Vec, arrays, DeviceBuffer); the rest keep
    /// the user's type.
    fn param(&mut self, p: &Param, type_params: &[Ident]) {
        let n = &p.name;
        let ty = &p.ty;
        let lt = p.lifetime.clone().map(|l| quote!(#l));
        let mapped = format_ident!("__offload_map_{}", n);
        match &p.mapping {
            Mapping::Value => {
                self.user_params.push(quote!(#n: #ty));
                self.specs
                    .push(quote_spanned!(ty.span()=> ::offload::__private::ArgSpec::value(&#n)));
                self.call_args.push(quote!(#n));
                // The same limit on the host, so that the error does not
                // depend on the pass (an inline constant where the type
                // mentions the kernel's type parameters).
                let place = if mentions(ty, type_params) {
                    Place::Inline
                } else {
                    Place::Item
                };
                self.prep.push(align::check(n, ty, ty, ty.span(), place));
            }
            Mapping::RefTo(_) => {
                self.user_params.push(quote!(#n: #ty));
                self.specs
                    .push(quote_spanned!(ty.span()=> ::offload::__private::ArgSpec::reference(#n)));
                self.call_args.push(quote!(#n));
            }
            Mapping::SliceTo(elem) => {
                self.user_params.push(
                    quote_spanned!(ty.span()=> #n: &#lt (impl ::offload::SliceArg<#elem> + ?Sized)),
                );
                self.prep.push(quote_spanned!(ty.span()=> let #mapped = ::offload::SliceArg::<#elem>::map_in(#n);));
                self.specs.push(quote!(#mapped.spec()));
                // SAFETY: only the host fallback calls the closure, and there
                // every address is host memory.
                self.call_args.push(quote!(unsafe { #mapped.host_view() }));
            }
            Mapping::SliceToFrom(elem) => {
                self.user_params
                    .push(quote_spanned!(ty.span()=> #n: &#lt mut (impl ::offload::SliceArgMut<#elem> + ?Sized)));
                self.prep
                    .push(quote_spanned!(ty.span()=> let #mapped = ::offload::SliceArgMut::<#elem>::map_inout(#n);));
                self.specs.push(quote!(#mapped.spec()));
                // SAFETY: only the host fallback calls the closure, once per
                // simulated GPU thread, while the launch holds the exclusive
                // borrow `#mapped` came from; `DisjointSlice` gives each thread
                // only the elements it owns.
                self.call_args.push(quote!(unsafe { #mapped.disjoint() }));
            }
            Mapping::RefToFrom(_) => {
                self.user_params.push(quote!(#n: #ty));
                self.prep
                    .push(quote_spanned!(ty.span()=> let #mapped = ::offload::__private::MapInOut::reference(#n);));
                self.specs.push(quote!(#mapped.spec()));
                // SAFETY: as for `&mut [T]`.
                self.call_args.push(quote!(unsafe { #mapped.disjoint() }));
            }
        }
    }
}

/// `same_len(a, b, …)`: an error instead of a launch if the mapped lengths
/// differ.
fn same_len_check(names: &[Ident]) -> Option<TokenStream> {
    (!names.is_empty()).then(|| {
        let strs = names.iter().map(|n| n.to_string());
        let maps = names.iter().map(|n| format_ident!("__offload_map_{}", n));
        quote! {
            ::offload::__private::check_same_len(__offload_kernel, &[#(#strs),*], &[#(#maps.len()),*])?;
        }
    })
}

/// The kernel's `KernelInfo` (an instance's is made at run time from it).
fn kernel_info(name: &str, sym: &str) -> TokenStream {
    quote! {
        ::offload::__private::KernelInfo {
            name: #name,
            symbol: #sym,
            module_path: ::core::module_path!(),
            file: ::core::file!(),
            line: ::core::line!(),
            instance: "",
        }
    }
}

/// The statements that pick the `KernelInfo` to launch, and the marker
/// function of a generic kernel.
///
/// A generic kernel's launcher finds the instantiation's device symbol at
/// run time: `marker::<(T, …)>()`, a function that is never inlined or
/// merged with another instance, returns `type_name` of the tuple of the
/// type arguments, which keys the symbol (`offload_image::symbol::
/// instance`). `cargo offload` reads the marker's instances back from the
/// binary's v0 symbol names, which spell the tuple the same way.
fn select(b: &Body) -> (TokenStream, TokenStream) {
    if !b.generic() {
        return (quote!(let __offload_kernel = &__OFFLOAD_KERNEL;), quote!());
    }
    let marker = Ident::new(&b.sym, b.name.span());
    let type_params = &b.type_params;
    let select = quote! {
        static __OFFLOAD_INSTANCES: ::offload::__private::Instances = ::offload::__private::Instances::new();
        let __offload_kernel = __OFFLOAD_INSTANCES.get(#marker::<(#(#type_params,)*)>(), &__OFFLOAD_KERNEL);
    };
    let marker_fn = quote! {
        #[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
        #[doc(hidden)]
        #[inline(never)]
        #[allow(non_snake_case, dead_code)]
        fn #marker<Args>() -> &'static str {
            ::core::hint::black_box(::core::any::type_name::<Args>())
        }
    };
    (select, marker_fn)
}
