//! The driver: arguments, inputs, the checked and the timed runs, the table.

use std::time::Instant;

use clap::Parser;
use offload::atomic::{AtomicF32, AtomicU32, Ordering::Relaxed};
use offload::LaunchConfig;

use crate::kernels::{self, LOOP_BLOCK, TILE};
use crate::rayon_ref;

#[derive(Parser, Debug)]
#[command(about = "offload's host fallback against hand-written rayon (issue 14)")]
struct Args {
    /// Worker threads of both sides (sets OFFLOAD_HOST_THREADS and rayon's pool)
    #[arg(long)]
    threads: Option<usize>,
    /// Timed runs per side and case (after one untimed, checked run)
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    reps: u32,
    /// Cases to run (comma-separated; default: all)
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// log2 of the triad's elements
    #[arg(long, default_value_t = 25, value_parser = clap::value_parser!(u32).range(10..=30))]
    triad_log2: u32,
    /// log2 of the dot product's elements
    #[arg(long, default_value_t = 26, value_parser = clap::value_parser!(u32).range(16..=30))]
    dot_log2: u32,
    /// Blocks (of 256 threads) of the dot product: examples/06-warp's 1024 by default
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u32).range(1..=65536))]
    dot_blocks: u32,
    /// Bodies of the n-body case (a multiple of 256)
    #[arg(long, default_value_t = 16384)]
    bodies: usize,
    /// Side of the SGEMM matrices (a multiple of 16)
    #[arg(long, default_value_t = 1024)]
    sgemm_n: usize,
    /// log2 of the barrier loop's threads
    #[arg(long, default_value_t = 18, value_parser = clap::value_parser!(u32).range(8..=26))]
    loop_log2: u32,
    /// Rounds (barriers) of the barrier loop
    #[arg(long, default_value_t = 16)]
    rounds: u32,
    /// log2 of the histogram's bytes
    #[arg(long, default_value_t = 26, value_parser = clap::value_parser!(u32).range(16..=30))]
    hist_log2: u32,
    /// Side of the Jacobi grid (a multiple of 16)
    #[arg(long, default_value_t = 4096)]
    jacobi_n: usize,
    /// Print CSV rows `bench,impl,mode,case,size,metric,value` only
    #[arg(long)]
    csv: bool,
}

type R<T> = offload::Result<T>;

/// The cases: name, the target ratio (ours/rayon, speed).
const CASES: &[(&str, f64)] = &[
    ("triad", 0.9),
    ("dot", 0.5),
    ("nbody", 0.9),
    ("sgemm_naive", 0.9),
    ("sgemm_tiled", 0.5),
    ("barrier_loop", 0.2),
    ("histogram", 0.5),
    ("jacobi", 0.5),
];

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// One case's outcome.
struct Outcome {
    size: usize,
    ours: f64,
    rayon: f64,
    valid: bool,
    /// Further baselines, for information: name and median seconds.
    extra: Vec<(&'static str, f64)>,
}

/// Times `reps` runs of each side, alternating which goes first; median
/// seconds of ours and of rayon's.
fn timed(reps: u32, mut ours: impl FnMut() -> R<()>, mut rayon: impl FnMut()) -> R<(f64, f64)> {
    let (mut t_ours, mut t_rayon) = (Vec::new(), Vec::new());
    for rep in 0..reps {
        for side in [rep % 2, 1 - rep % 2] {
            let t0 = Instant::now();
            if side == 0 {
                ours()?;
                t_ours.push(t0.elapsed().as_secs_f64());
            } else {
                rayon();
                t_rayon.push(t0.elapsed().as_secs_f64());
            }
        }
    }
    Ok((median(&t_ours), median(&t_rayon)))
}

/// Index and values of the first element where `a` and `b` differ.
fn first_difference<T: PartialEq + Copy>(a: &[T], b: &[T]) -> Option<(usize, T, T)> {
    a.iter().zip(b).position(|(x, y)| x != y).map(|i| (i, a[i], b[i]))
}

/// `true` if equal; else says where they differ.
fn same<T: PartialEq + Copy + std::fmt::Debug>(case: &str, ours: &[T], theirs: &[T]) -> bool {
    match first_difference(ours, theirs) {
        None if ours.len() == theirs.len() => true,
        None => {
            eprintln!("error: {case}: {} elements, rayon's {}", ours.len(), theirs.len());
            false
        }
        Some((i, x, y)) => {
            eprintln!("error: {case}: element {i} is {x:?}, rayon's {y:?}");
            false
        }
    }
}

/// Deterministic inputs in [0, 1).
fn inputs(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 24) as f32
        })
        .collect()
}

fn triad(a: &Args) -> R<Outcome> {
    let n = 1usize << a.triad_log2;
    let b: Vec<f64> = inputs(n, 1).into_iter().map(f64::from).collect();
    let c: Vec<f64> = inputs(n, 2).into_iter().map(f64::from).collect();
    let (mut x, mut y) = (vec![0.0f64; n], vec![0.0f64; n]);
    let cfg = LaunchConfig::new(n.div_ceil(1024) as u32, 1024u32);
    kernels::triad(cfg, &mut x, &b, &c, 0.4)?;
    rayon_ref::triad(&mut y, &b, &c, 0.4);
    let valid = same("triad", &x, &y);
    let (ours, rayon) =
        timed(a.reps, || kernels::triad(cfg, &mut x, &b, &c, 0.4), || rayon_ref::triad(&mut y, &b, &c, 0.4))?;
    Ok(Outcome { size: n, ours, rayon, valid, extra: Vec::new() })
}

fn dot(a: &Args) -> R<Outcome> {
    let n = 1usize << a.dot_log2;
    let (x, y) = (inputs(n, 3), inputs(n, 4));
    let blocks = a.dot_blocks as usize;
    let partials: Vec<AtomicF32> = (0..blocks).map(|_| AtomicF32::new(f32::NAN)).collect();
    let cfg = LaunchConfig::new(blocks as u32, 256u32);
    let ours = || -> R<f32> {
        kernels::dot(cfg, &x, &y, &partials)?;
        Ok(partials.iter().map(|p| p.load(Relaxed)).sum())
    };
    let want: f64 = x.iter().zip(&y).map(|(&p, &q)| p as f64 * q as f64).sum();
    let (got, theirs) = (ours()?, rayon_ref::dot(&x, &y));
    // Ours sums 256 terms per thread and then trees of 32, 8 and 1024
    // values (1e-5 as examples/06-warp checks); rayon's `sum` adds long
    // runs in order (about 1e-3 at 2^26 terms).
    let rel = |v: f32| ((v as f64 - want) / want).abs();
    let valid = rel(got) < 1e-5 && rel(theirs) < 1e-2;
    if !valid {
        eprintln!("error: dot: ours {got}, rayon's {theirs}, f64 sum {want}");
    }
    let (ours, rayon) = timed(
        a.reps,
        || {
            ours().map(|v| {
                std::hint::black_box(v);
            })
        },
        || {
            std::hint::black_box(rayon_ref::dot(&x, &y));
        },
    )?;
    Ok(Outcome { size: n, ours, rayon, valid, extra: Vec::new() })
}

fn nbody(a: &Args) -> R<Outcome> {
    let n = a.bodies;
    let r = inputs(4 * n, 5);
    let pos: Vec<[f32; 4]> = r.chunks(4).map(|c| [c[0] * 10.0, c[1] * 10.0, c[2] * 10.0, 0.5 + c[3]]).collect();
    let (mut x, mut y) = (vec![[0.0f32; 3]; n], vec![[0.0f32; 3]; n]);
    let cfg = LaunchConfig::new(n.div_ceil(256) as u32, 256u32);
    kernels::nbody(cfg, &pos, &mut x)?;
    rayon_ref::nbody(&pos, &mut y);
    let valid = same("nbody", &x, &y);
    let (ours, rayon) = timed(a.reps, || kernels::nbody(cfg, &pos, &mut x), || rayon_ref::nbody(&pos, &mut y))?;
    Ok(Outcome { size: n, ours, rayon, valid, extra: Vec::new() })
}

/// The 2-D launch of an n×n grid in 16×16 blocks (x-extent n).
fn square(n: usize) -> LaunchConfig {
    let b = (n / TILE) as u32;
    LaunchConfig::new((b, b), (TILE as u32, TILE as u32))
}

fn sgemm(a: &Args, tiled: bool) -> R<Outcome> {
    let n = a.sgemm_n;
    let (ma, mb) = (inputs(n * n, 6), inputs(n * n, 7));
    let (mut x, mut y) = (vec![0.0f32; n * n], vec![0.0f32; n * n]);
    let kernel = if tiled { kernels::sgemm_tiled } else { kernels::sgemm_naive };
    let m = n as u32;
    kernel(square(n), m, &ma, &mb, &mut x)?;
    rayon_ref::sgemm_naive(n, &ma, &mb, &mut y);
    let mut valid = same("sgemm", &x, &y);
    let (ours, rayon) =
        timed(a.reps, || kernel(square(n), m, &ma, &mb, &mut x), || rayon_ref::sgemm_naive(n, &ma, &mb, &mut y))?;
    let mut extra = Vec::new();
    if tiled {
        rayon_ref::sgemm_ikj(n, &ma, &mb, &mut y);
        valid &= same("sgemm (i-k-j)", &x, &y);
        let (_, ikj) = timed(a.reps, || Ok(()), || rayon_ref::sgemm_ikj(n, &ma, &mb, &mut y))?;
        extra.push(("rayon i-k-j", ikj));
    }
    Ok(Outcome { size: n, ours, rayon, valid, extra })
}

fn barrier_loop(a: &Args) -> R<Outcome> {
    let n = 1usize << a.loop_log2;
    let (mut x, mut y) = (vec![0u32; n], vec![0u32; n]);
    let cfg = LaunchConfig::new((n / LOOP_BLOCK) as u32, LOOP_BLOCK as u32);
    kernels::barrier_loop(cfg, a.rounds, &mut x)?;
    rayon_ref::barrier_loop(a.rounds, &mut y);
    let valid = same("barrier_loop", &x, &y);
    let (ours, rayon) =
        timed(a.reps, || kernels::barrier_loop(cfg, a.rounds, &mut x), || rayon_ref::barrier_loop(a.rounds, &mut y))?;
    Ok(Outcome { size: n, ours, rayon, valid, extra: Vec::new() })
}

fn histogram(a: &Args) -> R<Outcome> {
    let n = 1usize << a.hist_log2;
    // Skewed bytes (low values more frequent), as in examples/05-atomics.
    let data: Vec<u8> = inputs(n, 8).iter().zip(inputs(n, 9)).map(|(&p, q)| (p * q * 256.0) as u8).collect();
    let bins: Vec<AtomicU32> = (0..256).map(|_| AtomicU32::new(0)).collect();
    let cfg = LaunchConfig::new(1024u32, 256u32);
    let ours = || -> R<Vec<u32>> {
        bins.iter().for_each(|b| b.store(0, Relaxed));
        kernels::histogram(cfg, &data, &bins)?;
        Ok(bins.iter().map(|b| b.load(Relaxed)).collect())
    };
    let valid = same("histogram", &ours()?, &rayon_ref::histogram(&data));
    let (ours, rayon) = timed(
        a.reps,
        || ours().map(|v| drop(std::hint::black_box(v))),
        || drop(std::hint::black_box(rayon_ref::histogram(&data))),
    )?;
    Ok(Outcome { size: n, ours, rayon, valid, extra: Vec::new() })
}

fn jacobi(a: &Args) -> R<Outcome> {
    let n = a.jacobi_n;
    let u = inputs(n * n, 10);
    let (mut x, mut y) = (vec![0.0f32; n * n], vec![0.0f32; n * n]);
    let m = n as u32;
    kernels::jacobi(square(n), m, &u, &mut x)?;
    rayon_ref::jacobi(n, &u, &mut y);
    let valid = same("jacobi", &x, &y);
    let (ours, rayon) =
        timed(a.reps, || kernels::jacobi(square(n), m, &u, &mut x), || rayon_ref::jacobi(n, &u, &mut y))?;
    Ok(Outcome { size: n, ours, rayon, valid, extra: Vec::new() })
}

fn one(a: &Args, case: &str) -> R<Outcome> {
    match case {
        "triad" => triad(a),
        "dot" => dot(a),
        "nbody" => nbody(a),
        "sgemm_naive" => sgemm(a, false),
        "sgemm_tiled" => sgemm(a, true),
        "barrier_loop" => barrier_loop(a),
        "histogram" => histogram(a),
        _ => jacobi(a),
    }
}

fn check_args(a: &Args) -> Result<(), String> {
    if let Some(c) = a.only.iter().find(|c| !CASES.iter().any(|k| k.0 == c.as_str())) {
        let known: Vec<&str> = CASES.iter().map(|k| k.0).collect();
        return Err(format!("unknown case `{c}` (known: {})", known.join(", ")));
    }
    for (what, n, step) in
        [("--bodies", a.bodies, 256), ("--sgemm-n", a.sgemm_n, TILE), ("--jacobi-n", a.jacobi_n, TILE)]
    {
        if n == 0 || n % step != 0 || n > 1 << 15 {
            return Err(format!("{what} {n}: must be a positive multiple of {step}, at most 32768"));
        }
    }
    if a.threads == Some(0) {
        return Err("--threads 0: give a positive number of threads".into());
    }
    Ok(())
}

pub fn main() {
    let a = Args::parse();
    if let Err(e) = check_args(&a) {
        eprintln!("error: {e}");
        std::process::exit(2);
    }
    match std::env::var("OFFLOAD_DEVICE") {
        // SAFETY: single-threaded still: nothing else reads the environment.
        Err(_) => unsafe { std::env::set_var("OFFLOAD_DEVICE", "host") },
        Ok(v) if v == "host" => {}
        Ok(v) => {
            eprintln!(
                "error: OFFLOAD_DEVICE={v}: this benchmark measures the host fallback; unset it or set it to `host`"
            );
            std::process::exit(2);
        }
    }
    if let Some(t) = a.threads {
        // SAFETY: as above, before any other thread exists.
        unsafe { std::env::set_var("OFFLOAD_HOST_THREADS", t.to_string()) };
        if let Err(e) = rayon::ThreadPoolBuilder::new().num_threads(t).build_global() {
            eprintln!("error: rayon's pool: {e}");
            std::process::exit(2);
        }
    }
    let backend = match offload::backend() {
        Ok(b) => b,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    };
    let header = format!(
        "backend: {backend}; rayon: {} thread(s); {} timed run(s) per side",
        rayon::current_num_threads(),
        a.reps
    );
    if a.csv {
        eprintln!("{header}");
    } else {
        println!("{header}");
    }
    let cases: Vec<(&str, f64)> =
        CASES.iter().copied().filter(|(c, _)| a.only.is_empty() || a.only.iter().any(|o| o == c)).collect();
    let mut rows = Vec::new();
    let mut ok = true;
    for (k, &(case, target)) in cases.iter().enumerate() {
        eprintln!("[{}/{}] {case} ...", k + 1, cases.len());
        let t0 = Instant::now();
        match one(&a, case) {
            Ok(o) => {
                ok &= o.valid;
                eprintln!(
                    "[{}/{}] {case}: ratio {:.3} ({:.1} s)",
                    k + 1,
                    cases.len(),
                    o.rayon / o.ours,
                    t0.elapsed().as_secs_f64()
                );
                rows.push((case, target, o));
            }
            Err(e) => {
                eprintln!("error: {case}: {e}");
                ok = false;
            }
        }
    }
    report(&a, &rows);
    if !ok {
        eprintln!("error: a result differs (see above)");
        std::process::exit(1);
    }
}

fn report(a: &Args, rows: &[(&str, f64, Outcome)]) {
    if a.csv {
        for (case, _, o) in rows {
            let s = o.size;
            println!("host,offload,host,{case},{s},seconds,{:.6}", o.ours);
            println!("host,rayon,host,{case},{s},seconds,{:.6}", o.rayon);
            for (name, t) in &o.extra {
                println!("host,{},host,{case},{s},seconds,{t:.6}", name.replace(' ', "_"));
            }
            println!("host,offload,host,{case},{s},ratio,{:.4}", o.rayon / o.ours);
            println!("host,offload,host,{case},{s},valid,{}", o.valid as u8);
        }
        return;
    }
    println!(
        "{:<13} {:>9} {:>11} {:>11} {:>8} {:>7}  {}",
        "case", "size", "ours ms", "rayon ms", "ratio", "target", "met"
    );
    for (case, target, o) in rows {
        let ratio = o.rayon / o.ours;
        let met = if !o.valid {
            "INVALID"
        } else if ratio >= *target {
            "yes"
        } else {
            "no"
        };
        println!(
            "{case:<13} {:>9} {:>11.2} {:>11.2} {ratio:>8.3} {target:>7.2}  {met}",
            o.size,
            o.ours * 1e3,
            o.rayon * 1e3
        );
        for (name, t) in &o.extra {
            println!(
                "{:<13} {:>9} {:>11} {:>11.2} {:>8.3}  (information: against {name})",
                "",
                "",
                "",
                t * 1e3,
                t / o.ours
            );
        }
    }
    println!("ratio: ours/rayon as speeds (rayon's median time / ours); higher is better");
}
