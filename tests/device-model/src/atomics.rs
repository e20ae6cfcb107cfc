//! Atomics on global and shared memory, with orderings and scopes.

use offload::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release, SeqCst};
use offload::atomic::{
    AtomicF32, AtomicF64, AtomicI32, AtomicI64, AtomicU32, AtomicU64, Scope, ScopedAtomic, ScopedAtomicInt,
};
use offload::{global_index, kernel, shared_array, sync_threads, thread_idx};

/// Every operation of `core`'s atomics and of the scoped API, once per
/// thread, on global memory.
#[kernel]
fn global_ops(u: &[AtomicU32], i: &[AtomicI32], w: &[AtomicU64], l: &[AtomicI64], f: &[AtomicF32], d: &[AtomicF64]) {
    let g = global_index() as u32;
    // core, u32
    u[0].fetch_add(1, Relaxed);
    u[1].fetch_sub(2, AcqRel);
    u[2].fetch_max(g, SeqCst);
    u[3].fetch_min(g + 5, Acquire);
    u[4].fetch_or(1 << (g % 32), Release);
    u[5].fetch_and(!(1 << (g % 32)), Relaxed);
    u[6].fetch_xor(g, Relaxed);
    let mut cur = u[7].load(Relaxed);
    while let Err(now) = u[7].compare_exchange_weak(cur, cur + 3, AcqRel, Relaxed) {
        cur = now;
    }
    u[8].swap(g, Relaxed);
    // scoped, u32
    u[9].fetch_add_scoped(1, Relaxed, Scope::Block);
    u[10].fetch_sub_scoped(1, SeqCst, Scope::Device);
    u[11].fetch_max_scoped(g, Acquire, Scope::System);
    u[12].fetch_min_scoped(g + 9, Release, Scope::Device);
    u[13].fetch_or_scoped(1 << (g % 31), AcqRel, Scope::Device);
    u[14].fetch_and_scoped(!(1 << (g % 31)), Relaxed, Scope::System);
    u[15].fetch_xor_scoped(g, Relaxed, Scope::Device);
    let mut c = u[16].load(Relaxed);
    while let Err(now) = u[16].compare_exchange_scoped(c, c + 1, AcqRel, Scope::Device) {
        c = now;
    }
    u[17].swap_scoped(g, Relaxed, Scope::Device);
    // signed, 64-bit
    i[0].fetch_add(-3, Relaxed);
    i[1].fetch_min(-(g as i32), Relaxed);
    i[2].fetch_max(-(g as i32), Relaxed);
    i[3].fetch_min_scoped(-(g as i32) - 1, Relaxed, Scope::Device);
    i[4].fetch_max_scoped(-(g as i32) - 1, Relaxed, Scope::Device);
    i[5].fetch_sub_scoped(7, Relaxed, Scope::Block);
    w[0].fetch_add(1 << 33, Relaxed);
    w[1].fetch_max((g as u64) << 32, Relaxed);
    w[2].fetch_add_scoped(3 << 32, Relaxed, Scope::Device);
    w[3].fetch_xor_scoped((g as u64) << 31, Relaxed, Scope::System);
    w[4].fetch_min_scoped((g as u64 + 2) << 40, Relaxed, Scope::Device);
    l[0].fetch_sub(1 << 35, Relaxed);
    l[1].fetch_min(-((g as i64) << 34), Relaxed);
    l[2].fetch_max_scoped(-((g as i64) << 34), Relaxed, Scope::Device);
    l[3].fetch_and_scoped(!(1i64 << (g % 63)), Relaxed, Scope::Device);
    // floats: sums of exactly representable values are exact in any order
    f[0].fetch_add(0.5, Relaxed);
    f[1].fetch_add_scoped(-0.25, Relaxed, Scope::Device);
    f[2].fetch_add_scoped(2.0, Relaxed, Scope::Block);
    d[0].fetch_add(0.125, Relaxed);
    d[1].fetch_add_scoped(1e6, Relaxed, Scope::System);
}

/// A 16-bin histogram per block in shared memory (block-scoped atomics),
/// merged into global bins (device-scoped).
#[kernel]
fn shared_histogram(x: &[u32], bins: &[AtomicU32]) {
    let h = shared_array!(u32; 16);
    let t = thread_idx().x as usize;
    if t < 16 {
        h.set(t, 0);
    }
    sync_threads();
    let i = global_index();
    if i < x.len() {
        let k = (x[i] % 16) as usize;
        if k % 2 == 0 {
            h.atomic(k).fetch_add(1, Relaxed);
        } else {
            h.atomic(k).fetch_add_scoped(1, Relaxed, Scope::Block);
        }
    }
    sync_threads();
    if t < 16 {
        bins[t].fetch_add_scoped(h.get(t), Relaxed, Scope::Device);
    }
}

#[offload::host]
pub fn check() -> Result<String, String> {
    let blocks = 64u32;
    let bs = 128u32;
    let s = (blocks * bs) as u64;
    let u: Vec<AtomicU32> = (0..18).map(|k| AtomicU32::new(match k { 1 | 10 => 1 << 30, 3 | 12 => u32::MAX, 5 | 14 => u32::MAX, _ => 0 })).collect();
    let i: Vec<AtomicI32> = (0..6).map(|_| AtomicI32::new(0)).collect();
    let w: Vec<AtomicU64> = (0..5).map(|k| AtomicU64::new(if k == 4 { u64::MAX } else { 0 })).collect();
    let l: Vec<AtomicI64> = (0..4).map(|k| AtomicI64::new(if k == 3 { -1 } else { 0 })).collect();
    let f: Vec<AtomicF32> = (0..3).map(|_| AtomicF32::new(0.0)).collect();
    let d: Vec<AtomicF64> = (0..2).map(|_| AtomicF64::new(0.0)).collect();
    global_ops(offload::LaunchConfig::new(blocks, bs), &u, &i, &w, &l, &f, &d).map_err(|e| e.to_string())?;
    let xor_all = (0..s as u32).fold(0u32, |a, g| a ^ g);
    let xor_all64 = (0..s).fold(0u64, |a, g| a ^ (g << 31));
    let g_max = s as u32 - 1;
    let want_u: [u32; 18] = [
        s as u32,
        (1u32 << 30) - 2 * s as u32,
        g_max,
        5,
        u32::MAX,
        0,
        xor_all,
        3 * s as u32,
        u32::MAX, // swap: any g, checked below
        s as u32,
        (1u32 << 30) - s as u32,
        g_max,
        9,
        (1u32 << 31) - 1,
        1 << 31,
        xor_all,
        s as u32,
        u32::MAX, // swap_scoped: any g
    ];
    for (k, (a, &want)) in u.iter().zip(&want_u).enumerate() {
        let got = a.load(Relaxed);
        let ok = if want == u32::MAX && (k == 8 || k == 17) { (got as u64) < s } else { got == want };
        if !ok {
            return Err(format!("u32 op {k}: got {got:#x}, expected {want:#x}"));
        }
    }
    let want_i = [-3 * s as i32, -(g_max as i32), 0, -(g_max as i32) - 1, 0, -7 * s as i32];
    for (k, (a, &want)) in i.iter().zip(&want_i).enumerate() {
        if a.load(Relaxed) != want {
            return Err(format!("i32 op {k}: got {}, expected {want}", a.load(Relaxed)));
        }
    }
    let want_w = [s << 33, (g_max as u64) << 32, 3 * s << 32, xor_all64, 2u64 << 40];
    for (k, (a, &want)) in w.iter().zip(&want_w).enumerate() {
        if a.load(Relaxed) != want {
            return Err(format!("u64 op {k}: got {:#x}, expected {want:#x}", a.load(Relaxed)));
        }
    }
    let and_all = (0..s).fold(-1i64, |a, g| a & !(1i64 << (g % 63)));
    let want_l = [-((s as i64) << 35), -((g_max as i64) << 34), 0, and_all];
    for (k, (a, &want)) in l.iter().zip(&want_l).enumerate() {
        if a.load(Relaxed) != want {
            return Err(format!("i64 op {k}: got {:#x}, expected {want:#x}", a.load(Relaxed)));
        }
    }
    let want_f = [0.5 * s as f32, -0.25 * s as f32, 2.0 * s as f32];
    for (k, (a, &want)) in f.iter().zip(&want_f).enumerate() {
        if a.load(Relaxed) != want {
            return Err(format!("f32 add {k}: got {}, expected {want}", a.load(Relaxed)));
        }
    }
    let want_d = [0.125 * s as f64, 1e6 * s as f64];
    for (k, (a, &want)) in d.iter().zip(&want_d).enumerate() {
        if a.load(Relaxed) != want {
            return Err(format!("f64 add {k}: got {}, expected {want}", a.load(Relaxed)));
        }
    }

    // shared-memory histogram
    let n = 300_007usize;
    let x: Vec<u32> = (0..n as u64).map(|k| (k.wrapping_mul(2654435761) >> 7) as u32).collect();
    let bins: Vec<AtomicU32> = (0..16).map(|_| AtomicU32::new(0)).collect();
    shared_histogram(offload::for_len(n), &x, &bins).map_err(|e| e.to_string())?;
    let mut want = [0u32; 16];
    for &v in &x {
        want[(v % 16) as usize] += 1;
    }
    let got: Vec<u32> = bins.iter().map(|b| b.load(Relaxed)).collect();
    if got != want {
        return Err(format!("shared histogram {got:?}, expected {want:?}"));
    }
    Ok(format!("{s} threads x 41 global ops exact; shared histogram of {n} exact (bin0 {})", got[0]))
}
