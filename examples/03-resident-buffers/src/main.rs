//! Tutorial 3: data that stays on the GPU across launches.
//!
//!     cargo offload run --release -p resident-buffers [-- <log2 n> <steps>]
//!
//! (2^18 points and 100 steps by default). The launches of tutorial 2 copy
//! their slices every time. A computation that launches kernel after kernel
//! on the same data should copy it once: a `DeviceBuffer` is GPU memory that
//! lives until it is dropped (OpenMP's `target data` region), and a kernel's
//! `&[T]` / `&mut [T]` parameter given `&buf` / `&mut buf` uses it in place,
//! with no copy.
//!
//! | call | copies |
//! | --- | --- |
//! | `DeviceBuffer::from_slice(&v)?` | `v` to the GPU, into a new buffer |
//! | `DeviceBuffer::<T>::zeroed(n)?` | nothing: `n` zeroed elements on the GPU |
//! | `kernel(cfg, &buf, &mut out_buf)?` | nothing |
//! | `buf.copy_from_slice(&v)?` | `v` to the GPU, over the buffer's contents |
//! | `buf.copy_to_slice(&mut v)?` / `buf.to_vec()?` | the buffer to the host |
//!
//! The computation: heat flowing along a rod, the explicit finite-difference
//! scheme of the 1-D heat equation, `u'[i] = u[i] + r·(u[i-1] - 2·u[i] +
//! u[i+1])`, with both ends held at their temperature. Each step reads one
//! buffer and writes the other, and the two swap roles. Half-way, the
//! program reads the rod back, heats its middle on the host and writes it
//! back: four copies in all, against three per step (`u` to the GPU, `next`
//! to the GPU and back) when the same steps run on `Vec`s.
//!
//! Both runs are checked against the same scheme computed on the host in
//! f64 (and against each other: the same kernel on the same values gives the
//! same bits); the program exits non-zero on any mismatch.

use offload::prelude::*;

/// One step of the scheme: `next[i]` from `u[i-1..=i+1]`; the ends keep
/// their values. A grid-stride loop, so any launch covers the whole rod.
#[kernel]
fn heat_step(r: f32, u: &[f32], next: &mut [f32]) {
    let last = u.len() - 1;
    for (i, o) in next.grid_stride() {
        *o = if i == 0 || i == last {
            u[i]
        } else {
            u[i] + r * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        };
    }
}

/// `r` = diffusivity·Δt/Δx²; the scheme is stable for `r` ≤ 1/2.
const R: f32 = 0.25;

#[offload::host]
fn main() -> Result<(), offload::Error> {
    let mut args = std::env::args().skip(1).map(|s| s.parse::<usize>().ok());
    let (log2n, steps) = match (args.next(), args.next()) {
        (None, None) => (18, 100),
        (Some(Some(k)), None) => (k, 100),
        (Some(Some(k)), Some(Some(s))) => (k, s),
        _ => (0, 0),
    };
    if !(4..=28).contains(&log2n) || !(2..=100_000).contains(&steps) {
        eprintln!(
            "usage: resident-buffers [log2 n [steps]], 4 <= log2 n <= 28, 2 <= steps <= 100000"
        );
        std::process::exit(2);
    }
    let n = 1usize << log2n;
    println!("offload backend: {}", offload::backend()?);
    println!("rod of n = 2^{log2n} points, {steps} steps, r = {R}");

    // Temperatures in [0, 1): stay in [0, 1] (the scheme averages).
    let u0: Vec<f32> = (0..n)
        .map(|i| ((i * 7919) % 1000) as f32 / 1000.0)
        .collect();
    // Half-way, the middle 1/32 of the rod is heated to 1.
    let middle = n / 2 - n / 64..n / 2 + n / 64;
    let heat = |u: &mut [f32]| u[middle.clone()].fill(1.0);
    let half = steps / 2;
    let cfg = for_len(n);

    // 1. Resident: the rod goes to the GPU once; every step runs on the GPU's copy.
    let t = std::time::Instant::now();
    let mut u = DeviceBuffer::from_slice(&u0)?; // copy 1: to the GPU
    let mut next = DeviceBuffer::<f32>::zeroed(n)?; // no copy
    let mut halfway = vec![0f32; n];
    for step in 0..steps {
        if step == half {
            u.copy_to_slice(&mut halfway)?; // copy 2: to the host
            let mut heated = halfway.clone();
            heat(&mut heated);
            u.copy_from_slice(&heated)?; // copy 3: to the GPU
        }
        heat_step(cfg, R, &u, &mut next)?; // no copies
                                           // The new temperatures are the input of the next step: swap the two
                                           // buffers (their handles; the data stays where it is).
        std::mem::swap(&mut u, &mut next);
    }
    let resident = u.to_vec()?; // copy 4: to the host
    let t_resident = t.elapsed().as_secs_f64();
    println!(
        "DeviceBuffers: {steps} launches, 4 copies:          {:8.2} ms",
        t_resident * 1e3
    );

    // 2. The same steps on Vecs: every launch copies `u` to the GPU and
    //    `next` to the GPU and back.
    let t = std::time::Instant::now();
    let (mut u, mut next) = (u0.clone(), vec![0f32; n]);
    for step in 0..steps {
        if step == half {
            heat(&mut u);
        }
        heat_step(cfg, R, &u, &mut next)?;
        std::mem::swap(&mut u, &mut next);
    }
    let t_vecs = t.elapsed().as_secs_f64();
    println!(
        "Vecs:          {steps} launches, {} copies: {:8.2} ms",
        3 * steps,
        t_vecs * 1e3
    );

    // 3. The host reference, in f64.
    let mut want: Vec<f64> = u0.iter().map(|&v| v as f64).collect();
    let mut tmp = want.clone();
    let mut want_halfway = Vec::new();
    for step in 0..steps {
        if step == half {
            want_halfway = want.clone();
            want[middle.clone()].fill(1.0);
        }
        tmp[0] = want[0];
        tmp[n - 1] = want[n - 1];
        for i in 1..n - 1 {
            tmp[i] = want[i] + R as f64 * (want[i - 1] - 2.0 * want[i] + want[i + 1]);
        }
        std::mem::swap(&mut want, &mut tmp);
    }

    // Each f32 step rounds a few times; the scheme does not amplify errors
    // (r ≤ 1/2), so they stay below steps · a few units in the last place of 1.
    let tol = 1e-6 * steps as f64;
    let worst = |got: &[f32], want: &[f64]| {
        got.iter()
            .zip(want)
            .map(|(&g, &w)| (g as f64 - w).abs())
            .fold(0f64, f64::max)
    };
    let (e_half, e_resident, e_vecs) = (
        worst(&halfway, &want_halfway),
        worst(&resident, &want),
        worst(&u, &want),
    );
    println!("largest difference from the f64 reference: half-way {e_half:.2e}, DeviceBuffers {e_resident:.2e}, Vecs {e_vecs:.2e} (tolerance {tol:.0e})");
    let same_bits = resident
        .iter()
        .zip(&u)
        .all(|(a, b)| a.to_bits() == b.to_bits());
    println!("DeviceBuffers and Vecs give the same bits: {same_bits}");
    let ok = e_half <= tol && e_resident <= tol && e_vecs <= tol && same_bits;
    if !ok {
        eprintln!("error: results differ from the host reference");
        std::process::exit(1);
    }
    println!("all results match the host reference");
    Ok(())
}
