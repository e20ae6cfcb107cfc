//! Exported symbols of kernels and device globals.
//!
//! `__offload_<kind>_<crate>_<name>_<hash>`, where the 32-bit hash
//! (`offload_image::symbol::hash32`) covers the crate name, the source file,
//! line and column of the item's name, and the name. Deterministic (the same
//! source gives the same symbol in the device and host passes, which are
//! separate compilations) and collision-free within a crate (two items cannot
//! share a file position). Only `[A-Za-z0-9_]` is used, which PTX and AMD GPU
//! ELF symbols both accept unchanged (PTX ISA, "Identifiers").

use offload_image::symbol::hash32;
use proc_macro2::Span;
use syn::Ident;

/// The symbol of kernel `name`'s device entry point,
/// `__offload_kernel_<crate>_<fn>_<hash>` (a generic kernel's instances add
/// `_<hash of the type arguments>`: `offload_image::symbol::instance`).
pub(crate) fn kernel(name: &Ident) -> String {
    of("kernel", name)
}

/// The symbol of device global `name`, `__offload_global_<crate>_<name>_<hash>`.
pub(crate) fn global(name: &Ident) -> String {
    of("global", name)
}

/// The crate being compiled, as cargo names it (`CARGO_CRATE_NAME`).
pub(crate) fn crate_name() -> Option<String> {
    std::env::var("CARGO_CRATE_NAME").ok()
}

fn of(kind: &str, name: &Ident) -> String {
    let krate = crate_name().unwrap_or_else(|| "crate".to_string());
    let (file, line, col) = location(name.span());
    let n = name.to_string();
    let n = n.trim_start_matches("r#");
    let h = hash32(&[&krate, &file, &line.to_string(), &col.to_string(), n]);
    format!("__offload_{kind}_{krate}_{}_{h:08x}", ascii_name(n))
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

/// The source file, line and column of `span`; empty and zero outside a
/// macro expansion (unit tests), where `proc_macro` cannot be used.
fn location(span: Span) -> (String, usize, usize) {
    if proc_macro::is_available() {
        let s = span.unwrap();
        (s.file(), s.line(), s.column())
    } else {
        (String::new(), 0, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symbols_are_ascii() {
        assert_eq!(ascii_name("saxpy_2"), "saxpy_2");
        assert_eq!(ascii_name("größe"), "gru00f6u00dfe");
        assert_eq!(ascii_name("π"), "u03c0");
    }

    /// The symbols the macros give kernels and device globals: kind, crate,
    /// the name made ASCII, and `hash32` of (crate, file, line, column,
    /// name), here with the empty location of a unit test. The hashes were
    /// computed independently (Python, FNV-1a written out), so a change to
    /// what the symbol covers, or in what order, fails here.
    #[test]
    fn symbols_name_kind_crate_and_item_with_their_hash() {
        // The crate name the expansion tests (`expand_tests.rs`) set too.
        std::env::set_var("CARGO_CRATE_NAME", "corpus");
        let id = |s: &str| Ident::new(s, Span::call_site());
        assert_eq!(kernel(&id("add")), "__offload_kernel_corpus_add_37002fc3");
        assert_eq!(global(&id("COUNT")), "__offload_global_corpus_COUNT_e002949e");
        // A raw identifier is its name; a non-ASCII one is made ASCII, and
        // hashed as written.
        assert_eq!(kernel(&Ident::new_raw("add", Span::call_site())), kernel(&id("add")));
        assert_eq!(kernel(&id("größe")), "__offload_kernel_corpus_gru00f6u00dfe_53cd17d8");
        assert_ne!(kernel(&id("add")), kernel(&id("add2")));
    }
}
