//! The device linker of `cargo offload`.
//!
//! rustc links a GPU `cdylib` by calling a linker of flavor `llbc` (the LLVM
//! bitcode linker, `src/tools/llvm-bitcode-linker` in the Rust repository)
//! with the crate's bitcode objects, the rlibs of its dependencies
//! (`core` and `compiler_builtins` included), one `--export-symbol` per
//! exported symbol, `--target`, `--target-cpu`, `-O<level>` and `-o`.
//! `cargo offload` passes `-C linker=offload-linker`; this crate is that
//! linker:
//!
//! 1. `llvm-link` every bitcode input into one module, as text; rewrite it
//!    (shared-memory statics to PTX's shared state space, see [`ir`]), and
//!    link CUDA's libdevice (`--only-needed`) where the module calls its
//!    math functions and [`libdevice::find`] finds it; for NVPTX with LLVM
//!    22 or older, put fences around read-modify-writes whose ordering the
//!    backend would drop (see [`atomics`]); send `core`'s panics with values
//!    (index out of bounds, …) to `offload`'s recorders (NVPTX) and mark the
//!    rest of the panic path for inlining (see [`panics`]);
//! 2. `opt`: resolve `__nvvm_reflect` (libdevice's configuration queries:
//!    no flush-to-zero, precise division and square root), internalize
//!    everything except the kernels (every symbol starting with
//!    `__offload_kernel_` in any input: the crate's own and its dependencies',
//!    since rustc lists only the crate's own exports for a `cdylib`) and the
//!    runtime's globals (`__offload_global_`, which the host looks up), drop
//!    what is unreachable, optimize, then
//!    expand integer division and float conversions wider than 64 bits
//!    inline (the GPU backends cannot call `compiler_builtins`' `__udivti3`
//!    and friends, so a kernel dividing `u128`s would not link otherwise;
//!    Rust's saturating `as` casts to `i128`/`u128` are first spelled out
//!    as plain conversions, see [`wide`]).
//!    For NVPTX, a module whose kernels reach a cycle of calls (recursion)
//!    gets a stack check at the entry of each function in a cycle, inlined
//!    by a second `opt` run, and a stack probe kernel the host runs to
//!    measure where the stack ends (see [`recursion`]); other modules are
//!    linked exactly as without it;
//! 3. `llc`: emit PTX (`nvptx64-nvidia-cuda`) or an object file that
//!    `ld.lld` turns into an AMD GPU code object (`amdgcn-amd-amdhsa`);
//! 4. check that every kernel is an entry point exactly once.
//!
//! The LLVM tools must have the major version of rustc's LLVM; see
//! [`tools`].
#![deny(unsafe_code)]

mod args;
pub mod atomics;
mod cache;
pub mod diagnose;
mod error;
pub mod ir;
pub mod libdevice;
pub mod panics;
mod pipeline;
pub mod recursion;
mod runner;
pub mod statics;
mod symbols;
mod target;
pub mod tools;
pub mod wide;

use std::path::Path;

pub use args::{globals, kernels, parse_args, LinkArgs};
pub use cache::{cache_key, link_cached};
pub use error::{LinkError, ToolFailure, EXIT_INTERRUPTED, INTERRUPTED};
pub use pipeline::{
    check_entries, link, pipeline_level, ptx_entry_names, AMDGPU_SUPPORT_IR, FAST_MATH_LLC, FMAD_LLC, RUNTIME_UNROLL,
    UNROLL_THRESHOLD,
};
pub use symbols::{GLOBAL_PREFIX, KERNEL_PREFIX};
pub use target::Target;
pub use tools::{LlvmTools, ToolError};

/// The linker's `main`: parse rustc's arguments, find the tools, link.
/// Errors are printed once to stderr (rustc shows them under "linking with
/// `offload-linker` failed").
pub fn main_with_args<I: IntoIterator<Item = String>>(args: I) -> i32 {
    let result = parse_args(args).and_then(|a| {
        let tools = LlvmTools::from_env_or_discover()?;
        link_cached(&a, &tools)
    });
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("error: offload-linker: {e}");
            if matches!(e, LinkError::Interrupted { .. }) {
                EXIT_INTERRUPTED
            } else {
                1
            }
        }
    }
}

/// Whether `path` looks like a device image this linker wrote (PTX).
pub fn is_ptx(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "ptx")
}
