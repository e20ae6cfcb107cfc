//! Tutorial 5: atomics, for results that many threads add to.
//!
//!     cargo offload run --release -p histogram [-- <log2 n>]     (n = 2^24 by default)
//!
//! A 256-bin histogram of n bytes. Any thread may have to count into any
//! bin, at the same time as others count into it, so the bins cannot be a
//! `&mut [u32]` (whose elements each belong to one thread, tutorial 1), and
//! a plain read-modify-write would lose counts. An atomic `fetch_add` never
//! does: the hardware performs each one whole, one after the other.
//!
//! - A kernel parameter `bins: &[AtomicU32]` (`offload::atomic`, which has
//!   `core`'s integer atomics and `AtomicF32`/`AtomicF64`) takes the host's
//!   atomics: they are copied to the GPU before the launch and back after it,
//!   so the host reads the counts with `load` afterwards.
//! - `fetch_add(1, Relaxed)`: `Relaxed` is enough for counting: only the
//!   final sums matter, not the order in which other memory is seen.
//! - Shared memory has atomics too: `SharedArray::atomic(i)`. With
//!   `fetch_add_scoped(…, Scope::Block)` the operation is atomic among the
//!   threads of the block only, which is all that share that memory and
//!   cheaper than device-wide atomicity (CUDA's `atomicAdd_block`).
//!
//! Two versions: `histogram_global` adds every byte to the global bins;
//! `histogram_shared` counts into per-block bins in shared memory and adds
//! each block's 256 counts to the global bins once, at the end, so that the
//! many threads adding to one popular bin wait on a fast on-chip memory. Both
//! are checked exactly against a count made on the host; the program exits
//! non-zero on a mismatch.

use offload::atomic::{AtomicU32, Ordering::Relaxed, Scope, ScopedAtomic};
use offload::{kernel, shared_array, sync_threads, thread_idx, LaunchConfig};

/// Every byte is one atomic add to its bin in global memory.
#[kernel]
fn histogram_global(data: &[u8], bins: &[AtomicU32]) {
    for i in offload::grid_stride(data.len()) {
        bins[data[i] as usize].fetch_add(1, Relaxed);
    }
}

/// Per-block bins in shared memory, merged into the global bins at the end.
/// Launch with 256 threads per block: thread `t` clears and merges bin `t`.
#[kernel]
fn histogram_shared(data: &[u8], bins: &[AtomicU32]) {
    let local = shared_array!(u32; 256);
    let t = thread_idx().x as usize;
    local.set(t, 0);
    // All 256 bins are cleared before anyone counts.
    sync_threads();
    for i in offload::grid_stride(data.len()) {
        local
            .atomic(data[i] as usize)
            .fetch_add_scoped(1, Relaxed, Scope::Block);
    }
    // All of the block's counts are in before they are merged.
    sync_threads();
    let c = local.get(t);
    if c != 0 {
        bins[t].fetch_add(c, Relaxed);
    }
}

#[offload::host]
fn main() -> Result<(), offload::Error> {
    let log2n: u32 = match std::env::args().nth(1).map(|s| s.parse()) {
        None => 24,
        Some(Ok(k)) if (8..=30).contains(&k) => k,
        Some(_) => {
            eprintln!("usage: histogram [log2 n], with 8 <= log2 n <= 30 (default 24)");
            std::process::exit(2);
        }
    };
    let n = 1usize << log2n;
    println!("offload backend: {}", offload::backend()?);
    // xorshift bytes, skewed so that low values are more frequent.
    let mut state = 0x1234_5678_9abc_def0u64;
    let data: Vec<u8> = (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            ((state >> 24) as u8) & ((state >> 40) as u8 | 0x3f)
        })
        .collect();
    let mut want = [0u32; 256];
    for &b in &data {
        want[b as usize] += 1;
    }

    // 1024 blocks of 256 threads (one per bin), grid-stride over the data.
    let cfg = LaunchConfig::new(1024u32, 256u32);
    let mut wrong = 0;
    for (name, shared) in [("global atomics", false), ("shared + global", true)] {
        let bins: Vec<AtomicU32> = (0..256).map(|_| AtomicU32::new(0)).collect();
        let t = std::time::Instant::now();
        if shared {
            histogram_shared(cfg, &data, &bins)?;
        } else {
            histogram_global(cfg, &data, &bins)?;
        }
        let ms = t.elapsed().as_secs_f64() * 1e3;
        let got: Vec<u32> = bins.iter().map(|b| b.load(Relaxed)).collect();
        let checksum: u64 = got
            .iter()
            .enumerate()
            .map(|(i, &c)| (i as u64 + 1) * c as u64)
            .sum();
        println!(
            "histogram: n = 2^{log2n}, {name:15}: bins[0] = {}, bins[255] = {}, checksum {checksum}, {ms:.1} ms incl. transfers",
            got[0], got[255]
        );
        if let Some(k) = (0..256).find(|&k| got[k] != want[k]) {
            eprintln!(
                "error: {name}: bin {k} = {}, host count {}",
                got[k], want[k]
            );
            wrong += 1;
        }
    }
    if wrong > 0 {
        std::process::exit(1);
    }
    println!("all results match the host reference");
    Ok(())
}
