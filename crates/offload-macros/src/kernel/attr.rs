//! Parsing the kernel attribute's arguments: nothing, or a comma-separated
//! list of `same_len(a, b, …)` and `shape(out = (width, height), …)`.

use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Ident, LitInt, Token};

/// What the attribute accepts, repeated in every error about it.
const USAGE: &str = "`#[offload::kernel]` takes no arguments, `same_len(a, b, …)`: slice parameters of equal \
                     length, which the launcher checks before the launch, or `shape(out = (width, height))` / \
                     `shape(out = (nx, ny, nz))`: a `&mut [T]` parameter that holds a 2-D or 3-D array, owned by \
                     coordinates";

/// The kernel attribute's arguments.
#[derive(Default)]
pub(super) struct Args {
    /// `same_len(a, b, …)`: at least two distinct names.
    pub(super) same_len: Vec<Ident>,
    /// `shape(…)`'s entries, in order.
    pub(super) shapes: Vec<Shape>,
}

/// `name = (e0, e1[, e2])` of `shape(…)`: the parameter `name` holds a
/// row-major array with these extents, x first.
pub(super) struct Shape {
    /// The `&mut [T]` parameter.
    pub(super) name: Ident,
    /// Two or three extents.
    pub(super) extents: Vec<Extent>,
}

/// One extent of a [`Shape`]: a by-value parameter (checked with the
/// signature, `check::shapes`) or an integer literal, values every thread
/// of a launch shares.
pub(super) enum Extent {
    /// A parameter's name.
    Param(Ident),
    /// An unsuffixed or unsigned integer literal.
    Lit(LitInt),
}

impl Parse for Extent {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        if input.peek(LitInt) {
            Ok(Extent::Lit(input.parse()?))
        } else {
            Ok(Extent::Param(input.parse()?))
        }
    }
}

impl Parse for Shape {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let name: Ident = input.parse()?;
        input.parse::<Token![=]>()?;
        let inner;
        let parens = syn::parenthesized!(inner in input);
        let extents: Vec<Extent> = Punctuated::<Extent, Token![,]>::parse_terminated(&inner)?.into_iter().collect();
        if !(2..=3).contains(&extents.len()) {
            return Err(syn::Error::new(
                parens.span.join(),
                format!(
                    "`shape({name} = …)` takes 2 extents, `(width, height)`, or 3, `(nx, ny, nz)`; got {}",
                    extents.len()
                ),
            ));
        }
        Ok(Shape { name, extents })
    }
}

/// The kernel attribute's arguments: nothing, or `same_len(…)` and
/// `shape(…)`, each at most once (a trailing comma is fine). Whether the
/// names are parameters of the right kind is checked with the signature
/// (`check::same_len_names`, `check::shapes`).
///
/// # Errors
/// Anything else, at the offending tokens: another word or form ([`USAGE`]),
/// `same_len` with one name or a name twice, a `shape` entry without two or
/// three extents or naming a parameter twice, either word twice.
pub(super) fn parse(attr: proc_macro2::TokenStream) -> syn::Result<Args> {
    let mut args = Args::default();
    if attr.is_empty() {
        return Ok(args);
    }
    let metas = syn::parse::Parser::parse2(Punctuated::<syn::Meta, Token![,]>::parse_terminated, attr.clone())
        .map_err(|_| syn::Error::new_spanned(&attr, USAGE))?;
    let (mut seen_same_len, mut seen_shape) = (false, false);
    for meta in metas {
        let syn::Meta::List(list) = meta else {
            return Err(syn::Error::new_spanned(meta, USAGE));
        };
        let seen = if list.path.is_ident("same_len") {
            &mut seen_same_len
        } else if list.path.is_ident("shape") {
            &mut seen_shape
        } else {
            return Err(syn::Error::new_spanned(&list.path, USAGE));
        };
        if std::mem::replace(seen, true) {
            let word = list.path.get_ident().map(|i| i.to_string()).unwrap_or_default();
            return Err(syn::Error::new_spanned(
                &list.path,
                format!("`{word}` is given twice: list everything in one `{word}(…)`"),
            ));
        }
        if list.path.is_ident("same_len") {
            args.same_len = same_len(&list)?;
        } else {
            args.shapes = shapes(&list)?;
        }
    }
    Ok(args)
}

/// `same_len(a, b, …)`'s names.
fn same_len(list: &syn::MetaList) -> syn::Result<Vec<Ident>> {
    let names = list
        .parse_args_with(Punctuated::<Ident, Token![,]>::parse_terminated)
        .map_err(|e| syn::Error::new(e.span(), USAGE))?;
    let names: Vec<Ident> = names.into_iter().collect();
    if names.len() < 2 {
        return Err(syn::Error::new_spanned(list, "`same_len` needs at least two slice parameters"));
    }
    for (i, n) in names.iter().enumerate() {
        if names[..i].contains(n) {
            return Err(syn::Error::new_spanned(n, format!("`same_len` names `{n}` twice")));
        }
    }
    Ok(names)
}

/// `shape(a = (…), b = (…))`'s entries.
fn shapes(list: &syn::MetaList) -> syn::Result<Vec<Shape>> {
    let shapes: Vec<Shape> =
        list.parse_args_with(Punctuated::<Shape, Token![,]>::parse_terminated)?.into_iter().collect();
    if shapes.is_empty() {
        return Err(syn::Error::new_spanned(list, USAGE));
    }
    for (i, s) in shapes.iter().enumerate() {
        if shapes[..i].iter().any(|t| t.name == s.name) {
            return Err(syn::Error::new_spanned(&s.name, format!("`shape` gives `{}` twice", s.name)));
        }
    }
    Ok(shapes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(attr: &str) -> Vec<String> {
        parse(attr.parse().unwrap()).unwrap().same_len.iter().map(|n| n.to_string()).collect()
    }

    fn shapes(attr: &str) -> Vec<String> {
        let args = parse(attr.parse().unwrap()).unwrap_or_else(|e| panic!("{e}"));
        let extent = |e: &Extent| match e {
            Extent::Param(p) => p.to_string(),
            Extent::Lit(l) => l.to_string(),
        };
        args.shapes
            .iter()
            .map(|s| format!("{}={}", s.name, s.extents.iter().map(extent).collect::<Vec<_>>().join("x")))
            .collect()
    }

    fn error(attr: &str) -> String {
        parse(attr.parse().unwrap()).err().unwrap().to_string()
    }

    #[test]
    fn accepts_nothing_or_two_or_more_names() {
        assert!(names("").is_empty());
        assert_eq!(names("same_len(a, c)"), ["a", "c"]);
        assert_eq!(names("same_len(c, a, b,)"), ["c", "a", "b"]);
    }

    #[test]
    fn accepts_shapes_of_two_or_three_extents_with_same_len() {
        assert_eq!(shapes("shape(out = (w, h))"), ["out=wxh"]);
        assert_eq!(shapes("same_len(a, b), shape(v = (nx, ny, 3), o = (w, h),),"), ["v=nxxnyx3", "o=wxh"]);
        assert!(error("shape(out = (w))").contains("takes 2 extents"));
        assert!(error("shape(out = (w, h, d, e))").contains("got 4"));
        assert!(error("shape(o = (w, h), o = (h, w))").contains("gives `o` twice"));
        assert!(error("shape(o = (w, h)), shape(p = (w, h))").contains("`shape` is given twice"));
        assert!(error("shape(o = (w + 1, h))").contains("expected `,`"));
        assert!(error("shapes(o = (w, h))").contains("takes no arguments"));
    }
}
