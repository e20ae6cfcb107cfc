//! The host fallback against hand-written rayon (issue 14): the same
//! computations as GPU kernels run by `OFFLOAD_DEVICE=host` and as plain
//! CPU code on rayon, in the same run, every result compared.
//!
//! ```text
//! cargo run --release -p host-bench -- [--threads N] [--reps R] [--only CASE,...] [--csv]
//! ```
//!
//! | case | kernel (`kernels`) | CPU code (`rayon_ref`) |
//! | --- | --- | --- |
//! | `triad` | BabelStream's triad, f64, one element per thread | zipped `par_iter_mut` |
//! | `dot` | `examples/06-warp`'s block sums: warp shuffles, shared memory, a barrier | `par_iter().map().sum()` |
//! | `nbody` | one body per thread, all pairs | `par_iter_mut` over bodies |
//! | `sgemm_naive` | one element of C per thread, 2-D launch | rows in parallel, i-j-k loop |
//! | `sgemm_tiled` | `examples/04-shared-memory`'s 16×16 shared-memory tiles, two barriers per tile | the same i-j-k loop (and, for information, the i-k-j loop) |
//! | `barrier_loop` | `--rounds` rounds of publish, `sync_threads`, read the neighbour | the rounds over groups of 256 values |
//! | `histogram` | `examples/05-atomics`' shared-memory histogram (block atomics, barriers) | per-task counts, `fold`/`reduce` |
//! | `jacobi` | one Jacobi step per launch, one element per thread of a 2-D launch | rows in parallel |
//!
//! Each case runs once untimed and checked (every element of ours equal
//! to the CPU code's; the dot product against an f64 sum: ours within
//! 1e-5, rayon's, which adds long runs of f32 in order, within 1e-2), then `--reps` times each, alternating which goes first. It
//! prints the median times and the ratio ours/rayon as speeds (rayon's
//! time / ours: higher is better, 1 is parity) with the issue's target.
//! `--threads N` sets both `OFFLOAD_HOST_THREADS` and rayon's pool;
//! without it each reads its own variable (`OFFLOAD_HOST_THREADS`,
//! `RAYON_NUM_THREADS`). The run always uses the host fallback
//! (`OFFLOAD_DEVICE=host` unless set otherwise, which is an error).
//! Progress goes to stderr; the table (or `--csv` rows
//! `bench,impl,mode,case,size,metric,value`) to stdout. Exit status 1 if a
//! result differs.

mod kernels;
// `#[offload::host]` cannot be put on `mod x;` (a proc-macro attribute on a
// file module is unstable), so the cfg is spelled out.
#[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
mod rayon_ref;
#[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
mod run;

/// Softening of the n-body interaction.
const EPS2: f32 = 1e-2;

/// The acceleration on body `i`; the kernel and the CPU code both call it,
/// so both compute the same operations in the same order.
#[inline(always)]
pub fn nbody_one(pos: &[[f32; 4]], i: usize) -> [f32; 3] {
    let p = pos[i];
    let mut a = [0.0f32; 3];
    for q in pos {
        let d = [q[0] - p[0], q[1] - p[1], q[2] - p[2]];
        let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + EPS2;
        let inv = offload::math::rsqrt(r2);
        let s = q[3] * inv * inv * inv;
        a[0] += d[0] * s;
        a[1] += d[1] * s;
        a[2] += d[2] * s;
    }
    a
}

/// One round of the barrier loop: a value and its neighbour's.
#[inline(always)]
pub fn mix(v: u32, other: u32) -> u32 {
    v.wrapping_mul(0x9e37_79b1).rotate_left(5) ^ other
}

#[offload::host]
fn main() {
    run::main();
}
