//! The device side of a kernel (`target_arch = "nvptx64"` or `"amdgpu"`):
//! the body, as an ordinary `fn` named `__offload_body_<kernel>`, exactly
//! one exported entry point per instantiation (`__private::kernel_entry!`:
//! `extern "gpu-kernel"`, with the deterministic symbol) whose parameters
//! are the mapped arguments (a slice is a pointer and a length) and which
//! calls the body, and under the kernel's own name a function that no call
//! type-checks ([`stub`]: a kernel cannot call another).

use super::align::{self, Place};
use super::attr::Shape;
use super::body::{self, Body};
use super::instances;
use super::param::{Mapping, Param};
use super::types::substitute;
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Ident, Type};

/// The device-side items of the kernel: the errors about its instantiation
/// list and the list as an input (generic kernels), the body, the entry
/// points.
pub(super) fn generate(b: &Body) -> TokenStream {
    let func = &b.kernel.func;
    let (attrs, vis, name, generics, body) = (&func.attrs, &func.vis, b.name, &func.sig.generics, &b.device_block);
    let (params, where_clause) = (&b.params, &b.where_clause);
    let body_name = format_ident!("__offload_body_{}", name);
    let mut list = instances::Instances::default();
    if b.generic() {
        list = instances::read(&b.sym, name, b.type_params.len());
    }
    // Errors about instantiations are the device pass's: the host never
    // reads the list.
    let instance_errors = list.errors.map(|e| {
        let e = e.to_compile_error();
        quote! {
            #[cfg(any(target_arch = "nvptx64", target_arch = "amdgpu"))]
            const _: () = { #e };
        }
    });
    // The list of instantiations is an input of this crate's device pass
    // (cargo's dep-info then recompiles it when the list changes).
    let track = list.list_file.map(|f| {
        quote! {
            #[cfg(any(target_arch = "nvptx64", target_arch = "amdgpu"))]
            const _: &[u8] = ::core::include_bytes!(#f);
        }
    });
    let entries: Vec<TokenStream> = if b.generic() {
        list.instances
            .iter()
            .map(|inst| {
                let subst: Vec<(Ident, Type)> = b.type_params.iter().cloned().zip(inst.types.iter().cloned()).collect();
                let types = &inst.types;
                entry(b, &subst, &inst.symbol, quote!(#body_name::<#(#types),*>), inst.test_only)
            })
            .collect()
    } else {
        vec![entry(b, &[], &b.sym, quote!(#body_name), false)]
    };
    let stub = stub(b);
    quote! {
        #instance_errors
        #track
        #(#attrs)*
        #[cfg(any(target_arch = "nvptx64", target_arch = "amdgpu"))]
        #[allow(unused_mut, clippy::needless_lifetimes)]
        // Inlined into both copies of the entry point's body, the 1-D one
        // and the general one.
        #[inline(always)]
        #[doc(hidden)]
        #vis fn #body_name #generics (#(#params),*) #where_clause #body

        #stub
        #(#entries)*
    }
}

/// What the kernel's name means in the device pass: a function that no
/// call type-checks, with the launcher's arity (the launch configuration,
/// then the kernel's parameters), so that a kernel calling or launching
/// another kernel is an error naming the rule there too, as on the host
/// (where the name is the launcher, `IntoLaunchConfig`'s message). The
/// entry points call the body under a hidden name.
fn stub(b: &Body) -> TokenStream {
    let func = &b.kernel.func;
    let (vis, name) = (&func.vis, b.name);
    let cfgs = func.attrs.iter().filter(|a| a.path().is_ident("cfg"));
    let args: Vec<Ident> = (0..b.kernel.params.len()).map(|i| format_ident!("__A{}", i)).collect();
    quote! {
        #(#cfgs)*
        #[cfg(any(target_arch = "nvptx64", target_arch = "amdgpu"))]
        #[doc(hidden)]
        #[allow(dead_code, non_snake_case, clippy::too_many_arguments)]
        #vis fn #name<__C: ::offload::__private::KernelCannotLaunch, #(#args),*>(_: __C, #(_: #args),*) {}
    }
}

/// One entry point, `sym`, calling `callee` (the body, with a generic
/// kernel's type arguments) with the types of `subst` in place of the type
/// parameters; compiled only for this crate's unit tests if `test_only`.
fn entry(b: &Body, subst: &[(Ident, Type)], sym: &str, callee: TokenStream, test_only: bool) -> TokenStream {
    let entry = format_ident!("__offload_entry_{}", b.name);
    let mut parts = Parts::default();
    for p in &b.kernel.params {
        parts.param(p, subst, b.kernel.shape_of(&p.name));
    }
    parts.same_len(&b.kernel.same_len);
    let Parts { params, args, checks, consts } = parts;
    let test_only = test_only.then(|| quote!(#[cfg(test)]));
    quote! {
        #[cfg(any(target_arch = "nvptx64", target_arch = "amdgpu"))]
        #test_only
        const _: () = {
            #(#consts)*
            ::offload::__private::kernel_entry! {
                #sym, #entry, (#(#params),*), {
                    #(#checks)*
                    #callee(#(#args),*)
                }
            }
        };
    }
}

/// An entry point's pieces.
#[derive(Default)]
struct Parts {
    /// Its parameters.
    params: Vec<TokenStream>,
    /// The arguments it passes to the body.
    args: Vec<TokenStream>,
    /// Compile-time checks of the mapped types (statements).
    checks: Vec<TokenStream>,
    /// Constants to evaluate before code generation (items).
    consts: Vec<TokenStream>,
}

impl Parts {
    /// Parameter `p`, with the types of `subst` in place of the type
    /// parameters; `shape`, the array it holds if the kernel declares one.
    fn param(&mut self, p: &Param, subst: &[(Ident, Type)], shape: Option<&Shape>) {
        let n = &p.name;
        let ptr = format_ident!("{}__ptr", n);
        let len = format_ident!("{}__len", n);
        let span = p.ty.span();
        let ty = substitute(&p.ty, subst);
        match &p.mapping {
            Mapping::Value => {
                self.params.push(quote!(#n: #ty));
                self.args.push(quote!(#n));
                self.checks.push(quote_spanned!(span=> ::offload::__private::assert_device_copy::<#ty>();));
                // Concrete here (a generic kernel's entries are per
                // instantiation), so an item: evaluated before rustc
                // computes the entry's ABI.
                self.consts.push(align::check(n, &p.ty, &ty, span, Place::Item));
            }
            Mapping::SliceTo(elem) => {
                let elem = substitute(elem, subst);
                // The pointer is typed `&[T; 0]`: rustc marks it `noalias
                // readonly nonnull` (no `dereferenceable`, so an empty slice's
                // dangling pointer is valid), which lets the backend load through
                // the read-only data cache (`ld.global.nc`) as nvcc does for
                // `const T* __restrict__`. See `__private::slice_from_param`.
                self.params.push(quote!(#ptr: &[#elem; 0]));
                self.params.push(quote!(#len: usize));
                // SAFETY: the launcher mapped `len` initialized elements at `ptr`
                // (a dangling, aligned pointer when `len == 0`) to the device for
                // the whole launch, and nothing writes them.
                self.args.push(quote!(unsafe { ::offload::__private::slice_from_param(#ptr, #len) }));
                self.checks.push(quote_spanned!(span=> ::offload::__private::assert_map_elem::<#elem>();));
            }
            Mapping::SliceToFrom(elem) => {
                let elem = substitute(elem, subst);
                self.params.push(quote!(#ptr: *mut #elem));
                self.params.push(quote!(#len: usize));
                if let Some(shape) = shape {
                    let extents = body::extents(shape);
                    // SAFETY: the launcher mapped `len` elements at `ptr` to and
                    // from the device, exclusively for this launch, and checked
                    // that the extents, by-value arguments or literals that
                    // every thread shares, multiply to `len`.
                    self.args.push(quote!(unsafe {
                        ::offload::__private::disjoint_nd_from_raw(#ptr, #len, #extents)
                    }));
                } else {
                    // SAFETY: the launcher mapped `len` elements at `ptr` to and
                    // from the device, exclusively for this launch.
                    self.args.push(quote!(unsafe { ::offload::__private::disjoint_from_raw(#ptr, #len) }));
                }
                self.checks.push(quote_spanned!(span=> ::offload::__private::assert_device_copy::<#elem>();));
            }
            Mapping::RefTo(elem) => {
                let elem = substitute(elem, subst);
                // `&T` directly: `noalias readonly`, as for `SliceTo`.
                self.params.push(quote!(#n: &#elem));
                self.args.push(quote!(#n));
                self.checks.push(quote_spanned!(span=> ::offload::__private::assert_map_elem::<#elem>();));
            }
            Mapping::RefToFrom(elem) => {
                let elem = substitute(elem, subst);
                self.params.push(quote!(#ptr: *mut #elem));
                // SAFETY: the launcher mapped one element to and from `ptr`,
                // exclusively for this launch.
                self.args.push(quote!(unsafe { ::offload::__private::disjoint_from_raw(#ptr, 1) }));
                self.checks.push(quote_spanned!(span=> ::offload::__private::assert_device_copy::<#elem>();));
            }
        }
    }

    /// `same_len`: the launcher checked the lengths (`check_same_len`), so
    /// the entry may assume them equal.
    fn same_len(&mut self, names: &[Ident]) {
        let lens: Vec<Ident> = names.iter().map(|n| format_ident!("{}__len", n)).collect();
        if let Some((first, rest)) = lens.split_first() {
            self.checks.push(quote! {
                // SAFETY: the launcher returned an error instead of launching if
                // these lengths differed (`__private::check_same_len`).
                unsafe { #(::core::hint::assert_unchecked(#first == #rest);)* }
            });
        }
    }
}
