//! Errors of the device link ([`LinkError`]); each says which step failed
//! and how to fix it.

use std::path::PathBuf;

use crate::{diagnose, ToolError};

/// Errors of the device link. Each says which step failed and how to fix it.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    #[error("invalid linker arguments: {0}")]
    Args(String),
    #[error("unsupported device target `{0}`: offload-linker handles nvptx64-nvidia-cuda and amdgcn-amd-amdhsa")]
    Target(String),
    #[error("no target CPU given: pass `--arch` to cargo offload (e.g. --arch sm_90) so the device pass gets `-C target-cpu`")]
    NoCpu,
    #[error(transparent)]
    Tools(#[from] ToolError),
    /// An LLVM tool failed: its error lines, the function it was
    /// compiling, and where its full output is (see [`diagnose`]).
    #[error("{}", tool_message(.0))]
    Step(Box<ToolFailure>),
    /// A tool was killed by SIGINT or SIGTERM (Ctrl-C): the build was
    /// interrupted. `main_with_args` exits with 130 and prints
    /// [`INTERRUPTED`] for `cargo offload` to recognize.
    #[error("{INTERRUPTED}: {tool} was killed by signal {signal} while {step}")]
    Interrupted { tool: String, step: &'static str, signal: i32 },
    /// `f128` arithmetic reached code generation, which the GPU backend
    /// cannot lower.
    #[error(
        "f128 is not supported in device code, used in {}: LLVM's NVPTX backend has no 128-bit floating point and \
         the GPU no soft-float library for it\n  = help: keep f128 arithmetic in host code (`#[offload::host]`, \
         `#[cfg(not(offload_device))]`), or use f64 in kernels",
        .functions.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", ")
    )]
    F128 { functions: Vec<String> },
    #[error("could not run {tool}: {source}")]
    Spawn {
        tool: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the device image does not define kernel(s) {missing:?} although rustc exported them")]
    MissingKernels { missing: Vec<String> },
    #[error("kernel `{0}` is an entry point {1} times in the device image; each kernel must appear exactly once")]
    DuplicateKernel(String, usize),
    #[error("could not rewrite the device IR: {0}")]
    Rewrite(String),
    #[error(
        "kernel code writes the static(s) {}: a plain `static` written by a kernel is the host's own static on the \
         host fallback but a copy in the device image that the host never sees on a GPU. Declare it with \
         `#[offload::device_global]` (kernels use `NAME.with(|v| …)`, host code `NAME.read()` / `NAME.write(…)`), \
         or pass the value to the kernel as an argument (`&AtomicU32`, `&mut T`)",
        statics.join(", ")
    )]
    WrittenStatics { statics: Vec<String> },
}

/// What offload-linker prints (after `error: offload-linker: `) when a
/// tool was interrupted; `cargo offload` reports the build as interrupted.
pub const INTERRUPTED: &str = "interrupted";

/// The exit status of an interrupted link (128 + SIGINT, as shells report
/// Ctrl-C).
pub const EXIT_INTERRUPTED: i32 = 130;

/// A failed LLVM tool (see [`LinkError::Step`]).
#[derive(Debug)]
pub struct ToolFailure {
    pub tool: String,
    pub step: &'static str,
    /// How it ended (`exit status: 1`, `signal: 6 (SIGABRT)`).
    pub status: String,
    pub failure: diagnose::Failure,
    /// Its whole stderr, with the command line.
    pub log: PathBuf,
    pub command: String,
}

fn tool_message(t: &ToolFailure) -> String {
    let ToolFailure { tool, step, status, failure, log, command } = t;
    let mut m = format!("{tool} failed while {step}");
    if let Some(f) = &failure.function {
        m.push_str(&format!(", in function `{f}`"));
    }
    m.push_str(&format!(" ({status})"));
    if failure.errors.is_empty() {
        m.push_str(": it printed no error message");
    } else {
        m.push(':');
        for e in failure.errors.iter().take(8) {
            m.push_str(&format!("\n  {e}"));
        }
    }
    m.push_str(&format!("\n  = note: {tool}'s full output: {}\n  = note: command: {command}", log.display()));
    match &failure.unreadable {
        Some(file) => m.push_str(&format!(
            "\n  = help: {tool} could not read `{file}`: the file is damaged (or was written by another LLVM). \
             If it is in offload's cache (the device `core` and its sysroot are built once and kept there), remove \
             the cache with `cargo offload clean --cache` and build again; otherwise remove the build's files with \
             `cargo clean` and build again"
        )),
        None => m.push_str(
            "\n  = help: this is a limitation or a bug of LLVM's GPU backend or of offload, not an error Rust \
             reports: rewrite the construct in the function named above, or report it with the output above and \
             the modules that OFFLOAD_LINK_KEEP=1 keeps",
        ),
    }
    m
}
