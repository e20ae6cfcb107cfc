//! The rustc wrapper phases as cargo runs them (`<wrapper> <rustc> <args…>`
//! with `__OFFLOAD_PHASE` set): what cargo sees of the rustc they run.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::Command;

/// A script standing in for rustc.
fn fake_rustc(name: &str, body: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("wrapper-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// Runs the wrapper as cargo does. SIGINT is reset to its default action in
/// the wrapper (and so in the rustc it starts): a test run started in the
/// background of a non-interactive shell, as CI may start it, inherits
/// SIGINT ignored, and a rustc that ignores it could not be ended by it.
fn wrap(phase: &str, rustc: &PathBuf) -> std::process::Output {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cargo-offload"));
    // SAFETY: between fork and exec the closure only calls sigaction, which
    // is async-signal-safe (POSIX), and allocates nothing.
    unsafe {
        cmd.pre_exec(|| {
            nix::sys::signal::signal(nix::sys::signal::Signal::SIGINT, nix::sys::signal::SigHandler::SigDfl)
                .map(|_| ())
                .map_err(std::io::Error::from)
        });
    }
    cmd.arg(rustc)
        .args(["--crate-name", "x", "src/lib.rs", "--crate-type", "lib"])
        .env("__OFFLOAD_PHASE", phase)
        .env_remove("RUSTC_WRAPPER")
        .env_remove("__OFFLOAD_INNER_WRAPPER")
        .output()
        .unwrap()
}

/// rustc's exit code is the wrapper's, and the wrapper adds nothing.
#[test]
fn rustcs_exit_code_passes_through() {
    let rustc = fake_rustc("failing-rustc", "echo 'error: from rustc' >&2\nexit 1");
    for phase in ["device", "host"] {
        let out = wrap(phase, &rustc);
        assert_eq!(out.status.code(), Some(1), "{phase}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), "error: from rustc\n", "{phase}");
    }
}

/// A rustc ended by SIGINT ends the wrapper by SIGINT, so that cargo
/// reports an interruption (which `cargo offload` reports as one), not a
/// failed compilation with exit status 101.
#[test]
fn a_signal_that_ends_rustc_ends_the_wrapper() {
    let rustc = fake_rustc("interrupted-rustc", "kill -INT $$");
    for phase in ["device", "host"] {
        let out = wrap(phase, &rustc);
        assert_eq!(out.status.signal(), Some(2), "{phase}: {:?}", out.status);
        assert!(out.stderr.is_empty(), "{phase}: {}", String::from_utf8_lossy(&out.stderr));
    }
}
