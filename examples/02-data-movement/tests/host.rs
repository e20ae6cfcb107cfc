//! `saxpy 20` on the host fallback: every element is checked against the
//! host in f64 by the program, and the checksum here against its closed form.

// Host-only: `cargo offload test` also builds this target for the GPU.
#[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
#[test]
fn checks_itself_on_the_host_fallback() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_saxpy"))
        .arg("20")
        .env("OFFLOAD_DEVICE", "host")
        .output()
        .expect("run saxpy");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}\n{stdout}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    // checksum = Σ_i 1 + (2a−1)·x_i with x_i = (i mod 1024)/1024, a = 3, n = 2^20
    let per_period: f64 = (0..1024).map(|k| 1.0 + 5.0 * (k as f64 / 1024.0)).sum();
    let expected = per_period * 1024.0;
    assert!(stdout.contains(&format!("checksum: {expected:.6}")), "{expected}: {stdout}");
}
