//! One step of a softened gravitational n-body system (default 2^16 bodies;
//! `nbody <log2 n>`): each thread sums the acceleration on one body with
//! `rsqrt`, positions on a spiral built with `sin`/`cos`/`exp` in the kernel
//! too. 256 bodies (all when n ≤ 4096) are checked against f64; exits
//! non-zero on a mismatch.

use offload::{kernel, math, DeviceCopy};

#[derive(Clone, Copy, DeviceCopy)]
#[repr(C)]
pub struct Body {
    pub pos: [f32; 3],
    pub mass: f32,
}

const EPS2: f32 = 1e-2;

/// Initial spiral: body i at angle 0.01·i, radius exp(0.0001·i) .. from math.
#[kernel]
fn init(bodies: &mut [Body]) {
    for (i, b) in bodies.grid_stride() {
        let t = i as f32 * 0.01;
        let r = math::exp(i as f32 * 1e-4);
        let (s, c) = math::sincos(t);
        *b = Body { pos: [r * c, r * s, math::sin(3.0 * t) * 0.1], mass: 1.0 + math::abs(math::cos(t)) };
    }
}

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

#[offload::host]
fn main() {
    let log2n: u32 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(16);
    let n = 1usize << log2n;
    println!("backend: {}", offload::backend().map(|b| b.to_string()).unwrap_or_else(|e| e.to_string()));
    let mut bodies = vec![Body { pos: [0.0; 3], mass: 0.0 }; n];
    let mut acc = vec![[0f32; 3]; n];
    let t = std::time::Instant::now();
    let r = init(offload::for_len(n), &mut bodies).and_then(|()| accel(offload::for_len(n), &bodies, &mut acc));
    if let Err(e) = r {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
    let s = t.elapsed().as_secs_f64();
    // check init in f64, then accelerations from the device's positions
    let mut worst_init = 0f64;
    for (i, b) in bodies.iter().enumerate().step_by((n / 256).max(1)) {
        // The kernel's arguments are f32 products; reproduce their rounding
        // (IEEE, the same on every backend) so that what is compared is the
        // accuracy of exp/sin/cos, not that of `i · 0.01` in f32.
        let t32 = i as f32 * 0.01;
        let t = t32 as f64;
        let r = ((i as f32 * 1e-4) as f64).exp();
        let want = [r * t.cos(), r * t.sin(), ((3.0 * t32) as f64).sin() * 0.1];
        for k in 0..3 {
            worst_init = worst_init.max((b.pos[k] as f64 - want[k]).abs() / r);
        }
    }
    let mut worst = 0f64;
    for i in (0..n).step_by((n / 256).max(1)) {
        let p = bodies[i].pos.map(|v| v as f64);
        let (mut a, mut scale) = ([0f64; 3], 0f64);
        for b in &bodies {
            let d = [b.pos[0] as f64 - p[0], b.pos[1] as f64 - p[1], b.pos[2] as f64 - p[2]];
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
    let checksum: f64 = acc.iter().map(|a| a[0] as f64 + a[1] as f64 + a[2] as f64).sum();
    println!(
        "nbody: n = 2^{log2n}, {:.1} ms incl. transfers, checksum {checksum:.6}, init error {worst_init:.2e}, accel error/Σ|terms| {worst:.2e}",
        s * 1e3
    );
    if !(worst_init < 1e-5 && worst < 1e-5) {
        eprintln!("error: init error {worst_init:e} or acceleration error {worst:e} above 1e-5");
        std::process::exit(1);
    }
}
