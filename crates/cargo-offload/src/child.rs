//! Running the programs `cargo offload` starts: the one place that spawns
//! them, so that every child gets the same care.
//!
//! - No child starts once the build is interrupted ([`spawn`] checks first):
//!   a Ctrl-C that arrives between two children (or while none runs) ends
//!   the build at the next start instead of after the next long step.
//! - Each child is registered for the interruption to be forwarded to it
//!   (`interrupt`) while it runs, and gets it at once if it arrived between
//!   the check and the registration.
//! - A child's exit by SIGINT or SIGTERM marks the build interrupted
//!   ([`Running::wait`]).
//! - A *probe* (a short query: `rustc -vV`, `rustup which`, `llc
//!   -mattr=help`, `nvidia-smi`) has no input, its output captured, and a
//!   time limit ([`probe`]): one that does not answer is killed and named
//!   in the error, never waited for without end; an interruption kills it.

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use crate::errors::{CliError, Result};
use crate::interrupt;

/// How long a probe may take, unless `OFFLOAD_PROBE_TIMEOUT` (seconds) says
/// otherwise: generous for a cold `rustup` or a driver that wakes its GPUs.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(30);

/// [`PROBE_TIMEOUT`], or `OFFLOAD_PROBE_TIMEOUT` seconds.
pub fn probe_timeout() -> Duration {
    std::env::var("OFFLOAD_PROBE_TIMEOUT")
        .ok()
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .map(Duration::from_secs_f64)
        .unwrap_or(PROBE_TIMEOUT)
}

/// A started child, registered for the interruption to be forwarded to it
/// until it is waited for.
pub struct Running {
    pub child: Child,
    program: String,
    _registered: interrupt::Registered,
}

/// The command line of `cmd`, for messages: `rustup which --toolchain nightly rustc`.
pub fn describe(cmd: &Command) -> String {
    std::iter::once(cmd.get_program()).chain(cmd.get_args()).map(|a| a.to_string_lossy()).collect::<Vec<_>>().join(" ")
}

/// Starts `cmd`, unless `stop` (the interruption) is set.
fn spawn_unless(cmd: &mut Command, stop: &AtomicBool) -> Result<Running> {
    use std::sync::atomic::Ordering::SeqCst;
    if stop.load(SeqCst) {
        return Err(CliError::Interrupted);
    }
    let program = cmd.get_program().to_string_lossy().into_owned();
    let child = cmd.spawn().map_err(CliError::spawn(Path::new(&program)))?;
    let registered = interrupt::register(child.id());
    if stop.load(SeqCst) {
        // It arrived before the registration, so was not forwarded.
        interrupt::forward_to(child.id());
    }
    Ok(Running { child, program, _registered: registered })
}

/// Starts `cmd` (see the module docs); `CliError::Interrupted` if the build
/// was interrupted before.
pub fn spawn(cmd: &mut Command) -> Result<Running> {
    spawn_unless(cmd, interrupt::flag())
}

impl Running {
    /// Waits for the child; its exit by SIGINT or SIGTERM marks the build
    /// interrupted (`interrupt::interrupting_status`).
    pub fn wait(mut self) -> Result<ExitStatus> {
        let status = self.child.wait().map_err(CliError::spawn(Path::new(&self.program)))?;
        interrupt::interrupting_status(&status);
        Ok(status)
    }

    /// Waits for the child and collects what it wrote to piped stdout and
    /// stderr (see [`Running::wait`]).
    pub fn wait_with_output(self) -> Result<Output> {
        let Running { child, program, _registered } = self;
        let out = child.wait_with_output().map_err(CliError::spawn(Path::new(&program)))?;
        interrupt::interrupting_status(&out.status);
        Ok(out)
    }
}

/// Runs `cmd` to the end with inherited stdio (see [`Running::wait`]).
pub fn status(cmd: &mut Command) -> Result<ExitStatus> {
    spawn(cmd)?.wait()
}

/// Runs `cmd` to the end with its stdout and stderr captured (stdin
/// inherited; see [`Running::wait`]).
pub fn output(cmd: &mut Command) -> Result<Output> {
    spawn(cmd.stdout(Stdio::piped()).stderr(Stdio::piped()))?.wait_with_output()
}

/// Runs the probe `cmd` (see the module docs) with the limit of
/// [`probe_timeout`]. `Ok(None)` if it cannot be started (not installed);
/// `CliError::ProbeTimedOut` naming it if it does not exit in time;
/// `CliError::Interrupted` if the build is interrupted meanwhile. Either
/// way the probe is killed.
pub fn probe(cmd: &mut Command) -> Result<Option<Output>> {
    probe_until(cmd, probe_timeout(), interrupt::flag())
}

/// [`probe`] of `program args…` whose answer depends on the executable
/// alone (`--version`, `rustc -vV`, `llc -mcpu=help`): kept across runs by
/// the executable's identity (`offload_image::probe`).
pub fn probe_cached(program: &Path, args: &[&str]) -> Result<Option<Output>> {
    let mut error = None;
    let out = offload_image::probe::cached(program, args, || {
        probe(std::process::Command::new(program).args(args)).unwrap_or_else(|e| {
            error = Some(e);
            None
        })
    });
    match error {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// [`probe`] with a limit and an interruption flag of its own.
fn probe_until(cmd: &mut Command, limit: Duration, stop: &AtomicBool) -> Result<Option<Output>> {
    let what = describe(cmd);
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut running = match spawn_unless(cmd, stop) {
        Ok(r) => r,
        Err(CliError::Spawn { .. }) => return Ok(None),
        Err(e) => return Err(e),
    };
    // Drained as it comes, so that a probe that writes much never blocks;
    // each pipe's bytes arrive on `done` (0: stdout, 1: stderr) at its end.
    let (sender, done) = std::sync::mpsc::channel::<(usize, Vec<u8>)>();
    let pipes: [Option<Box<dyn Read + Send>>; 2] = [
        running.child.stdout.take().map(|p| Box::new(p) as Box<dyn Read + Send>),
        running.child.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>),
    ];
    for (i, pipe) in pipes.into_iter().enumerate() {
        let sender = sender.clone();
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut buf);
            }
            let _ = sender.send((i, buf));
        });
    }
    let start = Instant::now();
    let timed_out = || CliError::ProbeTimedOut { probe: what.clone(), limit };
    let status = loop {
        if let Some(status) = running.child.try_wait().map_err(CliError::spawn(Path::new(&running.program)))? {
            break status;
        }
        let error = if stop.load(std::sync::atomic::Ordering::SeqCst) {
            CliError::Interrupted
        } else if start.elapsed() >= limit {
            timed_out()
        } else {
            std::thread::sleep(Duration::from_millis(10));
            continue;
        };
        let _ = running.child.kill();
        let _ = running.child.wait();
        // The readers end with the pipes (or with a grandchild that holds
        // them: they are not waited for).
        return Err(error);
    };
    interrupt::interrupting_status(&status);
    // The pipes close when the probe exits, unless a process it started
    // keeps them open: that, too, is a probe that does not answer.
    let mut out = [Vec::new(), Vec::new()];
    for _ in 0..2 {
        let (i, bytes) = done.recv_timeout(limit.saturating_sub(start.elapsed())).map_err(|_| timed_out())?;
        out[i] = bytes;
    }
    let [stdout, stderr] = out;
    Ok(Some(Output { status, stdout, stderr }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering::SeqCst;
    use std::sync::Arc;

    fn sh(script: &str) -> Command {
        let mut c = Command::new("sh");
        c.arg("-c").arg(script);
        c
    }

    #[test]
    fn a_probe_answers() {
        let stop = AtomicBool::new(false);
        let out = probe_until(&mut sh("echo out; echo err >&2"), Duration::from_secs(20), &stop).unwrap().unwrap();
        assert!(out.status.success());
        assert_eq!((&out.stdout[..], &out.stderr[..]), (&b"out\n"[..], &b"err\n"[..]));
        let missing = probe_until(&mut Command::new("/nonexistent/rustup"), Duration::from_secs(20), &stop);
        assert!(matches!(missing, Ok(None)), "{missing:?}");
    }

    /// A probe that hangs is killed at its limit, and the error names it.
    #[test]
    fn a_hanging_probe_is_an_error_naming_it() {
        let stop = AtomicBool::new(false);
        let start = Instant::now();
        let e = probe_until(&mut sh("sleep 30"), Duration::from_millis(300), &stop).unwrap_err();
        assert!(start.elapsed() < Duration::from_secs(10), "{:?}", start.elapsed());
        assert!(matches!(&e, CliError::ProbeTimedOut { probe, .. } if probe == "sh -c sleep 30"), "{e:?}");
        assert_eq!(e.to_string(), "`sh -c sleep 30` did not answer within 0.3 s");
        assert_eq!(e.exit_code(), crate::errors::exit::SETUP);
    }

    /// A probe that exits but leaves a process holding its output open is
    /// not waited for without end either.
    #[test]
    fn a_probe_whose_pipes_stay_open_is_an_error() {
        let stop = AtomicBool::new(false);
        let start = Instant::now();
        let e = probe_until(&mut sh("sleep 5 & echo started"), Duration::from_millis(500), &stop).unwrap_err();
        assert!(matches!(e, CliError::ProbeTimedOut { .. }), "{e:?}");
        assert!(start.elapsed() < Duration::from_secs(10), "{:?}", start.elapsed());
    }

    /// An interruption kills a running probe at once.
    #[test]
    fn an_interruption_ends_a_probe() {
        let stop = Arc::new(AtomicBool::new(false));
        let setter = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(200));
                stop.store(true, SeqCst);
            })
        };
        let start = Instant::now();
        let e = probe_until(&mut sh("sleep 30"), Duration::from_secs(60), &stop).unwrap_err();
        setter.join().unwrap();
        assert!(matches!(e, CliError::Interrupted), "{e:?}");
        assert!(start.elapsed() < Duration::from_secs(10), "{:?}", start.elapsed());
    }

    /// Nothing starts once the build is interrupted.
    #[test]
    fn nothing_starts_after_an_interruption() {
        let marker = std::env::temp_dir().join(format!("offload-child-{}", std::process::id()));
        let _ = std::fs::remove_file(&marker);
        let stop = AtomicBool::new(true);
        let touch = format!("touch {}", marker.display());
        assert!(matches!(spawn_unless(&mut sh(&touch), &stop), Err(CliError::Interrupted)));
        assert!(matches!(probe_until(&mut sh(&touch), Duration::from_secs(20), &stop), Err(CliError::Interrupted)));
        std::thread::sleep(Duration::from_millis(100));
        assert!(!marker.exists(), "the command ran");
        stop.store(false, SeqCst);
        spawn_unless(&mut sh(&touch), &stop).unwrap().wait().unwrap();
        assert!(marker.exists());
        let _ = std::fs::remove_file(&marker);
    }
}
