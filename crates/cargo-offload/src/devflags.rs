//! `OFFLOAD_DEVICE_RUSTFLAGS`: rustc flags of the user's for the device
//! pass only, checked before anything is built.
//!
//! The device pass sets the target CPU itself (`-C target-cpu=<arch>`, from
//! `--arch`), and rustc implies the features of that architecture (sm_90:
//! `sm_90` and every earlier `sm_NN`; `ptx78`, see `ptx`). A flag that
//! contradicts it does not fail cleanly later: `-C target-feature=+sm_100`
//! on an sm_80 build aborts LLVM, a second `-C target-cpu` silently builds
//! for another architecture than the image says, and `-C panic=unwind`
//! asks the GPU targets for unwinding they do not have. So these are
//! errors here, each with its fix ([`check`]); the PTX ISA features are
//! checked by `ptx::device_feature`.

use offload_image::{ArchSuffix, NvArch};

use crate::arg::Args;

/// The variable.
pub const VAR: &str = "OFFLOAD_DEVICE_RUSTFLAGS";

/// The flags of `OFFLOAD_DEVICE_RUSTFLAGS`, split at whitespace (as cargo
/// splits `RUSTFLAGS`).
pub fn from_env() -> Vec<String> {
    std::env::var(VAR).unwrap_or_default().split_whitespace().map(String::from).collect()
}

/// The target features `flags` turn on (`true`) or off, in order:
/// `-C target-feature=+ptx80,-sm_90` is `[(true, "ptx80"), (false, "sm_90")]`.
pub fn target_features(flags: &[String]) -> Vec<(bool, String)> {
    let args = Args::new(flags.to_vec());
    let mut out = Vec::new();
    for list in args.codegen_values("target-feature") {
        for item in list.split(',').filter(|i| !i.is_empty()) {
            out.push(match item.split_at_checked(1) {
                Some(("+", n)) => (true, n.to_string()),
                Some(("-", n)) => (false, n.to_string()),
                _ => (true, item.to_string()),
            });
        }
    }
    out
}

/// A device rustflag that contradicts what the device pass builds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FlagError {
    #[error("`-C target-cpu={cpu}` in {VAR}: the device pass sets the target CPU itself, to the architecture it builds for ({arch})")]
    TargetCpu { cpu: String, arch: String },
    #[error("`{sign}{feature}` in {VAR} contradicts the architecture {arch} of this build")]
    ArchFeature { sign: char, feature: String, arch: String },
    #[error("`{sign}{feature}` in {VAR} is an NVIDIA feature; this build is for the AMD GPU {arch}")]
    NvidiaFeatureOnAmd { sign: char, feature: String, arch: String },
    #[error("`-C panic=unwind` in {VAR}: GPU code cannot unwind")]
    PanicUnwind,
    #[error("`{flag}` in {VAR} is quoted: the variable is split at spaces, not read as shell words, so the quotes would reach rustc as part of the flag")]
    Quoted { flag: String },
}

impl FlagError {
    /// What to do.
    pub fn hint(&self) -> String {
        match self {
            FlagError::TargetCpu { cpu, .. } => {
                format!("remove it and choose the architecture with `--arch {cpu}` (or OFFLOAD_ARCH, or `arch` in [package.metadata.offload])")
            }
            FlagError::ArchFeature { sign: '+', feature, arch } => format!(
                "to build for {feature}, use `--arch {feature}`; otherwise remove it: {arch} implies its own `sm_` \
                 feature and those of the architectures before it"
            ),
            FlagError::ArchFeature { .. } => {
                "remove it: an architecture's `sm_` features cannot be turned off; choose another with `--arch`".into()
            }
            FlagError::NvidiaFeatureOnAmd { .. } => "remove it, or build for an NVIDIA GPU (`--arch sm_90`)".into(),
            FlagError::PanicUnwind => "remove it: device code is built with `panic=abort`, and a kernel's panic \
                                       reaches the host as `offload::Error::KernelPanic`"
                .into(),
            FlagError::Quoted { flag } => format!(
                "remove the quotes: {VAR}='{} --cfg my_cfg' (flags are separated by spaces; as in RUSTFLAGS, one \
                 flag cannot contain a space)",
                flag.trim_matches(|c| c == '"' || c == '\'')
            ),
        }
    }
}

/// Whether the `sm_` feature `feature` holds on `arch` (rustc implies an
/// architecture's feature and those of the plain architectures before it):
/// `sm_80` on sm_90, but not `sm_90a` on sm_90 nor `sm_100` on sm_90.
fn implied(feature: &str, arch: &str) -> bool {
    match (NvArch::parse(feature), NvArch::parse(arch)) {
        _ if feature == arch => true,
        (Some(f), Some(a)) => f.suffix == ArchSuffix::None && (f.major, f.minor) <= (a.major, a.minor),
        _ => false,
    }
}

/// Whether a flag carries shell quotes: it starts with one, or ends with one
/// that opens nowhere in it. A quoted value inside a flag is rustc's own
/// syntax (`--cfg` `feature="x"`), not shell quoting.
fn quoted(flag: &str) -> bool {
    ['"', '\''].iter().any(|&q| flag.starts_with(q) || (flag.ends_with(q) && flag.matches(q).count() % 2 == 1))
}

/// Checks the device rustflags `flags` for a build of `arch` on `triple`
/// (see the module docs).
pub fn check(flags: &[String], triple: &str, arch: &str) -> Result<(), FlagError> {
    if let Some(flag) = flags.iter().find(|f| quoted(f)) {
        return Err(FlagError::Quoted { flag: flag.clone() });
    }
    let args = Args::new(flags.to_vec());
    if let Some(cpu) = args.codegen("target-cpu") {
        return Err(FlagError::TargetCpu { cpu: cpu.into(), arch: arch.into() });
    }
    if args.codegen_values("panic").contains(&"unwind") {
        return Err(FlagError::PanicUnwind);
    }
    let nvidia = triple.starts_with("nvptx");
    for (on, feature) in target_features(flags) {
        let sign = if on { '+' } else { '-' };
        let nv_feature = feature.starts_with("sm_") || feature.starts_with("ptx");
        if nv_feature && !nvidia {
            return Err(FlagError::NvidiaFeatureOnAmd { sign, feature, arch: arch.into() });
        }
        if feature.starts_with("sm_") && (!on || !implied(&feature, arch)) {
            return Err(FlagError::ArchFeature { sign, feature, arch: arch.into() });
        }
    }
    Ok(())
}

/// The lint levels of the device pass: those of the host's rustflags from
/// the environment (`CARGO_ENCODED_RUSTFLAGS`, else `RUSTFLAGS`, as cargo
/// reads them), which the device pass otherwise replaces with its own,
/// then those after `cargo offload clippy --`. So `RUSTFLAGS="-D
/// warnings"` fails on a warning of device-only code as of host code.
/// (`[build] rustflags` of cargo's configuration files are not read.)
pub fn device_lint_levels(clippy_args: &[String]) -> Vec<String> {
    let host: Vec<String> = match (std::env::var("CARGO_ENCODED_RUSTFLAGS"), std::env::var("RUSTFLAGS")) {
        (Ok(f), _) => f.split('\x1f').filter(|a| !a.is_empty()).map(String::from).collect(),
        (_, Ok(f)) => f.split_whitespace().map(String::from).collect(),
        _ => Vec::new(),
    };
    let mut levels = lint_levels(&host);
    levels.extend(lint_levels(clippy_args));
    levels
}

/// The lint-level flags among `args` (clippy's, after `--`), as rustc
/// takes them: `-D`/`-W`/`-A`/`-F` and `--deny`/`--warn`/`--allow`/
/// `--forbid`, joined or followed by their lint (`-Dwarnings`, `-D
/// warnings`, `--deny=warnings`), and `--cap-lints`. rustc reads
/// `clippy::` lints too, as lints of a tool it does not run (rustc book,
/// "Lint levels" and "Lint Groups"), so every level is passed on: the
/// device pass gets rustc's lints at those levels, not clippy's.
pub fn lint_levels(args: &[String]) -> Vec<String> {
    const SHORT: [&str; 4] = ["-D", "-W", "-A", "-F"];
    const LONG: [&str; 5] = ["--deny", "--warn", "--allow", "--forbid", "--cap-lints"];
    let mut out = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let takes_next = SHORT.contains(&a.as_str()) || LONG.contains(&a.as_str());
        if takes_next {
            if let Some(v) = it.next() {
                out.extend([a.clone(), v.clone()]);
            }
        } else if SHORT.iter().any(|f| a.starts_with(f)) || LONG.iter().any(|f| a.starts_with(&format!("{f}="))) {
            out.push(a.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    /// (flags, triple, arch, the error's text or `None`)
    #[test]
    fn flags_that_contradict_the_build_are_errors() {
        const NV: &str = "nvptx64-nvidia-cuda";
        const AMD: &str = "amdgcn-amd-amdhsa";
        let table: &[(&str, &str, &str, Option<&str>)] = &[
            ("", NV, "sm_80", None),
            ("-Copt-level=1 --cfg x -C target-feature=+ptx80", NV, "sm_90", None),
            ("-C panic=abort", NV, "sm_80", None),
            // Implied features are harmless.
            ("-C target-feature=+sm_80", NV, "sm_90", None),
            ("-Ctarget-feature=+sm_90a", NV, "sm_90a", None),
            ("-C target-feature=+sm_90", NV, "sm_90a", None),
            // The tester's cases.
            ("-C target-feature=+sm_100", NV, "sm_80", Some("`+sm_100` in OFFLOAD_DEVICE_RUSTFLAGS contradicts the architecture sm_80 of this build")),
            ("-C target-cpu=sm_90", NV, "sm_80", Some("`-C target-cpu=sm_90` in OFFLOAD_DEVICE_RUSTFLAGS: the device pass sets the target CPU itself, to the architecture it builds for (sm_80)")),
            ("-Ctarget-cpu=gfx942", AMD, "gfx90a", Some("`-C target-cpu=gfx942` in OFFLOAD_DEVICE_RUSTFLAGS: the device pass sets the target CPU itself, to the architecture it builds for (gfx90a)")),
            ("-C panic=unwind", NV, "sm_80", Some("`-C panic=unwind` in OFFLOAD_DEVICE_RUSTFLAGS: GPU code cannot unwind")),
            ("--codegen panic=unwind", AMD, "gfx90a", Some("`-C panic=unwind` in OFFLOAD_DEVICE_RUSTFLAGS: GPU code cannot unwind")),
            // Specific and family variants are not implied by others.
            ("-C target-feature=+sm_90a", NV, "sm_90", Some("`+sm_90a` in OFFLOAD_DEVICE_RUSTFLAGS contradicts the architecture sm_90 of this build")),
            ("-C target-feature=+ptx80,+sm_100f", NV, "sm_100", Some("`+sm_100f` in OFFLOAD_DEVICE_RUSTFLAGS contradicts the architecture sm_100 of this build")),
            ("-C target-feature=-sm_70", NV, "sm_80", Some("`-sm_70` in OFFLOAD_DEVICE_RUSTFLAGS contradicts the architecture sm_80 of this build")),
            ("-C target-feature=+ptx80", AMD, "gfx90a", Some("`+ptx80` in OFFLOAD_DEVICE_RUSTFLAGS is an NVIDIA feature; this build is for the AMD GPU gfx90a")),
            // Shell quotes are not removed; rustc's own quoting is fine.
            ("\"-Copt-level=3\"", NV, "sm_80", Some("`\"-Copt-level=3\"` in OFFLOAD_DEVICE_RUSTFLAGS is quoted: the variable is split at spaces, not read as shell words, so the quotes would reach rustc as part of the flag")),
            ("'-Copt-level=3'", NV, "sm_80", Some("`'-Copt-level=3'` in OFFLOAD_DEVICE_RUSTFLAGS is quoted: the variable is split at spaces, not read as shell words, so the quotes would reach rustc as part of the flag")),
            ("-Copt-level=3\"", NV, "sm_80", Some("`-Copt-level=3\"` in OFFLOAD_DEVICE_RUSTFLAGS is quoted: the variable is split at spaces, not read as shell words, so the quotes would reach rustc as part of the flag")),
            ("--cfg feature=\"x\" --cfg a='b'", NV, "sm_80", None),
        ];
        for (flags, triple, arch, want) in table {
            let got = check(&v(flags), triple, arch).err().map(|e| e.to_string());
            assert_eq!(got.as_deref(), *want, "{flags} on {triple} {arch}");
        }
    }

    #[test]
    fn each_error_says_what_to_do() {
        let e = check(&v("-C target-cpu=sm_90"), "nvptx64-nvidia-cuda", "sm_80").unwrap_err();
        assert!(e.hint().contains("`--arch sm_90`"), "{}", e.hint());
        let e = check(&v("-C target-feature=+sm_100"), "nvptx64-nvidia-cuda", "sm_80").unwrap_err();
        assert!(e.hint().starts_with("to build for sm_100, use `--arch sm_100`"), "{}", e.hint());
        let e = check(&v("-C panic=unwind"), "nvptx64-nvidia-cuda", "sm_80").unwrap_err();
        assert!(e.hint().contains("panic=abort"), "{}", e.hint());
        let e = check(&v("\"-Copt-level=3\""), "nvptx64-nvidia-cuda", "sm_80").unwrap_err();
        assert!(
            e.hint().starts_with("remove the quotes: OFFLOAD_DEVICE_RUSTFLAGS='-Copt-level=3 --cfg my_cfg'"),
            "{}",
            e.hint()
        );
    }

    #[test]
    fn features_in_order() {
        assert_eq!(
            target_features(&v("-C target-feature=+ptx80,-sm_90 -Ctarget-feature=sm_80")),
            [(true, "ptx80".to_string()), (false, "sm_90".into()), (true, "sm_80".into())]
        );
    }
}
