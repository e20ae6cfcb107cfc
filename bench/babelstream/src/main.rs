//! BabelStream, written with `offload`: the memory bandwidth of six simple
//! kernels over three arrays of f64 (copy, mul, add, triad, dot, nstream).
//!
//! Our own code after the published algorithm (Deakin et al., "GPU-STREAM
//! v2.0: Benchmarking the achievable memory bandwidth of many-core
//! processors across diverse parallel programming models", 2016; the
//! reference implementation UoB-HPC/BabelStream 5.0). As there:
//! - arrays start at a = 0.1, b = 0.2, c = 0.0, scalar = 0.4;
//! - the main run executes copy, mul, add, triad, dot `--numtimes` times,
//!   each launch timed on the host around launch and synchronization;
//!   then, from freshly initialized arrays, nstream `--numtimes` times;
//! - bandwidth = bytes moved / the fastest time, the first iteration
//!   ignored; bytes: copy, mul, dot 2·8·n; add, triad 3·8·n; nstream 4·8·n;
//! - validation: the same operations applied to scalars give the expected
//!   value of every element; the average absolute error of each array must
//!   be ≤ 100 ε(f64) and dot's relative error ≤ 1e-8.
//!
//! Launch geometry as in BabelStream's CUDA version: `--block` (1024)
//! threads per block, ceil(n / block) blocks, one element per thread in a
//! grid-stride loop; dot uses 4 blocks per multiprocessor, reduces each
//! block's partial sums in the block (warp shuffles and shared memory) and
//! the kernel writes one value per block straight into page-locked host
//! memory (`PinnedBuffer::mapped_mut`), which the host adds, as
//! BabelStream's CUDA version does with `cudaHostAlloc` memory.
//!
//! ```text
//! cargo offload run --release -p babelstream -- [-s N] [-n TIMES] [--csv]
//! ```

use offload::prelude::*;
use offload::warp;

#[kernel]
fn init(a: &mut [f64], b: &mut [f64], c: &mut [f64], va: f64, vb: f64, vc: f64) {
    for (_, x) in a.grid_stride() {
        *x = va;
    }
    for (_, x) in b.grid_stride() {
        *x = vb;
    }
    for (_, x) in c.grid_stride() {
        *x = vc;
    }
}

#[kernel(same_len(a, c))]
fn copy(a: &[f64], c: &mut [f64]) {
    for (i, ci) in c.grid_stride() {
        *ci = a[i];
    }
}

#[kernel(same_len(b, c))]
fn mul(b: &mut [f64], c: &[f64], scalar: f64) {
    for (i, bi) in b.grid_stride() {
        *bi = scalar * c[i];
    }
}

#[kernel(same_len(a, b, c))]
fn add(a: &[f64], b: &[f64], c: &mut [f64]) {
    for (i, ci) in c.grid_stride() {
        *ci = a[i] + b[i];
    }
}

#[kernel(same_len(a, b, c))]
fn triad(a: &mut [f64], b: &[f64], c: &[f64], scalar: f64) {
    for (i, ai) in a.grid_stride() {
        *ai = b[i] + scalar * c[i];
    }
}

#[kernel(same_len(a, b, c))]
fn nstream(a: &mut [f64], b: &[f64], c: &[f64], scalar: f64) {
    for (i, ai) in a.grid_stride() {
        *ai += b[i] + scalar * c[i];
    }
}

/// Dot, as BabelStream's CUDA version: each thread accumulates a
/// grid-stride partial sum of a·b, the block reduces them (warp shuffles,
/// then one value per warp in shared memory), and the block's thread 0
/// writes the block's sum to `sums[blockIdx.x]`; the host adds the
/// `sums.len()` block sums.
#[kernel]
fn dot(a: &[f64], b: &[f64], sums: &mut [f64]) {
    let n = a.len();
    let b = &b[..n];
    let mut s = 0.0f64;
    for i in offload::grid_stride(n) {
        s += a[i] * b[i];
    }
    s = warp::reduce_sum(s);
    let per_warp = shared_array!(f64; 32);
    let lane = warp::lane_id() as usize;
    if lane == 0 {
        per_warp.set(warp::warp_id() as usize, s);
    }
    sync_threads();
    if warp::warp_id() == 0 {
        let warps = (block_dim().x as usize).div_ceil(32);
        let total = warp::reduce_sum(if lane < warps { per_warp.get(lane) } else { 0.0 });
        let blk = block_idx().x as usize;
        if lane == 0 && blk < sums.len() {
            // SAFETY: one thread per block writes, each its own block's
            // element, and no thread reads `sums` during the launch: the
            // writes are disjoint (the pattern `DisjointSlice`'s safe methods
            // do not cover: element `blk` belongs to global thread `blk`).
            unsafe { *sums.as_mut_ptr().add(blk) = total };
        }
    }
}

#[offload::host]
mod host {
    use super::*;
    use clap::Parser;
    use offload::{DeviceBuffer, LaunchConfig, PinnedBuffer};
    use std::time::Instant;

    const START_A: f64 = 0.1;
    const START_B: f64 = 0.2;
    const START_C: f64 = 0.0;
    const START_SCALAR: f64 = 0.4;
    #[derive(Parser, Debug)]
    #[command(about = "BabelStream with offload: copy, mul, add, triad, dot, nstream bandwidth (f64)")]
    pub struct Args {
        /// Elements per array
        #[arg(short = 's', long = "arraysize", default_value_t = 1 << 25, value_parser = clap::value_parser!(u64).range(1..=(1u64 << 31) - 1))]
        pub n: u64,
        /// Times each kernel runs (the first is not counted)
        #[arg(short = 'n', long = "numtimes", default_value_t = 100, value_parser = clap::value_parser!(u32).range(2..))]
        pub times: u32,
        /// Threads per block (BabelStream's TBSIZE)
        #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u32).range(32..=1024))]
        pub block: u32,
        /// Blocks of the dot kernel (default: 4 per multiprocessor, as BabelStream's CUDA version)
        #[arg(long)]
        pub dot_blocks: Option<u32>,
        /// Print CSV rows `bench,impl,mode,case,size,metric,value` only
        #[arg(long)]
        pub csv: bool,
    }

    /// Times of one kernel over all iterations, in seconds.
    struct Timings {
        name: &'static str,
        bytes: f64,
        t: Vec<f64>,
    }

    impl Timings {
        fn new(name: &'static str, bytes_per_elem: usize, n: usize) -> Self {
            Timings { name, bytes: (bytes_per_elem * n * 8) as f64, t: Vec::new() }
        }
        fn time<R>(&mut self, f: impl FnOnce() -> offload::Result<R>) -> offload::Result<R> {
            let t0 = Instant::now();
            let r = f()?;
            self.t.push(t0.elapsed().as_secs_f64());
            Ok(r)
        }
        /// (min, max, average) without the first iteration, as BabelStream.
        fn stats(&self) -> (f64, f64, f64) {
            let rest = &self.t[1..];
            let min = rest.iter().cloned().fold(f64::INFINITY, f64::min);
            let max = rest.iter().cloned().fold(0.0, f64::max);
            (min, max, rest.iter().sum::<f64>() / rest.len() as f64)
        }
    }

    struct Arrays {
        a: DeviceBuffer<f64>,
        b: DeviceBuffer<f64>,
        c: DeviceBuffer<f64>,
    }

    struct Stream {
        n: usize,
        block: u32,
        arrays: Arrays,
        /// The per-block sums of dot, in page-locked host memory that the
        /// kernel writes directly (mapped, "zero-copy"), as BabelStream's
        /// CUDA version writes them into `cudaHostAlloc` memory.
        sums: PinnedBuffer<f64>,
        dot_blocks: u32,
    }

    impl Stream {
        fn new(n: usize, block: u32, dot_blocks: u32) -> offload::Result<Self> {
            Ok(Stream {
                n,
                block,
                arrays: Arrays { a: DeviceBuffer::zeroed(n)?, b: DeviceBuffer::zeroed(n)?, c: DeviceBuffer::zeroed(n)? },
                sums: PinnedBuffer::zeroed(dot_blocks as usize)?,
                dot_blocks,
            })
        }
        fn cfg(&self) -> LaunchConfig {
            LaunchConfig::new(self.n.div_ceil(self.block as usize) as u32, self.block)
        }
        fn init(&mut self) -> offload::Result<()> {
            let cfg = self.cfg();
            let Arrays { a, b, c } = &mut self.arrays;
            init(cfg, a, b, c, START_A, START_B, START_C)
        }
        fn copy(&mut self) -> offload::Result<()> {
            copy(self.cfg(), &self.arrays.a, &mut self.arrays.c)
        }
        fn mul(&mut self) -> offload::Result<()> {
            mul(self.cfg(), &mut self.arrays.b, &self.arrays.c, START_SCALAR)
        }
        fn add(&mut self) -> offload::Result<()> {
            add(self.cfg(), &self.arrays.a, &self.arrays.b, &mut self.arrays.c)
        }
        fn triad(&mut self) -> offload::Result<()> {
            triad(self.cfg(), &mut self.arrays.a, &self.arrays.b, &self.arrays.c, START_SCALAR)
        }
        fn nstream(&mut self) -> offload::Result<()> {
            nstream(self.cfg(), &mut self.arrays.a, &self.arrays.b, &self.arrays.c, START_SCALAR)
        }
        fn dot(&mut self) -> offload::Result<f64> {
            dot(LaunchConfig::new(self.dot_blocks, self.block), &self.arrays.a, &self.arrays.b, &mut self.sums.mapped_mut())?;
            Ok(self.sums.iter().sum())
        }
        fn read(&self) -> offload::Result<(Vec<f64>, Vec<f64>, Vec<f64>)> {
            Ok((self.arrays.a.to_vec()?, self.arrays.b.to_vec()?, self.arrays.c.to_vec()?))
        }
    }

    /// BabelStream's `check_solution`: the expected value of every element
    /// after `times` iterations, the average absolute error per array, and
    /// dot's relative error. Returns the failures.
    pub(crate) fn check(times: u32, nstream_run: bool, a: &[f64], b: &[f64], c: &[f64], sum: Option<f64>) -> Vec<String> {
        let (mut ga, mut gb, mut gc) = (START_A, START_B, START_C);
        let scalar = START_SCALAR;
        for _ in 0..times {
            if nstream_run {
                ga += gb + scalar * gc;
            } else {
                gc = ga;
                gb = scalar * gc;
                gc = ga + gb;
                ga = gb + scalar * gc;
            }
        }
        let gold_sum = ga * gb * a.len() as f64;
        let err = |v: &[f64], g: f64| v.iter().map(|&x| (x - g).abs()).sum::<f64>() / v.len() as f64;
        let epsi = f64::EPSILON * 100.0;
        let mut fails = Vec::new();
        for (name, v, g) in [("a", a, ga), ("b", b, gb), ("c", c, gc)] {
            let e = err(v, g);
            if e > epsi {
                fails.push(format!("validation failed on {name}[]: average error {e:e} (expected {g})"));
            }
        }
        if let Some(sum) = sum {
            let e = ((sum - gold_sum) / gold_sum).abs();
            if e > 1.0e-8 {
                fails.push(format!("validation failed on sum: error {e:e}, sum {sum} (expected {gold_sum})"));
            }
        }
        fails
    }

    pub fn run(args: Args) -> Result<bool, offload::Error> {
        let backend = offload::backend()?;
        let n = args.n as usize;
        let dot_blocks = args.dot_blocks.unwrap_or(4 * backend.multiprocessors.max(1));
        if !args.csv {
            println!("BabelStream (offload)");
            println!("Backend: {backend}");
            println!("Running kernels {} times, precision: double", args.times);
            println!("Array size: {:.1} MB (={:.1} GB)", n as f64 * 8e-6, n as f64 * 8e-9);
            println!("Reduction kernel config: {dot_blocks} groups of size {}", args.block);
        }
        let mut s = Stream::new(n, args.block, dot_blocks)?;
        s.init()?;

        let mut t = [
            Timings::new("copy", 2, n),
            Timings::new("mul", 2, n),
            Timings::new("add", 3, n),
            Timings::new("triad", 3, n),
            Timings::new("dot", 2, n),
        ];
        let mut sum = 0.0;
        for _ in 0..args.times {
            t[0].time(|| s.copy())?;
            t[1].time(|| s.mul())?;
            t[2].time(|| s.add())?;
            t[3].time(|| s.triad())?;
            sum = t[4].time(|| s.dot())?;
        }
        let mut fails = {
            let (a, b, c) = s.read()?;
            check(args.times, false, &a, &b, &c, Some(sum))
        };

        s.init()?;
        let mut tn = Timings::new("nstream", 4, n);
        for _ in 0..args.times {
            tn.time(|| s.nstream())?;
        }
        let (a, b, c) = s.read()?;
        fails.extend(check(args.times, true, &a, &b, &c, None).into_iter().map(|f| format!("nstream: {f}")));

        let all: Vec<&Timings> = t.iter().chain([&tn]).collect();
        if args.csv {
            for k in &all {
                let (min, _, avg) = k.stats();
                println!("babelstream,offload,default,{},{n},gbytes_per_sec,{:.3}", k.name, k.bytes / min * 1e-9);
                println!("babelstream,offload,default,{},{n},avg_gbytes_per_sec,{:.3}", k.name, k.bytes / avg * 1e-9);
            }
            println!("babelstream,offload,default,validation,{n},valid,{}", u8::from(fails.is_empty()));
        } else {
            println!("{:<12}{:<12}{:<12}{:<12}{:<12}", "Function", "MBytes/sec", "Min (sec)", "Max", "Average");
            for k in &all {
                let (min, max, avg) = k.stats();
                println!("{:<12}{:<12.3}{:<12.5}{:<12.5}{:<12.5}", k.name, k.bytes / min * 1e-6, min, max, avg);
            }
        }
        for f in &fails {
            eprintln!("{f}");
        }
        Ok(fails.is_empty())
    }
}

#[offload::host]
fn main() {
    let args = <host::Args as clap::Parser>::parse();
    match host::run(args) {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::host::check;

    #[test]
    fn validation_follows_babelstream() {
        // One iteration from a = 0.1, b = 0.2, c = 0.0, scalar 0.4:
        // c = a = 0.1; b = 0.4·c = 0.04; c = a + b = 0.14; a = b + 0.4·c = 0.096.
        let (a, b, c) = (vec![0.096; 8], vec![0.04; 8], vec![0.14; 8]);
        let sum = 0.096 * 0.04 * 8.0;
        assert!(check(1, false, &a, &b, &c, Some(sum)).is_empty());
        let mut bad = a.clone();
        bad[3] += 1e-9; // average error 1.25e-10 > 100 ε
        assert_eq!(check(1, false, &bad, &b, &c, Some(sum)).len(), 1);
        assert_eq!(check(1, false, &a, &b, &c, Some(sum * (1.0 + 2e-8))).len(), 1);
        // nstream: a += b + 0.4·c from 0.1, 0.2, 0.0 gives a = 0.3.
        assert!(check(1, true, &[0.3; 4], &[0.2; 4], &[0.0; 4], None).is_empty());
    }
}
