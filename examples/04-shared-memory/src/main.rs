//! C = A·B for n×n f32 matrices (default n = 2048; `matmul <n>`, n a
//! multiple of 16): a 2-D grid of 16×16 blocks, 16×16 tiles of A and B in
//! shared memory. 512 entries (all of C when n ≤ 64) are checked against
//! f64 dot products; exits non-zero on a mismatch.

use offload::{global_thread_idx, kernel, shared_array, sync_threads, thread_idx};

const TILE: usize = 16;

#[kernel]
fn matmul(n: u32, a: &[f32], b: &[f32], c: &mut [f32]) {
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
            acc = offload::math::fma(ta.get(ty * TILE + k), tb.get(k * TILE + tx), acc);
        }
        sync_threads();
    }
    // the grid's x-extent is n, so this thread's element is (row, col)
    if let Some((_, e)) = c.at_thread() {
        *e = acc;
    }
}

#[offload::host]
fn main() {
    let n: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(2048);
    if n == 0 || n % TILE != 0 {
        eprintln!("usage: matmul [n], n a positive multiple of {TILE}");
        std::process::exit(2);
    }
    println!("backend: {}", offload::backend().map(|b| b.to_string()).unwrap_or_else(|e| e.to_string()));
    let a: Vec<f32> = (0..n * n).map(|i| ((i * 37 % 101) as f32 - 50.0) / 64.0).collect();
    let b: Vec<f32> = (0..n * n).map(|i| ((i * 53 % 97) as f32 - 48.0) / 32.0).collect();
    let mut c = vec![0f32; n * n];
    let blocks = (n / TILE) as u32;
    let t = std::time::Instant::now();
    if let Err(e) = matmul(offload::LaunchConfig::new((blocks, blocks), (TILE as u32, TILE as u32)), n as u32, &a, &b, &mut c) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
    let s = t.elapsed().as_secs_f64();
    let samples: Vec<usize> = if n <= 64 { (0..n * n).collect() } else { (0..512).map(|k| (k * 7_919_993 + 12345) % (n * n)).collect() };
    let mut worst = 0f64;
    for &idx in &samples {
        let (r, col) = (idx / n, idx % n);
        let want: f64 = (0..n).map(|k| a[r * n + k] as f64 * b[k * n + col] as f64).sum();
        let scale: f64 = (0..n).map(|k| (a[r * n + k] as f64 * b[k * n + col] as f64).abs()).sum::<f64>().max(1e-30);
        worst = worst.max((c[idx] as f64 - want).abs() / scale);
    }
    let checksum: f64 = c.iter().map(|&v| v as f64).sum();
    println!(
        "matmul: n = {n}, {:.1} ms incl. transfers ({:.1} GFLOP/s), checksum {checksum:.6}, c[0] bits {:#010x}, worst error/Σ|terms| {worst:.2e}",
        s * 1e3,
        2.0 * (n as f64).powi(3) / s / 1e9,
        c[0].to_bits()
    );
    if !(worst < 1e-5) {
        eprintln!("error: entry error {worst:e} above 1e-5 of the sum of |terms|");
        std::process::exit(1);
    }
}
