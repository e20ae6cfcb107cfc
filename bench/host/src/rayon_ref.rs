//! The same computations as `kernels`, written by hand for the CPU with
//! rayon, as one would without offload: the baselines of the ratios.
//! Each produces the same elements as its kernel (the same operations in
//! the same order), except the dot product, whose sum is ordered
//! differently (both are checked against an f64 sum).

use rayon::prelude::*;

use crate::kernels::LOOP_BLOCK;

/// `a = b + s·c`.
pub fn triad(a: &mut [f64], b: &[f64], c: &[f64], s: f64) {
    a.par_iter_mut().zip(b).zip(c).for_each(|((a, b), c)| *a = b + s * c);
}

/// Σ a·b in f32.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.par_iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The accelerations of all bodies.
pub fn nbody(pos: &[[f32; 4]], acc: &mut [[f32; 3]]) {
    acc.par_iter_mut().enumerate().for_each(|(i, a)| *a = crate::nbody_one(pos, i));
}

/// `C = A·B`, a row of C per task, the textbook i-j-k loop.
pub fn sgemm_naive(n: usize, a: &[f32], b: &[f32], c: &mut [f32]) {
    c.par_chunks_mut(n).enumerate().for_each(|(row, c)| {
        for (col, e) in c.iter_mut().enumerate() {
            let mut acc = 0.0f32;
            for k in 0..n {
                acc += a[row * n + k] * b[k * n + col];
            }
            *e = acc;
        }
    });
}

/// `C = A·B` with the i-k-j loop a CPU programmer would write (a row of A
/// times B, accumulated row by row: unit stride, vectorized); the same
/// sums in the same order as the i-j-k loop.
pub fn sgemm_ikj(n: usize, a: &[f32], b: &[f32], c: &mut [f32]) {
    c.par_chunks_mut(n).enumerate().for_each(|(row, c)| {
        c.fill(0.0);
        for k in 0..n {
            let x = a[row * n + k];
            for (e, y) in c.iter_mut().zip(&b[k * n..(k + 1) * n]) {
                *e += x * y;
            }
        }
    });
}

/// The barrier loop's rounds, a group of `LOOP_BLOCK` values at a time.
pub fn barrier_loop(rounds: u32, out: &mut [u32]) {
    out.par_chunks_mut(LOOP_BLOCK).enumerate().for_each(|(g, out)| {
        let mut v: [u32; LOOP_BLOCK] = core::array::from_fn(|t| (g * LOOP_BLOCK + t) as u32);
        for _ in 0..rounds {
            let old = v;
            for (t, x) in v.iter_mut().enumerate() {
                *x = crate::mix(*x, old[t ^ 1]);
            }
        }
        out.copy_from_slice(&v[..out.len()]);
    });
}

/// A 256-bin histogram: per-task counts, added up.
pub fn histogram(data: &[u8]) -> Vec<u32> {
    data.par_chunks(1 << 16)
        .fold(
            || vec![0u32; 256],
            |mut h, chunk| {
                for &x in chunk {
                    h[x as usize] += 1;
                }
                h
            },
        )
        .reduce(
            || vec![0u32; 256],
            |mut a, b| {
                a.iter_mut().zip(&b).for_each(|(x, y)| *x += y);
                a
            },
        )
}

/// One Jacobi step, a row per task.
pub fn jacobi(n: usize, u: &[f32], next: &mut [f32]) {
    next.par_chunks_mut(n).enumerate().for_each(|(row, next)| {
        for (col, e) in next.iter_mut().enumerate() {
            let i = row * n + col;
            *e = if row == 0 || col == 0 || row == n - 1 || col == n - 1 {
                u[i]
            } else {
                0.25 * (u[i - 1] + u[i + 1] + u[i - n] + u[i + n])
            };
        }
    });
}
