//! Formatted output from kernels: [`println!`](crate::println) and
//! [`print!`](macro@crate::print) (CUDA's device `printf`).
//!
//! # Design
//!
//! The arguments are formatted with `core::fmt` *on the device*, into a
//! per-thread buffer of [`LINE_BYTES`] bytes, and the finished text is
//! handed to CUDA's `vprintf("%s", text)` in one call. So the output is
//! exactly what `std::println!` would print (same `Display`/`Debug`
//! implementations, floats included) on the GPU and on the host fallback,
//! and one call's text is never interleaved with another thread's (CUDA
//! prints each `printf` call whole). The cost is code size and stack in
//! kernels that print; printing no more than `LINE_BYTES - 1` bytes per
//! call (longer text is cut and ends in `...`).
//!
//! On the GPU, output is buffered by the driver (`cudaLimitPrintfFifoSize`,
//! 1 MiB by default; what does not fit is dropped) and appears on the
//! process's stdout when the launch completes, in an unspecified order
//! across threads. On the host fallback each call writes its text to stdout
//! under stdout's lock, as the simulated threads run.

use core::fmt;

/// Bytes of text one `print!`/`println!` call can emit on the GPU,
/// including the newline.
pub const LINE_BYTES: usize = 256;

/// Formats `args` (plus `\n` if `newline`) and prints it; see the module docs.
#[doc(hidden)]
#[inline(never)]
pub fn print_fmt(args: fmt::Arguments<'_>, newline: bool) {
    #[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
    {
        use std::io::Write;
        // Allocates and locks stdout: not where a stack overflow may strike.
        crate::hostsim::stack_guard::check();
        let mut s = std::string::String::new();
        let _ = fmt::write(&mut s, args);
        if newline {
            s.push('\n');
        }
        let out = std::io::stdout();
        let mut lock = out.lock();
        let _ = lock.write_all(s.as_bytes());
        let _ = lock.flush();
    }
    #[cfg(any(target_arch = "nvptx64", target_arch = "amdgpu"))]
    {
        let mut line = Line { buf: [0u8; LINE_BYTES], len: 0, cut: false };
        let _ = fmt::write(&mut line, args);
        if newline {
            let _ = fmt::Write::write_str(&mut line, "\n");
        }
        line.finish(newline);
        #[cfg(target_arch = "nvptx64")]
        {
            let args: [*const u8; 1] = [line.buf.as_ptr()];
            // SAFETY: the format is a NUL-terminated "%s" in global memory;
            // `args` holds one pointer (8-byte aligned) to a NUL-terminated
            // string that lives until `vprintf` returns (it copies it).
            unsafe {
                core::arch::nvptx::vprintf(c"%s".as_ptr() as *const u8, args.as_ptr() as *const core::ffi::c_void);
            }
        }
    }
}

/// A fixed buffer that keeps the first `LINE_BYTES - 1` bytes.
#[cfg(any(target_arch = "nvptx64", target_arch = "amdgpu"))]
struct Line {
    buf: [u8; LINE_BYTES],
    len: usize,
    cut: bool,
}

#[cfg(any(target_arch = "nvptx64", target_arch = "amdgpu"))]
impl Line {
    /// NUL-terminates; marks cut text with `...` (and keeps the newline).
    fn finish(&mut self, newline: bool) {
        if self.cut {
            let tail: &[u8] = if newline { b"...\n" } else { b"..." };
            let mut at = LINE_BYTES - 1 - tail.len();
            // do not split a UTF-8 sequence
            while at > 0 && (self.buf[at] & 0xC0) == 0x80 {
                at -= 1;
            }
            self.buf[at..at + tail.len()].copy_from_slice(tail);
            self.len = at + tail.len();
        }
        self.buf[self.len] = 0;
    }
}

#[cfg(any(target_arch = "nvptx64", target_arch = "amdgpu"))]
impl fmt::Write for Line {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let room = LINE_BYTES - 1 - self.len;
        let n = s.len().min(room);
        self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        if n < s.len() {
            self.cut = true;
        }
        Ok(())
    }
}

/// Prints to stdout from a kernel (or from host code), like
/// `std::print!`; see the [`print`](mod@crate::print) module docs for the GPU's
/// buffering and the line limit.
#[macro_export]
macro_rules! print {
    ($($arg:tt)*) => {
        $crate::__private::print_fmt(::core::format_args!($($arg)*), false)
    };
}

/// Prints a line to stdout from a kernel (or from host code), like
/// `std::println!`: `offload::println!("block {} sum {}", b, s);`. One call
/// prints at most [`LINE_BYTES`](crate::print::LINE_BYTES) − 1 bytes on the
/// GPU, whole (never interleaved with another thread's output).
#[macro_export]
macro_rules! println {
    () => {
        $crate::__private::print_fmt(::core::format_args!(""), true)
    };
    ($($arg:tt)*) => {
        $crate::__private::print_fmt(::core::format_args!($($arg)*), true)
    };
}
