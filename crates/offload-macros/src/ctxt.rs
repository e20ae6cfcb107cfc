//! Collecting diagnostics (serde_derive's `internals::Ctxt` pattern): the
//! checks report every problem they find, each a `syn::Error` on the
//! offending token, and the caller gets them all at once, so the user fixes
//! a kernel in one round instead of one error per build.

use quote::ToTokens;
use std::fmt::Display;

/// The errors found so far, in the order they were found (which is the
/// order rustc prints them).
///
/// Unlike serde's, it does not panic when dropped unchecked (a macro never
/// panics); `#[must_use]` catches a forgotten [`Ctxt::check`] instead.
#[must_use = "call `check` to report the errors"]
#[derive(Default)]
pub(crate) struct Ctxt {
    errors: Vec<syn::Error>,
}

impl Ctxt {
    /// An empty context.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Records `msg` at the tokens of `obj` (its whole span).
    pub(crate) fn error_spanned_by<A: ToTokens, T: Display>(&mut self, obj: A, msg: T) {
        self.errors
            .push(syn::Error::new_spanned(obj.into_token_stream(), msg));
    }

    /// Records an error built elsewhere (a parse error, a combined error).
    pub(crate) fn push(&mut self, error: syn::Error) {
        self.errors.push(error);
    }

    /// `Ok` if nothing was recorded, else every error combined into one
    /// (`to_compile_error` emits one `compile_error!` per error, in order).
    pub(crate) fn check(self) -> syn::Result<()> {
        let mut errors = self.errors.into_iter();
        let Some(mut all) = errors.next() else {
            return Ok(());
        };
        for e in errors {
            all.combine(e);
        }
        Err(all)
    }
}
