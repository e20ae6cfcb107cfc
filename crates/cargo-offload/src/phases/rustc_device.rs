//! The wrapper's device phase: rustc for the device pass (`__OFFLOAD_PHASE=
//! device`, through `RUSTC_WRAPPER`).
//!
//! For crates compiled for the GPU target (host-side build scripts and
//! proc macros pass through; cargo's probes never get here):
//! - crates of the sysroot (`core`, `compiler_builtins`) pass through;
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
//! A library that does not depend on `offload` and fails to compile for the
//! GPU is replaced by an empty crate (`host_only`): a dependency only host
//! code uses needs no special section in `Cargo.toml`.
//!
//! Crates that cannot change under the same name (registry crates and
//! offload's own, for the GPU and the proc macros and build scripts they
//! need) are taken from the crate cache when another project compiled them
//! the same way (`crate_cache.rs`).
//!
//! Each crate compiled for the GPU, and each crate taken from the crate
//! cache, is logged (`COMPILE_LOG_VAR`) for the status line of the device
//! pass.

use std::path::PathBuf;

use crate::arg::Args;
use crate::crate_cache::Served;
use crate::errors::Result;
use crate::phases::rustc;

/// The device phase: rewrites the command line of a GPU crate and runs
/// rustc, or takes the crate from the crate cache (`crate_cache.rs`);
/// returns rustc's exit code.
pub fn run(rustc: &str, args: Args) -> Result<i32> {
    let gpu = args.is_gpu_target();
    if gpu && is_sysroot_crate(&args) {
        rustc::log_compile(&args, "");
        return rustc::run(rustc, args.as_slice());
    }
    let argv = if gpu {
        let root = args.source_file().and_then(|p| std::fs::read_to_string(p).ok());
        device_args(&args, root.as_deref())
    } else {
        args.as_slice().to_vec()
    };
    let slot = crate::crate_cache::Slot::new(rustc, &args, &argv);
    let record = slot.is_some();
    let compile = |argv: &[String]| -> Result<(i32, Option<Vec<String>>)> {
        if gpu {
            rustc::log_compile(&args, "");
        }
        if gpu && crate::host_only::replaceable(&args) {
            let markers = std::env::var_os(crate::host_only::HOST_ONLY_DIR_VAR).filter(|d| !d.is_empty());
            crate::host_only::compile(rustc, &args, argv, markers.as_deref().map(std::path::Path::new))
        } else if record {
            let (code, lines) = rustc::run_recorded(rustc, argv)?;
            Ok((code, Some(lines)))
        } else {
            Ok((rustc::run(rustc, argv)?, None))
        }
    };
    match &slot {
        Some(s) => Ok(match s.serve(compile)? {
            Served::Restored => rustc::log_cached(&args),
            Served::Compiled(code) => code,
        }),
        None => Ok(compile(&argv)?.0),
    }
}

/// A crate of the sysroot (built by `-Zbuild-std`): its root file is under
/// `$OFFLOAD_SYSROOT/lib/rustlib/src`.
fn is_sysroot_crate(args: &Args) -> bool {
    let Some(src) = args.source_file() else { return false };
    let Some(sysroot) = std::env::var_os("OFFLOAD_SYSROOT") else { return false };
    let lib = PathBuf::from(sysroot).join("lib/rustlib/src");
    let lib = std::fs::canonicalize(&lib).unwrap_or(lib);
    let src = std::fs::canonicalize(src).unwrap_or_else(|_| PathBuf::from(src));
    src.starts_with(&lib)
}

/// Whether the root file declares `no_std` itself (`#![no_std]` or inside
/// `cfg_attr`); then adding it again would only warn.
pub fn declares_no_std(src: &str) -> bool {
    src.lines().any(|l| {
        let l = l.trim_start();
        l.starts_with("#![") && l.contains("no_std")
    })
}

/// The device phase's rewrite of a rustc command line (see the module
/// docs); `root_src` is the text of the crate's root file. Arguments after
/// `--` are kept as they are.
pub fn device_args(args: &Args, root_src: Option<&str>) -> Vec<String> {
    let all = args.as_slice();
    let end = all.iter().position(|a| a == "--").unwrap_or(all.len());
    let mut out = Vec::with_capacity(all.len() + 12);
    let mut it = all[..end].iter();
    let mut forced = false;
    let cdylib =
        |types: &str| types.split(',').map(|t| if t == "bin" { "cdylib" } else { t }).collect::<Vec<_>>().join(",");
    while let Some(a) = it.next() {
        match a.as_str() {
            "--test" => {}
            "--extern" => {
                out.push(a.clone());
                out.push(force_extern(it.next().map(String::as_str).unwrap_or_default()));
                forced = true;
            }
            "--crate-type" => {
                out.push(a.clone());
                out.push(cdylib(it.next().map(String::as_str).unwrap_or_default()));
            }
            _ => match a.strip_prefix("--crate-type=") {
                Some(types) => out.push(format!("--crate-type={}", cdylib(types))),
                None => out.push(a.clone()),
            },
        }
    }
    if args.is_test() {
        out.extend(["--crate-type", "cdylib", "--cfg", "test"].map(String::from));
    } else if args.crate_types().is_empty() {
        // rustc's default crate type is bin: cargo gives none for a
        // `harness = false` bench or test.
        out.extend(["--crate-type", "cdylib"].map(String::from));
    }
    if !root_src.is_some_and(declares_no_std) {
        out.push("-Zcrate-attr=no_std".into());
    }
    // Host-only items are compiled out here, which leaves helpers and imports
    // only they use looking dead; the host pass reports real ones.
    for lint in ["dead_code", "unused_imports", "unused_macros"] {
        out.push("-A".into());
        out.push(lint.into());
    }
    if forced && !all[..end].windows(2).any(|w| w[0] == "-Z" && w[1] == "unstable-options") {
        out.push("-Zunstable-options".into());
    }
    out.extend(all[end..].iter().cloned());
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

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    const QUIET: &str = "-A dead_code -A unused_imports -A unused_macros";

    /// (rustc's argv, root file text, the device phase's argv)
    #[test]
    fn device_rewrites() {
        let table: &[(&str, &str, String)] = &[
            (
                "--crate-name s --edition=2021 src/main.rs --crate-type bin --target nvptx64-nvidia-cuda",
                "fn main() {}",
                format!("--crate-name s --edition=2021 src/main.rs --crate-type cdylib --target nvptx64-nvidia-cuda -Zcrate-attr=no_std {QUIET}"),
            ),
            (
                "--crate-name s src/main.rs --test --target nvptx64-nvidia-cuda",
                "#![cfg_attr(not(feature = \"std\"), no_std)]",
                format!("--crate-name s src/main.rs --target nvptx64-nvidia-cuda --crate-type cdylib --cfg test {QUIET}"),
            ),
            (
                "--crate-name l src/lib.rs --crate-type lib --target nvptx64-nvidia-cuda",
                "#![no_std]\n",
                format!("--crate-name l src/lib.rs --crate-type lib --target nvptx64-nvidia-cuda {QUIET}"),
            ),
            // A `harness = false` bench: no crate type is rustc's default, bin.
            (
                "--crate-name b benches/b.rs --cfg test --target nvptx64-nvidia-cuda",
                "fn main() {}",
                format!("--crate-name b benches/b.rs --cfg test --target nvptx64-nvidia-cuda --crate-type cdylib -Zcrate-attr=no_std {QUIET}"),
            ),
            (
                "--crate-name s src/main.rs --crate-type=bin --target=nvptx64-nvidia-cuda",
                "#![no_std]",
                format!("--crate-name s src/main.rs --crate-type=cdylib --target=nvptx64-nvidia-cuda {QUIET}"),
            ),
            // Nothing after `--` is rewritten or read.
            (
                "--crate-name l src/lib.rs --crate-type lib -- --test --crate-type bin",
                "#![no_std]",
                format!("--crate-name l src/lib.rs --crate-type lib {QUIET} -- --test --crate-type bin"),
            ),
        ];
        for (argv, root, want) in table {
            assert_eq!(device_args(&Args::new(v(argv)), Some(root)), v(want), "{argv}");
        }
    }

    #[test]
    fn externs_are_forced() {
        assert_eq!(force_extern("ws=/t/libws.rlib"), "force:ws=/t/libws.rlib");
        assert_eq!(
            force_extern("noprelude,nounused:core=/t/libcore.rlib"),
            "noprelude,nounused,force:core=/t/libcore.rlib"
        );
        assert_eq!(force_extern("force:x=/p"), "force:x=/p");
        let a =
            Args::new(v("--crate-name s src/main.rs --crate-type bin --extern ws=/t/libws.rlib -Z unstable-options"));
        let out = device_args(&a, Some("#![no_std]"));
        assert!(out.windows(2).any(|w| w[0] == "--extern" && w[1] == "force:ws=/t/libws.rlib"), "{out:?}");
        assert!(!out.contains(&"-Zunstable-options".to_string()), "already given: {out:?}");
        let a = Args::new(v("--crate-name s src/main.rs --crate-type bin --extern ws=/t/libws.rlib"));
        assert!(device_args(&a, Some("#![no_std]")).ends_with(&["-Zunstable-options".to_string()]));
    }
}
