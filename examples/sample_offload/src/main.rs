//! The smallest offload program: a bin crate (no `[lib]` section) whose
//! kernels run on the GPU, or on the host CPU where no GPU is usable.
//!
//!     cargo offload run
//!
//! Each result is checked against an independent computation on the host in
//! f64; the program exits non-zero if any element is wrong.

use offload::{kernel, DisjointSlice};

/// `y[i] = a * x[i] + y[i]`, one element per GPU thread.
#[kernel]
fn saxpy(a: f32, x: &[f32], y: &mut [f32]) {
    if let Some((i, yi)) = y.at_thread() {
        *yi = a * x[i] + *yi;
    }
}

/// `out[i] = x[i]² + sin-free polynomial`, with a grid-stride loop so that
/// any launch size covers every element.
#[kernel]
fn poly(c: [f32; 3], x: &[f32], out: &mut [f32]) {
    for (i, o) in out.grid_stride() {
        let v = x[i];
        *o = c[0] + v * (c[1] + v * c[2]);
    }
}

/// Integer work that needs 128-bit division (linked from the device image,
/// not from a runtime library).
#[kernel]
fn div128(d: u64, x: &[u64], q: &mut [u64]) {
    if let Some((i, qi)) = q.at_thread() {
        let wide = (x[i] as u128) << 64 | 0x1234_5678;
        *qi = (wide / d as u128) as u64;
    }
}

/// A helper that is neither a kernel nor host-only: it is compiled for both.
fn scale_of(n: usize) -> f32 {
    1.0 / n as f32
}

#[allow(dead_code)]
fn unused_view(_v: DisjointSlice<'_, f32>) {}

#[offload::host]
fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

#[offload::host]
fn run() -> Result<(), offload::Error> {
    println!("offload backend: {}", offload::backend()?);
    let n = 1_000_003usize;
    let x: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * scale_of(1000)).collect();
    let mut y: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
    let a = 2.5f32;
    let y0 = y.clone();
    saxpy(offload::for_len(n), a, &x, &mut y)?;
    let mut bad = 0usize;
    for i in 0..n {
        let want = a as f64 * x[i] as f64 + y0[i] as f64;
        if ((y[i] as f64) - want).abs() > 1e-6 * want.abs().max(1.0) {
            bad += 1;
        }
    }
    println!("saxpy  n={n}: {} wrong", bad);

    let c = [1.0f32, -0.5, 0.25];
    let mut out = vec![f32::NAN; n];
    // 64 blocks of 128 threads: each thread handles many elements.
    saxpy_free_poly(c, &x, &mut out)?;
    let mut bad_poly = 0usize;
    for i in 0..n {
        let v = x[i] as f64;
        let want = c[0] as f64 + v * (c[1] as f64 + v * c[2] as f64);
        if ((out[i] as f64) - want).abs() > 1e-5 * want.abs().max(1.0) {
            bad_poly += 1;
        }
    }
    println!("poly   n={n}: {} wrong", bad_poly);

    let m = 4096usize;
    let xs: Vec<u64> = (0..m as u64).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15)).collect();
    let mut q = vec![0u64; m];
    let d = 1_000_000_007u64;
    div128(offload::for_len(m), d, &xs, &mut q)?;
    let bad_div = (0..m).filter(|&i| q[i] != ((((xs[i] as u128) << 64) | 0x1234_5678) / d as u128) as u64).count();
    println!("div128 n={m}: {} wrong", bad_div);

    if bad + bad_poly + bad_div > 0 {
        eprintln!("error: wrong results");
        std::process::exit(1);
    }
    println!("all results match the host reference");
    Ok(())
}

#[offload::host]
fn saxpy_free_poly(c: [f32; 3], x: &[f32], out: &mut [f32]) -> Result<(), offload::Error> {
    poly(offload::LaunchConfig::new(64u32, 128u32), c, x, out)
}
