//! The smallest offload program: a bin crate (no `[lib]` section, no
//! `#![no_std]`, no panic handler) whose kernels run on the GPU, or on the
//! host CPU where no GPU is usable.
//!
//!     cargo offload run
//!
//! Each result is checked against an independent computation on the host in
//! f64; the program exits non-zero if any element is wrong.

use offload::prelude::*;

/// `y[i] = a * x[i] + y[i]`, one element per GPU thread.
#[kernel]
fn saxpy(a: f32, x: &[f32], y: &mut [f32]) {
    if let Some((i, yi)) = y.at_thread() {
        *yi = a * x[i] + *yi;
    }
}

/// `out[i] = c0 + c1·x[i] + c2·x[i]²` with a grid-stride loop, so any launch
/// size covers every element; `c` is passed by value.
#[kernel]
fn poly(c: [f32; 3], x: &[f32], out: &mut [f32]) {
    for (i, o) in out.grid_stride() {
        let v = x[i];
        *o = c[0] + v * (c[1] + v * c[2]);
    }
}

/// 128-bit division in a kernel: the device link expands it inline.
#[kernel]
fn div128(d: u64, x: &[u64], q: &mut [u64]) {
    if let Some((i, qi)) = q.at_thread() {
        let wide = ((x[i] as u128) << 64) | 0x1234_5678;
        *qi = (wide / d as u128) as u64;
    }
}

/// A helper shared by host and device code.
fn input(i: usize) -> f32 {
    (i % 1000) as f32 / 1000.0
}

#[offload::host]
fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

/// Counts elements whose relative error against `want` exceeds `tol`.
#[offload::host]
fn count_wrong(got: &[f32], want: impl Fn(usize) -> f64, tol: f64) -> usize {
    got.iter().enumerate().filter(|&(i, &g)| (g as f64 - want(i)).abs() > tol * want(i).abs().max(1.0)).count()
}

#[offload::host]
fn run() -> Result<(), offload::Error> {
    println!("offload backend: {}", offload::backend()?);
    let n = 1_000_003usize;
    let x: Vec<f32> = (0..n).map(input).collect();
    let y0: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
    let a = 2.5f32;

    // 1. Host data, mapped to the device for the launch and back.
    let mut y = y0.clone();
    saxpy(offload::for_len(n), a, &x, &mut y)?;
    let bad_saxpy = count_wrong(&y, |i| a as f64 * x[i] as f64 + y0[i] as f64, 1e-6);
    println!("saxpy    n={n}: {bad_saxpy} wrong");

    // 2. A by-value array argument and a grid-stride loop over a small grid.
    let c = [1.0f32, -0.5, 0.25];
    let mut out = vec![f32::NAN; n];
    poly(offload::LaunchConfig::new(64u32, 128u32), c, &x, &mut out)?;
    let bad_poly = count_wrong(
        &out,
        |i| {
            let v = x[i] as f64;
            c[0] as f64 + v * (c[1] as f64 + v * c[2] as f64)
        },
        1e-5,
    );
    println!("poly     n={n}: {bad_poly} wrong");

    // 3. Device-resident data: ten launches, two transfers.
    let x_dev = offload::DeviceBuffer::from_slice(&x)?;
    let mut y_dev = offload::DeviceBuffer::from_slice(&y0)?;
    for _ in 0..10 {
        saxpy(offload::for_len(n), a, &x_dev, &mut y_dev)?;
    }
    let y10 = y_dev.to_vec()?;
    let bad_resident = count_wrong(&y10, |i| 10.0 * a as f64 * x[i] as f64 + y0[i] as f64, 1e-5);
    println!("resident n={n}: {bad_resident} wrong (10 launches on DeviceBuffers)");

    // 4. u128 arithmetic.
    let m = 4096usize;
    let xs: Vec<u64> = (0..m as u64).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15)).collect();
    let mut q = vec![0u64; m];
    let d = 1_000_000_007u64;
    div128(offload::for_len(m), d, &xs, &mut q)?;
    let bad_div = (0..m).filter(|&i| q[i] != ((((xs[i] as u128) << 64) | 0x1234_5678) / d as u128) as u64).count();
    println!("div128   n={m}: {bad_div} wrong");

    if bad_saxpy + bad_poly + bad_resident + bad_div > 0 {
        eprintln!("error: results differ from the host reference");
        std::process::exit(1);
    }
    println!("all results match the host reference");
    Ok(())
}
