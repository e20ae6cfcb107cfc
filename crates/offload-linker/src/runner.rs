//! Running the LLVM tools of a link: each command logged (`-vv`,
//! `OFFLOAD_LINK_LOG`), a failure turned into a [`LinkError`] with the
//! tool's error lines (see [`crate::diagnose`]) and its full output kept
//! beside the image, an interruption recognized.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Command;

use crate::{diagnose, LinkError, ToolFailure};

/// One step's log line, for `-v` / `OFFLOAD_LINK_LOG`.
pub(crate) fn render(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        let a = a.to_string_lossy();
        if a.contains(' ') {
            let _ = write!(s, " '{a}'");
        } else {
            let _ = write!(s, " {a}");
        }
    }
    s
}

/// Runs the tools of one link (see the module docs).
pub(crate) struct Runner {
    pub(crate) log: Option<PathBuf>,
    /// The image being linked: a failed tool's output goes beside it.
    pub(crate) output: PathBuf,
}

impl Runner {
    pub(crate) fn run(&self, mut cmd: Command, tool: &str, step: &'static str) -> Result<(), LinkError> {
        let line = render(&cmd);
        if let Some(log) = &self.log {
            use std::io::Write;
            if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(log) {
                let _ = writeln!(f, "{line}");
            }
        }
        let out = cmd.output().map_err(|source| LinkError::Spawn { tool: tool.into(), source })?;
        if !out.status.success() {
            #[cfg(unix)]
            let signal = std::os::unix::process::ExitStatusExt::signal(&out.status);
            #[cfg(not(unix))]
            let signal = None;
            let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
            let failure = diagnose::Failure::parse(&stderr, signal);
            if let Some(signal) = signal.filter(|_| failure.interrupted()) {
                return Err(LinkError::Interrupted { tool: tool.into(), step, signal });
            }
            let mut log = self.output.clone().into_os_string();
            log.push(format!(".{tool}.log"));
            let log = PathBuf::from(log);
            let _ = std::fs::write(&log, format!("{line}\n\n{stderr}"));
            return Err(LinkError::Step(Box::new(ToolFailure {
                tool: tool.into(),
                step,
                status: out.status.to_string(),
                failure,
                log,
                command: line,
            })));
        }
        Ok(())
    }
}

/// Appends `line` to the file named by `var`, if set.
pub(crate) fn record(var: &str, line: &str) {
    if let Some(path) = std::env::var_os(var) {
        use std::io::Write;
        if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
            let _ = writeln!(f, "{line}");
        }
    }
}
