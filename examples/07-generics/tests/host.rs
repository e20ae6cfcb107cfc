//! `generics` on the host fallback: each instance of the generic kernels against a host computation; the program exits non-zero on a mismatch.

// Host-only: `cargo offload test` also builds this target for the GPU.
#[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
#[test]
fn checks_itself_on_the_host_fallback() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_generics"))
        .env("OFFLOAD_DEVICE", "host")
        .output()
        .expect("run generics");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}\n{stdout}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("axpy and clamp for i32: n = 100003, 0 wrong"), "{stdout}");
}
