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
    /// The directories of offload's own packages that the graph uses by
    /// path (a clone's `crates/offload`, …) and that are not members of
    /// this workspace, for the crate cache
    /// (`crate_cache::own_sources`).
    pub own_packages: Vec<PathBuf>,
    /// The library dependencies of the graph's crates (`host_only::lib_deps`).
    pub lib_deps: crate::host_only::LibDeps,
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
    cmd.other_options(cargo.metadata_args());
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
    check_offload_version(
        meta.packages.iter().filter(|p| p.name.as_str() == "offload").map(|p| {
            // A path dependency (no source): its checkout's cargo-offload, if it has one.
            let installer =
                p.source.is_none().then(|| p.manifest_path.as_std_path().with_file_name("../cargo-offload"));
            let installer = installer.map(|d| crate::crate_cache::lexical(&d));
            (p.version.to_string(), installer.filter(|d| d.join("Cargo.toml").is_file()))
        }),
        env!("CARGO_PKG_VERSION"),
    )?;
    check_selection(cargo, &meta)?;
    let target_dir = match &cargo.target_dir {
        Some(t) => std::path::absolute(t).unwrap_or_else(|_| t.clone()),
        None => meta.target_directory.clone().into_std_path_buf(),
    };
    for (table, metadata) in meta
        .root_package()
        .map(|p| ("package", &p.metadata))
        .into_iter()
        .chain([("workspace", &meta.workspace_metadata)])
    {
        for warning in misspelled_tables(table, metadata) {
            crate::status::warn(warning);
        }
    }
    let (table, metadata) = match meta.root_package() {
        Some(p) if p.metadata.get("offload").is_some() => {
            (format!("[package.metadata.offload] of {}", p.name), &p.metadata)
        }
        _ => ("[workspace.metadata.offload]".to_string(), &meta.workspace_metadata),
    };
    let config = Config::from_json(metadata).map_err(|problem| CliError::Config { table, problem })?;
    let own_packages = meta
        .packages
        .iter()
        .filter(|p| p.source.is_none() && crate::crate_cache::OWN_PACKAGES.contains(&p.name.as_str()))
        // Members are being worked on: compiled incrementally, never cached.
        .filter(|p| !meta.workspace_members.contains(&p.id))
        .filter_map(|p| p.manifest_path.parent().map(|d| d.to_path_buf().into_std_path_buf()))
        .collect();
    let lib_deps = crate::host_only::lib_deps(&meta);
    Ok(Workspace { target_dir, root: meta.workspace_root.into_std_path_buf(), config, own_packages, lib_deps })
}

/// Refuses `--package`/`--bin`/`--example`/`--test`/`--bench` names that
/// select nothing, before any pass runs (cargo would refuse them too, but
/// only inside the device pass, which would then look like a failed device
/// build). Only what is surely wrong is refused, never what cargo accepts:
/// a plain package name that is in none of the packages `cargo metadata`
/// resolved, unless features are given on the command line (they may
/// enable an optional dependency that the metadata, resolved without them,
/// lacks); a target name that no package of the graph has, members and
/// dependencies alike (`-p dep --bin b` builds a dependency's binary).
/// Specs other than plain names (`name@1.0`, URLs) and glob patterns are
/// left to cargo.
fn check_selection(cargo: &CargoOpts, meta: &cargo_metadata::Metadata) -> Result<()> {
    let plain = |s: &str| s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    let features_given = !cargo.features.is_empty() || cargo.all_features;
    for p in cargo.package.iter().filter(|p| plain(p) && !features_given) {
        if !meta.packages.iter().any(|k| k.name.as_str() == p) {
            let mut known: Vec<String> = meta.workspace_packages().iter().map(|p| p.name.to_string()).collect();
            known.sort();
            return Err(CliError::NoSuchSelection {
                flag: "--package",
                name: p.clone(),
                what: "package",
                among: "this workspace or its dependencies",
                known,
            });
        }
    }
    for (flag, names, kind, what) in [
        ("--bin", &cargo.bin, cargo_metadata::TargetKind::Bin, "binary"),
        ("--example", &cargo.example, cargo_metadata::TargetKind::Example, "example"),
        ("--test", &cargo.test, cargo_metadata::TargetKind::Test, "test target"),
        ("--bench", &cargo.bench, cargo_metadata::TargetKind::Bench, "bench target"),
    ] {
        let of_all = |p: &&cargo_metadata::Package| -> Vec<String> {
            p.targets.iter().filter(|t| t.kind.contains(&kind)).map(|t| t.name.clone()).collect()
        };
        // cargo takes glob patterns for target names too.
        for n in names.iter().filter(|n| !n.contains(['*', '?', '['])) {
            if !meta.packages.iter().flat_map(|p| of_all(&p)).any(|k| &k == n) {
                // The list shows the workspace's own targets of that kind.
                let mut known: Vec<String> = meta.workspace_packages().iter().flat_map(of_all).collect();
                known.sort();
                known.dedup();
                return Err(CliError::NoSuchSelection {
                    flag,
                    name: n.clone(),
                    what,
                    among: "this workspace or its dependencies",
                    known,
                });
            }
        }
    }
    Ok(())
}

/// A warning for each key of a `[<table>.metadata]` table (`table`:
/// `package` or `workspace`) whose name is close to `offload` (at most two
/// edits, any case: `ofload`, `offlaod`, `Offload`) but is not it: such a
/// table is not read.
pub fn misspelled_tables(table: &str, metadata: &serde_json::Value) -> Vec<String> {
    let Some(keys) = metadata.as_object() else { return Vec::new() };
    keys.keys()
        .filter(|k| *k != "offload" && strsim::damerau_levenshtein(&k.to_lowercase(), "offload") <= 2)
        .map(|k| {
            format!(
                "`[{table}.metadata.{k}]` in Cargo.toml is not read by cargo offload; did you mean \
                 `[{table}.metadata.offload]`?"
            )
        })
        .collect()
}

/// Checks that every `offload` in the resolved graph (`found`: the versions
/// of the packages named `offload` in `cargo metadata`) is `own`, this
/// `cargo offload`'s version: the crates of one release go together (see
/// [`CliError::OffloadVersion`]'s note). A workspace without `offload`
/// passes; building it fails later, with "no kernels".
///
/// `found` pairs each version with, for a path dependency, the
/// `crates/cargo-offload` directory beside it in its checkout.
fn check_offload_version(found: impl IntoIterator<Item = (String, Option<PathBuf>)>, own: &str) -> Result<()> {
    let mut found: Vec<(String, Option<PathBuf>)> = found.into_iter().collect();
    found.sort();
    found.dedup();
    if found.iter().all(|(v, _)| v == own) {
        return Ok(());
    }
    let checkouts = found.iter().filter(|(v, _)| v != own).filter_map(|(v, d)| Some((v.clone(), d.clone()?))).collect();
    let mut found: Vec<String> = found.into_iter().map(|(v, _)| v).collect();
    found.dedup();
    Err(CliError::OffloadVersion { own: own.to_string(), found, checkouts })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The versions must be equal, not merely semver-compatible; the error
    /// names both commands that fix it.
    #[test]
    fn offload_version_must_equal_cargo_offload_version() {
        assert!(check_offload_version([reg("0.1.0")], "0.1.0").is_ok());
        assert!(check_offload_version([reg("0.1.0"), reg("0.1.0")], "0.1.0").is_ok());
        assert!(check_offload_version([], "0.1.0").is_ok(), "no offload: not this check's error");
        let e = check_offload_version([reg("0.1.0")], "0.1.1").unwrap_err();
        assert_eq!(e.exit_code(), crate::errors::exit::SETUP);
        let text = e.render("error: ");
        assert!(
            text.starts_with(
                "error: the workspace uses offload 0.1.0, but this is cargo-offload 0.1.1; they must be the same \
                 version\n  = note: "
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "= help: to build with offload 0.1.0, install its cargo offload: \
                 `cargo install cargo-offload --version 0.1.0`"
            ),
            "{text}"
        );
        assert!(
            text.contains("= help: or move the workspace to offload 0.1.1: `cargo update -p offload --precise 0.1.1`"),
            "{text}"
        );
        let e = check_offload_version([reg("0.2.0"), reg("0.1.1")], "0.1.1").unwrap_err();
        assert!(e.to_string().starts_with("the workspace uses offload 0.1.1 and 0.2.0, but"), "{e}");
        // A path dependency into a clone: that clone's cargo offload, by path.
        let clone = PathBuf::from("/src/offload/crates/cargo-offload");
        let text = check_offload_version([("0.1.0".to_string(), Some(clone))], "0.1.1").unwrap_err().render("");
        assert!(
            text.contains(
                "= help: offload 0.1.0 comes from a checkout: install its cargo offload with `cargo install --path \
                 /src/offload/crates/cargo-offload`"
            ),
            "{text}"
        );
        assert!(!text.contains("cargo install cargo-offload --version"), "{text}");
        assert!(text.contains("or point the dependency at a checkout of offload 0.1.1"), "{text}");
    }

    fn reg(v: &str) -> (String, Option<PathBuf>) {
        (v.to_string(), None)
    }

    /// Tables close to `offload` (two edits at most, any case) get a
    /// warning naming the right one; others, and `offload` itself, do not.
    #[test]
    fn misspelled_offload_tables_are_named() {
        let meta = serde_json::json!({
            "ofload": {}, "offlaod": {}, "Offload": {}, "OFFLOAD": {}, "offloads": {}, "offload": {},
            "docs": {}, "unload": {}, "release": {}, "oflaod": {}
        });
        let mut got = misspelled_tables("package", &meta);
        got.sort();
        let mut want: Vec<String> = ["OFFLOAD", "Offload", "oflaod", "offlaod", "offloads", "ofload"]
            .iter()
            .map(|k| {
                format!(
                    "`[package.metadata.{k}]` in Cargo.toml is not read by cargo offload; did you mean \
                     `[package.metadata.offload]`?"
                )
            })
            .collect();
        want.sort();
        assert_eq!(got, want);
        assert!(misspelled_tables("workspace", &serde_json::Value::Null).is_empty());
        assert_eq!(misspelled_tables("workspace", &serde_json::json!({"offlod": 1})).len(), 1);
    }

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
