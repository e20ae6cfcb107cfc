//! `cargo offload`: build, run and test Rust crates whose kernels run on the
//! GPU. See the README for the model; `wrapper.rs` for who calls whom.
#![deny(unsafe_code)]

mod cli;
mod device;
mod doctor;
mod embed;
mod errors;
mod host;
mod status;
mod toolchain;
mod wrapper;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use cli::{CargoOpts, Command, DeviceOpts};
use errors::{exit, CliError, Result};

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
    let code = match run(cli.command) {
        Ok(code) => code,
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
}

fn workspace(cargo: &CargoOpts) -> Result<Workspace> {
    let mut cmd = cargo_metadata::MetadataCommand::new();
    cmd.no_deps();
    if let Some(m) = &cargo.manifest_path {
        cmd.manifest_path(m);
    }
    let meta = cmd.exec().map_err(|e| CliError::Metadata(e.to_string()))?;
    let target_dir = match &cargo.target_dir {
        Some(t) => std::path::absolute(t).unwrap_or_else(|_| t.clone()),
        None => meta.target_directory.into_std_path_buf(),
    };
    Ok(Workspace { target_dir })
}

fn resolve_arch(dev: &DeviceOpts, tc: &toolchain::DeviceToolchain) -> Result<String> {
    let (arch, from) = match &dev.arch {
        Some(a) => (a.clone(), "--arch"),
        None => match std::env::var("OFFLOAD_ARCH").ok().filter(|a| !a.is_empty()) {
            Some(a) => (a, "OFFLOAD_ARCH"),
            None if dev.target.starts_with("nvptx") => match toolchain::detect_gpu_arch() {
                Some(a) => (a, "the GPU"),
                None => (cli::DEFAULT_NVPTX_ARCH.to_string(), "default"),
            },
            None => {
                return Err(CliError::Usage(format!("--arch is required for {} (e.g. --arch gfx90a)", dev.target)))
            }
        },
    };
    let known = toolchain::known_archs(&tc.llvm.llc, &dev.target);
    if !known.is_empty() && !known.contains(&arch) {
        return Err(CliError::UnknownArch { arch, target: dev.target.clone(), known });
    }
    if from != "--arch" {
        status::status("Device", format!("{} {arch} ({from})", dev.target));
    }
    Ok(arch)
}

fn pipeline(dev: &DeviceOpts, cargo: &CargoOpts, action: host::Action) -> Result<i32> {
    status::set_quiet(dev.quiet);
    if !(dev.target.starts_with("nvptx64-nvidia-cuda") || dev.target.starts_with("amdgcn-amd-amdhsa")) {
        return Err(CliError::UnknownTarget(dev.target.clone()));
    }
    let (me, linker) = own_executables()?;
    let ws = workspace(cargo)?;
    let tc = toolchain::find()?;
    let arch = resolve_arch(dev, &tc)?;
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
    let tests = matches!(action, host::Action::Test { .. });
    let mode_tag = if dev.fast_math {
        format!("{arch}-fast-math")
    } else if dev.fmad {
        format!("{arch}-fmad")
    } else {
        arch.clone()
    };
    let device_dir = device::device_target_dir(&ws.target_dir, &dev.target, &mode_tag);
    let target_arg = if dev.target.starts_with("amdgcn") {
        device::amdgpu_target_spec(&tc, &ws.target_dir.join("offload"))?.display().to_string()
    } else {
        dev.target.clone()
    };
    let pass = device::DevicePass {
        tc: &tc,
        triple: &dev.target,
        target_arg,
        arch: &arch,
        cargo,
        tests,
        target_dir: device_dir,
        wrapper: me.clone(),
        linker,
        verbose: dev.verbose,
        quiet: dev.quiet,
        fast_math: dev.fast_math,
        fmad: dev.fmad,
    };
    let images_dir = ws.target_dir.join("offload").join("images");
    let profile_tag = format!("{}-{}", cargo.profile.clone().unwrap_or_else(|| if cargo.release { "release".into() } else { "dev".into() }), mode_tag);
    let map_path = embed::map_path(&images_dir, &profile_tag);
    let host =
        host::HostPass { cargo, action: &action, wrapper: &me, map: &map_path, verbose: dev.verbose, quiet: dev.quiet };

    if dev.dry_run {
        println!("# device pass ({} {arch})", dev.target);
        println!("{}", pass.render());
        println!("# embed: each final binary's {} image{} → {}/<crate>-<kind>-<hash>.o", if dev.target.starts_with("nvptx") { "PTX" } else { "code object" }, if tc.ptxas.is_some() && dev.target.starts_with("nvptx") { " + ptxas cubin" } else { "" }, images_dir.display());
        println!("# host pass");
        println!("{}", host.render());
        return Ok(exit::OK);
    }

    let artifacts = pass.run()?;
    let map = embed::embed(&artifacts, &dev.target, &arch, tc.ptxas.as_deref(), &images_dir, |v, m| {
        status::status(v, m)
    })?;
    if !map.is_empty() && map.iter().all(|e| e.kernels.is_empty()) {
        let names = artifacts.iter().map(|a| a.describe()).collect::<Vec<_>>().join(", ");
        return Err(CliError::NoKernels { binaries: names });
    }
    embed::write_map(&map_path, &map)?;
    host.run()
}
