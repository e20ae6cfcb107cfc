//! 256-bin histogram of 2^26 bytes (default; `histogram <log2 n>`): per-block
//! bins in shared memory (block-scoped atomics), merged into global atomics.
//! Checked exactly against a host count; exits non-zero on a mismatch.

use offload::atomic::{AtomicU32, Ordering::Relaxed, Scope, ScopedAtomic};
use offload::{kernel, shared_array, sync_threads, thread_idx};

#[kernel]
fn histogram(data: &[u8], bins: &[AtomicU32]) {
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

#[offload::host]
fn main() {
    let log2n: u32 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(26);
    let n = 1usize << log2n;
    println!("backend: {}", offload::backend().map(|b| b.to_string()).unwrap_or_else(|e| e.to_string()));
    let mut state = 0x1234_5678_9abc_def0u64;
    let data: Vec<u8> = (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            // skewed: low values more frequent
            ((state >> 24) as u8) & ((state >> 40) as u8 | 0x3f)
        })
        .collect();
    let bins: Vec<AtomicU32> = (0..256).map(|_| AtomicU32::new(0)).collect();
    let t = std::time::Instant::now();
    // 256 threads per block (one per bin), grid-stride over the data
    if let Err(e) = histogram(offload::LaunchConfig::new(1024u32, 256u32), &data, &bins) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
    let ms = t.elapsed().as_secs_f64() * 1e3;
    let mut want = [0u32; 256];
    for &b in &data {
        want[b as usize] += 1;
    }
    let got: Vec<u32> = bins.iter().map(|b| b.load(Relaxed)).collect();
    let checksum: u64 = got.iter().enumerate().map(|(i, &c)| (i as u64 + 1) * c as u64).sum();
    println!("histogram: n = 2^{log2n}, bins[0] = {}, bins[255] = {}, checksum {checksum}, {ms:.1} ms incl. transfers", got[0], got[255]);
    if got[..] != want[..] {
        let k = (0..256).find(|&k| got[k] != want[k]).unwrap();
        eprintln!("error: bin {k} = {}, host count {}", got[k], want[k]);
        std::process::exit(1);
    }
}
