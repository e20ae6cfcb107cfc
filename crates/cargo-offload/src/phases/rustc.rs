//! Running rustc from a wrapper phase: through the user's own rustc wrapper
//! when there is one (`RUSTC_WRAPPER`, e.g. sccache, handed over as
//! [`INNER_VAR`]), so that it is chained, never silently replaced.

use std::process::Command;

use crate::errors::Result;
use crate::handoff::INNER_VAR;

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

/// Runs rustc with inherited stdio; returns its exit code. A rustc that a
/// signal ended ends the wrapper with the same signal ([`die_like`]), so
/// that cargo reports what happened (`signal: 2, SIGINT`, which
/// `diagnostic::classify` reads as an interrupted build) and not a failed
/// compilation.
pub fn run(rustc: &str, args: &[String]) -> Result<i32> {
    let status = crate::child::status(&mut command(rustc, args))?;
    Ok(exit_code(&status))
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
