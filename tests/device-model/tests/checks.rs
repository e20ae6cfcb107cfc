//! Each device-model check, run by the `device-model` binary as a user runs
//! it (the host fallback under `cargo test`; `OFFLOAD_DEVICE` picks another
//! backend), one test per check. The binary compares every result with an
//! independent host computation and prints `<check> ok` or `<check> FAIL
//! <why>`; running it rather than the checks in-process compiles the crate
//! once instead of twice.

// Host-only: `cargo offload test` also builds this target for the GPU.
#![cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]

/// Runs the binary's check `name` and asserts it passed.
fn run(name: &str) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_device-model"))
        .arg(name)
        .env("OFFLOAD_DEVICE", std::env::var("OFFLOAD_DEVICE").unwrap_or_else(|_| "host".into()))
        .output()
        .expect("run device-model");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{name}: {}\n{stdout}\n{stderr}", out.status);
    let line = stdout.lines().find(|l| l.split_whitespace().next() == Some(name));
    let status = line.and_then(|l| l.split_whitespace().nth(1));
    assert!(status == Some("ok") || status == Some("skip"), "{name} did not pass:\n{stdout}\n{stderr}");
}

#[test]
fn geometry() {
    run("geometry");
}
#[test]
fn shared_memory() {
    run("shared");
}
#[test]
fn atomics() {
    run("atomics");
}
#[test]
fn orderings() {
    run("orderings");
}
#[test]
fn warp() {
    run("warp");
}
#[test]
fn math() {
    run("math");
}
#[test]
fn casts() {
    run("casts");
}
#[test]
fn features() {
    run("features");
}
#[test]
fn globals() {
    run("globals");
}
#[test]
fn panics() {
    run("panics");
}
#[test]
fn divergence() {
    run("divergence");
}
#[test]
fn warp_divergence() {
    run("warp_divergence");
}
