//! `cargo offload`: build, run and test Rust crates whose kernels run on the
//! GPU. See the README for the model; `wrapper.rs` for who calls whom.
#![deny(unsafe_code)]

mod cli;
mod device;
mod doctor;
mod embed;
mod errors;
mod generic;
mod host;
mod interrupt;
mod ptx;
mod status;
mod sysroot;
mod toolchain;
mod wrapper;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use cli::{CargoOpts, Command, DeviceOpts};
use errors::{exit, CliError, Result};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_tables() {
        let c = Config::from_json(&serde_json::json!({"offload": {"arch": ["sm_80", "sm_90"], "target": "nvptx64-nvidia-cuda"}})).unwrap();
        assert_eq!(c.arch, ["sm_80", "sm_90"]);
        assert_eq!(c.target.as_deref(), Some("nvptx64-nvidia-cuda"));
        assert_eq!(Config::from_json(&serde_json::json!({"offload": {"arch": "sm_90, gfx90a"}})).unwrap().arch, ["sm_90", "gfx90a"]);
        assert!(Config::from_json(&serde_json::json!({})).unwrap().arch.is_empty());
        assert_eq!(Config::from_json(&serde_json::json!({"offload": {"arch": 90}})).unwrap_err(), "`arch` must be a string or a list of strings, found 90");
        assert_eq!(Config::from_json(&serde_json::json!({"offload": {"archs": []}})).unwrap_err(), "unknown key `archs` (known: arch, target)");
    }
}

fn main() {
    let argv: Vec<OsString> = std::env::args_os().collect();
    if wrapper::is_wrapper_invocation(&argv) {
        std::process::exit(wrapper::main(argv));
    }
    if argv.len() == 3 && argv[1] == "offload" && (argv[2] == "--version" || argv[2] == "-V") {
        println!("cargo-offload {}", env!("CARGO_PKG_VERSION"));
        std::process::exit(exit::OK);
    }
    let cli = match cli::parse(&argv) {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { exit::USAGE } else { exit::OK };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    interrupt::install();
    let code = match run(cli.command) {
        // The program (or the host cargo) was interrupted: it has said so.
        Ok(code) if code != exit::OK && interrupt::interrupted() => exit::INTERRUPTED,
        Ok(code) => code,
        // Whatever a dying child made fail, the cause is the interruption.
        Err(_) if interrupt::interrupted() => {
            CliError::Interrupted.report();
            exit::INTERRUPTED
        }
        Err(e) => {
            e.report();
            e.exit_code()
        }
    };
    std::process::exit(code);
}

fn run(command: Command) -> Result<i32> {
    match command {
        Command::Build(a) => pipeline(&a.device, &a.cargo, host::Action::Build),
        Command::Run(a) => pipeline(&a.device, &a.cargo, host::Action::Run { args: a.args }),
        Command::Test(a) => {
            pipeline(&a.device, &a.cargo, host::Action::Test { no_run: a.no_run, filter: a.filter, args: a.args })
        }
        Command::Bench(a) => {
            pipeline(&a.device, &a.cargo, host::Action::Bench { no_run: a.no_run, filter: a.filter, args: a.args })
        }
        Command::Doctor => Ok(doctor::run()),
    }
}

/// The executables `cargo offload` hands to cargo and rustc: itself (as the
/// rustc wrapper) and `offload-linker`, installed beside it.
fn own_executables() -> Result<(PathBuf, PathBuf)> {
    let me = std::env::current_exe().map_err(|source| CliError::Io { path: "current executable".into(), source })?;
    let linker = me.with_file_name(format!("offload-linker{}", std::env::consts::EXE_SUFFIX));
    if !linker.is_file() {
        return Err(CliError::Usage(format!(
            "`offload-linker` is missing beside {}; install both with `cargo install --path crates/cargo-offload`",
            me.display()
        )));
    }
    Ok((me, linker))
}

struct Workspace {
    target_dir: PathBuf,
    /// The workspace root (`cargo metadata`'s `workspace_root`).
    root: PathBuf,
    /// `[package.metadata.offload]` of the package in the current directory
    /// (or `--manifest-path`), else `[workspace.metadata.offload]`.
    config: Config,
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
struct Config {
    arch: Vec<String>,
    target: Option<String>,
}

impl Config {
    fn from_json(v: &serde_json::Value) -> std::result::Result<Config, String> {
        let Some(t) = v.get("offload") else { return Ok(Config::default()) };
        let arch = match t.get("arch") {
            None => Vec::new(),
            Some(serde_json::Value::String(a)) => a.split(',').map(|s| s.trim().to_string()).collect(),
            Some(serde_json::Value::Array(a)) => a
                .iter()
                .map(|x| x.as_str().map(String::from).ok_or_else(|| format!("`arch` entries must be strings, found {x}")))
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

fn workspace(cargo: &CargoOpts) -> Result<Workspace> {
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
    let meta = cmd.exec().map_err(|e| CliError::Metadata(e.to_string()))?;
    let target_dir = match &cargo.target_dir {
        Some(t) => std::path::absolute(t).unwrap_or_else(|_| t.clone()),
        None => meta.target_directory.clone().into_std_path_buf(),
    };
    let (source, table) = match meta.root_package() {
        Some(p) if p.metadata.get("offload").is_some() => (format!("[package.metadata.offload] of {}", p.name), &p.metadata),
        _ => ("[workspace.metadata.offload]".to_string(), &meta.workspace_metadata),
    };
    let config = Config::from_json(table).map_err(|e| CliError::Usage(format!("{source}: {e}")))?;
    Ok(Workspace { target_dir, root: meta.workspace_root.into_std_path_buf(), config })
}

/// One device image to build: a target triple and an architecture.
struct DeviceSel {
    triple: String,
    arch: String,
    /// The PTX ISA feature the architecture implies (`+ptx78`), see `ptx`.
    ptx_feature: Option<String>,
}

/// The target a GPU architecture belongs to: `gfx…` is AMD, the rest NVIDIA.
fn target_of(arch: &str) -> &'static str {
    if arch.starts_with("gfx") {
        "amdgcn-amd-amdhsa"
    } else {
        "nvptx64-nvidia-cuda"
    }
}

/// The images to build, from `--arch` (a list), `OFFLOAD_ARCH`, the GPU
/// `nvidia-smi` reports, or the default `sm_80`, in that order; each
/// architecture checked against the ones `llc` knows for its target.
fn resolve_devices(dev: &DeviceOpts, config: &Config, tc: &toolchain::DeviceToolchain) -> Result<Vec<DeviceSel>> {
    let target = dev.target.clone().or_else(|| config.target.clone());
    let (archs, from): (Vec<String>, &str) = if !dev.arch.is_empty() {
        (dev.arch.clone(), "--arch")
    } else if let Some(a) = std::env::var("OFFLOAD_ARCH").ok().filter(|a| !a.trim().is_empty()) {
        (a.split(',').map(|s| s.trim().to_string()).collect(), "OFFLOAD_ARCH")
    } else if !config.arch.is_empty() {
        (config.arch.clone(), "Cargo.toml [package.metadata.offload]")
    } else if target.as_deref().is_some_and(|t| t.starts_with("amdgcn")) {
        return Err(CliError::Usage("--arch is required for amdgcn-amd-amdhsa (e.g. --arch gfx90a)".into()));
    } else {
        match toolchain::detect_gpu_arch() {
            Some(a) => (vec![a], "the GPU"),
            None => (vec![cli::DEFAULT_NVPTX_ARCH.to_string()], "default"),
        }
    };
    let mut sels: Vec<DeviceSel> = Vec::new();
    for arch in archs.into_iter().filter(|a| !a.is_empty()) {
        let triple = target.clone().unwrap_or_else(|| target_of(&arch).to_string());
        if !(triple.starts_with("nvptx64-nvidia-cuda") || triple.starts_with("amdgcn-amd-amdhsa")) {
            return Err(CliError::UnknownTarget(triple));
        }
        let known = toolchain::known_archs(&tc.llvm.llc, &triple);
        if !known.is_empty() && !known.contains(&arch) {
            return Err(CliError::UnknownArch { arch, target: triple, known, from });
        }
        if triple.starts_with("nvptx64") && errors::nvptx_too_old(&arch) {
            return Err(CliError::ArchTooOld { arch, from });
        }
        if !sels.iter().any(|d| d.arch == arch && d.triple == triple) {
            let ptx_feature = if triple.starts_with("nvptx64") {
                // Checked before any build: an unusable PTX ISA version
                // would abort LLVM in the middle of it.
                let flags: Vec<String> = std::env::var("OFFLOAD_DEVICE_RUSTFLAGS")
                    .unwrap_or_default()
                    .split_whitespace()
                    .map(String::from)
                    .collect();
                ptx::device_feature(&arch, &flags, &ptx::llc_ptx_versions(&tc.llvm.llc), tc.llvm_major)?
            } else {
                None
            };
            sels.push(DeviceSel { triple, arch, ptx_feature });
        }
    }
    if sels.is_empty() {
        return Err(CliError::Usage("--arch names no architecture".into()));
    }
    if from != "--arch" {
        let list: Vec<String> = sels.iter().map(|d| format!("{} {}", d.triple, d.arch)).collect();
        status::status("Device", format!("{} ({from})", list.join(", ")));
    }
    Ok(sels)
}

fn pipeline(dev: &DeviceOpts, cargo: &CargoOpts, action: host::Action) -> Result<i32> {
    status::set_quiet(dev.quiet);
    if let Some(t) = &dev.target {
        if !(t.starts_with("nvptx64-nvidia-cuda") || t.starts_with("amdgcn-amd-amdhsa")) {
            return Err(CliError::UnknownTarget(t.clone()));
        }
    }
    let (me, linker) = own_executables()?;
    let ws = workspace(cargo)?;
    let tc = toolchain::find()?;
    let sels = resolve_devices(dev, &ws.config, &tc)?;
    if dev.verbose >= 1 {
        status::status(
            "Toolchain",
            format!(
                "{} ({}, {}), LLVM {} tools {}, ptxas {}",
                tc.rustc.display(),
                tc.origin,
                tc.version,
                tc.llvm_major,
                tc.llvm.llc.parent().map(Path::display).map(|d| d.to_string()).unwrap_or_default(),
                tc.ptxas.as_ref().map(|p| p.display().to_string()).unwrap_or_else(|| "not found (PTX only)".into()),
            ),
        );
    }
    let tests = matches!(action, host::Action::Test { .. } | host::Action::Bench { .. });
    let benches = matches!(action, host::Action::Bench { .. });
    let mode = if dev.fast_math {
        "-fast-math"
    } else if dev.fmad {
        "-fmad"
    } else {
        ""
    };
    // One directory of instantiation lists per workspace that uses this
    // target directory: another workspace's lists say nothing about this one.
    let root_hash = offload_image::symbol::hash32(&[&ws.root.display().to_string()]);
    let generic_dir = ws.target_dir.join("offload").join("generic").join(format!("{root_hash:08x}"));
    let mut passes = Vec::new();
    for sel in &sels {
        let target_arg = if sel.triple.starts_with("amdgcn") {
            device::amdgpu_target_spec(&tc, &ws.target_dir.join("offload"))?.display().to_string()
        } else {
            sel.triple.clone()
        };
        passes.push(device::DevicePass {
            tc: &tc,
            triple: &sel.triple,
            target_arg,
            arch: &sel.arch,
            ptx_feature: sel.ptx_feature.clone(),
            cargo,
            tests,
            benches,
            target_dir: device::device_target_dir(&ws.target_dir, &sel.triple, &format!("{}{mode}", sel.arch)),
            wrapper: me.clone(),
            linker: linker.clone(),
            verbose: dev.verbose,
            quiet: dev.quiet,
            fast_math: dev.fast_math,
            fmad: dev.fmad,
            generic_dir: generic_dir.clone(),
        });
    }
    let images_dir = ws.target_dir.join("offload").join("images");
    let archs: Vec<&str> = sels.iter().map(|d| d.arch.as_str()).collect();
    let profile = cargo.profile.clone().unwrap_or_else(|| if cargo.release { "release".into() } else { "dev".into() });
    let build_tag = format!("{profile}-{}{mode}", archs.join("+"));
    let map_file = embed::MapFile(embed::map_path(&images_dir, &build_tag));
    let map_path = &map_file.0;
    let host = host::HostPass {
        cargo,
        action: &action,
        wrapper: &me,
        map: map_path,
        verbose: dev.verbose,
        quiet: dev.quiet,
        generic_dir: &generic_dir,
        collect: None,
    };

    if dev.dry_run {
        for (pass, sel) in passes.iter().zip(&sels) {
            println!("# device pass ({} {})", sel.triple, sel.arch);
            println!("{}", pass.render());
        }
        let cubin = if tc.ptxas.is_some() { " + ptxas cubin" } else { "" };
        println!(
            "# embed: each final binary's images ({}), one bundle → {}/<crate>-<kind>-<hash>.o",
            sels.iter()
                .map(|d| if d.triple.starts_with("nvptx") { format!("PTX {}{cubin}", d.arch) } else { format!("code object {}", d.arch) })
                .collect::<Vec<_>>()
                .join(", "),
            images_dir.display()
        );
        println!("# host pass");
        println!("{}", host.render());
        return Ok(exit::OK);
    }

    let objects_dir = images_dir.join(&profile);
    // Returns the binaries' image map and their names.
    let device_round = || -> Result<(Vec<embed::ImageMapEntry>, String)> {
        let mut artifacts = Vec::new();
        for (pass, sel) in passes.iter().zip(&sels) {
            for a in pass.run()? {
                artifacts.push(embed::Built { artifact: a, triple: sel.triple.clone(), arch: sel.arch.clone() });
            }
        }
        if interrupt::interrupted() {
            return Err(CliError::Interrupted);
        }
        let map = embed::embed(&artifacts, tc.ptxas.as_deref(), &images_dir, &objects_dir, status::status)?;
        embed::write_map(map_path, &map)?;
        let mut names: Vec<String> = artifacts.iter().map(|a| a.artifact.describe()).collect();
        names.dedup();
        Ok((map, names.join(", ")))
    };
    let no_kernels = |(map, binaries): &(Vec<embed::ImageMapEntry>, String)| -> Result<()> {
        if !map.is_empty() && map.iter().all(|e| e.kernels.is_empty()) {
            return Err(CliError::NoKernels { binaries: binaries.clone() });
        }
        Ok(())
    };
    // Generic kernels: a host build finds the instantiations the binaries
    // use, and the lists the device pass reads are updated from it (see
    // generic.rs). With lists from an earlier build, that comes first, so a
    // list never names a type the code no longer has; on the first build,
    // the device pass creates the lists and a second device round follows.
    let collect = || -> Result<Option<i32>> {
        let log = generic_dir.join(format!("collect-{}.log", std::process::id()));
        let _ = std::fs::remove_file(&log);
        let code = host::HostPass { collect: Some(&log), ..host }.run()?;
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let _ = std::fs::remove_file(&log);
        if code != exit::OK {
            return Ok(Some(code));
        }
        let added = generic::merge(&generic_dir, &text).map_err(|source| CliError::Io { path: generic_dir.clone(), source })?;
        let mut by_kernel: std::collections::BTreeMap<&str, Vec<String>> = Default::default();
        for (args, loc) in &added {
            // `(f32,)` → `<f32>`, `(f32, u64)` → `<f32, u64>`
            let inner = args.strip_prefix('(').and_then(|a| a.strip_suffix(')')).unwrap_or(args);
            by_kernel.entry(loc.as_str()).or_default().push(format!("<{}>", inner.strip_suffix(',').unwrap_or(inner)));
        }
        for (loc, list) in by_kernel {
            status::status("Generic", format!("kernel at {loc} instantiated for {}", list.join(", ")));
        }
        Ok(None)
    };
    let interrupted = || if interrupt::interrupted() { Err(CliError::Interrupted) } else { Ok(()) };
    let collected_first = generic::any_generic(&generic_dir);
    if collected_first {
        if let Some(code) = collect()? {
            return Ok(code);
        }
    }
    let mut built = device_round()?;
    if !collected_first && generic::any_generic(&generic_dir) {
        if let Some(code) = collect()? {
            return Ok(code);
        }
        built = device_round()?;
    }
    no_kernels(&built)?;
    interrupted()?;
    host.run()
}
