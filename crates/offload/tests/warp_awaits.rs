//! Warp collectives in a kernel body with barriers, which the host fallback
//! meets in the block's phases (`hostsim::awaits`: the macro makes each
//! call an await): every collective's values against the rules of PTX
//! computed here, in full and partial warps and across barriers; a
//! function of the user's with a collective's name, called as written; a
//! collective the macro does not see next to those it sees, and meeting
//! them in one warp; and the
//! divergence reports, with the text the scheduler gives.

use offload::prelude::*;
#[offload::host]
use offload::Error;
use offload::{block_dim, block_idx, shared_array, sync_threads, thread_idx, warp};

/// Threads of a block, at most.
const MAX: usize = 64;

/// A thread's value: differs between lanes, warps and blocks.
fn value(block: u32, t: u32) -> u32 {
    (t * 37 + block * 11) % 29 + 1
}

/// A function of the user's with the name of a collective: the macro keeps
/// it (it is called, not met).
fn ballot(x: u32) -> u32 {
    x * 3 + 1
}

/// A shuffle the macro does not see: it meets on coroutines.
fn hidden_xor(v: u32) -> u32 {
    warp::shuffle_xor(v, 1)
}

/// Every collective, between and after barriers; `out[t]`:
/// `[idx | up << 32, down | xor << 32, all | any << 1 | ballot << 32, sum,
/// max (f32 bits), min (i64), shared neighbour + user's ballot, hidden xor]`.
#[kernel]
fn collectives(out: &mut [[u64; 8]]) {
    let s = shared_array!(u32; MAX);
    let (d, i) = (block_dim(), thread_idx());
    let (t, n) = (i.x + d.x * i.y, d.x * d.y);
    let v = value(block_idx().x, t);
    let idx = warp::shuffle_idx(v, 5);
    let up = warp::shuffle_up(v, 3);
    s.set(t as usize, v);
    sync_threads();
    let down = warp::shuffle_down(v as u64, 2);
    let xor = warp::shuffle_xor(v, 4);
    let all = warp::all(v.is_multiple_of(2));
    let any = warp::any(v.is_multiple_of(7));
    let ballot_bits = warp::ballot(v.is_multiple_of(3));
    warp::sync_warp();
    let sum = warp::reduce_sum(v);
    let max = warp::reduce_max(v as f32 * 0.5);
    let neighbour = s.get(((t + 1) % n) as usize);
    sync_threads();
    let min = warp::reduce_min(-(v as i64) * 1000);
    let mine = ballot(t);
    let hidden = hidden_xor(v);
    if let Some((_, o)) = out.at_thread() {
        *o = [
            idx as u64 | (up as u64) << 32,
            down | (xor as u64) << 32,
            all as u64 | (any as u64) << 1 | (ballot_bits as u64) << 32,
            sum as u64,
            max.to_bits() as u64,
            min as u64,
            neighbour as u64 | (mine as u64) << 32,
            hidden as u64,
        ];
    }
}

/// [`collectives`]'s output for one block of `n` threads, by the rules of
/// PTX (`shfl.sync`, `vote.sync`): a source lane outside the warp gives the
/// lane's own value; a partial warp's reductions combine its lanes.
#[offload::host]
fn collectives_on_host(block: u32, n: u32) -> Vec<[u64; 8]> {
    (0..n)
        .map(|t| {
            let (w0, lane) = (t / 32 * 32, t % 32);
            let m = (n - w0).min(32);
            let v = |l: u32| value(block, w0 + l);
            let pick = |src: Option<u32>| match src {
                Some(s) if s < m => v(s),
                _ => v(lane),
            };
            let lanes = 0..m;
            let ballot_bits = lanes.clone().filter(|&l| v(l) % 3 == 0).fold(0u64, |b, l| b | 1 << l);
            let all = lanes.clone().all(|l| v(l) % 2 == 0) as u64;
            let any = lanes.clone().any(|l| v(l) % 7 == 0) as u64;
            let sum: u32 = lanes.clone().map(v).sum();
            let max = lanes.clone().map(|l| v(l) as f32 * 0.5).fold(f32::MIN, f32::max);
            let min = lanes.clone().map(|l| -(v(l) as i64) * 1000).min().unwrap();
            [
                pick(Some(5)) as u64 | (pick(lane.checked_sub(3)) as u64) << 32,
                pick(Some(lane + 2)) as u64 | (pick(Some(lane ^ 4)) as u64) << 32,
                all | any << 1 | ballot_bits << 32,
                sum as u64,
                max.to_bits() as u64,
                min as u64,
                value(block, (t + 1) % n) as u64 | ((t * 3 + 1) as u64) << 32,
                pick(Some(lane ^ 1)) as u64,
            ]
        })
        .collect()
}

#[test]
fn collectives_between_barriers_give_what_ptx_says_in_full_and_partial_warps() {
    // Blocks of (x, y) threads; a 2-D block's warps are its threads in
    // linear order (x fastest).
    for (grid, (dx, dy)) in [(3u32, (64u32, 1u32)), (2, (48, 1)), (2, (7, 1)), (2, (8, 6))] {
        let n = dx * dy;
        let mut out = vec![[0u64; 8]; (grid * n) as usize];
        collectives(LaunchConfig::new((grid, 1u32, 1u32), (dx, dy, 1u32)), &mut out).unwrap();
        for b in 0..grid {
            let want = collectives_on_host(b, n);
            for t in 0..n {
                // `global_index()`: x fastest over the grid, then y.
                let g = (b * dx + t % dx + grid * dx * (t / dx)) as usize;
                assert_eq!(out[g], want[t as usize], "block {b} of {dx}x{dy} threads, thread {t}");
            }
        }
    }
}

/// Lanes 16-31 return before the barrier; the rest reduce after it.
#[kernel]
fn reduce_after_return(out: &mut [u32]) {
    let lane = warp::lane_id();
    if lane >= 16 {
        return;
    }
    sync_threads();
    let s = warp::reduce_sum(lane + 1);
    if let Some((_, o)) = out.at_thread() {
        *o = s;
    }
}

/// Lanes 0-15 shuffle, 16-31 take a ballot; `barrier`: lanes 16-31 wait at
/// a barrier instead.
#[kernel]
fn two_collectives(barrier: bool, out: &mut [u32]) {
    let lane = warp::lane_id();
    sync_threads();
    let r = if lane < 16 {
        warp::shuffle_xor(lane, 1)
    } else if barrier {
        sync_threads();
        0
    } else {
        warp::ballot(lane.is_multiple_of(2))
    };
    if let Some((_, o)) = out.at_thread() {
        *o = r;
    }
}

/// Lanes 0-15 shuffle in the body, 16-31 in a function the body calls.
#[kernel]
fn seen_and_hidden(out: &mut [u32]) {
    let lane = warp::lane_id();
    sync_threads();
    let r = if lane < 16 { warp::shuffle_xor(lane, 1) } else { hidden_xor(lane) };
    if let Some((_, o)) = out.at_thread() {
        *o = r;
    }
}

#[offload::host]
fn divergence(r: Result<(), Error>) -> String {
    match r {
        Err(Error::Divergence(d)) => d.reason,
        r => panic!("not divergence: {r:?}"),
    }
}

#[test]
fn collectives_reached_by_part_of_a_warp_are_divergence() {
    let one_warp = || LaunchConfig::new(1u32, 32u32);
    let mut out = vec![0u32; 32];
    // The text of tests/device-model's `HALF_WARP`, as both backends give it.
    assert_eq!(
        divergence(reduce_after_return(one_warp(), &mut out)),
        "warp collective shuffle_xor (shfl.sync.bfly) in divergent code: in warp 0, lanes 0-15 wait for it, \
         lanes 16-31 have returned; every existing lane of the warp must reach the same collective (PTX ISA: \
         shfl.sync/vote.sync membermask)"
    );
    let text = divergence(two_collectives(one_warp(), false, &mut out));
    assert!(text.starts_with("lanes of warp 0 reached different warp collectives: lane 0 shuffle_xor"), "{text}");
    assert!(text.contains("lane 16 ballot"), "{text}");
    let text = divergence(two_collectives(one_warp(), true, &mut out));
    assert!(text.contains("in warp 0, lanes 0-15 wait for it"), "{text}");
}

#[test]
fn lanes_at_a_shuffle_of_the_body_and_one_of_a_called_function_meet() {
    // As lanes at two collectives of the same kind meet on a GPU (sm_70+).
    let (grid, n) = (2u32, 64u32);
    let mut out = vec![0u32; (grid * n) as usize];
    seen_and_hidden(LaunchConfig::new(grid, n), &mut out).unwrap();
    for (i, &v) in out.iter().enumerate() {
        assert_eq!(v, (i as u32 % 32) ^ 1, "element {i}");
    }
}

#[test]
fn only_offloads_collectives_are_met() {
    use offload::__private::{is_warp_fn, WarpFn};
    assert!(is_warp_fn(&warp::reduce_sum::<f32>, WarpFn::ReduceSum));
    assert!(is_warp_fn(&warp::shuffle_xor::<u64>, WarpFn::ShuffleXor));
    assert!(is_warp_fn(&warp::ballot, WarpFn::Ballot));
    assert!(!is_warp_fn(&warp::reduce_max::<f32>, WarpFn::ReduceSum));
    assert!(!is_warp_fn(&warp::any, WarpFn::All));
    assert!(!is_warp_fn(&ballot, WarpFn::Ballot));
    assert!(!is_warp_fn(&|x: u32| x, WarpFn::ReduceSum));
}

/// Lanes 0, 8, 16 and 24 hold 2^30, the others 0: the reduction's second
/// step (offset 8) adds 2^31 and 2^31 in those lanes, which overflows (with
/// overflow checks). The whole warp's result panics; the lanes go on shuffle
/// by shuffle, each shuffle met in the phases, the first with the result
/// that the release left to them.
#[cfg(debug_assertions)]
#[kernel]
fn reduce_overflows(out: &mut [u32]) {
    let lane = warp::lane_id();
    sync_threads();
    let s = warp::reduce_sum(if lane.is_multiple_of(8) { 1u32 << 30 } else { 0 });
    if let Some((_, o)) = out.at_thread() {
        *o = s;
    }
}

#[cfg(debug_assertions)]
#[test]
fn an_overflow_in_a_reduction_between_barriers_panics_in_a_lane_whose_step_overflows() {
    let mut out = vec![0u32; 64];
    let e = reduce_overflows(LaunchConfig::new(1u32, 64u32), &mut out).unwrap_err();
    let Error::KernelPanic(p) = &e else { panic!("{e}") };
    assert!(p.message.contains("attempt to add with overflow"), "{e}");
    assert!(["(0, 0, 0)", "(8, 0, 0)", "(16, 0, 0)", "(24, 0, 0)"].contains(&p.thread.as_str()), "{e}");
}
