//! `cublas` on the host fallback: it says why cuBLAS is not used and computes C with its own kernel, against a host SGEMM; the program exits non-zero on a mismatch.

// Host-only: `cargo offload test` also builds this target for the GPU.
#[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
#[test]
fn checks_itself_on_the_host_fallback() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cublas"))
        .env("OFFLOAD_DEVICE", "host")
        .output()
        .expect("run cublas");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}\n{stdout}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("cuBLAS: not used: this is the host fallback (no CUDA GPU), and cuBLAS runs only on one; computing C with this example's offload kernel `sgemm` instead"), "{stdout}");
    assert!(stdout.contains("cublas: C and out match the host SGEMM"), "{stdout}");
}
