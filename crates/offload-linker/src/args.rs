//! rustc's command line for an `llbc`-flavor linker ([`LinkArgs`]).

use std::path::PathBuf;

use crate::error::LinkError;
use crate::symbols::{GLOBAL_PREFIX, KERNEL_PREFIX};

/// The command line rustc gives an `llbc`-flavor linker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkArgs {
    /// Bitcode objects and rlibs, in rustc's order.
    pub files: Vec<PathBuf>,
    /// `--export-symbol` values.
    pub exports: Vec<String>,
    /// `--target` triple.
    pub target: String,
    /// `--target-cpu`, e.g. `sm_90` or `gfx90a`.
    pub target_cpu: Option<String>,
    /// `--target-feature` list.
    pub target_feature: Option<String>,
    /// `-o`.
    pub output: PathBuf,
    /// `-O<level>`: `0`..`3`, `s` or `z`.
    pub opt_level: String,
    /// `--debug` was given.
    pub debug: bool,
    /// `--fast-math` was given (through `-C link-arg`, by
    /// `cargo offload --fast-math`): see [`FAST_MATH_LLC`].
    pub fast_math: bool,
    /// `--fmad` was given (by `cargo offload --fmad`): contract `a * b + c`
    /// into fused multiply-adds, nvcc's default `--fmad=true`, without the
    /// other approximations of `--fast-math`.
    pub fmad: bool,
}

/// Parses rustc's linker command line (see [`LinkArgs`]). Arguments of the
/// form `@file` are expanded from the file, one argument per line, as rustc
/// writes them when a command line is too long.
pub fn parse_args<I: IntoIterator<Item = String>>(args: I) -> Result<LinkArgs, LinkError> {
    let mut expanded = Vec::new();
    for a in args {
        if let Some(path) = a.strip_prefix('@') {
            let text = std::fs::read_to_string(path).map_err(|source| LinkError::Io { path: path.into(), source })?;
            expanded.extend(text.lines().map(String::from));
        } else {
            expanded.push(a);
        }
    }
    let mut it = expanded.into_iter();
    let mut out = LinkArgs {
        files: Vec::new(),
        exports: Vec::new(),
        target: String::new(),
        target_cpu: None,
        target_feature: None,
        output: PathBuf::new(),
        opt_level: "0".into(),
        debug: false,
        fast_math: false,
        fmad: false,
    };
    let value = |it: &mut std::vec::IntoIter<String>, flag: &str| {
        it.next().ok_or_else(|| LinkError::Args(format!("`{flag}` needs a value")))
    };
    while let Some(a) = it.next() {
        match a.as_str() {
            "--export-symbol" => out.exports.push(value(&mut it, &a)?),
            "--target" => out.target = value(&mut it, &a)?,
            "--target-cpu" => out.target_cpu = Some(value(&mut it, &a)?),
            "-o" | "--output" => out.output = value(&mut it, &a)?.into(),
            "-L" => {
                value(&mut it, &a)?;
            }
            "--debug" => out.debug = true,
            "--fast-math" => out.fast_math = true,
            "--fmad" => out.fmad = true,
            "--lto" => {}
            _ => {
                if let Some(v) = a.strip_prefix("--target-feature=") {
                    out.target_feature = Some(v.into());
                } else if let Some(v) = a.strip_prefix("--export-symbol=") {
                    out.exports.push(v.into());
                } else if let Some(v) = a.strip_prefix("--target=") {
                    out.target = v.into();
                } else if let Some(v) = a.strip_prefix("--target-cpu=") {
                    out.target_cpu = Some(v.into());
                } else if let Some(v) = a.strip_prefix("-O") {
                    out.opt_level = v.into();
                } else if a.starts_with("-L") {
                } else if a.starts_with('-') {
                    return Err(LinkError::Args(format!("unknown flag `{a}`")));
                } else {
                    out.files.push(a.into());
                }
            }
        }
    }
    if out.output.as_os_str().is_empty() {
        return Err(LinkError::Args("no output file (`-o`)".into()));
    }
    if out.target.is_empty() {
        return Err(LinkError::Args("no `--target`".into()));
    }
    Ok(out)
}

impl LinkArgs {
    /// The crates whose code this link takes, as `CARGO_CRATE_NAME` spells
    /// them: those of the rlibs (`lib<name>-<hash>.rlib`) and of the crate's
    /// own bitcode objects (`<name>.<name>.<hash>-cgu.0.rcgu.o`). Kernel
    /// symbols start with one of them (see `offload_image::symbol::kernel_path`).
    pub fn input_crates(&self) -> Vec<String> {
        let mut c: Vec<String> = self
            .files
            .iter()
            .filter_map(|f| f.file_name()?.to_str())
            .filter_map(|n| match n.strip_suffix(".rlib") {
                Some(lib) => lib.strip_prefix("lib")?.rsplit_once('-').map(|(name, _)| name),
                None => n.split_once('.').map(|(name, _)| name),
            })
            .filter(|n| !n.is_empty())
            .map(String::from)
            .collect();
        c.sort();
        c.dedup();
        c
    }
}

/// The runtime globals (`__offload_global_*`) defined in the IR text.
pub fn globals(ir: &str) -> Vec<String> {
    let mut g: Vec<String> = ir
        .lines()
        .filter_map(|l| l.strip_prefix('@'))
        .filter(|l| l.starts_with(GLOBAL_PREFIX))
        .filter_map(|l| l.split([' ', '=']).next())
        .map(String::from)
        .collect();
    g.sort();
    g.dedup();
    g
}

/// The kernels among rustc's exports.
pub fn kernels(exports: &[String]) -> Vec<String> {
    let mut k: Vec<String> = exports.iter().filter(|s| s.starts_with(KERNEL_PREFIX)).cloned().collect();
    k.sort();
    k.dedup();
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn parses_rustc_command_line() {
        let a = parse_args(argv(
            "--export-symbol __offload_kernel_a_k_1 --export-symbol other a.rcgu.o libcore.rlib -L /x \
             --target nvptx64-nvidia-cuda --target-cpu sm_90 -L /y -o out.ptx -O0 --debug --fast-math --fmad",
        ))
        .unwrap();
        assert_eq!(a.exports, ["__offload_kernel_a_k_1", "other"]);
        assert_eq!(a.files, [PathBuf::from("a.rcgu.o"), PathBuf::from("libcore.rlib")]);
        assert_eq!(a.target_cpu.as_deref(), Some("sm_90"));
        assert_eq!(a.output, PathBuf::from("out.ptx"));
        assert_eq!(a.opt_level, "0");
        assert!(a.debug);
        assert!(a.fast_math);
        assert!(a.fmad);
        assert_eq!(kernels(&a.exports), ["__offload_kernel_a_k_1"]);
    }

    #[test]
    fn rejects_bad_command_lines() {
        assert!(
            matches!(parse_args(argv("--target nvptx64-nvidia-cuda a.o")), Err(LinkError::Args(m)) if m.contains("-o"))
        );
        assert!(matches!(parse_args(argv("-o x --bogus")), Err(LinkError::Args(m)) if m.contains("--bogus")));
        assert!(matches!(parse_args(argv("-o")), Err(LinkError::Args(m)) if m.contains("needs a value")));
    }
}
