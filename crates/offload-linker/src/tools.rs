//! Finding LLVM tools that match rustc's LLVM.
//!
//! Bitcode is only readable by an LLVM of the same major version (or newer)
//! as the one that wrote it, and the device pass's rustc writes it, so the
//! tools must have the major version rustc reports in `rustc -vV`
//! (`LLVM version: 22.1.8`). Searched, per tool (`llvm-link`, `opt`, `llc`,
//! and `ld.lld` for AMD GPUs):
//!
//! 1. `OFFLOAD_LLVM_LINK`, `OFFLOAD_OPT`, `OFFLOAD_LLC`, `OFFLOAD_LLD`;
//! 2. `<sysroot>/lib/rustlib/<host>/bin/<tool>`: rustup's `llvm-tools` component;
//! 3. `<tool>-<major>` on `PATH` (Debian/Ubuntu `llvm-<major>` packages);
//! 4. `/usr/lib/llvm-<major>/bin/<tool>`;
//! 5. `$(llvm-config-<major> --bindir)` and `$(llvm-config --bindir)`;
//! 6. `<tool>` on `PATH`.
//!
//! A candidate is taken only if `<tool> --version` reports the same major.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A missing or mismatched LLVM tool.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// No candidate of the right version exists.
    #[error(
        "no `{tool}` from LLVM {major} found (searched {searched}); the device link needs LLVM {major}'s tools, the major version of the device rustc's LLVM. Install them: on Debian/Ubuntu `apt-get install llvm-{major} lld-{major}`; with rustup `rustup component add llvm-tools --toolchain nightly`; or point OFFLOAD_LLVM_LINK / OFFLOAD_OPT / OFFLOAD_LLC at them"
    )]
    Missing {
        /// The tool's name.
        tool: String,
        /// The LLVM major version needed.
        major: u32,
        /// Where it was looked for.
        searched: String,
    },
    /// A tool given explicitly has another major version.
    #[error("`{path}` is LLVM {found}, but the device rustc uses LLVM {major}; use LLVM {major}'s `{tool}`")]
    WrongVersion {
        /// The tool's name.
        tool: String,
        /// Its path.
        path: PathBuf,
        /// Its major version.
        found: u32,
        /// The major version needed.
        major: u32,
    },
    /// The LLVM major version is unknown.
    #[error(
        "the device rustc's LLVM version is unknown: set OFFLOAD_LLVM_MAJOR or run the linker through `cargo offload`"
    )]
    NoMajor,
}

/// The LLVM tools of one major version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LlvmTools {
    /// LLVM major version, e.g. 22.
    pub major: u32,
    /// `llvm-link`.
    pub llvm_link: PathBuf,
    /// `opt`.
    pub opt: PathBuf,
    /// `llc`.
    pub llc: PathBuf,
    /// `ld.lld` (or `rust-lld`), needed for AMD GPU code objects only.
    pub lld: Option<PathBuf>,
}

/// The major version `<tool> --version` reports (`LLVM version 22.1.8`,
/// `LLD 22.1.8`), if it runs.
pub fn tool_major(path: &Path) -> Option<u32> {
    let out = offload_image::probe::cached(path, &["--version"], || Command::new(path).arg("--version").output().ok())?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    parse_major(&text)
}

/// Finds the major version in `--version` output.
pub fn parse_major(text: &str) -> Option<u32> {
    for line in text.lines() {
        let lower = line.to_ascii_lowercase();
        let rest = lower
            .split("llvm version")
            .nth(1)
            .or_else(|| lower.split("lld ").nth(1))
            .or_else(|| lower.strip_prefix("llvm ").map(|s| s as &str));
        if let Some(rest) = rest {
            let v = rest.trim_start_matches([' ', ':']);
            let major: String = v.chars().take_while(|c| c.is_ascii_digit()).collect();
            if let Ok(m) = major.parse() {
                return Some(m);
            }
        }
    }
    None
}

fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file())
}

fn host_triple_dirs(sysroot: &Path) -> Vec<PathBuf> {
    let rustlib = sysroot.join("lib").join("rustlib");
    match std::fs::read_dir(&rustlib) {
        Ok(rd) => rd.flatten().map(|e| e.path().join("bin")).filter(|p| p.is_dir()).collect(),
        Err(_) => Vec::new(),
    }
}

fn llvm_config_bindirs(major: u32) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for cfg in [format!("llvm-config-{major}"), "llvm-config".to_string()] {
        let Some(path) = on_path(&cfg) else { continue };
        let version =
            offload_image::probe::cached(&path, &["--version"], || Command::new(&path).arg("--version").output().ok());
        let ok = version.as_ref().is_some_and(|o| {
            String::from_utf8_lossy(&o.stdout).trim().split('.').next().and_then(|m| m.parse().ok()) == Some(major)
        });
        if !ok {
            continue;
        }
        if let Some(o) =
            offload_image::probe::cached(&path, &["--bindir"], || Command::new(&path).arg("--bindir").output().ok())
        {
            let dir = PathBuf::from(String::from_utf8_lossy(&o.stdout).trim());
            if dir.is_dir() {
                dirs.push(dir);
            }
        }
    }
    dirs
}

/// Finds one tool (see the module docs for the order).
pub fn find_tool(
    tool: &str,
    env: &str,
    major: u32,
    sysroot: Option<&Path>,
    extra_names: &[&str],
) -> Result<PathBuf, ToolError> {
    if let Some(p) = std::env::var_os(env).filter(|v| !v.is_empty()) {
        let p = PathBuf::from(p);
        return match tool_major(&p) {
            Some(m) if m == major => Ok(p),
            Some(found) => Err(ToolError::WrongVersion { tool: tool.into(), path: p, found, major }),
            None => Err(ToolError::Missing { tool: tool.into(), major, searched: format!("{env}={}", p.display()) }),
        };
    }
    let mut candidates = Vec::new();
    let names: Vec<String> =
        std::iter::once(tool.to_string()).chain(extra_names.iter().map(|s| s.to_string())).collect();
    if let Some(sysroot) = sysroot {
        for dir in host_triple_dirs(sysroot) {
            for n in &names {
                candidates.push(dir.join(n));
                candidates.push(dir.join("gcc-ld").join(n));
            }
        }
    }
    for n in &names {
        if let Some(p) = on_path(&format!("{n}-{major}")) {
            candidates.push(p);
        }
        candidates.push(PathBuf::from(format!("/usr/lib/llvm-{major}/bin/{n}")));
    }
    for dir in llvm_config_bindirs(major) {
        for n in &names {
            candidates.push(dir.join(n));
        }
    }
    for n in &names {
        if let Some(p) = on_path(n) {
            candidates.push(p);
        }
    }
    for c in &candidates {
        if c.is_file() && tool_major(c) == Some(major) {
            return Ok(c.clone());
        }
    }
    Err(ToolError::Missing {
        tool: tool.into(),
        major,
        searched: format!(
            "{env}, rustup's llvm-tools, {tool}-{major} on PATH, /usr/lib/llvm-{major}/bin, llvm-config, {tool} on PATH"
        ),
    })
}

impl LlvmTools {
    /// Finds `llvm-link`, `opt`, `llc` (required) and `ld.lld` (optional) of
    /// LLVM `major`.
    pub fn discover(major: u32, sysroot: Option<&Path>) -> Result<Self, ToolError> {
        Ok(LlvmTools {
            major,
            llvm_link: find_tool("llvm-link", "OFFLOAD_LLVM_LINK", major, sysroot, &[])?,
            opt: find_tool("opt", "OFFLOAD_OPT", major, sysroot, &[])?,
            llc: find_tool("llc", "OFFLOAD_LLC", major, sysroot, &[])?,
            lld: find_tool("ld.lld", "OFFLOAD_LLD", major, sysroot, &["rust-lld"]).ok(),
        })
    }

    /// The tools named by the `OFFLOAD_*` variables that `cargo offload`
    /// sets for the device pass (major in `OFFLOAD_LLVM_MAJOR`), completed by
    /// discovery.
    pub fn from_env_or_discover() -> Result<Self, ToolError> {
        let major = std::env::var("OFFLOAD_LLVM_MAJOR").ok().and_then(|m| m.parse().ok()).ok_or(ToolError::NoMajor)?;
        let sysroot = std::env::var_os("OFFLOAD_SYSROOT").map(PathBuf::from);
        Self::discover(major, sysroot.as_deref())
    }

    /// The `opt` passes that expand integer division and float conversions
    /// wider than 64 bits (with `--expand-div-rem-bits=64` and
    /// `--expand-fp-convert-bits=64`). LLVM 22 merged them into
    /// `expand-ir-insts`, which needs the libcall-lowering analysis.
    pub fn expand_passes(&self) -> String {
        Self::expand_passes_for(self.major)
    }

    /// [`expand_passes`](Self::expand_passes) for LLVM `major`.
    pub fn expand_passes_for(major: u32) -> String {
        if major >= 22 {
            "require<libcall-lowering-info>,expand-ir-insts<O3>".into()
        } else {
            "expand-large-div-rem,expand-large-fp-convert".into()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions() {
        assert_eq!(parse_major("Debian LLVM version 22.1.8\n  Optimized build."), Some(22));
        assert_eq!(parse_major("LLVM (http://llvm.org/):\n  LLVM version 22.1.4-rust-1.97.0-nightly\n"), Some(22));
        assert_eq!(parse_major("Debian LLD 22.1.8 (compatible with GNU linkers)"), Some(22));
        assert_eq!(parse_major("no version here"), None);
    }

    #[test]
    fn explicit_tool_of_wrong_version_is_named() {
        // A script that claims to be LLVM 14.
        let dir = std::env::temp_dir().join(format!("offload-tools-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fake = dir.join("llvm-link");
        std::fs::write(&fake, "#!/bin/sh\necho 'LLVM version 14.0.6'\n").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
            std::env::set_var("OFFLOAD_TEST_FAKE_LINK", &fake);
            let e = find_tool("llvm-link", "OFFLOAD_TEST_FAKE_LINK", 22, None, &[]).unwrap_err();
            assert_eq!(
                e,
                ToolError::WrongVersion { tool: "llvm-link".into(), path: fake.clone(), found: 14, major: 22 }
            );
            assert!(e.to_string().contains("is LLVM 14, but the device rustc uses LLVM 22"));
        }
        let e = find_tool("no-such-llvm-tool", "OFFLOAD_TEST_UNSET", 22, None, &[]).unwrap_err();
        assert!(e.to_string().contains("apt-get install llvm-22"), "{e}");
        assert!(e.to_string().contains("rustup component add llvm-tools"), "{e}");
    }
}
