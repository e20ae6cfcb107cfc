//! Per-block resource limits that both backends check before a launch, with
//! one error text.
//!
//! Dynamic shared memory: a block may use up to the GPU's opt-in limit of
//! shared memory (`CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`),
//! static and dynamic together; more than 48 KiB of it needs a per-kernel
//! opt-in (`cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)`),
//! which the CUDA backend makes itself (CUDA C++ Programming Guide,
//! "Configuring L1/Shared Memory Balance"). The host fallback applies the
//! limit of the architecture the binary's images were built for (see
//! [`host_shared_limit`]).

use std::format;
use std::string::String;

use offload_image::{ImageKind, NvArch};

/// Shared memory a block may use with the opt-in, in bytes, for an NVIDIA
/// GPU of compute capability `major.minor`: CUDA C++ Programming Guide,
/// "Compute Capabilities", Table 31 "Memory Information per Compute
/// Capability", row "Maximum amount of shared memory per thread block"
/// (7.0/7.2 from the CUDA 12 guide's table). `None` for an architecture the
/// table does not list.
pub(crate) fn opt_in_shared_per_block(major: u32, minor: u32) -> Option<u32> {
    const KIB: u32 = 1024;
    Some(match (major, minor) {
        (7, 0) | (7, 2) => 96 * KIB,
        (7, 5) => 64 * KIB,
        (8, 0) | (8, 7) => 163 * KIB,
        (8, 6) | (8, 9) => 99 * KIB,
        (9, 0) => 227 * KIB,
        (10, _) | (11, 0) => 227 * KIB,
        (12, _) => 99 * KIB,
        _ => return None,
    })
}

/// The shared-memory limit of the host fallback and what it is, for the
/// images this binary carries (`arches`: their architecture names): the
/// smallest opt-in limit of the NVIDIA architectures they were built for,
/// so that a launch the host fallback accepts also runs on every GPU the
/// binary targets, and one that would fail there fails here first, with the
/// same error. A binary with no NVIDIA image (plain `cargo build`) gets
/// 227 KiB, sm_90's limit, the largest of any NVIDIA GPU.
pub(crate) fn host_shared_limit<'a>(arches: impl IntoIterator<Item = (ImageKind, &'a str)>) -> (u32, String) {
    let smallest = arches
        .into_iter()
        .filter(|(kind, _)| matches!(kind, ImageKind::Ptx | ImageKind::Cubin))
        .filter_map(|(_, arch)| {
            let a = NvArch::parse(arch)?;
            opt_in_shared_per_block(a.major, a.minor).map(|limit| (limit, arch))
        })
        .min_by_key(|&(limit, _)| limit);
    match smallest {
        Some((limit, arch)) => (
            limit,
            format!("the opt-in limit of {arch}, the smallest of the architectures this binary's device images were built for"),
        ),
        None => (
            227 * 1024,
            "the opt-in limit of sm_90, the largest of any NVIDIA GPU, as this binary carries no NVIDIA device image".into(),
        ),
    }
}

/// The reason of an [`Error::InvalidLaunch`](crate::Error::InvalidLaunch)
/// for a launch asking for `requested` bytes of dynamic shared memory when a
/// block may use `total` bytes of shared memory, of which the kernel's static
/// shared memory takes `static_bytes` (`None`: not known before the kernel
/// runs, on the host fallback). `source` says where `total` comes from. The
/// same text on both backends. Static shared memory alone over `total` is
/// named as such, whatever `requested` is.
pub(crate) fn dynamic_shared_reason(requested: u32, total: u32, static_bytes: Option<u32>, source: &str) -> String {
    if let Some(s) = static_bytes.filter(|&s| s > total) {
        // The static arrays alone are over the limit: a request of 0 bytes
        // of dynamic memory against a limit of 0 said nothing useful.
        return format!(
            "the kernel's static shared memory (its `shared_array!`s and shared statics) is {s} bytes, over the \
             {total} bytes of shared memory per block ({source}); make its shared arrays smaller or fewer"
        );
    }
    let (available, minus) = match static_bytes {
        Some(s) => (total.saturating_sub(s), format!("minus the kernel's {s} bytes of static shared memory")),
        None => (total, "less the kernel's static shared memory".into()),
    };
    format!(
        "{requested} bytes of dynamic shared memory per block requested, but the limit is {available} bytes \
         ({total} bytes of shared memory per block, {source}, {minus}); request less \
         (LaunchConfig::shared_mem_bytes)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_values() {
        assert_eq!(opt_in_shared_per_block(9, 0), Some(232_448));
        assert_eq!(opt_in_shared_per_block(8, 0), Some(166_912));
        assert_eq!(opt_in_shared_per_block(8, 6), Some(101_376));
        assert_eq!(opt_in_shared_per_block(7, 5), Some(65_536));
        assert_eq!(opt_in_shared_per_block(12, 0), Some(101_376));
        assert_eq!(opt_in_shared_per_block(6, 1), None);
    }

    #[test]
    fn host_limit_follows_the_images() {
        let (limit, what) = host_shared_limit([(ImageKind::Ptx, "sm_90"), (ImageKind::Cubin, "sm_90")]);
        assert_eq!(limit, 232_448);
        assert!(what.contains("of sm_90, the smallest"), "{what}");
        assert_eq!(
            dynamic_shared_reason(300_000, limit, Some(4096), &what),
            "300000 bytes of dynamic shared memory per block requested, but the limit is 228352 bytes (232448 bytes \
             of shared memory per block, the opt-in limit of sm_90, the smallest of the architectures this binary's \
             device images were built for, minus the kernel's 4096 bytes of static shared memory); request less \
             (LaunchConfig::shared_mem_bytes)"
        );
        // Static arrays alone over the limit: that is what the reason says.
        assert_eq!(
            dynamic_shared_reason(0, 166_912, Some(262_144), "the opt-in limit of sm_80"),
            "the kernel's static shared memory (its `shared_array!`s and shared statics) is 262144 bytes, over the \
             166912 bytes of shared memory per block (the opt-in limit of sm_80); make its shared arrays smaller or \
             fewer"
        );
        let (limit, what) = host_shared_limit([(ImageKind::Ptx, "sm_90"), (ImageKind::Ptx, "sm_80a")]);
        assert_eq!((limit, what.contains("sm_80a")), (166_912, true));
        let (limit, what) = host_shared_limit([(ImageKind::AmdgpuElf, "gfx90a")]);
        assert_eq!(limit, 232_448);
        assert!(what.contains("no NVIDIA device image"), "{what}");
        assert_eq!(host_shared_limit([]).0, 232_448);
    }
}
