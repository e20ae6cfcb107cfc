//! Launch overhead and host ↔ device transfers through `offload`; the C
//! baselines are `bench/cuda/launch.cu` and `bench/cuda/transfer.cu`.
//!
//! ```text
//! microbench launch   [--iters N] [--csv]   # empty kernel: launcher, mapping, launch, sync
//! microbench transfer [--mib M] [--iters N] [--csv]
//! ```
//!
//! `launch` times one call of a launcher at a time (it returns after the
//! kernel finished), for: a kernel without parameters; one with two resident
//! `DeviceBuffer` slices; one with a 4-byte host slice (mapped: device
//! allocation, copy, free per launch). It reports the mean and the median
//! per call in microseconds.
//!
//! `transfer` times copies of `--mib` MiB (1024 by default) between host
//! memory and a `DeviceBuffer`, from ordinary (pageable) `Vec`s and from
//! `PinnedBuffer`s, in GB/s (1e9 bytes); and a launch whose `&[u8]`
//! argument is that much host memory (automatic mapping: what a launch
//! costs without residency). `resident` launches a kernel 10 times over a
//! `DeviceBuffer` and over a `Vec` of the same size: with residency no
//! launch moves data.

use offload::prelude::*;

/// Does nothing: the cost of a launch itself.
#[kernel]
fn empty() {}

/// Two resident slices, untouched.
#[kernel]
fn empty_args(x: &[f32], y: &mut [f32]) {
    let _ = (x, y);
}

/// Reads one element per thread of a byte slice, writes nothing unless it
/// is 255 (it never is): makes the mapped argument used.
#[kernel]
fn touch(x: &[u8], out: &mut [u32]) {
    let i = global_index();
    if i < x.len() && x[i] == 255 {
        if let Some(o) = out.get_mut_if_owned(0) {
            *o = 1;
        }
    }
}

#[offload::host]
mod host {
    use super::*;
    use clap::{Parser, Subcommand};
    use offload::{DeviceBuffer, PinnedBuffer};
    use std::time::Instant;

    #[derive(Parser, Debug)]
    #[command(about = "offload launch-overhead and transfer microbenchmarks")]
    pub struct Args {
        #[command(subcommand)]
        pub what: What,
        /// Print CSV rows `bench,impl,mode,case,size,metric,value` only
        #[arg(long, global = true)]
        pub csv: bool,
    }

    #[derive(Subcommand, Debug)]
    pub enum What {
        /// Launch + synchronize an empty kernel, one call at a time
        Launch {
            /// Timed launches per case
            #[arg(long, default_value_t = 20000, value_parser = clap::value_parser!(u32).range(1..))]
            iters: u32,
        },
        /// Host ↔ device copies of one large buffer
        Transfer {
            /// MiB per copy
            #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u64).range(1..=65536))]
            mib: u64,
            /// Timed copies per case
            #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..))]
            iters: u32,
        },
    }

    fn median(v: &mut [f64]) -> f64 {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let n = v.len();
        if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        }
    }

    /// Times `iters` calls after `iters / 10 + 1` untimed ones; returns each call's seconds.
    fn time_calls(iters: u32, mut f: impl FnMut() -> offload::Result<()>) -> offload::Result<Vec<f64>> {
        for _ in 0..iters / 10 + 1 {
            f()?;
        }
        let mut t = Vec::with_capacity(iters as usize);
        for _ in 0..iters {
            let t0 = Instant::now();
            f()?;
            t.push(t0.elapsed().as_secs_f64());
        }
        Ok(t)
    }

    fn emit(csv: bool, bench: &str, case: &str, size: u64, metric: &str, value: f64) {
        if csv {
            println!("{bench},offload,default,{case},{size},{metric},{value:.4}");
        } else {
            println!("{bench:<9} {case:<22} {size:>12} {metric:<16} {value:>12.4}");
        }
    }

    pub fn run(args: Args) -> offload::Result<()> {
        let b = offload::backend()?;
        if !args.csv {
            println!("Backend: {b}");
        }
        match args.what {
            What::Launch { iters } => {
                let one = LaunchConfig::new(1u32, 1u32);
                let x = DeviceBuffer::<f32>::zeroed(256)?;
                let mut y = DeviceBuffer::<f32>::zeroed(256)?;
                let host = [0u8; 4];
                let mut out = DeviceBuffer::<u32>::zeroed(1)?;
                let cases: [(&str, &mut dyn FnMut() -> offload::Result<()>); 3] = [
                    ("empty", &mut || empty(one)),
                    ("resident_args", &mut || empty_args(one, &x, &mut y)),
                    ("host_arg_4B", &mut || touch(one, &host, &mut out)),
                ];
                for (name, f) in cases {
                    let mut t = time_calls(iters, f)?;
                    let mean = t.iter().sum::<f64>() / t.len() as f64;
                    emit(args.csv, "launch", name, 0, "us_mean", mean * 1e6);
                    emit(args.csv, "launch", name, 0, "us_median", median(&mut t) * 1e6);
                }
            }
            What::Transfer { mib, iters } => {
                let bytes = (mib << 20) as usize;
                let gbs = |t: &mut Vec<f64>| bytes as f64 / median(t) * 1e-9;
                let mut dev = DeviceBuffer::<u8>::zeroed(bytes)?;
                let mut pageable = vec![1u8; bytes];
                let mut t = time_calls(iters, || dev.copy_from_slice(&pageable))?;
                emit(args.csv, "transfer", "htod_pageable", bytes as u64, "gbytes_per_sec", gbs(&mut t));
                let mut t = time_calls(iters, || dev.copy_to_slice(&mut pageable))?;
                emit(args.csv, "transfer", "dtoh_pageable", bytes as u64, "gbytes_per_sec", gbs(&mut t));
                let mut pinned = PinnedBuffer::<u8>::zeroed(bytes)?;
                pinned.fill(2);
                let mut t = time_calls(iters, || dev.copy_from_slice(&pinned))?;
                emit(args.csv, "transfer", "htod_pinned", bytes as u64, "gbytes_per_sec", gbs(&mut t));
                let mut t = time_calls(iters, || dev.copy_to_slice(&mut pinned))?;
                emit(args.csv, "transfer", "dtoh_pinned", bytes as u64, "gbytes_per_sec", gbs(&mut t));
                if pinned.iter().any(|&v| v != 2) || pageable.iter().any(|&v| v != 1) {
                    eprintln!("error: a transfer changed the data");
                    std::process::exit(1);
                }
                drop(pinned);
                // Automatic mapping of a host slice argument: allocate, copy
                // in, launch, free, every launch.
                let mut flag = DeviceBuffer::<u32>::zeroed(1)?;
                let cfg = for_len(1024);
                let mut t = time_calls(iters, || touch(cfg, &pageable, &mut flag))?;
                emit(args.csv, "transfer", "launch_mapped_pageable", bytes as u64, "gbytes_per_sec", gbs(&mut t));
                // Residency: the same data in 10 consecutive launches.
                let mut t = time_calls(iters, || {
                    for _ in 0..10 {
                        touch(cfg, &dev, &mut flag)?;
                    }
                    Ok(())
                })?;
                emit(args.csv, "transfer", "ten_launches_resident", bytes as u64, "ms", median(&mut t) * 1e3);
                let mut t = time_calls(iters.min(3), || {
                    for _ in 0..10 {
                        touch(cfg, &pageable, &mut flag)?;
                    }
                    Ok(())
                })?;
                emit(args.csv, "transfer", "ten_launches_mapped", bytes as u64, "ms", median(&mut t) * 1e3);
            }
        }
        Ok(())
    }
}

#[offload::host]
fn main() {
    let args = <host::Args as clap::Parser>::parse();
    if let Err(e) = host::run(args) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
