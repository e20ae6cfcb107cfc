//! Turning a failed LLVM tool into a clear error.
//!
//! When `llc` or `opt` aborts (`LLVM ERROR: …`, an assertion, a crash) it
//! prints a stack dump that says nothing to a Rust programmer. The device
//! link keeps that output in a log file and reports instead: which tool and
//! step, the error lines, the function being compiled (from LLVM's "Running
//! pass '…' on function '@…'" line, demangled), where the full output is,
//! and what to do. Known causes get their own error: `f128` arithmetic, which
//! the NVPTX backend cannot lower (it would need soft-float library calls,
//! and the GPU has none), names the functions that use it.
//!
//! A tool killed by SIGINT or SIGTERM was interrupted (Ctrl-C), not broken:
//! [`Failure::interrupted`].

/// SIGINT and SIGTERM (POSIX): an interrupted build, not a failure.
pub const INTERRUPT_SIGNALS: [i32; 2] = [2, 15];

/// What a failed tool run left, parsed from its stderr.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The lines that state the error (`LLVM ERROR: …`, `error: …`,
    /// assertion messages), without the stack dump.
    pub errors: Vec<String>,
    /// The function LLVM was compiling, demangled.
    pub function: Option<String>,
    /// The signal that ended the tool, if any.
    pub signal: Option<i32>,
    /// An input file the tool could not read (llvm-link's `error: loading
    /// file '…'`): damaged, or not bitcode of this LLVM.
    pub unreadable: Option<String>,
}

impl Failure {
    /// Parses a tool's stderr (and how it ended).
    pub fn parse(stderr: &str, signal: Option<i32>) -> Self {
        let mut errors = Vec::new();
        let mut function = None;
        let mut unreadable = None;
        let mut in_dump = false;
        for line in stderr.lines() {
            let t = line.trim();
            if t.starts_with("Stack dump:") || t.starts_with("PLEASE submit a bug report") {
                in_dump = true;
                continue;
            }
            if let Some(rest) = t.split_once("on function '@").map(|(_, r)| r) {
                if let Some(name) = rest.strip_suffix("'").or_else(|| rest.split('\'').next()) {
                    function = Some(demangle(name.trim_matches('"')));
                }
                continue;
            }
            if in_dump || t.is_empty() || t.starts_with('#') {
                continue;
            }
            if let Some((_, file)) =
                t.split_once("error:  loading file '").or_else(|| t.split_once("error: loading file '"))
            {
                unreadable.get_or_insert_with(|| file.trim_end_matches('\'').to_string());
            }
            errors.push(t.to_string());
        }
        Failure { errors, function, signal, unreadable }
    }

    /// Killed by SIGINT or SIGTERM.
    pub fn interrupted(&self) -> bool {
        self.signal.is_some_and(|s| INTERRUPT_SIGNALS.contains(&s))
    }
}

/// A symbol, demangled without its hash (`_RNv…8quad_sum` → `app::quad_sum`).
pub fn demangle(symbol: &str) -> String {
    format!("{:#}", rustc_demangle::demangle(symbol))
}

/// How a message names the function `symbol`: a kernel's entry point as
/// the path the user wrote (`__offload_kernel_app_quad_0123abcd` →
/// `app::quad`, see `offload_image::symbol::kernel_path`; `crates` are the
/// names its crate may have), anything else demangled without its hash.
pub fn function_name(symbol: &str, crates: &[String]) -> String {
    let crates: Vec<&str> = crates.iter().map(String::as_str).collect();
    offload_image::symbol::kernel_path(symbol, &crates).unwrap_or_else(|| demangle(symbol))
}

/// The functions whose body (or signature) in the module text `ir` uses
/// `fp128` (Rust's `f128`), named as [`function_name`] names them; those of
/// the crate graph's own code first, `core`'s and `compiler_builtins`' only
/// if nothing else uses it.
pub fn f128_functions(ir: &str, crates: &[String]) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    let mut current: Option<(String, bool)> = None;
    for line in ir.lines() {
        if line.starts_with("define ") {
            let name = line.split_once(" @").map(|(_, r)| r).and_then(|r| r.split('(').next()).unwrap_or("");
            current = Some((name.trim_matches('"').to_string(), line.contains("fp128")));
        } else if line.starts_with('}') {
            if let Some((name, true)) = current.take() {
                let d = function_name(&name, crates);
                if !found.contains(&d) {
                    found.push(d);
                }
            }
            current = None;
        } else if let Some((_, uses)) = &mut current {
            if line.contains("fp128") {
                *uses = true;
            }
        }
    }
    let std_crate = |f: &String| f.starts_with("core::") || f.starts_with("compiler_builtins::") || f.starts_with('<');
    let own: Vec<String> = found.iter().filter(|f| !std_crate(f)).cloned().collect();
    if own.is_empty() {
        found
    } else {
        own
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// llvm-link 23's output for a cached device `core` whose bytes were
    /// changed in place (same size).
    #[test]
    fn an_unreadable_input_is_named() {
        let stderr = "error: can't skip to bit 70255765600 from 245856\n\
                      /x/bin/llvm-link: error:  loading file '/c/sysroot/lib/libcore-c4c7.rlib'\n";
        let f = Failure::parse(stderr, None);
        assert_eq!(f.unreadable.as_deref(), Some("/c/sysroot/lib/libcore-c4c7.rlib"));
        assert_eq!(f.errors.len(), 2);
        assert_eq!(Failure::parse("error: something else\n", None).unreadable, None);
    }

    const LLC_ABORT: &str = "LLVM ERROR: unsupported library call operation
PLEASE submit a bug report to https://github.com/llvm/llvm-project/issues/ and include the crash backtrace and instructions to reproduce the bug.
Stack dump:
0.\tProgram arguments: llc -mtriple=nvptx64-nvidia-cuda -mcpu=sm_90 -O3 x.opt.bc -o x.ptx
1.\tRunning pass 'Function Pass Manager' on module 'x.opt.bc'.
2.\tRunning pass 'NVPTX DAG->DAG Pattern Instruction Selection' on function '@_RNvCs8YYa9PchmB8_12fixture_f1288quad_sum'
 #0 0x00007f7236fa65fa llvm::sys::PrintStackTrace(llvm::raw_ostream&, int) (libLLVM.so.23.1+0x63a65fa)
 #1 0x00007f7236fa6f7d SignalHandler(int, siginfo_t*, void*) (libLLVM.so.23.1+0x63a6f7d)
";

    #[test]
    fn an_llc_abort_is_its_error_and_function() {
        let f = Failure::parse(LLC_ABORT, Some(6));
        assert_eq!(f.errors, ["LLVM ERROR: unsupported library call operation"]);
        assert_eq!(f.function.as_deref(), Some("fixture_f128::quad_sum"));
        assert!(!f.interrupted());
        // Legacy mangling, too.
        let f =
            Failure::parse("error: x\n2.\tRunning pass 'X' on function '@_ZN3app4quad17h0123456789abcdefE'\n", None);
        assert_eq!(f.function.as_deref(), Some("app::quad"));
        assert_eq!(f.errors, ["error: x"]);
        assert!(Failure::parse("", Some(2)).interrupted());
        assert!(Failure::parse("", Some(15)).interrupted());
    }

    #[test]
    fn f128_users_are_found() {
        let ir = "define internal double @_RNvCs8YYa9PchmB8_12fixture_f1288quad_sum(double %a) {
start:
  %q = fmul fp128 %x, %y
  ret double 0.0
}

define fp128 @_ZN4core4f1283add17h0123456789abcdefE(fp128 %a) {
  ret fp128 %a
}

define void @__offload_kernel_app_k_12345678() {
  ret void
}
";
        let crates = ["app".to_string(), "fixture_f128".into()];
        assert_eq!(f128_functions(ir, &crates), ["fixture_f128::quad_sum"]);
        let only_core = ir.replace("fmul fp128", "fmul double");
        assert_eq!(f128_functions(&only_core, &crates), ["core::f128::add"]);
        assert!(f128_functions("define void @f() {\n  ret void\n}\n", &crates).is_empty());
        // f128 in a kernel's own body (inlined into its entry point): the
        // kernel as the user wrote it, not its symbol.
        let in_kernel = only_core.replace(
            "define void @__offload_kernel_app_k_12345678() {\n",
            "define void @__offload_kernel_app_k_12345678() {\n  %q = fadd fp128 %x, %y\n",
        );
        assert_eq!(f128_functions(&in_kernel, &crates), ["app::k"]);
        // Without its crate's name, the symbol itself.
        assert_eq!(f128_functions(&in_kernel, &[]), ["__offload_kernel_app_k_12345678"]);
    }
}
