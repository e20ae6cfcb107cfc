//! What `cargo offload` checks before it builds anything, as unit tests:
//! the architectures (`--arch`, `OFFLOAD_ARCH`, `[package.metadata.offload]`),
//! the device target, and the PTX ISA features of `OFFLOAD_DEVICE_RUSTFLAGS`,
//! with the messages and exit codes the user sees. The `llc` they ask for
//! its architectures and PTX versions is a script with LLVM 22's answers
//! (abridged), so these tests need no toolchain; `tests/dry_run.rs`
//! (`bad_input_is_rejected_before_any_build`) checks that the real binary
//! prints the same, with the real `llc`, before it builds anything.

use std::path::{Path, PathBuf};

use super::*;
use crate::errors::exit;

/// `llc -mcpu=help` and `-mattr=help` as LLVM 22 prints them, abridged.
const FAKE_LLC: &str = r#"#!/bin/sh
case "$*" in
  *nvptx64*-mcpu=help*)
    printf 'Available CPUs for this target:\n\n'
    for a in sm_100 sm_50 sm_60 sm_62 sm_70 sm_75 sm_80 sm_86 sm_89 sm_90 sm_90a; do
      printf '  %s - Select the %s processor.\n' "$a" "$a"
    done
    printf '\nAvailable features for this target:\n\n  sm_90 - Target SM 90.\n' ;;
  *amdgcn*-mcpu=help*)
    printf 'Available CPUs for this target:\n\n'
    for a in gfx1100 gfx90a gfx942; do printf '  %s - Select the %s processor.\n' "$a" "$a"; done ;;
  *-mattr=help*)
    printf 'Available CPUs for this target:\n\n  sm_90 - Select the sm_90 processor.\n\n'
    printf 'Available features for this target:\n\n'
    for v in 60 61 62 63 64 65 70 71 72 73 74 75 76 77 78 80 81 82 83 84 85 86 87 88 90; do
      printf '  ptx%s - Use PTX version %s.\n' "$v" "$v"
    done ;;
  *) exit 1 ;;
esac
"#;

/// A device toolchain whose `llc` is [`FAKE_LLC`], in a directory of this
/// test's own.
fn toolchain(test: &str) -> (DeviceToolchain, PathBuf) {
    let dir = std::env::temp_dir().join(format!("offload-validation-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let llc = dir.join("llc");
    std::fs::write(&llc, FAKE_LLC).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&llc, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let tc = DeviceToolchain {
        rustc: "/nonexistent/rustc".into(),
        cargo: "/nonexistent/cargo".into(),
        sysroot: dir.clone(),
        version: "rustc 1.96.0 (test)".into(),
        llvm_major: 22,
        llvm: offload_linker::LlvmTools {
            major: 22,
            llvm_link: "/nonexistent/llvm-link".into(),
            opt: "/nonexistent/opt".into(),
            llc,
            lld: None,
        },
        ptxas: None,
        origin: "test".into(),
    };
    (tc, dir)
}

fn opts(arch: &[&str], target: Option<&str>) -> DeviceOpts {
    DeviceOpts {
        arch: arch.iter().map(|a| a.to_string()).collect(),
        target: target.map(String::from),
        ..Default::default()
    }
}

/// `resolve_devices` with `env` as the whole environment.
fn resolve(
    tc: &DeviceToolchain,
    dev: &DeviceOpts,
    config: &Config,
    env: &[(&str, &str)],
) -> Result<Vec<(String, String, Option<String>)>> {
    let env: Vec<(String, String)> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let sels = resolve_devices_in(dev, config, tc, &|k| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()))?;
    Ok(sels.into_iter().map(|s| (s.triple, s.arch, s.ptx_feature)).collect())
}

/// The error as the user sees it (without colors) and its exit code.
fn shown(e: CliError) -> (String, i32) {
    (e.render("error: "), e.exit_code())
}

fn cleanup(dir: &Path) {
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn unknown_arch_lists_the_known_ones() {
    let (tc, dir) = toolchain("unknown");
    let (text, code) = shown(resolve(&tc, &opts(&["sm_91"], None), &Config::default(), &[]).unwrap_err());
    assert_eq!(code, exit::USAGE);
    assert!(text.starts_with("error: unknown architecture `sm_91` for nvptx64-nvidia-cuda (from --arch)"), "{text}");
    assert!(text.contains("sm_90a"), "the list of known architectures: {text}");
    assert!(text.contains("--arch sm_90"), "{text}");
    // In natural order, without the ones refused.
    assert!(text.contains("architectures LLVM knows for nvptx64-nvidia-cuda: sm_70, sm_75, sm_80, sm_86, sm_89, sm_90, sm_90a, sm_100"), "{text}");
    // The wrong vendor's architecture says which target it belongs to.
    let (text, _) =
        shown(resolve(&tc, &opts(&["gfx90a"], Some("nvptx64-nvidia-cuda")), &Config::default(), &[]).unwrap_err());
    assert!(text.contains("`gfx90a` is an AMD GPU: add `--target amdgcn-amd-amdhsa`"), "{text}");
    let (text, _) =
        shown(resolve(&tc, &opts(&["sm_90"], Some("amdgcn-amd-amdhsa")), &Config::default(), &[]).unwrap_err());
    assert!(text.contains("`sm_90` is an NVIDIA GPU: use `--target nvptx64-nvidia-cuda`"), "{text}");
    assert!(text.contains("`--arch gfx90a`"), "{text}");
    cleanup(&dir);
}

#[test]
fn architectures_before_sm_70_are_refused() {
    let (tc, dir) = toolchain("old");
    for (arch, from, env) in [("sm_60", "--arch", None), ("sm_62", "OFFLOAD_ARCH", Some("sm_62"))] {
        let dev = if env.is_some() { opts(&[], None) } else { opts(&[arch], None) };
        let env: Vec<(&str, &str)> = env.map(|a| ("OFFLOAD_ARCH", a)).into_iter().collect();
        let (text, code) = shown(resolve(&tc, &dev, &Config::default(), &env).unwrap_err());
        assert_eq!(code, exit::USAGE);
        assert!(
            text.starts_with(&format!(
                "error: architecture `{arch}` (from {from}) is older than offload supports: NVIDIA GPUs from sm_70 (Volta) on"
            )),
            "{text}"
        );
        assert!(text.contains("`--arch sm_80`"), "{text}");
    }
    // The list of known architectures leaves out the ones refused.
    let (text, _) = shown(resolve(&tc, &opts(&["sm_91"], None), &Config::default(), &[]).unwrap_err());
    assert!(text.contains("sm_70") && !text.contains("sm_62") && !text.contains("sm_50,"), "{text}");
    cleanup(&dir);
}

#[test]
fn unknown_device_target_is_rejected() {
    let (tc, dir) = toolchain("target");
    for (dev, config) in [
        (opts(&["sm_90"], Some("x86_64-unknown-linux-gnu")), Config::default()),
        (opts(&["sm_90"], None), Config { target: Some("x86_64-unknown-linux-gnu".into()), ..Default::default() }),
    ] {
        let (text, code) = shown(resolve(&tc, &dev, &config, &[]).unwrap_err());
        assert_eq!(code, exit::USAGE);
        assert!(
            text.starts_with("error: unknown device target `x86_64-unknown-linux-gnu`: use nvptx64-nvidia-cuda (NVIDIA) or amdgcn-amd-amdhsa (AMD)"),
            "{text}"
        );
    }
    // AMD needs an architecture.
    let e = resolve(&tc, &opts(&[], Some("amdgcn-amd-amdhsa")), &Config::default(), &[]).unwrap_err();
    assert!(shown(e).0.contains("--arch is required for amdgcn-amd-amdhsa"));
    cleanup(&dir);
}

/// The architectures come from `--arch`, else `OFFLOAD_ARCH`, else the
/// `[package.metadata.offload]` table; each `gfx…` goes to the AMD target.
#[test]
fn architectures_and_their_precedence() {
    let (tc, dir) = toolchain("precedence");
    let table = Config::from_json(&serde_json::json!({"offload": {"arch": ["sm_80", "sm_90"]}})).unwrap();
    let nv = |a: &str, f: &str| ("nvptx64-nvidia-cuda".to_string(), a.to_string(), Some(f.to_string()));
    assert_eq!(resolve(&tc, &opts(&[], None), &table, &[]).unwrap(), [nv("sm_80", "+ptx70"), nv("sm_90", "+ptx78")]);
    assert_eq!(resolve(&tc, &opts(&[], None), &table, &[("OFFLOAD_ARCH", "sm_90")]).unwrap(), [nv("sm_90", "+ptx78")]);
    assert_eq!(
        resolve(&tc, &opts(&["sm_80"], None), &table, &[("OFFLOAD_ARCH", "sm_90")]).unwrap(),
        [nv("sm_80", "+ptx70")]
    );
    // A list, duplicates once, both vendors.
    let all = resolve(&tc, &opts(&["sm_90", "sm_80", "sm_90", "gfx942"], None), &Config::default(), &[]).unwrap();
    assert_eq!(
        all,
        [nv("sm_90", "+ptx78"), nv("sm_80", "+ptx70"), ("amdgcn-amd-amdhsa".into(), "gfx942".into(), None)]
    );
    assert_eq!(
        resolve(&tc, &opts(&[], None), &Config::default(), &[("OFFLOAD_ARCH", " gfx90a , gfx1100")]).unwrap(),
        [
            ("amdgcn-amd-amdhsa".to_string(), "gfx90a".to_string(), None),
            ("amdgcn-amd-amdhsa".into(), "gfx1100".into(), None)
        ]
    );
    cleanup(&dir);
}

/// The device pass enables the PTX ISA version of the architecture, keeps
/// a valid choice of the user's, and rejects one LLVM would abort on.
#[test]
fn ptx_isa_features_of_the_device_rustflags() {
    let (tc, dir) = toolchain("ptx");
    let sm90 = opts(&["sm_90"], None);
    let with = |flags: &str| resolve(&tc, &sm90, &Config::default(), &[("OFFLOAD_DEVICE_RUSTFLAGS", flags)]);
    assert_eq!(with("").unwrap()[0].2.as_deref(), Some("+ptx78"));
    assert_eq!(with("-Ctarget-feature=+ptx80").unwrap()[0].2, None, "the user's valid choice stays alone");
    let (text, code) = shown(with("-C target-feature=+ptx65").unwrap_err());
    assert_eq!(code, exit::USAGE);
    assert!(
        text.starts_with(
            "error: `+ptx65` in OFFLOAD_DEVICE_RUSTFLAGS is below what sm_90 needs: sm_90 code needs PTX ISA 7.8 or later"
        ),
        "{text}"
    );
    assert!(text.contains("help: remove it (cargo offload enables `+ptx78`, the minimum for sm_90)"), "{text}");
    let (text, _) = shown(with("-Ctarget-feature=+ptx99").unwrap_err());
    assert!(text.contains("is newer than the device LLVM 22 knows (up to PTX ISA 9.0)"), "{text}");
    let (text, _) = shown(with("-Ctarget-feature=-ptx78").unwrap_err());
    assert!(text.contains("PTX ISA versions cannot be turned off"), "{text}");
    cleanup(&dir);
}

/// An empty item in a list of architectures is a usage error naming the
/// list as written; an empty `--arch` names none at all.
#[test]
fn empty_architectures_are_refused() {
    let (tc, dir) = toolchain("empty");
    let empty = |value: &str, from: &str| {
        format!(
            "error: `{value}` (from {from}) has an empty architecture: separate architectures with one comma, e.g. \
             `sm_80,sm_90`"
        )
    };
    for (dev, env, want) in [
        // `--arch sm_80,,sm_90` and `--arch sm_80,`, as clap splits them.
        (opts(&["sm_80", "", "sm_90"], None), None, empty("sm_80,,sm_90", "--arch")),
        (opts(&["sm_80", ""], None), None, empty("sm_80,", "--arch")),
        (opts(&[], None), Some("sm_80,,sm_90"), empty("sm_80,,sm_90", "OFFLOAD_ARCH")),
        (opts(&[], None), Some(",sm_90"), empty(",sm_90", "OFFLOAD_ARCH")),
        (opts(&[""], None), None, "error: --arch names no architecture".to_string()),
        (opts(&[], None), Some(" , "), "error: OFFLOAD_ARCH names no architecture".to_string()),
    ] {
        let env: Vec<(&str, &str)> = env.map(|a| ("OFFLOAD_ARCH", a)).into_iter().collect();
        let (text, code) = shown(resolve(&tc, &dev, &Config::default(), &env).unwrap_err());
        assert_eq!((text.trim_end(), code), (want.as_str(), exit::USAGE), "{dev:?} {env:?}");
    }
    cleanup(&dir);
}

/// A mistake in `[package.metadata.offload]` is named with the known keys.
#[test]
fn configuration_mistakes_are_named() {
    for (json, err) in [
        (serde_json::json!({"offload": {"archs": ["sm_80"]}}), "unknown key `archs` (known: arch, target)"),
        (serde_json::json!({"offload": {"arch": [90]}}), "`arch` entries must be strings, found 90"),
        (serde_json::json!({"offload": {"target": 1}}), "`target` must be a string, found 1"),
    ] {
        assert_eq!(Config::from_json(&json).unwrap_err(), err);
    }
}
