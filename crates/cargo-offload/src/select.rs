//! Device selection: which images to build (target triple and architecture
//! each), from the command line, the environment, `Cargo.toml` or the GPU.

use crate::cli::{DeviceOpts, DEFAULT_NVPTX_ARCH};
use crate::errors::{ArchListError, CliError, Result};
use crate::toolchain::{self, DeviceToolchain};
use crate::workspace::Config;
use crate::{devflags, ptx, status};

/// One device image to build: a target triple and an architecture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceSel {
    pub triple: String,
    pub arch: String,
    /// The PTX ISA feature the architecture implies (`+ptx78`), see `ptx`.
    pub ptx_feature: Option<String>,
}

impl DeviceSel {
    pub fn is_nvptx(&self) -> bool {
        self.triple.starts_with("nvptx")
    }
}

/// The target a GPU architecture belongs to: `gfx…` is AMD, the rest NVIDIA.
pub fn target_of(arch: &str) -> &'static str {
    if arch.starts_with("gfx") {
        "amdgcn-amd-amdhsa"
    } else {
        "nvptx64-nvidia-cuda"
    }
}

/// Whether `triple` is a device target offload builds for.
pub fn is_device_triple(triple: &str) -> bool {
    triple.starts_with("nvptx64-nvidia-cuda") || triple.starts_with("amdgcn-amd-amdhsa")
}

/// `--target`, checked.
pub fn check_target(dev: &DeviceOpts) -> Result<()> {
    match &dev.target {
        Some(t) if !is_device_triple(t) => Err(CliError::UnknownTarget(t.clone())),
        _ => Ok(()),
    }
}

/// Whether an NVIDIA architecture (`sm_60`, `sm_90a`) predates sm_70, the
/// oldest offload supports (see [`CliError::ArchTooOld`]).
pub fn nvptx_too_old(arch: &str) -> bool {
    arch.strip_prefix("sm_")
        .map(|n| n.chars().take_while(char::is_ascii_digit).collect::<String>())
        .and_then(|n| n.parse::<u32>().ok())
        .is_some_and(|n| n < 70)
}

/// The architectures of `known` that offload supports, in natural order
/// (sm_70 < sm_90 < sm_100), for the hint of [`CliError::UnknownArch`].
pub fn supported_in_order(known: &[String]) -> Vec<String> {
    let mut sorted: Vec<String> = known.iter().filter(|a| !nvptx_too_old(a)).cloned().collect();
    sorted.sort_by_key(|a| {
        let digits: String = a.chars().filter(|c| c.is_ascii_digit()).collect();
        (a.chars().take_while(|c| c.is_ascii_alphabetic()).collect::<String>(), digits.len(), a.clone())
    });
    sorted
}

/// The images to build, from `--arch` (a list), `OFFLOAD_ARCH`, the GPU
/// `nvidia-smi` reports, or the default `sm_80`, in that order; each
/// architecture checked against the ones `llc` knows for its target.
pub fn resolve_devices(dev: &DeviceOpts, config: &Config, tc: &DeviceToolchain) -> Result<Vec<DeviceSel>> {
    resolve_devices_in(dev, config, tc, &|k| std::env::var(k).ok())
}

/// [`resolve_devices`] with the environment (`OFFLOAD_ARCH`,
/// `OFFLOAD_DEVICE_RUSTFLAGS`) read through `env`, for the unit tests.
pub(crate) fn resolve_devices_in(
    dev: &DeviceOpts,
    config: &Config,
    tc: &DeviceToolchain,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<DeviceSel>> {
    let target = dev.target.clone().or_else(|| config.target.clone());
    // The architectures, where they come from, and the value as the user
    // wrote it (for the error of an empty item).
    let (archs, from, value): (Vec<String>, &str, String) = if !dev.arch.is_empty() {
        (dev.arch.clone(), "--arch", dev.arch.join(","))
    } else if let Some(a) = env("OFFLOAD_ARCH").filter(|a| !a.trim().is_empty()) {
        (a.split(',').map(|s| s.trim().to_string()).collect(), "OFFLOAD_ARCH", a)
    } else if !config.arch.is_empty() {
        (config.arch.clone(), "Cargo.toml [package.metadata.offload]", config.arch.join(","))
    } else if target.as_deref().is_some_and(|t| t.starts_with("amdgcn")) {
        return Err(CliError::AmdNeedsArch);
    } else {
        match toolchain::detect_gpu_arch()? {
            Some(a) => (vec![a.clone()], "the GPU", a),
            None => (vec![DEFAULT_NVPTX_ARCH.to_string()], "default", DEFAULT_NVPTX_ARCH.to_string()),
        }
    };
    if archs.iter().all(|a| a.is_empty()) {
        return Err(ArchListError::NoArch { from }.into());
    }
    if archs.iter().any(|a| a.is_empty()) {
        return Err(ArchListError::EmptyArch { value, from }.into());
    }
    for arch in repeated(&archs) {
        status::warn(format!("`{arch}` is named more than once (from {from}); its image is built once"));
    }
    let mut sels: Vec<DeviceSel> = Vec::new();
    for arch in archs {
        let triple = target.clone().unwrap_or_else(|| target_of(&arch).to_string());
        if !is_device_triple(&triple) {
            return Err(CliError::UnknownTarget(triple));
        }
        let known = crate::llvm::known_archs(&tc.llvm.llc, &triple)?;
        if !known.is_empty() && !known.contains(&arch) {
            return Err(CliError::UnknownArch { arch, target: triple, known: supported_in_order(&known), from });
        }
        if triple.starts_with("nvptx64") && nvptx_too_old(&arch) {
            return Err(CliError::ArchTooOld { arch, from });
        }
        if !sels.iter().any(|d| d.arch == arch && d.triple == triple) {
            // Checked before any build: a flag that contradicts the
            // architecture would abort LLVM in the middle of it.
            let flags: Vec<String> =
                env(devflags::VAR).unwrap_or_default().split_whitespace().map(String::from).collect();
            devflags::check(&flags, &triple, &arch)?;
            let ptx_feature = if triple.starts_with("nvptx64") {
                ptx::device_feature(&arch, &flags, &crate::llvm::ptx_versions(&tc.llvm.llc)?, tc.llvm_major)?
            } else {
                None
            };
            sels.push(DeviceSel { triple, arch, ptx_feature });
        }
    }
    if from != "--arch" {
        let list: Vec<String> = sels.iter().map(|d| format!("{} {}", d.triple, d.arch)).collect();
        status::status("Device", format!("{} ({from})", list.join(", ")));
    }
    Ok(sels)
}

/// The architectures `archs` names more than once, each once, in order.
pub fn repeated(archs: &[String]) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for (i, a) in archs.iter().enumerate() {
        if !a.is_empty() && archs[..i].contains(a) && !out.contains(&a.as_str()) {
            out.push(a);
        }
    }
    out
}

#[cfg(test)]
mod validation_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn architectures_and_targets() {
        let table: &[(&str, &str, bool)] = &[
            ("sm_60", "nvptx64-nvidia-cuda", true),
            ("sm_62", "nvptx64-nvidia-cuda", true),
            ("sm_70", "nvptx64-nvidia-cuda", false),
            ("sm_90a", "nvptx64-nvidia-cuda", false),
            ("sm_100f", "nvptx64-nvidia-cuda", false),
            ("gfx90a", "amdgcn-amd-amdhsa", false),
        ];
        for (arch, target, old) in table {
            assert_eq!((target_of(arch), nvptx_too_old(arch)), (*target, *old), "{arch}");
        }
        let known: Vec<String> = ["sm_100", "sm_62", "sm_90a", "sm_90", "sm_70"].map(String::from).to_vec();
        assert_eq!(supported_in_order(&known), ["sm_70", "sm_90", "sm_90a", "sm_100"]);
        assert!(is_device_triple("nvptx64-nvidia-cuda") && !is_device_triple("x86_64-unknown-linux-gnu"));
    }

    #[test]
    fn repeated_architectures() {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(repeated(&v(&["sm_80", "sm_80"])), ["sm_80"]);
        assert_eq!(repeated(&v(&["sm_80", "sm_90", "sm_80", "gfx90a", "sm_90", "sm_80"])), ["sm_80", "sm_90"]);
        assert!(repeated(&v(&["sm_80", "sm_90", "", ""])).is_empty());
    }
}
