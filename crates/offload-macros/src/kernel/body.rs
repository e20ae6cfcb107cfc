//! What the device entry point and the host launcher share: the kernel's
//! symbol, its type parameters, its `where` clause with the bounds the
//! mappings need, and the parameters of its body as the kernel code sees
//! them (a `&mut [T]` / `&mut T` is an `offload::DisjointSlice<T>` there).

use super::attr::{Extent, Shape};
use super::barriers;
use super::check::Kernel;
use super::panics;
use super::param::{Mapping, Param};
use super::types::mentions;
use crate::symbol;
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Ident, PredicateType, Token, WhereClause, WherePredicate};

/// The pieces of one kernel that both sides generate from.
pub(super) struct Body<'a> {
    /// The checked kernel.
    pub(super) kernel: &'a Kernel,
    /// Its name (the body's and the launcher's).
    pub(super) name: &'a Ident,
    /// The device symbol (`symbol::kernel`); a generic kernel's base symbol.
    pub(super) sym: String,
    /// The type parameters, in order (empty: not generic).
    pub(super) type_params: Vec<Ident>,
    /// The user's `where` clause; for a generic kernel, with the mapping
    /// bounds added ([`bounded_where`]).
    pub(super) where_clause: Option<WhereClause>,
    /// The body's parameters.
    pub(super) params: Vec<TokenStream>,
    /// The body's block ([`block`]).
    pub(super) block: TokenStream,
    /// The block for the device: [`block`] with its panic messages'
    /// arguments recorded as values ([`panics::rewrite`]).
    pub(super) device_block: TokenStream,
    /// The block for the host fallback if the body has barriers that the
    /// macro sees: [`block`] with each awaited ([`barriers::rewrite`]), the
    /// body of an `async fn`; `None`: the host runs [`Body::block`].
    pub(super) host_block: Option<TokenStream>,
    /// For a body without such barriers whose grid-stride loops can run in
    /// lockstep: that body as an `async fn`'s ([`barriers::lockstep_variant`])
    /// and what each loop iterates over.
    pub(super) host_lockstep: Option<(TokenStream, Vec<syn::Expr>)>,
}

impl Body<'_> {
    /// Whether the kernel has type parameters.
    pub(super) fn generic(&self) -> bool {
        !self.type_params.is_empty()
    }
}

/// The shared pieces of kernel `k`.
pub(super) fn of(k: &Kernel) -> Body<'_> {
    let name = &k.func.sig.ident;
    let generics = &k.func.sig.generics;
    let type_params: Vec<Ident> = generics.type_params().map(|t| t.ident.clone()).collect();
    let where_clause =
        if type_params.is_empty() { generics.where_clause.clone() } else { Some(bounded_where(k, &type_params)) };
    Body {
        kernel: k,
        name,
        sym: symbol::kernel(name),
        type_params,
        where_clause,
        params: k.params.iter().map(|p| body_param(p, k.shape_of(&p.name))).collect(),
        block: block(&k.func.block, k),
        device_block: block(&panics::rewrite(&k.func.block), k),
        host_block: barriers::rewrite(&k.func.block).map(|b| block(&b, k)),
        host_lockstep: barriers::lockstep_variant(&k.func.block).map(|(b, loops)| (block(&b, k), loops)),
    }
}

/// A generic kernel's `where` clause plus, for each mapped type that
/// mentions a type parameter, the bound its mapping needs (once each): on
/// the launcher, so that an instantiation that cannot exist on the device
/// (`scale::<String>`) is an error at the user's call, and on the bodies,
/// whose `DisjointSlice<T>` needs it too.
fn bounded_where(k: &Kernel, type_params: &[Ident]) -> WhereClause {
    let mut wc = k
        .func
        .sig
        .generics
        .where_clause
        .clone()
        .unwrap_or_else(|| WhereClause { where_token: Default::default(), predicates: Default::default() });
    let mut seen = std::collections::HashSet::new();
    for p in &k.params {
        let bound: syn::TypeParamBound = match &p.mapping {
            Mapping::Value | Mapping::SliceToFrom(_) | Mapping::RefToFrom(_) => {
                syn::parse_quote!(::offload::DeviceCopy)
            }
            Mapping::SliceTo(_) | Mapping::RefTo(_) => syn::parse_quote!(::offload::MapElem),
        };
        let moved = p.mapping.moved(&p.ty);
        if mentions(moved, type_params) && seen.insert(quote!(#moved: #bound).to_string()) {
            // `moved: bound`, built rather than parsed so that no type can
            // make the macro panic; the `:` at the type, as the error span.
            wc.predicates.push(WherePredicate::Type(PredicateType {
                lifetimes: None,
                bounded_ty: moved.clone(),
                colon_token: Token![:](moved.span()),
                bounds: std::iter::once(bound).collect(),
            }));
        }
    }
    wc
}

/// A parameter of the body: `&mut` mappings become `DisjointSlice`s (with
/// the reference's lifetime, else `'_`), or `DisjointSliceNd`s where the
/// kernel declares a `shape`; the rest keep the written type.
fn body_param(p: &Param, shape: Option<&Shape>) -> TokenStream {
    let n = &p.name;
    let ty = &p.ty;
    let lt = p.lifetime.clone().map(|l| quote!(#l)).unwrap_or_else(|| quote!('_));
    match &p.mapping {
        Mapping::SliceToFrom(elem) if shape.is_some() => {
            let n_dims = shape.map_or(0, |s| s.extents.len());
            quote_spanned!(ty.span()=> mut #n: ::offload::DisjointSliceNd<#lt, #elem, #n_dims>)
        }
        Mapping::SliceToFrom(elem) | Mapping::RefToFrom(elem) => {
            quote_spanned!(ty.span()=> mut #n: ::offload::DisjointSlice<#lt, #elem>)
        }
        _ if p.mutable => quote!(mut #n: #ty),
        _ => quote!(#n: #ty),
    }
}

/// The user's `block`, with the parameters that are extents of a `shape`
/// marked used: the view carries them (`extents()`), so a body need not
/// read them, and rustc's `unused_variables` would blame it.
fn block(block: &syn::Block, k: &Kernel) -> TokenStream {
    let names: Vec<&Ident> = k
        .shapes
        .iter()
        .flat_map(|s| &s.extents)
        .filter_map(|e| match e {
            Extent::Param(n) => Some(n),
            Extent::Lit(_) => None,
        })
        .collect();
    if names.is_empty() {
        return quote!(#block);
    }
    quote!({ let _ = (#(&#names,)*); #block })
}

/// One extent of `shape` as a `usize` expression, spanned at its token (a
/// parameter that is not an unsigned integer is an error there).
fn extent(e: &Extent) -> TokenStream {
    match e {
        Extent::Param(n) => quote_spanned!(n.span()=> ::offload::__private::extent(#n)),
        Extent::Lit(l) => quote_spanned!(l.span()=> (#l as usize)),
    }
}

/// `shape`'s extents as an array expression, `[usize; N]`, x first.
pub(super) fn extents(shape: &Shape) -> TokenStream {
    let es = shape.extents.iter().map(extent);
    quote!([#(#es),*])
}

/// `shape`'s extents with their labels (the parameter's name or the
/// literal), for the launcher's check: `&[("w", w as usize), …]`.
pub(super) fn labeled_extents(shape: &Shape) -> TokenStream {
    let es = shape.extents.iter().map(|e| {
        let label = match e {
            Extent::Param(n) => n.to_string(),
            Extent::Lit(l) => l.to_string(),
        };
        let value = extent(e);
        quote!((#label, #value))
    });
    quote!(&[#(#es),*])
}
