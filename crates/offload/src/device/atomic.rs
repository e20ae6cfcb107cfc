//! Atomic operations on global and shared memory (CUDA `atomicAdd` and
//! friends; PTX ISA, "Parallel Synchronization and Communication
//! Instructions: atom", and "Memory Consistency Model" for orderings and
//! scopes).
//!
//! # Where atomics live
//!
//! - **Global memory**: a kernel parameter `x: &[AtomicU32]` (or
//!   `&AtomicU32`, and the other types below) is copied to the device before
//!   the launch *and back after it*; every thread may update any element.
//!   On the host the caller's atomics are used directly.
//! - **Shared memory**: every cell of a [`SharedArray`](crate::SharedArray)
//!   is an atomic ([`SharedArray::atomic`](crate::SharedArray::atomic)).
//!
//! # Operations
//!
//! `core::sync::atomic`'s `AtomicI32`, `AtomicU32`, `AtomicI64`,
//! `AtomicU64` (and `AtomicBool`, `AtomicUsize`, `AtomicPtr`, …, on memory
//! a kernel can reach) are used as they are, with the meaning `core`
//! documents for every ordering. What they become in PTX (checked for every
//! operation and ordering by the e2e test
//! `core_atomics_keep_their_orderings_in_the_ptx`, which reads the PTX of
//! `tests/device-model`'s `orderings` kernels):
//!
//! | `core` | PTX (sm_70+) |
//! | --- | --- |
//! | `load` | `ld.relaxed.sys` / `ld.acquire.sys`; `SeqCst`: `fence.sc.sys` first |
//! | `store` | `st.relaxed.sys` / `st.release.sys`; `SeqCst`: `fence.sc.sys` first |
//! | `compare_exchange`, `compare_exchange_weak`, `fetch_update` | `atom.<sem>.sys.cas` (`.relaxed`, `.acquire`, `.release`, `.acq_rel`; `SeqCst`: `fence.sc.sys` + `.acquire`) |
//! | `swap`, `fetch_add/sub/and/or/xor/max/min`, LLVM 23 (rustup nightly) | `atom.<sem>.sys.<op>`, as `cas` |
//! | the same, LLVM 22 (Debian's rustc 1.96) | `atom.<op>` (relaxed, `.gpu` scope) with the device link's fences: `fence.acq_rel.sys` before it for `Release`/`AcqRel`, `fence.sc.sys` before it for `SeqCst`, `fence.acq_rel.sys` after it for `Acquire`/`AcqRel`/`SeqCst` |
//! | `fetch_nand`, 8- and 16-bit types (`AtomicBool`) | a loop of `atom.relaxed.sys.cas` between the same fences |
//!
//! LLVM 22's NVPTX backend drops the ordering of read-modify-writes (an
//! `AcqRel` `fetch_add` is a plain relaxed `atom.add`); offload's device
//! link puts the fences back (see offload-linker's `atomics`). Its
//! read-modify-writes stay at `.gpu` scope: atomic with respect to every
//! thread of the device, which is where kernel atomics live during a
//! launch. [`AtomicF32`] and [`AtomicF64`] add floating-point `fetch_add`
//! (`atom.add.f32` / `.f64`), which `core` lacks.
//!
//! # Scopes
//!
//! `core`'s operations are system-scoped (device-scoped read-modify-writes
//! with LLVM 22, see above), and their non-relaxed orderings fence at
//! system scope: correct everywhere, but a block-scoped atomic on shared
//! memory or a device-scoped counter can be much cheaper. [`ScopedAtomic`] takes a [`Scope`] explicitly (PTX `.cta`,
//! `.gpu`, `.sys`). On the host fallback every scope is the system scope,
//! which is at least as strong, so results are the same.
//!
//! [`ScopedAtomic`]'s orderings map as in the PTX ISA's C++ mapping, in
//! inline PTX (so whatever the LLVM version): `Relaxed` → `.relaxed`,
//! `Acquire` → `.acquire`, `Release` → `.release`, `AcqRel` → `.acq_rel`,
//! `SeqCst` → `fence.sc` followed by `.acq_rel`.

pub use core::sync::atomic::{AtomicI32, AtomicI64, AtomicU32, AtomicU64, Ordering};

/// The set of threads an atomic operation or fence is atomic / ordered with
/// respect to (PTX ISA, "Scope").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The threads of the block (`.cta`): enough for shared memory.
    Block,
    /// The threads of the device (`.gpu`): enough for global memory that
    /// only kernels on this GPU touch.
    Device,
    /// All threads, including the host and other GPUs (`.sys`).
    System,
}

/// A 32-bit float with atomic operations (stored as its bits in an
/// [`AtomicU32`]). `fetch_add` is `atom.add.f32` on the GPU and a
/// compare-exchange loop on the host; both round the sum to nearest even
/// (CUDA's `atomicAdd(float*)` does not flush denormals on sm_90).
#[repr(transparent)]
#[derive(Default)]
pub struct AtomicF32(AtomicU32);

/// A 64-bit float with atomic operations; see [`AtomicF32`]
/// (`atom.add.f64`, sm_60 and later).
#[repr(transparent)]
#[derive(Default)]
pub struct AtomicF64(AtomicU64);

macro_rules! float_atomic {
    ($name:ident, $f:ty, $bits:ty) => {
        impl $name {
            /// A new atomic holding `v`.
            pub const fn new(v: $f) -> Self {
                $name(<$bits>::new(v.to_bits()))
            }
            /// Loads the value.
            #[inline(always)]
            pub fn load(&self, order: Ordering) -> $f {
                <$f>::from_bits(self.0.load(order))
            }
            /// Stores `v`.
            #[inline(always)]
            pub fn store(&self, v: $f, order: Ordering) {
                self.0.store(v.to_bits(), order)
            }
            /// Stores `v`, returns the previous value.
            #[inline(always)]
            pub fn swap(&self, v: $f, order: Ordering) -> $f {
                <$f>::from_bits(self.0.swap(v.to_bits(), order))
            }
            /// Stores `new` if the value is bitwise equal to `current`;
            /// `Ok(previous)` if it was, `Err(actual)` if not.
            #[inline(always)]
            pub fn compare_exchange(
                &self,
                current: $f,
                new: $f,
                success: Ordering,
                failure: Ordering,
            ) -> Result<$f, $f> {
                self.0
                    .compare_exchange(current.to_bits(), new.to_bits(), success, failure)
                    .map(<$f>::from_bits)
                    .map_err(<$f>::from_bits)
            }
            /// Adds `v`, returns the previous value (system scope).
            #[inline(always)]
            pub fn fetch_add(&self, v: $f, order: Ordering) -> $f {
                self.fetch_add_scoped(v, order, Scope::System)
            }
            /// The value, through an exclusive reference.
            pub fn into_inner(self) -> $f {
                <$f>::from_bits(self.0.into_inner())
            }
            /// The underlying bits' atomic.
            pub fn as_bits(&self) -> &$bits {
                &self.0
            }
        }
        impl core::fmt::Debug for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                core::fmt::Debug::fmt(&self.load(Ordering::Relaxed), f)
            }
        }
    };
}
float_atomic!(AtomicF32, f32, AtomicU32);
float_atomic!(AtomicF64, f64, AtomicU64);

/// Atomic read-modify-write with an explicit [`Scope`], for the integer
/// atomics of `core` and for [`AtomicF32`] / [`AtomicF64`] (`fetch_add`
/// only, plus `swap`).
///
/// Every method returns the value before the operation. `fetch_min` /
/// `fetch_max` compare as the type's sign says (`atom.min.s32` for `i32`,
/// `.u32` for `u32`). Wrapping arithmetic, as `core`'s.
pub trait ScopedAtomic {
    /// The value type.
    type Value: Copy;
    /// `*self += v` (`atom.add`).
    fn fetch_add_scoped(&self, v: Self::Value, order: Ordering, scope: Scope) -> Self::Value;
    /// `*self = v` (`atom.exch`).
    fn swap_scoped(&self, v: Self::Value, order: Ordering, scope: Scope) -> Self::Value;
}

/// Integer-only scoped operations; see [`ScopedAtomic`].
pub trait ScopedAtomicInt: ScopedAtomic {
    /// `*self -= v` (`atom.add` of the negation).
    fn fetch_sub_scoped(&self, v: Self::Value, order: Ordering, scope: Scope) -> Self::Value;
    /// `*self = min(*self, v)` (`atom.min`).
    fn fetch_min_scoped(&self, v: Self::Value, order: Ordering, scope: Scope) -> Self::Value;
    /// `*self = max(*self, v)` (`atom.max`).
    fn fetch_max_scoped(&self, v: Self::Value, order: Ordering, scope: Scope) -> Self::Value;
    /// `*self &= v` (`atom.and`).
    fn fetch_and_scoped(&self, v: Self::Value, order: Ordering, scope: Scope) -> Self::Value;
    /// `*self |= v` (`atom.or`).
    fn fetch_or_scoped(&self, v: Self::Value, order: Ordering, scope: Scope) -> Self::Value;
    /// `*self ^= v` (`atom.xor`).
    fn fetch_xor_scoped(&self, v: Self::Value, order: Ordering, scope: Scope) -> Self::Value;
    /// If `*self == current`, `*self = new` (`atom.cas`): `Ok(previous)` if
    /// it was stored, `Err(actual)` if not. The ordering applies to both
    /// outcomes.
    fn compare_exchange_scoped(
        &self,
        current: Self::Value,
        new: Self::Value,
        order: Ordering,
        scope: Scope,
    ) -> Result<Self::Value, Self::Value>;
}

/// A fence: orders this thread's memory accesses before it against those
/// after it, as seen by the threads of `scope` (PTX `fence.acq_rel.cta`,
/// `.gpu`, `.sys`; `SeqCst` gives `fence.sc`). CUDA's
/// `__threadfence_block()`, `__threadfence()`, `__threadfence_system()` are
/// `fence(SeqCst, Block / Device / System)`. `Relaxed` is a no-op.
#[inline(always)]
pub fn fence(order: Ordering, scope: Scope) {
    #[cfg(target_arch = "nvptx64")]
    {
        if order == Ordering::Relaxed {
            return;
        }
        ptx::fence(order == Ordering::SeqCst, scope)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let _ = scope;
        if order != Ordering::Relaxed {
            core::sync::atomic::fence(order)
        }
    }
}

// ---------------------------------------------------------------------------
// Host: core atomics (system scope everywhere), except block-scoped
// operations on the block's own shared memory (`private`).

#[cfg(not(target_arch = "nvptx64"))]
mod imp {
    use super::*;

    fn load_order(o: Ordering) -> Ordering {
        match o {
            Ordering::Release => Ordering::Relaxed,
            Ordering::AcqRel => Ordering::Acquire,
            o => o,
        }
    }

    /// Whether a `scope`-scoped operation on `cell` may be done without an
    /// atomic instruction: block scope on the running block's own shared
    /// memory on the host fallback, where only this OS thread runs the
    /// block's threads, one at a time (`hostsim::entry::block_private`).
    /// A relaxed load and store then give the same result as the
    /// read-modify-write, at the cost of plain accesses (the histogram of
    /// `examples/05-atomics` counts into shared memory this way).
    #[inline(always)]
    fn private<T>(cell: &T, scope: Scope) -> bool {
        #[cfg(not(target_arch = "amdgpu"))]
        {
            scope == Scope::Block
                && crate::hostsim::entry::block_private(cell as *const T as usize, core::mem::size_of::<T>())
        }
        #[cfg(target_arch = "amdgpu")]
        {
            let _ = (cell, scope);
            false
        }
    }

    /// `$op` on `$cell`, or, where [`private`] allows, the relaxed load of
    /// the old value, the store of `$new(old)` and the old value.
    macro_rules! rmw {
        ($cell:expr, $scope:expr, |$old:ident| $new:expr, $op:expr) => {
            if private($cell, $scope) {
                let $old = $cell.load(Ordering::Relaxed);
                $cell.store($new, Ordering::Relaxed);
                $old
            } else {
                $op
            }
        };
    }

    macro_rules! host_int {
        ($($a:ty => $t:ty),*) => {$(
            impl ScopedAtomic for $a {
                type Value = $t;
                #[inline(always)]
                fn fetch_add_scoped(&self, v: $t, o: Ordering, s: Scope) -> $t {
                    rmw!(self, s, |x| x.wrapping_add(v), self.fetch_add(v, o))
                }
                #[inline(always)]
                fn swap_scoped(&self, v: $t, o: Ordering, s: Scope) -> $t {
                    rmw!(self, s, |_x| v, self.swap(v, o))
                }
            }
            impl ScopedAtomicInt for $a {
                #[inline(always)]
                fn fetch_sub_scoped(&self, v: $t, o: Ordering, s: Scope) -> $t {
                    rmw!(self, s, |x| x.wrapping_sub(v), self.fetch_sub(v, o))
                }
                #[inline(always)]
                fn fetch_min_scoped(&self, v: $t, o: Ordering, s: Scope) -> $t {
                    rmw!(self, s, |x| x.min(v), self.fetch_min(v, o))
                }
                #[inline(always)]
                fn fetch_max_scoped(&self, v: $t, o: Ordering, s: Scope) -> $t {
                    rmw!(self, s, |x| x.max(v), self.fetch_max(v, o))
                }
                #[inline(always)]
                fn fetch_and_scoped(&self, v: $t, o: Ordering, s: Scope) -> $t {
                    rmw!(self, s, |x| x & v, self.fetch_and(v, o))
                }
                #[inline(always)]
                fn fetch_or_scoped(&self, v: $t, o: Ordering, s: Scope) -> $t {
                    rmw!(self, s, |x| x | v, self.fetch_or(v, o))
                }
                #[inline(always)]
                fn fetch_xor_scoped(&self, v: $t, o: Ordering, s: Scope) -> $t {
                    rmw!(self, s, |x| x ^ v, self.fetch_xor(v, o))
                }
                #[inline(always)]
                fn compare_exchange_scoped(&self, c: $t, n: $t, o: Ordering, s: Scope) -> Result<$t, $t> {
                    if private(self, s) {
                        let old = self.load(Ordering::Relaxed);
                        if old != c {
                            return Err(old);
                        }
                        self.store(n, Ordering::Relaxed);
                        return Ok(old);
                    }
                    self.compare_exchange(c, n, o, load_order(o))
                }
            }
        )*};
    }
    host_int!(AtomicU32 => u32, AtomicI32 => i32, AtomicU64 => u64, AtomicI64 => i64);

    macro_rules! host_float {
        ($($a:ty => $t:ty),*) => {$(
            impl ScopedAtomic for $a {
                type Value = $t;
                #[inline(always)]
                fn fetch_add_scoped(&self, v: $t, o: Ordering, s: Scope) -> $t {
                    if private(self, s) {
                        let old = self.load(Ordering::Relaxed);
                        self.store(old + v, Ordering::Relaxed);
                        return old;
                    }
                    let mut old = self.0.load(Ordering::Relaxed);
                    loop {
                        let new = (<$t>::from_bits(old) + v).to_bits();
                        match self.0.compare_exchange_weak(old, new, o, load_order(o)) {
                            Ok(_) => return <$t>::from_bits(old),
                            Err(actual) => old = actual,
                        }
                    }
                }
                #[inline(always)]
                fn swap_scoped(&self, v: $t, o: Ordering, s: Scope) -> $t {
                    rmw!(self, s, |_x| v, self.swap(v, o))
                }
            }
        )*};
    }
    host_float!(AtomicF32 => f32, AtomicF64 => f64);
}

// ---------------------------------------------------------------------------
// Device: inline PTX, one `atom` per (ordering, scope).

#[cfg(target_arch = "nvptx64")]
mod ptx {
    use super::Scope;
    use core::arch::asm;

    #[inline(always)]
    /// `fence.sc` or `fence.acq_rel` at `scope`.
    pub fn fence(sc: bool, scope: Scope) {
        // SAFETY: fences have no preconditions.
        unsafe {
            match (sc, scope) {
                (true, Scope::Block) => asm!("fence.sc.cta;", options(nostack)),
                (true, Scope::Device) => asm!("fence.sc.gpu;", options(nostack)),
                (true, Scope::System) => asm!("fence.sc.sys;", options(nostack)),
                (false, Scope::Block) => asm!("fence.acq_rel.cta;", options(nostack)),
                (false, Scope::Device) => asm!("fence.acq_rel.gpu;", options(nostack)),
                (false, Scope::System) => asm!("fence.acq_rel.sys;", options(nostack)),
            }
        }
    }

    /// Expands `$one!(sem, scope)` with the PTX qualifiers of the runtime
    /// ordering and scope: `.relaxed`, `.acquire`, `.release` or `.acq_rel`
    /// (`AcqRel` and `SeqCst`, the latter after a `fence.sc`) × `.cta`,
    /// `.gpu` or `.sys` (PTX ISA, "Memory Consistency Model").
    macro_rules! sem_scope {
        ($o:expr, $s:expr, $one:ident) => {{
            use $crate::atomic::{Ordering, Scope};
            match ($o, $s) {
                (Ordering::Relaxed, Scope::Block) => $one!("relaxed", "cta"),
                (Ordering::Relaxed, Scope::Device) => $one!("relaxed", "gpu"),
                (Ordering::Relaxed, Scope::System) => $one!("relaxed", "sys"),
                (Ordering::Acquire, Scope::Block) => $one!("acquire", "cta"),
                (Ordering::Acquire, Scope::Device) => $one!("acquire", "gpu"),
                (Ordering::Acquire, Scope::System) => $one!("acquire", "sys"),
                (Ordering::Release, Scope::Block) => $one!("release", "cta"),
                (Ordering::Release, Scope::Device) => $one!("release", "gpu"),
                (Ordering::Release, Scope::System) => $one!("release", "sys"),
                (_, Scope::Block) => $one!("acq_rel", "cta"),
                (_, Scope::Device) => $one!("acq_rel", "gpu"),
                (_, Scope::System) => $one!("acq_rel", "sys"),
            }
        }};
    }

    /// Emits `atom.<sem>.<scope>.<op>.<ty> d, [p], v;` for the runtime
    /// ordering and scope (see `sem_scope!`).
    macro_rules! atom {
        ($op:literal, $ty:literal, $reg:ident, $t:ty, $p:expr, $v:expr, $o:expr, $s:expr) => {{
            let p = $p;
            let v: $t = $v;
            let r: $t;
            if $o == $crate::atomic::Ordering::SeqCst {
                $crate::atomic::__ptx_fence(true, $s);
            }
            // SAFETY: `p` comes from a reference to a live atomic of the
            // right size and alignment; `atom` is atomic with respect to
            // every other access in the scope.
            unsafe {
                macro_rules! one {
                    ($sem:literal, $sc:literal) => {
                        ::core::arch::asm!(concat!("atom.", $sem, ".", $sc, ".", $op, ".", $ty, " {r}, [{p}], {v};"),
                             r = out($reg) r, p = in(reg64) p, v = in($reg) v, options(nostack))
                    };
                }
                sem_scope!($o, $s, one);
            }
            r
        }};
    }

    macro_rules! cas {
        ($ty:literal, $reg:ident, $t:ty, $p:expr, $c:expr, $n:expr, $o:expr, $s:expr) => {{
            let p = $p;
            let c: $t = $c;
            let n: $t = $n;
            let r: $t;
            if $o == $crate::atomic::Ordering::SeqCst {
                $crate::atomic::__ptx_fence(true, $s);
            }
            // SAFETY: as in `atom!`.
            unsafe {
                macro_rules! one {
                    ($sem:literal, $sc:literal) => {
                        ::core::arch::asm!(concat!("atom.", $sem, ".", $sc, ".cas.", $ty, " {r}, [{p}], {c}, {n};"),
                             r = out($reg) r, p = in(reg64) p, c = in($reg) c, n = in($reg) n, options(nostack))
                    };
                }
                sem_scope!($o, $s, one);
            }
            r
        }};
    }
    pub(super) use {atom, cas, sem_scope};
}

#[cfg(target_arch = "nvptx64")]
#[doc(hidden)]
pub use ptx::fence as __ptx_fence;

#[cfg(target_arch = "nvptx64")]
mod imp {
    use super::ptx::{atom, cas, sem_scope};
    use super::*;

    macro_rules! dev_int {
        ($a:ty, $t:ty, $reg:ident, $u:literal, $s:literal, $b:literal) => {
            impl ScopedAtomic for $a {
                type Value = $t;
                #[inline(always)]
                fn fetch_add_scoped(&self, v: $t, o: Ordering, sc: Scope) -> $t {
                    atom!("add", $u, $reg, $t, self.as_ptr(), v, o, sc)
                }
                #[inline(always)]
                fn swap_scoped(&self, v: $t, o: Ordering, sc: Scope) -> $t {
                    atom!("exch", $b, $reg, $t, self.as_ptr(), v, o, sc)
                }
            }
            impl ScopedAtomicInt for $a {
                #[inline(always)]
                fn fetch_sub_scoped(&self, v: $t, o: Ordering, sc: Scope) -> $t {
                    atom!("add", $u, $reg, $t, self.as_ptr(), v.wrapping_neg(), o, sc)
                }
                #[inline(always)]
                fn fetch_min_scoped(&self, v: $t, o: Ordering, sc: Scope) -> $t {
                    atom!("min", $s, $reg, $t, self.as_ptr(), v, o, sc)
                }
                #[inline(always)]
                fn fetch_max_scoped(&self, v: $t, o: Ordering, sc: Scope) -> $t {
                    atom!("max", $s, $reg, $t, self.as_ptr(), v, o, sc)
                }
                #[inline(always)]
                fn fetch_and_scoped(&self, v: $t, o: Ordering, sc: Scope) -> $t {
                    atom!("and", $b, $reg, $t, self.as_ptr(), v, o, sc)
                }
                #[inline(always)]
                fn fetch_or_scoped(&self, v: $t, o: Ordering, sc: Scope) -> $t {
                    atom!("or", $b, $reg, $t, self.as_ptr(), v, o, sc)
                }
                #[inline(always)]
                fn fetch_xor_scoped(&self, v: $t, o: Ordering, sc: Scope) -> $t {
                    atom!("xor", $b, $reg, $t, self.as_ptr(), v, o, sc)
                }
                #[inline(always)]
                fn compare_exchange_scoped(&self, c: $t, n: $t, o: Ordering, sc: Scope) -> Result<$t, $t> {
                    let r = cas!($b, $reg, $t, self.as_ptr(), c, n, o, sc);
                    if r == c {
                        Ok(r)
                    } else {
                        Err(r)
                    }
                }
            }
        };
    }
    dev_int!(AtomicU32, u32, reg32, "u32", "u32", "b32");
    dev_int!(AtomicI32, i32, reg32, "u32", "s32", "b32");
    dev_int!(AtomicU64, u64, reg64, "u64", "u64", "b64");
    dev_int!(AtomicI64, i64, reg64, "u64", "s64", "b64");

    macro_rules! dev_float {
        ($a:ty, $t:ty, $reg:ident, $f:literal, $b:literal) => {
            impl ScopedAtomic for $a {
                type Value = $t;
                #[inline(always)]
                fn fetch_add_scoped(&self, v: $t, o: Ordering, sc: Scope) -> $t {
                    atom!("add", $f, $reg, $t, self.0.as_ptr() as *mut $t, v, o, sc)
                }
                #[inline(always)]
                fn swap_scoped(&self, v: $t, o: Ordering, sc: Scope) -> $t {
                    atom!("exch", $b, $reg, $t, self.0.as_ptr() as *mut $t, v, o, sc)
                }
            }
        };
    }
    dev_float!(AtomicF32, f32, reg32, "f32", "b32");
    dev_float!(AtomicF64, f64, reg64, "f64", "b64");
}
