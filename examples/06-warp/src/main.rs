//! Sum of 2^26 f32 (default; `reduction <log2 n>`): grid-stride partial sums,
//! warp shuffles (`reduce_sum`), shared memory across the block's warps; one
//! partial per block, added on the host in f64. Checked against an f64 sum
//! of the inputs; exits non-zero on a mismatch.

use offload::atomic::{AtomicF32, Ordering::Relaxed};
use offload::{block_idx, kernel, shared_array, sync_threads, warp};

#[kernel]
fn block_sums(x: &[f32], partials: &[AtomicF32]) {
    let mut s = 0.0f32;
    for i in offload::grid_stride(x.len()) {
        s += x[i];
    }
    s = warp::reduce_sum(s);
    let per_warp = shared_array!(f32; 32);
    if warp::lane_id() == 0 {
        per_warp.set(warp::warp_id() as usize, s);
    }
    sync_threads();
    if warp::warp_id() == 0 {
        let warps = (offload::block_dim().x / 32) as usize;
        let v = if (warp::lane_id() as usize) < warps { per_warp.get(warp::lane_id() as usize) } else { 0.0 };
        let total = warp::reduce_sum(v);
        if warp::lane_id() == 0 {
            partials[block_idx().x as usize].store(total, Relaxed);
        }
    }
}

#[offload::host]
fn main() {
    let log2n: u32 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(26);
    let n = 1usize << log2n;
    println!("backend: {}", offload::backend().map(|b| b.to_string()).unwrap_or_else(|e| e.to_string()));
    let x: Vec<f32> = (0..n).map(|i| ((i as u64 * 7919) % 1000) as f32 / 1000.0).collect();
    let blocks = 1024u32;
    let partials: Vec<AtomicF32> = (0..blocks).map(|_| AtomicF32::new(f32::NAN)).collect();
    let t = std::time::Instant::now();
    if let Err(e) = block_sums(offload::LaunchConfig::new(blocks, 256u32), &x, &partials) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
    let ms = t.elapsed().as_secs_f64() * 1e3;
    let got: f64 = partials.iter().map(|p| p.load(Relaxed) as f64).sum();
    let want: f64 = x.iter().map(|&v| v as f64).sum();
    let rel = ((got - want) / want).abs();
    println!("reduction: n = 2^{log2n}, sum = {got:.6} (f64 reference {want:.6}, rel. error {rel:.2e}), {ms:.1} ms incl. transfers");
    println!("reduction: partial[0] bits {:#010x}", partials[0].load(Relaxed).to_bits());
    if !(rel < 1e-5) {
        eprintln!("error: relative error {rel:e} above 1e-5");
        std::process::exit(1);
    }
}
