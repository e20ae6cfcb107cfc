//! Running rustc from a wrapper phase: through the user's own rustc wrapper
//! when there is one (`RUSTC_WRAPPER`, e.g. sccache, handed over as
//! [`INNER_VAR`]), so that it is chained, never silently replaced; and the
//! compile log, in which the wrapper phases record what they compiled and
//! what they took from the crate cache, for the passes' status lines.

use std::process::Command;

use crate::arg::Args;
use crate::errors::Result;
use crate::handoff::{COMPILE_LOG_VAR, INNER_VAR};

/// `rustc args…`, or `<inner wrapper> rustc args…`.
pub fn command(rustc: &str, args: &[String]) -> Command {
    match std::env::var_os(INNER_VAR).filter(|w| !w.is_empty()) {
        Some(inner) => {
            let mut c = Command::new(inner);
            c.arg(rustc).args(args);
            c
        }
        None => {
            let mut c = Command::new(rustc);
            c.args(args);
            c
        }
    }
}

/// `rustc args…` itself, with no wrapper: the host pass's dependencies,
/// which the user's `RUSTC_WORKSPACE_WRAPPER` does not apply to.
pub fn direct(rustc: &str, args: &[String]) -> Command {
    let mut c = Command::new(rustc);
    c.args(args);
    c
}

/// Runs rustc with inherited stdio; returns its exit code. A rustc that a
/// signal ended ends the wrapper with the same signal ([`die_like`]), so
/// that cargo reports what happened (`signal: 2, SIGINT`, which
/// `diagnostic::classify` reads as an interrupted build) and not a failed
/// compilation.
pub fn run(rustc: &str, args: &[String]) -> Result<i32> {
    run_command(&mut command(rustc, args))
}

/// [`run`] for a command made by [`command`] or [`direct`].
pub fn run_command(cmd: &mut Command) -> Result<i32> {
    Ok(exit_code(&crate::child::status(cmd)?))
}

/// Runs rustc like [`run`], passing its stderr on to this process's (to
/// cargo) a line at a time as it comes, so that cargo still hears of each
/// artifact when rustc writes it (pipelining); returns the exit code and
/// the lines, for the crate cache (`crate_cache.rs`).
pub fn run_recorded(rustc: &str, args: &[String]) -> Result<(i32, Vec<String>)> {
    run_command_recorded(&mut command(rustc, args))
}

/// [`run_recorded`] for a command made by [`command`] or [`direct`].
pub fn run_command_recorded(cmd: &mut Command) -> Result<(i32, Vec<String>)> {
    use std::io::{BufRead, Write};
    let mut running = crate::child::spawn(cmd.stderr(std::process::Stdio::piped()))?;
    let stderr = running.child.stderr.take().expect("piped");
    let mut lines = Vec::new();
    let mut out = std::io::stderr();
    for line in std::io::BufReader::new(stderr).lines().map_while(|l| l.ok()) {
        let _ = writeln!(out, "{line}");
        lines.push(line);
    }
    Ok((exit_code(&running.wait()?), lines))
}

/// Logs a crate taken from the crate cache (a build script by its
/// package's name: `syn build script`); rustc's exit code then, 0.
pub fn log_cached(args: &Args) -> i32 {
    match std::env::var("CARGO_PKG_NAME") {
        Ok(pkg) if args.crate_name() == Some("build_script_build") => log_line(&format!("{pkg} build script\tcached")),
        _ => log_compile(args, "\tcached"),
    }
    0
}

/// Appends the crate's name (and `tag`) to the compile log, if the cargo
/// phase asked ([`COMPILE_LOG_VAR`]).
pub fn log_compile(args: &Args, tag: &str) {
    if let Some(name) = args.crate_name() {
        log_line(&format!("{name}{tag}"));
    }
}

/// Appends `line` to the compile log, if the cargo phase asked.
fn log_line(line: &str) {
    use std::io::Write;
    if let Some(log) = std::env::var_os(COMPILE_LOG_VAR) {
        if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(log) {
            let _ = writeln!(f, "{line}");
        }
    }
}

/// rustc's exit code; a rustc that a signal ended ends this process the
/// same way ([`die_like`]).
pub fn exit_code(status: &std::process::ExitStatus) -> i32 {
    match status.code() {
        Some(code) => code,
        None => die_like(status),
    }
}

/// Ends this process with the signal that ended the child (`status`); if
/// that signal is ignored here (a background job ignores SIGINT), returns
/// 128 + the signal, as shells report it.
fn die_like(status: &std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    let Some(signal) = status.signal() else { return 101 };
    if let Ok(s) = nix::sys::signal::Signal::try_from(signal) {
        let _ = nix::sys::signal::raise(s);
    }
    128 + signal
}
