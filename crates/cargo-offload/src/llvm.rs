//! What the device LLVM knows, asked of its `llc`: the architectures of a
//! target (`llc -mcpu=help`).

use std::path::Path;
use std::process::Command;

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
