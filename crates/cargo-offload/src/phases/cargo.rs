//! The cargo phase: `cargo offload build|run|test|bench|check|clippy|doc|clean|doctor`,
//! as the user runs it.
//!
//! command line (`cli`) → workspace (`cargo metadata`) → device toolchain
//! (`toolchain`) → device selection (`select`) → build plan (`plan`) → then,
//! unless `--dry-run` prints the plan:
//!
//! 1. with instantiation lists of generic kernels from an earlier build, a
//!    collect round first (a host build that logs the instantiations the
//!    binaries use), so a list never names a type the code no longer has;
//! 2. the device passes (one per image), then the embed phase;
//! 3. on a first build whose device pass created lists, a collect round and
//!    the device passes again;
//! 4. the host pass (`cargo build|run|test|bench` with the wrapper).
//!
//! `check` and `clippy` generate no code: the host pass first (`cargo check`
//! or `cargo clippy`), then the device passes (`cargo check` for the GPU),
//! the messages of both relayed in the user's `--message-format` (`output`).
//! `doc` is `cargo doc`: the documentation of the host pass.
//!
//! After every build the shared cache is pruned to its size limit
//! (`cache_gc`), sparing what the build used.

use std::ffi::OsString;

use crate::cli::{self, CargoOpts, Command, DeviceOpts, DocArgs};
use crate::cmd::{CommandSpec, EnvChange};
use crate::errors::{exit, finish, CliError, Result};
use crate::handoff::{write_map, ImageMapEntry};
use crate::host::Action;
use crate::messages::DeviceArtifact;
use crate::output::MessageFormat;
use crate::phases::embed;
use crate::plan::{Executables, Plan};
use crate::{doctor, generic, interrupt, select, status, toolchain, workspace};

/// A relative `OFFLOAD_CACHE_DIR` names a directory below the one the
/// command runs in; cargo runs rustc (and so the wrapper, which reads it
/// too) in each package's directory. Made absolute here, before any thread
/// or child starts, so that every process means the same directory.
fn absolute_cache_dir() {
    let var = offload_image::probe::CACHE_VAR;
    let Some(dir) = std::env::var_os(var).filter(|d| !d.is_empty()).map(std::path::PathBuf::from) else { return };
    if dir.is_relative() {
        if let Ok(cwd) = std::env::current_dir() {
            std::env::set_var(var, cwd.join(dir));
        }
    }
}

/// The phase's `main`: parses the command line, runs it, reports an error
/// once; returns the exit code.
pub fn main(argv: Vec<OsString>) -> i32 {
    if argv.len() == 3 && argv[1] == "offload" && (argv[2] == "--version" || argv[2] == "-V") {
        println!("cargo-offload {}", env!("CARGO_PKG_VERSION"));
        return exit::OK;
    }
    absolute_cache_dir();
    let cli = match cli::parse(&argv) {
        Ok(c) => c,
        Err(e) => {
            // clap prints its own message (and `--help`, with code 0).
            let code = if e.use_stderr() { exit::USAGE } else { exit::OK };
            let _ = e.print();
            return code;
        }
    };
    interrupt::install();
    finish(run(cli.command))
}

fn run(command: Command) -> Result<i32> {
    match command {
        Command::Build(a) => build(&a.device, &a.cargo, Action::Build),
        Command::Run(a) => build(&a.device, &a.cargo, Action::Run { args: a.args }),
        Command::Test(a) => {
            build(&a.device, &a.cargo, Action::Test { no_run: a.no_run, filter: a.filter, args: a.args })
        }
        Command::Bench(a) => {
            build(&a.device, &a.cargo, Action::Bench { no_run: a.no_run, filter: a.filter, args: a.args })
        }
        Command::Check(a) => build(&a.device, &a.cargo, Action::Check),
        Command::Clippy(a) => build(&a.device, &a.cargo, Action::Clippy { args: a.args }),
        Command::Doc(a) => doc(&a),
        Command::Clean(a) => crate::clean::run(&a),
        Command::Doctor => doctor::run(),
    }
}

/// Plans the build and runs it (or prints it, with `--dry-run`). With JSON
/// messages, a build that fails after its plan ends with cargo's
/// `build-finished` record (`output`).
fn build(dev: &DeviceOpts, cargo: &CargoOpts, action: Action) -> Result<i32> {
    status::set_quiet(dev.quiet);
    status::set_color(cargo.color.as_deref());
    // A bad `OFFLOAD_CACHE_SIZE` or cache directory is refused before anything runs.
    let (started, _, _) = (std::time::SystemTime::now(), crate::cache_gc::limit()?, crate::cache_gc::root()?);
    select::check_target(dev)?;
    let exes = Executables::find()?;
    let ws = workspace::workspace(cargo)?;
    let tc = toolchain::find()?;
    let sels = select::resolve_devices(dev, &ws.config, &tc)?;
    if dev.verbose >= 1 {
        status::status("Toolchain", tc.summary());
    }
    let plan = Plan::new(dev, cargo, &action, &ws, &tc, &sels, &exes)?;
    if dev.dry_run {
        print!("{}", plan.dry_run());
        return Ok(exit::OK);
    }
    let format = MessageFormat::from_values(&cargo.message_format);
    let result = if action.checks() { check(&plan, &format) } else { passes(&plan) };
    if !action.checks() && matches!(&result, Err(e) if !matches!(e, CliError::Interrupted)) {
        format.finished(false);
    }
    // An interrupted build ends at once: no pruning (which may take a
    // while, and would print after the "interrupted" the user expects last).
    if !matches!(&result, Err(CliError::Interrupted)) && !interrupt::interrupted() {
        crate::cache_gc::after_build(started);
    }
    result
}

/// The passes of a build (see the module docs).
fn passes(plan: &Plan) -> Result<i32> {
    // Generic kernels: see the module docs and generic.rs.
    let collected_first = generic::any_generic(&plan.generic_dir);
    if collected_first {
        if let Some(code) = collect_round(plan)? {
            return Ok(code);
        }
    }
    let mut built = device_round(plan)?;
    if let Some((error, device)) = built.failed {
        return keep_going(plan, error, device, &built.binaries, built.map.is_empty());
    }
    if !collected_first && generic::any_generic(&plan.generic_dir) {
        if let Some(code) = collect_round(plan)? {
            return Ok(code);
        }
        built = device_round(plan)?;
    }
    if !built.map.is_empty() && built.map.iter().all(|e| e.kernels.is_empty()) {
        return Err(CliError::NoKernels { binaries: built.binaries });
    }
    if interrupt::interrupted() {
        return Err(CliError::Interrupted);
    }
    plan.host(None).run()
}

/// After a device pass failed under `--keep-going` (`error`, for `device`):
/// the host pass for the binaries whose device images were built
/// (`binaries`; the others are not linked, see `rustc_host::unlinked`),
/// as plain cargo builds what does not depend on the failure; then the
/// device pass's error, whatever the host pass did.
fn keep_going(plan: &Plan, error: CliError, device: String, binaries: &str, none: bool) -> Result<i32> {
    if interrupt::interrupted() {
        return Err(CliError::Interrupted);
    }
    if none {
        return Err(error);
    }
    let mut host = plan.host(None);
    host.device_failed = Some(device);
    host.run()?;
    Err(match error {
        CliError::DeviceBuild { what, mut hints } => {
            hints.push(format!(
                "with `--keep-going`, the host pass built the binaries whose device images were built ({binaries}); \
                 the others were not linked"
            ));
            CliError::DeviceBuild { what, hints }
        }
        other => other,
    })
}

/// `check` and `clippy`: the host pass, its messages relayed; then, if it
/// succeeded or failed with compile errors (rather than, say, a manifest
/// error), the device passes, each message the host pass showed left out.
/// The exit code is the first failed device pass's (its errors are the
/// device code's), else the host pass's.
fn check(plan: &Plan, format: &MessageFormat) -> Result<i32> {
    let (code, host) = plan.host(None).run_relayed()?;
    let mut result = Ok(code);
    if code == exit::OK || host.errors > 0 {
        for pass in &plan.passes {
            if let Err(e) = pass.run(&host.keys) {
                result = Err(e);
                break;
            }
        }
    }
    if !matches!(result, Err(CliError::Interrupted)) {
        format.finished(matches!(result, Ok(exit::OK)));
    }
    result
}

/// `cargo offload doc`: `cargo doc`, which documents the crate as the host
/// pass compiles it.
fn doc(a: &DocArgs) -> Result<i32> {
    status::set_color(a.cargo.color.as_deref());
    let (args, env) = doc_check_cfg(a.to_args(), |k| std::env::var(k).ok());
    let spec = CommandSpec { program: crate::host::cargo_program().into(), args, env };
    if a.dry_run {
        println!("# host pass\n{}", spec.render());
        return Ok(exit::OK);
    }
    let status = crate::child::status(&mut spec.command())?;
    if crate::interrupt::interrupting_status(&status) || crate::interrupt::interrupted() {
        return Err(CliError::Interrupted);
    }
    Ok(status.code().unwrap_or(101))
}

/// `cargo doc`'s arguments and environment with `cfg(offload_device)`
/// declared to rustdoc (`--check-cfg`), as the wrapper declares it to
/// rustc in the other commands, so that rustdoc does not warn about the
/// user's `#[cfg(offload_device)]` (`unexpected_cfgs`). Added to the
/// user's rustdoc flags, never in their place: to `RUSTDOCFLAGS` or
/// `CARGO_ENCODED_RUSTDOCFLAGS` if set (either overrides the config's), else
/// as `--config build.rustdocflags=[…]`, which cargo joins to the
/// configuration files' lists (cargo book, "Configuration": arrays merge).
fn doc_check_cfg(mut args: Vec<String>, var: impl Fn(&str) -> Option<String>) -> (Vec<String>, Vec<EnvChange>) {
    const WHY: &str = "declares cfg(offload_device) to rustdoc";
    if let Some(f) = var("CARGO_ENCODED_RUSTDOCFLAGS") {
        let sep = if f.is_empty() { "" } else { "\x1f" };
        let flags = format!("{f}{sep}--check-cfg\x1fcfg(offload_device)");
        return (args, vec![EnvChange::set("CARGO_ENCODED_RUSTDOCFLAGS", flags, WHY)]);
    }
    if let Some(f) = var("RUSTDOCFLAGS") {
        return (args, vec![EnvChange::set("RUSTDOCFLAGS", format!("{f} --check-cfg cfg(offload_device)"), WHY)]);
    }
    args.extend(["--config".to_string(), "build.rustdocflags=[\"--check-cfg\",\"cfg(offload_device)\"]".into()]);
    (args, Vec::new())
}

/// What a device round built: the image map, and the final binaries' names.
struct Built {
    map: Vec<ImageMapEntry>,
    binaries: String,
    /// The first failed pass's error and device (`nvptx64-nvidia-cuda
    /// sm_90`), under `--keep-going` (without it, the round fails).
    failed: Option<(CliError, String)>,
}

/// The device passes, then the embed phase; writes the image map. Under
/// `--keep-going` every pass runs, and the map holds the binaries that
/// every pass built an image of.
fn device_round(plan: &Plan) -> Result<Built> {
    let mut artifacts = Vec::new();
    let mut failed = None;
    // Which passes built an image of each binary (`key`).
    let key = |a: &DeviceArtifact| (a.crate_name.clone(), a.src_path.clone(), a.test);
    let mut passes_of = std::collections::HashMap::<_, std::collections::HashSet<usize>>::new();
    for (i, (pass, sel)) in plan.passes.iter().zip(plan.sels).enumerate() {
        let (built, error) = pass.run_keeping(&Default::default())?;
        match error {
            Some(e) if pass.cargo.keep_going && matches!(e, CliError::DeviceBuild { .. }) => {
                failed = failed.or(Some((e, format!("{} {}", sel.triple, sel.arch))));
            }
            Some(e) => return Err(e),
            None => {}
        }
        for a in built {
            passes_of.entry(key(&a)).or_default().insert(i);
            artifacts.push(embed::Built { artifact: a, triple: sel.triple.clone(), arch: sel.arch.clone() });
        }
    }
    if interrupt::interrupted() {
        return Err(CliError::Interrupted);
    }
    if failed.is_some() {
        // A binary needs the image of every selected device.
        artifacts.retain(|b| passes_of[&key(&b.artifact)].len() == plan.passes.len());
    }
    let ptxas = plan.tc.ptxas.as_deref();
    let map = embed::embed(&artifacts, ptxas, &plan.images_dir, &plan.objects_dir, status::status)?;
    write_map(&plan.map.0, &map).map_err(CliError::io("could not write", &plan.map.0))?;
    let mut names: Vec<String> = artifacts.iter().map(|a| a.artifact.describe()).collect();
    names.dedup();
    Ok(Built { map, binaries: names.join(", "), failed })
}

/// A collect round: a host build that logs the generic kernel
/// instantiations the binaries use; the lists the device pass reads are
/// updated from it. `Some(code)` if the host build failed.
fn collect_round(plan: &Plan) -> Result<Option<i32>> {
    let log = plan.generic_dir.join(format!("collect-{}.log", std::process::id()));
    let _ = std::fs::remove_file(&log);
    let code = plan.host(Some(&log)).run()?;
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);
    if code != exit::OK {
        return Ok(Some(code));
    }
    let added =
        generic::merge(&plan.generic_dir, &text).map_err(CliError::io("could not update", &plan.generic_dir))?;
    report_instances(&added);
    Ok(None)
}

/// One status line per generic kernel with new instantiations.
fn report_instances(added: &[(String, String)]) {
    let mut by_kernel: std::collections::BTreeMap<&str, Vec<String>> = Default::default();
    for (args, loc) in added {
        // `(f32,)` → `<f32>`, `(f32, u64)` → `<f32, u64>`
        let inner = args.strip_prefix('(').and_then(|a| a.strip_suffix(')')).unwrap_or(args);
        by_kernel.entry(loc.as_str()).or_default().push(format!("<{}>", inner.strip_suffix(',').unwrap_or(inner)));
    }
    for (loc, list) in by_kernel {
        status::status("Generic", format!("kernel at {loc} instantiated for {}", list.join(", ")));
    }
}
