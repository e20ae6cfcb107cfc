//! `resident-buffers 14` on the host fallback: the program runs the same steps with `DeviceBuffer`s and with `Vec`s and compares the bits; it exits non-zero on a mismatch.

// Host-only: `cargo offload test` also builds this target for the GPU.
#[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
#[test]
fn checks_itself_on_the_host_fallback() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_resident-buffers"))
        .arg("14")
        .env("OFFLOAD_DEVICE", "host")
        .output()
        .expect("run resident-buffers");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}\n{stdout}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("DeviceBuffers and Vecs give the same bits: true"), "{stdout}");
}
