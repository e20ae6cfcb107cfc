//! SAXPY, `y ← a·x + y`, on 2^24 single-precision elements (64 MiB per
//! array), with timing and a checksum.
//!
//!     cargo offload run --release [-- <log2 n>]
//!
//! The result is checked element by element against the same computation
//! done on the host in f64, and the checksum (sum of y in f64) against the
//! closed form; the program exits non-zero on any mismatch.

use offload::prelude::*;

/// One element per thread; threads past the end do nothing.
#[kernel]
fn saxpy(a: f32, x: &[f32], y: &mut [f32]) {
    if let Some((i, yi)) = y.at_thread() {
        *yi = a * x[i] + *yi;
    }
}

#[offload::host]
fn main() {
    let log2n: u32 = match std::env::args().nth(1).map(|s| s.parse()) {
        None => 24,
        Some(Ok(k)) if (10..=30).contains(&k) => k,
        Some(_) => {
            eprintln!("usage: saxpy [log2 n], with 10 <= log2 n <= 30 (default 24)");
            std::process::exit(2);
        }
    };
    let n = 1usize << log2n;
    match offload::backend() {
        Ok(b) => println!("backend: {b}"),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
    // x[i] = (i mod 1024) / 1024, y[i] = 1 - x[i]: exact in f32.
    let x: Vec<f32> = (0..n).map(|i| (i % 1024) as f32 / 1024.0).collect();
    let mut y: Vec<f32> = x.iter().map(|&v| 1.0 - v).collect();
    let a = 3.0f32;

    let t = std::time::Instant::now();
    if let Err(e) = saxpy(for_len(n), a, &x, &mut y) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
    let first = t.elapsed();
    // Second launch: y ← a·x + y again; timed without first-launch set-up.
    let t = std::time::Instant::now();
    if let Err(e) = saxpy(for_len(n), a, &x, &mut y) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
    let second = t.elapsed();

    // Reference: y = (1 - x) + 2·a·x, in f64.
    let mut wrong = 0usize;
    let mut sum = 0f64;
    for i in 0..n {
        let xi = x[i] as f64;
        let want = (1.0 - xi) + 2.0 * a as f64 * xi;
        sum += y[i] as f64;
        if (y[i] as f64 - want).abs() > 4.0 * f32::EPSILON as f64 * want.abs() {
            if wrong < 5 {
                eprintln!("y[{i}] = {} but the host reference is {want}", y[i]);
            }
            wrong += 1;
        }
    }
    // Closed form of the checksum: sum over i of 1 + (2a - 1)·x[i].
    let per_period: f64 = (0..1024).map(|k| 1.0 + (2.0 * a as f64 - 1.0) * (k as f64 / 1024.0)).sum();
    let expected = per_period * (n / 1024) as f64;
    let bytes = 3.0 * 4.0 * n as f64; // read x, read y, write y
    println!("n = 2^{log2n} = {n}");
    println!(
        "launch 1: {:.3} ms, launch 2: {:.3} ms ({:.1} GB/s counting 12 bytes per element, transfers included)",
        first.as_secs_f64() * 1e3,
        second.as_secs_f64() * 1e3,
        bytes / second.as_secs_f64() / 1e9
    );
    println!("checksum: {sum:.6} (expected {expected:.6})");
    let checksum_ok = (sum - expected).abs() <= 1e-9 * expected;
    if wrong > 0 || !checksum_ok {
        eprintln!("error: {wrong} wrong element(s), checksum {}", if checksum_ok { "ok" } else { "WRONG" });
        std::process::exit(1);
    }
    println!("saxpy: all {n} elements match the host reference");
}
