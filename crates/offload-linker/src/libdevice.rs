//! Finding CUDA's libdevice (`libdevice.10.bc`), the bitcode library of
//! CUDA's math functions (`__nv_sinf`, …; CUDA "libdevice User's Guide").
//!
//! Searched, in order:
//! 1. `OFFLOAD_LIBDEVICE` (a file; `none` disables libdevice);
//! 2. `nvvm/libdevice/` under `$CUDA_HOME`, `$CUDA_PATH`, `/usr/local/cuda`,
//!    `/opt/cuda`;
//! 3. `../nvvm/libdevice/` next to `ptxas` (`OFFLOAD_PTXAS`, or `PATH`):
//!    a CUDA toolkit's `bin/`, or PyPI's `nvidia/cu13/bin/`;
//! 4. PyPI wheels (`nvidia-cuda-nvcc`, `nvidia-nvvm`) in the site-packages of
//!    `python3` on `PATH` and of pyenv versions.

use std::path::{Path, PathBuf};

const FILE: &str = "libdevice.10.bc";

fn in_nvvm(root: &Path) -> Option<PathBuf> {
    let p = root.join("nvvm").join("libdevice").join(FILE);
    p.is_file().then_some(p)
}

fn site_packages_dirs() -> Vec<PathBuf> {
    let mut roots = Vec::new();
    let mut add_lib = |lib: PathBuf| {
        if let Ok(rd) = std::fs::read_dir(&lib) {
            for e in rd.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if name.starts_with("python3") {
                    roots.push(e.path().join("site-packages"));
                    roots.push(e.path().join("dist-packages"));
                }
            }
        }
    };
    if let Some(home) = std::env::var_os("HOME") {
        let versions = PathBuf::from(home).join(".pyenv").join("versions");
        if let Ok(rd) = std::fs::read_dir(versions) {
            for e in rd.flatten() {
                add_lib(e.path().join("lib"));
            }
        }
        add_lib(PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".local").join("lib"));
    }
    if let Some(venv) = std::env::var_os("VIRTUAL_ENV") {
        add_lib(PathBuf::from(venv).join("lib"));
    }
    add_lib(PathBuf::from("/usr/local/lib"));
    add_lib(PathBuf::from("/usr/lib"));
    roots
}

/// The libdevice to link, if any (see the module docs).
pub fn find() -> Option<PathBuf> {
    if let Some(v) = std::env::var_os("OFFLOAD_LIBDEVICE") {
        if v == "none" || v.is_empty() {
            return None;
        }
        let p = PathBuf::from(v);
        return p.is_file().then_some(p);
    }
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(p) = std::env::var_os(var).and_then(|r| in_nvvm(Path::new(&r))) {
            return Some(p);
        }
    }
    for root in ["/usr/local/cuda", "/opt/cuda"] {
        if let Some(p) = in_nvvm(Path::new(root)) {
            return Some(p);
        }
    }
    let mut ptxas = Vec::new();
    if let Some(p) = std::env::var_os("OFFLOAD_PTXAS").filter(|p| !p.is_empty()) {
        ptxas.push(PathBuf::from(p));
    }
    if let Some(path) = std::env::var_os("PATH") {
        ptxas.extend(std::env::split_paths(&path).map(|d| d.join("ptxas")).filter(|p| p.is_file()));
    }
    for p in ptxas {
        let p = std::fs::canonicalize(&p).unwrap_or(p);
        if let Some(root) = p.parent().and_then(Path::parent) {
            if let Some(found) = in_nvvm(root) {
                return Some(found);
            }
        }
    }
    for sp in site_packages_dirs() {
        for sub in ["nvidia/cu13", "nvidia/cu12", "nvidia/cuda_nvcc", "nvidia/nvvm", "nvidia"] {
            if let Some(found) = in_nvvm(&sp.join(sub)) {
                return Some(found);
            }
        }
    }
    None
}
