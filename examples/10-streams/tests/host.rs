//! `streams` on the host fallback: chunks copied and computed on two queues, every element against the host; the program exits non-zero on a mismatch.

// Host-only: `cargo offload test` also builds this target for the GPU.
#[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
#[test]
fn checks_itself_on_the_host_fallback() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_streams"))
        .env("OFFLOAD_DEVICE", "host")
        .output()
        .expect("run streams");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}\n{stdout}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("streams: 8 MiB in 8 chunks of 1 MiB on 2 queue(s)"), "{stdout}");
    assert!(stdout.contains("streams: all 2097152 elements match the host"), "{stdout}");
}
