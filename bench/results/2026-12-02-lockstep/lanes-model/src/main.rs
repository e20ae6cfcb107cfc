//! What would make the lockstep rounds of a grid-stride dot product fast on
//! many cores: the same execution model as offload's host fallback (a
//! block's threads' per-thread state reached through pointers, one
//! iteration of every thread per round), with W adjacent blocks
//! interleaved in one round (W·256 consecutive elements per round) and
//! optionally a software prefetch of the next round's elements.
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;
use rayon::prelude::*;

struct GS { i: usize, n: usize, s: usize }
impl Iterator for GS { type Item = usize; #[inline(always)] fn next(&mut self) -> Option<usize> { if self.i < self.n { let i = self.i; self.i = self.i.saturating_add(self.s); Some(i) } else { None } } }
struct Ent<C> { it: GS, f: C }
thread_local!{ static T: std::cell::Cell<u32> = const { std::cell::Cell::new(0) }; }

#[inline(never)]
fn rounds<const K: usize, C: FnMut(usize)>(es: &mut [Box<Ent<C>>]) {
    T.with(|tls| loop { let mut any = false;
        for (t, e) in es.iter_mut().enumerate() { tls.set(t as u32); for _ in 0..K { if let Some(i) = e.it.next() { (e.f)(i); any = true; } } }
        if !any { break } })
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let workers: usize = args.get(1).map(|x| x.parse().unwrap()).unwrap_or(2);
    let log2: u32 = args.get(2).map(|x| x.parse().unwrap()).unwrap_or(26);
    let n = 1usize << log2;
    let (blocks, bt) = (1024usize, 256usize);
    let grid = blocks * bt;
    let a: Vec<f32> = (0..n).map(|i| (i % 7) as f32 * 0.5).collect();
    let b: Vec<f32> = (0..n).map(|i| (i % 5) as f32).collect();
    let pool = rayon::ThreadPoolBuilder::new().num_threads(workers).build().unwrap();
    let chunk = (blocks / (workers * 8)).max(1);
    for &(w, pf, k2) in &[(1usize, false, false), (1, false, true), (4, false, false), (8, false, false), (1, true, false), (8, true, false)] {
        let mut best_ours = f64::MAX; let mut best_seq = f64::MAX; let mut tot = 0.0;
        for _ in 0..5 {
            let next = AtomicUsize::new(0);
            let sums: Vec<std::sync::Mutex<f64>> = (0..blocks).map(|_| std::sync::Mutex::new(0.0)).collect();
            let t0 = Instant::now();
            pool.broadcast(|_| {
                let (a, b) = (&a[..], &b[..]);
                loop {
                    let first = next.fetch_add(chunk, Ordering::Relaxed);
                    if first >= blocks { break }
                    let end = (first + chunk).min(blocks);
                    let mut blk = first;
                    while blk < end {
                        let group = w.min(end - blk);
                        let mut s = vec![0f32; group * bt];
                        {
                            let mut es: Vec<Box<Ent<_>>> = s.iter_mut().enumerate().map(|(t, s)| {
                                let f = move |i: usize| {
                                    if pf && i + grid < a.len() { unsafe { use std::arch::x86_64::*;
                                        _mm_prefetch::<_MM_HINT_T0>(a.as_ptr().add(i + grid) as *const i8);
                                        _mm_prefetch::<_MM_HINT_T0>(b.as_ptr().add(i + grid) as *const i8); } }
                                    *s += a[i] * b[i];
                                };
                                Box::new(Ent { it: GS { i: blk * bt + t, n, s: grid }, f })
                            }).collect();
                            if k2 { rounds::<2, _>(&mut es) } else { rounds::<1, _>(&mut es) }
                        }
                        for g in 0..group { *sums[blk + g].lock().unwrap() = s[g * bt..(g + 1) * bt].iter().map(|&x| x as f64).sum(); }
                        blk += group;
                    }
                }
            });
            let ours = t0.elapsed().as_secs_f64();
            tot = sums.iter().map(|m| *m.lock().unwrap()).sum::<f64>();
            let t0 = Instant::now();
            let s: f32 = pool.install(|| a.par_iter().zip(&b).map(|(x, y)| x * y).sum());
            let seq = t0.elapsed().as_secs_f64();
            std::hint::black_box(s);
            best_ours = best_ours.min(ours); best_seq = best_seq.min(seq);
        }
        println!("workers {workers} interleaved blocks {w} prefetch {pf} two iterations per visit {k2}: lockstep {:.2} ms, rayon {:.2} ms, ratio {:.3} (sum {tot})", best_ours * 1e3, best_seq * 1e3, best_seq / best_ours);
    }
    // The same threads, iterations and per-thread sums, with the threads
    // of a block as SIMD lanes: what a work-item loop vectorized across
    // lanes (POCL, Intel's OpenCL CPU runtime) compiles dot's loop to.
    let mut best_ours = f64::MAX; let mut best_seq = f64::MAX; let mut tot = 0.0;
    for _ in 0..5 {
        let next = AtomicUsize::new(0);
        let sums: Vec<std::sync::Mutex<f64>> = (0..blocks).map(|_| std::sync::Mutex::new(0.0)).collect();
        let t0 = Instant::now();
        pool.broadcast(|_| loop {
            let first = next.fetch_add(chunk, Ordering::Relaxed);
            if first >= blocks { break }
            for blk in first..(first + chunk).min(blocks) {
                let mut s = [0f32; 256];
                let mut base = blk * bt;
                while base < n {
                    let m = (n - base).min(bt);
                    for ((s, x), y) in s[..m].iter_mut().zip(&a[base..base + m]).zip(&b[base..base + m]) { *s += x * y; }
                    base += grid;
                }
                *sums[blk].lock().unwrap() = s.iter().map(|&x| x as f64).sum();
            }
        });
        let ours = t0.elapsed().as_secs_f64();
        tot = sums.iter().map(|m| *m.lock().unwrap()).sum::<f64>();
        let t0 = Instant::now();
        let s: f32 = pool.install(|| a.par_iter().zip(&b).map(|(x, y)| x * y).sum());
        let seq = t0.elapsed().as_secs_f64();
        std::hint::black_box(s);
        best_ours = best_ours.min(ours); best_seq = best_seq.min(seq);
    }
    println!("workers {workers} lanes as SIMD: {:.2} ms, rayon {:.2} ms, ratio {:.3} (sum {tot})", best_ours * 1e3, best_seq * 1e3, best_seq / best_ours);
    fission_models(&pool, workers, chunk);
}

fn mix(v: u32, other: u32) -> u32 {
    v.wrapping_mul(0x9e37_79b1).rotate_left(5) ^ other
}

/// What MCUDA-style regions (the body split at its barriers, each region a
/// loop over the block's threads, per-thread values in arrays) compile
/// to, for bench/host's barrier loop and histogram, against the same rayon
/// code as bench/host's. Blocks claimed as offload's host fallback does.
fn fission_models(pool: &rayon::ThreadPool, workers: usize, chunk0: usize) {
    let _ = chunk0;
    // Barrier loop: 2^18 threads in blocks of 256, 16 rounds.
    let (n, bt, rounds) = (1usize << 18, 256usize, 16u32);
    let blocks = n / bt;
    let chunk = (blocks / (workers * 8)).max(1);
    let (mut best_ours, mut best_ray) = (f64::MAX, f64::MAX);
    let mut out = vec![0u32; n];
    let mut want = vec![0u32; n];
    for _ in 0..7 {
        let next = AtomicUsize::new(0);
        let cells: Vec<std::sync::atomic::AtomicU32> = (0..n).map(|_| std::sync::atomic::AtomicU32::new(0)).collect();
        let t0 = Instant::now();
        pool.broadcast(|_| loop {
            let first = next.fetch_add(chunk, Ordering::Relaxed);
            if first >= blocks { break }
            for blk in first..(first + chunk).min(blocks) {
                let mut v: [u32; 256] = core::array::from_fn(|t| (blk * bt + t) as u32);
                let mut bufs = [[0u32; 256]; 2];
                for r in 0..rounds as usize {
                    let buf = &mut bufs[r % 2];
                    buf.copy_from_slice(&v); // region 1: every thread publishes its value
                    for t in 0..bt { v[t] = mix(v[t], buf[t ^ 1]); } // region 2, after the barrier
                }
                for t in 0..bt { cells[blk * bt + t].store(v[t], Ordering::Relaxed); }
            }
        });
        best_ours = best_ours.min(t0.elapsed().as_secs_f64());
        for (o, c) in out.iter_mut().zip(&cells) { *o = c.load(Ordering::Relaxed); }
        let t0 = Instant::now();
        pool.install(|| want.par_chunks_mut(bt).enumerate().for_each(|(g, out)| {
            let mut v: [u32; 256] = core::array::from_fn(|t| (g * bt + t) as u32);
            for _ in 0..rounds { let old = v; for (t, x) in v.iter_mut().enumerate() { *x = mix(*x, old[t ^ 1]); } }
            out.copy_from_slice(&v[..out.len()]);
        }));
        best_ray = best_ray.min(t0.elapsed().as_secs_f64());
    }
    assert_eq!(out, want);
    println!("workers {workers} barrier loop as regions: {:.3} ms, rayon {:.3} ms, ratio {:.3}", best_ours * 1e3, best_ray * 1e3, best_ray / best_ours);

    // Histogram: 2^26 bytes, 1024 blocks of 256, per-block bins, each round one byte per thread.
    let n = 1usize << 26;
    let data: Vec<u8> = (0..n).map(|i| ((i.wrapping_mul(2654435761) >> 7) % 251) as u8).collect();
    let (blocks, bt) = (1024usize, 256usize);
    let grid = blocks * bt;
    let chunk = (blocks / (workers * 8)).max(1);
    let (mut best_ours, mut best_ray) = (f64::MAX, f64::MAX);
    let (mut got, mut want) = (vec![0u32; 256], vec![0u32; 256]);
    for _ in 0..5 {
        let next = AtomicUsize::new(0);
        let bins: Vec<std::sync::atomic::AtomicU32> = (0..256).map(|_| std::sync::atomic::AtomicU32::new(0)).collect();
        let t0 = Instant::now();
        pool.broadcast(|_| loop {
            let first = next.fetch_add(chunk, Ordering::Relaxed);
            if first >= blocks { break }
            for blk in first..(first + chunk).min(blocks) {
                let mut local = [0u32; 256];
                let mut base = blk * bt;
                while base < n { // the grid-stride loop's rounds
                    for &x in &data[base..(base + bt).min(n)] { local[x as usize] += 1; }
                    base += grid;
                }
                for (b, &c) in bins.iter().zip(&local) { if c != 0 { b.fetch_add(c, Ordering::Relaxed); } }
            }
        });
        best_ours = best_ours.min(t0.elapsed().as_secs_f64());
        for (g, b) in got.iter_mut().zip(&bins) { *g = b.load(Ordering::Relaxed); }
        let t0 = Instant::now();
        want = pool.install(|| data.par_chunks(1 << 16).fold(|| vec![0u32; 256], |mut h, c| { for &x in c { h[x as usize] += 1; } h })
            .reduce(|| vec![0u32; 256], |mut a, b| { a.iter_mut().zip(&b).for_each(|(x, y)| *x += y); a }));
        best_ray = best_ray.min(t0.elapsed().as_secs_f64());
    }
    assert_eq!(got, want);
    println!("workers {workers} histogram as regions: {:.2} ms, rayon {:.2} ms, ratio {:.3}", best_ours * 1e3, best_ray * 1e3, best_ray / best_ours);
}
