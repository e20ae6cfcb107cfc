//! `matmul 128` on the host fallback: the program checks its results against
//! f64 dot products (512 entries) and exits non-zero on a mismatch.

// Host-only: `cargo offload test` also builds this target for the GPU.
#[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
#[test]
fn checks_itself_on_the_host_fallback() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_matmul"))
        .arg("128")
        .env("OFFLOAD_DEVICE", "host")
        .output()
        .expect("run matmul");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}\n{stdout}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("worst error/Σ|terms|"), "{stdout}");
}
