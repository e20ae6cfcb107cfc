//! Tutorial 2: how data moves between host and GPU memory.
//!
//!     cargo offload run --release -p saxpy [-- <log2 n>]     (n = 2^22 by default)
//!
//! A kernel's parameter types say what is copied, and when, as OpenMP's
//! `map` clauses do. Every copy happens inside the launcher call: the
//! launcher copies the inputs to the GPU, launches the kernel, waits for it,
//! copies the outputs back and only then returns.
//!
//! | parameter | the host passes | copied |
//! | --- | --- | --- |
//! | `a: T` (`T: DeviceCopy`) | a value | by value, with the launch (no memory copy) |
//! | `x: &[T]` | `&v` of a `Vec`, array, slice, `Box<[T]>` or `PinnedBuffer` | to the GPU before the kernel ("map to"); never back: the kernel cannot write it |
//! | `y: &mut [T]` | `&mut v` of the same | to the GPU before the kernel and back after it ("map tofrom") |
//! | `r: &T` / `m: &mut T` | a reference | to the GPU / to the GPU and back (the body sees `&T` / a one-element `DisjointSlice<T>`) |
//! | `x: &[T]` / `y: &mut [T]` | `&p.mapped()` / `&mut p.mapped_mut()` of a `PinnedBuffer` | nothing: the kernel reads and writes host memory over the bus |
//! | `x: &[T]` / `y: &mut [T]` | `&buf` / `&mut buf` of a `DeviceBuffer` | nothing: the data already is on the GPU (tutorial 3) |
//!
//! Exactly what is passed is copied: `&x[1000..]` copies that part only.
//! `PinnedBuffer` is page-locked host memory: the GPU's copy engines read it
//! directly, so its copies run at the full speed of the bus, where a `Vec`'s
//! go through a staging buffer. On the host fallback nothing is copied at
//! all (the kernel runs on the host's own memory), so the times below only
//! mean something on a GPU; the results are the same on both.
//!
//! Every result is checked against the same computation done on the host in
//! f64, and the checksum against its closed form; the program exits
//! non-zero on any mismatch.

use offload::prelude::*;

/// `y[i] = a·x[i] + y[i]`, one element per thread (tutorial 1).
#[kernel]
fn saxpy(a: f32, x: &[f32], y: &mut [f32]) {
    if let Some((i, yi)) = y.at_thread() {
        *yi += a * x[i];
    }
}

/// A polynomial `c0 + c1·v + c2·v²` and an offset, passed to the kernel by
/// value. A struct needs `#[repr(C)]` (so that host and GPU agree on its
/// layout) and `DeviceCopy` (plain data with no pointers); arrays of
/// `DeviceCopy` types, such as `[f32; 3]`, are `DeviceCopy` already.
#[derive(Clone, Copy, DeviceCopy)]
#[repr(C)]
struct Poly {
    c: [f32; 3],
    offset: f32,
}

/// `out[i] = p(x[i]) + offset`, with a grid-stride loop: each thread takes
/// elements `i`, `i + global_size()`, … so that a launch of any size covers
/// every element.
#[kernel]
fn poly(p: Poly, x: &[f32], out: &mut [f32]) {
    for (i, o) in out.grid_stride() {
        let v = x[i];
        *o = p.c[0] + v * (p.c[1] + v * p.c[2]) + p.offset;
    }
}

#[offload::host]
fn main() -> Result<(), offload::Error> {
    let log2n: u32 = match std::env::args().nth(1).map(|s| s.parse()) {
        None => 22,
        Some(Ok(k)) if (10..=30).contains(&k) => k,
        Some(_) => {
            eprintln!("usage: saxpy [log2 n], with 10 <= log2 n <= 30 (default 22)");
            std::process::exit(2);
        }
    };
    let n = 1usize << log2n;
    println!("offload backend: {}", offload::backend()?);
    println!("n = 2^{log2n} = {n}, {} MiB per array", (4 * n) >> 20);
    let mut wrong = 0;

    // x[i] = (i mod 1024) / 1024 and y = 1 - x: exact in f32.
    let a = 3.0f32;
    let x: Vec<f32> = (0..n).map(|i| (i % 1024) as f32 / 1024.0).collect();
    let y0: Vec<f32> = x.iter().map(|&v| 1.0 - v).collect();
    // y after k launches of y ← a·x + y, in f64.
    let after = |k: f64, i: usize| (1.0 - x[i] as f64) + k * a as f64 * x[i] as f64;

    // 1. Vecs. Each launch copies x to the GPU (4 bytes per element), y to
    //    the GPU and back (8 bytes). The first launch of the program also
    //    starts the GPU and loads the program's GPU code.
    let mut y = y0.clone();
    let first = timed(|| saxpy(for_len(n), a, &x, &mut y))?;
    let second = timed(|| saxpy(for_len(n), a, &x, &mut y))?;
    wrong += count_wrong("Vec", &y, |i| after(2.0, i));
    println!(
        "Vec:            launch 1 {:7.3} ms (start-up included), launch 2 {:7.3} ms, {:.1} GB/s counting 12 bytes per element",
        first * 1e3,
        second * 1e3,
        12.0 * n as f64 / second / 1e9
    );
    // The checksum, Σ y[i] after two launches, has a closed form: per period
    // of 1024 elements, Σ_k 1 + (2a - 1)·k/1024.
    let sum: f64 = y.iter().map(|&v| v as f64).sum();
    let per_period: f64 = (0..1024)
        .map(|k| 1.0 + (2.0 * a as f64 - 1.0) * (k as f64 / 1024.0))
        .sum();
    let expected = per_period * (n / 1024) as f64;
    println!("checksum: {sum:.6} (expected {expected:.6})");
    if (sum - expected).abs() > 1e-9 * expected {
        eprintln!("error: the checksum differs from its closed form");
        wrong += 1;
    }

    // 2. PinnedBuffers: the same two copies per launch, from page-locked
    //    memory. Allocating pinned memory is slow: do it once and reuse it.
    let xp = PinnedBuffer::from_slice(&x)?;
    let mut yp = PinnedBuffer::from_slice(&y0)?;
    let t = timed(|| saxpy(for_len(n), a, &xp, &mut yp))?
        + timed(|| saxpy(for_len(n), a, &xp, &mut yp))?;
    wrong += count_wrong("PinnedBuffer", &yp, |i| after(2.0, i));
    println!(
        "PinnedBuffer:   2 launches {:7.3} ms, the same copies from page-locked memory",
        t * 1e3
    );

    // 3. Mapped PinnedBuffers: no copies. The kernel reads x and reads and
    //    writes y in host memory, across the bus, as it runs: worth it for
    //    data a kernel touches once; data used again belongs on the GPU.
    let t = timed(|| saxpy(for_len(n), a, &xp.mapped(), &mut yp.mapped_mut()))?;
    wrong += count_wrong("mapped", &yp, |i| after(3.0, i));
    println!(
        "mapped pinned:  1 launch   {:7.3} ms, no copies: the kernel uses host memory in place",
        t * 1e3
    );

    // 4. Parts of slices: exactly what is passed is copied. Here x from
    //    element n/4 on and the first n/2 elements of y; the launch has one
    //    thread per element of that part of y, and thread i reads x[n/4 + i].
    let (k, m) = (n / 4, n / 2);
    let mut y = y0.clone();
    saxpy(for_len(m), a, &x[k..], &mut y[..m])?;
    let shifted = |i: usize| {
        let xi = if i < m { x[k + i] as f64 } else { 0.0 };
        y0[i] as f64 + a as f64 * xi
    };
    wrong += count_wrong("sub-slices", &y, shifted);
    println!("sub-slices:     x[{k}..] and y[..{m}] copied, the rest of y untouched");

    // 5. Values: a struct with an array inside travels with the launch, and
    //    a small grid (64 blocks of 128 threads) covers all n elements with
    //    the kernel's grid-stride loop.
    let p = Poly {
        c: [1.0, -0.5, 0.25],
        offset: 0.125,
    };
    let mut out = vec![f32::NAN; n];
    poly(LaunchConfig::new(64u32, 128u32), p, &x, &mut out)?;
    let c = p.c.map(|v| v as f64);
    wrong += count_wrong("poly", &out, |i| {
        let v = x[i] as f64;
        c[0] + v * (c[1] + v * c[2]) + p.offset as f64
    });
    println!("by value:       Poly {{ c: [1, -0.5, 0.25], offset: 0.125 }} on {n} elements from 8192 threads");

    if wrong > 0 {
        eprintln!("error: {wrong} result(s) differ from the host reference");
        std::process::exit(1);
    }
    println!("saxpy: all results match the host reference");
    Ok(())
}

/// Seconds that `f` takes, or its error.
#[offload::host]
fn timed(f: impl FnOnce() -> offload::Result<()>) -> offload::Result<f64> {
    let t = std::time::Instant::now();
    f()?;
    Ok(t.elapsed().as_secs_f64())
}

/// The number of elements of `got` further than a few f32 roundings (a
/// relative 1e-6) from `want`, computed in f64; prints the first few.
#[offload::host]
fn count_wrong(what: &str, got: &[f32], want: impl Fn(usize) -> f64) -> usize {
    let mut wrong = 0;
    for (i, &g) in got.iter().enumerate() {
        let w = want(i);
        if (g as f64 - w).abs() > 1e-6 * w.abs().max(1.0) {
            if wrong < 5 {
                eprintln!("{what}: element {i} is {g}, the host reference {w}");
            }
            wrong += 1;
        }
    }
    wrong
}
