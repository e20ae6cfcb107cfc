use offload::prelude::*;
use std::time::Instant;

#[kernel(same_len(a, b, c))]
fn triad(a: &mut [f64], b: &[f64], c: &[f64], s: f64) {
    for (i, ai) in a.grid_stride() {
        *ai = b[i] + s * c[i];
    }
}

#[kernel(same_len(a, b, c))]
fn triad_phased(a: &mut [f64], b: &[f64], c: &[f64], s: f64) {
    offload::sync_threads();
    for (i, ai) in a.grid_stride() {
        *ai = b[i] + s * c[i];
    }
}

#[offload::host]
fn main() {
    let n = 1usize << 25;
    let b: Vec<f64> = (0..n).map(|i| i as f64).collect();
    let c: Vec<f64> = (0..n).map(|i| (i % 7) as f64).collect();
    let mut a = vec![0.0; n];
    let mut r = vec![0.0; n];
    for (name, cfg) in [("full grid", LaunchConfig::new((n / 1024) as u32, 1024u32)), ("1024 x 256", LaunchConfig::new(1024u32, 256u32)), ("64 x 256", LaunchConfig::new(64u32, 256u32))] {
        let mut best = f64::MAX;
        let mut best_s = f64::MAX;
        for _ in 0..5 {
            let t = Instant::now();
            triad(cfg, &mut a, &b, &c, 0.4).unwrap();
            best = best.min(t.elapsed().as_secs_f64());
            let t = Instant::now();
            for ((r, b), c) in r.iter_mut().zip(&b).zip(&c) { *r = b + 0.4 * c; }
            best_s = best_s.min(t.elapsed().as_secs_f64());
        }
        assert_eq!(a, r);
        let mut best_p = f64::MAX;
        for _ in 0..5 {
            a.fill(0.0);
            let t = Instant::now();
            triad_phased(cfg, &mut a, &b, &c, 0.4).unwrap();
            best_p = best_p.min(t.elapsed().as_secs_f64());
        }
        assert_eq!(a, r);
        println!("{name}: ours {:.1} ms, with a barrier first (lockstep) {:.1} ms, one-thread loop {:.1} ms", best * 1e3, best_p * 1e3, best_s * 1e3);
    }
}
