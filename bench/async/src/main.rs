//! offload's asynchronous API (docs/async.md) against CUDA C written with
//! streams and graphs, `bench/cuda/async.cu`, which runs the same shapes
//! with the same flags and prints the same rows (issue 11, "Benchmarks").
//!
//! ```text
//! async-bench [--only launches|overlap|jacobi] [--reps R] [--csv] [sizes…]
//! ```
//!
//! - `launches`: a dependent chain of `--launches` (10 000) kernels over
//!   2^`--log2-elems` (2^16) f32s, ping-pong between two `DeviceBuffer`s
//!   (`y[i] = x[i] + 1`, then `x[i] = y[i] + 1`, …): the blocking launch
//!   (each returns when its kernel has finished), queued launches on one
//!   `Queue` and one synchronize, and graph replay (a graph of
//!   `--graph-len` (100) launches captured once, launched
//!   `launches / graph-len` times). Rows: µs per launch (wall time of the
//!   whole chain including the final synchronize, divided by the count)
//!   and, for queued and graph, µs per launch spent submitting (the time
//!   until the last launch call returned): submission close to the total
//!   means the host is the bottleneck, far below it the GPU.
//! - `overlap`: `--mib` (1024) MiB of f32 in `--chunk-mib` (64) MiB
//!   chunks, each copied host → device from its `PinnedBuffer`, doubled
//!   plus one by a kernel, copied back into another `PinnedBuffer`: with
//!   the blocking API (copy, launch, copy; one chunk after the other) and
//!   with the chunks dealt round-robin to `--queues` (1,2,3,4) queues
//!   (`memcpy_htod`, `kernel::on`, `memcpy_dtoh`; one pair of device
//!   buffers per queue). Rows: ms and GB/s (MiB moved in one direction per
//!   second, 1e9 bytes).
//! - `jacobi`: `--jacobi-steps` (500) steps of the 5-point Jacobi stencil
//!   on a `--jacobi-n`² (512²) f32 grid with fixed edges, ping-pong
//!   `DeviceBuffer`s: blocking, queued, one graph of all steps
//!   (`graph_all`), and a graph of two steps replayed steps/2 times
//!   (`graph_2`). Rows: µs per step.
//!
//! Every variant runs once untimed (its result checked: the chain's
//! `x[i] + launches`, every element of every chunk, the grid against a
//! host Jacobi with the same f32 operations in the same order; all exact),
//! then `--reps` (5) times timed; each row is the median of the timed
//! runs. `valid` rows are 1 when the check passed. The process exits 1 if
//! a check failed.

use offload::prelude::*;

/// `y[i] = x[i] + 1`: one link of the dependent chain.
#[kernel(same_len(x, y))]
fn inc(x: &[f32], y: &mut [f32]) {
    if let Some((i, yi)) = y.at_thread() {
        *yi = x[i] + 1.0;
    }
}

/// `y[i] = 2 x[i] + 1`: the pipeline's kernel per chunk (exact for the
/// inputs used, with or without contraction).
#[kernel(same_len(x, y))]
fn twice_plus_one(x: &[f32], y: &mut [f32]) {
    if let Some((i, yi)) = y.at_thread() {
        *yi = 2.0 * x[i] + 1.0;
    }
}

/// One Jacobi step on an `n`×`n` row-major grid: interior points become
/// the mean of their four neighbours (added in the order up, down, left,
/// right, as the host reference and the CUDA C kernel do), edges are
/// copied. 32-bit index arithmetic, as the CUDA C kernel's.
#[kernel(same_len(a, b))]
fn jacobi(n: u32, a: &[f32], b: &mut [f32]) {
    if let Some((i, bi)) = b.at_thread() {
        let k = i as u32;
        let (r, c) = (k / n, k % n);
        *bi = if r == 0 || c == 0 || r + 1 == n || c + 1 == n {
            a[i]
        } else {
            let n = n as usize;
            0.25 * (((a[i - n] + a[i + n]) + a[i - 1]) + a[i + 1])
        };
    }
}

/// `jacobi` without Rust's bounds checks on the four neighbours, for
/// `--jacobi-unchecked`: measures what the checks (and their panic path)
/// cost against CUDA C, whose kernel has none.
#[kernel(same_len(a, b))]
fn jacobi_unchecked(n: u32, a: &[f32], b: &mut [f32]) {
    let nn = n as usize;
    // One uniform test instead of four per point: every index below is
    // then inside an n×n grid.
    if a.len() != nn * nn {
        return;
    }
    if let Some((i, bi)) = b.at_thread() {
        let k = i as u32;
        let (r, c) = (k / n, k % n);
        *bi = if r == 0 || c == 0 || r + 1 == n || c + 1 == n {
            a[i]
        } else {
            // SAFETY: an interior point (1 <= r, c <= n - 2) of an n×n grid
            // (a.len() == n², tested above): i - n, i + n, i - 1 and i + 1
            // are all in 0..n².
            unsafe {
                0.25 * (((a.get_unchecked(i - nn) + a.get_unchecked(i + nn)) + a.get_unchecked(i - 1))
                    + a.get_unchecked(i + 1))
            }
        };
    }
}

#[offload::host]
mod host {
    use super::*;
    use clap::{Parser, ValueEnum};
    use offload::{DeviceBuffer, PinnedBuffer, Queue};
    use std::time::Instant;

    #[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
    pub enum Part {
        Launches,
        Overlap,
        Jacobi,
    }

    #[derive(Parser, Debug)]
    #[command(
        about = "offload queues, graphs and overlapped copies (compare with bench/cuda/async.cu)"
    )]
    pub struct Args {
        /// Run one part only
        #[arg(long, value_enum)]
        pub only: Option<Part>,
        /// Kernels in the dependent chain (even, a multiple of --graph-len)
        #[arg(long, default_value_t = 10_000)]
        pub launches: u32,
        /// log2 of the chain's elements
        #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(8..=28))]
        pub log2_elems: u32,
        /// Launches per captured graph (even)
        #[arg(long, default_value_t = 100)]
        pub graph_len: u32,
        /// Also capture the chain with the driver directly around queued
        /// launches, replay it with cuGraphLaunch, and write its nodes as
        /// DOT to this file (`graph-gap.sh`: tells offload's capture and
        /// replay from the kernel nodes themselves)
        #[arg(long, hide = true)]
        pub raw_capture_dot: Option<std::path::PathBuf>,
        /// `PTX:SYMBOL:PARAMS[:LABEL]` (repeatable): replay that kernel
        /// with the driver API alone, in this process, before offload
        /// starts, after its graph replay, and on its buffers and queue
        /// (`graph-gap.sh`, see src/foreign.rs)
        #[arg(long, hide = true)]
        pub foreign: Vec<String>,
        /// MiB through the pipeline
        #[arg(long, default_value_t = 1024)]
        pub mib: usize,
        /// MiB per chunk
        #[arg(long, default_value_t = 64)]
        pub chunk_mib: usize,
        /// Queue counts of the pipeline
        #[arg(long, value_delimiter = ',', default_value = "1,2,3,4")]
        pub queues: Vec<usize>,
        /// Jacobi grid side
        #[arg(long, default_value_t = 512, value_parser = clap::value_parser!(u32).range(3..=16384))]
        pub jacobi_n: u32,
        /// Jacobi steps (even)
        #[arg(long, default_value_t = 500)]
        pub jacobi_steps: u32,
        /// Jacobi with the kernel whose neighbour loads skip Rust's bounds
        /// checks (`jacobi_unchecked`): what the checks cost
        #[arg(long)]
        pub jacobi_unchecked: bool,
        /// Timed runs per variant (after one untimed, checked run)
        #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
        pub reps: u32,
        /// Print CSV rows `bench,impl,mode,case,size,metric,value` only
        #[arg(long)]
        pub csv: bool,
    }

    type R<T> = offload::Result<T>;

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

    struct Out {
        csv: bool,
        ok: bool,
    }

    impl Out {
        fn row(&self, bench: &str, case: &str, size: usize, metric: &str, value: f64) {
            if self.csv {
                println!("{bench},offload,default,{case},{size},{metric},{value:.4}");
            } else {
                println!("{bench:<14} {case:<10} {size:>11} {metric:<22} {value:>12.4}");
            }
        }

        fn valid(&mut self, bench: &str, case: &str, size: usize, ok: bool, what: &str) {
            if !ok {
                eprintln!("error: {bench} {case}: {what}");
                self.ok = false;
            }
            self.row(bench, case, size, "valid", if ok { 1.0 } else { 0.0 });
        }
    }

    fn launches(a: &Args, out: &mut Out) -> R<()> {
        let (l, gl) = (a.launches as usize, a.graph_len as usize);
        if l == 0 || gl == 0 || l % 2 != 0 || gl % 2 != 0 || l % gl != 0 {
            eprintln!("error: --launches ({l}) and --graph-len ({gl}) must be even and --graph-len must divide --launches");
            std::process::exit(2);
        }
        let n = 1usize << a.log2_elems;
        let cfg = for_len(n);
        let init: Vec<f32> = (0..n).map(|i| (i % 1000) as f32).collect();
        let mut x = DeviceBuffer::from_slice(&init)?;
        let mut y = DeviceBuffer::<f32>::zeroed(n)?;
        let q = Queue::new()?;
        // The chain leaves `init + l` in `x` (l even); checked after the
        // untimed run, which starts from `init`.
        let check = |x: &DeviceBuffer<f32>| -> R<bool> {
            let got = x.to_vec()?;
            Ok(got.iter().zip(&init).all(|(g, i)| *g == *i + l as f32))
        };
        let bench = "async_launch";
        let per = |t: &[f64]| median(t) / l as f64 * 1e6;

        // Blocking: each launch returns once its kernel has finished.
        let mut ok = true;
        let mut t_all = Vec::new();
        for rep in 0..=a.reps {
            let t0 = Instant::now();
            for _ in 0..l / 2 {
                inc(cfg, &x, &mut y)?;
                inc(cfg, &y, &mut x)?;
            }
            let t = t0.elapsed().as_secs_f64();
            if rep == 0 {
                ok = check(&x)?;
            } else {
                t_all.push(t);
            }
        }
        out.row(bench, "blocking", n, "us_per_launch", per(&t_all));
        out.valid(
            bench,
            "blocking",
            n,
            ok,
            "the chain's result differs from x + launches",
        );
        if !a.foreign.is_empty() {
            foreign_at(a, "blocking");
        }

        // Queued: l launches on one queue, one synchronize.
        x.copy_from_slice(&init)?;
        let mut ok = true;
        let (mut t_all, mut s_all) = (Vec::new(), Vec::new());
        for rep in 0..=a.reps {
            let t0 = Instant::now();
            for _ in 0..l / 2 {
                inc::on(&q, cfg, &x, &mut y)?;
                inc::on(&q, cfg, &y, &mut x)?;
            }
            let s = t0.elapsed().as_secs_f64();
            q.synchronize()?;
            let t = t0.elapsed().as_secs_f64();
            if rep == 0 {
                ok = check(&x)?;
            } else {
                t_all.push(t);
                s_all.push(s);
            }
        }
        if !a.foreign.is_empty() {
            q.synchronize()?;
            foreign_at(a, "queued");
        }
        out.row(bench, "queued", n, "us_per_launch", per(&t_all));
        out.row(bench, "queued", n, "us_submit_per_launch", per(&s_all));
        out.valid(
            bench,
            "queued",
            n,
            ok,
            "the chain's result differs from x + launches",
        );

        // Graph: gl launches captured once, replayed l / gl times.
        x.copy_from_slice(&init)?;
        let t0 = Instant::now();
        let graph = q.capture(|g| {
            for _ in 0..gl / 2 {
                inc::on(g, cfg, &x, &mut y)?;
                inc::on(g, cfg, &y, &mut x)?;
            }
            Ok(())
        })?;
        let instantiate = t0.elapsed().as_secs_f64();
        let mut ok = true;
        let (mut t_all, mut s_all) = (Vec::new(), Vec::new());
        for rep in 0..=a.reps {
            let t0 = Instant::now();
            for _ in 0..l / gl {
                graph.launch(&q)?;
            }
            let s = t0.elapsed().as_secs_f64();
            q.synchronize()?;
            let t = t0.elapsed().as_secs_f64();
            if rep == 0 {
                ok = check(&x)?;
            } else {
                t_all.push(t);
                s_all.push(s);
            }
        }
        drop(graph);
        // The foreign kernels, after offload's replay: in offload's
        // context on their own objects, then on offload's buffers and
        // queue stream.
        for spec in &foreign_specs(a) {
            q.synchronize()?;
            let (g, r) = (gl as u32, (l / gl) as u32);
            let (t, ok) = crate::foreign::replay(spec, n, g, r, a.reps, None, None);
            let case = format!("foreign_after_{}", spec.label);
            out.row(bench, &case, n, "us_per_launch", t);
            out.valid(bench, &case, n, ok, "the foreign chain's result differs");
            let on = crate::foreign::Borrowed {
                x: x.cu_deviceptr().expect("needs the GPU"),
                y: y.cu_deviceptr().expect("needs the GPU"),
                stream: q.cu_stream().expect("needs the GPU"),
            };
            let (t, ok) = crate::foreign::replay(spec, n, g, r, a.reps, Some(&on), None);
            let case = format!("foreign_on_offload_{}", spec.label);
            out.row(bench, &case, n, "us_per_launch", t);
            out.valid(bench, &case, n, ok, "the foreign chain's result differs");
        }
        if let Some(path) = &a.raw_capture_dot {
            x.copy_from_slice(&init)?;
            let t = raw_capture(&q, gl as u32, (l / gl) as u32, a.reps, path, || {
                for _ in 0..gl / 2 {
                    inc::on(&q, cfg, &x, &mut y)?;
                    inc::on(&q, cfg, &y, &mut x)?;
                }
                Ok(())
            })?;
            out.row(bench, "graph_raw_capture", n, "us_per_launch", t);
        }
        out.row(bench, "graph", n, "us_per_launch", per(&t_all));
        out.row(bench, "graph", n, "us_submit_per_launch", per(&s_all));
        out.row(
            bench,
            "graph",
            n,
            "ms_capture_instantiate",
            instantiate * 1e3,
        );
        out.valid(
            bench,
            "graph",
            n,
            ok,
            "the chain's result differs from x + launches",
        );
        Ok(())
    }

    /// µs per launch of a graph captured by the driver around `launches`
    /// (queued launches of `per_graph` kernels on `q`), replayed `replays`
    /// times with `cuGraphLaunch`, median of `reps`; its nodes go to `dot`
    /// (`cuGraphDebugDotPrint`, verbose). Only for `--raw-capture-dot`.
    fn raw_capture(
        q: &Queue,
        per_graph: u32,
        replays: u32,
        reps: u32,
        dot: &std::path::Path,
        launches: impl FnOnce() -> R<()>,
    ) -> R<f64> {
        use offload::cudarc::driver::sys;
        // A failure here is the experiment's, not offload's: say it, exit 1.
        fn fail(what: &str) -> ! {
            eprintln!("error: --raw-capture-dot: {what}");
            std::process::exit(1)
        }
        let ck = |r: sys::CUresult, op: &str| {
            if r != sys::CUresult::CUDA_SUCCESS {
                fail(&format!("{op}: {r:?}"))
            }
        };
        let stream = q.cu_stream().unwrap_or_else(|| fail("needs the GPU"));
        let path = std::ffi::CString::new(dot.to_string_lossy().as_bytes()).unwrap_or_else(|_| fail("bad path"));
        q.synchronize()?;
        let mut graph: sys::CUgraph = std::ptr::null_mut();
        let mut exec: sys::CUgraphExec = std::ptr::null_mut();
        // SAFETY: the queue's stream, idle (synchronized above); the
        // capture ends below before anything else uses it; the graph and
        // its exec are destroyed before returning, after the last replay
        // has finished (cuStreamSynchronize).
        unsafe {
            ck(
                sys::cuStreamBeginCapture_v2(stream, sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED),
                "cuStreamBeginCapture",
            );
            let captured = launches();
            ck(sys::cuStreamEndCapture(stream, &mut graph), "cuStreamEndCapture");
            captured?;
            ck(sys::cuGraphDebugDotPrint(graph, path.as_ptr(), 1), "cuGraphDebugDotPrint");
            ck(sys::cuGraphInstantiateWithFlags(&mut exec, graph, 0), "cuGraphInstantiate");
        }
        let mut t = Vec::new();
        for rep in 0..=reps {
            let t0 = Instant::now();
            for _ in 0..replays {
                // SAFETY: as above.
                unsafe { ck(sys::cuGraphLaunch(exec, stream), "cuGraphLaunch") };
            }
            // SAFETY: as above.
            unsafe { ck(sys::cuStreamSynchronize(stream), "cuStreamSynchronize") };
            if rep > 0 {
                t.push(t0.elapsed().as_secs_f64());
            }
        }
        // SAFETY: replays finished (synchronized above).
        unsafe {
            sys::cuGraphExecDestroy(exec);
            sys::cuGraphDestroy(graph);
        }
        Ok(median(&t) / (per_graph as f64 * replays as f64) * 1e6)
    }

    /// `f(chunk index, chunk)` for every chunk, on one thread per chunk.
    fn par_chunks<T: Send>(chunks: &mut [T], f: impl Fn(usize, &mut T) + Sync) {
        std::thread::scope(|s| {
            for (c, p) in chunks.iter_mut().enumerate() {
                let f = &f;
                s.spawn(move || f(c, p));
            }
        });
    }

    fn overlap(a: &Args, out: &mut Out) -> R<()> {
        if a.chunk_mib == 0 || !a.mib.is_multiple_of(a.chunk_mib) {
            eprintln!(
                "error: --chunk-mib ({}) must divide --mib ({})",
                a.chunk_mib, a.mib
            );
            std::process::exit(2);
        }
        let bench = "async_overlap";
        let bytes = a.mib << 20;
        let chunks = a.mib / a.chunk_mib;
        let len = (a.chunk_mib << 20) / 4;
        let cfg = for_len(len);
        let value = |c: usize, i: usize| ((c * len + i) % 4096) as f32;
        let mut input = (0..chunks)
            .map(|_| PinnedBuffer::<f32>::zeroed(len))
            .collect::<R<Vec<_>>>()?;
        let mut output = (0..chunks)
            .map(|_| PinnedBuffer::<f32>::zeroed(len))
            .collect::<R<Vec<_>>>()?;
        par_chunks(&mut input, |c, p| {
            for (i, v) in p.iter_mut().enumerate() {
                *v = value(c, i);
            }
        });
        // Every element of every chunk, on one thread per chunk.
        let check = |output: &mut [PinnedBuffer<f32>]| -> bool {
            let bad = std::sync::atomic::AtomicUsize::new(0);
            par_chunks(output, |c, p| {
                let wrong = p
                    .iter()
                    .enumerate()
                    .filter(|&(i, &v)| v != 2.0 * value(c, i) + 1.0)
                    .count();
                bad.fetch_add(wrong, std::sync::atomic::Ordering::Relaxed);
            });
            bad.into_inner() == 0
        };
        let clear = |output: &mut [PinnedBuffer<f32>]| par_chunks(output, |_, p| p.fill(0.0));
        let emit = |out: &mut Out, case: &str, t: &[f64], s: Option<&[f64]>, ok: bool| {
            let m = median(t);
            out.row(bench, case, bytes, "ms", m * 1e3);
            out.row(
                bench,
                case,
                bytes,
                "gbytes_per_sec",
                bytes as f64 / m * 1e-9,
            );
            if let Some(s) = s {
                out.row(bench, case, bytes, "ms_submit", median(s) * 1e3);
            }
            out.valid(
                bench,
                case,
                bytes,
                ok,
                "an output chunk differs from 2·input + 1",
            );
        };

        // Blocking: copy in, launch, copy out, one chunk after the other.
        {
            let mut d_in = DeviceBuffer::<f32>::zeroed(len)?;
            let mut d_out = DeviceBuffer::<f32>::zeroed(len)?;
            clear(&mut output);
            let mut ok = true;
            let mut t_all = Vec::new();
            for rep in 0..=a.reps {
                let t0 = Instant::now();
                for c in 0..chunks {
                    d_in.copy_from_slice(&input[c])?;
                    twice_plus_one(cfg, &d_in, &mut d_out)?;
                    d_out.copy_to_slice(&mut output[c])?;
                }
                let t = t0.elapsed().as_secs_f64();
                if rep == 0 {
                    ok = check(&mut output);
                } else {
                    t_all.push(t);
                }
            }
            emit(out, "blocking", &t_all, None, ok);
        }

        // Queued: chunk c on queue c % k, with that queue's device buffers.
        for &k in &a.queues {
            if k == 0 {
                continue;
            }
            let queues = (0..k).map(|_| Queue::new()).collect::<R<Vec<_>>>()?;
            let mut d_in = (0..k)
                .map(|_| DeviceBuffer::<f32>::zeroed(len))
                .collect::<R<Vec<_>>>()?;
            let mut d_out = (0..k)
                .map(|_| DeviceBuffer::<f32>::zeroed(len))
                .collect::<R<Vec<_>>>()?;
            clear(&mut output);
            let mut ok = true;
            let (mut t_all, mut s_all) = (Vec::new(), Vec::new());
            for rep in 0..=a.reps {
                let t0 = Instant::now();
                for c in 0..chunks {
                    let j = c % k;
                    let q = &queues[j];
                    q.memcpy_htod(&input[c], &mut d_in[j])?;
                    twice_plus_one::on(q, cfg, &d_in[j], &mut d_out[j])?;
                    q.memcpy_dtoh(&d_out[j], &mut output[c])?;
                }
                let s = t0.elapsed().as_secs_f64();
                for q in &queues {
                    q.synchronize()?;
                }
                let t = t0.elapsed().as_secs_f64();
                if rep == 0 {
                    ok = check(&mut output);
                } else {
                    t_all.push(t);
                    s_all.push(s);
                }
            }
            emit(out, &format!("queues_{k}"), &t_all, Some(&s_all), ok);
        }
        Ok(())
    }

    /// `steps` Jacobi steps on the host, with the kernel's f32 operations
    /// in the kernel's order.
    fn jacobi_host(n: usize, init: &[f32], steps: u32) -> Vec<f32> {
        let mut a = init.to_vec();
        let mut b = init.to_vec();
        for _ in 0..steps {
            for r in 1..n - 1 {
                for c in 1..n - 1 {
                    let i = r * n + c;
                    b[i] = 0.25 * (((a[i - n] + a[i + n]) + a[i - 1]) + a[i + 1]);
                }
            }
            std::mem::swap(&mut a, &mut b);
        }
        a
    }

    fn jacobi_bench(a: &Args, out: &mut Out) -> R<()> {
        let steps = a.jacobi_steps;
        if steps == 0 || !steps.is_multiple_of(2) {
            eprintln!("error: --jacobi-steps ({steps}) must be even and positive");
            std::process::exit(2);
        }
        let bench = "async_jacobi";
        let nn = a.jacobi_n;
        let n = nn as usize;
        let cfg = for_len(n * n);
        // Hot top edge (1), warm left edge (0.5), the rest 0.
        let init: Vec<f32> = (0..n * n)
            .map(|i| {
                if i < n {
                    1.0
                } else if i % n == 0 {
                    0.5
                } else {
                    0.0
                }
            })
            .collect();
        let want = jacobi_host(n, &init, steps);
        let mut ga = DeviceBuffer::from_slice(&init)?;
        let mut gb = DeviceBuffer::from_slice(&init)?;
        let q = Queue::new()?;
        let per = |t: &[f64]| median(t) / steps as f64 * 1e6;
        let matches = |ga: &DeviceBuffer<f32>| -> R<bool> { Ok(ga.to_vec()? == want) };
        let what = "the grid differs from the host Jacobi (same f32 operations)";
        // One step from `$a` into `$b`, blocking or on a queue or capture,
        // with the kernel that --jacobi-unchecked picks.
        let unchecked = a.jacobi_unchecked;
        macro_rules! step {
            ($a:expr, $b:expr) => {
                if unchecked {
                    jacobi_unchecked(cfg, nn, $a, $b)
                } else {
                    jacobi(cfg, nn, $a, $b)
                }
            };
            (on $q:expr, $a:expr, $b:expr) => {
                if unchecked {
                    jacobi_unchecked::on($q, cfg, nn, $a, $b)
                } else {
                    jacobi::on($q, cfg, nn, $a, $b)
                }
            };
        }

        // Blocking.
        let mut ok = true;
        let mut t_all = Vec::new();
        for rep in 0..=a.reps {
            let t0 = Instant::now();
            for _ in 0..steps / 2 {
                step!(&ga, &mut gb)?;
                step!(&gb, &mut ga)?;
            }
            let t = t0.elapsed().as_secs_f64();
            if rep == 0 {
                ok = matches(&ga)?;
            } else {
                t_all.push(t);
            }
        }
        out.row(bench, "blocking", n, "us_per_step", per(&t_all));
        out.valid(bench, "blocking", n, ok, what);

        // Queued.
        ga.copy_from_slice(&init)?;
        gb.copy_from_slice(&init)?;
        let mut ok = true;
        let (mut t_all, mut s_all) = (Vec::new(), Vec::new());
        for rep in 0..=a.reps {
            let t0 = Instant::now();
            for _ in 0..steps / 2 {
                step!(on &q, &ga, &mut gb)?;
                step!(on &q, &gb, &mut ga)?;
            }
            let s = t0.elapsed().as_secs_f64();
            q.synchronize()?;
            let t = t0.elapsed().as_secs_f64();
            if rep == 0 {
                ok = matches(&ga)?;
            } else {
                t_all.push(t);
                s_all.push(s);
            }
        }
        out.row(bench, "queued", n, "us_per_step", per(&t_all));
        out.row(bench, "queued", n, "us_submit_per_step", per(&s_all));
        out.valid(bench, "queued", n, ok, what);

        // Graphs: all steps in one graph; two steps replayed steps/2 times.
        for (case, len) in [("graph_all", steps), ("graph_2", 2)] {
            ga.copy_from_slice(&init)?;
            gb.copy_from_slice(&init)?;
            let graph = q.capture(|g| {
                for _ in 0..len / 2 {
                    step!(on g, &ga, &mut gb)?;
                    step!(on g, &gb, &mut ga)?;
                }
                Ok(())
            })?;
            let mut ok = true;
            let (mut t_all, mut s_all) = (Vec::new(), Vec::new());
            for rep in 0..=a.reps {
                let t0 = Instant::now();
                for _ in 0..steps / len {
                    graph.launch(&q)?;
                }
                let s = t0.elapsed().as_secs_f64();
                q.synchronize()?;
                let t = t0.elapsed().as_secs_f64();
                if rep == 0 {
                    ok = matches(&ga)?;
                } else {
                    t_all.push(t);
                    s_all.push(s);
                }
            }
            out.row(bench, case, n, "us_per_step", per(&t_all));
            out.row(bench, case, n, "us_submit_per_step", per(&s_all));
            out.valid(bench, case, n, ok, what);
        }
        Ok(())
    }

    /// Replays every `--foreign` kernel on its own objects now, as rows
    /// `foreign_<stage>_<label>` (the bisection of graph-gap.sh PARTS=foreign).
    fn foreign_at(a: &Args, stage: &str) {
        let n = 1usize << a.log2_elems;
        let (g, r) = (a.graph_len, a.launches / a.graph_len);
        for spec in &foreign_specs(a) {
            let (t, ok) = crate::foreign::replay(spec, n, g, r, a.reps, None, None);
            let case = format!("foreign_{stage}_{}", spec.label);
            Out { csv: a.csv, ok: true }.row("async_launch", &case, n, "us_per_launch", t);
            if !ok {
                eprintln!("error: {case}: the foreign chain's result differs");
                std::process::exit(1);
            }
        }
    }

    fn foreign_specs(a: &Args) -> Vec<crate::foreign::Spec> {
        a.foreign
            .iter()
            .map(|s| {
                crate::foreign::Spec::parse(s).unwrap_or_else(|e| {
                    eprintln!("error: {e}");
                    std::process::exit(2)
                })
            })
            .collect()
    }

    pub fn run(a: Args) -> R<bool> {
        // The foreign kernels before offload has touched the GPU (the
        // harness's situation, in this process), then after its start.
        if !a.foreign.is_empty() {
            crate::foreign::enter();
            foreign_at(&a, "before");
            if let Ok(how) = std::env::var("FOREIGN_PREWORK") {
                let spec = &foreign_specs(&a)[0];
                crate::foreign::prework(spec, 1usize << a.log2_elems, &how, 1000);
                foreign_at(&a, "prework");
            }
        }
        let b = offload::backend()?;
        if !a.foreign.is_empty() {
            foreign_at(&a, "init");
        }
        if !a.csv {
            println!("Backend: {b}");
        }
        let mut out = Out {
            csv: a.csv,
            ok: true,
        };
        let want = |p: Part| a.only.is_none_or(|o| o == p);
        if want(Part::Launches) {
            launches(&a, &mut out)?;
        }
        if want(Part::Overlap) {
            overlap(&a, &mut out)?;
        }
        if want(Part::Jacobi) {
            jacobi_bench(&a, &mut out)?;
        }
        Ok(out.ok)
    }
}

#[cfg(not(offload_device))]
mod foreign;

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
