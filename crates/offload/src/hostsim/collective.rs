//! Warp collectives on the host: what each lane of a warp gets when every
//! existing lane of it has reached the same collective (PTX ISA, "Parallel
//! Synchronization and Communication Instructions": `shfl.sync`,
//! `vote.sync`, `bar.warp.sync`). Pure functions of the lanes' inputs; the
//! scheduler (`block`) calls [`warp_result`] when it releases a warp.

use crate::report::divergence::names;

/// Threads per warp (CUDA `warpSize`).
pub(crate) const WARP: u32 = 32;

/// A warp collective; `arg` is the lane / offset / mask operand.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum WarpOp {
    ShflIdx,
    ShflUp,
    ShflDown,
    ShflXor,
    All,
    Any,
    Ballot,
    Sync,
}

impl WarpOp {
    /// The collective's name in divergence reports.
    pub(super) fn name(self) -> &'static str {
        match self {
            WarpOp::ShflIdx => names::SHUFFLE_IDX,
            WarpOp::ShflUp => names::SHUFFLE_UP,
            WarpOp::ShflDown => names::SHUFFLE_DOWN,
            WarpOp::ShflXor => names::SHUFFLE_XOR,
            WarpOp::All => names::ALL,
            WarpOp::Any => names::ANY,
            WarpOp::Ballot => names::BALLOT,
            WarpOp::Sync => names::SYNC_WARP,
        }
    }
}

/// Applies a warp collective to the inputs of the `m` existing lanes of one
/// warp. `inputs[l] = (value, arg)`; returns lane `l`'s result. A source
/// lane outside `0..m` (possible only in the last, partial warp of a block)
/// yields the lane's own value; on the GPU that value is undefined.
pub(crate) fn warp_result(op: WarpOp, inputs: &[(u64, u32)], l: usize) -> u64 {
    let m = inputs.len() as u64;
    let (own, arg) = inputs[l];
    let lane = l as u64;
    let pick = |j: Option<u64>| match j {
        Some(j) if j < m && j < WARP as u64 => inputs[j as usize].0,
        _ => own,
    };
    match op {
        WarpOp::ShflIdx => pick(Some(arg as u64 & 31)),
        WarpOp::ShflUp => pick(lane.checked_sub(arg as u64)),
        WarpOp::ShflDown => pick(Some(lane + arg as u64)),
        WarpOp::ShflXor => pick(Some(lane ^ arg as u64)),
        WarpOp::All => inputs.iter().all(|&(v, _)| v != 0) as u64,
        WarpOp::Any => inputs.iter().any(|&(v, _)| v != 0) as u64,
        WarpOp::Ballot => {
            inputs.iter().enumerate().filter(|(_, &(v, _))| v != 0).fold(0u64, |b, (i, _)| b | (1u64 << i))
        }
        WarpOp::Sync => 0,
    }
}

/// [`warp_result`] for every lane of the warp at once, into `out`
/// (`out.len() == inputs.len()`): a vote is computed once for all lanes.
pub(crate) fn warp_results(op: WarpOp, inputs: &[(u64, u32)], out: &mut [u64]) {
    match op {
        WarpOp::All | WarpOp::Any | WarpOp::Ballot | WarpOp::Sync => out.fill(warp_result(op, inputs, 0)),
        _ => out.iter_mut().enumerate().for_each(|(l, o)| *o = warp_result(op, inputs, l)),
    }
}

#[cfg(test)]
mod tests {
    use std::vec::Vec;

    use super::*;

    fn lanes(v: &[u64]) -> Vec<(u64, u32)> {
        v.iter().map(|&x| (x, 0)).collect()
    }

    #[test]
    fn shuffle_rules_follow_ptx() {
        let vals: Vec<(u64, u32)> = (0..32u64).map(|l| (100 + l, 3)).collect();
        // down by 3: lane 28 reads lane 31, lane 29 keeps its own value
        assert_eq!(warp_result(WarpOp::ShflDown, &vals, 28), 131);
        assert_eq!(warp_result(WarpOp::ShflDown, &vals, 29), 129);
        // up by 3: lane 2 keeps, lane 3 reads lane 0
        assert_eq!(warp_result(WarpOp::ShflUp, &vals, 2), 102);
        assert_eq!(warp_result(WarpOp::ShflUp, &vals, 3), 100);
        // xor 3
        assert_eq!(warp_result(WarpOp::ShflXor, &vals, 5), 106);
        // idx 3 for everyone; idx 35 wraps to 3
        assert_eq!(warp_result(WarpOp::ShflIdx, &vals, 17), 103);
        let v35: Vec<(u64, u32)> = (0..32u64).map(|l| (l, 35)).collect();
        assert_eq!(warp_result(WarpOp::ShflIdx, &v35, 0), 3);
        // partial warp of 5 lanes: xor 4 from lane 2 reads lane 6, absent → own
        let part: Vec<(u64, u32)> = (0..5u64).map(|l| (l * 10, 4)).collect();
        assert_eq!(warp_result(WarpOp::ShflXor, &part, 2), 20);
        assert_eq!(warp_result(WarpOp::ShflXor, &part, 0), 40);
    }

    #[test]
    fn all_lanes_at_once_match_each_lane() {
        let v: Vec<(u64, u32)> = (0..29u64).map(|l| (l * 7 % 5, (l % 6) as u32)).collect();
        for op in [
            WarpOp::ShflIdx,
            WarpOp::ShflUp,
            WarpOp::ShflDown,
            WarpOp::ShflXor,
            WarpOp::All,
            WarpOp::Any,
            WarpOp::Ballot,
        ] {
            let mut out = [0u64; 29];
            warp_results(op, &v, &mut out);
            for (l, &o) in out.iter().enumerate() {
                assert_eq!(o, warp_result(op, &v, l), "{op:?} lane {l}");
            }
        }
    }

    #[test]
    fn votes() {
        let v = lanes(&[1, 0, 5, 0]);
        assert_eq!(warp_result(WarpOp::Ballot, &v, 0), 0b0101);
        assert_eq!(warp_result(WarpOp::Any, &v, 3), 1);
        assert_eq!(warp_result(WarpOp::All, &v, 3), 0);
        assert_eq!(warp_result(WarpOp::All, &lanes(&[2, 3]), 1), 1);
    }
}
