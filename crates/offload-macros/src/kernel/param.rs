//! Classifying a kernel parameter: how its argument travels, decided by the
//! written type alone (as in rustc's `std::offload` and OpenMP's `map`
//! clause: `&[T]` to the device, `&mut [T]` to and from it), and the types
//! that can never travel (they own host memory).

use crate::ctxt::Ctxt;
use quote::{format_ident, quote};
use syn::{FnArg, Ident, Pat, Type};

/// How an argument travels, decided by its written type.
pub(super) enum Mapping {
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

impl Mapping {
    /// The type that crosses to the device: the element of a slice or
    /// reference, else `ty` itself.
    pub(super) fn moved<'a>(&'a self, ty: &'a Type) -> &'a Type {
        match self {
            Mapping::Value => ty,
            Mapping::SliceTo(e) | Mapping::SliceToFrom(e) | Mapping::RefTo(e) | Mapping::RefToFrom(e) => e,
        }
    }

    /// `&[T]` or `&mut [T]`.
    pub(super) fn is_slice(&self) -> bool {
        matches!(self, Mapping::SliceTo(_) | Mapping::SliceToFrom(_))
    }
}

/// One kernel parameter, classified.
pub(super) struct Param {
    /// Its name (`__offload_unused_<i>` for `_`).
    pub(super) name: Ident,
    /// `mut x: T`: the body may rebind the parameter.
    pub(super) mutable: bool,
    /// The type as written.
    pub(super) ty: Type,
    /// How its argument travels.
    pub(super) mapping: Mapping,
    /// Lifetime written on the reference, if any (kept on `DisjointSlice`).
    pub(super) lifetime: Option<syn::Lifetime>,
}

/// Classifies parameter `i` of a kernel, recording in `cx` why it cannot be
/// one: `self`, a pattern other than a plain name or `_`, a type that owns
/// host memory. `None` if it has no name to generate code with.
pub(super) fn classify(cx: &mut Ctxt, i: usize, input: &FnArg) -> Option<Param> {
    let pt = match input {
        FnArg::Receiver(r) => {
            cx.error_spanned_by(r, "a kernel is a free function and cannot take `self`");
            return None;
        }
        FnArg::Typed(pt) => pt,
    };
    let (name, mutable) = match &*pt.pat {
        Pat::Ident(pi) if pi.subpat.is_none() && pi.by_ref.is_none() => (pi.ident.clone(), pi.mutability.is_some()),
        Pat::Wild(_) => (format_ident!("__offload_unused_{}", i), false),
        other => {
            cx.error_spanned_by(other, "kernel parameters must be plain names, e.g. `x: &[f32]`");
            return None;
        }
    };
    let ty = (*pt.ty).clone();
    let (mapping, lifetime) = mapping(&ty);
    if let Some(owner) = owning_std_type(mapping.moved(&ty)) {
        cx.error_spanned_by(
            &pt.ty,
            format!(
                "`{}` cannot be moved to the device: `{owner}` owns host memory. Kernel parameters take plain data \
                 (`DeviceCopy`) by value, `&[T]` / `&T` (copied to the device) or `&mut [T]` / `&mut T` (copied \
                 to and from it): declare a `Vec<T>` parameter as `&[T]` or `&mut [T]` and pass `&v` or `&mut v`",
                spelled(&ty)
            ),
        );
    }
    Some(Param { name, mutable, ty, mapping, lifetime })
}

/// The type as an error message shows it, close to how it was written
/// (`&mut [Box<u8>]`, `std::collections::HashMap<u32, u32>`, `[Rc<u8>; 2]`)
/// rather than as spaced tokens.
pub(super) fn spelled(ty: &Type) -> String {
    quote!(#ty)
        .to_string()
        .replace(" :: ", "::")
        .replace(":: ", "::")
        .replace(" < ", "<")
        .replace(" >", ">")
        .replace("< ", "<")
        .replace("& ", "&")
        .replace(" ,", ",")
        .replace(" ;", ";")
}

/// The mapping of a parameter of type `ty`, and the lifetime written on its
/// reference. Parentheses and invisible groups (from `macro_rules!`) around
/// a type are looked through.
fn mapping(ty: &Type) -> (Mapping, Option<syn::Lifetime>) {
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
const OWNING: &[&str] = &[
    "Vec",
    "String",
    "Box",
    "HashMap",
    "HashSet",
    "BTreeMap",
    "BTreeSet",
    "VecDeque",
    "Rc",
    "Arc",
    "LinkedList",
    "BinaryHeap",
];

/// The owning type `ty` is (or is an array of), by its last path segment.
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

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(ty: &str) -> (&'static str, String) {
        let ty: Type = syn::parse_str(ty).unwrap();
        let (m, lt) = mapping(&ty);
        let name = match &m {
            Mapping::Value => "value",
            Mapping::SliceTo(_) => "slice to",
            Mapping::SliceToFrom(_) => "slice to/from",
            Mapping::RefTo(_) => "ref to",
            Mapping::RefToFrom(_) => "ref to/from",
        };
        let moved = m.moved(&ty);
        let lt = lt.map(|l| format!("{l} ")).unwrap_or_default();
        (name, format!("{lt}{}", quote!(#moved)))
    }

    #[test]
    fn maps_by_written_type() {
        assert_eq!(kind("f32"), ("value", "f32".into()));
        assert_eq!(kind("[u8; 4]"), ("value", "[u8 ; 4]".into()));
        assert_eq!(kind("&[f32]"), ("slice to", "f32".into()));
        assert_eq!(kind("&'a [f32]"), ("slice to", "'a f32".into()));
        assert_eq!(kind("&mut [[f32; 2]]"), ("slice to/from", "[f32 ; 2]".into()));
        assert_eq!(kind("&mut ([f64])"), ("slice to/from", "f64".into()));
        assert_eq!(kind("&S"), ("ref to", "S".into()));
        assert_eq!(kind("&mut u32"), ("ref to/from", "u32".into()));
        assert_eq!(kind("(&u32)"), ("ref to", "u32".into()));
    }

    #[test]
    fn spells_types_as_written() {
        let spelled = |t: &str| spelled(&syn::parse_str(t).unwrap());
        assert_eq!(spelled("&mut [Box<u8>]"), "&mut [Box<u8>]");
        assert_eq!(spelled("std::collections::HashMap<u32, u32>"), "std::collections::HashMap<u32, u32>");
        assert_eq!(spelled("[Rc<u8>; 2]"), "[Rc<u8>; 2]");
        assert_eq!(spelled("::dep::Pair<Vec<f32>>"), "::dep::Pair<Vec<f32>>");
        assert_eq!(spelled("&'a T"), "&'a T");
    }

    #[test]
    fn owning_types_by_last_segment() {
        let owner = |t: &str| owning_std_type(&syn::parse_str(t).unwrap());
        assert_eq!(owner("Vec<f32>").as_deref(), Some("Vec"));
        assert_eq!(owner("std::collections::HashMap<u32, u32>").as_deref(), Some("HashMap"));
        assert_eq!(owner("[Rc<u8>; 2]").as_deref(), Some("Rc"));
        assert_eq!(owner("(Box<u8>)").as_deref(), Some("Box"));
        assert_eq!(owner("<T as Tr>::Vec"), None);
        assert_eq!(owner("VecLike"), None);
        assert_eq!(owner("(Vec<u8>, u32)"), None);
    }
}
