//! Tutorial 7: generic kernels.
//!
//!     cargo offload run --release -p generics
//!
//! A kernel may have type parameters, like any `fn`. Host code launches it
//! with the types it needs, and `cargo offload` compiles one GPU entry point
//! for each type the host code uses: no list of instantiations to keep up to
//! date. The build says what it found:
//!
//!     Generic kernel at examples/07-generics/src/main.rs:… instantiated for <f32>, <f64>, <i32>
//!
//! (It reads them from the host binary's symbols after a first host build,
//! then builds the GPU code again; later builds repeat that only for new
//! instantiations.) The launches may sit in generic host code, as here in
//! `check::<T>`: what counts is the types the program ends up using.
//!
//! Each type argument must be something the GPU can hold (`DeviceCopy`:
//! numbers, `bool`, arrays and `#[repr(C)]` structs of them); any other type
//! is a compile error at the launch. Const generic parameters are not
//! supported yet.
//!
//! `y ← a·x + y` then a clamp to `[lo, hi]`, for f32, f64 and i32, each
//! checked against the same computation on the host in f64 (exactly for
//! i32); the program exits non-zero on a mismatch.

use core::ops::{Add, Mul};
use offload::prelude::*;

/// `y[i] = a·x[i] + y[i]` for any element type with `*` and `+`.
#[kernel]
fn axpy<T: Copy + Mul<Output = T> + Add<Output = T>>(a: T, x: &[T], y: &mut [T]) {
    if let Some((i, yi)) = y.at_thread() {
        *yi = a * x[i] + *yi;
    }
}

/// Clamps every element of `v` to `[lo, hi]`; any type with `<`.
#[kernel]
fn clamp<T: Copy + PartialOrd>(lo: T, hi: T, v: &mut [T]) {
    for (_, x) in v.grid_stride() {
        if *x < lo {
            *x = lo;
        } else if *x > hi {
            *x = hi;
        }
    }
}

/// Runs both kernels on `T`s made from `x` and `y` (small integers, exact
/// in every type here) and counts the elements further than `tol`
/// (relative) from the host's f64 computation.
#[offload::host]
fn check<T>(a: T, lo: T, hi: T, x: &[T], y0: &[T], tol: f64) -> Result<usize, offload::Error>
where
    T: DeviceCopy + Copy + Mul<Output = T> + Add<Output = T> + PartialOrd + Into<f64>,
{
    let n = x.len();
    let mut y = y0.to_vec();
    // `axpy::<T>` and `clamp::<T>`: T is inferred from the arguments.
    axpy(for_len(n), a, x, &mut y)?;
    clamp(for_len(n), lo, hi, &mut y)?;
    let (a, lo, hi) = (a.into(), lo.into(), hi.into());
    let wrong = (0..n)
        .filter(|&i| {
            let want = (a * x[i].into() + y0[i].into()).clamp(lo, hi);
            (y[i].into() - want).abs() > tol * want.abs().max(1.0)
        })
        .count();
    println!(
        "axpy and clamp for {:3}: n = {n}, {wrong} wrong",
        core::any::type_name::<T>()
    );
    Ok(wrong)
}

#[offload::host]
fn main() -> Result<(), offload::Error> {
    println!("offload backend: {}", offload::backend()?);
    let n = 100_003;
    // x in -500..500, y in -64..64: a·x + y stays far inside i32's range.
    let x: Vec<i32> = (0..n).map(|i| (i * 7919 % 1000) - 500).collect();
    let y: Vec<i32> = (0..n).map(|i| (i * 31 % 128) - 64).collect();
    let xf: Vec<f32> = x.iter().map(|&v| v as f32 / 8.0).collect();
    let yf: Vec<f32> = y.iter().map(|&v| v as f32 / 8.0).collect();
    let xd: Vec<f64> = x.iter().map(|&v| v as f64 / 1024.0).collect();
    let yd: Vec<f64> = y.iter().map(|&v| v as f64 / 1024.0).collect();

    let wrong = check(2.5f32, -100.0, 100.0, &xf, &yf, 1e-6)?
        + check(-0.75f64, -0.25, 0.3, &xd, &yd, 1e-15)?
        + check(3i32, -1000, 1200, &x, &y, 0.0)?;
    if wrong > 0 {
        eprintln!("error: {wrong} element(s) differ from the host reference");
        std::process::exit(1);
    }
    println!("all results match the host reference");
    Ok(())
}
