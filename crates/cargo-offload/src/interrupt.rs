//! Ctrl-C and termination: an interrupted build is reported as one line,
//! `error: build interrupted`, with exit code 130 (128 + SIGINT, as shells
//! report it), never as the compile or link errors its dying children print.
//!
//! A terminal's Ctrl-C sends SIGINT to the whole foreground process group:
//! `cargo offload`, its cargo, rustc, offload-linker, llc, ptxas. cargo-offload
//! catches SIGINT and SIGTERM ([`install`]), so it outlives its children,
//! forwards the signal to the children it started (for a signal sent to it
//! alone), stops relaying their output, and reports the interruption once
//! they have exited. A child that dies of SIGINT or SIGTERM on its own
//! (a `kill` of rustc or llc) interrupts the build the same way
//! ([`interrupting_status`]; cargo's and offload-linker's reports of it are
//! recognized by `diagnostic::classify`).
//! No child starts once the build is interrupted, and probes have a time
//! limit (`child`): the interruption never waits for a step that has not
//! begun, nor for a tool that does not answer.
//! Files are written to unique temporary names and renamed into place, so
//! an interrupted build leaves nothing a later build would trust.

use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
static CHILDREN: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// SIGINT and SIGTERM.
const SIGNALS: [i32; 2] = [2, 15];

/// Catches SIGINT and SIGTERM for the rest of the process (see the module docs).
pub fn install() {
    // An error means a handler is already set (only in tests): keep it.
    let _ = ctrlc::set_handler(|| {
        INTERRUPTED.store(true, Ordering::SeqCst);
        forward();
    });
}

/// Sends SIGINT to the children started so far that still run.
fn forward() {
    let children = CHILDREN.lock().map(|c| c.clone()).unwrap_or_default();
    for pid in children {
        forward_to(pid);
    }
}

/// Sends SIGINT to the child `pid` (see `child::spawn`).
pub fn forward_to(pid: u32) {
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;
    if let Ok(pid) = i32::try_from(pid) {
        let _ = kill(Pid::from_raw(pid), Signal::SIGINT);
    }
}

/// Whether the build was interrupted.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// The flag behind [`interrupted`], for code that also takes a flag of its
/// own (tests).
pub fn flag() -> &'static AtomicBool {
    &INTERRUPTED
}

/// Marks the build interrupted (a child reported it).
pub fn set() {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// A child to forward the signal to while it runs; removed when dropped.
pub struct Registered(u32);

/// Registers a child started with `spawn`.
pub fn register(pid: u32) -> Registered {
    if let Ok(mut c) = CHILDREN.lock() {
        c.push(pid);
    }
    Registered(pid)
}

impl Drop for Registered {
    fn drop(&mut self) {
        if let Ok(mut c) = CHILDREN.lock() {
            c.retain(|&p| p != self.0);
        }
    }
}

/// Whether a child ended by SIGINT or SIGTERM.
fn ended_by_interruption(status: &ExitStatus) -> bool {
    #[cfg(unix)]
    let by_signal = std::os::unix::process::ExitStatusExt::signal(status).is_some_and(|s| SIGNALS.contains(&s));
    #[cfg(not(unix))]
    let by_signal = false;
    by_signal
}

/// Whether a child ended by SIGINT or SIGTERM (and marks the build
/// interrupted if so).
pub fn interrupting_status(status: &ExitStatus) -> bool {
    let by_signal = ended_by_interruption(status);
    if by_signal {
        set();
    }
    by_signal
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (The flag itself is not set here: the other tests of this process
    /// start children, which an interrupted build does not.)
    #[test]
    fn interruptions_are_recognized() {
        #[cfg(unix)]
        {
            use std::os::unix::process::ExitStatusExt;
            assert!(!ended_by_interruption(&ExitStatus::from_raw(1 << 8)));
            assert!(ended_by_interruption(&ExitStatus::from_raw(2)));
            assert!(ended_by_interruption(&ExitStatus::from_raw(15)));
            assert!(!ended_by_interruption(&ExitStatus::from_raw(9)));
        }
    }
}
