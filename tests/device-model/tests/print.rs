//! The printing kernel's output reaches stdout whole, with the same text as
//! `format!` on the host (runs the `device-model` binary: the host fallback
//! under `cargo test`, the GPU under the GPU script).

#[test]
fn kernel_println_lines() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_device-model"))
        .arg("print")
        .env("OFFLOAD_DEVICE", std::env::var("OFFLOAD_DEVICE").unwrap_or_else(|_| "host".into()))
        .output()
        .expect("run device-model");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let mut got: Vec<String> = text.lines().filter(|l| l.starts_with("device-model print 7:")).map(String::from).collect();
    got.sort();
    let mut want = Vec::new();
    for b in 0..3u32 {
        for t in 0..2u32 {
            want.push(format!("device-model print 7: block {b} thread {t} value {:.3} {:?}", 2.5 * (t + 1) as f32, [b, t]));
        }
    }
    want.sort();
    assert_eq!(got, want, "stdout was:\n{text}");
}
