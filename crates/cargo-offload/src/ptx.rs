//! The PTX ISA version of NVIDIA device code.
//!
//! Each `sm_XY` needs a minimum PTX ISA version (PTX ISA manual, "Release
//! Notes": the version that added the target; [`MIN_PTX`]). LLVM emits at
//! least that version for `-mcpu=sm_XY`, but rustc's `target_feature` cfg
//! knows only what is enabled: with `-C target-cpu=sm_90` alone,
//! `cfg!(target_feature = "ptx78")` is false, and code gated on it silently
//! disappears. The device pass therefore enables `+ptx<min>` for its
//! architecture (rustc implies every earlier `ptxNN`, so `ptx70` … `ptx78`
//! are all true on sm_90), unless the user's `OFFLOAD_DEVICE_RUSTFLAGS`
//! choose a version, which is checked first ([`device_feature`]): below the
//! architecture's minimum, LLVM aborts ("PTX version … does not support
//! target"); above what the device LLVM knows (`llc -mattr=help`), LLVM
//! ignores it.

/// Minimum PTX ISA version of each architecture offload supports (sm_70 and
/// later), as `major * 10 + minor`. Source: the PTX ISA manual's release
/// notes (PTX 6.0 added sm_70, 6.1 sm_72, 6.3 sm_75, 7.0 sm_80, 7.1 sm_86,
/// 7.4 sm_87, 7.8 sm_89 and sm_90, 8.0 sm_90a, 8.6 sm_100/sm_101 and their
/// `a` variants, 8.7 sm_120/sm_120a, 8.8 sm_103, sm_121 and the `f`
/// variants, 9.0 sm_88 and sm_110, which renamed sm_101). The same numbers
/// as LLVM 22's and 23's NVPTX backends (the `.version` `llc -mcpu=sm_XY`
/// emits; checked by a test against the installed `llc`).
pub const MIN_PTX: &[(&str, u32)] = &[
    ("sm_70", 60),
    ("sm_72", 61),
    ("sm_75", 63),
    ("sm_80", 70),
    ("sm_86", 71),
    ("sm_87", 74),
    ("sm_88", 90),
    ("sm_89", 78),
    ("sm_90", 78),
    ("sm_90a", 80),
    ("sm_100", 86),
    ("sm_100a", 86),
    ("sm_100f", 88),
    ("sm_101", 86),
    ("sm_101a", 86),
    ("sm_101f", 88),
    ("sm_103", 88),
    ("sm_103a", 88),
    ("sm_103f", 88),
    ("sm_110", 90),
    ("sm_110a", 90),
    ("sm_110f", 90),
    ("sm_120", 87),
    ("sm_120a", 87),
    ("sm_120f", 88),
    ("sm_121", 88),
    ("sm_121a", 88),
    ("sm_121f", 88),
];

/// The minimum PTX ISA version of `arch`, if known.
pub fn min_ptx(arch: &str) -> Option<u32> {
    MIN_PTX.iter().find(|(a, _)| *a == arch).map(|&(_, v)| v)
}

/// `78` → `7.8`.
pub fn dotted(v: u32) -> String {
    format!("{}.{}", v / 10, v % 10)
}

/// The `ptxNN` target features the rustc flags `flags` turn on (`+`) or
/// off (`-`), as (on, version): `-C target-feature=+ptx80,+sm_90`,
/// `-Ctarget-feature=+ptx80`, `--codegen target-feature=…`.
pub fn user_ptx_features(flags: &[String]) -> Vec<(bool, u32)> {
    crate::devflags::target_features(flags)
        .into_iter()
        .filter_map(|(on, name)| name.strip_prefix("ptx").and_then(|n| n.parse().ok()).map(|v| (on, v)))
        .collect()
}

/// A PTX ISA version the device pass cannot use, with the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PtxError {
    #[error("`-ptx{version}` in OFFLOAD_DEVICE_RUSTFLAGS: PTX ISA versions cannot be turned off")]
    Disabled { version: u32 },
    #[error(
        "`+ptx{version}` in OFFLOAD_DEVICE_RUSTFLAGS is below what {arch} needs: {arch} code needs PTX ISA {} or later",
        dotted(*min)
    )]
    BelowMinimum { version: u32, arch: String, min: u32 },
    #[error(
        "`+ptx{version}` in OFFLOAD_DEVICE_RUSTFLAGS is newer than the device LLVM {llvm} knows (up to PTX ISA {})",
        dotted(*max)
    )]
    Unknown { version: u32, llvm: u32, max: u32 },
}

impl PtxError {
    /// What to do.
    pub fn hint(&self) -> String {
        match self {
            PtxError::Disabled { .. } => {
                "remove it: cargo offload enables the PTX ISA version the architecture needs".into()
            }
            PtxError::BelowMinimum { arch, min, .. } => format!(
                "remove it (cargo offload enables `+ptx{min}`, the minimum for {arch}), or give `+ptx{min}` or later"
            ),
            PtxError::Unknown { max, .. } => {
                format!("give `+ptx{max}` or earlier, or use a device toolchain whose LLVM knows the version")
            }
        }
    }
}

/// The PTX feature the device pass enables for `arch` (`+ptx78` for
/// sm_90), given the user's rustflags and the versions the device LLVM
/// (major `llvm`) knows: `None` when the user chose a valid version (rustc
/// implies the earlier ones) or the architecture is not in [`MIN_PTX`].
pub fn device_feature(arch: &str, flags: &[String], known: &[u32], llvm: u32) -> Result<Option<String>, PtxError> {
    let min = min_ptx(arch);
    let max = known.iter().copied().max();
    let mut chosen = false;
    for (on, version) in user_ptx_features(flags) {
        if !on {
            return Err(PtxError::Disabled { version });
        }
        if let Some(min) = min.filter(|&m| version < m) {
            return Err(PtxError::BelowMinimum { version, arch: arch.into(), min });
        }
        if let Some(max) = max.filter(|&m| version > m || !known.contains(&version)) {
            return Err(PtxError::Unknown { version, llvm, max });
        }
        chosen = true;
    }
    Ok(match min {
        Some(m) if !chosen && (known.is_empty() || known.contains(&m)) => Some(format!("+ptx{m}")),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    /// `llc -mattr=help` of LLVM 22 (abridged to its PTX versions).
    const LLVM22: &[u32] = &[
        32, 40, 41, 42, 43, 50, 60, 61, 62, 63, 64, 65, 70, 71, 72, 73, 74, 75, 76, 77, 78, 80, 81, 82, 83, 84, 85, 86,
        87, 88, 90,
    ];

    #[test]
    fn the_table_has_the_documented_minimums() {
        for (arch, min) in [
            ("sm_70", 60),
            ("sm_75", 63),
            ("sm_80", 70),
            ("sm_86", 71),
            ("sm_89", 78),
            ("sm_90", 78),
            ("sm_90a", 80),
            ("sm_100", 86),
        ] {
            assert_eq!(min_ptx(arch), Some(min), "{arch}");
        }
        assert_eq!(min_ptx("sm_60"), None, "before sm_70: not supported");
        assert_eq!(dotted(78), "7.8");
        // Every entry is a version LLVM 22 knows.
        assert!(MIN_PTX.iter().all(|(_, m)| LLVM22.contains(m)));
    }

    #[test]
    fn user_flags_are_read_in_every_spelling() {
        assert_eq!(user_ptx_features(&v("-C target-feature=+ptx80,+sm_90")), [(true, 80)]);
        assert_eq!(user_ptx_features(&v("-Ctarget-feature=+ptx65 -Copt-level=3")), [(true, 65)]);
        assert_eq!(user_ptx_features(&v("--codegen target-feature=-ptx78")), [(false, 78)]);
        assert_eq!(user_ptx_features(&v("--codegen=target-feature=ptx81")), [(true, 81)]);
        assert!(user_ptx_features(&v("-Copt-level=3 --cfg x")).is_empty());
    }

    #[test]
    fn the_architecture_implies_its_minimum_and_bad_choices_are_rejected() {
        assert_eq!(device_feature("sm_90", &[], LLVM22, 22), Ok(Some("+ptx78".into())));
        assert_eq!(device_feature("sm_80", &[], LLVM22, 22), Ok(Some("+ptx70".into())));
        assert_eq!(device_feature("sm_90a", &[], LLVM22, 22), Ok(Some("+ptx80".into())));
        // A valid choice of the user's: kept, nothing added.
        assert_eq!(device_feature("sm_90", &v("-Ctarget-feature=+ptx80"), LLVM22, 22), Ok(None));
        let e = device_feature("sm_90", &v("-Ctarget-feature=+ptx65"), LLVM22, 22).unwrap_err();
        assert_eq!(e, PtxError::BelowMinimum { version: 65, arch: "sm_90".into(), min: 78 });
        assert_eq!(
            e.to_string(),
            "`+ptx65` in OFFLOAD_DEVICE_RUSTFLAGS is below what sm_90 needs: sm_90 code needs PTX ISA 7.8 or later"
        );
        assert!(e.hint().contains("`+ptx78`"), "{}", e.hint());
        let e = device_feature("sm_90", &v("-C target-feature=+ptx93"), LLVM22, 22).unwrap_err();
        assert_eq!(e, PtxError::Unknown { version: 93, llvm: 22, max: 90 });
        assert!(e.to_string().contains("newer than the device LLVM 22 knows (up to PTX ISA 9.0)"), "{e}");
        assert!(matches!(
            device_feature("sm_90", &v("-Ctarget-feature=-ptx78"), LLVM22, 22),
            Err(PtxError::Disabled { .. })
        ));
        // An architecture outside the table: nothing added, the user's
        // version still checked against LLVM.
        assert_eq!(device_feature("sm_107", &[], LLVM22, 22), Ok(None));
        assert!(device_feature("sm_107", &v("-Ctarget-feature=+ptx99"), LLVM22, 22).is_err());
    }
}
