//! Finding the device toolchain.
//!
//! The device pass needs a rustc that can build `core` for a GPU target with
//! `-Zbuild-std=core`: its library sources (rust-src) and the cargo of the
//! same release. Candidates, first complete one wins:
//!
//! 1. `OFFLOAD_RUSTC` (and `OFFLOAD_CARGO`, default: the `cargo` beside it);
//! 2. rustup's `nightly` toolchain (`rustup which --toolchain nightly rustc`),
//!    with the `rust-src` component;
//! 3. `/usr/bin/rustc` and `/usr/bin/cargo`, Debian's `rustc-web` /
//!    `cargo-web` with `rust-web-src`.
//!
//! The device pass runs with `RUSTC_BOOTSTRAP=1`, so a stable release works;
//! the host pass uses whatever `cargo` ran `cargo offload`.
//! Then: LLVM tools of rustc's LLVM major version (`offload_linker::tools`),
//! and `ptxas` (optional; without it the image holds PTX only).

use std::path::{Path, PathBuf};
use std::process::Command;

use offload_linker::LlvmTools;

use crate::errors::{CliError, Result};

/// A device compiler and what comes with it.
#[derive(Debug, Clone)]
pub struct DeviceToolchain {
    pub rustc: PathBuf,
    pub cargo: PathBuf,
    pub sysroot: PathBuf,
    /// `rustc -V`.
    pub version: String,
    pub llvm_major: u32,
    pub llvm: LlvmTools,
    pub ptxas: Option<PathBuf>,
    /// Which candidate was used (`OFFLOAD_RUSTC`, `rustup nightly`, `/usr/bin/rustc`).
    pub origin: String,
}

/// Output of `rustc -vV`, the parts we use.
#[derive(Debug, Clone)]
pub struct RustcInfo {
    pub version: String,
    pub llvm_major: u32,
}

pub fn rustc_info(rustc: &Path) -> Option<RustcInfo> {
    let out = Command::new(rustc).arg("-vV").env_remove("RUSTC_WRAPPER").output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let version = text.lines().next()?.to_string();
    let llvm_major = text
        .lines()
        .find_map(|l| l.strip_prefix("LLVM version: "))
        .and_then(|v| v.split('.').next())
        .and_then(|m| m.parse().ok())?;
    Some(RustcInfo { version, llvm_major })
}

pub fn sysroot(rustc: &Path) -> Option<PathBuf> {
    let out = Command::new(rustc).args(["--print", "sysroot"]).output().ok()?;
    out.status.success().then(|| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

/// `<sysroot>/lib/rustlib/src/rust/library`, if it holds `core`.
pub fn rust_src(sysroot: &Path) -> Option<PathBuf> {
    let lib = sysroot.join("lib/rustlib/src/rust/library");
    lib.join("core/src/lib.rs").is_file().then_some(lib)
}

fn rustup_nightly(tool: &str) -> Option<PathBuf> {
    let out = Command::new("rustup").args(["which", "--toolchain", "nightly", tool]).output().ok()?;
    out.status.success().then(|| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

/// A device rustc and the cargo of the same release.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub origin: String,
    pub rustc: PathBuf,
    pub cargo: PathBuf,
}

fn candidates() -> Vec<Candidate> {
    let mut c = Vec::new();
    if let Some(r) = std::env::var_os("OFFLOAD_RUSTC").filter(|v| !v.is_empty()) {
        let rustc = PathBuf::from(r);
        let cargo = std::env::var_os("OFFLOAD_CARGO")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| rustc.with_file_name("cargo"));
        c.push(Candidate { origin: "OFFLOAD_RUSTC".into(), rustc, cargo });
        return c;
    }
    if let (Some(rustc), Some(cargo)) = (rustup_nightly("rustc"), rustup_nightly("cargo")) {
        c.push(Candidate { origin: "rustup nightly".into(), rustc, cargo });
    }
    c.push(Candidate { origin: "/usr/bin/rustc".into(), rustc: "/usr/bin/rustc".into(), cargo: "/usr/bin/cargo".into() });
    c
}

const INSTALL_HINT: &str = "install a device toolchain, either with rustup: `rustup toolchain install nightly --component rust-src,llvm-tools`, or on Debian/Ubuntu: `apt-get install rustc-web cargo-web rust-web-src llvm-22 lld-22`; or set OFFLOAD_RUSTC to a rustc that has rust-src";

/// Finds the device rustc and cargo (see the module docs).
pub fn find_rustc() -> Result<(Candidate, RustcInfo, PathBuf)> {
    let mut tried = Vec::new();
    let mut without_src = None;
    for cand in candidates() {
        let Some(info) = rustc_info(&cand.rustc) else {
            tried.push(format!("{} ({}: does not run)", cand.rustc.display(), cand.origin));
            continue;
        };
        let Some(sysroot) = sysroot(&cand.rustc) else {
            tried.push(format!("{} ({}: no sysroot)", cand.rustc.display(), cand.origin));
            continue;
        };
        if rust_src(&sysroot).is_none() {
            tried.push(format!("{} ({}: no rust-src)", cand.rustc.display(), cand.origin));
            without_src.get_or_insert(cand.rustc.clone());
            continue;
        }
        if !cand.cargo.is_file() {
            tried.push(format!("{} ({}: no cargo at {})", cand.rustc.display(), cand.origin, cand.cargo.display()));
            continue;
        }
        return Ok((cand, info, sysroot));
    }
    match without_src {
        Some(rustc) if tried.len() == 1 => Err(CliError::MissingRustSrc {
            rustc,
            hint: "rustup: `rustup component add rust-src --toolchain nightly`; Debian/Ubuntu: `apt-get install rust-web-src`".into(),
        }),
        _ => Err(CliError::NoDeviceRustc { tried: tried.join("; "), hint: INSTALL_HINT.into() }),
    }
}

/// Finds `ptxas`: `OFFLOAD_PTXAS` (empty: none), `ptxas` on `PATH`,
/// `$CUDA_HOME/bin`, `/usr/local/cuda/bin`, and the `nvidia-cuda-nvcc` wheel
/// from PyPI (`site-packages/nvidia/cu*/bin/ptxas`).
pub fn find_ptxas() -> Option<PathBuf> {
    if let Some(v) = std::env::var_os("OFFLOAD_PTXAS") {
        return if v.is_empty() { None } else { Some(PathBuf::from(v)) };
    }
    let mut c: Vec<PathBuf> = Vec::new();
    if let Some(path) = std::env::var_os("PATH") {
        c.extend(std::env::split_paths(&path).map(|d| d.join("ptxas")));
    }
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(h) = std::env::var_os(var) {
            c.push(PathBuf::from(h).join("bin/ptxas"));
        }
    }
    c.push("/usr/local/cuda/bin/ptxas".into());
    for site in python_site_dirs() {
        if let Ok(rd) = std::fs::read_dir(site.join("nvidia")) {
            let mut dirs: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
            dirs.sort();
            dirs.reverse();
            for d in dirs {
                c.push(d.join("bin/ptxas"));
            }
            c.push(site.join("nvidia/cuda_nvcc/bin/ptxas"));
        }
    }
    c.into_iter().find(|p| p.is_file())
}

fn python_site_dirs() -> Vec<PathBuf> {
    let script = "import site,sys\nprint('\\n'.join(site.getsitepackages()+[site.getusersitepackages()]))";
    for py in ["python3", "python"] {
        if let Ok(out) = Command::new(py).args(["-c", script]).output() {
            if out.status.success() {
                return String::from_utf8_lossy(&out.stdout).lines().map(PathBuf::from).collect();
            }
        }
    }
    Vec::new()
}

/// The whole device toolchain for `target`.
pub fn find() -> Result<DeviceToolchain> {
    let (cand, info, sysroot) = find_rustc()?;
    let llvm = LlvmTools::discover(info.llvm_major, Some(&sysroot))?;
    Ok(DeviceToolchain {
        rustc: cand.rustc,
        cargo: cand.cargo,
        sysroot,
        version: info.version,
        llvm_major: info.llvm_major,
        llvm,
        ptxas: find_ptxas(),
        origin: cand.origin,
    })
}

/// The architectures `llc` knows for `triple` (`llc -mcpu=help`).
pub fn known_archs(llc: &Path, triple: &str) -> Vec<String> {
    let out = Command::new(llc).arg(format!("-mtriple={triple}")).arg("-mcpu=help").output();
    let Ok(out) = out else { return Vec::new() };
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    let mut archs = Vec::new();
    for l in text.lines() {
        let l = l.trim();
        if l.starts_with("Available features") {
            break;
        }
        if let Some((name, _)) = l.split_once(" - ") {
            let name = name.trim();
            if name.starts_with("sm_") || name.starts_with("gfx") {
                archs.push(name.to_string());
            }
        }
    }
    archs
}

/// The GPU's architecture as `nvidia-smi` reports it, if there is one.
pub fn detect_gpu_arch() -> Option<String> {
    let out = Command::new("nvidia-smi").args(["--query-gpu=compute_cap", "--format=csv,noheader"]).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let cap = text.lines().next()?.trim();
    let (major, minor) = cap.split_once('.')?;
    Some(format!("sm_{}{}", major.trim(), minor.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_llc_cpu_help() {
        // `known_archs` on a fake llc printing the real format.
        let dir = std::env::temp_dir().join(format!("offload-llc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let llc = dir.join("llc");
        std::fs::write(
            &llc,
            "#!/bin/sh\necho 'Available CPUs for this target:\n\n  sm_90   - Select the sm_90 processor.\n  sm_90a  - Select the sm_90a processor.\n\nAvailable features for this target:\n\n  ptx78 - Use PTX version 7.8.' >&2\n",
        )
        .unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&llc, std::fs::Permissions::from_mode(0o755)).unwrap();
            assert_eq!(known_archs(&llc, "nvptx64-nvidia-cuda"), ["sm_90", "sm_90a"]);
        }
    }
}
