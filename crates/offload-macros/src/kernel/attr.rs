//! Parsing the kernel attribute's arguments: nothing, or
//! `same_len(a, b, …)`.

use syn::punctuated::Punctuated;
use syn::{Ident, Token};

/// What the attribute accepts, repeated in every error about it.
const USAGE: &str =
    "`#[offload::kernel]` takes no arguments or `same_len(a, b, …)`: slice parameters \
                     of equal length, which the launcher checks before the launch";

/// The kernel attribute's arguments: nothing, or `same_len(a, b, …)` with at
/// least two distinct names (a trailing comma is fine). Whether the names are
/// slice parameters is checked with the signature (`check::same_len`).
///
/// # Errors
/// Anything else, at the offending tokens: another word or form ([`USAGE`]),
/// one name, a name given twice.
pub(super) fn parse(attr: proc_macro2::TokenStream) -> syn::Result<Vec<Ident>> {
    if attr.is_empty() {
        return Ok(Vec::new());
    }
    let list: syn::MetaList =
        syn::parse2(attr.clone()).map_err(|_| syn::Error::new_spanned(&attr, USAGE))?;
    if !list.path.is_ident("same_len") {
        return Err(syn::Error::new_spanned(&list.path, USAGE));
    }
    let names = list
        .parse_args_with(Punctuated::<Ident, Token![,]>::parse_terminated)
        .map_err(|e| syn::Error::new(e.span(), USAGE))?;
    let names: Vec<Ident> = names.into_iter().collect();
    if names.len() < 2 {
        return Err(syn::Error::new_spanned(
            &list,
            "`same_len` needs at least two slice parameters",
        ));
    }
    for (i, n) in names.iter().enumerate() {
        if names[..i].contains(n) {
            return Err(syn::Error::new_spanned(
                n,
                format!("`same_len` names `{n}` twice"),
            ));
        }
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(attr: &str) -> Vec<String> {
        parse(attr.parse().unwrap())
            .unwrap()
            .iter()
            .map(|n| n.to_string())
            .collect()
    }

    #[test]
    fn accepts_nothing_or_two_or_more_names() {
        assert!(names("").is_empty());
        assert_eq!(names("same_len(a, c)"), ["a", "c"]);
        assert_eq!(names("same_len(c, a, b,)"), ["c", "a", "b"]);
    }
}
