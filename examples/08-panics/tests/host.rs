//! `panics` on the host fallback: kernel panics come back as errors naming kernel, block and thread, and the launches after them are right; the program exits non-zero otherwise.

// Host-only: `cargo offload test` also builds this target for the GPU.
#[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
#[test]
fn checks_itself_on_the_host_fallback() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_panics"))
        .env("OFFLOAD_DEVICE", "host")
        .output()
        .expect("run panics");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}\n{stdout}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("differences with n - 1 threads: 0 wrong"), "{stdout}");
}
