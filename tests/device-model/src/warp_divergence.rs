//! Warp collectives reached by part of a warp: the same
//! `Error::Divergence`, with the same text, on the GPU and on the host
//! fallback; and the cases that are not divergence (lanes that reconverge
//! late, lanes meeting at collectives of the same kind in two branches)
//! give the same values on both.

use offload::{kernel, warp};

/// The text both backends give when lanes 16-31 of warp 0 have returned
/// and lanes 0-15 wait at a `reduce_sum` (its first shuffle).
pub const HALF_WARP: &str = "warp collective shuffle_xor (shfl.sync.bfly) in divergent code: in warp 0, lanes 0-15 \
                             wait for it, lanes 16-31 have returned; every existing lane of the warp must reach the \
                             same collective (PTX ISA: shfl.sync/vote.sync membermask)";

/// Lanes 16-31 return early; the rest reduce.
#[kernel]
fn reduce_after_return(out: &mut [u32]) {
    let lane = warp::lane_id();
    if lane >= 16 {
        return;
    }
    let s = warp::reduce_sum(lane + 1);
    if let Some((_, o)) = out.at_thread() {
        *o = s;
    }
}

/// Only lanes 0-15 reduce; 16-31 go on without a collective.
#[kernel]
fn reduce_in_branch(out: &mut [u32]) {
    let lane = warp::lane_id();
    let mut v = lane + 1;
    if lane < 16 {
        v = warp::reduce_sum(v);
    }
    if let Some((_, o)) = out.at_thread() {
        *o = v;
    }
}

/// A ballot after lanes 8-31 returned.
#[kernel]
fn ballot_after_return(out: &mut [u32]) {
    if warp::lane_id() >= 8 {
        return;
    }
    let b = warp::ballot(true);
    if let Some((_, o)) = out.at_thread() {
        *o = b;
    }
}

/// Not divergence: odd lanes take a longer path first (with independent
/// thread scheduling they reach the reduction later), then all reduce.
#[kernel]
fn late_reconvergence(out: &mut [u32]) {
    let lane = warp::lane_id();
    let mut v = lane;
    if lane % 2 == 1 {
        for k in 0..200 * lane {
            v = v.wrapping_mul(1_664_525).wrapping_add(k) % 1000;
        }
    }
    let s = warp::reduce_sum(v);
    if let Some((_, o)) = out.at_thread() {
        *o = s;
    }
}

/// Not divergence: both halves reduce in their own branch; the shuffles
/// of the two branches meet (sm_70+ `shfl.sync`, the host's warps).
#[kernel]
fn reduce_in_both_branches(out: &mut [u32]) {
    let lane = warp::lane_id();
    let s = if lane < 16 { warp::reduce_sum(lane) } else { warp::reduce_sum(100 * lane) };
    if let Some((_, o)) = out.at_thread() {
        *o = s;
    }
}

/// Not divergence: lanes 0-15 take a sum, lanes 16-31 a maximum. Both are
/// butterflies of the same shuffles, which meet step by step, each lane
/// combining with its own operation (sm_70+ `shfl.sync`, the host's warps;
/// the host's one-meeting reduction needs the whole warp at one reduction).
#[kernel]
fn two_kinds_of_reduction(out: &mut [u32]) {
    let lane = warp::lane_id();
    let v = lane * 3 + 1;
    let r = if lane < 16 { warp::reduce_sum(v) } else { warp::reduce_max(v) };
    if let Some((_, o)) = out.at_thread() {
        *o = r;
    }
}

/// What `two_kinds_of_reduction` computes: the butterfly step by step.
#[offload::host]
fn two_kinds_want() -> Vec<u32> {
    let mut v: Vec<u32> = (0..32).map(|l| l * 3 + 1).collect();
    for o in [16, 8, 4, 2, 1] {
        let old = v.clone();
        for (l, x) in v.iter_mut().enumerate() {
            *x = if l < 16 { old[l] + old[l ^ o] } else { old[l].max(old[l ^ o]) };
        }
    }
    v
}

#[offload::host]
pub fn check() -> Result<String, String> {
    let one_warp = || offload::LaunchConfig::new(1u32, 32u32);
    let mut out = vec![0u32; 32];
    let mut texts = Vec::new();
    for (name, r) in [
        ("reduce_sum after an early return", reduce_after_return(one_warp(), &mut out)),
        ("reduce_sum inside `if lane < 16`", reduce_in_branch(one_warp(), &mut out)),
    ] {
        match r {
            Err(offload::Error::Divergence(d)) if d.reason == HALF_WARP && d.block == "(0, 0, 0)" => {}
            Err(e) => return Err(format!("{name}: {e}")),
            Ok(()) => return Err(format!("{name}: no error")),
        }
        texts.push(name);
    }
    let want = HALF_WARP
        .replace("shuffle_xor (shfl.sync.bfly)", "ballot (vote.sync.ballot)")
        .replace("0-15", "0-7")
        .replace("16-31", "8-31");
    match ballot_after_return(one_warp(), &mut out) {
        Err(offload::Error::Divergence(d)) if d.reason == want => {}
        r => return Err(format!("ballot after a return: {r:?}")),
    }

    // Not divergence: values as computed here.
    let (blocks, bs) = (4u32, 64u32);
    let mut out = vec![0u32; (blocks * bs) as usize];
    late_reconvergence(offload::LaunchConfig::new(blocks, bs), &mut out)
        .map_err(|e| format!("late reconvergence: {e}"))?;
    let v = |lane: u32| {
        let mut v = lane;
        if lane % 2 == 1 {
            for k in 0..200 * lane {
                v = v.wrapping_mul(1_664_525).wrapping_add(k) % 1000;
            }
        }
        v
    };
    let sum: u32 = (0..32).map(v).sum();
    if let Some(g) = out.iter().position(|&o| o != sum) {
        return Err(format!("late reconvergence: thread {g} got {}, expected {sum}", out[g]));
    }
    reduce_in_both_branches(offload::LaunchConfig::new(blocks, bs), &mut out)
        .map_err(|e| format!("reduce in both branches: {e}"))?;
    let both: u32 = (0..16).sum::<u32>() + (16..32).map(|l| 100 * l).sum::<u32>();
    if let Some(g) = out.iter().position(|&o| o != both) {
        return Err(format!("reduce in both branches: thread {g} got {}, expected {both}", out[g]));
    }
    let mut out = vec![0u32; 32];
    two_kinds_of_reduction(one_warp(), &mut out).map_err(|e| format!("two kinds of reduction: {e}"))?;
    let want = two_kinds_want();
    if out != want {
        return Err(format!("two kinds of reduction: got {out:?}, expected {want:?}"));
    }
    Ok(format!(
        "reported on this backend: {}; ballot; not reported: late reconvergence, both branches (sum {both}), two kinds",
        texts.join(", ")
    ))
}
