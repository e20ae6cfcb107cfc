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
    use offload_image::symbol::fnv1a;

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
