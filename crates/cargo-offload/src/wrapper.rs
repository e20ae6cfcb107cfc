//! The rustc wrapper: a phase dispatcher (cargo-miri's `phases.rs` is the
//! model).
//!
//! Who calls whom:
//!
//! ```text
//! user ─ cargo offload run ─ cargo-offload (CLI)
//!          ├─ device cargo ─ cargo-offload (wrapper, __OFFLOAD_PHASE=device) ─ device rustc ─ offload-linker
//!          ├─ embed: PTX (+ ptxas cubin) → bundle → ELF object per final binary
//!          └─ host cargo ─── cargo-offload (wrapper, __OFFLOAD_PHASE=host) ─── host rustc ─── system linker
//! ```
//!
//! Cargo runs a wrapper as `<wrapper> <rustc> <args…>`. In both phases,
//! cargo's probes (`--print …`, `-vV`) pass through untouched, and a wrapper
//! the user had set (`RUSTC_WRAPPER`, e.g. sccache) is chained, not replaced.
//!
//! Device phase, for crates compiled for the GPU target (host-side build
//! scripts and proc macros pass through):
//! - crates from the sysroot (`core`, `compiler_builtins`) pass through;
//! - a final crate becomes a `cdylib`, as rustc's `std::offload` does in
//!   `collect_crate_types`: `--crate-type bin` → `cdylib`, and a test
//!   target's `--test` → `--crate-type cdylib --cfg test` (the test harness
//!   needs `std`; the kernels do not). The linker of a `cdylib` hears which
//!   symbols to export; the kernels would otherwise be internalized away;
//! - `#![no_std]` is added to every other crate whose root file does not
//!   mention `no_std` itself;
//! - every `--extern` becomes `--extern force:…`, so that a dependency is
//!   linked even when only host code (compiled out here) uses it: its kernels
//!   belong in the image of every binary that depends on it.
//!
//! Host phase (workspace members only, through `RUSTC_WORKSPACE_WRAPPER`):
//! - `--check-cfg cfg(offload_device)` is added, so `#[cfg(offload_device)]`
//!   does not warn;
//! - `-C symbol-mangling-version=v0` is added, so that the instantiations of
//!   generic kernels can be read from a binary's symbols (`generic.rs`);
//! - a final crate (`bin`, or `--test`) with an image in the map gets
//!   `-C link-arg=<image object>`, and after rustc succeeds, the object is
//!   added to the first rule of rustc's dep-info file, so cargo relinks the
//!   binary when the image changes; then the binary's kernel records and
//!   generic instantiations are checked against the image (or, in the
//!   collect round, the instantiations are logged).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::embed::{read_map, ImageMapEntry};

pub const PHASE_VAR: &str = "__OFFLOAD_PHASE";
pub const MAP_VAR: &str = "__OFFLOAD_IMAGE_MAP";
pub const INNER_VAR: &str = "__OFFLOAD_INNER_WRAPPER";
/// File to which the device phase appends one line per crate it compiles.
pub const COMPILE_LOG_VAR: &str = "__OFFLOAD_COMPILE_LOG";

/// Whether this process was started by cargo as a rustc wrapper.
pub fn is_wrapper_invocation(args: &[OsString]) -> bool {
    std::env::var_os(PHASE_VAR).is_some() && args.len() >= 2 && args[1] != "offload"
}

/// `--print …`, `-vV`, `-V`, `--version`: cargo's probes.
pub fn is_query(args: &[String]) -> bool {
    args.iter().any(|a| a.starts_with("--print") || a == "-vV" || a == "-V" || a == "--version")
        || args.iter().any(|a| a == "-")
}

/// The value of `--flag value` or `--flag=value`.
pub fn flag_value<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == flag {
            return it.next().map(String::as_str);
        }
        if let Some(v) = a.strip_prefix(flag).and_then(|r| r.strip_prefix('=')) {
            return Some(v);
        }
    }
    None
}

/// Every value of `flag`.
pub fn flag_values<'a>(args: &'a [String], flag: &str) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == flag {
            if let Some(v) = it.next() {
                out.push(v.as_str());
            }
        } else if let Some(v) = a.strip_prefix(flag).and_then(|r| r.strip_prefix('=')) {
            out.push(v);
        }
    }
    out
}

/// Flags of rustc that take their value as the next argument.
const VALUE_FLAGS: &[&str] = &[
    "--crate-name", "--crate-type", "--edition", "--emit", "--out-dir", "-o", "--target", "-L", "-l", "--extern",
    "--cfg", "--check-cfg", "-C", "--codegen", "-Z", "--cap-lints", "--error-format", "--json", "-W", "-A", "-D",
    "-F", "--warn", "--allow", "--deny", "--forbid", "--remap-path-prefix", "--explain", "--diagnostic-width", "--color",
];

/// The crate root source file: the first positional argument.
pub fn source_file(args: &[String]) -> Option<&str> {
    let mut skip = false;
    for a in args {
        if skip {
            skip = false;
            continue;
        }
        if VALUE_FLAGS.contains(&a.as_str()) {
            skip = true;
            continue;
        }
        if !a.starts_with('-') && a.ends_with(".rs") {
            return Some(a);
        }
    }
    None
}

/// Compiling for a GPU: `--target` is a GPU triple, or the path of the
/// target specification `cargo offload` writes for AMD GPUs.
pub fn is_gpu_target(args: &[String]) -> bool {
    flag_value(args, "--target").is_some_and(|t| {
        let name = Path::new(t).file_name().and_then(|n| n.to_str()).unwrap_or(t);
        name.starts_with("nvptx") || name.starts_with("amdgcn")
    })
}

/// Whether the root file declares `no_std` itself (`#![no_std]` or inside
/// `cfg_attr`); then adding it again would only warn.
pub fn declares_no_std(src: &str) -> bool {
    src.lines().any(|l| {
        let l = l.trim_start();
        l.starts_with("#![") && l.contains("no_std")
    })
}

/// A crate of the sysroot (built by `-Zbuild-std`).
fn is_sysroot_crate(args: &[String]) -> bool {
    let Some(src) = source_file(args) else { return false };
    let Some(sysroot) = std::env::var_os("OFFLOAD_SYSROOT") else { return false };
    let lib = PathBuf::from(sysroot).join("lib/rustlib/src");
    let lib = std::fs::canonicalize(&lib).unwrap_or(lib);
    let src = std::fs::canonicalize(src).unwrap_or_else(|_| PathBuf::from(src));
    src.starts_with(&lib)
}

/// Whether rustc builds an executable: `--crate-type bin`, or no crate type
/// at all (rustc's default), which is how cargo builds a bench or test with
/// `harness = false`.
pub fn is_bin(args: &[String]) -> bool {
    let types = flag_values(args, "--crate-type");
    types.contains(&"bin") || (types.is_empty() && !args.iter().any(|a| a == "--test"))
}

/// The device phase's rewrite of a rustc command line (see the module docs).
pub fn device_args(args: &[String], root_src: Option<&str>) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len() + 4);
    let mut it = args.iter().peekable();
    let mut test = false;
    let mut forced = false;
    while let Some(a) = it.next() {
        match a.as_str() {
            "--test" => test = true,
            "--extern" => {
                let v = it.next().cloned().unwrap_or_default();
                out.push(a.clone());
                out.push(force_extern(&v));
                forced = true;
            }
            "--crate-type" => {
                let v = it.next().cloned().unwrap_or_default();
                out.push(a.clone());
                out.push(if v == "bin" { "cdylib".into() } else { v });
            }
            "--crate-type=bin" => out.push("--crate-type=cdylib".into()),
            _ => out.push(a.clone()),
        }
    }
    if test {
        out.push("--crate-type".into());
        out.push("cdylib".into());
        out.push("--cfg".into());
        out.push("test".into());
    } else if flag_values(args, "--crate-type").is_empty() {
        // rustc's default crate type is bin: cargo gives none for a
        // `harness = false` bench or test.
        out.push("--crate-type".into());
        out.push("cdylib".into());
    }
    let declares = root_src.map(declares_no_std).unwrap_or(false);
    if !declares {
        out.push("-Zcrate-attr=no_std".into());
    }
    // Host-only items are compiled out here, which leaves helpers and imports
    // only they use looking dead; the host pass reports real ones.
    for lint in ["dead_code", "unused_imports", "unused_macros"] {
        out.push("-A".into());
        out.push(lint.into());
    }
    if forced && !args.windows(2).any(|w| w[0] == "-Z" && w[1] == "unstable-options") {
        out.push("-Zunstable-options".into());
    }
    out
}

/// `name=path` → `force:name=path`; `opts:name=path` → `opts,force:name=path`.
pub fn force_extern(spec: &str) -> String {
    let (name_part, path) = match spec.split_once('=') {
        Some((n, p)) => (n, Some(p)),
        None => (spec, None),
    };
    let forced = match name_part.split_once(':') {
        Some((opts, name)) if opts.split(',').any(|o| o == "force") => format!("{opts}:{name}"),
        Some((opts, name)) => format!("{opts},force:{name}"),
        None => format!("force:{name_part}"),
    };
    match path {
        Some(p) => format!("{forced}={p}"),
        None => forced,
    }
}

/// Inserts `dep` into the first rule of a Makefile-style dep-info file
/// (the one cargo reads), and adds an empty rule for it.
pub fn add_dep_info(contents: &str, dep: &Path) -> String {
    let escaped = dep.display().to_string().replace(' ', "\\ ");
    let mut out = String::with_capacity(contents.len() + 2 * escaped.len() + 8);
    let mut done = false;
    for line in contents.lines() {
        out.push_str(line);
        if !done && !line.starts_with('#') && (line.contains(": ") || line.ends_with(':')) {
            out.push(' ');
            out.push_str(&escaped);
            done = true;
        }
        out.push('\n');
    }
    out.push('\n');
    out.push_str(&escaped);
    out.push_str(":\n");
    out
}

fn dep_info_path(args: &[String]) -> Option<PathBuf> {
    let emits = flag_values(args, "--emit");
    if !emits.iter().any(|e| e.split(',').any(|k| k.starts_with("dep-info"))) {
        return None;
    }
    let out_dir = flag_value(args, "--out-dir")?;
    let name = flag_value(args, "--crate-name")?;
    let extra = flag_values(args, "-C")
        .into_iter()
        .find_map(|c| c.strip_prefix("extra-filename="))
        .unwrap_or("")
        .to_string();
    Some(Path::new(out_dir).join(format!("{name}{extra}.d")))
}

/// The executable rustc writes for a final crate: `<out-dir>/<name><extra>`.
fn output_path(args: &[String]) -> Option<PathBuf> {
    let out_dir = flag_value(args, "--out-dir")?;
    let name = flag_value(args, "--crate-name")?;
    let extra = flag_values(args, "-C").into_iter().find_map(|c| c.strip_prefix("extra-filename=")).unwrap_or("");
    Some(Path::new(out_dir).join(format!("{name}{extra}{}", std::env::consts::EXE_SUFFIX)))
}

/// One launcher's record in a binary's section `offload_kernels`:
/// `symbol\tfile:line`, with `\tgeneric` for a generic kernel (whose
/// `symbol` is the base of its instantiations' symbols).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct KernelRecord {
    pub symbol: String,
    pub location: String,
    pub generic: bool,
}

/// The kernel records that the launchers linked into a binary left in its
/// section `offload_kernels`.
pub fn kernel_records(exe: &Path) -> Vec<KernelRecord> {
    use object::{Object, ObjectSection};
    let Ok(bytes) = std::fs::read(exe) else { return Vec::new() };
    let Ok(file) = object::File::parse(&*bytes) else { return Vec::new() };
    let Some(data) = file.section_by_name("offload_kernels").and_then(|s| s.data().ok()) else { return Vec::new() };
    data.split(|&b| b == 0)
        .filter(|r| !r.is_empty())
        .filter_map(|r| {
            let r = String::from_utf8_lossy(r);
            let mut parts = r.split('\t');
            let symbol = parts.next()?.to_string();
            let location = parts.next()?.to_string();
            let generic = parts.next() == Some("generic");
            Some(KernelRecord { symbol, location, generic })
        })
        .collect()
}

/// The identity of a final binary in the lists of generic kernel
/// instantiations: crate name, root source file, and whether it is a test.
pub fn binary_key(args: &[String]) -> Option<String> {
    let name = flag_value(args, "--crate-name")?;
    let test = args.iter().any(|a| a == "--test");
    if !test && !is_bin(args) {
        return None;
    }
    let src = source_file(args)?;
    let src = std::fs::canonicalize(src).unwrap_or_else(|_| PathBuf::from(src));
    Some(format!("{name} {}{}", src.display(), if test { " --test" } else { "" }).replace('\t', " "))
}

/// Collect round: logs the final binary `key` (crate `bin`, linked as
/// `exe`) and the generic kernel instantiations it uses (see
/// `generic::merge`).
pub fn collect_instances(exe: &Path, bin: &str, key: &str, log: &Path) -> Result<(), String> {
    use std::io::Write;
    let records = kernel_records(exe);
    let instances = crate::generic::instances_of(exe, bin, records.iter().any(|r| r.generic))?;
    let mut text = format!("{key}\t-\n");
    for i in &instances {
        let loc = records.iter().find(|r| r.symbol == i.base).map(|r| r.location.as_str()).unwrap_or("?");
        text.push_str(&format!("{key}\t{}\t{}\t{loc}\n", i.base, i.args));
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .map_err(|e| format!("error: cannot write {}: {e}", log.display()))?;
    // One write per binary: cargo links binaries in parallel.
    f.write_all(text.as_bytes()).map_err(|e| format!("error: cannot write {}: {e}", log.display()))
}

/// Checks that the image has a kernel for every launcher in the binary, and
/// every instantiation of a generic kernel that the binary launches.
pub fn check_kernels(exe: &Path, entry: &ImageMapEntry) -> Result<(), String> {
    let records = kernel_records(exe);
    let generic = records.iter().any(|r| r.generic);
    let instances = crate::generic::instances_of(exe, &entry.crate_name, generic)?;
    let absent: Vec<_> = instances.iter().filter(|i| !entry.kernels.contains(&i.symbol())).collect();
    if !absent.is_empty() {
        let list: String = absent
            .iter()
            .map(|i| {
                let loc = records.iter().find(|r| r.symbol == i.base).map(|r| r.location.as_str()).unwrap_or("?");
                format!("\n  `{}` for `{}`, generic kernel defined at {loc}", i.base, i.args)
            })
            .collect();
        return Err(format!(
            "error: {} instantiation(s) of generic kernels that `{}` launches are missing from its device image:{list}\n  \
             = help: `cargo offload` compiles the instantiations it finds in a host build first; if this persists, \
             report it with the output of `cargo offload build -vv`",
            absent.len(),
            entry.crate_name
        ));
    }
    let mut missing: Vec<(String, String)> = records
        .into_iter()
        .filter(|r| !r.generic && !entry.kernels.contains(&r.symbol))
        .map(|r| (r.symbol, r.location))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    missing.sort();
    missing.dedup();
    let list: String = missing.iter().map(|(sym, loc)| format!("\n  `{sym}`, defined at {loc}")).collect();
    Err(format!(
        "error: {} kernel(s) that `{}` can launch are missing from its device image:{list}\n  = help: the device pass \
         did not compile them. A kernel defined inside host-only code (an `#[offload::host]` item, `fn main`, code under \
         `#[cfg(not(offload_device))]`, or a dependency that only host code declares) exists only on the host: define \
         it at module level, outside host-only code",
        missing.len(),
        entry.crate_name
    ))
}

/// The map entry for this compilation, if it is a final crate with an image.
pub fn find_image<'m>(args: &[String], map: &'m [ImageMapEntry]) -> Option<&'m ImageMapEntry> {
    let name = flag_value(args, "--crate-name")?;
    let test = args.iter().any(|a| a == "--test");
    let is_bin = is_bin(args);
    if !test && !is_bin {
        return None;
    }
    let src = source_file(args)?;
    let src = std::fs::canonicalize(src).unwrap_or_else(|_| PathBuf::from(src));
    let same = |e: &&ImageMapEntry| e.crate_name == name && e.src_path == src;
    // A bin and its unit tests share name and source and differ in `--test`;
    // a `harness = false` bench or test is a test to cargo but gets no
    // `--test`, and is the only build of its source. A `--test` build never
    // takes the image of a non-test build: its `#[cfg(test)]` kernels differ.
    map.iter().find(|e| same(e) && e.test == test).or_else(|| {
        if test {
            return None;
        }
        let mut it = map.iter().filter(same);
        it.next().filter(|_| it.next().is_none())
    })
}

/// The host phase's rewrite; returns the image this binary links (its
/// object is recorded in the dep-info, its kernels checked), if any.
pub fn host_args<'m>(args: &[String], map: &'m [ImageMapEntry]) -> (Vec<String>, Option<&'m ImageMapEntry>) {
    let mut out = args.to_vec();
    out.push("--check-cfg".into());
    out.push("cfg(offload_device)".into());
    // v0 symbol names carry type arguments: `cargo offload` reads the
    // instantiations of generic kernels from them (see `generic.rs`).
    out.push("-C".into());
    out.push("symbol-mangling-version=v0".into());
    match find_image(args, map) {
        Some(e) => {
            out.push("-C".into());
            out.push(format!("link-arg={}", e.object.display()));
            (out, Some(e))
        }
        None => (out, None),
    }
}

fn command(rustc: &str, args: &[String]) -> Command {
    match std::env::var_os(INNER_VAR).filter(|w| !w.is_empty()) {
        Some(inner) => {
            let mut c = Command::new(inner);
            c.arg(rustc).args(args);
            c
        }
        None => {
            let mut c = Command::new(rustc);
            c.args(args);
            c
        }
    }
}

fn run(rustc: &str, args: &[String]) -> i32 {
    match command(rustc, args).status() {
        Ok(s) => s.code().unwrap_or(101),
        Err(e) => {
            eprintln!("error: cargo-offload: could not run `{rustc}`: {e}");
            101
        }
    }
}

/// The wrapper's `main`.
pub fn main(argv: Vec<OsString>) -> i32 {
    let argv: Vec<String> = argv.into_iter().map(|a| a.to_string_lossy().into_owned()).collect();
    let rustc = argv[1].clone();
    let args = &argv[2..];
    if is_query(args) {
        return run(&rustc, args);
    }
    match std::env::var(PHASE_VAR).as_deref() {
        Ok("device") => {
            if is_gpu_target(args) {
                if let (Some(log), Some(name)) = (std::env::var_os(COMPILE_LOG_VAR), flag_value(args, "--crate-name")) {
                    use std::io::Write;
                    if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(log) {
                        let _ = writeln!(f, "{name}");
                    }
                }
            }
            if !is_gpu_target(args) || is_sysroot_crate(args) {
                return run(&rustc, args);
            }
            let root = source_file(args).and_then(|p| std::fs::read_to_string(p).ok());
            run(&rustc, &device_args(args, root.as_deref()))
        }
        Ok("host") => {
            let map = std::env::var_os(MAP_VAR).and_then(|p| read_map(Path::new(&p))).unwrap_or_default();
            let (new_args, image) = host_args(args, &map);
            let code = run(&rustc, &new_args);
            if code == 0 {
                let collect = std::env::var_os(crate::generic::COLLECT_VAR).map(PathBuf::from);
                let key = binary_key(args);
                // A final binary the collect round links depends on a file
                // that never exists, so that cargo links it again in the
                // final host pass: with its image if it had none yet, and
                // with the check of its kernels against the image, which
                // the collect round skips (its images may be out of date).
                let pending = match &collect {
                    Some(log)
                        if key.is_some()
                            && !flag_value(args, "--crate-name").is_some_and(|n| n.starts_with("build_script_")) =>
                    {
                        Some(log.with_file_name("image-pending"))
                    }
                    _ => None,
                };
                if let Some(d) = dep_info_path(args) {
                    if let Ok(mut contents) = std::fs::read_to_string(&d) {
                        for dep in image.map(|e| e.object.as_path()).into_iter().chain(pending.as_deref()) {
                            contents = add_dep_info(&contents, dep);
                        }
                        let _ = crate::embed::write_atomic(&d, contents.as_bytes());
                    }
                }
                let result = match (collect, key, output_path(args), flag_value(args, "--crate-name")) {
                    // Collect round: images may be out of date; only read
                    // which generic kernel instantiations the binary uses.
                    (Some(log), Some(key), Some(exe), Some(bin)) => collect_instances(&exe, bin, &key, &log),
                    (Some(_), ..) => Ok(()),
                    (None, _, Some(exe), _) => image.map_or(Ok(()), |entry| check_kernels(&exe, entry)),
                    (None, ..) => Ok(()),
                };
                if let Err(msg) = result {
                    eprintln!("{msg}");
                    return 1;
                }
            }
            code
        }
        _ => run(&rustc, args),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn probes_pass_through() {
        assert!(is_query(&v("- --crate-name ___ --print=file-names --crate-type bin")));
        assert!(is_query(&v("-vV")));
        assert!(!is_query(&v("--crate-name a src/main.rs --crate-type bin")));
    }

    #[test]
    fn finds_the_source_file() {
        let a = v("--crate-name foo --edition=2021 src/main.rs --error-format=json --crate-type bin -C opt-level=3 --cfg x.rs");
        assert_eq!(source_file(&a), Some("src/main.rs"));
        assert_eq!(source_file(&v("--cfg a.rs --crate-name b")), None);
    }

    #[test]
    fn device_rewrites() {
        let a = v("--crate-name s --edition=2021 src/main.rs --crate-type bin --target nvptx64-nvidia-cuda");
        assert_eq!(
            device_args(&a, Some("fn main() {}")),
            v("--crate-name s --edition=2021 src/main.rs --crate-type cdylib --target nvptx64-nvidia-cuda -Zcrate-attr=no_std -A dead_code -A unused_imports -A unused_macros")
        );
        let t = v("--crate-name s src/main.rs --test --target nvptx64-nvidia-cuda");
        assert_eq!(
            device_args(&t, Some("#![cfg_attr(not(feature = \"std\"), no_std)]")),
            v("--crate-name s src/main.rs --target nvptx64-nvidia-cuda --crate-type cdylib --cfg test -A dead_code -A unused_imports -A unused_macros")
        );
        let l = v("--crate-name l src/lib.rs --crate-type lib --target nvptx64-nvidia-cuda");
        let mut quiet = l.clone();
        quiet.extend(v("-A dead_code -A unused_imports -A unused_macros"));
        assert_eq!(device_args(&l, Some("#![no_std]\n")), quiet);
        // A `harness = false` bench: no crate type is rustc's default, bin.
        let b = v("--crate-name b benches/b.rs --cfg test --target nvptx64-nvidia-cuda");
        assert_eq!(
            device_args(&b, Some("fn main() {}")),
            v("--crate-name b benches/b.rs --cfg test --target nvptx64-nvidia-cuda --crate-type cdylib -Zcrate-attr=no_std -A dead_code -A unused_imports -A unused_macros")
        );
        assert!(is_bin(&b) && !is_bin(&l) && is_bin(&a) && !is_bin(&t));
        assert!(is_gpu_target(&a));
        assert!(!is_gpu_target(&v("--crate-name build_script_build build.rs --crate-type bin")));
    }

    #[test]
    fn externs_are_forced() {
        assert_eq!(force_extern("ws=/t/libws.rlib"), "force:ws=/t/libws.rlib");
        assert_eq!(force_extern("noprelude,nounused:core=/t/libcore.rlib"), "noprelude,nounused,force:core=/t/libcore.rlib");
        assert_eq!(force_extern("force:x=/p"), "force:x=/p");
        let a = v("--crate-name s src/main.rs --crate-type bin --extern ws=/t/libws.rlib -Z unstable-options");
        let out = device_args(&a, Some("#![no_std]"));
        assert!(out.windows(2).any(|w| w[0] == "--extern" && w[1] == "force:ws=/t/libws.rlib"), "{out:?}");
        assert!(!out.contains(&"-Zunstable-options".to_string()), "already given: {out:?}");
    }

    #[test]
    fn host_adds_the_image_of_final_crates_only() {
        let dir = std::env::temp_dir().join(format!("offload-wrap-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("src")).unwrap();
        let main = dir.join("src/main.rs");
        std::fs::write(&main, "fn main() {}").unwrap();
        let main = std::fs::canonicalize(&main).unwrap();
        let entry = ImageMapEntry {
            crate_name: "s".into(),
            src_path: main.clone(),
            test: false,
            object: "/img/s.o".into(),
            kernels: vec![],
        };
        let map = vec![entry];
        let bin = vec![
            "--crate-name".to_string(),
            "s".into(),
            main.display().to_string(),
            "--crate-type".into(),
            "bin".into(),
        ];
        let (args, image) = host_args(&bin, &map);
        assert_eq!(image.map(|e| e.object.clone()), Some(PathBuf::from("/img/s.o")));
        assert!(args.ends_with(&["-C".to_string(), "link-arg=/img/s.o".to_string()]));
        // the unit-test build of the same bin has no image in this map
        let mut test = bin.clone();
        test.truncate(3);
        test.push("--test".into());
        assert_eq!(host_args(&test, &map).1, None);
        // A `harness = false` bench: cargo's profile says test, rustc gets
        // neither `--test` nor a crate type; the only image of its source is its.
        let bench = vec![ImageMapEntry { test: true, ..map[0].clone() }];
        let mut plain = bin.clone();
        plain.truncate(3);
        assert_eq!(host_args(&plain, &bench).1.map(|e| e.object.clone()), Some(PathBuf::from("/img/s.o")));
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn dep_info_gains_the_image() {
        let d = "/t/deps/s-1.d: src/main.rs src/k.rs\n\nsrc/main.rs:\nsrc/k.rs:\n\n# env-dep:X=1\n";
        let out = add_dep_info(d, Path::new("/t/img dir/s.o"));
        assert!(out.starts_with("/t/deps/s-1.d: src/main.rs src/k.rs /t/img\\ dir/s.o\n"));
        assert!(out.ends_with("/t/img\\ dir/s.o:\n"));
        assert_eq!(out.matches("s.o").count(), 2);
    }

    #[test]
    fn missing_kernels_are_named() {
        let entry = ImageMapEntry {
            crate_name: "app".into(),
            src_path: "/x/src/main.rs".into(),
            test: false,
            object: "/img/app.o".into(),
            kernels: vec!["__offload_kernel_app_a_1".into()],
        };
        // An executable without records (this test binary has none of its own).
        let exe = std::env::current_exe().unwrap();
        assert!(check_kernels(&exe, &entry).is_ok());
        assert_eq!(kernel_records(Path::new("/nonexistent")), vec![]);
    }

    #[test]
    fn dep_info_path_from_args() {
        let a = v("--crate-name s src/main.rs --emit=dep-info,link -C extra-filename=-abc --out-dir /t/deps");
        assert_eq!(dep_info_path(&a), Some(PathBuf::from("/t/deps/s-abc.d")));
        assert_eq!(dep_info_path(&v("--crate-name s --emit=link --out-dir /t")), None);
    }
}
