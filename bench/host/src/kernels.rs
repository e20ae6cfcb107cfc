//! The kernels, written as for a GPU (each one the usual CUDA shape of its
//! computation); `rayon_ref` has the same computations written for the CPU.

use offload::atomic::{AtomicF32, AtomicU32, Ordering::Relaxed, Scope, ScopedAtomic};
use offload::{block_dim, block_idx, global_thread_idx, kernel, shared_array, sync_threads, thread_idx, warp};

/// Side of a tile (and of a block) of the tiled SGEMM.
pub const TILE: usize = 16;
/// Threads per block of the barrier loop (and the CPU version's group size).
pub const LOOP_BLOCK: usize = 256;

/// BabelStream's triad, one element per thread: `a = b + s·c`.
#[kernel(same_len(a, b, c))]
pub fn triad(a: &mut [f64], b: &[f64], c: &[f64], s: f64) {
    for (i, ai) in a.grid_stride() {
        *ai = b[i] + s * c[i];
    }
}

/// `examples/06-warp`'s `block_sums` for a·b: a grid-stride partial sum per
/// thread, `reduce_sum` over each warp, the warps' sums through shared
/// memory after a barrier, and warp 0 reduces them to one value per block.
#[kernel(same_len(a, b))]
pub fn dot(a: &[f32], b: &[f32], partials: &[AtomicF32]) {
    let mut s = 0.0f32;
    for i in offload::grid_stride(a.len()) {
        s += a[i] * b[i];
    }
    s = warp::reduce_sum(s);
    let per_warp = shared_array!(f32; 32);
    if warp::lane_id() == 0 {
        per_warp.set(warp::warp_id() as usize, s);
    }
    sync_threads();
    if warp::warp_id() == 0 {
        let warps = (block_dim().x / 32) as usize;
        let lane = warp::lane_id() as usize;
        let total = warp::reduce_sum(if lane < warps { per_warp.get(lane) } else { 0.0 });
        if lane == 0 {
            partials[block_idx().x as usize].store(total, Relaxed);
        }
    }
}

/// The acceleration on body `i` (`pos` holds x, y, z, mass):
/// Σ_j m_j·d / (|d|² + ε²)^(3/2), d = p_j − p_i.
#[kernel]
pub fn nbody(pos: &[[f32; 4]], acc: &mut [[f32; 3]]) {
    if let Some((i, out)) = acc.at_thread() {
        *out = crate::nbody_one(pos, i);
    }
}

/// `C = A·B` for n×n row-major matrices, one element of C per thread of a
/// 2-D launch whose x-extent is n.
#[kernel]
pub fn sgemm_naive(n: u32, a: &[f32], b: &[f32], c: &mut [f32]) {
    let n = n as usize;
    let g = global_thread_idx();
    let (row, col) = (g.y as usize, g.x as usize);
    if let Some((_, e)) = c.at_thread() {
        let mut acc = 0.0f32;
        for k in 0..n {
            acc += a[row * n + k] * b[k * n + col];
        }
        *e = acc;
    }
}

/// `examples/04-shared-memory`'s tiled SGEMM (16×16 tiles of A and B in
/// shared memory, two barriers per tile), with a multiply and an add where
/// the example has `fma`, so that every element equals the CPU loops'.
#[kernel]
pub fn sgemm_tiled(n: u32, a: &[f32], b: &[f32], c: &mut [f32]) {
    let n = n as usize;
    let ta = shared_array!(f32; 256);
    let tb = shared_array!(f32; 256);
    let (tx, ty) = (thread_idx().x as usize, thread_idx().y as usize);
    let g = global_thread_idx();
    let (row, col) = (g.y as usize, g.x as usize);
    let mut acc = 0.0f32;
    for t in 0..n / TILE {
        ta.set(ty * TILE + tx, a[row * n + t * TILE + tx]);
        tb.set(ty * TILE + tx, b[(t * TILE + ty) * n + col]);
        sync_threads();
        for k in 0..TILE {
            acc += ta.get(ty * TILE + k) * tb.get(k * TILE + tx);
        }
        sync_threads();
    }
    if let Some((_, e)) = c.at_thread() {
        *e = acc;
    }
}

/// A barrier-bound loop: `rounds` times, every thread publishes its value
/// in shared memory, waits at the barrier, and mixes in its neighbour's
/// (`t ^ 1`); two buffers alternate, so one barrier per round suffices.
#[kernel]
pub fn barrier_loop(rounds: u32, out: &mut [u32]) {
    let bufs = [shared_array!(u32; LOOP_BLOCK), shared_array!(u32; LOOP_BLOCK)];
    let t = thread_idx().x as usize;
    let mut v = offload::global_index() as u32;
    for r in 0..rounds as usize {
        let buf = bufs[r % 2];
        buf.set(t, v);
        sync_threads();
        v = crate::mix(v, buf.get(t ^ 1));
    }
    if let Some((_, o)) = out.at_thread() {
        *o = v;
    }
}

/// `examples/05-atomics`' `histogram_shared`: 256 per-block bins in shared
/// memory (block-scope atomics), merged into the global bins at the end.
/// Launch with 256 threads per block.
#[kernel]
pub fn histogram(data: &[u8], bins: &[AtomicU32]) {
    let local = shared_array!(u32; 256);
    let t = thread_idx().x as usize;
    local.set(t, 0);
    sync_threads();
    for i in offload::grid_stride(data.len()) {
        local.atomic(data[i] as usize).fetch_add_scoped(1, Relaxed, Scope::Block);
    }
    sync_threads();
    let c = local.get(t);
    if c != 0 {
        bins[t].fetch_add(c, Relaxed);
    }
}

/// One Jacobi step of the heat equation on an n×n grid, as a newcomer
/// writes it: one element per thread of a 2-D launch (x-extent n), the
/// boundary kept.
#[kernel]
pub fn jacobi(n: u32, u: &[f32], next: &mut [f32]) {
    let n = n as usize;
    let g = global_thread_idx();
    let (row, col) = (g.y as usize, g.x as usize);
    if let Some((i, e)) = next.at_thread() {
        *e = if row == 0 || col == 0 || row == n - 1 || col == n - 1 {
            u[i]
        } else {
            0.25 * (u[i - 1] + u[i + 1] + u[i - n] + u[i + n])
        };
    }
}
