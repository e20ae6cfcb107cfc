//! Warp reductions (`warp::reduce_sum`, `reduce_max`, `reduce_min`) in one
//! meeting of the warp instead of one per shuffle: a warp collective
//! computed over the array of its lanes.
//!
//! A reduction is five shuffles (six in a partial warp); on the host each
//! is a meeting of the warp's 32 simulated threads, two coroutine switches
//! per lane. The first shuffle stays a real meeting, with the same
//! semantics and divergence reports as before; the lanes also say which
//! reduction they start (its [`key`]: the value type and the combining
//! function). If the scheduler releases a warp all of whose lanes started
//! the same reduction with the same operands, it keeps their values
//! ([`snapshot`]) and the lanes' results of the remaining shuffles are
//! computed from them, by the first lane that asks for the whole warp
//! ([`result`]): the same operations on the same values in the same order
//! as the shuffles, so the same bits. Otherwise
//! (lanes at different reductions, or at a shuffle of their own that meets
//! the reduction's first), the lanes go on shuffle by shuffle, as the GPU
//! does.

use core::any::TypeId;
use core::cell::Cell;
use core::hash::{Hash, Hasher};
use core::ops::Range;

use super::collective::{warp_result, WarpOp, WARP};
use super::entry::{current, meet};
use super::state::Block;

/// The lanes' values at the first shuffle of a reduction that the whole
/// warp makes, in lane order, and the lanes' results once one lane has
/// computed them ([`result`]): the block's copies, valid until the warp's
/// next collective (which needs this lane first).
#[derive(Clone, Copy)]
pub(crate) struct WarpValues {
    values: &'static [Cell<u64>],
    results: &'static [Cell<u64>],
    /// [`FRESH`], [`DONE`] or [`FAILED`].
    state: &'static Cell<u8>,
}

/// The warp's results are not computed yet.
pub(super) const FRESH: u8 = 0;
/// They are, in `WarpValues::results`.
const DONE: u8 = 1;
/// Computing them panicked: each lane computes its own ([`lane_result`]),
/// which panics in the lanes whose combinations do.
const FAILED: u8 = 2;

/// The key of the reduction that combines values of type `T` with `F`:
/// equal for two lanes exactly when they run the same reduction (with
/// probability 1 - 2^-63), never 0.
pub(crate) fn key<T: 'static, F: 'static>() -> u64 {
    /// Folds the type's id (itself a hash) into 64 bits.
    struct Fold(u64);
    impl Hasher for Fold {
        fn finish(&self) -> u64 {
            self.0
        }
        fn write(&mut self, bytes: &[u8]) {
            for &b in bytes {
                self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            }
        }
        fn write_u64(&mut self, x: u64) {
            self.0 = (self.0.rotate_left(29) ^ x).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    let mut h = Fold(0);
    TypeId::of::<(T, F)>().hash(&mut h);
    h.finish() | 1
}

/// The first shuffle of a reduction (`op` with operand `arg` on `value`)
/// by the calling simulated thread, which starts reduction `key`: its
/// result, or the warp's values if every lane of the warp started the
/// same reduction with the same operands (then the caller computes the
/// rest with [`result`], and the first shuffle's result, which is not
/// returned, with [`WarpValues::first_shuffle`]). Outside a launch the warp is the calling
/// thread alone.
pub(crate) fn start(op: WarpOp, value: u64, arg: u32, key: u64) -> (u64, Option<WarpValues>) {
    let Some((b, t)) = current() else {
        return (warp_result(op, &[(value, arg)], 0), None);
    };
    let r = meet(b, t, op, value, arg, key);
    let w = t / WARP as usize;
    if b.uniform[w].get() != key || b.replay.get().recorded {
        return (r, None);
    }
    let lanes = b.lanes(w);
    (r, Some(WarpValues { values: &b.lanes[lanes.clone()], results: &b.reduced[lanes], state: &b.reduced_state[w] }))
}

impl WarpValues {
    /// Lane `lane`'s result of the reduction's first shuffle, `op` with
    /// operand `arg` (those of every lane), from the warp's values: what
    /// [`start`] returned before it knew the warp's values, which the
    /// scheduler did not compute.
    pub(crate) fn first_shuffle(&self, op: WarpOp, arg: u32, lane: usize) -> u64 {
        shuffle_of(self.values, op, arg, lane)
    }
}

/// Lane `lane`'s result of shuffle `op` with operand `arg` over the lanes'
/// values `values`.
fn shuffle_of(values: &[Cell<u64>], op: WarpOp, arg: u32, lane: usize) -> u64 {
    let mut inputs = [(0u64, 0u32); WARP as usize];
    for (i, v) in values.iter().enumerate() {
        inputs[i] = (v.get(), arg);
    }
    warp_result(op, &inputs[..values.len()], lane)
}

/// Lane `lane`'s result of the reduction with `op` over the warp's values
/// `w` (as [`lane_result`]): the first lane to ask computes every lane's,
/// in one pass over the warp (160 combinations instead of 31 per lane);
/// if that panics, each lane computes its own.
pub(crate) fn result(w: WarpValues, lane: usize, op: impl Fn(u64, u64) -> u64) -> u64 {
    match w.state.get() {
        DONE => w.results[lane].get(),
        FRESH => {
            w.state.set(FAILED);
            let all = std::panic::catch_unwind(core::panic::AssertUnwindSafe(|| whole_warp(w.values, w.results, &op)));
            if all.is_ok() {
                w.state.set(DONE);
                return w.results[lane].get();
            }
            lane_result(w.values, lane, op)
        }
        _ => lane_result(w.values, lane, op),
    }
}

/// Every lane's result of the reduction with `op` over the warp's values
/// `w`, into `out`: the full warp's butterfly step by step (lane `l`
/// combines its value with lane `l ^ o`'s, in that order), a partial
/// warp's tree once (every lane gets lane 0's).
fn whole_warp(w: &[Cell<u64>], out: &[Cell<u64>], op: &impl Fn(u64, u64) -> u64) {
    let n = w.len();
    if n < WARP as usize {
        let r = lane_result(w, 0, op);
        out.iter().for_each(|o| o.set(r));
        return;
    }
    let mut v = [0u64; WARP as usize];
    v.iter_mut().zip(w).for_each(|(v, w)| *v = w.get());
    let mut o = WARP as usize / 2;
    while o > 0 {
        let old = v;
        for (l, v) in v.iter_mut().enumerate() {
            *v = op(old[l], old[l ^ o]);
        }
        o /= 2;
    }
    out.iter().zip(&v).for_each(|(o, &v)| o.set(v));
}

/// The scheduler releases warp `w` (threads `lanes`): records whether all
/// its lanes started the same reduction with the same operands, and if so
/// their values; returns whether they did (then the lanes' results of the
/// first shuffle are not computed: [`WarpValues::first_shuffle`]).
pub(super) fn snapshot(b: &Block, w: usize, lanes: Range<usize>) -> bool {
    let key = b.key[lanes.start].get();
    let first = b.input[lanes.start].get();
    let same = key != 0
        && lanes.clone().all(|t| {
            let (op, _, arg) = b.input[t].get();
            b.key[t].get() == key && op == first.0 && arg == first.2
        });
    b.uniform[w].set(if same { key } else { 0 });
    b.reduced_state[w].set(FRESH);
    if same {
        for t in lanes {
            b.lanes[t].set(b.input[t].get().1);
        }
    }
    same
}

/// Lane `lane`'s result of the reduction with `op` over the warp's values,
/// as `warp`'s shuffles compute it: in a full warp a butterfly (lane `l`
/// combines its value with lane `l ^ o`'s, `o` = 16, 8, 4, 2, 1), in a
/// partial warp of `n` lanes a tree (lane `l` combines with lane `l + o`
/// where that lane exists) whose lane 0 every lane gets. Only the 31
/// combinations the result depends on are computed (at most 16 values at
/// a time).
pub(crate) fn lane_result(w: &[Cell<u64>], lane: usize, op: impl Fn(u64, u64) -> u64) -> u64 {
    const HALF: usize = WARP as usize / 2;
    let n = w.len();
    let mut v = [0u64; HALF];
    if n == WARP as usize {
        // The first step, from the lanes' values, for the aligned group of
        // 16 lanes holding `lane`: what the rest of the butterfly reads.
        let base = lane & HALF;
        for (j, v) in v.iter_mut().enumerate() {
            *v = op(w[base + j].get(), w[(base + j) ^ HALF].get());
        }
        // Then within the group (index `j` is lane `base + j`): partners
        // (`j ^ o`) lie outside the aligned group of `o` that is updated,
        // so updating in place reads only this step's inputs.
        let lane = lane - base;
        let mut o = HALF / 2;
        while o > 0 {
            let group = lane & !(o - 1);
            for j in group..group + o {
                v[j] = op(v[j], v[j ^ o]);
            }
            o /= 2;
        }
        v[lane]
    } else {
        // A tree to lane 0: step `o` combines lane `j < o` with `j + o`.
        for (j, v) in v.iter_mut().enumerate().take(n) {
            *v = if j + HALF < n { op(w[j].get(), w[j + HALF].get()) } else { w[j].get() };
        }
        let mut o = HALF / 2;
        while o > 0 {
            for j in 0..o.min(n) {
                if j + o < n {
                    v[j] = op(v[j], v[j + o]);
                }
            }
            o /= 2;
        }
        v[0]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shuffles of `warp::Lanes::reduce`, step by step over all lanes.
    fn by_shuffles(vals: &[u64], op: impl Fn(u64, u64) -> u64) -> std::vec::Vec<u64> {
        let n = vals.len();
        let mut v = vals.to_vec();
        let mut o = 16;
        while o > 0 {
            let old = v.clone();
            for l in 0..n {
                if n == 32 {
                    v[l] = op(old[l], old[l ^ o]);
                } else if l + o < n {
                    v[l] = op(old[l], old[l + o]);
                }
            }
            o /= 2;
        }
        if n < 32 {
            v = std::vec![v[0]; n];
        }
        v
    }

    #[test]
    fn one_lane_computes_what_the_shuffles_give() {
        // f32 sums: not associative, so the order shows.
        let add = |a: u64, b: u64| (f32::from_bits(a as u32) + f32::from_bits(b as u32)).to_bits() as u64;
        // max that keeps the first of equal values: -0.0 against 0.0 shows
        // which operand came first.
        let max = |a: u64, b: u64| if f32::from_bits(b as u32) > f32::from_bits(a as u32) { b } else { a };
        for n in [32usize, 31, 17, 5, 1] {
            let vals: std::vec::Vec<u64> = (0..n)
                .map(|l| (if l % 7 == 3 { -0.0f32 } else { 1.0 / (l as f32 + 0.37) * 1e3 }).to_bits() as u64)
                .collect();
            let w: std::vec::Vec<Cell<u64>> = vals.iter().map(|&v| Cell::new(v)).collect();
            for (name, op) in [("sum", &add as &dyn Fn(u64, u64) -> u64), ("max", &max)] {
                let want = by_shuffles(&vals, op);
                for l in 0..n {
                    assert_eq!(lane_result(&w, l, op), want[l], "{name}, {n} lanes, lane {l}");
                }
            }
        }
    }

    #[test]
    fn the_whole_warp_at_once_computes_what_the_shuffles_give() {
        let add = |a: u64, b: u64| (f32::from_bits(a as u32) + f32::from_bits(b as u32)).to_bits() as u64;
        let max = |a: u64, b: u64| if f32::from_bits(b as u32) > f32::from_bits(a as u32) { b } else { a };
        for n in [32usize, 31, 5, 1] {
            let vals: std::vec::Vec<u64> = (0..n)
                .map(|l| (if l % 7 == 3 { -0.0f32 } else { 1.0 / (l as f32 + 0.37) * 1e3 }).to_bits() as u64)
                .collect();
            let w: std::vec::Vec<Cell<u64>> = vals.iter().map(|&v| Cell::new(v)).collect();
            let out: std::vec::Vec<Cell<u64>> = std::vec![Cell::new(0); n];
            for (name, op) in [("sum", &add as &dyn Fn(u64, u64) -> u64), ("max", &max)] {
                whole_warp(&w, &out, &op);
                let want = by_shuffles(&vals, op);
                for (l, (o, w)) in out.iter().zip(&want).enumerate() {
                    assert_eq!(o.get(), *w, "{name}, {n} lanes, lane {l}");
                }
            }
        }
    }

    #[test]
    fn keys_tell_reductions_apart() {
        let (a, b) = (|x: u32, y: u32| x + y, |x: u32, y: u32| x.max(y));
        fn k<T: 'static, F: 'static>(_: &F) -> u64 {
            key::<T, F>()
        }
        assert_eq!(k::<u32, _>(&a), k::<u32, _>(&a));
        assert_ne!(k::<u32, _>(&a), k::<u32, _>(&b));
        assert_ne!(k::<u32, _>(&a), k::<i32, _>(&a));
        assert_ne!(k::<u32, _>(&a), 0);
    }
}
