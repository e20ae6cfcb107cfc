//! Shared memory (static and dynamic) and the block barrier.

use offload::atomic::{AtomicF32, Ordering::Relaxed};
use offload::{block_dim, block_idx, dynamic_shared, global_index, kernel, shared_array, sync_threads, thread_idx};

/// Tree reduction of each block's 256 inputs in shared memory; thread 0
/// stores the block's sum.
#[kernel]
fn block_sums(x: &[f32], sums: &[AtomicF32]) {
    let s = shared_array!(f32; 256);
    let t = thread_idx().x as usize;
    let i = global_index();
    s.set(t, if i < x.len() { x[i] } else { 0.0 });
    sync_threads();
    let mut stride = 128;
    while stride > 0 {
        if t < stride {
            s.set(t, s.get(t) + s.get(t + stride));
        }
        sync_threads();
        stride /= 2;
    }
    if t == 0 {
        sums[block_idx().x as usize].store(s.get(0), Relaxed);
    }
}

/// Reverses each block's elements through dynamic shared memory; a second,
/// static array in the same kernel checks that both coexist.
#[kernel]
fn reverse_blocks(x: &[u32], y: &mut [u32]) {
    let s = dynamic_shared::<u32>();
    let marker = shared_array!(u32; 1);
    let n = block_dim().x as usize;
    let t = thread_idx().x as usize;
    if t == 0 {
        marker.set(0, 7 + s.len() as u32);
    }
    s.set(t, x[global_index()]);
    sync_threads();
    if let Some((_, yi)) = y.at_thread() {
        *yi = s.get(n - 1 - t) * 1000 + marker.get(0);
    }
}

#[offload::host]
pub fn check() -> Result<String, String> {
    use offload::LaunchConfig;
    // 512 blocks: more than an H200 has SMs (132), so blocks share SMs.
    let n = 1 << 17;
    let x: Vec<f32> = (0..n).map(|i| ((i * 7919) % 1000) as f32 / 8.0).collect();
    let blocks = n / 256;
    let sums: Vec<AtomicF32> = (0..blocks).map(|_| AtomicF32::new(-1.0)).collect();
    block_sums(offload::for_len(n), &x, &sums).map_err(|e| e.to_string())?;
    for (b, s) in sums.iter().enumerate() {
        let want: f64 = x[b * 256..(b + 1) * 256].iter().map(|&v| v as f64).sum();
        // inputs are multiples of 1/8 below 125: every partial sum is exact in f32
        if s.load(Relaxed) as f64 != want {
            return Err(format!("static shared: block {b} sum {} expected {want}", s.load(Relaxed)));
        }
    }
    let total: f64 = sums.iter().map(|s| s.load(Relaxed) as f64).sum();

    let bs = 128u32;
    let m = 64 * bs as usize;
    let xs: Vec<u32> = (0..m as u32).collect();
    let mut ys = vec![0u32; m];
    let cfg = LaunchConfig { shared_mem_bytes: bs * 4, ..LaunchConfig::new(64u32, bs) };
    reverse_blocks(cfg, &xs, &mut ys).map_err(|e| e.to_string())?;
    for (i, &y) in ys.iter().enumerate() {
        let (b, t) = (i / bs as usize, i % bs as usize);
        let want = (b * bs as usize + bs as usize - 1 - t) as u32 * 1000 + 7 + bs;
        if y != want {
            return Err(format!("dynamic shared: y[{i}] = {y}, expected {want}"));
        }
    }
    Ok(format!("static: {blocks} block sums exact (total {total}); dynamic: {m} reversed"))
}
