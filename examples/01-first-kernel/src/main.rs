//! Tutorial 1: a first kernel.
//!
//! `y ← a·x + y` ("saxpy") on a million floats: the README's example, with
//! its result checked. From the repository root:
//!
//!     cargo offload run -p sample_offload
//!
//! `cargo offload` compiles this crate twice: once for the GPU, keeping only
//! the kernels, and once for the host, with the GPU code embedded in the
//! binary. The program runs its kernel on the GPU if there is one, else on
//! the host CPU (the *host fallback*, same results); its first line says
//! which. `OFFLOAD_DEVICE=host` chooses the host CPU without a warning.
//!
//! What it shows:
//! - `#[kernel]` on an ordinary `fn` makes it a GPU kernel. Every GPU thread
//!   runs the body once, at the same time as all the others.
//! - In host code the same name is a *launcher*: it takes a launch
//!   configuration first, then the kernel's arguments; it moves the data to
//!   the GPU, runs the kernel, moves the results back and returns
//!   `offload::Result<()>` when all of that is done.
//! - `#[offload::host]` keeps host-only code (`main`, printing, anything that
//!   needs `std`) out of the GPU build.
//!
//! The result is checked against the same computation done on the host in
//! f64; the program exits non-zero if any element differs.

use offload::prelude::*;

/// `y[i] = a·x[i] + y[i]`, one element per GPU thread.
///
/// A `&mut [f32]` parameter arrives in the body as a `DisjointSlice`, through
/// which each thread reaches only the elements it owns, so two threads can
/// never write the same element. `at_thread()` gives this thread its one
/// element, `(i, &mut y[i])` with `i` = the thread's `global_index()`, or
/// `None` for the threads past the end (a launch has whole blocks of
/// threads, so there are usually a few more threads than elements).
#[kernel]
fn saxpy(a: f32, x: &[f32], y: &mut [f32]) {
    if let Some((i, yi)) = y.at_thread() {
        *yi += a * x[i];
    }
}

#[offload::host]
fn main() -> Result<(), offload::Error> {
    // Which device runs the kernels: `cuda: NVIDIA H200 (sm_90), …` or `host: …`.
    println!("offload backend: {}", offload::backend()?);

    // Not a multiple of the block size (256 threads): the last block has
    // threads with no element, which `at_thread()` turns away.
    let n = 1_000_003;
    let a = 2.5f32;
    let x: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 / 1000.0).collect();
    let y0: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
    let mut y = y0.clone();

    // `for_len(n)`: a 1-D launch of 256-thread blocks, enough of them for n
    // threads. `x` is copied to the GPU; `y` is copied to the GPU and, after
    // the kernel, back into `y` (tutorial 2 says what moves when).
    saxpy(for_len(n), a, &x, &mut y)?;

    // The host reference, in f64: one f32 multiply and one f32 add are
    // within a few units in the last place of it.
    let wrong = (0..n)
        .filter(|&i| {
            let want = a as f64 * x[i] as f64 + y0[i] as f64;
            (y[i] as f64 - want).abs() > 1e-6 * want.abs().max(1.0)
        })
        .count();
    println!("saxpy    n={n}: {wrong} wrong");
    if wrong > 0 {
        eprintln!("error: {wrong} of {n} elements differ from the host reference");
        std::process::exit(1);
    }
    println!("all results match the host reference");
    Ok(())
}
