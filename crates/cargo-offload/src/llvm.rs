//! What the device LLVM knows, asked of its `llc`: the architectures of a
//! target (`llc -mcpu=help`) and the PTX ISA versions (`llc -mattr=help`).

use std::path::Path;

use crate::child;
use crate::errors::Result;

/// The architectures `llc` knows for `triple` (`llc -mcpu=help`, probed);
/// none if it does not run.
pub fn known_archs(llc: &Path, triple: &str) -> Result<Vec<String>> {
    let out = child::probe_cached(llc, &[&format!("-mtriple={triple}"), "-mcpu=help"])?;
    let Some(out) = out else { return Ok(Vec::new()) };
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
    Ok(archs)
}

/// The PTX versions `llc -mattr=help` lists (`ptx78 - Use PTX version 78.`).
pub fn parse_ptx_features(help: &str) -> Vec<u32> {
    let mut v: Vec<u32> = help
        .lines()
        .filter_map(|l| l.trim().strip_prefix("ptx"))
        .filter_map(|rest| rest.split_whitespace().next())
        .filter_map(|n| n.parse().ok())
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// The PTX versions the `llc` at `llc` knows (`llc -mattr=help`, probed);
/// none if it does not run.
pub fn ptx_versions(llc: &Path) -> Result<Vec<u32>> {
    let out = child::probe_cached(llc, &["-mtriple=nvptx64-nvidia-cuda", "-mattr=help"])?;
    Ok(out
        .map(|o| {
            parse_ptx_features(&(String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)))
        })
        .unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ptx::{dotted, MIN_PTX};

    #[test]
    fn llc_feature_lists_parse() {
        let help = "Available CPUs for this target:\n\n  sm_90 - Select the sm_90 processor.\n\nAvailable features for this target:\n\n  ptx32 - Use PTX version 32.\n  ptx78 - Use PTX version 78.\n  ptx90 - Use PTX version 90.\n  sm_90 - Target SM 90.\n";
        assert_eq!(parse_ptx_features(help), [32, 78, 90]);
    }

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
            assert_eq!(known_archs(&llc, "nvptx64-nvidia-cuda").unwrap(), ["sm_90", "sm_90a"]);
        }
    }

    /// The table agrees with the `llc` of the device toolchains installed
    /// here: for each architecture it knows, `llc -mcpu=<arch>` on an empty
    /// module emits `.version <minimum>`.
    #[test]
    fn the_table_agrees_with_installed_llcs() {
        let mut llcs: Vec<std::path::PathBuf> = Vec::new();
        for major in 20..40 {
            if let Ok(p) = offload_linker::tools::find_tool("llc", "OFFLOAD_TEST_UNSET_LLC", major, None, &[]) {
                llcs.push(p);
            }
        }
        if let Ok(out) =
            std::process::Command::new("rustup").args(["which", "--toolchain", "nightly", "rustc"]).output()
        {
            let rustc = std::path::PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
            if let Some(root) = rustc.parent().and_then(std::path::Path::parent) {
                let dir = root.join("lib/rustlib/x86_64-unknown-linux-gnu/bin/llc");
                if dir.is_file() {
                    llcs.push(dir);
                }
            }
        }
        let dir = std::env::temp_dir().join(format!("offload-ptx-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let empty = dir.join("empty.ll");
        std::fs::write(&empty, "target triple = \"nvptx64-nvidia-cuda\"\n").unwrap();
        for llc in &llcs {
            let known = known_archs(llc, "nvptx64-nvidia-cuda").unwrap();
            for (arch, min) in MIN_PTX.iter().filter(|(a, _)| known.iter().any(|k| k == a)) {
                let out = std::process::Command::new(llc)
                    .arg("-mtriple=nvptx64-nvidia-cuda")
                    .arg(format!("-mcpu={arch}"))
                    .arg(&empty)
                    .args(["-o", "-"])
                    .output()
                    .unwrap();
                let ptx = String::from_utf8_lossy(&out.stdout);
                assert!(ptx.contains(&format!(".version {}\n", dotted(*min))), "{} {arch}: {ptx}", llc.display());
            }
            assert!(ptx_versions(llc).unwrap().contains(&78), "{}", llc.display());
        }
        let _ = std::fs::remove_dir_all(dir);
    }
}
