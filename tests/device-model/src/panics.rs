//! Panics in kernels become `Err(KernelPanic)` naming the kernel, the
//! message, `file:line:column` and the block/thread; the other threads
//! finish; the next launch works.

use offload::{block_idx, kernel, thread_idx};

#[kernel]
fn explicit_panic(at_block: u32, at_thread: u32, out: &mut [u32]) {
    if block_idx().x == at_block && thread_idx().x == at_thread {
        panic!("explicit panic with value {}", 40 + 2); // MARK:explicit
    }
    if let Some((i, o)) = out.at_thread() {
        *o = i as u32;
    }
}

#[kernel]
fn out_of_bounds(x: &[u32], out: &mut [u32]) {
    if let Some((i, o)) = out.at_thread() {
        let j = if i == 77 { i + 1000 } else { i };
        *o = x[j]; // MARK:oob
    }
}

#[kernel]
fn failed_assert(limit: u32, x: &[u32], out: &mut [u32]) {
    if let Some((i, o)) = out.at_thread() {
        assert!(x[i] < limit, "x[{}] = {} is not below {}", i, x[i], limit); // MARK:assert
        *o = x[i];
    }
}

#[kernel]
fn failed_assert_eq(scale: f32, x: &[u32], out: &mut [u32]) {
    if let Some((i, o)) = out.at_thread() {
        assert_eq!(x[i], i as u32, "x[{i}] scaled by {scale:?}"); // MARK:assert_eq
        *o = x[i];
    }
}

#[kernel]
fn overflow(x: &[u8], out: &mut [u8]) {
    if let Some((i, o)) = out.at_thread() {
        *o = x[i] + 200; // MARK:overflow
    }
}

#[kernel]
fn after_panic(x: &[u32], out: &mut [u32]) {
    if let Some((i, o)) = out.at_thread() {
        *o = x[i] * 3 + 1;
    }
}

#[offload::host]
pub use host::check;

#[offload::host]
mod host {
    use super::*;

    fn line_of(mark: &str) -> u32 {
        let src = include_str!("panics.rs");
        let needle = format!("// MARK:{mark}");
        src.lines().position(|l| l.contains(&needle) && !l.contains("format!")).expect("marker") as u32 + 1
    }

    /// Checks one panic and that a launch right after it succeeds. Every
    /// message reads as on the host fallback, in every profile: literal
    /// messages, core's messages with values (index out of bounds) and the
    /// kernel bodies' messages with format arguments, whose values the GPU
    /// records (see offload's device panic handler).
    fn expect_panic(
        what: &str,
        r: offload::Result<()>,
        kernel: &str,
        message: &str,
        mark: &str,
        block: &str,
        thread: &str,
    ) -> Result<String, String> {
        let e = match r {
            Err(e) => e,
            Ok(()) => return Err(format!("{what}: the launch succeeded")),
        };
        let text = e.to_string();
        let offload::Error::KernelPanic(p) = &e else {
            return Err(format!("{what}: not a KernelPanic: {text}"));
        };
        let offload::error::KernelPanic { kernel: k, message: m, location, block: b, thread: t } = &**p;
        let want_loc = format!("panics.rs:{}:", line_of(mark));
        if !k.ends_with(kernel) || m != message || !location.contains(&want_loc) || b != block || t != thread {
            return Err(format!(
                "{what}: got `{text}`; expected kernel {kernel}, message `{message}`, location containing `{want_loc}`, block {block}, thread {thread}"
            ));
        }
        // the next launch works (on the GPU: after the context was rebuilt)
        let x: Vec<u32> = (0..1000).collect();
        let mut out = vec![0u32; 1000];
        after_panic(offload::for_len(1000), &x, &mut out)
            .map_err(|e| format!("{what}: launch after the panic failed: {e}"))?;
        if out.iter().enumerate().any(|(i, &v)| v != i as u32 * 3 + 1) {
            return Err(format!("{what}: launch after the panic computed wrong values"));
        }
        Ok(text)
    }

    pub fn check() -> Result<String, String> {
        let mut out = vec![u32::MAX; 1000];
        let x: Vec<u32> = (0..1000).collect();
        let first = expect_panic(
            "explicit",
            explicit_panic(offload::LaunchConfig::new(4u32, 256u32), 2, 37, &mut out),
            "explicit_panic",
            "explicit panic with value 42",
            "explicit",
            "(2, 0, 0)",
            "(37, 0, 0)",
        )?;
        // The panicking thread stops; every other thread finishes (the host
        // fallback used to leave the rest of the launch undone).
        let unwritten: Vec<usize> = (0..out.len()).filter(|&i| out[i] != i as u32).collect();
        if unwritten != [2 * 256 + 37] {
            let first: Vec<_> = unwritten.iter().take(8).collect();
            return Err(format!(
                "explicit: {} elements not written by their thread, the first {first:?}; expected only 549, the \
                 panicking thread's",
                unwritten.len()
            ));
        }
        let oob = expect_panic(
            "index out of bounds",
            out_of_bounds(offload::for_len(1000), &x, &mut out),
            "out_of_bounds",
            "index out of bounds: the len is 1000 but the index is 1077",
            "oob",
            "(0, 0, 0)",
            "(77, 0, 0)",
        )?;
        let mut y = x.clone();
        y[600] = 5000;
        expect_panic(
            "assert",
            failed_assert(offload::for_len(1000), 1000, &y, &mut out),
            "failed_assert",
            "x[600] = 5000 is not below 1000",
            "assert",
            "(2, 0, 0)",
            "(88, 0, 0)",
        )?;
        // `assert_eq!`'s message is core's, with the user's message, a
        // captured variable and a float's `Debug` inside it.
        let scale = 0.1f32;
        expect_panic(
            "assert_eq",
            failed_assert_eq(offload::for_len(1000), scale, &y, &mut out),
            "failed_assert_eq",
            &format!("assertion `left == right` failed: x[600] scaled by {scale:?}\n  left: 5000\n right: 600"),
            "assert_eq",
            "(2, 0, 0)",
            "(88, 0, 0)",
        )?;
        // overflow checks are on in dev builds and, through the workspace's
        // profile override, in release builds of this package
        let b: Vec<u8> = (0..1000).map(|i| if i == 300 { 56 } else { 55 }).collect();
        let mut o = vec![0u8; 1000];
        expect_panic(
            "overflow",
            overflow(offload::for_len(1000), &b, &mut o),
            "overflow",
            "attempt to add with overflow",
            "overflow",
            "(1, 0, 0)",
            "(44, 0, 0)",
        )?;
        Ok(format!(
            "explicit, index out of bounds, assert, assert_eq, overflow ok; first: {first}; index out of bounds: {oob}"
        ))
    }
}
