//! `blur 333 250` on the host fallback: the program checks every pixel
//! against an f64 blur of its input and exits non-zero on a mismatch.

// Host-only: `cargo offload test` also builds this target for the GPU.
#[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
#[test]
fn checks_itself_on_the_host_fallback() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_blur"))
        .args(["333", "250"])
        .env("OFFLOAD_DEVICE", "host")
        .output()
        .expect("run blur");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}\n{stdout}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    // 333 × 250 pixels need 21 × 16 blocks: 336 × 256 threads.
    assert!(stdout.contains("blur: 333 × 250 pixels, 21 × 16 blocks of 16 × 16 threads (336 × 256)"), "{stdout}");
    assert!(stdout.contains("all results match the host reference"), "{stdout}");
}
