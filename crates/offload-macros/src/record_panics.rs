//! `#[offload::record_panics]`: a function that kernels call gets the
//! kernel body's treatment of panic messages with format arguments
//! (`kernel::panics`): in optimized NVPTX builds each `panic!`, `assert!`,
//! `assert_eq!`, `assert_ne!`, `unreachable!`, `todo!` and `unimplemented!`
//! with arguments records its
//! values for the host to format; elsewhere the macros stay as written.

use proc_macro2::TokenStream;
use quote::ToTokens;

/// `item` (a `fn`, free or in an `impl`) with its body rewritten by
/// `kernel::panics::rewrite`.
///
/// # Errors
/// Any argument; an item that is not a `fn`; a `const fn` (the recorder is
/// not `const`, and the error would only come in optimized GPU builds).
/// The item is then kept as written, so the rest of the crate type-checks.
pub(crate) fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    let fail = |e: syn::Error, item: TokenStream| {
        let mut out = e.to_compile_error();
        out.extend(item);
        out
    };
    if !attr.is_empty() {
        return fail(syn::Error::new_spanned(attr, "`#[offload::record_panics]` takes no arguments"), item);
    }
    let mut f: syn::ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(_) => {
            let e = syn::Error::new_spanned(
                &item,
                "`#[offload::record_panics]` goes on a function (one that kernels call; a kernel's body is \
                 rewritten already)",
            );
            return fail(e, item);
        }
    };
    if let Some(c) = f.sig.constness {
        let e = syn::Error::new_spanned(
            c,
            "`#[offload::record_panics]` cannot go on a `const fn`: recording a panic's values is not `const`",
        );
        return fail(e, item);
    }
    *f.block = crate::kernel::panics::rewrite(&f.block);
    f.into_token_stream()
}

#[cfg(test)]
mod tests {
    use quote::quote;

    use super::*;

    #[test]
    fn functions_are_rewritten_and_other_items_refused() {
        let f = expand(
            quote!(),
            quote!(
                fn check(i: usize, n: usize) {
                    assert!(i < n, "i = {} n = {}", i, n);
                }
            ),
        );
        let f = f.to_string();
        assert!(f.contains("panic_format") && f.contains("\"i = {0} n = {1}\""), "{f}");
        assert!(f.contains("not (debug_assertions)"), "the user's macro is kept for other builds: {f}");
        let method = expand(
            quote!(),
            quote!(
                pub fn at(&self, i: usize) -> u32 {
                    assert_eq!(i, 0);
                    1
                }
            ),
        )
        .to_string();
        assert!(method.contains("panic_format"), "{method}");
        for (attr, item, message) in [
            (
                quote!(x),
                quote!(
                    fn f() {}
                ),
                "takes no arguments",
            ),
            (
                quote!(),
                quote!(
                    struct S;
                ),
                "goes on a function",
            ),
            (
                quote!(),
                quote!(
                    const fn f(s: &str) {
                        panic!("{}", s)
                    }
                ),
                "cannot go on a `const fn`",
            ),
        ] {
            let out = expand(attr, item.clone()).to_string();
            assert!(out.contains("compile_error") && out.contains(message), "{out}");
            assert!(out.ends_with(&item.to_string()), "the item is kept: {out}");
        }
    }
}
