//! The host side of a kernel: a launcher of the kernel's name taking
//! `(launch: impl IntoLaunchConfig, <the user's parameters>)` and
//! returning `offload::Result<()>`. It maps the arguments by type and either
//! launches the device entry point or runs the body on the CPU (the host
//! fallback), once per simulated GPU thread.

use super::align::{self, Place};
use super::attr::Shape;
use super::body::{self, Body};
use super::lockstep;
use super::param::{Mapping, Param};
use super::types::mentions;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::Ident;

/// The host-side items of the kernel: the shared launch function, the
/// blocking launcher, the queued form and, for a generic kernel, its
/// instance marker.
pub(super) fn generate(b: &Body) -> TokenStream {
    let mut parts = Parts::default();
    for p in &b.kernel.params {
        parts.param(p, &b.type_params, b.kernel.shape_of(&p.name));
    }
    let (select, marker_fn) = select(b);
    let shared = format_ident!("__offload_launch_{}", b.name);
    let shared_fn = shared_launch(b, &shared, &parts, &select);
    let blocking = blocking_launcher(b, &shared, &parts);
    let queued = queued(b, &shared);
    quote! {
        #shared_fn

        #blocking

        #queued

        #marker_fn
    }
}

/// The launch configuration's parameter, in every generated function.
fn launch_ident() -> Ident {
    Ident::new("__offload_launch", Span::mixed_site())
}

/// A generic kernel's `where` clause gets the bounds the mapping needs
/// (`bounded_where`), which the user may also have written inline
/// (`fn k<T: Copy>`): clippy's `multiple_bound_locations` would blame the
/// user for the macro's clause.
fn generic_lints(b: &Body) -> TokenStream {
    if b.generic() {
        quote!(, clippy::multiple_bound_locations)
    } else {
        quote!()
    }
}

/// The launch itself, `unsafe fn #shared(target, cfg, mapped arguments…)`,
/// shared by the blocking launcher and the queued form (`#name::on`); at
/// module level, so that the body's paths (`super::…`, `self::…`) mean what
/// they mean at the kernel. `select` picks the `KernelInfo` to launch.
fn shared_launch(b: &Body, shared: &Ident, parts: &Parts, select: &TokenStream) -> TokenStream {
    let generics = &b.kernel.func.sig.generics;
    let where_clause = &b.where_clause;
    let Parts { prep, specs, shared_params, .. } = parts;
    let same_len_check = same_len_check(&b.kernel.same_len);
    let statics = kernel_statics(b);
    let launch_ident = launch_ident();
    let target_ident = Ident::new("__offload_target", Span::mixed_site());
    let generic_lints = generic_lints(b);
    let (body_fn, host) = host_body(b, &parts.call_args);
    quote! {
        #[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
        #[doc(hidden)]
        #[allow(clippy::too_many_arguments, clippy::needless_lifetimes, non_snake_case, dead_code #generic_lints)]
        /// # Safety
        /// For a queued target, the arguments' memory stays valid until the
        /// launch has finished (`offload::__private::launch_to`).
        unsafe fn #shared #generics (
            #target_ident: ::offload::__private::Target<'_>,
            #launch_ident: impl ::offload::IntoLaunchConfig,
            #(#shared_params),*
        ) -> ::offload::Result<()> #where_clause {
            #body_fn

            #statics
            #select
            #(#prep)*
            #same_len_check
            let __offload_args: &[::offload::__private::ArgSpec<'_>] = &[#(#specs),*];
            let __offload_cfg = ::offload::IntoLaunchConfig::into_launch_config(#launch_ident);
            let __offload_host = #host;
            // SAFETY: the caller's contract.
            unsafe {
                ::offload::__private::launch_to(
                    #target_ident,
                    __offload_kernel,
                    __offload_cfg,
                    __offload_args,
                    __offload_host,
                )
            }
        }
    }
}

/// The body's function for the host fallback and what the launch runs per
/// runner of a block, calling it with `call_args`. A body without barriers
/// (that the macro sees) is a plain function whose threads run in a loop
/// with the body inlined (`__private::host_threads`); one with barriers is
/// an `async fn` whose barriers are awaits, run in phases
/// (`__private::host_phases`, `barriers`).
fn host_body(b: &Body, call_args: &[TokenStream]) -> (TokenStream, TokenStream) {
    let generics = &b.kernel.func.sig.generics;
    // The kernel's lint levels (`#[allow(…)]` and the like) reach its body.
    let lints = b
        .kernel
        .func
        .attrs
        .iter()
        .filter(|a| ["allow", "warn", "deny", "forbid", "expect"].iter().any(|l| a.path().is_ident(l)));
    let lints = quote!(#(#lints)*);
    let (body_params, where_clause) = (&b.params, &b.where_clause);
    let generic_lints = generic_lints(b);
    let same_len = same_len_assumed(&b.kernel.same_len);
    match &b.host_block {
        None if b.host_lockstep.is_some() => host_body_lockstep(b, call_args, (&lints, &generic_lints, &same_len)),
        None => {
            let body = &b.block;
            let body_fn = quote! {
                #lints
                #[allow(unused_mut, clippy::needless_lifetimes #generic_lints)]
                #[inline(always)]
                fn __offload_body #generics (#(#body_params),*) #where_clause #body
            };
            let host = quote!(::offload::__private::host_threads(#[inline(always)] move || {
                #same_len
                __offload_body(#(#call_args),*)
            }));
            (body_fn, host)
        }
        Some(body) => {
            let body_fn = quote! {
                #lints
                #[allow(unused_mut, clippy::needless_lifetimes #generic_lints)]
                #[inline(always)]
                async fn __offload_body #generics (#(#body_params),*) #where_clause #body
            };
            let host = quote!(::offload::__private::host_phases(move || {
                #same_len
                __offload_body(#(#call_args),*)
            }));
            (body_fn, host)
        }
    }
}

/// [`host_body`] for a body without barriers whose grid-stride loops can
/// run in lockstep: the plain body and, in an optimized build, its lockstep
/// copy, chosen per launch (`__private::lockstep_pays`). `(lints,
/// generic_lints, same_len)` as in [`host_body`].
fn host_body_lockstep(
    b: &Body,
    call_args: &[TokenStream],
    (lints, generic_lints, same_len): (&TokenStream, &TokenStream, &Option<TokenStream>),
) -> (TokenStream, TokenStream) {
    let generics = &b.kernel.func.sig.generics;
    let (body_params, where_clause) = (&b.params, &b.where_clause);
    // The lockstep copy exists only in optimized builds: in a build
    // with debug assertions (tests) it would cost every such kernel
    // a second body to check, for speed that does not matter there.
    let (phased, loops) = b.host_lockstep.as_ref().expect("matched");
    let body = &b.block;
    let names: Vec<&syn::Ident> = b.kernel.params.iter().map(|p| &p.name).collect();
    let lengths = loops.iter().map(|e| lockstep::loop_length(e, &names));
    let body_fn = quote! {
        #lints
        #[allow(unused_mut, clippy::needless_lifetimes #generic_lints)]
        #[inline(always)]
        fn __offload_body #generics (#(#body_params),*) #where_clause #body
        // The same code as `__offload_body`, whose warnings are shown:
        // none twice.
        #[cfg(not(debug_assertions))]
        #[allow(warnings)]
        #[inline(always)]
        async fn __offload_body_phased #generics (#(#body_params),*) #where_clause #phased
    };
    let host = quote!({
        #[cfg(not(debug_assertions))]
        let __offload_host = {
            let __offload_phased = ::offload::__private::lockstep_pays(&__offload_cfg, &[#(#lengths),*]);
            move || ::offload::__private::run_threads_or_phases(
                __offload_phased,
                #[inline(always)] || {
                    #same_len
                    __offload_body(#(#call_args),*)
                },
                || {
                    #same_len
                    __offload_body_phased(#(#call_args),*)
                },
            )
        };
        #[cfg(debug_assertions)]
        let __offload_host = ::offload::__private::host_threads(#[inline(always)] move || {
            #same_len
            __offload_body(#(#call_args),*)
        });
        __offload_host
    });
    (body_fn, host)
}

/// The kernel's `KernelInfo` static and its record: "symbol\tfile:line[\tgeneric]\0"
/// in section `offload_kernels`. After linking, `cargo offload` checks that
/// the image has every kernel a binary can launch (for a generic kernel,
/// every instantiation it finds in the binary's symbols).
fn kernel_statics(b: &Body) -> TokenStream {
    let sym = &b.sym;
    let param_names: Vec<String> = b.kernel.params.iter().map(|p| p.name.to_string()).collect();
    let base_info = kernel_info(&b.name.to_string(), sym, &param_names, &b.kernel.func);
    let record_tail = if b.generic() { "\tgeneric\0" } else { "\0" };
    quote! {
        static __OFFLOAD_KERNEL: ::offload::__private::KernelInfo = #base_info;
        const __OFFLOAD_RECORD: &str =
            ::core::concat!(#sym, "\t", ::core::file!(), ":", ::core::line!(), #record_tail);
        #[cfg_attr(target_os = "linux", link_section = "offload_kernels")]
        #[used]
        static __OFFLOAD_KERNEL_RECORD: [u8; __OFFLOAD_RECORD.len()] =
            ::offload::__private::record_bytes(__OFFLOAD_RECORD);
    }
}

/// The blocking launcher, `fn #name(cfg, <the user's parameters>)`: the
/// shared launch with the blocking target.
fn blocking_launcher(b: &Body, shared: &Ident, parts: &Parts) -> TokenStream {
    let func = &b.kernel.func;
    let (attrs, vis, name, generics, where_clause) =
        (&func.attrs, &func.vis, b.name, &func.sig.generics, &b.where_clause);
    let Parts { user_params, pass, .. } = parts;
    let type_args = &b.type_params;
    let launch_ident = launch_ident();
    let generic_lints = generic_lints(b);
    quote! {
        #(#attrs)*
        #[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
        #[allow(clippy::too_many_arguments, clippy::needless_lifetimes #generic_lints)]
        #vis fn #name #generics (
            #launch_ident: impl ::offload::IntoLaunchConfig,
            #(#user_params),*
        ) -> ::offload::Result<()> #where_clause {
            // SAFETY: a blocking launch returns after the kernel has
            // finished, while the arguments are still borrowed.
            unsafe { #shared::<#(#type_args),*>(::offload::__private::Target::blocking(), #launch_ident, #(#pass),*) }
        }
    }
}

/// The queued form: `enum <name> {}` with `fn on(q, cfg, …)`, in the type
/// namespace beside the launcher (docs/async.md, section 2): an empty enum,
/// not a module or unit struct, so that it lives in the kernel's own scope
/// (paths in the signature mean what they mean there, and a kernel declared
/// in a function body works) and takes no name in the value namespace. `q` is any
/// `offload::Enqueue` target (a queue, a scope, a capture), whose
/// `Memory` decides which slice arguments are accepted; `&T` / `&mut T`
/// parameters (host memory) need a scope. Host memory is borrowed for
/// `'__q`, the target's lifetime (for a scope, until it ends); a
/// `DeviceBuffer` only for the call (its pending work is tracked).
fn queued(b: &Body, shared: &Ident) -> TokenStream {
    let func = &b.kernel.func;
    let (vis, name) = (&func.vis, b.name);
    let q_lt = syn::Lifetime::new("'__q", Span::mixed_site());
    let q_ty = Ident::new("__Q", Span::mixed_site());
    let q_arg = Ident::new("__offload_queue", Span::mixed_site());
    let cfg_arg = launch_ident();
    let memory = quote!(<#q_ty as ::offload::Enqueue<#q_lt>>::Memory);
    let QueuedParams { params, unwrap, host_refs } = queued_params(b, &q_lt, &memory);
    // Lifetimes first, then the kernel's type parameters (so that
    // `scale::on::<f32, _>` names them), then the target's type.
    let generics = &func.sig.generics;
    let lifetimes = generics.lifetimes();
    let types = generics.type_params();
    let type_args = &b.type_params;
    let wc = queued_where(b, &memory, host_refs);
    let names: Vec<&Ident> = b.kernel.params.iter().map(|p| &p.name).collect();
    let cfgs: Vec<&syn::Attribute> = func.attrs.iter().filter(|a| a.path().is_ident("cfg")).collect();
    let (doc, on_doc) = queued_docs(name);
    quote! {
        #(#cfgs)*
        #[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
        #[doc = #doc]
        #[allow(non_camel_case_types, dead_code)]
        #vis enum #name {}

        #(#cfgs)*
        #[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
        #[allow(dead_code)]
        impl #name {
            #[doc = #on_doc]
            #[allow(clippy::too_many_arguments, clippy::needless_lifetimes)]
            pub fn on<#q_lt, #(#lifetimes,)* #(#types,)* #q_ty: ::offload::Enqueue<#q_lt> + ?::core::marker::Sized>(
                #q_arg: &#q_lt #q_ty,
                #cfg_arg: impl ::offload::IntoLaunchConfig,
                #(#params),*
            ) -> ::offload::Result<()> #wc {
                #(#unwrap)*
                // SAFETY: every argument that refers to memory is a tracked
                // buffer (outside a scope, `QueueSliceArg` admits nothing
                // else), or borrowed for `'__q`, the scope's lifetime, and
                // the scope waits for the launch before it ends.
                unsafe {
                    #shared::<#(#type_args),*>(
                        ::offload::Enqueue::target(#q_arg),
                        #cfg_arg,
                        #(#names),*
                    )
                }
            }
        }
    }
}

/// The queued form's parameters.
struct QueuedParams {
    /// `on`'s parameters after the target and the launch configuration.
    params: Vec<TokenStream>,
    /// Statements that map the slice arguments before the shared launch.
    unwrap: Vec<TokenStream>,
    /// Whether a parameter is `&T` / `&mut T` (host memory: only in a scope).
    host_refs: bool,
}

/// `on`'s parameters, by mapping: values and `&T` / `&mut T` as written
/// (references borrowed for `q_lt`), slices as `impl QueueSliceArg<q_lt,
/// T, memory>` / `QueueSliceArgMut`, mapped by `unwrap`. The queued form is
/// an item of the kernel's scope: types as written.
fn queued_params(b: &Body, q_lt: &syn::Lifetime, memory: &TokenStream) -> QueuedParams {
    let mut out = QueuedParams { params: Vec::new(), unwrap: Vec::new(), host_refs: false };
    for p in &b.kernel.params {
        let n = &p.name;
        let ty = &p.ty;
        out.params.push(match &p.mapping {
            Mapping::Value => quote!(#n: #ty),
            Mapping::RefTo(elem) => {
                out.host_refs = true;
                quote_spanned!(ty.span()=> #n: &#q_lt #elem)
            }
            Mapping::RefToFrom(elem) => {
                out.host_refs = true;
                quote_spanned!(ty.span()=> #n: &#q_lt mut #elem)
            }
            Mapping::SliceTo(elem) => {
                out.unwrap.push(quote!(let #n = ::offload::QueueSliceArg::map_in(&#n);));
                quote_spanned!(ty.span()=> #n: impl ::offload::QueueSliceArg<#q_lt, #elem, #memory>)
            }
            Mapping::SliceToFrom(elem) => {
                out.unwrap.push(quote!(let mut #n = #n; let #n = ::offload::QueueSliceArgMut::map_inout(&mut #n);));
                quote_spanned!(ty.span()=> #n: impl ::offload::QueueSliceArgMut<#q_lt, #elem, #memory>)
            }
        });
    }
    out
}

/// `on`'s `where` clause: the kernel's, and with `&T` / `&mut T` parameters
/// (`host_refs`) the bound that admits only a scope as the target.
fn queued_where(b: &Body, memory: &TokenStream, host_refs: bool) -> syn::WhereClause {
    let mut wc = b
        .where_clause
        .clone()
        .unwrap_or_else(|| syn::WhereClause { where_token: Default::default(), predicates: Default::default() });
    if host_refs {
        wc.predicates.push(syn::parse_quote!(#memory: ::offload::__private::HostReferences));
    }
    wc
}

/// The doc comments of the queued form's enum and of its `on`.
fn queued_docs(name: &Ident) -> (String, String) {
    let doc = format!(
        "Queued form of the kernel `{name}`: `{name}::on(&queue, cfg, …)` enqueues a launch and returns at once \
         (docs/async.md)."
    );
    let on_doc = format!(
        "Enqueues a launch of `{name}` on `q` (a `&Queue`, a scope or a capture) and returns at once; the \
         kernel's arguments follow the launch configuration. Outside a scope, slices must be `DeviceBuffer`s. \
         Errors of the launch's checks are returned now; errors while it runs arrive at the queue's next \
         synchronization."
    );
    (doc, on_doc)
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
    /// The shared launch function's parameters: slices arrive mapped
    /// (`MapIn` / `MapInOut`), so that its signature puts no bound on the
    /// element type (a wrong element type is reported once, at the
    /// launcher's parameter).
    shared_params: Vec<TokenStream>,
    /// What the launcher passes the shared function for each parameter.
    pass: Vec<TokenStream>,
}

impl Parts {
    /// Parameter `p` of a kernel with type parameters `type_params`. Slice
    /// parameters take anything that implements `SliceArg<T>` /
    /// `SliceArgMut<T>` (slices, Vec, arrays, DeviceBuffer); the rest keep
    /// the user's type. `shape`: the array a `&mut [T]` holds, if the
    /// kernel declares one.
    fn param(&mut self, p: &Param, type_params: &[Ident], shape: Option<&Shape>) {
        let n = &p.name;
        let ty = &p.ty;
        let lt = p.lifetime.clone().map(|l| quote!(#l));
        let mapped = format_ident!("__offload_map_{}", n);
        match &p.mapping {
            Mapping::Value => {
                self.user_params.push(quote!(#n: #ty));
                self.shared_params.push(quote!(#n: #ty));
                self.pass.push(quote!(#n));
                self.specs.push(quote_spanned!(ty.span()=> ::offload::__private::ArgSpec::value(&#n)));
                self.call_args.push(quote!(#n));
                // The same limit on the host, so that the error does not
                // depend on the pass (an inline constant where the type
                // mentions the kernel's type parameters).
                let place = if mentions(ty, type_params) { Place::Inline } else { Place::Item };
                self.prep.push(align::check(n, ty, ty, ty.span(), place));
            }
            Mapping::RefTo(_) => {
                self.user_params.push(quote!(#n: #ty));
                self.shared_params.push(quote!(#n: #ty));
                self.pass.push(quote!(#n));
                self.specs.push(quote_spanned!(ty.span()=> ::offload::__private::ArgSpec::reference(#n)));
                self.call_args.push(quote!(#n));
            }
            Mapping::SliceTo(elem) => {
                self.user_params.push(quote_spanned!(ty.span()=> #n: &#lt (impl ::offload::SliceArg<#elem> + ?Sized)));
                let lt = lt.clone().unwrap_or_else(|| quote!('_));
                self.shared_params.push(quote!(#n: ::offload::__private::MapIn<#lt, #elem>));
                self.pass.push(quote_spanned!(ty.span()=> ::offload::SliceArg::<#elem>::map_in(#n)));
                self.prep.push(quote!(let #mapped = #n;));
                self.specs.push(quote!(#mapped.spec()));
                // SAFETY: only the host fallback calls the closure, and there
                // every address is host memory.
                self.call_args.push(quote!(unsafe { #mapped.host_view() }));
            }
            Mapping::SliceToFrom(elem) => {
                self.user_params
                    .push(quote_spanned!(ty.span()=> #n: &#lt mut (impl ::offload::SliceArgMut<#elem> + ?Sized)));
                let lt = lt.clone().unwrap_or_else(|| quote!('_));
                self.shared_params.push(quote!(#n: ::offload::__private::MapInOut<#lt, #elem>));
                self.pass.push(quote_spanned!(ty.span()=> ::offload::SliceArgMut::<#elem>::map_inout(#n)));
                self.prep.push(quote!(let #mapped = #n;));
                self.specs.push(quote!(#mapped.spec()));
                self.slice_to_from_view(n, &mapped, shape);
            }
            Mapping::RefToFrom(_) => {
                self.user_params.push(quote!(#n: #ty));
                self.shared_params.push(quote!(#n: #ty));
                self.pass.push(quote!(#n));
                self.prep
                    .push(quote_spanned!(ty.span()=> let #mapped = ::offload::__private::MapInOut::reference(#n);));
                self.specs.push(quote!(#mapped.spec()));
                // SAFETY: as for `&mut [T]`.
                self.call_args.push(quote!(unsafe { #mapped.disjoint() }));
            }
        }
    }

    /// The host fallback's view of `&mut [T]` parameter `n`, mapped as
    /// `mapped`: a `DisjointSlice`, or with a `shape`, the launcher's check
    /// of the extents and a `DisjointSliceNd`.
    fn slice_to_from_view(&mut self, n: &Ident, mapped: &Ident, shape: Option<&Shape>) {
        let Some(shape) = shape else {
            // SAFETY: only the host fallback calls the closure, once per
            // simulated GPU thread, while the launch holds the exclusive
            // borrow `#mapped` came from; `DisjointSlice` gives each thread
            // only the elements it owns.
            self.call_args.push(quote!(unsafe { #mapped.disjoint() }));
            return;
        };
        let name = n.to_string();
        let labeled = body::labeled_extents(shape);
        self.prep.push(quote! {
            ::offload::__private::check_shape(__offload_kernel, #name, #mapped.len(), #labeled)?;
        });
        let extents = body::extents(shape);
        // SAFETY: as for `disjoint`, and `check_shape` returned before
        // the launch unless the extents, which every thread shares,
        // multiply to the slice's length.
        self.call_args.push(quote!(unsafe { #mapped.disjoint_nd(#extents) }));
    }
}

/// `same_len(a, b, …)` in the host fallback's body, as in the device's
/// entry point (`entry::Parts::same_len`): the launcher checked the mapped
/// lengths ([`same_len_check`]), so the body may assume them equal, and
/// the optimizer drops the bounds checks they make redundant.
fn same_len_assumed(names: &[Ident]) -> Option<TokenStream> {
    let maps: Vec<Ident> = names.iter().map(|n| format_ident!("__offload_map_{}", n)).collect();
    let (first, rest) = maps.split_first()?;
    Some(quote! {
        // SAFETY: the launcher returned an error instead of launching if
        // these lengths differed (`__private::check_same_len`).
        unsafe { #(::core::hint::assert_unchecked(#first.len() == #rest.len());)* }
    })
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
///
/// Its source span, for telling which kernel a GPU panic came from (the
/// CUDA backend's `queue::attrib`): `file!()` and `line!()` spelled at the
/// fn item's first token (after its attributes) and `line!()` at the
/// closing brace of its body. `line!()` and `file!()` report the span of
/// their own invocation, traced out of macro expansions to the outermost
/// call site, as `core::panic::Location` does for a panic in the body
/// (rustc `expand_line`, `const_caller_location`), so a panic written in
/// the body has a location inside `[line, last_line]` of `file`.
fn kernel_info(name: &str, sym: &str, params: &[String], func: &syn::ItemFn) -> TokenStream {
    let first = func.vis.to_token_stream().into_iter().chain(func.sig.to_token_stream()).next();
    let first = first.map_or_else(|| func.sig.fn_token.span, |t| t.span());
    let last = func.block.brace_token.span.close();
    let file = quote_spanned!(first=> ::core::file!());
    let line = quote_spanned!(first=> ::core::line!());
    let last_line = quote_spanned!(last=> ::core::line!());
    quote! {
        ::offload::__private::KernelInfo {
            name: #name,
            symbol: #sym,
            module_path: ::core::module_path!(),
            file: #file,
            line: #line,
            last_line: #last_line,
            instance: "",
            params: &[#(#params),*],
        }
    }
}

/// The statements that pick the `KernelInfo` to launch, and the marker
/// function of a generic kernel.
///
/// A generic kernel's launcher finds the instantiation's device symbol at
/// run time: `marker::<(T, …)>()`, a function that is never inlined,
/// returns `type_name` of the tuple of the type arguments, which keys the
/// symbol (`offload_image::symbol::instance`). `cargo offload` reads the
/// marker's instances back from the binary's v0 symbol names, which spell
/// the tuple the same way, so every instance must keep its own symbol. The
/// marker also passes the kernel's symbol through `black_box`: without it
/// the markers of two generic kernels instantiated with the same type
/// arguments have identical bodies, and LLVM's MergeFunctions (optimized
/// builds) folds them into one function with one symbol, so `cargo offload`
/// never saw the second kernel's instantiations and the GPU launch failed
/// with `Error::InstanceNotBuilt`.
fn select(b: &Body) -> (TokenStream, TokenStream) {
    if !b.generic() {
        return (quote!(let __offload_kernel = &__OFFLOAD_KERNEL;), quote!());
    }
    let marker = Ident::new(&b.sym, b.name.span());
    let sym = &b.sym;
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
            ::core::hint::black_box(#sym);
            ::core::hint::black_box(::core::any::type_name::<Args>())
        }
    };
    (select, marker_fn)
}
