//! Warp-level primitives: lane id, shuffles, votes, reductions.

use offload::warp::{self, lane_id, warp_id};
use offload::{block_idx, kernel};

/// Number of results per thread.
pub const K: usize = 14;

/// Each thread stores K results at `k * S + global_index()`.
#[kernel]
fn warp_ops(out: &mut [u64]) {
    let lane = lane_id();
    let w = warp_id();
    let v = lane * 3 + w * 100 + block_idx().x * 1000;
    let r: [u64; K] = [
        lane as u64,
        w as u64,
        warp::shuffle_idx(v, 5) as u64,
        warp::shuffle_up(v, 3) as u64,
        warp::shuffle_down(v, 3) as u64,
        warp::shuffle_xor(v, 7) as u64,
        warp::all(v > 0) as u64,
        warp::any(lane == 31) as u64,
        warp::ballot(lane % 3 == 0) as u64,
        warp::reduce_sum(0.1f32 * lane as f32 + 0.01 * w as f32).to_bits() as u64,
        warp::reduce_max(-(lane as i32) * 7 + (lane as i32 % 5)) as u32 as u64,
        warp::reduce_min(((lane as u64) << 40) ^ 0xfff0_0000_0000_0000 ^ (lane as u64 * 12345)),
        warp::shuffle_idx(1.5f64 * v as f64, 31 - lane).to_bits(),
        warp::shuffle_down(-(v as i64) << 33, 1) as u64,
    ];
    warp::sync_warp();
    for (k, (_, o)) in out.grid_stride().enumerate() {
        *o = r[k];
    }
}

/// A partial last warp (blocks of 40 threads: lanes 0..8 of warp 1).
#[kernel]
fn partial_warp(out: &mut [u32]) {
    let lane = lane_id();
    let v = lane + 10 * warp_id();
    let x = warp::shuffle_xor(v, 1);
    let b = warp::ballot(true);
    if let Some((_, o)) = out.at_thread() {
        *o = x | (b.count_ones() << 16);
    }
}

/// Results per thread of `partial_reductions`.
const P: usize = 4;

/// Reductions over warps that are not full: the lanes that exist, and only
/// they, are combined, and every lane gets the result. Thread `t` stores
/// its `P` results at `k * S + global_index()`.
#[kernel]
fn partial_reductions(out: &mut [u64]) {
    let (lane, w, b) = (lane_id(), warp_id(), block_idx().x);
    let r: [u64; P] = [
        warp::reduce_sum((lane as u64 + 1) * 1000 + w as u64 * 10 + b as u64),
        warp::reduce_sum(0.1f32 * lane as f32 + 0.01 * w as f32).to_bits() as u64,
        warp::reduce_max(lane as i32 * 7 - (lane as i32 % 5) - 100) as u32 as u64,
        warp::reduce_min(((31 - lane as u64) << 40) ^ (lane as u64 * 12345)),
    ];
    for (k, (_, o)) in out.grid_stride().enumerate() {
        *o = r[k];
    }
}

/// `partial_reductions` on 2 blocks of `bs` threads, each result checked
/// against the host: sums, maxima and minima over the lanes of each warp
/// that exist (in full warps all 32), the float sum in the order the
/// reduction adds (a butterfly in full warps, a tree of shuffle_down to
/// lane 0 in partial ones).
#[offload::host]
fn check_partial(bs: u32) -> Result<(), String> {
    let s = (2 * bs) as usize;
    let mut out = vec![0u64; P * s];
    partial_reductions(offload::LaunchConfig::new(2u32, bs), &mut out).map_err(|e| e.to_string())?;
    for g in 0..s {
        let (b, t) = ((g / bs as usize) as u32, (g % bs as usize) as u32);
        let w = t / 32;
        let n = (bs - 32 * w).min(32) as usize;
        let f: Vec<f32> = (0..n).map(|l| 0.1f32 * l as f32 + 0.01 * w as f32).collect();
        let fsum = if n == 32 {
            let mut v = f;
            for off in [16usize, 8, 4, 2, 1] {
                v = (0..32).map(|l| v[l] + v[l ^ off]).collect();
            }
            v[0]
        } else {
            let mut v = f;
            for off in [16usize, 8, 4, 2, 1] {
                v = (0..n).map(|l| if l + off < n { v[l] + v[l + off] } else { v[l] }).collect();
            }
            v[0]
        };
        let want: [u64; P] = [
            (0..n as u64).map(|l| (l + 1) * 1000 + w as u64 * 10 + b as u64).sum(),
            fsum.to_bits() as u64,
            (0..n as i32).map(|l| l * 7 - l % 5 - 100).max().unwrap() as u32 as u64,
            (0..n as u64).map(|l| ((31 - l) << 40) ^ (l * 12345)).min().unwrap(),
        ];
        for k in 0..P {
            let got = out[k * s + g];
            if got != want[k] {
                return Err(format!(
                    "partial reductions, blocks of {bs}: block {b} thread {t} ({n} lanes in its warp): result {k} = \
                     {got:#x}, expected {:#x}",
                    want[k]
                ));
            }
        }
    }
    Ok(())
}

#[offload::host]
pub fn check() -> Result<String, String> {
    let (blocks, bs) = (3u32, 64u32);
    let s = (blocks * bs) as usize;
    let mut out = vec![0u64; K * s];
    warp_ops(offload::LaunchConfig::new(blocks, bs), &mut out).map_err(|e| e.to_string())?;
    let mut sum_bits = 0u64;
    for g in 0..s {
        let (b, t) = ((g / bs as usize) as u32, (g % bs as usize) as u32);
        let (lane, w) = (t % 32, t / 32);
        let val = |l: u32| l * 3 + w * 100 + b * 1000;
        // reduce_sum in the butterfly order of the GPU: offsets 16, 8, 4, 2, 1
        let mut vals: Vec<f32> = (0..32).map(|l| 0.1f32 * l as f32 + 0.01 * w as f32).collect();
        for off in [16usize, 8, 4, 2, 1] {
            vals = (0..32).map(|l| vals[l] + vals[l ^ off]).collect();
        }
        let maxv = (0..32i32).map(|l| -l * 7 + l % 5).max().unwrap();
        let minv = (0..32u64).map(|l| (l << 40) ^ 0xfff0_0000_0000_0000 ^ (l * 12345)).min().unwrap();
        let want: [u64; K] = [
            lane as u64,
            w as u64,
            val(5) as u64,
            val(if lane >= 3 { lane - 3 } else { lane }) as u64,
            val(if lane + 3 <= 31 { lane + 3 } else { lane }) as u64,
            val(lane ^ 7) as u64,
            (0..32).all(|l| val(l) > 0) as u64,
            1,
            (0..32u32).filter(|l| l % 3 == 0).fold(0u64, |m, l| m | 1 << l),
            vals[lane as usize].to_bits() as u64,
            maxv as u32 as u64,
            minv,
            (1.5f64 * val(31 - lane) as f64).to_bits(),
            (-(val(if lane < 31 { lane + 1 } else { lane }) as i64) << 33) as u64,
        ];
        for k in 0..K {
            let got = out[k * s + g];
            if got != want[k] {
                return Err(format!("block {b} thread {t}: result {k} = {got:#x}, expected {:#x}", want[k]));
            }
        }
        sum_bits = sum_bits.wrapping_add(out[9 * s + g]);
    }
    // partial warp
    let mut p = vec![0u32; 2 * 40];
    partial_warp(offload::LaunchConfig::new(2u32, 40u32), &mut p).map_err(|e| e.to_string())?;
    for (g, &v) in p.iter().enumerate() {
        let t = (g % 40) as u32;
        let (lane, w) = (t % 32, t / 32);
        let want_x = (lane ^ 1) + 10 * w;
        let want_n = if w == 0 { 32 } else { 8 };
        if v != want_x | (want_n << 16) {
            return Err(format!("partial warp: thread {t} got {v:#x}"));
        }
    }
    // Reductions in partial warps: a block of 16 threads, a tail warp of 16
    // lanes (blocks of 48), and full warps for comparison.
    for bs in [16, 48, 64] {
        check_partial(bs)?;
    }
    let r = f32::from_bits(out[9 * s] as u32);
    Ok(format!(
        "{s} threads x {K} results exact; reduce_sum(warp 0) = {r} (bits {:#x}); partial warp ok; reductions over \
         16-, 48- and 64-thread blocks exact",
        out[9 * s]
    ))
}
