//! The host pass: the user's own `cargo build|run|test`, with cargo-offload
//! as `RUSTC_WORKSPACE_WRAPPER` so that each final binary of the workspace
//! links its device image (see `phases/rustc_host.rs`). Dependencies outside the
//! workspace are compiled exactly as a plain `cargo build` compiles them and
//! share its target directory; with the crate cache on (`crate_cache.rs`),
//! cargo-offload is `RUSTC_WRAPPER` too and takes those it keeps from the
//! cache when another project compiled them the same way
//! (`phases/rustc_dep.rs`), unless the user has a `RUSTC_WRAPPER` of their
//! own (sccache, say), which keeps them instead.
//!
//! `check` is `cargo check` with the same wrapper (so that
//! `cfg(offload_device)` is a known cfg), its messages relayed by the cargo
//! phase (`output::relay_host`). `clippy` is `cargo clippy`, which sets
//! `RUSTC_WORKSPACE_WRAPPER` to clippy's driver itself: the cfg is declared
//! through clippy's arguments instead (clippy-driver hands them to rustc).

use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::cli::CargoOpts;
use crate::cmd::{CommandSpec, EnvChange};
use crate::errors::{CliError, Result};
use crate::handoff::{COLLECT_VAR, COMPILE_LOG_VAR, GENERIC_DIR_VAR, INNER_VAR, MAP_VAR, PHASE_VAR};
use crate::output::{relay_host, MessageFormat, Relayed};
use crate::status;

/// What the host cargo does.
#[derive(Debug, Clone)]
pub enum Action {
    Build,
    Run {
        args: Vec<String>,
    },
    Test {
        no_run: bool,
        filter: Option<String>,
        args: Vec<String>,
    },
    Bench {
        no_run: bool,
        filter: Option<String>,
        args: Vec<String>,
    },
    /// `cargo check`: no code generation, messages relayed.
    Check,
    /// `cargo clippy -- <args>`: no code generation, messages relayed.
    Clippy {
        args: Vec<String>,
    },
}

impl Action {
    /// `check` or `clippy`: both passes without code generation; the host
    /// pass runs first, its messages relayed (see `output`).
    pub fn checks(&self) -> bool {
        matches!(self, Action::Check | Action::Clippy { .. })
    }
}

pub struct HostPass<'a> {
    pub cargo: &'a CargoOpts,
    pub action: &'a Action,
    pub wrapper: &'a Path,
    pub map: &'a Path,
    pub verbose: u8,
    pub quiet: bool,
    /// Where the instantiations of generic kernels are listed.
    pub generic_dir: &'a Path,
    /// Build only (`cargo build`, `cargo test --no-run`, `cargo bench
    /// --no-run`), and log each generic kernel instantiation the binaries use
    /// that their images lack into this file instead of failing.
    pub collect: Option<&'a Path>,
    /// The host target directory.
    pub target_dir: &'a Path,
    /// offload's own packages used by path and the hash of their files
    /// (`crate_cache::own_sources`), for the crate cache.
    pub own_sources: &'a str,
    /// A device pass failed under `--keep-going` (for which device): final
    /// binaries without a device image are not linked
    /// (`handoff::DEVICE_FAILED_VAR`).
    pub device_failed: Option<String>,
}

/// The cargo that ran `cargo offload` (`$CARGO`), else `cargo`.
pub fn cargo_program() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
}

impl HostPass<'_> {
    pub fn args(&self) -> Vec<String> {
        let mut a = Vec::new();
        let build_only = self.collect.is_some();
        match self.action {
            Action::Build => a.push("build".into()),
            Action::Run { .. } if build_only => a.push("build".into()),
            Action::Run { .. } => a.push("run".into()),
            Action::Test { no_run, filter, .. } | Action::Bench { no_run, filter, .. } => {
                a.push(if matches!(self.action, Action::Bench { .. }) { "bench" } else { "test" }.into());
                if *no_run || build_only {
                    a.push("--no-run".into());
                }
                if let Some(f) = filter.as_ref().filter(|_| !build_only) {
                    a.push(f.clone());
                }
            }
            Action::Check => a.push("check".into()),
            Action::Clippy { .. } => a.push("clippy".into()),
        }
        a.extend(self.cargo.to_args(false));
        if self.action.checks() {
            let format = MessageFormat::from_values(&self.cargo.message_format);
            a.extend(["--message-format".into(), format.relayed(status::color())]);
        } else {
            a.extend(self.cargo.message_format.iter().flat_map(|f| ["--message-format".to_string(), f.clone()]));
        }
        if self.verbose >= 1 {
            a.push("-v".into());
        }
        if self.quiet {
            a.push("--quiet".into());
        }
        let trailing = match self.action {
            _ if build_only => &[],
            Action::Run { args } | Action::Test { args, .. } | Action::Bench { args, .. } => args.as_slice(),
            Action::Build | Action::Check => &[],
            Action::Clippy { args } => {
                // Before the user's: `cfg(offload_device)` is known (see the module docs).
                a.extend(["--", "--check-cfg", "cfg(offload_device)"].map(String::from));
                return a.into_iter().chain(args.iter().cloned()).collect();
            }
        };
        if !trailing.is_empty() {
            a.push("--".into());
            a.extend(trailing.iter().cloned());
        }
        a
    }

    /// The environment of the host cargo, each change with its reason.
    pub fn env(&self) -> Vec<EnvChange> {
        if matches!(self.action, Action::Clippy { .. }) {
            // cargo clippy sets RUSTC_WORKSPACE_WRAPPER itself.
            return Vec::new();
        }
        let mut e = vec![
            EnvChange::set(
                "RUSTC_WORKSPACE_WRAPPER",
                self.wrapper.display().to_string(),
                "links each final binary's device image (workspace members only; dependencies stay shared with plain cargo)",
            ),
            EnvChange::set(PHASE_VAR, "host", "tells the wrapper which pass it serves"),
            EnvChange::set(MAP_VAR, self.map.display().to_string(), "which image object goes into which binary"),
            EnvChange::set(
                GENERIC_DIR_VAR,
                self.generic_dir.display().to_string(),
                "the instantiations of generic kernels that host code uses",
            ),
        ];
        if let Some(log) = self.collect {
            e.push(EnvChange::set(
                COLLECT_VAR,
                log.display().to_string(),
                "collect the generic kernel instantiations the binaries use",
            ));
        }
        if let Some(why) = &self.device_failed {
            e.push(EnvChange::set(
                crate::handoff::DEVICE_FAILED_VAR,
                why.clone(),
                "a device pass failed (--keep-going): binaries without a device image are not linked",
            ));
        }
        if let Some(w) = std::env::var_os("RUSTC_WORKSPACE_WRAPPER").filter(|w| !w.is_empty()) {
            e.push(EnvChange::set(INNER_VAR, w.to_string_lossy(), "your RUSTC_WORKSPACE_WRAPPER, chained"));
        }
        e.extend(self.crate_cache_env());
        e
    }

    /// `<cache>/crates`, if this pass takes its dependencies from the crate
    /// cache: the cache is on, the pass generates code or checks (not
    /// clippy), and the user has no `RUSTC_WRAPPER` of their own.
    pub fn crate_cache_dir(&self) -> Option<PathBuf> {
        let own_wrapper = std::env::var_os("RUSTC_WRAPPER").is_some_and(|w| !w.is_empty());
        if own_wrapper || matches!(self.action, Action::Clippy { .. }) {
            return None;
        }
        crate::crate_cache::dir()
    }

    /// `<target>/offload/host-<what>-<pid>`: this build's files for the
    /// wrapper's host-dependency phase.
    fn scratch(&self, what: &str) -> PathBuf {
        self.target_dir.join("offload").join(format!("host-{what}-{}", std::process::id()))
    }

    /// What the wrapper needs to take dependencies from the crate cache.
    fn crate_cache_env(&self) -> Vec<EnvChange> {
        use crate::crate_cache::{DIR_VAR, HOST_VAR, OWN_VAR, TARGET_DIR_VAR};
        let Some(dir) = self.crate_cache_dir() else { return Vec::new() };
        let path = |p: &Path| p.display().to_string();
        let mut e = vec![
            EnvChange::set(
                "RUSTC_WRAPPER",
                path(self.wrapper),
                "dependencies outside the workspace come from the crate cache if another project compiled them the \
                 same way (else compiled unchanged)",
            ),
            EnvChange::set(DIR_VAR, path(&dir), "registry crates and offload's own are compiled once for all projects"),
            EnvChange::set(TARGET_DIR_VAR, path(self.target_dir), "the crate cache's entries hold no project's paths"),
            EnvChange::set(HOST_VAR, path(&self.scratch("rustc")), "the host rustc's identity, asked once per build"),
            EnvChange::set(
                COMPILE_LOG_VAR,
                path(&self.scratch("compiles")),
                "the wrapper records each dependency here",
            ),
        ];
        if !self.own_sources.is_empty() {
            let why = "offload's own packages by path, and the hash of their files";
            e.push(EnvChange::set(OWN_VAR, self.own_sources, why));
        }
        e
    }

    /// The `Host` status line after the pass, if it took crates from the
    /// crate cache (with `-v`, which); removes this build's scratch files.
    fn report_cached(&self) {
        let (log, memo) = (self.scratch("compiles"), self.scratch("rustc"));
        let lines = std::fs::read_to_string(&log).unwrap_or_default();
        let _ = std::fs::remove_file(&log);
        let _ = std::fs::remove_dir_all(&memo);
        let cached: Vec<&str> = lines.lines().filter_map(|l| l.strip_suffix("\tcached")).collect();
        if cached.is_empty() {
            return;
        }
        let n = cached.len();
        let what = format!("took {n} crate{} from the crate cache", if n == 1 { "" } else { "s" });
        match self.crate_cache_dir() {
            Some(dir) if self.verbose >= 1 => {
                status::status("Host", format!("{what} ({}): {}", dir.display(), cached.join(", ")))
            }
            _ => status::status("Host", what),
        }
    }

    /// The host cargo: program, arguments and environment.
    pub fn spec(&self) -> CommandSpec {
        CommandSpec { program: cargo_program().into(), args: self.args(), env: self.env() }
    }

    /// The command and its environment the way `--dry-run` and `-v` show it.
    pub fn render(&self) -> String {
        self.spec().render()
    }

    /// Before the host cargo runs: with `-v`, its command line; the
    /// directory of the wrapper's compile log (the device passes make it,
    /// but run after the host pass in `check`).
    fn start(&self) {
        if self.verbose >= 1 {
            status::status("Running", format!("host pass:\n{}", self.render()));
        }
        if self.crate_cache_dir().is_some() {
            let _ = std::fs::create_dir_all(self.target_dir.join("offload"));
        }
    }

    /// Runs the host cargo with inherited stdio; returns its exit code.
    pub fn run(&self) -> Result<i32> {
        self.start();
        let status = crate::child::status(&mut self.spec().command())?;
        self.report_cached();
        let by_signal = crate::interrupt::interrupting_status(&status);
        // A build (or the build of a collect round) was interrupted; a
        // program or test run that was reports itself.
        if (by_signal || crate::interrupt::interrupted())
            && (matches!(self.action, Action::Build) || self.collect.is_some())
        {
            return Err(CliError::Interrupted);
        }
        Ok(status.code().unwrap_or(if by_signal { crate::errors::exit::INTERRUPTED } else { 101 }))
    }

    /// Runs the host cargo of `check` or `clippy` with its messages relayed
    /// (`output::relay_host`); returns its exit code and what it showed.
    pub fn run_relayed(&self) -> Result<(i32, Relayed)> {
        self.start();
        let format = MessageFormat::from_values(&self.cargo.message_format);
        let mut running = crate::child::spawn(self.spec().command().stdout(Stdio::piped()))?;
        let relayed = relay_host(running.child.stdout.take().expect("piped"), &format);
        let status = running.wait()?;
        self.report_cached();
        if crate::interrupt::interrupting_status(&status) || crate::interrupt::interrupted() {
            return Err(CliError::Interrupted);
        }
        Ok((status.code().unwrap_or(101), relayed))
    }
}
