//! Tutorial 4: shared memory, a block's scratchpad.
//!
//!     cargo offload run --release -p matmul [-- <n>]     (n = 256 by default; 2048 on a GPU)
//!
//! `C = A·B` for n×n f32 matrices (n a multiple of 16). Each element of `C`
//! is a dot product of a row of `A` and a column of `B`; computed
//! naively, every thread reads 2n values from global memory, and each value
//! of `A` and `B` is read n times in all.
//!
//! The threads of a block can share a small, fast memory on the chip:
//! *shared memory* (CUDA's `__shared__`). Here each 16×16 block of threads
//! computes a 16×16 tile of `C`. It walks along the row of tiles of `A` and
//! the column of tiles of `B`; at each stop every thread loads one element
//! of each tile into shared memory, the block waits until all have done so,
//! every thread then reads the 16 values it needs from shared memory, and
//! the block waits again before the tiles are overwritten. Each value now
//! comes from global memory n/16 times instead of n times.
//!
//! - `shared_array!(f32; 256)`: a 256-element array in shared memory, one per
//!   block, the same for all of its threads. Its contents start unspecified.
//! - `sync_threads()`: the block barrier (`__syncthreads()`). Every thread of
//!   the block waits there until all have arrived; writes to shared memory
//!   made before it are seen by every thread of the block after it. Every
//!   thread of a block must reach the same barriers (the host fallback
//!   reports a barrier in divergent code as `Error::Divergence`).
//! - `get`/`set`: element access that cannot be a data race (a missing
//!   barrier gives stale values, never undefined behaviour).
//!
//! The launch is 2-D: a grid of (n/16)×(n/16) blocks of 16×16 threads.
//! `global_thread_idx()` is the thread's (x, y) position in the whole grid:
//! its column and row of `C`. Because the grid's x-extent is n, the thread's
//! `global_index()` is `row·n + col`, so `at_thread()` hands each thread its
//! own element of `C`, stored row-major.
//!
//! 512 entries of `C` (all of them when n ≤ 64) are checked against dot
//! products computed on the host in f64; the program exits non-zero if one
//! is off by more than 1e-5 of the sum of its terms' magnitudes.

use offload::{global_thread_idx, kernel, shared_array, sync_threads, thread_idx, LaunchConfig};

/// The side of a tile and of a block.
const TILE: usize = 16;

#[kernel]
fn matmul(n: u32, a: &[f32], b: &[f32], c: &mut [f32]) {
    let n = n as usize;
    // One tile of A and one of B per block, 16×16 each, row-major.
    let ta = shared_array!(f32; 256);
    let tb = shared_array!(f32; 256);
    let (tx, ty) = (thread_idx().x as usize, thread_idx().y as usize);
    let g = global_thread_idx();
    let (row, col) = (g.y as usize, g.x as usize);
    let mut acc = 0.0f32;
    for t in 0..n / TILE {
        // Each thread loads one element of each tile ...
        ta.set(ty * TILE + tx, a[row * n + t * TILE + tx]);
        tb.set(ty * TILE + tx, b[(t * TILE + ty) * n + col]);
        // ... and waits until the whole block has: the tiles are complete.
        sync_threads();
        for k in 0..TILE {
            acc = offload::math::fma(ta.get(ty * TILE + k), tb.get(k * TILE + tx), acc);
        }
        // Nobody overwrites the tiles while another thread still reads them.
        sync_threads();
    }
    // The grid's x-extent is n, so this thread's element is (row, col).
    if let Some((_, e)) = c.at_thread() {
        *e = acc;
    }
}

#[offload::host]
fn main() -> Result<(), offload::Error> {
    let n: usize = match std::env::args().nth(1).map(|s| s.parse()) {
        None => 256,
        Some(Ok(n)) if n > 0 && n % TILE == 0 && n <= 16384 => n,
        Some(_) => {
            eprintln!(
                "usage: matmul [n], n a positive multiple of {TILE}, at most 16384 (default 256)"
            );
            std::process::exit(2);
        }
    };
    println!("offload backend: {}", offload::backend()?);
    let a: Vec<f32> = (0..n * n)
        .map(|i| ((i * 37 % 101) as f32 - 50.0) / 64.0)
        .collect();
    let b: Vec<f32> = (0..n * n)
        .map(|i| ((i * 53 % 97) as f32 - 48.0) / 32.0)
        .collect();
    let mut c = vec![0f32; n * n];
    let blocks = (n / TILE) as u32;
    let t = std::time::Instant::now();
    matmul(
        LaunchConfig::new((blocks, blocks), (TILE as u32, TILE as u32)),
        n as u32,
        &a,
        &b,
        &mut c,
    )?;
    let s = t.elapsed().as_secs_f64();

    let samples: Vec<usize> = if n <= 64 {
        (0..n * n).collect()
    } else {
        (0..512)
            .map(|k| (k * 7_919_993 + 12345) % (n * n))
            .collect()
    };
    let mut worst = 0f64;
    for &idx in &samples {
        let (r, col) = (idx / n, idx % n);
        let terms = (0..n).map(|k| a[r * n + k] as f64 * b[k * n + col] as f64);
        let want: f64 = terms.clone().sum();
        let scale: f64 = terms.map(f64::abs).sum::<f64>().max(1e-30);
        worst = worst.max((c[idx] as f64 - want).abs() / scale);
    }
    let checksum: f64 = c.iter().map(|&v| v as f64).sum();
    println!(
        "matmul: n = {n}, {:.1} ms incl. transfers ({:.1} GFLOP/s), checksum {checksum:.6}, c[0] bits {:#010x}, worst error/Σ|terms| {worst:.2e}",
        s * 1e3,
        2.0 * (n as f64).powi(3) / s / 1e9,
        c[0].to_bits()
    );
    let ok = worst < 1e-5; // false for NaN too
    if !ok {
        eprintln!("error: entry error {worst:e} above 1e-5 of the sum of |terms|");
        std::process::exit(1);
    }
    println!("all results match the host reference");
    Ok(())
}
