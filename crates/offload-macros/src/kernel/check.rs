//! The rules a kernel's signature must follow, checked all at once: every
//! violation is a `syn::Error` on the offending token.

use super::attr::{self, Extent, Shape};
use super::param::{self, Mapping, Param};
use crate::ctxt::Ctxt;
use proc_macro2::TokenStream;
use syn::{GenericParam, Ident, ItemFn, ReturnType, Signature, Type};

/// A kernel that passed the checks: what generation works from.
pub(super) struct Kernel {
    /// The user's function, unchanged.
    pub(super) func: ItemFn,
    /// Its parameters, in order.
    pub(super) params: Vec<Param>,
    /// `#[kernel(same_len(a, b, …))]`: slice parameters of equal length.
    pub(super) same_len: Vec<Ident>,
    /// `#[kernel(shape(out = (w, h)))]`: `&mut [T]` parameters that hold a
    /// 2-D or 3-D array.
    pub(super) shapes: Vec<Shape>,
}

impl Kernel {
    /// The shape declared for parameter `name`, if any.
    pub(super) fn shape_of(&self, name: &Ident) -> Option<&Shape> {
        self.shapes.iter().find(|s| s.name == *name)
    }
}

/// Checks the attribute's arguments `attr` and the function `func`.
///
/// # Errors
/// Every problem found, combined, in source order of the checks: the
/// attribute, the signature's qualifiers, generics and return type, each
/// parameter, clashes with generated names, `same_len`'s names, `shape`'s
/// names.
pub(super) fn check(attr: TokenStream, func: ItemFn) -> syn::Result<Kernel> {
    let mut cx = Ctxt::new();
    let args = attr::parse(attr).unwrap_or_else(|e| {
        cx.push(e);
        attr::Args::default()
    });
    signature(&mut cx, &func.sig);
    let params: Vec<Param> =
        func.sig.inputs.iter().enumerate().filter_map(|(i, input)| param::classify(&mut cx, i, input)).collect();
    reserved_names(&mut cx, &params);
    same_len_names(&mut cx, &args.same_len, &params);
    shapes(&mut cx, &args.shapes, &params);
    cx.check()?;
    Ok(Kernel { func, params, same_len: args.same_len, shapes: args.shapes })
}

/// What a kernel's signature cannot have: `const`, `async`, `unsafe`, an
/// ABI, C variadics, const generics, a return value.
fn signature(cx: &mut Ctxt, sig: &Signature) {
    if let Some(t) = &sig.constness {
        cx.error_spanned_by(t, "a kernel cannot be `const`");
    }
    if let Some(t) = &sig.asyncness {
        cx.error_spanned_by(t, "a kernel cannot be `async`");
    }
    if let Some(t) = &sig.unsafety {
        cx.error_spanned_by(t, "a kernel cannot be `unsafe fn`: write `unsafe { … }` blocks inside the body instead");
    }
    if let Some(abi) = &sig.abi {
        cx.error_spanned_by(abi, "a kernel cannot declare an ABI: `#[offload::kernel]` generates the entry point");
    }
    if let Some(v) = &sig.variadic {
        cx.error_spanned_by(v, "a kernel cannot be variadic");
    }
    for gp in &sig.generics.params {
        if let GenericParam::Const(c) = gp {
            cx.error_spanned_by(c, "const generic kernels are not supported yet: pass the value as a kernel argument");
        }
    }
    if let ReturnType::Type(_, ty) = &sig.output {
        let unit = matches!(&**ty, Type::Tuple(t) if t.elems.is_empty());
        if !unit {
            cx.error_spanned_by(
                ty,
                "a kernel returns nothing: write results through a `&mut [T]` or `&mut T` argument",
            );
        }
    }
}

/// The entry point names a slice's pointer and length `<name>__ptr` and
/// `<name>__len`: another parameter of that name would clash there.
fn reserved_names(cx: &mut Ctxt, params: &[Param]) {
    for p in params {
        for q in params {
            let clash = [format!("{}__ptr", q.name), format!("{}__len", q.name)];
            if clash.contains(&p.name.to_string()) {
                cx.error_spanned_by(
                    &p.name,
                    format!(
                        "`{}` clashes with the name the generated entry point gives `{}`'s pointer or length: \
                         rename this parameter",
                        p.name, q.name
                    ),
                );
            }
        }
    }
}

/// Each name in `same_len(…)` must be a slice parameter.
fn same_len_names(cx: &mut Ctxt, names: &[Ident], params: &[Param]) {
    for n in names {
        match params.iter().find(|p| p.name == *n) {
            Some(p) if p.mapping.is_slice() => {}
            Some(_) => cx
                .error_spanned_by(n, format!("`same_len` names slices: `{n}` is not a `&[T]` or `&mut [T]` parameter")),
            None => cx.error_spanned_by(n, format!("`same_len`: the kernel has no parameter `{n}`")),
        }
    }
}

/// Each name in `shape(…)` must be a `&mut [T]` parameter, and each extent
/// a by-value parameter or a literal: a value every thread of the launch
/// shares, so that all threads' views agree on who owns what.
fn shapes(cx: &mut Ctxt, shapes: &[Shape], params: &[Param]) {
    for s in shapes {
        match params.iter().find(|p| p.name == s.name) {
            Some(p) if matches!(p.mapping, Mapping::SliceToFrom(_)) => {}
            Some(_) => cx.error_spanned_by(
                &s.name,
                format!(
                    "`shape` declares the array a `&mut [T]` parameter holds: `{}` is not a `&mut [T]` parameter",
                    s.name
                ),
            ),
            None => cx.error_spanned_by(&s.name, format!("`shape`: the kernel has no parameter `{}`", s.name)),
        }
        for e in &s.extents {
            let Extent::Param(n) = e else { continue };
            match params.iter().find(|p| p.name == *n) {
                Some(p) if matches!(p.mapping, Mapping::Value) => {}
                Some(_) => cx.error_spanned_by(
                    n,
                    format!(
                        "an extent of `shape` is a by-value integer parameter (or a literal): `{n}` is a reference"
                    ),
                ),
                None => cx.error_spanned_by(
                    n,
                    format!(
                        "`shape`: the kernel has no parameter `{n}`; extents are by-value integer parameters or \
                         literals, which every thread of the launch shares"
                    ),
                ),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same_len(attr: &str) -> Vec<String> {
        let f = syn::parse_str("fn k(a: &[f32], b: &[f32], c: &mut [f32], s: f32, r: &f32) {}").unwrap();
        let k = check(attr.parse().unwrap(), f).unwrap_or_else(|e| panic!("{e}"));
        k.same_len.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn accepts_every_mapping_and_same_len_of_slices() {
        let f = syn::parse_str("fn k<'a, T>(a: f32, x: &'a [f32], y: &mut [T], s: &S, t: &mut u32, _: u8) {}").unwrap();
        let k = check(TokenStream::new(), f).unwrap_or_else(|e| panic!("{e}"));
        let names: Vec<String> = k.params.iter().map(|p| p.name.to_string()).collect();
        assert_eq!(names, ["a", "x", "y", "s", "t", "__offload_unused_5"]);
        assert_eq!(same_len("same_len(a, c)"), ["a", "c"]);
        assert_eq!(same_len("same_len(c, a, b,)"), ["c", "a", "b"]);
    }

    #[test]
    fn reports_every_error_of_a_kernel() {
        let f = syn::parse_str("async unsafe fn k<T, const N: usize>(self, (a, b): (f32, f32), v: Vec<u8>) -> f32 {}")
            .unwrap();
        let e = check("same_len(a)".parse().unwrap(), f).err().unwrap();
        assert_eq!(e.into_iter().count(), 8);
    }

    #[test]
    fn shapes_name_a_mut_slice_and_extents_name_values() {
        let f: ItemFn = syn::parse_str("fn k(w: u32, h: usize, x: &[f32], r: &u32, out: &mut [f32]) {}").unwrap();
        let check = |a: &str| check(a.parse().unwrap(), f.clone());
        let k = check("shape(out = (w, h))").unwrap_or_else(|e| panic!("{e}"));
        assert!(k.shape_of(&k.params[4].name).is_some() && k.shape_of(&k.params[0].name).is_none());
        assert!(check("same_len(x, out), shape(out = (w, 4, h))").is_ok());
        let errors = |a: &str| -> Vec<String> { check(a).err().unwrap().into_iter().map(|e| e.to_string()).collect() };
        let e = errors("shape(x = (w, h), nope = (w, h), out = (r, z))");
        assert_eq!(e.len(), 4, "{e:?}");
        assert!(e[0].contains("`x` is not a `&mut [T]` parameter"), "{e:?}");
        assert!(e[1].contains("no parameter `nope`"), "{e:?}");
        assert!(e[2].contains("`r` is a reference"), "{e:?}");
        assert!(e[3].contains("no parameter `z`"), "{e:?}");
    }
}
