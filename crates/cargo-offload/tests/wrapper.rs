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

fn wrap(phase: &str, rustc: &PathBuf) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_cargo-offload"))
        .arg(rustc)
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
