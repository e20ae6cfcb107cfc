//! The instantiations of a generic kernel that host code uses, read from the
//! list `cargo offload` collects from the host binaries' symbols.
//!
//! `$__OFFLOAD_GENERIC_DIR/<symbol>.txt` (`offload_image::symbol::
//! instances_file`) has lines `<type_name of the tuple of type arguments>\t
//! <binary>`; a tuple used by several binaries appears once per binary. A
//! binary is `<crate name> <root source file>[ --test]` (`cargo offload`'s
//! `binary_key`). Outside `cargo offload` there is no list (and no device
//! pass). Only the device pass uses the instances; the host side never reads
//! the list.

use super::types::{respan, root_paths};
use crate::ctxt::Ctxt;
use crate::symbol;
use offload_image::symbol::{instance, instances_file};
use std::collections::BTreeMap;
use syn::{Ident, Type};

/// One instantiation of a generic kernel that host code uses.
pub(super) struct Instance {
    /// The type arguments, as types resolvable in the kernel's crate.
    pub(super) types: Vec<Type>,
    /// The device symbol, `<base>_<hash of the type arguments' tuple>`.
    pub(super) symbol: String,
    /// Used only by this crate's own unit-test binary: compiled under
    /// `cfg(test)` only, where the types it names (often in a
    /// `#[cfg(test)] mod tests`) exist.
    pub(super) test_only: bool,
}

/// What [`read`] found.
#[derive(Default)]
pub(super) struct Instances {
    /// The list file, which the device code includes so that cargo recompiles
    /// this crate's device pass when the list changes; `None` outside
    /// `cargo offload`.
    pub(super) list_file: Option<String>,
    /// The usable instantiations, in the order of their type arguments' text.
    pub(super) instances: Vec<Instance>,
    /// Lines that cannot be used, and an unreadable list.
    pub(super) errors: Option<syn::Error>,
}

/// The instantiations of generic kernel `name` (device symbol `sym`, with
/// `n_params` type parameters). Errors point at `name`.
pub(super) fn read(sym: &str, name: &Ident, n_params: usize) -> Instances {
    let Some(dir) = std::env::var_os("__OFFLOAD_GENERIC_DIR") else {
        return Instances::default();
    };
    let path = instances_file(std::path::Path::new(&dir), sym);
    // Created empty on first sight: the file must exist for `include_bytes!`,
    // and cargo then notices when `cargo offload` fills it in.
    let _ = std::fs::create_dir_all(&dir);
    let _ = std::fs::OpenOptions::new().create(true).append(true).open(&path);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            let msg = format!("cannot read the instantiations of generic kernel `{name}` from {}: {e}", path.display());
            return Instances { errors: Some(syn::Error::new(name.span(), msg)), ..Instances::default() };
        }
    };
    let krate = symbol::crate_name().unwrap_or_default();
    let mut cx = Ctxt::new();
    let mut instances = Vec::new();
    for (key, test_only) in users(&text, &krate) {
        if let Some(types) = type_arguments(&mut cx, key, name, n_params, &krate) {
            instances.push(Instance { types, symbol: instance(sym, key), test_only });
        }
    }
    Instances { list_file: Some(path.display().to_string()), instances, errors: cx.check().err() }
}

/// The list's distinct tuples, in order, each with whether only this crate's
/// unit-test binary (this crate's name and ` --test`) uses it.
fn users<'a>(text: &'a str, krate: &str) -> BTreeMap<&'a str, bool> {
    let own_tests = |bin: &str| bin.ends_with(" --test") && bin.split(' ').next() == Some(krate);
    let mut users = BTreeMap::new();
    for line in text.lines() {
        let mut f = line.split('\t');
        let key = f.next().unwrap_or("").trim();
        if key.is_empty() {
            continue;
        }
        let test_only = own_tests(f.next().unwrap_or("").trim());
        let e = users.entry(key).or_insert(true);
        *e = *e && test_only;
    }
    users
}

/// The type arguments spelled by `key`, resolvable in crate `krate` and
/// spanned at `name`; `None` for a line to skip: not a tuple (another
/// format), a tuple of another length (stale: the kernel had another number
/// of type parameters when the binary was linked), or not Rust syntax
/// (recorded in `cx`).
fn type_arguments(cx: &mut Ctxt, key: &str, name: &Ident, n_params: usize, krate: &str) -> Option<Vec<Type>> {
    match syn::parse_str::<Type>(key) {
        Ok(Type::Tuple(t)) if t.elems.len() == n_params => {
            let mut types: Vec<Type> = t.elems.into_iter().collect();
            for t in &mut types {
                root_paths(t, krate);
                // Spans at the kernel's name: errors about a type the
                // kernel's crate cannot name point there.
                *t = respan(t, name.span());
            }
            Some(types)
        }
        Ok(_) => None,
        Err(_) => {
            cx.push(syn::Error::new(
                name.span(),
                format!(
                    "the host code launches generic kernel `{name}` with the type arguments `{key}`, which cannot \
                     be written here as Rust types; give the kernel's type parameters types that its crate can name"
                ),
            ));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tuple_is_test_only_if_only_the_crates_unit_tests_use_it() {
        let text = "(f32,)\tk src/main.rs\n(f64,)\tk src/main.rs --test\n(u8,)\tk src/main.rs --test\n\
                    (u8,)\tother src/lib.rs --test\n(f32,)\tk src/main.rs --test\n\n";
        let got: Vec<(&str, bool)> = users(text, "k").into_iter().collect();
        assert_eq!(got, [("(f32,)", false), ("(f64,)", true), ("(u8,)", false)]);
    }
}
