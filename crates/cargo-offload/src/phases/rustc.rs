//! Running rustc from a wrapper phase: through the user's own rustc wrapper
//! when there is one (`RUSTC_WRAPPER`, e.g. sccache, handed over as
//! [`INNER_VAR`]), so that it is chained, never silently replaced.

use std::path::Path;
use std::process::Command;

use crate::errors::{CliError, Result};
use crate::handoff::INNER_VAR;

/// `rustc args…`, or `<inner wrapper> rustc args…`.
fn command(rustc: &str, args: &[String]) -> Command {
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

/// Runs rustc with inherited stdio; returns its exit code (101, rustc's
/// code for an ICE, if a signal ended it).
pub fn run(rustc: &str, args: &[String]) -> Result<i32> {
    let status = command(rustc, args).status().map_err(CliError::spawn(Path::new(rustc)))?;
    Ok(status.code().unwrap_or(101))
}
