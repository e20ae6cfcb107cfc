//! Generic kernels: finding the instantiations that host code uses.
//!
//! rustc's `std::offload` runs a host-metadata pass before the device pass
//! for generic kernels; we read the same facts from the host binaries:
//!
//! 1. For `#[offload::kernel] fn scale<T: …>(…)`, the host launcher calls a
//!    marker function named after the kernel's symbol with the tuple of its
//!    type arguments, `__offload_kernel_<crate>_scale_<hash>::<(T,)>()`; it
//!    is never inlined and never merged with another instance (it returns
//!    `type_name` of its argument). The host pass compiles workspace members
//!    with v0 symbol mangling (`-C symbol-mangling-version=v0`, RFC 2603),
//!    whose names carry type arguments, so each instantiation a binary uses
//!    is one symbol, `app::__offload_kernel_app_scale_1a2b3c4d::<(f32,)>`,
//!    and its demangled tuple is spelled as `core::any::type_name` spells it.
//! 2. A collect round (a host build with `handoff::COLLECT_VAR` set) logs, per final
//!    binary linked, the instantiations found; [`merge`] keeps
//!    `target/offload/generic/<symbol>.txt` up to date from that log.
//! 3. The `#[kernel]` macro's device side reads that file (and includes it,
//!    so cargo recompiles the crate when it changes) and emits one entry
//!    point per tuple, `offload_image::symbol::instance(<symbol>, <tuple>)`.
//!    The host side never reads it: at run time the launcher derives the
//!    same symbol from `type_name` of the tuple.
//! 4. The final host build checks that each binary's image has every
//!    instantiation the binary launches.
//!
//! When lists exist the collect round runs before the device pass (so a
//! list never names a type the code no longer has); on the first build the
//! device pass creates them and runs again after the collect round.
//!
//! Only crates compiled through the workspace wrapper (workspace members)
//! get v0 names: an instantiation made inside a crate outside the workspace
//! is not seen, and launching it on a GPU fails with
//! `Error::InstanceNotBuilt`; the host fallback runs it.

use std::collections::BTreeSet;
use std::path::Path;

use offload_image::symbol;

use crate::binary::v0_symbols_containing;
use crate::errors::{CliError, Result};

/// One instantiation of a generic kernel that a binary uses.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Instance {
    /// The crate that defines the kernel.
    pub krate: String,
    /// The generic kernel's symbol.
    pub base: String,
    /// `type_name` of the tuple of type arguments, e.g. `(f32,)`.
    pub args: String,
}

impl Instance {
    /// The instantiation's device symbol.
    pub fn symbol(&self) -> String {
        symbol::instance(&self.base, &self.args)
    }
}

/// The instantiation a demangled marker instance names, e.g.
/// `app::m::__offload_kernel_app_scale_1a2b3c4d::<(f32, app::V)>` → crate
/// `app`, base `__offload_kernel_app_scale_1a2b3c4d`, args `(f32, app::V)`.
pub fn parse_marker(demangled: &str) -> Option<Instance> {
    let at = demangled.rfind("::__offload_kernel_")?;
    let krate = demangled[..at].split("::").next()?.to_string();
    let rest = &demangled[at + 2..];
    let (base, args) = rest.split_once("::<")?;
    if !base.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return None;
    }
    let args = args.strip_suffix('>')?;
    if !args.starts_with('(') {
        return None;
    }
    Some(Instance { krate, base: base.to_string(), args: args.to_string() })
}

/// The generic kernel instantiations in `exe`'s symbol table, or `None` if
/// it has no symbol table (a stripped binary).
pub fn instances_in(exe: &Path) -> Option<BTreeSet<Instance>> {
    let names = v0_symbols_containing(exe, "__offload_kernel_")?;
    Some(names.iter().filter_map(|n| parse_marker(n)).collect())
}

/// Whether `args` names a path of crate `krate` (`krate::…` not preceded by
/// an identifier character or `::`).
fn mentions_crate(args: &str, krate: &str) -> bool {
    let pat = format!("{krate}::");
    args.match_indices(&pat).any(|(i, _)| {
        let before = args[..i].chars().next_back();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':')
    })
}

/// The instantiations binary crate `bin` (linked as `exe`) uses. Errors: a
/// stripped binary with generic kernels (`generic_records`), and a type
/// argument defined in `bin` itself for a kernel of another crate, which
/// that crate's device code cannot name.
pub fn instances_of(exe: &Path, bin: &str, generic_records: bool) -> Result<BTreeSet<Instance>> {
    if !generic_records {
        return Ok(BTreeSet::new());
    }
    let found = instances_in(exe).ok_or_else(|| CliError::StrippedBinary { exe: exe.to_path_buf() })?;
    if let Some(i) = found.iter().find(|i| i.krate != bin && mentions_crate(&i.args, bin)) {
        return Err(CliError::ForeignTypeArgument { binary: bin.into(), krate: i.krate.clone(), args: i.args.clone() });
    }
    Ok(found)
}

/// Updates the lists in `dir` from a collect round's log, whose lines are
/// `<binary>\t-` for each final binary linked, and
/// `<binary>\t<base>\t<args>\t<file:line>` for each instantiation it uses.
/// A list line is `<args>\t<binary>`: each binary linked this round replaces
/// its own lines (so an instantiation no longer used, or of a type since
/// renamed, leaves the lists), the lines of others stay. Returns the
/// instantiations that are new to their kernel, as (args, where the kernel
/// is defined). A list is rewritten only when it changes, so cargo
/// recompiles only the crates whose kernels changed.
pub fn merge(dir: &Path, log: &str) -> std::io::Result<Vec<(String, String)>> {
    use std::collections::BTreeMap;
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    let mut fresh: BTreeMap<&str, BTreeSet<(&str, &str)>> = BTreeMap::new();
    let mut location: BTreeMap<&str, &str> = BTreeMap::new();
    for line in log.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        match f.as_slice() {
            [bin, "-"] => {
                seen.insert(bin);
            }
            [bin, base, args, loc] => {
                seen.insert(bin);
                fresh.entry(base).or_default().insert((args, bin));
                location.insert(base, loc);
            }
            _ => {}
        }
    }
    std::fs::create_dir_all(dir)?;
    let mut bases: BTreeSet<String> = fresh.keys().map(|b| b.to_string()).collect();
    for e in std::fs::read_dir(dir)?.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(base) = name.strip_suffix(".txt") {
            bases.insert(base.to_string());
        }
    }
    let mut added = Vec::new();
    for base in bases {
        let path = symbol::instances_file(dir, &base);
        let old = std::fs::read_to_string(&path).unwrap_or_default();
        let old_lines: BTreeSet<(String, String)> = old
            .lines()
            .filter_map(|l| l.split_once('\t'))
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        let mut lines: BTreeSet<(String, String)> =
            old_lines.iter().filter(|(_, bin)| !seen.contains(bin.as_str())).cloned().collect();
        for (args, bin) in fresh.get(base.as_str()).into_iter().flatten() {
            lines.insert((args.to_string(), bin.to_string()));
        }
        let old_args: BTreeSet<&str> = old_lines.iter().map(|(a, _)| a.as_str()).collect();
        let mut new_args: Vec<&str> = lines.iter().map(|(a, _)| a.as_str()).filter(|a| !old_args.contains(a)).collect();
        new_args.dedup();
        for a in new_args {
            added.push((a.to_string(), location.get(base.as_str()).copied().unwrap_or("?").to_string()));
        }
        if lines != old_lines {
            let text: String = lines.iter().map(|(a, b)| format!("{a}\t{b}\n")).collect();
            // Renamed into place: the kernel macro of a concurrent build
            // never reads half a list.
            offload_image::file::write_atomic(&path, text.as_bytes())?;
        }
    }
    Ok(added)
}

/// Whether any crate built so far defines a generic kernel (the macro
/// creates its list file on first sight).
pub fn any_generic(dir: &Path) -> bool {
    std::fs::read_dir(dir)
        .map(|rd| rd.flatten().any(|e| e.path().extension().is_some_and(|x| x == "txt")))
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_parse() {
        let i = parse_marker("app::m::__offload_kernel_app_scale_1a2b3c4d::<(f32, app::V<(u8, [f64; 3])>)>").unwrap();
        assert_eq!((i.krate.as_str(), i.base.as_str()), ("app", "__offload_kernel_app_scale_1a2b3c4d"));
        assert_eq!(i.args, "(f32, app::V<(u8, [f64; 3])>)");
        assert_eq!(parse_marker("app::__offload_kernel_app_scale_1a2b3c4d"), None);
        assert_eq!(parse_marker("core::ptr::drop_in_place::<u8>"), None);
    }

    #[test]
    fn v0_symbols_demangle_to_markers() {
        // `a::__offload_kernel_a_k_1::<(f32,)>` as rustc 1.95 mangles it.
        let mangled = "_RINvCs6xxl1lAjzDf_1a22___offload_kernel_a_k_1TfEEB2_";
        let d = format!("{:#}", rustc_demangle::demangle(mangled));
        assert_eq!(d, "a::__offload_kernel_a_k_1::<(f32,)>");
        let i = parse_marker(&d).unwrap();
        assert_eq!((i.krate.as_str(), i.args.as_str()), ("a", "(f32,)"));
    }

    #[test]
    fn types_of_the_binary_are_found() {
        assert!(mentions_crate("(app::V,)", "app"));
        assert!(mentions_crate("([app::V; 2], f32)", "app"));
        assert!(!mentions_crate("(my_app::V,)", "app"));
        assert!(!mentions_crate("(lib::app::V,)", "app"));
    }

    #[test]
    fn merge_replaces_each_linked_binarys_lines() {
        let dir = std::env::temp_dir().join(format!("offload-generic-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let log = "a\tk_1\t(f32,)\tsrc/a.rs:3\na\tk_1\t(f64,)\tsrc/a.rs:3\nb\tk_1\t(f32,)\tsrc/a.rs:3\n";
        let added = merge(&dir, log).unwrap();
        assert_eq!(added, [("(f32,)".to_string(), "src/a.rs:3".to_string()), ("(f64,)".into(), "src/a.rs:3".into())]);
        let file = symbol::instances_file(&dir, "k_1");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "(f32,)\ta\n(f32,)\tb\n(f64,)\ta\n");
        // Nothing new: the file is not rewritten.
        let before = std::fs::metadata(&file).unwrap().modified().unwrap();
        assert!(merge(&dir, "a\tk_1\t(f64,)\tsrc/a.rs:3\na\tk_1\t(f32,)\tsrc/a.rs:3\n").unwrap().is_empty());
        assert_eq!(std::fs::metadata(&file).unwrap().modified().unwrap(), before);
        // `a` no longer uses f64 (and `b`, not linked this round, keeps f32).
        assert!(merge(&dir, "a\t-\n").unwrap().is_empty());
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "(f32,)\tb\n");
        assert!(any_generic(&dir));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
