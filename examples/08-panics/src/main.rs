//! Tutorial 8: panics in kernels.
//!
//!     cargo offload run --release -p panics
//!
//! A kernel may panic like any Rust code: `panic!`, a failed `assert!`, an
//! index out of bounds, an overflow where overflow checks are on. The GPU
//! thread that panics stops, the kernel finishes, and the launch returns
//!
//!     Err(offload::Error::KernelPanic(p)), p: offload::error::KernelPanic { kernel, message, location, block, thread }
//!
//! naming the kernel, the message, the panic's `file:line:column` and the
//! `blockIdx` and `threadIdx` of the thread, as `(x, y, z)`. Nothing else is
//! lost: the next launch works. The host fallback gives the same error.
//!
//! Every build reports literal messages (`assert!(ok, "negative input")`)
//! and `core`'s messages with values (`index out of bounds: the len is …
//! but the index is …`: the GPU records the numbers, the host writes the
//! text). So do messages with format arguments of your own written in a
//! kernel body (`assert!(ok, "bad {x}")`, `assert_eq!(a, b)`): the GPU
//! records the format string and up to four values (numbers, `bool`,
//! `char`; other arguments print `{?}`) and the host formats them, since
//! formatting on the GPU would cost every kernel registers. Such a message
//! in a function the kernel calls is reported in optimized builds as
//! `offload::UNFORMATTED_PANIC_MESSAGE`, a note saying so; debug builds
//! and the host fallback format it. Location, block and thread are always
//! there.
//!
//! The program makes two kernels panic on purpose, checks that each error
//! names the right kernel, line, block and thread, then launches them again
//! on valid input and checks the results against the host in f64; it exits
//! non-zero if anything differs.

use offload::prelude::*;

/// `out[i] = √x[i]`, asserting that `x[i]` is not negative.
#[kernel]
fn checked_sqrt(x: &[f32], out: &mut [f32]) {
    if let Some((i, o)) = out.at_thread() {
        assert!(x[i] >= 0.0, "negative input"); // MARK:assert
        *o = offload::math::sqrt(x[i]);
    }
}

/// `d[i] = x[i+1] - x[i]`: `d` must be one shorter than `x`, or its last
/// thread reads past the end of `x`.
#[kernel]
fn differences(x: &[f32], d: &mut [f32]) {
    if let Some((i, di)) = d.at_thread() {
        *di = x[i + 1] - x[i]; // MARK:index
    }
}

#[offload::host]
fn main() -> Result<(), offload::Error> {
    println!("offload backend: {}", offload::backend()?);
    let n = 4096;
    let mut x: Vec<f32> = (0..n).map(|i| (i * i % 1000) as f32 / 10.0).collect();
    let mut ok = true;

    // 1. A failed assertion: element 1000 is negative. With 256 threads per
    //    block, thread 1000 is thread 232 of block 3.
    x[1000] = -1.0;
    let mut roots = vec![0f32; n];
    let e = checked_sqrt(for_len(n), &x, &mut roots);
    ok &= expect_panic(e, "checked_sqrt", "negative input", "assert", 1000);

    // 2. The next launch works: the same kernel on valid input.
    x[1000] = 1.0;
    checked_sqrt(for_len(n), &x, &mut roots)?;
    let wrong = (0..n)
        .filter(|&i| {
            (roots[i] as f64 - (x[i] as f64).sqrt()).abs() > 1e-6 * (x[i] as f64).sqrt().max(1.0)
        })
        .count();
    println!("checked_sqrt on valid input: {wrong} wrong");
    ok &= wrong == 0;

    // 3. An index out of bounds: `d` as long as `x`, so thread n-1 reads x[n].
    let mut d = vec![0f32; n];
    let e = differences(for_len(n), &x, &mut d);
    let message = format!("index out of bounds: the len is {n} but the index is {n}");
    ok &= expect_panic(e, "differences", &message, "index", n - 1);

    // 4. Fixed: one difference fewer than values.
    differences(for_len(n - 1), &x, &mut d[..n - 1])?;
    let wrong = (0..n - 1)
        .filter(|&i| (d[i] as f64 - (x[i + 1] as f64 - x[i] as f64)).abs() > 1e-6 * 100.0)
        .count();
    println!("differences with n - 1 threads: {wrong} wrong");
    ok &= wrong == 0;

    if !ok {
        eprintln!("error: a result differs from what was expected");
        std::process::exit(1);
    }
    println!("all results match the host reference");
    Ok(())
}

/// Checks that `r` is the `KernelPanic` of `kernel`'s thread `global` (of a
/// 1-D launch of 256-thread blocks) at the source line marked `MARK:<mark>`,
/// with `message`; prints what it got.
#[offload::host]
fn expect_panic(
    r: offload::Result<()>,
    kernel: &str,
    message: &str,
    mark: &str,
    global: usize,
) -> bool {
    let Err(offload::Error::KernelPanic(p)) = r else {
        eprintln!("error: {kernel}: expected a KernelPanic, got {r:?}");
        return false;
    };
    let offload::error::KernelPanic {
        kernel: k,
        message: m,
        location,
        block,
        thread,
    } = *p;
    println!("{kernel} panicked:");
    println!("  kernel   {k}\n  message  {m}\n  location {location}\n  block    {block}\n  thread   {thread}");

    // Where the panic is: this file, at the line that carries the mark.
    let line = include_str!("main.rs")
        .lines()
        .position(|l| l.ends_with(&format!("// MARK:{mark}")))
        .expect("the marked line")
        + 1;
    let want_location = format!("{}:{line}:", file!());
    let want_block = format!("({}, 0, 0)", global / 256);
    let want_thread = format!("({}, 0, 0)", global % 256);
    let right = k.ends_with(kernel)
        && m == message
        && location.starts_with(&want_location)
        && block == want_block
        && thread == want_thread;
    if !right {
        eprintln!("error: expected kernel {kernel}, message {message:?}, location {want_location}…, block {want_block}, thread {want_thread}");
    }
    right
}
