//! Warp-level primitives (CUDA C++ Programming Guide, "Warp Shuffle
//! Functions", "Warp Vote Functions"; PTX ISA `shfl.sync`, `vote.sync`,
//! `bar.warp.sync`).
//!
//! A warp is 32 consecutive threads of a block in linear order (x fastest):
//! warp `w` holds the threads whose linear index in the block is
//! `32w .. 32w + 31`; the last warp of a block whose size is not a multiple
//! of 32 is partial. Reductions combine exactly the lanes that exist (see
//! [`reduce_sum`]); a shuffle that reads a lane that does not exist is
//! undefined on the GPU (the host fallback returns the caller's value).
//! Outside a kernel the warp is the calling thread alone.
//!
//! **Convergence rule.** A collective (shuffle, vote, [`sync_warp`],
//! [`reduce_sum`], …) must be reached by *every* existing lane of the warp
//! that has not returned: the functions pass the warp's full member mask,
//! as `__shfl_sync(0xffffffff, …)` does for full warps. PTX ISA
//! (`shfl.sync`, `vote.sync`, `bar.warp.sync`), sm_70 and later: the
//! executing thread waits until every *non-exited* thread of the mask
//! executes the instruction; exited threads do not block it (and give
//! undefined values to shuffles that read them).
//!
//! Both backends report a collective that part of the warp reaches while
//! the rest has returned (a reduction after an early `return`, or inside
//! `if lane < 16` with no collective in the other branch): the launch
//! returns [`Error::Divergence`](crate::Error), with the same text on both.
//! On the GPU each collective first takes a `vote.sync.ballot` of `true`
//! over the member mask: it waits for the lanes that have not exited (so
//! lanes that are only not yet reconverged, with independent thread
//! scheduling, are waited for, not reported), and if the lanes that voted
//! are not all of the warp's, the thread records the error (as a panic
//! record does) and exits. A reduction ([`reduce_sum`], …) is checked once,
//! before its first shuffle. Lanes that reach *another* collective of the
//! same kind (`shuffle_xor` here, `shuffle_xor` in the other branch, or a
//! reduction in each branch) meet as on sm_70+ GPUs, on both backends.
//! Still undefined on a GPU (the host fallback reports them): lanes
//! waiting at [`sync_threads`](crate::sync_threads) while the others wait
//! at a collective (a hang), lanes at collectives of different kinds, and
//! lanes that leave a reduction's partners after some of its shuffles.
//! Cost: one `vote.sync`, a compare and a branch per collective (see
//! `docs/device-model.md` for `examples/06-warp`).
//!
//! **Host fallback.** The lanes of a warp run independently between
//! collectives and meet at each one, which is exactly the independent
//! thread scheduling of sm_70 and later: a collective's result is computed
//! from all lanes' inputs at once, so shuffles, votes and reductions give
//! the same values (bit for bit, also for floats) as on the GPU.

use core::ops::Add;

#[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
use crate::hostsim::{collective::WarpOp, entry::warp_collective};
#[cfg(target_arch = "nvptx64")]
use crate::report::divergence::names;

/// Threads per warp (CUDA `warpSize`): 32 on every NVIDIA GPU.
pub const WARP_SIZE: u32 = 32;

/// Linear index of this thread in its block (x fastest).
#[inline(always)]
fn linear_in_block() -> u32 {
    let t = crate::thread_idx();
    let d = crate::block_dim();
    t.x + d.x * (t.y + d.y * t.z)
}

/// This thread's lane in its warp, `0..32` (PTX `%laneid`).
#[inline(always)]
pub fn lane_id() -> u32 {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: reading a special register has no preconditions.
    unsafe {
        nv::laneid()
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        linear_in_block() % WARP_SIZE
    }
}

/// This thread's warp within its block: linear thread index / 32.
#[inline(always)]
pub fn warp_id() -> u32 {
    linear_in_block() / WARP_SIZE
}

/// The member mask of this thread's warp: one bit per lane that exists in
/// the block (all 32 except in a partial last warp).
#[inline(always)]
pub fn warp_mask() -> u32 {
    let d = crate::block_dim();
    let n = d.x * d.y * d.z;
    let first = warp_id() * WARP_SIZE;
    let lanes = n - first;
    if lanes >= 32 {
        u32::MAX
    } else {
        (1u32 << lanes) - 1
    }
}

/// The start of every collective on the GPU: waits (`vote.sync.ballot`)
/// until every lane of the warp that has not exited is at a collective,
/// then, if some lane of the warp has exited, records
/// [`Error::Divergence`](crate::Error) for collective `op` and ends the
/// thread (see the module docs). Returns the member mask.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn converged(op: &'static str) -> u32 {
    let m = warp_mask();
    // SAFETY: `vote.sync` with the warp's member mask, which holds this
    // lane; exited lanes do not block it (sm_70+).
    let arrived = unsafe { nv::vote_ballot(m, true) };
    if arrived != m {
        crate::report::gpu::warp_divergence(op, warp_id(), arrived, m & !arrived);
    }
    m
}

#[cfg(target_arch = "nvptx64")]
mod nv {
    extern "C" {
        #[link_name = "llvm.nvvm.read.ptx.sreg.laneid"]
        pub fn laneid() -> u32;
        #[link_name = "llvm.nvvm.shfl.sync.idx.i32"]
        pub fn shfl_idx(mask: u32, v: u32, b: u32, c: u32) -> u32;
        #[link_name = "llvm.nvvm.shfl.sync.up.i32"]
        pub fn shfl_up(mask: u32, v: u32, b: u32, c: u32) -> u32;
        #[link_name = "llvm.nvvm.shfl.sync.down.i32"]
        pub fn shfl_down(mask: u32, v: u32, b: u32, c: u32) -> u32;
        #[link_name = "llvm.nvvm.shfl.sync.bfly.i32"]
        pub fn shfl_bfly(mask: u32, v: u32, b: u32, c: u32) -> u32;
        #[link_name = "llvm.nvvm.vote.all.sync"]
        pub fn vote_all(mask: u32, p: bool) -> bool;
        #[link_name = "llvm.nvvm.vote.any.sync"]
        pub fn vote_any(mask: u32, p: bool) -> bool;
        #[link_name = "llvm.nvvm.vote.ballot.sync"]
        pub fn vote_ballot(mask: u32, p: bool) -> u32;
        #[link_name = "llvm.nvvm.bar.warp.sync"]
        pub fn bar_warp_sync(mask: u32);
    }
}

/// Values that can cross lanes: 4- and 8-byte integers and floats (8-byte
/// values travel as two 32-bit shuffles on the GPU).
pub trait WarpValue: Copy + sealed::Sealed + 'static {
    #[doc(hidden)]
    fn to_bits64(self) -> u64;
    #[doc(hidden)]
    fn from_bits64(b: u64) -> Self;
    #[doc(hidden)]
    const WIDE: bool;
}

mod sealed {
    pub trait Sealed {}
}

macro_rules! warp_value {
    ($($t:ty: $wide:expr, |$v:ident| $to:expr, |$b:ident| $from:expr;)*) => {$(
        impl sealed::Sealed for $t {}
        impl WarpValue for $t {
            #[inline(always)]
            fn to_bits64(self) -> u64 { let $v = self; $to }
            #[inline(always)]
            fn from_bits64($b: u64) -> Self { $from }
            const WIDE: bool = $wide;
        }
    )*};
}
warp_value! {
    u32: false, |v| v as u64, |b| b as u32;
    i32: false, |v| v as u32 as u64, |b| b as u32 as i32;
    f32: false, |v| v.to_bits() as u64, |b| f32::from_bits(b as u32);
    u64: true, |v| v, |b| b;
    i64: true, |v| v as u64, |b| b as i64;
    f64: true, |v| v.to_bits(), |b| f64::from_bits(b);
}

/// The `shfl.sync` mode (PTX ISA, "Data Movement and Conversion
/// Instructions: shfl.sync").
#[cfg(target_arch = "nvptx64")]
#[derive(Clone, Copy)]
enum ShflMode {
    Idx,
    Up,
    Down,
    Bfly,
}

/// One 32-bit `shfl.sync`. Each intrinsic is *called* here, never passed
/// as a value: an LLVM intrinsic has no address, and rustc 1.101 rejects
/// turning one into a fn pointer (an ICE, "LlvmIntrinsic … being reified").
/// `mode` is a constant at every call, so the match folds away.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn shfl32(mode: ShflMode, m: u32, v: u32, b: u32, c: u32) -> u32 {
    // SAFETY: `shfl.sync` with the warp's member mask; the convergence rule
    // (module docs) is the caller's, and breaking it is not memory-unsafe.
    unsafe {
        match mode {
            ShflMode::Idx => nv::shfl_idx(m, v, b, c),
            ShflMode::Up => nv::shfl_up(m, v, b, c),
            ShflMode::Down => nv::shfl_down(m, v, b, c),
            ShflMode::Bfly => nv::shfl_bfly(m, v, b, c),
        }
    }
}

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn shfl<T: WarpValue>(mode: ShflMode, v: T, b: u32, c: u32) -> T {
    let m = converged(match mode {
        ShflMode::Idx => names::SHUFFLE_IDX,
        ShflMode::Up => names::SHUFFLE_UP,
        ShflMode::Down => names::SHUFFLE_DOWN,
        ShflMode::Bfly => names::SHUFFLE_XOR,
    });
    shfl_masked(mode, m, v, b, c)
}

/// One shuffle of a value with member mask `m`, without the check.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn shfl_masked<T: WarpValue>(mode: ShflMode, m: u32, v: T, b: u32, c: u32) -> T {
    let bits = v.to_bits64();
    let lo = shfl32(mode, m, bits as u32, b, c) as u64;
    let hi = if T::WIDE { (shfl32(mode, m, (bits >> 32) as u32, b, c) as u64) << 32 } else { 0 };
    T::from_bits64(lo | hi)
}

#[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
#[inline(always)]
fn host_shfl<T: WarpValue>(op: WarpOp, v: T, b: u32) -> T {
    let r = warp_collective(op, v.to_bits64(), b);
    T::from_bits64(if T::WIDE { r } else { r & 0xffff_ffff })
}

/// Lane `src_lane % 32`'s `v` (CUDA `__shfl_sync(mask, v, src_lane)`, PTX
/// `shfl.sync.idx`). If that lane does not exist (partial warp), the GPU's
/// result is undefined; the host fallback returns the caller's own `v`.
#[inline(always)]
pub fn shuffle_idx<T: WarpValue>(v: T, src_lane: u32) -> T {
    #[cfg(target_arch = "nvptx64")]
    {
        shfl(ShflMode::Idx, v, src_lane, 0x1f)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        host_shfl(WarpOp::ShflIdx, v, src_lane)
    }
}

/// The `v` of lane `lane_id() - delta`, or the caller's own `v` for lanes
/// `< delta` (CUDA `__shfl_up_sync`, PTX `shfl.sync.up`).
#[inline(always)]
pub fn shuffle_up<T: WarpValue>(v: T, delta: u32) -> T {
    #[cfg(target_arch = "nvptx64")]
    {
        shfl(ShflMode::Up, v, delta, 0)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        host_shfl(WarpOp::ShflUp, v, delta)
    }
}

/// The `v` of lane `lane_id() + delta`, or the caller's own `v` for lanes
/// `> 31 - delta` (CUDA `__shfl_down_sync`, PTX `shfl.sync.down`).
#[inline(always)]
pub fn shuffle_down<T: WarpValue>(v: T, delta: u32) -> T {
    #[cfg(target_arch = "nvptx64")]
    {
        shfl(ShflMode::Down, v, delta, 0x1f)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        host_shfl(WarpOp::ShflDown, v, delta)
    }
}

/// The `v` of lane `lane_id() ^ lane_mask` (CUDA `__shfl_xor_sync`, PTX
/// `shfl.sync.bfly`): the butterfly exchange of reductions.
#[inline(always)]
pub fn shuffle_xor<T: WarpValue>(v: T, lane_mask: u32) -> T {
    #[cfg(target_arch = "nvptx64")]
    {
        shfl(ShflMode::Bfly, v, lane_mask, 0x1f)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        host_shfl(WarpOp::ShflXor, v, lane_mask)
    }
}

/// `true` if `pred` is true in every lane of the warp (CUDA
/// `__all_sync`, PTX `vote.sync.all.pred`).
#[inline(always)]
pub fn all(pred: bool) -> bool {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: as in `shfl`.
    unsafe {
        nv::vote_all(converged(names::ALL), pred)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        warp_collective(WarpOp::All, pred as u64, 0) != 0
    }
}

/// `true` if `pred` is true in some lane of the warp (CUDA `__any_sync`,
/// PTX `vote.sync.any.pred`).
#[inline(always)]
pub fn any(pred: bool) -> bool {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: as in `shfl`.
    unsafe {
        nv::vote_any(converged(names::ANY), pred)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        warp_collective(WarpOp::Any, pred as u64, 0) != 0
    }
}

/// Bit `l` set iff `pred` is true in lane `l` (CUDA `__ballot_sync`, PTX
/// `vote.sync.ballot.b32`).
#[inline(always)]
pub fn ballot(pred: bool) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: as in `shfl`.
    unsafe {
        nv::vote_ballot(converged(names::BALLOT), pred)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        warp_collective(WarpOp::Ballot, pred as u64, 0) as u32
    }
}

/// Waits until every lane of the warp is here and orders their memory
/// accesses (CUDA `__syncwarp()`, PTX `bar.warp.sync`).
#[inline(always)]
pub fn sync_warp() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: as in `shfl`.
    unsafe {
        nv::bar_warp_sync(converged(names::SYNC_WARP))
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        warp_collective(WarpOp::Sync, 0, 0);
    }
}

/// The shuffles of a reduction: on the GPU the warp is checked once
/// ([`converged`]), before the first, then the shuffles go unchecked (a
/// check before each would let ptxas prove convergence of none of them:
/// about 12 SASS instructions per shuffle instead of 2 on sm_90). The host
/// fallback meets at each shuffle.
struct Lanes {
    /// The member mask: the lanes that exist.
    m: u32,
}

impl Lanes {
    #[inline(always)]
    fn new() -> Self {
        // Named as the host fallback names the first shuffle it meets at.
        #[cfg(target_arch = "nvptx64")]
        {
            Lanes { m: converged(if warp_mask() == u32::MAX { names::SHUFFLE_XOR } else { names::SHUFFLE_DOWN }) }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            Lanes { m: warp_mask() }
        }
    }

    #[inline(always)]
    fn xor<T: WarpValue>(&self, v: T, lane_mask: u32) -> T {
        #[cfg(target_arch = "nvptx64")]
        {
            shfl_masked(ShflMode::Bfly, self.m, v, lane_mask, 0x1f)
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            shuffle_xor(v, lane_mask)
        }
    }

    #[inline(always)]
    fn down<T: WarpValue>(&self, v: T, delta: u32) -> T {
        #[cfg(target_arch = "nvptx64")]
        {
            shfl_masked(ShflMode::Down, self.m, v, delta, 0x1f)
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            shuffle_down(v, delta)
        }
    }

    #[inline(always)]
    fn idx<T: WarpValue>(&self, v: T, lane: u32) -> T {
        #[cfg(target_arch = "nvptx64")]
        {
            shfl_masked(ShflMode::Idx, self.m, v, lane, 0x1f)
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            shuffle_idx(v, lane)
        }
    }

    /// `v` combined with `op` over the lanes that exist, to every lane.
    ///
    /// A full warp: a butterfly of five `shfl.sync.bfly` (offsets 16, 8, 4,
    /// 2, 1), after which every lane holds the result. A partial warp (the
    /// last warp of a block whose size is not a multiple of 32, or a block
    /// of fewer than 32 threads) has lanes whose butterfly partner does not
    /// exist, whose value is undefined on the GPU (PTX ISA, `shfl.sync`: a
    /// source lane outside the member mask): there a tree of
    /// `shfl.sync.down` (offsets 16, … 1) combines lane `l` with lane
    /// `l + offset` only where that lane exists, which leaves the result
    /// in lane 0, and `shfl.sync.idx` hands it to every lane. Both
    /// backends run the same steps in the same order, so float results are
    /// the same bits (the host fallback in one meeting of the warp where it
    /// can: [`host_reduce`](Self::host_reduce)).
    #[inline(always)]
    fn reduce<T: WarpValue, F: Fn(T, T) -> T + 'static>(&self, v: T, op: F) -> T {
        #[cfg(target_arch = "nvptx64")]
        {
            self.steps(v, &op, WARP_SIZE / 2)
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            self.host_reduce(v, op)
        }
    }

    /// The shuffles of [`reduce`](Self::reduce) from offset `offset` on.
    #[inline(always)]
    fn steps<T: WarpValue>(&self, mut v: T, op: &impl Fn(T, T) -> T, mut offset: u32) -> T {
        if self.m == u32::MAX {
            while offset > 0 {
                v = op(v, self.xor(v, offset));
                offset /= 2;
            }
            v
        } else {
            let (n, lane) = (self.m.count_ones(), lane_id());
            while offset > 0 {
                let o = self.down(v, offset);
                if lane + offset < n {
                    v = op(v, o);
                }
                offset /= 2;
            }
            self.idx(v, 0)
        }
    }

    /// [`reduce`](Self::reduce) on the host fallback: the first shuffle
    /// meets the warp as on the GPU; if every lane of the warp started this
    /// reduction (the same `T` and `op`), each lane computes its result of
    /// the remaining shuffles from the lanes' values (`hostsim::reduce`),
    /// which saves four or five meetings of the warp. Otherwise, and if a
    /// combination panics (an integer overflow under overflow checks, which
    /// must panic in the lane whose step it is), the shuffles go on one by
    /// one.
    #[cfg(not(target_arch = "nvptx64"))]
    #[inline(always)]
    fn host_reduce<T: WarpValue, F: Fn(T, T) -> T + 'static>(&self, mut v: T, op: F) -> T {
        use crate::hostsim::reduce;
        let full = self.m == u32::MAX;
        let half = WARP_SIZE / 2;
        let first = if full { WarpOp::ShflXor } else { WarpOp::ShflDown };
        let (mut r, lanes) = reduce::start(first, v.to_bits64(), half, reduce::key::<T, F>());
        if let Some(lanes) = lanes {
            let lane = lane_id() as usize;
            let bits = |a: u64, b: u64| op(T::from_bits64(a), T::from_bits64(b)).to_bits64();
            let all = std::panic::catch_unwind(core::panic::AssertUnwindSafe(|| reduce::result(lanes, lane, bits)));
            if let Ok(r) = all {
                return T::from_bits64(r);
            }
            r = lanes.first_shuffle(first, half, lane);
            crate::hostsim::entry::first_shuffle_was(r);
        } else if crate::hostsim::entry::recording() {
            // A collective of a kernel's body recorded its first meeting
            // (`hostsim::awaits`): the result is dropped, the rest need not
            // run.
            return v;
        }
        let shuffled = T::from_bits64(if T::WIDE { r } else { r & 0xffff_ffff });
        if full || lane_id() + half < self.m.count_ones() {
            v = op(v, shuffled);
        }
        self.steps(v, &op, half / 2)
    }
}

/// Sum of `v` over the lanes of the warp that exist, returned to every
/// lane. In a full warp the sum is a butterfly of five [`shuffle_xor`]s
/// (offsets 16, 8, 4, 2, 1); in a partial warp (a block of fewer than 32
/// threads, or the last warp of a block whose size is not a multiple of
/// 32) a tree of [`shuffle_down`]s to lane 0 over the lanes that exist,
/// then a broadcast. Floats are added in the same order on the GPU and
/// the host, so the results are the same bits.
#[inline(always)]
pub fn reduce_sum<T: WarpValue + Add<Output = T>>(v: T) -> T {
    Lanes::new().reduce(v, |a, b| a + b)
}

/// Maximum of `v` over the lanes of the warp that exist, to every lane (as
/// [`reduce_sum`]); for floats a NaN loses against numbers (as `f32::max`).
#[inline(always)]
pub fn reduce_max<T: WarpValue + PartialOrd>(v: T) -> T {
    // `x != x` only for a NaN: `T` is any `PartialOrd` value.
    #[allow(clippy::eq_op)]
    Lanes::new().reduce(v, |v, o| if o > v || (v != v && o == o) { o } else { v })
}

/// Minimum of `v` over the lanes of the warp that exist, to every lane; see
/// [`reduce_max`].
#[inline(always)]
pub fn reduce_min<T: WarpValue + PartialOrd>(v: T) -> T {
    // `x != x` only for a NaN: `T` is any `PartialOrd` value.
    #[allow(clippy::eq_op)]
    Lanes::new().reduce(v, |v, o| if o < v || (v != v && o == o) { o } else { v })
}
