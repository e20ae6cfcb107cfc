//! `#[offload::kernel]`: parse → check → generate.
//!
//! One annotated `fn` becomes, on the device (`target_arch = "nvptx64"` or
//! `"amdgpu"`):
//! - the body, as an ordinary `fn` of the same name in which each `&mut [T]` /
//!   `&mut T` parameter is an `offload::DisjointSlice<T>`;
//! - exactly one exported `extern "gpu-kernel"` entry point with a
//!   deterministic symbol (see [`symbol`]) whose parameters are the mapped
//!   arguments (a slice is a pointer and a length) and a hidden launch shape
//!   (see `offload::__private::kernel_entry`), which calls the body.
//!
//! and on the host:
//! - a launcher of the same name taking `(launch: impl Into<LaunchConfig>,
//!   <the user's parameters>)` and returning `offload::Result<()>`; it maps the
//!   arguments by type and either launches the device entry point or runs the
//!   body on the CPU (the host fallback), once per simulated GPU thread.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use offload_image::symbol::{hash32, instance, instances_file};
use syn::visit_mut::VisitMut;
use syn::{FnArg, GenericParam, Ident, ItemFn, Pat, ReturnType, Type};

/// How an argument travels, decided by its written type (as in rustc's
/// `std::offload`: `&[T]` to the device, `&mut [T]` to and from).
enum Mapping {
    /// A `DeviceCopy` value, passed by value as a kernel parameter.
    Value,
    /// `&[T]`: copied to the device; the kernel gets a pointer and a length.
    SliceTo(Type),
    /// `&mut [T]`: copied to the device and back; the body sees a `DisjointSlice`.
    SliceToFrom(Type),
    /// `&T`: copied to the device; the kernel gets a pointer.
    RefTo(Type),
    /// `&mut T`: copied to and from; the body sees a one-element `DisjointSlice`.
    RefToFrom(Type),
}

struct Param {
    name: Ident,
    /// `mut x: T`: the body may rebind the parameter.
    mutable: bool,
    ty: Type,
    mapping: Mapping,
    /// Lifetime written on the reference, if any (kept on `DisjointSlice`).
    lifetime: Option<syn::Lifetime>,
}

struct Kernel {
    func: ItemFn,
    params: Vec<Param>,
    /// `#[kernel(same_len(a, b, …))]`: slice parameters of equal length.
    same_len: Vec<Ident>,
}

pub fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    let func: ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(e) => {
            let mut err = syn::Error::new(
                e.span(),
                "`#[offload::kernel]` applies to a free function: `fn name(args) { body }`",
            );
            err.combine(e);
            let err = err.to_compile_error();
            return quote! { #err #item };
        }
    };
    match check(attr, func.clone()) {
        Ok(kernel) => generate(&kernel),
        Err(err) => {
            // Keep the user's function's signature so that the rest of the
            // crate still resolves and the IDE keeps working; only the error
            // is new. Its body is dropped: written for the kernel (a
            // `&mut [T]` is a `DisjointSlice` there), it would add errors
            // such as "no method `grid_stride` on `&mut [f32]`" that are
            // not the problem. On the host only: the device pass may not
            // even resolve its types.
            let err = err.to_compile_error();
            let mut stub = func;
            *stub.block = syn::parse_quote!({
                ::core::unreachable!("this kernel did not compile")
            });
            quote! {
                #err
                #[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
                #[allow(dead_code, unused_variables, unused_mut)]
                #stub
            }
        }
    }
}

fn push(errors: &mut Option<syn::Error>, e: syn::Error) {
    match errors {
        Some(all) => all.combine(e),
        None => *errors = Some(e),
    }
}

fn check(attr: TokenStream, func: ItemFn) -> syn::Result<Kernel> {
    let mut errors = None;
    let same_len = match parse_attr(attr) {
        Ok(v) => v,
        Err(e) => {
            push(&mut errors, e);
            Vec::new()
        }
    };
    let sig = &func.sig;
    if let Some(t) = &sig.constness {
        push(&mut errors, syn::Error::new_spanned(t, "a kernel cannot be `const`"));
    }
    if let Some(t) = &sig.asyncness {
        push(&mut errors, syn::Error::new_spanned(t, "a kernel cannot be `async`"));
    }
    if let Some(t) = &sig.unsafety {
        push(
            &mut errors,
            syn::Error::new_spanned(
                t,
                "a kernel cannot be `unsafe fn`: write `unsafe { … }` blocks inside the body instead",
            ),
        );
    }
    if let Some(abi) = &sig.abi {
        push(&mut errors, syn::Error::new_spanned(abi, "a kernel cannot declare an ABI: `#[offload::kernel]` generates the entry point"));
    }
    if let Some(v) = &sig.variadic {
        push(&mut errors, syn::Error::new_spanned(v, "a kernel cannot be variadic"));
    }
    for gp in &sig.generics.params {
        if let GenericParam::Const(c) = gp {
            push(
                &mut errors,
                syn::Error::new_spanned(
                    c,
                    "const generic kernels are not supported yet: pass the value as a kernel argument",
                ),
            );
        }
    }
    if let ReturnType::Type(_, ty) = &sig.output {
        let unit = matches!(&**ty, Type::Tuple(t) if t.elems.is_empty());
        if !unit {
            push(
                &mut errors,
                syn::Error::new_spanned(
                    ty,
                    "a kernel returns nothing: write results through a `&mut [T]` or `&mut T` argument",
                ),
            );
        }
    }
    let mut params = Vec::new();
    for (i, input) in sig.inputs.iter().enumerate() {
        let pt = match input {
            FnArg::Receiver(r) => {
                push(&mut errors, syn::Error::new_spanned(r, "a kernel is a free function and cannot take `self`"));
                continue;
            }
            FnArg::Typed(pt) => pt,
        };
        let (name, mutable) = match &*pt.pat {
            Pat::Ident(pi) if pi.subpat.is_none() && pi.by_ref.is_none() => (pi.ident.clone(), pi.mutability.is_some()),
            Pat::Wild(_) => (format_ident!("__offload_unused_{}", i), false),
            other => {
                push(
                    &mut errors,
                    syn::Error::new_spanned(other, "kernel parameters must be plain names, e.g. `x: &[f32]`"),
                );
                continue;
            }
        };
        let ty = (*pt.ty).clone();
        let (mapping, lifetime) = classify(&ty);
        let moved = match &mapping {
            Mapping::Value => &ty,
            Mapping::SliceTo(e) | Mapping::SliceToFrom(e) | Mapping::RefTo(e) | Mapping::RefToFrom(e) => e,
        };
        if let Some(owner) = owning_std_type(moved) {
            push(
                &mut errors,
                syn::Error::new_spanned(
                    &pt.ty,
                    format!(
                        "`{}` cannot be moved to the device: `{owner}` owns host memory. Kernel parameters take plain data \
                         (`DeviceCopy`) by value, `&[T]` / `&T` (copied to the device) or `&mut [T]` / `&mut T` (copied \
                         to and from it): declare a `Vec<T>` parameter as `&[T]` or `&mut [T]` and pass `&v` or `&mut v`",
                        quote!(#ty)
                            .to_string()
                            .replace(" < ", "<")
                            .replace(" >", ">")
                            .replace("< ", "<")
                            .replace("& ", "&")
                            .replace(" ,", ",")
                    ),
                ),
            );
        }
        params.push(Param { name, mutable, ty, mapping, lifetime });
    }
    // The entry point names a slice's pointer and length `<name>__ptr` and
    // `<name>__len`: another parameter of that name would clash there.
    for p in &params {
        for q in &params {
            let clash = [format!("{}__ptr", q.name), format!("{}__len", q.name)];
            if clash.contains(&p.name.to_string()) {
                push(
                    &mut errors,
                    syn::Error::new_spanned(
                        &p.name,
                        format!(
                            "`{}` clashes with the name the generated entry point gives `{}`'s pointer or length: \
                             rename this parameter",
                            p.name, q.name
                        ),
                    ),
                );
            }
        }
    }
    for n in &same_len {
        match params.iter().find(|p| p.name == *n) {
            Some(p) if matches!(p.mapping, Mapping::SliceTo(_) | Mapping::SliceToFrom(_)) => {}
            Some(_) => push(
                &mut errors,
                syn::Error::new_spanned(n, format!("`same_len` names slices: `{n}` is not a `&[T]` or `&mut [T]` parameter")),
            ),
            None => push(&mut errors, syn::Error::new_spanned(n, format!("`same_len`: the kernel has no parameter `{n}`"))),
        }
    }
    match errors {
        Some(e) => Err(e),
        None => Ok(Kernel { func, params, same_len }),
    }
}

/// The kernel attribute's arguments: nothing, or `same_len(a, b, …)` with at
/// least two distinct names.
fn parse_attr(attr: TokenStream) -> syn::Result<Vec<Ident>> {
    const USAGE: &str = "`#[offload::kernel]` takes no arguments or `same_len(a, b, …)`: slice parameters \
                         of equal length, which the launcher checks before the launch";
    if attr.is_empty() {
        return Ok(Vec::new());
    }
    let list: syn::MetaList = syn::parse2(attr.clone()).map_err(|_| syn::Error::new_spanned(&attr, USAGE))?;
    if !list.path.is_ident("same_len") {
        return Err(syn::Error::new_spanned(&list.path, USAGE));
    }
    let names = list
        .parse_args_with(syn::punctuated::Punctuated::<Ident, syn::Token![,]>::parse_terminated)
        .map_err(|e| syn::Error::new(e.span(), USAGE))?;
    let names: Vec<Ident> = names.into_iter().collect();
    if names.len() < 2 {
        return Err(syn::Error::new_spanned(&list, "`same_len` needs at least two slice parameters"));
    }
    for (i, n) in names.iter().enumerate() {
        if names[..i].contains(n) {
            return Err(syn::Error::new_spanned(n, format!("`same_len` names `{n}` twice")));
        }
    }
    Ok(names)
}

fn classify(ty: &Type) -> (Mapping, Option<syn::Lifetime>) {
    let ty = strip_groups(ty);
    if let Type::Reference(r) = ty {
        let lt = r.lifetime.clone();
        let elem = strip_groups(&r.elem);
        return match (elem, r.mutability.is_some()) {
            (Type::Slice(s), false) => (Mapping::SliceTo((*s.elem).clone()), lt),
            (Type::Slice(s), true) => (Mapping::SliceToFrom((*s.elem).clone()), lt),
            (t, false) => (Mapping::RefTo(t.clone()), lt),
            (t, true) => (Mapping::RefToFrom(t.clone()), lt),
        };
    }
    (Mapping::Value, None)
}

/// Types of `std`/`alloc` that own heap memory and so can never be a kernel
/// argument; recognized by name so that the error is the same in the device
/// pass (where they do not even resolve) and on the host.
const OWNING: &[&str] = &["Vec", "String", "Box", "HashMap", "HashSet", "BTreeMap", "BTreeSet", "VecDeque", "Rc", "Arc", "LinkedList", "BinaryHeap"];

fn owning_std_type(ty: &Type) -> Option<String> {
    match strip_groups(ty) {
        Type::Path(p) if p.qself.is_none() => {
            let last = p.path.segments.last()?.ident.to_string();
            OWNING.contains(&last.as_str()).then_some(last)
        }
        Type::Array(a) => owning_std_type(&a.elem),
        _ => None,
    }
}

fn strip_groups(ty: &Type) -> &Type {
    match ty {
        Type::Group(g) => strip_groups(&g.elem),
        Type::Paren(p) => strip_groups(&p.elem),
        t => t,
    }
}

/// The kernel's exported symbol:
/// `__offload_kernel_<crate>_<fn>_<hash>`, where the hash covers the crate
/// name, the source file, line and column of the function's name, and the
/// name. Deterministic (the same source gives the same symbol in the device
/// and host passes) and collision-free across modules of a crate (two kernels
/// cannot share a file position). Only `[A-Za-z0-9_]` is used, which PTX and
/// AMD GPU ELF symbols both accept unchanged.
fn symbol(name: &Ident) -> String {
    let krate = std::env::var("CARGO_CRATE_NAME").unwrap_or_else(|_| "crate".to_string());
    let (file, line, col) = location(name.span());
    let fname = name.to_string();
    let fname = fname.trim_start_matches("r#");
    let h = hash32(&[&krate, &file, &line.to_string(), &col.to_string(), fname]);
    format!("__offload_kernel_{krate}_{}_{h:08x}", ascii_name(fname))
}

/// A Rust identifier as a PTX/ELF-safe name: ASCII letters, digits and `_`
/// stay; any other character becomes `u<hex>` (`größe` → `gru00f6u00dfe`).
/// The hash in the symbol keeps distinct names distinct.
pub(crate) fn ascii_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            out.push(c);
        } else {
            out.push_str(&format!("u{:04x}", c as u32));
        }
    }
    out
}

pub(crate) fn location(span: Span) -> (String, usize, usize) {
    if proc_macro::is_available() {
        let s = span.unwrap();
        (s.file(), s.line(), s.column())
    } else {
        (String::new(), 0, 0)
    }
}

/// Replaces a generic kernel's type parameters by the types of one
/// instantiation (`T` → `f32`), in every type it visits.
struct Subst<'a>(&'a [(Ident, Type)]);

impl VisitMut for Subst<'_> {
    fn visit_type_mut(&mut self, ty: &mut Type) {
        if let Type::Path(tp) = ty {
            if tp.qself.is_none() && tp.path.leading_colon.is_none() && tp.path.segments.len() == 1 {
                let seg = &tp.path.segments[0];
                if seg.arguments.is_none() {
                    if let Some((_, to)) = self.0.iter().find(|(id, _)| *id == seg.ident) {
                        *ty = to.clone();
                        return;
                    }
                }
            }
        }
        syn::visit_mut::visit_type_mut(self, ty);
    }
}

/// Makes a type path that the host binary's symbols spell from the crate
/// root (`my_crate::m::Vec3`, `dep::Pair<f32>`) resolvable in the kernel's
/// crate: its own crate's name becomes `crate`, another crate's gets a
/// leading `::`. Primitive types and other one-segment paths stay.
struct RootPaths<'a>(&'a str);

impl VisitMut for RootPaths<'_> {
    fn visit_type_path_mut(&mut self, tp: &mut syn::TypePath) {
        if tp.qself.is_none() && tp.path.leading_colon.is_none() && tp.path.segments.len() >= 2 {
            let first = &mut tp.path.segments[0];
            if first.ident == self.0 {
                first.ident = Ident::new("crate", first.ident.span());
            } else {
                tp.path.leading_colon = Some(Default::default());
            }
        }
        syn::visit_mut::visit_type_path_mut(self, tp);
    }
}

/// Whether `ty` mentions one of `params` (as a one-segment path).
fn mentions(ty: &Type, params: &[Ident]) -> bool {
    struct Find<'a>(&'a [Ident], bool);
    impl<'ast> syn::visit::Visit<'ast> for Find<'_> {
        fn visit_type_path(&mut self, tp: &'ast syn::TypePath) {
            if tp.qself.is_none() && tp.path.leading_colon.is_none() {
                if let Some(first) = tp.path.segments.first() {
                    if self.0.contains(&first.ident) {
                        self.1 = true;
                    }
                }
            }
            syn::visit::visit_type_path(self, tp);
        }
    }
    let mut f = Find(params, false);
    syn::visit::Visit::visit_type(&mut f, ty);
    f.1
}

/// One instantiation of a generic kernel that host code uses.
struct Instance {
    /// The type arguments, as types resolvable in the kernel's crate.
    types: Vec<Type>,
    /// The device symbol, `<base>_<hash of the type arguments' tuple>`.
    symbol: String,
    /// Used only by this crate's own unit-test binary: compiled under
    /// `cfg(test)` only, where the types it names (often in a
    /// `#[cfg(test)] mod tests`) exist.
    test_only: bool,
}

/// The instantiations of the generic kernel `sym` that `cargo offload`
/// collected from the host binaries (`$__OFFLOAD_GENERIC_DIR/<sym>.txt`:
/// lines `<type_name of the tuple of type arguments>\t<binary>`), with the
/// list file, which the device code includes so that cargo recompiles this
/// crate's device pass when the list changes. The host side never reads it.
/// Outside `cargo offload` there is no list (and no device pass).
fn instances(sym: &str, name: &Ident, n_params: usize) -> (Option<String>, Vec<Instance>, Option<syn::Error>) {
    let Some(dir) = std::env::var_os("__OFFLOAD_GENERIC_DIR") else { return (None, Vec::new(), None) };
    let path = instances_file(std::path::Path::new(&dir), sym);
    // Created empty on first sight: the file must exist for `include_bytes!`,
    // and cargo then notices when `cargo offload` fills it in.
    let _ = std::fs::create_dir_all(&dir);
    let _ = std::fs::OpenOptions::new().create(true).append(true).open(&path);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            let msg = format!("cannot read the instantiations of generic kernel `{name}` from {}: {e}", path.display());
            return (None, Vec::new(), Some(syn::Error::new(name.span(), msg)));
        }
    };
    let krate = std::env::var("CARGO_CRATE_NAME").unwrap_or_default();
    let mut out = Vec::new();
    let mut errors: Option<syn::Error> = None;
    // Lines are `<type_name of the tuple of type arguments>\t<binary>`; a
    // tuple used by several binaries appears once per binary. A binary is
    // `<crate name> <root source file>[ --test]` (`cargo offload`'s
    // `binary_key`): this crate's unit-test binary has this crate's name and
    // ` --test`.
    let own_tests = |bin: &str| bin.ends_with(" --test") && bin.split(' ').next() == Some(krate.as_str());
    let mut users: std::collections::BTreeMap<&str, bool> = std::collections::BTreeMap::new();
    for line in text.lines() {
        let mut f = line.split('\t');
        let key = f.next().unwrap_or("").trim();
        if key.is_empty() {
            continue;
        }
        let test_only = own_tests(f.next().unwrap_or("").trim());
        let e = users.entry(key).or_insert(true);
        *e = *e && test_only;
    }
    for (key, test_only) in users {
        match syn::parse_str::<Type>(key) {
            Ok(Type::Tuple(t)) => {
                // A stale line (the kernel had another number of type
                // parameters when the binary was linked) is skipped.
                if t.elems.len() != n_params {
                    continue;
                }
                let mut types: Vec<Type> = t.elems.into_iter().collect();
                for t in &mut types {
                    RootPaths(&krate).visit_type_mut(t);
                    // Spans at the kernel's name: errors about a type the
                    // kernel's crate cannot name point there.
                    *t = respan(t, name.span());
                }
                out.push(Instance { types, symbol: instance(sym, key), test_only });
            }
            // Not a tuple: a line of another format, skipped.
            Ok(_) => {}
            Err(_) => push(
                &mut errors,
                syn::Error::new(
                    name.span(),
                    format!(
                        "the host code launches generic kernel `{name}` with the type arguments `{key}`, which \
                         cannot be written here as Rust types; give the kernel's type parameters types that its \
                         crate can name"
                    ),
                ),
            ),
        }
    }
    (Some(path.display().to_string()), out, errors)
}

fn respan(ty: &Type, span: Span) -> Type {
    let tokens: TokenStream = quote!(#ty)
        .into_iter()
        .map(|mut t| {
            t.set_span(span);
            t
        })
        .collect();
    syn::parse2(tokens).unwrap_or_else(|_| ty.clone())
}

/// The largest alignment, in bytes, of a kernel parameter passed by value:
/// rustc's `gpu-kernel` ABI for nvptx64 passes an aggregate as a byte array
/// aligned to at most 16 (`compiler/rustc_target/src/callconv/nvptx64.rs`,
/// `compute_ptx_kernel_abi_info`) and stops with an internal compiler error
/// ("Align is given as power of 2 no larger than 16 bytes") on a larger
/// alignment.
const MAX_BY_VALUE_ALIGN: usize = 16;

/// A constant that fails to evaluate, with a message naming the parameter,
/// if the by-value parameter `name: ty` is aligned to more than
/// [`MAX_BY_VALUE_ALIGN`] bytes. Alignment can come from any field's type,
/// so only the compiler knows it: the assertion is evaluated with the other
/// constants of the crate, before code generation, in the host pass and in
/// the device pass (where it must come before rustc computes the entry
/// point's ABI). `written` is the type as the user wrote it, `ty` the one
/// checked (a generic kernel's instantiation on the device).
fn by_value_align_check(name: &Ident, written: &Type, ty: &Type, span: Span, item: bool) -> TokenStream {
    let written = quote!(#written).to_string().replace(" < ", "<").replace(" >", ">").replace(" ,", ",");
    let checked = quote!(#ty).to_string().replace(" < ", "<").replace(" >", ">").replace(" ,", ",");
    let with = if checked == written { String::new() } else { format!(" (here `{checked}`)") };
    let msg = format!(
        "kernel parameter `{name}: {written}`{with} cannot be passed by value: its type is aligned to more than \
         {MAX_BY_VALUE_ALIGN} bytes, the most a GPU kernel parameter can be (rustc's nvptx64 kernel ABI). Pass it by \
         reference (`{name}: &{written}`, copied to the device) or lower its `#[repr(align(N))]` to 16 or less"
    );
    let assert = quote_spanned!(span=> ::core::assert!(::core::mem::align_of::<#ty>() <= #MAX_BY_VALUE_ALIGN, #msg));
    if item {
        quote_spanned!(span=> const _: () = #assert;)
    } else {
        quote_spanned!(span=> const { #assert };)
    }
}

/// The device entry point's parameters, the arguments it passes to the
/// body, the compile-time checks of the mapped types (statements), and
/// constants to evaluate before code generation (items); with the types of
/// `subst` in place of the type parameters of a generic kernel.
fn entry_parts(k: &Kernel, subst: &[(Ident, Type)]) -> EntryParts {
    let mut entry_params = Vec::new();
    let mut entry_args = Vec::new();
    let mut entry_checks = Vec::new();
    let mut entry_consts = Vec::new();
    let sub = |t: &Type| {
        let mut t = t.clone();
        Subst(subst).visit_type_mut(&mut t);
        t
    };
    for p in &k.params {
        let n = &p.name;
        let ptr = format_ident!("{}__ptr", n);
        let len = format_ident!("{}__len", n);
        let span = p.ty.span();
        let ty = sub(&p.ty);
        match &p.mapping {
            Mapping::Value => {
                entry_params.push(quote!(#n: #ty));
                entry_args.push(quote!(#n));
                entry_checks.push(quote_spanned!(span=> ::offload::__private::assert_device_copy::<#ty>();));
                // Concrete here (a generic kernel's entries are per
                // instantiation), so an item: evaluated before rustc
                // computes the entry's ABI.
                entry_consts.push(by_value_align_check(n, &p.ty, &ty, span, true));
            }
            Mapping::SliceTo(elem) => {
                let elem = sub(elem);
                // The pointer is typed `&[T; 0]`: rustc marks it `noalias
                // readonly nonnull` (no `dereferenceable`, so an empty slice's
                // dangling pointer is valid), which lets the backend load through
                // the read-only data cache (`ld.global.nc`) as nvcc does for
                // `const T* __restrict__`. See `__private::slice_from_param`.
                entry_params.push(quote!(#ptr: &[#elem; 0]));
                entry_params.push(quote!(#len: usize));
                // SAFETY: the launcher mapped `len` initialized elements at `ptr`
                // (a dangling, aligned pointer when `len == 0`) to the device for
                // the whole launch, and nothing writes them.
                entry_args.push(quote!(unsafe { ::offload::__private::slice_from_param(#ptr, #len) }));
                entry_checks.push(quote_spanned!(span=> ::offload::__private::assert_map_elem::<#elem>();));
            }
            Mapping::SliceToFrom(elem) => {
                let elem = sub(elem);
                entry_params.push(quote!(#ptr: *mut #elem));
                entry_params.push(quote!(#len: usize));
                // SAFETY: the launcher mapped `len` elements at `ptr` to and from
                // the device, exclusively for this launch.
                entry_args.push(quote!(unsafe { ::offload::__private::disjoint_from_raw(#ptr, #len) }));
                entry_checks.push(quote_spanned!(span=> ::offload::__private::assert_device_copy::<#elem>();));
            }
            Mapping::RefTo(elem) => {
                let elem = sub(elem);
                // `&T` directly: `noalias readonly`, as for `SliceTo`.
                entry_params.push(quote!(#n: &#elem));
                entry_args.push(quote!(#n));
                entry_checks.push(quote_spanned!(span=> ::offload::__private::assert_map_elem::<#elem>();));
            }
            Mapping::RefToFrom(elem) => {
                let elem = sub(elem);
                entry_params.push(quote!(#ptr: *mut #elem));
                // SAFETY: the launcher mapped one element to and from `ptr`,
                // exclusively for this launch.
                entry_args.push(quote!(unsafe { ::offload::__private::disjoint_from_raw(#ptr, 1) }));
                entry_checks.push(quote_spanned!(span=> ::offload::__private::assert_device_copy::<#elem>();));
            }
        }
    }
    // `same_len`: the launcher checked the lengths (`check_same_len`).
    let lens: Vec<Ident> = k.same_len.iter().map(|n| format_ident!("{}__len", n)).collect();
    if let Some((first, rest)) = lens.split_first() {
        entry_checks.push(quote! {
            // SAFETY: the launcher returned an error instead of launching if
            // these lengths differed (`__private::check_same_len`).
            unsafe { #(::core::hint::assert_unchecked(#first == #rest);)* }
        });
    }
    (entry_params, entry_args, entry_checks, entry_consts)
}

/// What [`entry_parts`] returns.
type EntryParts = (Vec<TokenStream>, Vec<TokenStream>, Vec<TokenStream>, Vec<TokenStream>);

fn generate(k: &Kernel) -> TokenStream {
    let func = &k.func;
    let attrs = &func.attrs;
    let vis = &func.vis;
    let name = &func.sig.ident;
    let generics = &func.sig.generics;
    let where_clause = &generics.where_clause;
    let body = &func.block;
    let name_str = name.to_string();
    let sym = symbol(name);
    let entry = format_ident!("__offload_entry_{}", name);
    let type_params: Vec<Ident> = generics.type_params().map(|t| t.ident.clone()).collect();
    let generic = !type_params.is_empty();
    // Each mapped type that mentions a type parameter gets the bound the
    // mapping needs, on the launcher (so that an instantiation that cannot
    // exist on the device, `scale::<String>`, is an error at the user's
    // call) and on the bodies (whose `DisjointSlice<T>` needs it too).
    let bounded_where = generic.then(|| {
        let mut wc = where_clause.clone().unwrap_or_else(|| syn::WhereClause {
            where_token: Default::default(),
            predicates: Default::default(),
        });
        let mut seen = std::collections::HashSet::new();
        for p in &k.params {
            let (moved, bound) = match &p.mapping {
                Mapping::Value => (&p.ty, quote!(::offload::DeviceCopy)),
                Mapping::SliceToFrom(e) | Mapping::RefToFrom(e) => (e, quote!(::offload::DeviceCopy)),
                Mapping::SliceTo(e) | Mapping::RefTo(e) => (e, quote!(::offload::MapElem)),
            };
            if mentions(moved, &type_params) && seen.insert(quote!(#moved: #bound).to_string()) {
                wc.predicates.push(syn::parse_quote_spanned!(moved.span()=> #moved: #bound));
            }
        }
        wc
    });
    let where_clause = if generic { &bounded_where } else { where_clause };
    let (list_file, instances, instance_errors) =
        if generic { instances(&sym, name, type_params.len()) } else { (None, Vec::new(), None) };
    // Errors about instantiations are the device pass's: the host never
    // reads the list.
    let instance_errors = instance_errors.map(|e| {
        let e = e.to_compile_error();
        quote! {
            #[cfg(any(target_arch = "nvptx64", target_arch = "amdgpu"))]
            const _: () = { #e };
        }
    });
    // The list of instantiations is an input of this crate's device pass
    // (cargo's dep-info then recompiles it when the list changes).
    let track = list_file.map(|f| {
        quote! {
            #[cfg(any(target_arch = "nvptx64", target_arch = "amdgpu"))]
            const _: &[u8] = ::core::include_bytes!(#f);
        }
    });

    // Parameters of the body as the kernel code sees them (both sides).
    let body_params = k.params.iter().map(|p| {
        let n = &p.name;
        let ty = &p.ty;
        let lt = p.lifetime.clone().map(|l| quote!(#l)).unwrap_or_else(|| quote!('_));
        match &p.mapping {
            Mapping::SliceToFrom(elem) | Mapping::RefToFrom(elem) => {
                quote_spanned!(ty.span()=> mut #n: ::offload::DisjointSlice<#lt, #elem>)
            }
            _ if p.mutable => quote!(mut #n: #ty),
            _ => quote!(#n: #ty),
        }
    });
    let body_params: Vec<_> = body_params.collect();

    // ---- device side ----------------------------------------------------
    let entries: Vec<TokenStream> = if generic {
        instances
            .iter()
            .map(|inst| {
                let subst: Vec<(Ident, Type)> = type_params.iter().cloned().zip(inst.types.iter().cloned()).collect();
                let (params, args, checks, consts) = entry_parts(k, &subst);
                let isym = &inst.symbol;
                let types = &inst.types;
                let test_only = inst.test_only.then(|| quote!(#[cfg(test)]));
                quote! {
                    #[cfg(any(target_arch = "nvptx64", target_arch = "amdgpu"))]
                    #test_only
                    const _: () = {
                        #(#consts)*
                        ::offload::__private::kernel_entry! {
                            #isym, #entry, (#(#params),*), {
                                #(#checks)*
                                #name::<#(#types),*>(#(#args),*)
                            }
                        }
                    };
                }
            })
            .collect()
    } else {
        let (params, args, checks, consts) = entry_parts(k, &[]);
        vec![quote! {
            #[cfg(any(target_arch = "nvptx64", target_arch = "amdgpu"))]
            const _: () = {
                #(#consts)*
                ::offload::__private::kernel_entry! {
                    #sym, #entry, (#(#params),*), {
                        #(#checks)*
                        #name(#(#args),*)
                    }
                }
            };
        }]
    };

    let device = quote! {
        #(#attrs)*
        #[cfg(any(target_arch = "nvptx64", target_arch = "amdgpu"))]
        #[allow(unused_mut, clippy::needless_lifetimes)]
        // Inlined into both copies of the entry point's body, the 1-D one
        // and the general one.
        #[inline(always)]
        #vis fn #name #generics (#(#body_params),*) #where_clause #body

        #(#entries)*
    };

    // ---- host side ------------------------------------------------------
    // Slice parameters take anything that implements `SliceArg<T>` /
    // `SliceArgMut<T>` (slices, Vec, arrays, DeviceBuffer); the rest keep
    // the user's type.
    let mut prep = Vec::new();
    let mut specs = Vec::new();
    let mut call_args = Vec::new();
    let mut user_params = Vec::new();
    for p in &k.params {
        let n = &p.name;
        let ty = &p.ty;
        let lt = p.lifetime.clone().map(|l| quote!(#l));
        let mapped = format_ident!("__offload_map_{}", n);
        match &p.mapping {
            Mapping::Value => {
                user_params.push(quote!(#n: #ty));
                specs.push(quote_spanned!(ty.span()=> ::offload::__private::ArgSpec::value(&#n)));
                call_args.push(quote!(#n));
                // The same limit on the host, so that the error does not
                // depend on the pass (an inline constant where the type
                // mentions the kernel's type parameters).
                prep.push(by_value_align_check(n, ty, ty, ty.span(), !mentions(ty, &type_params)));
            }
            Mapping::RefTo(_) => {
                user_params.push(quote!(#n: #ty));
                specs.push(quote_spanned!(ty.span()=> ::offload::__private::ArgSpec::reference(#n)));
                call_args.push(quote!(#n));
            }
            Mapping::SliceTo(elem) => {
                user_params.push(quote_spanned!(ty.span()=> #n: &#lt (impl ::offload::SliceArg<#elem> + ?Sized)));
                prep.push(quote_spanned!(ty.span()=> let #mapped = ::offload::SliceArg::<#elem>::map_in(#n);));
                specs.push(quote!(#mapped.spec()));
                // SAFETY: only the host fallback calls the closure, and there
                // every address is host memory.
                call_args.push(quote!(unsafe { #mapped.host_view() }));
            }
            Mapping::SliceToFrom(elem) => {
                user_params.push(quote_spanned!(ty.span()=> #n: &#lt mut (impl ::offload::SliceArgMut<#elem> + ?Sized)));
                prep.push(quote_spanned!(ty.span()=> let #mapped = ::offload::SliceArgMut::<#elem>::map_inout(#n);));
                specs.push(quote!(#mapped.spec()));
                // SAFETY: only the host fallback calls the closure, once per
                // simulated GPU thread, while the launch holds the exclusive
                // borrow `#mapped` came from; `DisjointSlice` gives each thread
                // only the elements it owns.
                call_args.push(quote!(unsafe { #mapped.disjoint() }));
            }
            Mapping::RefToFrom(_) => {
                user_params.push(quote!(#n: #ty));
                prep.push(quote_spanned!(ty.span()=> let #mapped = ::offload::__private::MapInOut::reference(#n);));
                specs.push(quote!(#mapped.spec()));
                // SAFETY: as for `&mut [T]`.
                call_args.push(quote!(unsafe { #mapped.disjoint() }));
            }
        }
    }
    let same_len_check = (!k.same_len.is_empty()).then(|| {
        let names = k.same_len.iter().map(|n| n.to_string());
        let maps = k.same_len.iter().map(|n| format_ident!("__offload_map_{}", n));
        quote! {
            ::offload::__private::check_same_len(__offload_kernel, &[#(#names),*], &[#(#maps.len()),*])?;
        }
    });
    let launch_ident = Ident::new("__offload_launch", Span::mixed_site());
    let base_info = quote! {
        ::offload::__private::KernelInfo {
            name: #name_str,
            symbol: #sym,
            module_path: ::core::module_path!(),
            file: ::core::file!(),
            line: ::core::line!(),
            instance: "",
        }
    };
    // "symbol\tfile:line[\tgeneric]\0" in section `offload_kernels`: after
    // linking, `cargo offload` checks that the image has every kernel a
    // binary can launch (for a generic kernel, every instantiation it finds
    // in the binary's symbols).
    let record_tail = if generic { "\tgeneric\0" } else { "\0" };

    // A generic kernel's launcher finds the instantiation's device symbol at
    // run time: `marker::<(T, …)>()`, a function that is never inlined or
    // merged with another instance, returns `type_name` of the tuple of the
    // type arguments, which keys the symbol (`offload_image::symbol::
    // instance`). `cargo offload` reads the marker's instances back from the
    // binary's v0 symbol names, which spell the tuple the same way.
    let marker = Ident::new(&sym, name.span());
    let (select, marker_fn) = if generic {
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
    } else {
        (quote!(let __offload_kernel = &__OFFLOAD_KERNEL;), quote!())
    };

    let host = quote! {
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
    };

    quote! { #instance_errors #track #device #host }
}

#[cfg(test)]
mod tests {
    use super::*;
    use offload_image::symbol::fnv1a;

    fn errors_of(src: &str) -> String {
        let item: TokenStream = src.parse().unwrap();
        match check(TokenStream::new(), syn::parse2(item).unwrap()) {
            Ok(_) => String::new(),
            Err(e) => e.into_iter().map(|e| e.to_string()).collect::<Vec<_>>().join("\n"),
        }
    }

    fn attr_errors_of(attr: &str, src: &str) -> String {
        let item: TokenStream = src.parse().unwrap();
        match check(attr.parse().unwrap(), syn::parse2(item).unwrap()) {
            Ok(k) => k.same_len.iter().map(|n| n.to_string()).collect::<Vec<_>>().join(","),
            Err(e) => e.into_iter().map(|e| e.to_string()).collect::<Vec<_>>().join("\n"),
        }
    }

    #[test]
    fn generated_entry_names_are_reserved() {
        let e = errors_of("fn k(x: &[f32], x__len: usize, y: &mut [u8], y__ptr: u64) {}");
        assert!(e.contains("`x__len` clashes with the name the generated entry point gives `x`'s pointer or length"), "{e}");
        assert!(e.contains("`y__ptr` clashes"), "{e}");
        assert_eq!(errors_of("fn k(x: &[f32], x_len: usize, len: usize) {}"), "");
    }

    #[test]
    fn same_len_names_two_or_more_slice_parameters() {
        let f = "fn k(a: &[f32], b: &[f32], c: &mut [f32], s: f32, r: &f32) {}";
        assert_eq!(attr_errors_of("same_len(a, c)", f), "a,c");
        assert_eq!(attr_errors_of("same_len(c, a, b,)", f), "c,a,b");
        assert!(attr_errors_of("same_len(a)", f).contains("at least two slice parameters"));
        assert!(attr_errors_of("same_len(a, s)", f).contains("`s` is not a `&[T]` or `&mut [T]` parameter"));
        assert!(attr_errors_of("same_len(a, r)", f).contains("`r` is not a `&[T]`"));
        assert!(attr_errors_of("same_len(a, z)", f).contains("the kernel has no parameter `z`"));
        assert!(attr_errors_of("same_len(a, a)", f).contains("names `a` twice"));
        for bad in ["same_length(a, b)", "same_len = 1", "same_len(a + b)", "fast"] {
            let e = attr_errors_of(bad, f);
            assert!(e.contains("takes no arguments or `same_len(a, b, …)`"), "{bad}: {e}");
        }
    }

    #[test]
    fn accepts_mapped_types() {
        assert_eq!(errors_of("fn k<'a>(a: f32, x: &'a [f32], y: &mut [f32], s: &S, t: &mut u32) {}"), "");
    }

    #[test]
    fn rejects_each_unsupported_form() {
        let e = errors_of("async unsafe fn k<T, const N: usize>(self, (a, b): (f32, f32)) -> f32 { 0.0 }");
        assert!(e.contains("cannot be `async`"), "{e}");
        assert!(e.contains("cannot be `unsafe fn`"), "{e}");
        // Type parameters are fine (generic kernels); const ones are not yet.
        assert!(e.contains("const generic kernels are not supported yet"), "{e}");
        assert_eq!(e.matches("generic").count(), 1, "{e}");
        assert!(e.contains("cannot take `self`"), "{e}");
        assert!(e.contains("plain names"), "{e}");
        assert!(e.contains("returns nothing"), "{e}");
    }

    #[test]
    fn rejects_owning_types_by_name() {
        let e = errors_of("fn k(v: Vec<f32>, s: &String, b: &mut [Box<u8>], ok: &[f32]) {}");
        assert!(e.contains("`Vec<f32>` cannot be moved to the device: `Vec` owns host memory"), "{e}");
        assert!(e.contains("`&String` cannot be moved to the device: `String` owns host memory"), "{e}");
        assert!(e.contains("declare a `Vec<T>` parameter as `&[T]`"), "{e}");
        assert!(e.contains("`Box` owns host memory"), "{e}");
        assert_eq!(e.matches("cannot be moved").count(), 3, "{e}");
    }

    #[test]
    fn symbols_are_ascii() {
        assert_eq!(ascii_name("saxpy_2"), "saxpy_2");
        assert_eq!(ascii_name("größe"), "gru00f6u00dfe");
        assert_eq!(ascii_name("π"), "u03c0");
    }

    #[test]
    fn symbol_is_stable_and_distinct() {
        let a = fnv1a(&["c", "src/a.rs", "3", "4", "add"]);
        assert_eq!(a, fnv1a(&["c", "src/a.rs", "3", "4", "add"]));
        assert_ne!(a, fnv1a(&["c", "src/b.rs", "3", "4", "add"]));
        // part boundaries matter: ("ab","c") != ("a","bc")
        assert_ne!(fnv1a(&["ab", "c"]), fnv1a(&["a", "bc"]));
    }
}
