//! Golden tests of the macros' output: every item of each
//! `tests/expand/*.rs` that carries one of the macros' attributes (or
//! `#[derive(DeviceCopy)]`) is expanded, and the token streams are compared
//! with `tests/expand/*.expanded`. They pin the generated code (host and
//! device sides, diagnostics included) so that a change to it is a visible
//! diff; `OFFLOAD_MACROS_BLESS=1 cargo test -p offload-macros` rewrites the
//! snapshots.
//!
//! Spans have no source file here (`proc_macro` is not running), so the
//! symbols hash an empty file name and line 0: the same in every run.

use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;
use std::path::{Path, PathBuf};

/// The crate name the symbols are made from in these tests.
const CRATE: &str = "corpus";

/// Sets the environment the macros read (`CARGO_CRATE_NAME`, and the
/// generic kernels' instantiation lists, copied from
/// `tests/expand/instances/` into a fresh directory). Returns the directory,
/// to be replaced by `$GENERIC_DIR` in the output.
fn set_env() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("offload-macros-expand-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let lists = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/expand/instances");
    for entry in std::fs::read_dir(lists).into_iter().flatten().flatten() {
        // A directory stands for a list that cannot be read.
        if entry.path().is_dir() {
            let _ = std::fs::create_dir_all(dir.join(entry.file_name()));
        } else {
            let _ = std::fs::copy(entry.path(), dir.join(entry.file_name()));
        }
    }
    // Every test that expands sets the same values, and nothing in this
    // crate's tests reads the environment otherwise.
    std::env::set_var("CARGO_CRATE_NAME", CRATE);
    std::env::set_var("__OFFLOAD_GENERIC_DIR", &dir);
    dir
}

/// Whether `path` is `name` or `offload::name`.
fn is(path: &syn::Path, name: &str) -> bool {
    path.is_ident(name)
        || (path.segments.len() == 2
            && path.segments[0].ident == "offload"
            && path.segments[1].ident == name)
}

/// Takes the first attribute named `name` off `attrs`, returning its arguments.
fn take_attr(attrs: &mut Vec<syn::Attribute>, name: &str) -> Option<TokenStream> {
    let i = attrs.iter().position(|a| is(a.path(), name))?;
    let a = attrs.remove(i);
    Some(match a.meta {
        syn::Meta::Path(_) => TokenStream::new(),
        syn::Meta::List(l) => l.tokens,
        syn::Meta::NameValue(nv) => nv.value.into_token_stream(),
    })
}

/// Takes `DeviceCopy` out of the item's `#[derive(…)]` lists; whether it was there.
fn take_derive(attrs: &mut [syn::Attribute]) -> bool {
    for a in attrs.iter_mut().filter(|a| a.path().is_ident("derive")) {
        let Ok(paths) = a.parse_args_with(
            syn::punctuated::Punctuated::<syn::Path, syn::Token![,]>::parse_terminated,
        ) else {
            continue;
        };
        if paths.iter().any(|p| is(p, "DeviceCopy")) {
            let rest = paths.iter().filter(|p| !is(p, "DeviceCopy"));
            *a = syn::parse_quote!(#[derive(#(#rest),*)]);
            return true;
        }
    }
    false
}

/// The attributes of `item`, for the kinds of item the macros apply to.
fn attrs_mut(item: &mut syn::Item) -> Option<&mut Vec<syn::Attribute>> {
    Some(match item {
        syn::Item::Fn(i) => &mut i.attrs,
        syn::Item::Static(i) => &mut i.attrs,
        syn::Item::Struct(i) => &mut i.attrs,
        syn::Item::Enum(i) => &mut i.attrs,
        syn::Item::Union(i) => &mut i.attrs,
        syn::Item::Mod(i) => &mut i.attrs,
        syn::Item::Impl(i) => &mut i.attrs,
        syn::Item::Use(i) => &mut i.attrs,
        syn::Item::Const(i) => &mut i.attrs,
        _ => return None,
    })
}

/// The expansions of the macros on `item` and the items inside it, in order.
fn expand_item(item: &syn::Item, out: &mut Vec<(String, TokenStream)>) {
    let mut item = item.clone();
    let name = |item: &syn::Item| match item {
        syn::Item::Fn(f) => f.sig.ident.to_string(),
        syn::Item::Static(s) => s.ident.to_string(),
        syn::Item::Struct(s) => s.ident.to_string(),
        syn::Item::Enum(e) => e.ident.to_string(),
        syn::Item::Union(u) => u.ident.to_string(),
        syn::Item::Mod(m) => m.ident.to_string(),
        _ => String::from("_"),
    };
    let Some(attrs) = attrs_mut(&mut item) else {
        return;
    };
    if let Some(attr) = take_attr(attrs, "host") {
        out.push((
            format!("host {}", name(&item)),
            crate::host::expand(attr, item.to_token_stream()),
        ));
        return;
    }
    let expanded = match &mut item {
        syn::Item::Fn(f) => take_attr(&mut f.attrs, "kernel")
            .map(|a| ("kernel", crate::kernel::expand(a, f.to_token_stream()))),
        syn::Item::Static(s) => take_attr(&mut s.attrs, "device_global").map(|a| {
            (
                "device_global",
                crate::global::expand(a, s.to_token_stream()),
            )
        }),
        syn::Item::Mod(m) => {
            for i in m.content.iter().flat_map(|(_, items)| items) {
                expand_item(i, out);
            }
            None
        }
        _ => None,
    };
    let expanded = expanded.or_else(|| {
        let adt = matches!(
            item,
            syn::Item::Struct(_) | syn::Item::Enum(_) | syn::Item::Union(_)
        );
        let derive = adt && attrs_mut(&mut item).is_some_and(|a| take_derive(a));
        derive.then(|| ("derive", crate::derive::expand(item.to_token_stream())))
    });
    if let Some((what, ts)) = expanded {
        out.push((format!("{what} {}", name(&item)), ts));
    }
}

/// A token stream, one top-level item or statement a line.
fn lines(ts: TokenStream) -> String {
    let mut s = String::new();
    let mut line = TokenStream::new();
    for tt in ts {
        let end = match &tt {
            TokenTree::Punct(p) => p.as_char() == ';',
            TokenTree::Group(g) => g.delimiter() == proc_macro2::Delimiter::Brace,
            _ => false,
        };
        line.extend([tt]);
        if end {
            s += &line.to_string();
            s.push('\n');
            line = TokenStream::new();
        }
    }
    if !line.is_empty() {
        s += &line.to_string();
        s.push('\n');
    }
    s
}

/// The expansions of every macro in the source `src`, as text.
fn expand_source(src: &str, generic_dir: &Path) -> String {
    let file = match syn::parse_file(src) {
        Ok(f) => f,
        Err(e) => return format!("// does not parse: {e}\n"),
    };
    let mut out = Vec::new();
    for item in &file.items {
        expand_item(item, &mut out);
    }
    let mut s = String::new();
    for (what, ts) in out {
        s += &format!("// ---- {what}\n{}\n", lines(ts));
    }
    s.replace(&generic_dir.display().to_string(), "$GENERIC_DIR")
}

#[test]
fn corpus() {
    let dir = set_env();
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/expand");
    let bless = std::env::var_os("OFFLOAD_MACROS_BLESS").is_some();
    let mut sources: Vec<PathBuf> = std::fs::read_dir(&corpus)
        .expect("tests/expand")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .collect();
    sources.sort();
    assert!(!sources.is_empty());
    let mut failed = Vec::new();
    for src in sources {
        let got = expand_source(&std::fs::read_to_string(&src).unwrap(), &dir);
        let snapshot = src.with_extension("expanded");
        if bless {
            std::fs::write(&snapshot, &got).unwrap();
        } else if std::fs::read_to_string(&snapshot).ok().as_deref() != Some(got.as_str()) {
            let new = src.with_extension("expanded.new");
            std::fs::write(&new, &got).unwrap();
            failed.push(format!(
                "{} differs from {} (see {})",
                src.display(),
                snapshot.display(),
                new.display()
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        failed.is_empty(),
        "{}\nrerun with OFFLOAD_MACROS_BLESS=1 to accept",
        failed.join("\n")
    );
}

/// Expands every macro in every `.rs` file of the repository (the
/// workspace's crates and fixtures) into `$OFFLOAD_EXPAND_DUMP`, to compare
/// a refactoring's output with the previous one:
/// `OFFLOAD_EXPAND_DUMP=/tmp/a.txt cargo test -p offload-macros -- --ignored dump_repository`.
#[test]
#[ignore]
fn dump_repository() {
    let dir = set_env();
    let Some(dump) = std::env::var_os("OFFLOAD_EXPAND_DUMP") else {
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            let name = e.file_name();
            // This crate's corpus is pinned by `corpus` instead.
            if p.is_dir()
                && name != "target"
                && !name.to_string_lossy().starts_with('.')
                && !p.ends_with("offload-macros")
            {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                files.push(p);
            }
        }
    }
    files.sort();
    let mut s = String::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        let e = expand_source(&text, &dir);
        if !e.is_empty() && !e.starts_with("// does not parse") {
            s += &format!("//// {}\n{e}", f.strip_prefix(&root).unwrap().display());
        }
    }
    std::fs::write(dump, s).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
