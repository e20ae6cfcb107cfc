//! Further example: math in kernels.
//!
//!     cargo offload run --release -p nbody [-- <log2 n>]     (2^12 bodies by default; 2^16 on a GPU)
//!
//! `f32::sqrt`, `f64::sin` and friends belong to `std`, which does not exist
//! on the GPU. `offload::math` has them for kernels, generic over f32 and
//! f64: `sqrt`, `rsqrt`, `exp`, `log`, `sin`, `cos`, `sincos`, `pow`, `fma`,
//! … On the GPU they are CUDA's own (the `sqrt.rn` instruction, libdevice's
//! `__nv_sinf`, …, within the error bounds CUDA documents), on the host
//! fallback `std`'s. Integer arithmetic is all there, 128-bit included
//! (the device link expands `u128` division, which the GPU has no
//! instruction for).
//!
//! One step of a softened gravitational n-body system: `init` places the
//! bodies on a spiral with `exp`, `sincos`, `sin`, `cos`; `accel` sums the
//! acceleration on each body with `rsqrt`. Then `div128` divides 128-bit
//! numbers. 256 bodies (all when n ≤ 4096) are checked against the same
//! computation in f64 on the host, the divisions exactly; the program exits
//! non-zero on a mismatch.

use offload::{kernel, math, DeviceCopy};

#[derive(Clone, Copy, DeviceCopy)]
#[repr(C)]
pub struct Body {
    pub pos: [f32; 3],
    pub mass: f32,
}

/// Softening: keeps the force finite when two bodies are close.
const EPS2: f32 = 1e-2;

/// Body `i` at angle 0.01·i on a spiral of radius exp(0.0001·i).
#[kernel]
fn init(bodies: &mut [Body]) {
    for (i, b) in bodies.grid_stride() {
        let t = i as f32 * 0.01;
        let r = math::exp(i as f32 * 1e-4);
        let (s, c) = math::sincos(t);
        *b = Body {
            pos: [r * c, r * s, math::sin(3.0 * t) * 0.1],
            mass: 1.0 + math::abs(math::cos(t)),
        };
    }
}

/// The acceleration on body `i`: Σ_j m_j·d / (|d|² + ε²)^(3/2), d = p_j − p_i.
#[kernel]
fn accel(bodies: &[Body], out: &mut [[f32; 3]]) {
    if let Some((i, o)) = out.at_thread() {
        let p = bodies[i].pos;
        let mut a = [0.0f32; 3];
        for b in bodies {
            let d = [b.pos[0] - p[0], b.pos[1] - p[1], b.pos[2] - p[2]];
            let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + EPS2;
            let inv = math::rsqrt(r2);
            let s = b.mass * inv * inv * inv;
            a[0] += d[0] * s;
            a[1] += d[1] * s;
            a[2] += d[2] * s;
        }
        *o = a;
    }
}

/// `q[i] = (x[i]·2^64 + 0x1234_5678) / d`, truncated to 64 bits.
#[kernel]
fn div128(d: u64, x: &[u64], q: &mut [u64]) {
    if let Some((i, qi)) = q.at_thread() {
        let wide = ((x[i] as u128) << 64) | 0x1234_5678;
        *qi = (wide / d as u128) as u64;
    }
}

#[offload::host]
fn main() -> Result<(), offload::Error> {
    let log2n: u32 = match std::env::args().nth(1).map(|s| s.parse()) {
        None => 12,
        Some(Ok(k)) if (5..=20).contains(&k) => k,
        Some(_) => {
            eprintln!("usage: nbody [log2 n], with 5 <= log2 n <= 20 (default 12)");
            std::process::exit(2);
        }
    };
    let n = 1usize << log2n;
    println!("offload backend: {}", offload::backend()?);
    let mut bodies = vec![
        Body {
            pos: [0.0; 3],
            mass: 0.0
        };
        n
    ];
    let mut acc = vec![[0f32; 3]; n];
    let t = std::time::Instant::now();
    init(offload::for_len(n), &mut bodies)?;
    accel(offload::for_len(n), &bodies, &mut acc)?;
    let s = t.elapsed().as_secs_f64();

    // Check init in f64, then the accelerations from the GPU's positions.
    let mut worst_init = 0f64;
    for (i, b) in bodies.iter().enumerate().step_by((n / 256).max(1)) {
        // The kernel's arguments are f32 products; reproduce their rounding
        // (IEEE, the same on every backend) so that what is compared is the
        // accuracy of exp/sin/cos, not that of `i · 0.01` in f32.
        let t32 = i as f32 * 0.01;
        let t = t32 as f64;
        let r = ((i as f32 * 1e-4) as f64).exp();
        let want = [r * t.cos(), r * t.sin(), ((3.0 * t32) as f64).sin() * 0.1];
        for (&got, want) in b.pos.iter().zip(want) {
            worst_init = worst_init.max((got as f64 - want).abs() / r);
        }
    }
    let mut worst = 0f64;
    for i in (0..n).step_by((n / 256).max(1)) {
        let p = bodies[i].pos.map(|v| v as f64);
        let (mut a, mut scale) = ([0f64; 3], 0f64);
        for b in &bodies {
            let d = [
                b.pos[0] as f64 - p[0],
                b.pos[1] as f64 - p[1],
                b.pos[2] as f64 - p[2],
            ];
            let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + EPS2 as f64;
            let s = b.mass as f64 / (r2 * r2.sqrt());
            for k in 0..3 {
                a[k] += d[k] * s;
            }
            scale += s * r2.sqrt();
        }
        for k in 0..3 {
            worst = worst.max((acc[i][k] as f64 - a[k]).abs() / scale);
        }
    }
    let checksum: f64 = acc
        .iter()
        .map(|a| a[0] as f64 + a[1] as f64 + a[2] as f64)
        .sum();
    println!(
        "nbody: n = 2^{log2n}, {:.1} ms incl. transfers, checksum {checksum:.6}, init error {worst_init:.2e}, accel error/Σ|terms| {worst:.2e}",
        s * 1e3
    );
    let mut wrong = usize::from(!(worst_init < 1e-5 && worst < 1e-5));
    if wrong > 0 {
        eprintln!("error: init error {worst_init:e} or acceleration error {worst:e} above 1e-5");
    }

    // 128-bit division.
    let m = 4096usize;
    let xs: Vec<u64> = (0..m as u64)
        .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
        .collect();
    let mut q = vec![0u64; m];
    let d = 1_000_000_007u64;
    div128(offload::for_len(m), d, &xs, &mut q)?;
    let bad = (0..m)
        .filter(|&i| q[i] != ((((xs[i] as u128) << 64) | 0x1234_5678) / d as u128) as u64)
        .count();
    println!("div128: m = {m}, {bad} wrong");
    wrong += bad;

    if wrong > 0 {
        std::process::exit(1);
    }
    println!("all results match the host reference");
    Ok(())
}
