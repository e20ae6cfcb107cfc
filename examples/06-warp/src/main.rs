//! Tutorial 6: warps, the threads that run in lockstep.
//!
//!     cargo offload run --release -p reduction [-- <log2 n>]     (n = 2^24 by default)
//!
//! A block's threads come in *warps* of 32 consecutive threads (`lane_id()`
//! 0..31 within the warp, `warp_id()` within the block). The lanes of a warp
//! can read each other's registers directly with *shuffles*, with no shared
//! memory and no barrier (`offload::warp`; CUDA's `__shfl_*_sync`):
//!
//! - `shuffle_up(v, d)`: the `v` of lane `lane - d` (lanes below `d` get their own);
//! - `shuffle_down`, `shuffle_xor`, `shuffle_idx`: from `lane + d`, `lane ^ m`, lane `i`;
//! - `reduce_sum(v)` (also `reduce_max`, `reduce_min`): the sum of all 32
//!   lanes' `v`, given to every lane: five `shuffle_xor` steps (16, 8, 4, 2, 1);
//! - `ballot`, `any`, `all`: a vote over the warp's lanes.
//!
//! The rule: every lane of the warp reaches each shuffle (it is one
//! instruction of the whole warp). So threads that have no element still
//! take part, with a neutral value, rather than returning early; a shuffle
//! that part of a warp skips is `Error::Divergence` on both backends. The
//! launches here use 256-thread blocks: eight full warps each.
//!
//! Two kernels: `block_sums`, the sum of 2^24 floats (each thread sums a
//! grid-stride share, a warp reduces its 32 sums, shared memory collects the
//! block's 8 warp sums and the first warp reduces those), and `warp_scan`,
//! the running (prefix) sums of each warp's 32 integers with `shuffle_up`.
//! The sum is checked against an f64 sum of the inputs (relative error below
//! 1e-5), the scan exactly against the host's; the program exits non-zero
//! on a mismatch.

use offload::atomic::{AtomicF32, Ordering::Relaxed};
use offload::{block_idx, global_index, kernel, shared_array, sync_threads, warp, LaunchConfig};

/// One partial sum of `x` per block, in `partials[block]`.
#[kernel]
fn block_sums(x: &[f32], partials: &[AtomicF32]) {
    let mut s = 0.0f32;
    for i in offload::grid_stride(x.len()) {
        s += x[i];
    }
    // Every lane gets the sum of its warp's 32 values.
    s = warp::reduce_sum(s);
    // Lane 0 of each warp puts it in shared memory; the barrier waits for all warps.
    let per_warp = shared_array!(f32; 32);
    if warp::lane_id() == 0 {
        per_warp.set(warp::warp_id() as usize, s);
    }
    sync_threads();
    // The first warp sums the warps' sums (lanes beyond the number of warps
    // contribute 0, but take part in the reduction).
    if warp::warp_id() == 0 {
        let warps = (offload::block_dim().x / 32) as usize;
        let v = if (warp::lane_id() as usize) < warps {
            per_warp.get(warp::lane_id() as usize)
        } else {
            0.0
        };
        let total = warp::reduce_sum(v);
        // One value per block, written by one thread: an atomic store (a
        // block's first thread does not own element `block` of a `&mut`
        // slice, tutorial 1).
        if warp::lane_id() == 0 {
            partials[block_idx().x as usize].store(total, Relaxed);
        }
    }
}

/// `out[i]` = the sum of `x[j]` over the lanes `j` of `i`'s warp up to and
/// including `i` (an inclusive scan of each 32 elements), in five steps: at
/// step `d` = 1, 2, 4, 8, 16 each lane adds the running sum of the lane `d`
/// below it.
#[kernel]
fn warp_scan(x: &[u32], out: &mut [u32]) {
    let i = global_index();
    // Threads past the end take part with 0.
    let mut v = if i < x.len() { x[i] } else { 0 };
    let lane = warp::lane_id();
    let mut d = 1;
    while d < warp::WARP_SIZE {
        let below = warp::shuffle_up(v, d);
        if lane >= d {
            v += below;
        }
        d *= 2;
    }
    if let Some((_, o)) = out.at_thread() {
        *o = v;
    }
}

#[offload::host]
fn main() -> Result<(), offload::Error> {
    let log2n: u32 = match std::env::args().nth(1).map(|s| s.parse()) {
        None => 24,
        Some(Ok(k)) if (10..=30).contains(&k) => k,
        Some(_) => {
            eprintln!("usage: reduction [log2 n], with 10 <= log2 n <= 30 (default 24)");
            std::process::exit(2);
        }
    };
    let n = 1usize << log2n;
    println!("offload backend: {}", offload::backend()?);
    let mut wrong = 0;

    // 1. The sum: 1024 blocks of 256 threads, one partial per block, added
    //    on the host.
    let x: Vec<f32> = (0..n)
        .map(|i| ((i as u64 * 7919) % 1000) as f32 / 1000.0)
        .collect();
    let blocks = 1024u32;
    let partials: Vec<AtomicF32> = (0..blocks).map(|_| AtomicF32::new(f32::NAN)).collect();
    let t = std::time::Instant::now();
    block_sums(LaunchConfig::new(blocks, 256u32), &x, &partials)?;
    let ms = t.elapsed().as_secs_f64() * 1e3;
    let got: f64 = partials.iter().map(|p| p.load(Relaxed) as f64).sum();
    let want: f64 = x.iter().map(|&v| v as f64).sum();
    let rel = ((got - want) / want).abs();
    println!("reduction: n = 2^{log2n}, sum = {got:.6} (f64 reference {want:.6}, rel. error {rel:.2e}), {ms:.1} ms incl. transfers");
    println!(
        "reduction: partial[0] bits {:#010x}",
        partials[0].load(Relaxed).to_bits()
    );
    let ok = rel < 1e-5; // false for NaN too
    if !ok {
        eprintln!("error: relative error {rel:e} above 1e-5");
        wrong += 1;
    }

    // 2. The scan, on a length that is not a multiple of 32: the last warp
    //    has lanes with no element. (Smaller than the sum: on the host
    //    fallback every shuffle is a meeting of 32 simulated threads.)
    let m = 100_003;
    let xs: Vec<u32> = (0..m as u32)
        .map(|i| i.wrapping_mul(2_654_435_761) >> 22)
        .collect();
    let mut scan = vec![0u32; m];
    warp_scan(offload::for_len(m), &xs, &mut scan)?;
    let mut running = 0;
    let bad = (0..m)
        .filter(|&i| {
            running = if i % 32 == 0 { xs[i] } else { running + xs[i] };
            scan[i] != running
        })
        .count();
    println!("warp_scan: m = {m}, {bad} wrong");
    wrong += bad;

    if wrong > 0 {
        eprintln!("error: results differ from the host reference");
        std::process::exit(1);
    }
    println!("all results match the host reference");
    Ok(())
}
