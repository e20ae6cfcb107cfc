//! The user's workspace, as `cargo metadata` describes it: its root, its
//! target directory, and the `[package.metadata.offload]` table.

use std::path::PathBuf;

use crate::cli::CargoOpts;
use crate::errors::{CliError, Result};

pub struct Workspace {
    pub target_dir: PathBuf,
    /// The workspace root (`cargo metadata`'s `workspace_root`).
    pub root: PathBuf,
    /// `[package.metadata.offload]` of the package in the current directory
    /// (or `--manifest-path`), else `[workspace.metadata.offload]`.
    pub config: Config,
}

/// Settings from `Cargo.toml`. Precedence, highest first: the command line,
/// the environment (`OFFLOAD_ARCH`, `OFFLOAD_DEVICE_RUSTFLAGS`), this
/// table, then the defaults (the GPU `nvidia-smi` reports, else `sm_80`).
///
/// ```toml
/// [package.metadata.offload]
/// arch = ["sm_80", "sm_90"]   # or "sm_90"; gfx… for AMD
/// target = "nvptx64-nvidia-cuda"
/// ```
#[derive(Debug, Default)]
pub struct Config {
    pub arch: Vec<String>,
    pub target: Option<String>,
}

impl Config {
    /// Reads the `offload` key of a metadata table; the error says what is wrong.
    pub fn from_json(v: &serde_json::Value) -> std::result::Result<Config, String> {
        let Some(t) = v.get("offload") else { return Ok(Config::default()) };
        let arch = match t.get("arch") {
            None => Vec::new(),
            Some(serde_json::Value::String(a)) => a.split(',').map(|s| s.trim().to_string()).collect(),
            Some(serde_json::Value::Array(a)) => a
                .iter()
                .map(|x| {
                    x.as_str().map(String::from).ok_or_else(|| format!("`arch` entries must be strings, found {x}"))
                })
                .collect::<std::result::Result<_, _>>()?,
            Some(other) => return Err(format!("`arch` must be a string or a list of strings, found {other}")),
        };
        let target = match t.get("target") {
            None => None,
            Some(serde_json::Value::String(s)) => Some(s.clone()),
            Some(other) => return Err(format!("`target` must be a string, found {other}")),
        };
        for key in t.as_object().map(|o| o.keys().cloned().collect::<Vec<_>>()).unwrap_or_default() {
            if key != "arch" && key != "target" {
                return Err(format!("unknown key `{key}` (known: arch, target)"));
            }
        }
        Ok(Config { arch, target })
    }
}

/// Runs `cargo metadata` for the workspace the command line selects.
pub fn workspace(cargo: &CargoOpts) -> Result<Workspace> {
    // With dependencies: the host cargo resolves the graph, writes
    // Cargo.lock and fetches git dependencies before the device pass, whose
    // cargo may be Debian's, which cannot fetch them itself (its libgit2:
    // "invalid version 0 on git_proxy_options").
    let mut cmd = cargo_metadata::MetadataCommand::new();
    let mut other = Vec::new();
    for (on, flag) in [(cargo.locked, "--locked"), (cargo.offline, "--offline"), (cargo.frozen, "--frozen")] {
        if on {
            other.push(flag.to_string());
        }
    }
    cmd.other_options(other);
    if let Some(m) = &cargo.manifest_path {
        cmd.manifest_path(m);
    }
    // Run as every child is (`child`): interruptible, forwarded Ctrl-C.
    let out = crate::child::output(&mut cmd.cargo_command())?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        return Err(CliError::Metadata(cargo_metadata::Error::CargoMetadata { stderr }));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let json = stdout.lines().find(|l| l.starts_with('{')).ok_or(CliError::Metadata(cargo_metadata::Error::NoJson))?;
    let meta = cargo_metadata::MetadataCommand::parse(json).map_err(CliError::Metadata)?;
    let target_dir = match &cargo.target_dir {
        Some(t) => std::path::absolute(t).unwrap_or_else(|_| t.clone()),
        None => meta.target_directory.clone().into_std_path_buf(),
    };
    let (table, metadata) = match meta.root_package() {
        Some(p) if p.metadata.get("offload").is_some() => {
            (format!("[package.metadata.offload] of {}", p.name), &p.metadata)
        }
        _ => ("[workspace.metadata.offload]".to_string(), &meta.workspace_metadata),
    };
    let config = Config::from_json(metadata).map_err(|problem| CliError::Config { table, problem })?;
    Ok(Workspace { target_dir, root: meta.workspace_root.into_std_path_buf(), config })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_tables() {
        let c = Config::from_json(
            &serde_json::json!({"offload": {"arch": ["sm_80", "sm_90"], "target": "nvptx64-nvidia-cuda"}}),
        )
        .unwrap();
        assert_eq!(c.arch, ["sm_80", "sm_90"]);
        assert_eq!(c.target.as_deref(), Some("nvptx64-nvidia-cuda"));
        assert_eq!(
            Config::from_json(&serde_json::json!({"offload": {"arch": "sm_90, gfx90a"}})).unwrap().arch,
            ["sm_90", "gfx90a"]
        );
        assert!(Config::from_json(&serde_json::json!({})).unwrap().arch.is_empty());
        assert_eq!(
            Config::from_json(&serde_json::json!({"offload": {"arch": 90}})).unwrap_err(),
            "`arch` must be a string or a list of strings, found 90"
        );
        assert_eq!(
            Config::from_json(&serde_json::json!({"offload": {"archs": []}})).unwrap_err(),
            "unknown key `archs` (known: arch, target)"
        );
    }
}
