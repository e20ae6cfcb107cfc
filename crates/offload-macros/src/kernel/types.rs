//! Rewriting and inspecting types for generic kernels.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::visit_mut::VisitMut;
use syn::{Ident, Type};

/// `ty` with the type parameters of `subst` replaced by their types
/// (`T` → `f32`), everywhere in it.
pub(super) fn substitute(ty: &Type, subst: &[(Ident, Type)]) -> Type {
    let mut t = ty.clone();
    Subst(subst).visit_type_mut(&mut t);
    t
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
/// crate `krate`: its own crate's name becomes `crate`, another crate's gets
/// a leading `::`. Primitive types and other one-segment paths stay.
pub(super) fn root_paths(ty: &mut Type, krate: &str) {
    RootPaths(krate).visit_type_mut(ty);
}

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

/// Whether `ty` mentions one of `params` (as the first segment of a path).
pub(super) fn mentions(ty: &Type, params: &[Ident]) -> bool {
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

/// `ty` with every token at `span` (so that errors about it point there).
pub(super) fn respan(ty: &Type, span: Span) -> Type {
    let tokens: TokenStream = quote!(#ty)
        .into_iter()
        .map(|mut t| {
            t.set_span(span);
            t
        })
        .collect();
    syn::parse2(tokens).unwrap_or_else(|_| ty.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ty(s: &str) -> Type {
        syn::parse_str(s).unwrap()
    }

    fn text(t: &Type) -> String {
        quote!(#t).to_string().replace(' ', "")
    }

    #[test]
    fn substitutes_parameters_only() {
        let subst = [(Ident::new("T", Span::call_site()), ty("f32"))];
        assert_eq!(text(&substitute(&ty("Pair<T, [T; 2]>"), &subst)), "Pair<f32,[f32;2]>");
        // `T::Assoc` and `m::T` are not the parameter itself.
        assert_eq!(text(&substitute(&ty("(T::Assoc, m::T)"), &subst)), "(T::Assoc,m::T)");
    }

    #[test]
    fn roots_paths_at_the_crate() {
        let mut t = ty("(my_crate::m::Vec3, dep::Pair<my_crate::X>, f32)");
        root_paths(&mut t, "my_crate");
        assert_eq!(text(&t), "(crate::m::Vec3,::dep::Pair<crate::X>,f32)");
    }

    #[test]
    fn finds_mentions() {
        let params = [Ident::new("T", Span::call_site())];
        assert!(mentions(&ty("[T; 2]"), &params));
        assert!(mentions(&ty("Pair<u8, T::Assoc>"), &params));
        assert!(!mentions(&ty("::T"), &params));
        assert!(!mentions(&ty("f32"), &params));
    }
}
