//! Copies overlapped with kernels: data in page-locked host memory
//! (`PinnedBuffer`s) goes to the GPU in chunks, a kernel runs on each
//! chunk, and the results come back, with the chunks dealt round-robin to
//! several `Queue`s (CUDA streams), so that one chunk's copy to the
//! device, another's kernel and a third's copy back run at the same time
//! (the H200 has a copy engine for each direction). The same work with
//! the blocking API, one step after the other, is timed for comparison,
//! and every element is checked against the host.
//!
//! ```text
//! cargo offload run --release -p streams [-- <MiB> [<chunk MiB> [<queues>]]]
//! ```
//!
//! Defaults: 256 MiB in 16 MiB chunks on 3 queues on a GPU; 8 MiB in
//! 1 MiB chunks on 2 queues on the host fallback (`OFFLOAD_DEVICE=host`),
//! where queues are worker threads and a "copy" is a `memcpy`, so there is
//! little to overlap. Exits non-zero if an element is wrong.

use offload::prelude::*;

/// `y[i] = x[i]² + 1`: the work done on each chunk.
#[kernel(same_len(x, y))]
fn square_plus_one(x: &[f32], y: &mut [f32]) {
    if let Some((i, yi)) = y.at_thread() {
        *yi = x[i] * x[i] + 1.0;
    }
}

#[offload::host]
fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

#[offload::host]
fn run() -> offload::Result<()> {
    use offload::{BackendKind, DeviceBuffer, PinnedBuffer, Queue};
    use std::time::Instant;

    let backend = offload::backend()?;
    println!("backend: {backend}");
    let gpu = backend.kind != BackendKind::Host;
    let (mib, chunk_mib, queues) = if gpu { (256, 16, 3) } else { (8, 1, 2) };
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().unwrap_or(0))
        .collect();
    let arg = |i: usize, default: usize| args.get(i).copied().unwrap_or(default);
    let (mib, chunk_mib, queues) = (arg(0, mib), arg(1, chunk_mib), arg(2, queues));
    if chunk_mib == 0 || mib == 0 || mib % chunk_mib != 0 || queues == 0 || args.len() > 3 {
        eprintln!("usage: streams [MiB [chunk MiB [queues]]], positive, chunk MiB dividing MiB");
        std::process::exit(2);
    }
    let chunks = mib / chunk_mib;
    let len = (chunk_mib << 20) / 4;
    let cfg = for_len(len);

    // Inputs and outputs, one page-locked buffer per chunk: copies from and
    // into page-locked memory are DMA that returns at once when queued.
    let input_value = |c: usize, i: usize| ((c * len + i) % 2048) as f32 / 64.0;
    let mut input = Vec::with_capacity(chunks);
    let mut output = Vec::with_capacity(chunks);
    for c in 0..chunks {
        let mut p = PinnedBuffer::<f32>::zeroed(len)?;
        for (i, v) in p.iter_mut().enumerate() {
            *v = input_value(c, i);
        }
        input.push(p);
        output.push(PinnedBuffer::<f32>::zeroed(len)?);
    }

    // The pipeline: chunk c on queue c % queues, with that queue's own
    // device buffers (work on one queue runs in order, so reusing them for
    // its next chunk is safe; offload orders them anyway, see
    // docs/async.md section 3).
    let qs = (0..queues)
        .map(|_| Queue::new())
        .collect::<offload::Result<Vec<_>>>()?;
    let mut d_in = (0..queues)
        .map(|_| DeviceBuffer::<f32>::zeroed(len))
        .collect::<offload::Result<Vec<_>>>()?;
    let mut d_out = (0..queues)
        .map(|_| DeviceBuffer::<f32>::zeroed(len))
        .collect::<offload::Result<Vec<_>>>()?;
    let pipeline = |output: &mut [PinnedBuffer<f32>],
                    d_in: &mut [DeviceBuffer<f32>],
                    d_out: &mut [DeviceBuffer<f32>]|
     -> offload::Result<f64> {
        let t = Instant::now();
        for c in 0..chunks {
            let j = c % queues;
            let q = &qs[j];
            q.memcpy_htod(&input[c], &mut d_in[j])?; // returns at once
            square_plus_one::on(q, cfg, &d_in[j], &mut d_out[j])?; // after the copy, on q
            q.memcpy_dtoh(&d_out[j], &mut output[c])?; // after the kernel, on q
        }
        for q in &qs {
            q.synchronize()?; // errors of q's work arrive here
        }
        Ok(t.elapsed().as_secs_f64())
    };
    // The first run pays for set-up (module load, first touch); time the second.
    pipeline(&mut output, &mut d_in, &mut d_out)?;
    let overlapped = pipeline(&mut output, &mut d_in, &mut d_out)?;

    // Check every element against the host (same f32 operations).
    let mut wrong = 0usize;
    for (c, out) in output.iter().enumerate() {
        for (i, &v) in out.iter().enumerate() {
            let x = input_value(c, i);
            if v != x * x + 1.0 {
                if wrong < 5 {
                    eprintln!(
                        "chunk {c}, element {i}: {v} but the host computes {}",
                        x * x + 1.0
                    );
                }
                wrong += 1;
            }
        }
    }

    // The same work with the blocking API, for comparison.
    let t = Instant::now();
    for c in 0..chunks {
        d_in[0].copy_from_slice(&input[c])?;
        square_plus_one(cfg, &d_in[0], &mut d_out[0])?;
        d_out[0].copy_to_slice(&mut output[c])?;
    }
    let blocking = t.elapsed().as_secs_f64();

    let gbs = |s: f64| (mib << 20) as f64 / s / 1e9;
    println!(
        "streams: {mib} MiB in {chunks} chunks of {chunk_mib} MiB on {queues} queue(s): {:.2} ms ({:.1} GB/s); \
         blocking, one step after the other: {:.2} ms ({:.1} GB/s); {:.2}x",
        overlapped * 1e3,
        gbs(overlapped),
        blocking * 1e3,
        gbs(blocking),
        blocking / overlapped
    );
    if wrong > 0 {
        eprintln!(
            "error: {wrong} of {} elements differ from the host",
            chunks * len
        );
        std::process::exit(1);
    }
    println!("streams: all {} elements match the host", chunks * len);
    Ok(())
}
