//! `core::sync::atomic` with every operation and every memory ordering, and
//! message passing between blocks through read-modify-writes.
//!
//! One kernel per operation and ordering (`ord_<op>_<ordering>[_<failure>]`)
//! applies the operation to each kind of atomic of `core` that lowers
//! differently — `u32` (32-bit `atom`), `u64` (64-bit; `i32`, `i64` and
//! `usize` take the same paths, with `.s32`/`.s64` for min/max), `bool`
//! (8-bit: a compare-exchange loop on the enclosing word) and a pointer —
//! when it has the operation; the host checks the
//! final values against the operation folded over all threads with plain
//! arithmetic. The same kernels are what `cargo-offload`'s e2e test
//! `core_atomics_keep_their_orderings_in_the_ptx` reads in the PTX: every
//! ordering must be there (as `.acquire`/`.release`/`.acq_rel` on the
//! instruction or as fences around it; see offload-linker's `atomics`).

use core::sync::atomic::Ordering::{self, AcqRel, Acquire, Relaxed, Release, SeqCst};
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64};
use offload::{block_idx, global_index, kernel};

/// A read-modify-write of `core`'s atomics.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Rmw {
    Swap,
    Add,
    Sub,
    And,
    Nand,
    Or,
    Xor,
    Max,
    Min,
}

/// The atomics a kernel works on, each in its own argument: `u32` in `u`,
/// `bool` in byte 0 of `b`, `u64` in `w`, a pointer in `p` (references,
/// not slices: no bounds checks, so the kernels are small and can't panic).
struct Cells<'a> {
    u: &'a AtomicU32,
    b: &'a AtomicU32,
    w: &'a AtomicU64,
    p: &'a AtomicU64,
}

const _: () = assert!(core::mem::size_of::<*mut u8>() == 8);

impl<'a> Cells<'a> {
    fn boolean(&self) -> &'a AtomicBool {
        // SAFETY: byte 0 of `b` is valid for `'a` and aligned for a `bool`
        // (alignment 1); the host stores 0 or 1 in the cell, and during the
        // launch the byte is only accessed through `AtomicBool`s (which keep
        // it 0 or 1), never concurrently with the `u32` cell.
        unsafe { AtomicBool::from_ptr(self.b.as_ptr() as *mut bool) }
    }
    fn pointer(&self) -> &'a AtomicPtr<u8> {
        // SAFETY: `p` is a valid, 8-byte aligned 8-byte cell for `'a`
        // (pointers are 8 bytes on both targets, checked above), accessed
        // only through this `AtomicPtr` during the launch; every bit pattern
        // is a valid pointer value (never dereferenced: only its address is
        // used).
        unsafe { AtomicPtr::from_ptr(self.p.as_ptr() as *mut *mut u8) }
    }
}

/// The operand thread `g` uses with `op` (as `u64`; each type takes its
/// own width). `Nand` uses 0, which makes every order give all ones.
#[inline(always)]
pub fn operand(op: Rmw, g: u64) -> u64 {
    match op {
        Rmw::Swap => g + 1,
        Rmw::Add | Rmw::Sub => 1,
        Rmw::And => !(1u64 << (g % 32)),
        Rmw::Nand => 0,
        Rmw::Or => 1u64 << (g % 32),
        Rmw::Xor => g.wrapping_mul(0x9E37_79B9),
        Rmw::Max | Rmw::Min => g.wrapping_mul(2654435761) % 1000,
    }
}

/// The `bool` operand of thread `g`.
#[inline(always)]
pub fn bool_operand(op: Rmw, g: u64) -> bool {
    match op {
        Rmw::Swap | Rmw::Or => g.is_multiple_of(3),
        Rmw::And => g % 5 != 1,
        Rmw::Nand => false,
        _ => g.is_multiple_of(2),
    }
}

macro_rules! int_rmw {
    ($a:expr, $op:expr, $v:expr, $o:expr) => {{
        let (a, v, o) = ($a, $v, $o);
        match $op {
            Rmw::Swap => a.swap(v, o),
            Rmw::Add => a.fetch_add(v, o),
            Rmw::Sub => a.fetch_sub(v, o),
            Rmw::And => a.fetch_and(v, o),
            Rmw::Nand => a.fetch_nand(v, o),
            Rmw::Or => a.fetch_or(v, o),
            Rmw::Xor => a.fetch_xor(v, o),
            Rmw::Max => a.fetch_max(v, o),
            Rmw::Min => a.fetch_min(v, o),
        }
    }};
}

/// `op` with ordering `o` on every type that has it; the xor of the
/// previous values.
#[inline(always)]
fn rmw_all(c: &Cells<'_>, op: Rmw, o: Ordering) -> u64 {
    let g = global_index() as u64;
    let v = operand(op, g);
    let mut acc = int_rmw!(c.u, op, v as u32, o) as u64;
    acc ^= int_rmw!(c.w, op, v << 20, o);
    let b = bool_operand(op, g);
    acc ^= match op {
        Rmw::Swap => c.boolean().swap(b, o),
        Rmw::And => c.boolean().fetch_and(b, o),
        Rmw::Nand => c.boolean().fetch_nand(b, o),
        Rmw::Or => c.boolean().fetch_or(b, o),
        Rmw::Xor => c.boolean().fetch_xor(b, o),
        _ => false,
    } as u64;
    if op == Rmw::Swap {
        acc ^= c.pointer().swap(core::ptr::without_provenance_mut(v as usize), o).addr() as u64;
    }
    acc
}

/// Which compare-exchange a kernel increments with.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Cas {
    Strong,
    Weak,
    Update,
}

macro_rules! cas_step {
    ($a:expr, $kind:expr, $s:expr, $f:expr, $next:expr) => {{
        let (a, s, f) = ($a, $s, $f);
        let next = $next;
        match $kind {
            // `next` always succeeds, so `Err` never happens.
            Cas::Update => a.fetch_update(s, f, |x| Some(next(x))).unwrap_or_else(|x| x),
            Cas::Strong => {
                let mut cur = a.load(Relaxed);
                loop {
                    match a.compare_exchange(cur, next(cur), s, f) {
                        Ok(prev) => break prev,
                        Err(now) => cur = now,
                    }
                }
            }
            Cas::Weak => {
                let mut cur = a.load(Relaxed);
                loop {
                    match a.compare_exchange_weak(cur, next(cur), s, f) {
                        Ok(prev) => break prev,
                        Err(now) => cur = now,
                    }
                }
            }
        }
    }};
}

/// Every type incremented once (a `bool` toggled, a pointer's address + 1)
/// through `kind` with orderings `s` (success) and `f` (failure).
/// (`fetch_update` is deprecated in favour of `try_update` in newer `core`:
/// both are the same loop.)
#[allow(deprecated)]
#[inline(always)]
fn cas_all(c: &Cells<'_>, kind: Cas, s: Ordering, f: Ordering) -> u64 {
    let mut acc = cas_step!(c.u, kind, s, f, |x: u32| x.wrapping_add(1)) as u64;
    acc ^= cas_step!(c.w, kind, s, f, |x: u64| x.wrapping_add(1));
    acc ^= cas_step!(c.boolean(), kind, s, f, |x: bool| !x) as u64;
    acc ^= cas_step!(c.pointer(), kind, s, f, |x: *mut u8| x.wrapping_add(1)).addr() as u64;
    acc
}

/// Every type loaded with ordering `o`; the xor of the values.
#[inline(always)]
fn load_all(c: &Cells<'_>, o: Ordering) -> u64 {
    c.u.load(o) as u64 ^ c.w.load(o) ^ c.boolean().load(o) as u64 ^ c.pointer().load(o).addr() as u64
}

/// The value every thread stores into every type (`STORED`, as each type).
pub const STORED: u64 = 0x1234_5678;

#[inline(always)]
fn store_all(c: &Cells<'_>, o: Ordering) -> u64 {
    c.u.store(STORED as u32, o);
    c.w.store(STORED, o);
    c.boolean().store(true, o);
    c.pointer().store(core::ptr::without_provenance_mut(STORED as usize), o);
    0
}

/// What a kernel of the table does.
#[derive(Clone, Copy, Debug)]
pub enum Op {
    Load(Ordering),
    Store(Ordering),
    Rmw(Rmw, Ordering),
    Cas(Cas, Ordering, Ordering),
}

#[inline(always)]
fn run(op: Op, u: &AtomicU32, b: &AtomicU32, w: &AtomicU64, p: &AtomicU64) -> u64 {
    let c = Cells { u, b, w, p };
    match op {
        Op::Load(o) => load_all(&c, o),
        Op::Store(o) => store_all(&c, o),
        Op::Rmw(r, o) => rmw_all(&c, r, o),
        Op::Cas(k, s, f) => cas_all(&c, k, s, f),
    }
}

/// The launcher of every kernel of the table.
#[offload::host]
type Launch =
    fn(offload::LaunchConfig, &AtomicU32, &AtomicU32, &AtomicU64, &AtomicU64, &mut [u64]) -> offload::Result<()>;

macro_rules! kernels {
    ($($name:ident: $op:expr;)*) => {
        $(
            #[kernel]
            fn $name(u: &AtomicU32, b: &AtomicU32, w: &AtomicU64, p: &AtomicU64, out: &mut [u64]) {
                let r = run($op, u, b, w, p);
                if let Some((_, o)) = out.at_thread() {
                    *o = r;
                }
            }
        )*
        /// Every kernel: name, operation, launcher.
        #[offload::host]
        pub const KERNELS: &[(&str, Op, Launch)] = &[
            $((stringify!($name), $op, |c, u, b, w, p, o| $name(c, u, b, w, p, o)),)*
        ];
    };
}

use Cas::{Strong, Update, Weak};
use Op::{Cas as C, Load, Rmw as R, Store};
use Rmw::{Add, And, Max, Min, Nand, Or, Sub, Swap, Xor};

kernels! {
    ord_load_relaxed: Load(Relaxed);
    ord_load_acquire: Load(Acquire);
    ord_load_seqcst: Load(SeqCst);
    ord_store_relaxed: Store(Relaxed);
    ord_store_release: Store(Release);
    ord_store_seqcst: Store(SeqCst);
    ord_swap_relaxed: R(Swap, Relaxed);
    ord_swap_acquire: R(Swap, Acquire);
    ord_swap_release: R(Swap, Release);
    ord_swap_acqrel: R(Swap, AcqRel);
    ord_swap_seqcst: R(Swap, SeqCst);
    ord_fetch_add_relaxed: R(Add, Relaxed);
    ord_fetch_add_acquire: R(Add, Acquire);
    ord_fetch_add_release: R(Add, Release);
    ord_fetch_add_acqrel: R(Add, AcqRel);
    ord_fetch_add_seqcst: R(Add, SeqCst);
    ord_fetch_sub_relaxed: R(Sub, Relaxed);
    ord_fetch_sub_acquire: R(Sub, Acquire);
    ord_fetch_sub_release: R(Sub, Release);
    ord_fetch_sub_acqrel: R(Sub, AcqRel);
    ord_fetch_sub_seqcst: R(Sub, SeqCst);
    ord_fetch_and_relaxed: R(And, Relaxed);
    ord_fetch_and_acquire: R(And, Acquire);
    ord_fetch_and_release: R(And, Release);
    ord_fetch_and_acqrel: R(And, AcqRel);
    ord_fetch_and_seqcst: R(And, SeqCst);
    ord_fetch_nand_relaxed: R(Nand, Relaxed);
    ord_fetch_nand_acquire: R(Nand, Acquire);
    ord_fetch_nand_release: R(Nand, Release);
    ord_fetch_nand_acqrel: R(Nand, AcqRel);
    ord_fetch_nand_seqcst: R(Nand, SeqCst);
    ord_fetch_or_relaxed: R(Or, Relaxed);
    ord_fetch_or_acquire: R(Or, Acquire);
    ord_fetch_or_release: R(Or, Release);
    ord_fetch_or_acqrel: R(Or, AcqRel);
    ord_fetch_or_seqcst: R(Or, SeqCst);
    ord_fetch_xor_relaxed: R(Xor, Relaxed);
    ord_fetch_xor_acquire: R(Xor, Acquire);
    ord_fetch_xor_release: R(Xor, Release);
    ord_fetch_xor_acqrel: R(Xor, AcqRel);
    ord_fetch_xor_seqcst: R(Xor, SeqCst);
    ord_fetch_max_relaxed: R(Max, Relaxed);
    ord_fetch_max_acquire: R(Max, Acquire);
    ord_fetch_max_release: R(Max, Release);
    ord_fetch_max_acqrel: R(Max, AcqRel);
    ord_fetch_max_seqcst: R(Max, SeqCst);
    ord_fetch_min_relaxed: R(Min, Relaxed);
    ord_fetch_min_acquire: R(Min, Acquire);
    ord_fetch_min_release: R(Min, Release);
    ord_fetch_min_acqrel: R(Min, AcqRel);
    ord_fetch_min_seqcst: R(Min, SeqCst);
    ord_compare_exchange_relaxed_relaxed: C(Strong, Relaxed, Relaxed);
    ord_compare_exchange_relaxed_acquire: C(Strong, Relaxed, Acquire);
    ord_compare_exchange_relaxed_seqcst: C(Strong, Relaxed, SeqCst);
    ord_compare_exchange_acquire_relaxed: C(Strong, Acquire, Relaxed);
    ord_compare_exchange_acquire_acquire: C(Strong, Acquire, Acquire);
    ord_compare_exchange_acquire_seqcst: C(Strong, Acquire, SeqCst);
    ord_compare_exchange_release_relaxed: C(Strong, Release, Relaxed);
    ord_compare_exchange_release_acquire: C(Strong, Release, Acquire);
    ord_compare_exchange_release_seqcst: C(Strong, Release, SeqCst);
    ord_compare_exchange_acqrel_relaxed: C(Strong, AcqRel, Relaxed);
    ord_compare_exchange_acqrel_acquire: C(Strong, AcqRel, Acquire);
    ord_compare_exchange_acqrel_seqcst: C(Strong, AcqRel, SeqCst);
    ord_compare_exchange_seqcst_relaxed: C(Strong, SeqCst, Relaxed);
    ord_compare_exchange_seqcst_acquire: C(Strong, SeqCst, Acquire);
    ord_compare_exchange_seqcst_seqcst: C(Strong, SeqCst, SeqCst);
    ord_compare_exchange_weak_relaxed_relaxed: C(Weak, Relaxed, Relaxed);
    ord_compare_exchange_weak_relaxed_acquire: C(Weak, Relaxed, Acquire);
    ord_compare_exchange_weak_relaxed_seqcst: C(Weak, Relaxed, SeqCst);
    ord_compare_exchange_weak_acquire_relaxed: C(Weak, Acquire, Relaxed);
    ord_compare_exchange_weak_acquire_acquire: C(Weak, Acquire, Acquire);
    ord_compare_exchange_weak_acquire_seqcst: C(Weak, Acquire, SeqCst);
    ord_compare_exchange_weak_release_relaxed: C(Weak, Release, Relaxed);
    ord_compare_exchange_weak_release_acquire: C(Weak, Release, Acquire);
    ord_compare_exchange_weak_release_seqcst: C(Weak, Release, SeqCst);
    ord_compare_exchange_weak_acqrel_relaxed: C(Weak, AcqRel, Relaxed);
    ord_compare_exchange_weak_acqrel_acquire: C(Weak, AcqRel, Acquire);
    ord_compare_exchange_weak_acqrel_seqcst: C(Weak, AcqRel, SeqCst);
    ord_compare_exchange_weak_seqcst_relaxed: C(Weak, SeqCst, Relaxed);
    ord_compare_exchange_weak_seqcst_acquire: C(Weak, SeqCst, Acquire);
    ord_compare_exchange_weak_seqcst_seqcst: C(Weak, SeqCst, SeqCst);
    ord_fetch_update_relaxed_relaxed: C(Update, Relaxed, Relaxed);
    ord_fetch_update_relaxed_acquire: C(Update, Relaxed, Acquire);
    ord_fetch_update_relaxed_seqcst: C(Update, Relaxed, SeqCst);
    ord_fetch_update_acquire_relaxed: C(Update, Acquire, Relaxed);
    ord_fetch_update_acquire_acquire: C(Update, Acquire, Acquire);
    ord_fetch_update_acquire_seqcst: C(Update, Acquire, SeqCst);
    ord_fetch_update_release_relaxed: C(Update, Release, Relaxed);
    ord_fetch_update_release_acquire: C(Update, Release, Acquire);
    ord_fetch_update_release_seqcst: C(Update, Release, SeqCst);
    ord_fetch_update_acqrel_relaxed: C(Update, AcqRel, Relaxed);
    ord_fetch_update_acqrel_acquire: C(Update, AcqRel, Acquire);
    ord_fetch_update_acqrel_seqcst: C(Update, AcqRel, SeqCst);
    ord_fetch_update_seqcst_relaxed: C(Update, SeqCst, Relaxed);
    ord_fetch_update_seqcst_acquire: C(Update, SeqCst, Acquire);
    ord_fetch_update_seqcst_seqcst: C(Update, SeqCst, SeqCst);
}

// ---------------------------------------------------------------------------
// Message passing across blocks

/// Orderings of the message-passing kernel: the producer's RMW on the flag,
/// the consumer's.
pub const MP_MODES: [(&str, Ordering, Ordering); 4] = [
    ("Relaxed", Relaxed, Relaxed),
    ("Release/Acquire", Release, Acquire),
    ("AcqRel", AcqRel, AcqRel),
    ("SeqCst", SeqCst, SeqCst),
];

/// The data pair `p` carries.
#[inline(always)]
pub fn payload(p: u32) -> u32 {
    p.wrapping_mul(0x9E37_79B9) | 1
}

/// Message passing between blocks: thread `t` of block `b` produces pair
/// `p = b·blockDim + t` (stores `payload(p)` into `data[p]` with a relaxed
/// store, then adds 1 to `flag[p]` with the producer's RMW ordering) and,
/// if `b > 0`, consumes pair `p − blockDim` of the block before (adds 0 to
/// its flag with the consumer's ordering, reads its data relaxed, up to
/// `spins` times until the flag is set). `out[p]`: 0 = the flag was never
/// seen, 1 = seen with the data, 2 = seen with stale data (forbidden by the
/// release/acquire pair: the consumer's RMW reads the producer's, so the
/// producer's earlier store happens-before the consumer's later load).
#[kernel]
fn message_passing(mode: u32, spins: u32, data: &[AtomicU32], flag: &[AtomicU32], out: &mut [u32]) {
    let (_, produce, consume) = MP_MODES[mode as usize];
    let bd = offload::block_dim().x as usize;
    let p = global_index();
    if p < data.len() {
        data[p].store(payload(p as u32), Relaxed);
        flag[p].fetch_add(1, produce);
    }
    let mut seen = 0;
    if block_idx().x > 0 && p < data.len() {
        let q = p - bd;
        for _ in 0..spins {
            // The flag and the data are read back to back, so that without
            // the acquire the data load may be performed first.
            let f = flag[q].fetch_add(0, consume);
            let d = data[q].load(Relaxed);
            if f != 0 {
                seen = if d == payload(q as u32) { 1 } else { 2 };
                break;
            }
        }
    }
    if let Some((_, o)) = out.at_thread() {
        *o = seen;
    }
}

#[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
mod host {
    use super::*;

    /// The values the atomics start with.
    pub struct Init {
        pub u: u32,
        pub b: bool,
        pub w: u64,
        pub p: usize,
    }

    pub const INIT: Init = Init { u: 0x00ff_00f0, b: true, w: 0x0123_4567_89ab_cdef, p: 0x1000 };

    /// Folds `op` over the operands of threads `0..n` with plain
    /// arithmetic: the final value for every order of the threads (`Swap`
    /// excepted; `Nand`'s operand makes every order give all ones).
    fn fold<T: Copy>(init: T, n: u64, v: impl Fn(u64) -> T, f: impl Fn(T, T) -> T) -> T {
        (0..n).fold(init, |acc, g| f(acc, v(g)))
    }

    /// The final values after `op` by `n` threads: `u32`, `u64`, `bool`.
    pub fn expected_rmw(op: Rmw, n: u64) -> (u32, u64, bool) {
        let e = |x: u64| operand(op, x);
        macro_rules! f {
            ($t:ty) => {
                |a: $t, b: $t| -> $t {
                    match op {
                        Rmw::Swap => b,
                        Rmw::Add => a.wrapping_add(b),
                        Rmw::Sub => a.wrapping_sub(b),
                        Rmw::And => a & b,
                        Rmw::Nand => !(a & b),
                        Rmw::Or => a | b,
                        Rmw::Xor => a ^ b,
                        Rmw::Max => a.max(b),
                        Rmw::Min => a.min(b),
                    }
                }
            };
        }
        let u = fold(INIT.u, n, |g| e(g) as u32, f!(u32));
        let w = fold(INIT.w, n, |g| e(g) << 20, f!(u64));
        let b = match op {
            Rmw::Swap | Rmw::And | Rmw::Nand | Rmw::Or | Rmw::Xor => fold(
                INIT.b,
                n,
                |g| bool_operand(op, g),
                |a, b| match op {
                    Rmw::Swap => b,
                    Rmw::And => a & b,
                    Rmw::Nand => !(a & b),
                    Rmw::Or => a | b,
                    _ => a ^ b,
                },
            ),
            _ => INIT.b,
        };
        (u, w, b)
    }
}

#[offload::host]
pub fn check() -> Result<String, String> {
    use host::*;
    let (blocks, bs) = (2u32, 64u32);
    let n = (blocks * bs) as u64;
    for &(name, op, launch) in KERNELS {
        let (u, b) = (AtomicU32::new(INIT.u), AtomicU32::new(INIT.b as u32));
        let (w, p) = (AtomicU64::new(INIT.w), AtomicU64::new(INIT.p as u64));
        let mut out = vec![0u64; n as usize];
        launch(offload::LaunchConfig::new(blocks, bs), &u, &b, &w, &p, &mut out).map_err(|e| format!("{name}: {e}"))?;
        let got = (u.load(Relaxed), w.load(Relaxed), b.load(Relaxed) != 0, p.load(Relaxed) as usize);
        let want = match op {
            Op::Load(_) => {
                let x = INIT.u as u64 ^ INIT.w ^ INIT.b as u64 ^ INIT.p as u64;
                if let Some(g) = out.iter().position(|&o| o != x) {
                    return Err(format!("{name}: thread {g} loaded {:#x}, expected {x:#x}", out[g]));
                }
                (INIT.u, INIT.w, INIT.b, INIT.p)
            }
            Op::Store(_) => (STORED as u32, STORED, true, STORED as usize),
            Op::Cas(..) => {
                (INIT.u.wrapping_add(n as u32), INIT.w.wrapping_add(n), INIT.b ^ (n % 2 == 1), INIT.p + n as usize)
            }
            Op::Rmw(Rmw::Swap, _) => {
                // The last swap wins: some thread's operand.
                let ok = (0..n).any(|g| got.0 == operand(Rmw::Swap, g) as u32)
                    && (0..n).any(|g| got.1 == operand(Rmw::Swap, g) << 20)
                    && (0..n).any(|g| got.3 == operand(Rmw::Swap, g) as usize)
                    && (0..n).any(|g| got.2 == bool_operand(Rmw::Swap, g));
                if !ok {
                    return Err(format!("{name}: {got:?} is not the operand of a thread"));
                }
                got
            }
            Op::Rmw(r, _) => {
                let (u, w, b) = expected_rmw(r, n);
                (u, w, b, INIT.p)
            }
        };
        if got != want {
            return Err(format!("{name}: final values {got:x?}, expected {want:x?}"));
        }
    }

    // Message passing: at least 80,000 observed pairs per ordering.
    let (mp_blocks, mp_bs) = (321u32, 256u32);
    let pairs = ((mp_blocks - 1) * mp_bs) as usize;
    let mut report = Vec::new();
    for (mode, &(label, _, _)) in MP_MODES.iter().enumerate() {
        let len = (mp_blocks * mp_bs) as usize;
        let data: Vec<AtomicU32> = (0..len).map(|_| AtomicU32::new(0)).collect();
        let flag: Vec<AtomicU32> = (0..len).map(|_| AtomicU32::new(0)).collect();
        let mut out = vec![0u32; len];
        message_passing(offload::LaunchConfig::new(mp_blocks, mp_bs), mode as u32, 1 << 16, &data, &flag, &mut out)
            .map_err(|e| format!("message passing ({label}): {e}"))?;
        let seen = out.iter().filter(|&&o| o != 0).count();
        let stale = out.iter().filter(|&&o| o == 2).count();
        if mode > 0 && stale > 0 {
            return Err(format!("message passing with {label} RMWs: {stale} stale reads in {seen} observed pairs"));
        }
        if seen < 80_000 && mode > 0 {
            return Err(format!("message passing with {label} RMWs: only {seen} of {pairs} pairs observed"));
        }
        report.push(format!("{label} {stale}/{seen}"));
    }
    Ok(format!(
        "{} kernels (op x ordering) exact; message passing stale/observed: {}",
        KERNELS.len(),
        report.join(", ")
    ))
}
