//! The device pass: the user's package built for the GPU target.
//!
//! A hermetic inner `cargo` (rust-gpu's `spirv-builder` is the model): the
//! device toolchain's cargo and rustc, our own target directory below the
//! host's, flags passed through `CARGO_ENCODED_RUSTFLAGS` (which overrides
//! every other source of rustflags), every inherited setting that would leak
//! host choices into the device build cleared with a one-line reason that
//! `-v` prints. Artifacts are taken from cargo's JSON messages.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::child;
use crate::cli::CargoOpts;
use crate::cmd::{CommandSpec, EnvChange};
use crate::errors::{CliError, Result};
use crate::handoff::{COMPILE_LOG_VAR, GENERIC_DIR_VAR};
use crate::host_only::HOST_ONLY_DIR_VAR;
pub use crate::messages::DeviceArtifact;
use crate::messages::{hints_for, relay_stderr, Reader, Seen};
use crate::output::MessageFormat;
use crate::status;
use crate::toolchain::DeviceToolchain;

/// Everything the device pass needs to know.
pub struct DevicePass<'a> {
    pub tc: &'a DeviceToolchain,
    pub triple: &'a str,
    /// What cargo gets as `--target`: the triple, or for AMD GPUs the path of
    /// the target specification written by [`amdgpu_target_spec`].
    pub target_arg: String,
    pub arch: &'a str,
    /// `+ptx78` and the like: the PTX ISA version the architecture needs,
    /// so that `cfg!(target_feature = "ptxNN")` holds (see `ptx`).
    pub ptx_feature: Option<String>,
    pub cargo: &'a CargoOpts,
    /// `cargo test --no-run` (or `bench --no-run`) instead of `cargo build`.
    pub tests: bool,
    pub benches: bool,
    /// `cargo check`: no code generation (`cargo offload check` and `clippy`).
    pub check: bool,
    /// Lint levels for the pass's rustc (`-D warnings`, …): those of
    /// `RUSTFLAGS` and of `cargo offload clippy -- ARGS`
    /// ([`crate::devflags::device_lint_levels`]), so that `-D warnings` also
    /// fails on warnings of device code.
    pub lint_levels: Vec<String>,
    /// How the pass's diagnostics are shown (the user's `--message-format`).
    pub format: MessageFormat,
    pub target_dir: PathBuf,
    /// This executable (the rustc wrapper).
    pub wrapper: PathBuf,
    /// The `offload-linker` executable.
    pub linker: PathBuf,
    pub verbose: u8,
    pub quiet: bool,
    /// `--fast-math`: `--cfg offload_fast_math` for the crates and
    /// `--fast-math` for the device linker.
    pub fast_math: bool,
    /// `--fmad`: `--fmad` for the device linker.
    pub fmad: bool,
    /// Where the instantiations of generic kernels are listed (see
    /// `generic.rs`).
    pub generic_dir: PathBuf,
    /// offload's own packages used by path and the hash of their files
    /// (`crate_cache::own_sources`), for the crate cache.
    pub own_sources: String,
    /// The graph's library dependencies (`host_only::lib_deps`).
    pub lib_deps: crate::host_only::LibDeps,
}

impl DevicePass<'_> {
    /// A hash of the wrapper's and the linker's identities (path, size,
    /// modification time): part of the device rustflags, so that cargo
    /// rebuilds the device pass when `cargo offload` is installed again
    /// (cargo fingerprints the flags, not the tools). Hashing the bytes
    /// read tens of MiB on every command (debug builds), most of a dry
    /// run's system time.
    fn tool_hash(&self) -> String {
        let ids: String = [&self.wrapper, &self.linker].map(|exe| crate::sysroot::file_identity(exe)).join("\n");
        format!("{:016x}", offload_image::hash::fnv64(ids.as_bytes()))
    }

    fn rustflags(&self) -> Vec<String> {
        let mut f = vec![
            "--cfg".to_string(),
            "offload_device".into(),
            "--check-cfg".into(),
            "cfg(offload_device)".into(),
            "--cfg".into(),
            format!("offload_tools=\"{}\"", self.tool_hash()),
            "--check-cfg".into(),
            "cfg(offload_tools, values(any()))".into(),
            format!("-Ctarget-cpu={}", self.arch),
            format!("-Clinker={}", self.linker.display()),
            "--check-cfg".into(),
            "cfg(offload_fast_math)".into(),
        ];
        if self.triple.starts_with("nvptx") {
            // The device link strips NVPTX debug info anyway (ptxas does not
            // take LLVM's reliably); without it, an edit to host code leaves
            // the device bitcode identical and the link cache hits.
            f.push("-Cdebuginfo=0".into());
        }
        if let Some(feature) = &self.ptx_feature {
            f.push(format!("-Ctarget-feature={feature}"));
        }
        if self.fast_math {
            f.extend(["--cfg".into(), "offload_fast_math".into(), "-Clink-arg=--fast-math".into()]);
        } else if self.fmad {
            f.push("-Clink-arg=--fmad".into());
        }
        f.extend(self.lint_levels.iter().cloned());
        let extra = crate::devflags::from_env();
        if let Some(sysroot) = self.sysroot().filter(|_| !extra.iter().any(|x| x.starts_with("--sysroot"))) {
            f.push("--sysroot".into());
            f.push(sysroot.dir.display().to_string());
        }
        f.extend(extra);
        f
    }

    /// The prebuilt `core` this pass links (see `sysroot.rs`), unless
    /// `OFFLOAD_BUILD_STD=1` has the pass compile it (`-Zbuild-std=core`):
    /// for this pass's target CPU and target features, the device
    /// rustflags' included. Without a cache directory (no `HOME`), it is
    /// kept in the target directory.
    pub fn sysroot(&self) -> Option<crate::sysroot::Sysroot> {
        if crate::sysroot::build_std() {
            return None;
        }
        let (cpu, user_features) = crate::sysroot::codegen_target(&crate::devflags::from_env());
        let features: Vec<String> = self.ptx_feature.iter().cloned().chain(user_features).collect();
        let cache = crate::sysroot::cache_root()
            .unwrap_or_else(|| self.target_dir.parent().unwrap_or(&self.target_dir).to_path_buf());
        let cpu = cpu.as_deref().unwrap_or(self.arch);
        Some(crate::sysroot::Sysroot::new(self.tc, &self.target_arg, cpu, &features, &cache))
    }

    /// The environment of the inner cargo, each change with its reason:
    /// the compiler and its flags ([`DevicePass::compiler_env`]), what
    /// offload-linker and the wrapper phase need ([`DevicePass::link_env`]),
    /// and what depends on the user's environment.
    pub fn env(&self) -> Vec<EnvChange> {
        let set = |key: &str, value: String, why: &'static str| EnvChange { key: key.into(), value: Some(value), why };
        let mut e = self.compiler_env();
        e.extend(self.link_env());
        e.extend(self.crate_cache_env());
        if std::env::var_os("CARGO_NET_GIT_FETCH_WITH_CLI").is_none() {
            // Debian's cargo-web links a system libgit2 that fails to fetch
            // ("invalid version 0 on git_proxy_options"); the git command
            // line works with every cargo.
            let why = "git dependencies are fetched with the git command line";
            e.push(set("CARGO_NET_GIT_FETCH_WITH_CLI", "true".into(), why));
        }
        if let Some(w) = std::env::var_os("RUSTC_WRAPPER").filter(|w| !w.is_empty()) {
            let why = "your RUSTC_WRAPPER, chained after cargo-offload's";
            e.push(set("__OFFLOAD_INNER_WRAPPER", w.to_string_lossy().into_owned(), why));
        }
        if status::color() {
            let why = "cargo's output is relayed through a pipe, in color as on your terminal";
            e.push(set("CARGO_TERM_COLOR", "always".into(), why));
        }
        e
    }

    /// The device compiler, the wrapper and the flags; every host setting
    /// that would reach the device pass cleared.
    fn compiler_env(&self) -> Vec<EnvChange> {
        let set = |key: &str, value: String, why: &'static str| EnvChange { key: key.into(), value: Some(value), why };
        let unset = |key: &str, why: &'static str| EnvChange { key: key.into(), value: None, why };
        let flags_why = "device flags; overrides RUSTFLAGS and [build] rustflags, which are for the host";
        vec![
            set("RUSTC", self.tc.rustc.display().to_string(), "the device compiler (it has rust-src for -Zbuild-std)"),
            set(
                "RUSTC_WRAPPER",
                self.wrapper.display().to_string(),
                "cargo-offload rewrites crate types and adds #![no_std] for the device",
            ),
            unset("RUSTC_WORKSPACE_WRAPPER", "a host-side tool; the device pass goes through RUSTC_WRAPPER only"),
            set("CARGO_ENCODED_RUSTFLAGS", self.rustflags().join("\x1f"), flags_why),
            unset("RUSTFLAGS", "host flags do not apply to the device pass"),
            unset("CARGO_BUILD_TARGET", "the device target is given with --target"),
            unset("CARGO_TARGET_DIR", "the device pass has its own target directory"),
            set(
                "RUSTC_BOOTSTRAP",
                "1".into(),
                "-Zbuild-std and the GPU kernel ABI are unstable; enabled for the device pass only",
            ),
            set("__OFFLOAD_PHASE", "device".into(), "tells the wrapper which pass it serves"),
            set(
                "OFFLOAD_SYSROOT",
                self.tc.sysroot.display().to_string(),
                "the device rustc's sysroot (rust-src, rustup's llvm-tools)",
            ),
        ]
    }

    /// What offload-linker and the wrapper's device phase read.
    fn link_env(&self) -> Vec<EnvChange> {
        let set = |key: &str, value: String, why: &'static str| EnvChange { key: key.into(), value: Some(value), why };
        let path = |p: &Path| p.display().to_string();
        let tools = &self.tc.llvm;
        let mut e = vec![
            set("OFFLOAD_LLVM_MAJOR", self.tc.llvm_major.to_string(), "LLVM major version of the device rustc"),
            set("OFFLOAD_LLVM_LINK", path(&tools.llvm_link), "for offload-linker"),
            set("OFFLOAD_OPT", path(&tools.opt), "for offload-linker"),
            set("OFFLOAD_LLC", path(&tools.llc), "for offload-linker"),
        ];
        if let Some(lld) = &tools.lld {
            e.push(set("OFFLOAD_LLD", path(lld), "for offload-linker (AMD GPU code objects)"));
        }
        if self.verbose >= 2 {
            e.push(set("OFFLOAD_LINK_LOG", path(&self.link_log()), "offload-linker appends its commands here (-vv)"));
        }
        let generic_why = "the instantiations of generic kernels that host code uses";
        e.extend([
            set(GENERIC_DIR_VAR, path(&self.generic_dir), generic_why),
            set(
                "OFFLOAD_LINK_CACHE",
                path(&self.target_dir.join("link-cache")),
                "device links with identical inputs are reused",
            ),
            set("OFFLOAD_LINK_RECORD", path(&self.record_path("links")), "offload-linker records each link here"),
            set(
                COMPILE_LOG_VAR,
                path(&self.record_path("compiles")),
                "the wrapper records each device compilation here",
            ),
            set(
                HOST_ONLY_DIR_VAR,
                path(&self.host_only_dir()),
                "the wrapper marks here the dependencies it replaced by empty crates (host_only.rs)",
            ),
        ]);
        e
    }

    /// `<cache>/crates`, where the device phase keeps the crates that do not
    /// depend on the project (`crate_cache.rs`); `None` when it is off.
    pub fn crate_cache_dir(&self) -> Option<PathBuf> {
        self.sysroot().filter(|_| crate::crate_cache::enabled())?.dir.parent()?.parent().map(|c| c.join("crates"))
    }

    /// What the device phase needs for the crate cache.
    fn crate_cache_env(&self) -> Vec<EnvChange> {
        use crate::crate_cache::{toolchain_identity, DIR_VAR, OWN_VAR, RUSTC_VAR, TARGET_DIR_VAR};
        let set = |key: &str, value: String, why: &'static str| EnvChange { key: key.into(), value: Some(value), why };
        let Some(dir) = self.crate_cache_dir() else { return Vec::new() };
        let mut e = vec![
            set(
                DIR_VAR,
                dir.display().to_string(),
                "registry crates and offload's own are compiled once for all projects",
            ),
            set(RUSTC_VAR, toolchain_identity(&self.tc.rustc, &self.tc.version), "part of the crate cache's keys"),
            set(
                TARGET_DIR_VAR,
                self.target_dir.display().to_string(),
                "the crate cache's entries hold no project's paths",
            ),
        ];
        if !self.own_sources.is_empty() {
            e.push(set(
                OWN_VAR,
                self.own_sources.clone(),
                "offload's own packages by path, and the hash of their files",
            ));
        }
        e
    }

    /// Where the wrapper marks the crates it replaced (`host_only`).
    pub fn host_only_dir(&self) -> PathBuf {
        self.target_dir.join("host-only")
    }

    fn record_path(&self, what: &str) -> PathBuf {
        self.target_dir.join(format!("{what}-{}.log", std::process::id()))
    }

    pub fn link_log(&self) -> PathBuf {
        self.target_dir.join("link-commands.log")
    }

    /// The inner cargo's arguments.
    pub fn args(&self) -> Vec<String> {
        let mut a: Vec<String> = if self.check {
            vec!["check".into()]
        } else if self.benches {
            vec!["bench".into(), "--no-run".into()]
        } else if self.tests {
            vec!["test".into(), "--no-run".into()]
        } else {
            vec!["build".into()]
        };
        a.push("--target".into());
        a.push(self.target_arg.clone());
        if self.target_arg.ends_with(".json") {
            a.push("-Zjson-target-spec".into());
        }
        if crate::sysroot::build_std() {
            a.push("-Zbuild-std=core".into());
        }
        a.push("--target-dir".into());
        a.push(self.target_dir.display().to_string());
        a.push("--message-format".into());
        a.push(self.format.relayed(status::color()));
        a.extend(self.cargo.to_args(true));
        if self.quiet {
            a.push("--quiet".into());
        }
        a
    }

    /// The inner cargo: program, arguments and environment.
    pub fn spec(&self) -> CommandSpec {
        CommandSpec { program: self.tc.cargo.clone(), args: self.args(), env: self.env() }
    }

    /// The command and its environment the way `--dry-run` and `-v` show it.
    pub fn render(&self) -> String {
        self.spec().render()
    }

    /// Runs the pass and returns the device images of the final binaries.
    /// `known`: the diagnostics the host pass showed (`check`), not shown
    /// again; a pass whose errors were all among them fails quietly (the
    /// host pass has failed).
    pub fn run(&self, known: &HashSet<String>) -> Result<Vec<DeviceArtifact>> {
        match self.run_keeping(known)? {
            (_, Some(failed)) => Err(failed),
            (built, None) => Ok(built),
        }
    }

    /// [`run`](Self::run), with the device images cargo built before a
    /// failure (`--keep-going`): the images, and the pass's error if it failed.
    pub fn run_keeping(&self, known: &HashSet<String>) -> Result<(Vec<DeviceArtifact>, Option<CliError>)> {
        if self.verbose >= 1 {
            status::status("Running", format!("device pass:\n{}", self.render()));
        }
        let _ = std::fs::create_dir_all(&self.target_dir);
        // Held until the pass ends: rustc reads the sysroot throughout.
        let _in_use = self.sysroot().map(|s| s.ensure()).transpose()?;
        if self.verbose >= 2 {
            let _ = std::fs::remove_file(self.link_log());
        }
        let mut cmd = self.spec().command();
        let mut running = child::spawn(cmd.stdout(Stdio::piped()).stderr(Stdio::piped()))?;
        let relay = relay_stderr(running.child.stderr.take().expect("piped"), format!("(device {})", self.arch));
        let host_only_dir = self.host_only_dir();
        let mut reader = Reader {
            format: self.format,
            triple: self.triple,
            arch: self.arch,
            ptx_feature: self.ptx_feature.as_deref(),
            known,
            host_only_dir: &host_only_dir,
            lib_deps: &self.lib_deps,
            seen: Seen::default(),
        };
        reader.read(running.child.stdout.take().expect("piped"));
        let seen = reader.seen;
        let status = running.wait()?;
        let held = relay.join().unwrap_or_default();
        if crate::interrupt::interrupted() {
            let _ = std::fs::remove_file(self.record_path("compiles"));
            let _ = std::fs::remove_file(self.record_path("links"));
            return Err(CliError::Interrupted);
        }
        for line in held.iter().filter_map(|l| crate::messages::recount(l, &seen.left_out)) {
            eprintln!("{line}");
        }
        self.report_done();
        if !status.success() && (seen.errors > 0 || seen.duplicates == 0) {
            let failed = self.failure(&seen);
            return Ok((seen.artifacts, Some(failed)));
        }
        Ok((seen.artifacts, None))
    }

    /// The `Device` status line (and with `-vv` the device link commands):
    /// what the pass compiled, linked and reused.
    fn report_done(&self) {
        if self.verbose >= 2 {
            if let Ok(log) = std::fs::read_to_string(self.link_log()) {
                for l in log.lines() {
                    status::status("Running", format!("device link: {l}"));
                }
            }
        }
        let read_lines = |what: &str| -> Vec<String> {
            let p = self.record_path(what);
            let lines = std::fs::read_to_string(&p).unwrap_or_default().lines().map(String::from).collect();
            let _ = std::fs::remove_file(p);
            lines
        };
        let (replaced, compiled): (Vec<String>, Vec<String>) =
            read_lines("compiles").into_iter().partition(|l| l.ends_with("\thost-only"));
        let (cached, compiled): (Vec<String>, Vec<String>) =
            compiled.into_iter().partition(|l| l.ends_with("\tcached"));
        let links = read_lines("links");
        let what = summary(compiled.len(), cached.len(), &links, self.check);
        if self.verbose >= 1 && !cached.is_empty() {
            let names: Vec<&str> = cached.iter().filter_map(|l| l.split('\t').next()).collect();
            let dir = self.crate_cache_dir().map(|d| d.display().to_string()).unwrap_or_default();
            status::status("Cached", format!("from the crate cache ({dir}): {}", names.join(", ")));
        }
        status::status("Device", format!("{what} ({} {}; {})", self.triple, self.arch, self.tc.describe()));
        if !replaced.is_empty() {
            let names: Vec<&str> = replaced.iter().filter_map(|l| l.split('\t').next()).collect();
            status::note(format!(
                "{} not build for {} {}: the device pass compiled an empty crate in place of each (host code uses \
                 the real one; device code cannot use it)",
                plural_list(&names, "does", "do"),
                self.triple,
                self.arch
            ));
        }
    }

    /// The error of a failed pass, with hints from what it printed.
    fn failure(&self, seen: &Seen) -> CliError {
        let mut hints = hints_for(&seen.std_missing);
        if seen.duplicate_symbol {
            hints.push(
                "two kernels got the same symbol: kernels generated by one macro at one place with the same name; \
                 give each expansion a different function name (pass the name to the macro)"
                    .into(),
            );
        }
        let what = match seen.errors {
            0 => format!("cargo failed for {} {}; its error is above", self.triple, self.arch),
            n => format!("{n} compile error(s) for {} {}", self.triple, self.arch),
        };
        CliError::DeviceBuild { what, hints }
    }
}

/// Writes the target specification the device pass uses for
/// `amdgcn-amd-amdhsa`: rustc's own, printed by the device rustc, with five
/// changes. `executables: true`, because cargo refuses a `bin` target for a
/// target without executables before rustc ever runs (the wrapper turns the
/// bin into a `cdylib` anyway), with `exe-suffix: .elf` so that the file cargo
/// expects is the one rustc writes; `linker-flavor: llbc` and `obj-is-bitcode:
/// true`, so that rustc hands bitcode to offload-linker as it does for
/// NVPTX, and the link keeps every kernel of the crate graph; no
/// `requires-lto`, which the bitcode link replaces. The file is named
/// `amdgcn-amd-amdhsa.json`, so cargo's output directory keeps the triple's name.
pub fn amdgpu_target_spec(tc: &DeviceToolchain, dir: &Path) -> Result<PathBuf> {
    let print = CommandSpec {
        program: tc.rustc.clone(),
        args: ["-Zunstable-options", "--print", "target-spec-json", "--target", "amdgcn-amd-amdhsa"]
            .map(String::from)
            .to_vec(),
        env: vec![EnvChange::set("RUSTC_BOOTSTRAP", "1", "`--print target-spec-json` is unstable")],
    };
    let Some(out) = child::probe(&mut print.command())? else {
        return Err(CliError::spawn(&tc.rustc)(std::io::ErrorKind::NotFound.into()));
    };
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
        return Err(CliError::TargetSpec { rustc: tc.rustc.clone(), stderr });
    }
    let unreadable = |source| CliError::TargetSpecJson { rustc: tc.rustc.clone(), source };
    let mut spec: serde_json::Value = serde_json::from_slice(&out.stdout).map_err(unreadable)?;
    let obj = spec
        .as_object_mut()
        .ok_or_else(|| unreadable(serde::de::Error::custom("the target specification is not a JSON object")))?;
    obj.insert("executables".into(), true.into());
    // The bin's expected output name, so that it is the cdylib's (`.elf`).
    obj.insert("exe-suffix".into(), ".elf".into());
    obj.insert("linker-flavor".into(), "llbc".into());
    obj.insert("obj-is-bitcode".into(), true.into());
    obj.remove("linker");
    obj.remove("requires-lto");
    let path = dir.join("amdgcn-amd-amdhsa.json");
    let json = serde_json::to_string_pretty(&spec).expect("json");
    offload_image::file::write_if_changed(&path, json.as_bytes()).map_err(CliError::io("could not write", &path))?;
    Ok(path)
}

/// `<target-dir>/offload/<triple>-<arch>`: one device target directory per
/// architecture, so switching `--arch` does not rebuild everything.
/// The device pass's target directory: one per target, architecture and
/// floating-point mode (`tag` is the architecture, `-fast-math` appended for
/// `--fast-math`), so that switching does not rebuild the other's artifacts.
pub fn device_target_dir(host_target_dir: &Path, triple: &str, tag: &str) -> PathBuf {
    host_target_dir.join("offload").join(format!("{triple}-{tag}"))
}

/// `` `a` does ``, `` `a`, `b` do ``.
fn plural_list(names: &[&str], one: &str, many: &str) -> String {
    let list: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    format!("{} {}", list.join(", "), if names.len() == 1 { one } else { many })
}

/// What a device pass did, for its status line: `compiled` crates, `cached`
/// crates taken from the crate cache, the offload-linker `links` records
/// (`linked …`, else reused from the cache), in `check` (no code
/// generation) or a build.
pub fn summary(compiled: usize, cached: usize, links: &[String], check: bool) -> String {
    let linked = links.iter().filter(|l| l.starts_with("linked ")).count();
    let reused = links.len() - linked;
    if compiled == 0 && cached == 0 && links.is_empty() {
        return "up to date: nothing to compile".into();
    }
    let mut parts =
        vec![format!("{} {}", if check { "checked" } else { "compiled" }, status::count(compiled, "crate"))];
    if cached > 0 {
        parts.push(format!("took {} from the crate cache", status::count(cached, "crate")));
    }
    if check {
        return parts.join(", ");
    }
    if linked > 0 {
        parts.push(format!("linked {}", status::count(linked, "device image")));
    }
    if reused > 0 {
        parts.push(format!("reused {} from the link cache", status::count(reused, "device image")));
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The status line says what happened, never `0 crate(s) compiled`.
    #[test]
    fn status_line_says_what_happened() {
        let links = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let table: &[(usize, usize, Vec<String>, bool, &str)] = &[
            (0, 0, links(&[]), false, "up to date: nothing to compile"),
            (0, 0, links(&[]), true, "up to date: nothing to compile"),
            (1, 0, links(&["linked a"]), false, "compiled 1 crate, linked 1 device image"),
            (
                3,
                0,
                links(&["linked a", "reused b", "linked c"]),
                false,
                "compiled 3 crates, linked 2 device images, reused 1 device image from the link cache",
            ),
            (1, 0, links(&["reused a"]), false, "compiled 1 crate, reused 1 device image from the link cache"),
            (2, 0, links(&[]), false, "compiled 2 crates"),
            (4, 0, links(&[]), true, "checked 4 crates"),
            (
                1,
                9,
                links(&["linked a"]),
                false,
                "compiled 1 crate, took 9 crates from the crate cache, linked 1 device image",
            ),
            (0, 1, links(&[]), true, "checked 0 crates, took 1 crate from the crate cache"),
        ];
        for (compiled, cached, l, check, want) in table {
            assert_eq!(summary(*compiled, *cached, l, *check), *want);
        }
        assert_eq!(plural_list(&["a"], "does", "do"), "`a` does");
        assert_eq!(plural_list(&["a", "b"], "does", "do"), "`a`, `b` do");
    }
}
