//! The device link itself ([`link`]): llvm-link → rewrites → opt → llc
//! (→ ld.lld), as the crate docs describe.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::args::{kernels, LinkArgs};
use crate::error::LinkError;
use crate::runner::{record, Runner};
use crate::symbols::{GLOBAL_PREFIX, KERNEL_PREFIX};
use crate::target::Target;
use crate::tools::{LlvmTools, ToolError};
use crate::{atomics, diagnose, ir, libdevice, panics, recursion, statics, wide};

/// Functions the `offload` crate declares for AMD GPUs and the linker
/// defines, because they return pointers in address space 4 (constant),
/// which Rust cannot name: the HSA dispatch packet, cast to a generic pointer.
pub const AMDGPU_SUPPORT_IR: &str = r#"target triple = "amdgcn-amd-amdhsa"

declare ptr addrspace(4) @llvm.amdgcn.dispatch.ptr()

define ptr @__offload_amdgpu_dispatch_ptr() alwaysinline {
  %p = call ptr addrspace(4) @llvm.amdgcn.dispatch.ptr()
  %g = addrspacecast ptr addrspace(4) %p to ptr
  ret ptr %g
}
"#;

/// Loop-unrolling threshold of the device optimization pipeline (LLVM's
/// default is 300). GPU kernels keep small per-thread arrays (`[f32; N]`
/// indexed by a constant-trip loop) in registers only if those loops are
/// unrolled completely; otherwise the arrays live in local memory, an order
/// of magnitude slower. nvcc unrolls such loops (e.g. miniBUDE's
/// 16-iteration pose loops), AMDGPU's backend raises its threshold to 2700
/// for loops over private arrays (`amdgpu-unroll-threshold-private`); the
/// NVPTX backend has no such rule, so the device linker raises the
/// threshold for the whole module. `OFFLOAD_OPT_FLAGS` (extra `opt` flags,
/// for experiments) may set `-unroll-threshold` itself.
pub const UNROLL_THRESHOLD: u32 = 2000;

/// Partial and run-time unrolling of the device optimization pipeline: loops
/// whose trip count is known only at run time are unrolled by 2 (with a
/// remainder iteration) when the unrolled body stays under 600 IR cost
/// units. The NVPTX backend enables run-time unrolling but with a threshold
/// of a quarter of the full-unroll threshold's default (75), which keeps
/// nearly every real loop body rolled; nvcc unrolls such loops (miniBUDE's
/// protein loop by 2). Measured on an H200 (`bench/results/2026-11-30/`):
/// miniBUDE at CUDA's best configuration went from 0.98x to 1.03x CUDA
/// with `--fmad` and from 0.84x to 1.06x with `--fast-math`. Loops whose
/// trip count needs a division (grid-stride loops) are left alone: LLVM
/// does not compute an expensive trip count for run-time unrolling, so
/// BabelStream's PTX is unchanged. NVPTX only (AMDGPU's backend tunes
/// its own unrolling). `OFFLOAD_OPT_FLAGS` may set each flag itself.
pub const RUNTIME_UNROLL: [(&str, &str); 3] =
    [("-unroll-runtime", ""), ("-unroll-partial-threshold", "=600"), ("-unroll-max-count", "=2")];

/// Code generation flags of `--fast-math`, the meaning of nvcc's
/// `-use_fast_math` (CUDA C++ Programming Guide, "Intrinsic Functions";
/// nvcc manual, `--use_fast_math` = `--ftz=true --prec-div=false
/// --prec-sqrt=false --fmad=true`): contract `a * b + c` into FMA, flush f32
/// denormals to zero, and use the approximate f32 division and square root.
/// Approximate sin/cos come from `offload::math` (`cfg(offload_fast_math)`).
pub const FAST_MATH_LLC: &[&str] =
    &[FMAD_LLC, "-denormal-fp-math-f32=preserve-sign", "-nvptx-prec-divf32=0", "-nvptx-prec-sqrtf32=0"];

/// Code generation flag of `--fmad`: fuse `a * b + c` into one FMA (one
/// rounding instead of two), as nvcc does by default (`--fmad=true`) and
/// Rust does not (each operation rounds as written).
pub const FMAD_LLC: &str = "-fp-contract=fast";

/// The optimization pipeline level for the device link with LLVM `major`.
/// Device code is optimized even in dev builds, as nvcc does by default:
/// `-O0`/`-O1` become `O2`; `-O2`, `-O3`, `-Os`, `-Oz` are kept, except that
/// LLVM 23 dropped the `Os`/`Oz` pipelines ("Use O2 in conjunction with the
/// optsize attribute instead"): there they are `O2`, and the `optsize` /
/// `minsize` attributes rustc puts on every function at `-Copt-level=s`/`z`
/// do the rest. What a profile *means* (overflow checks, debug assertions)
/// is already in the bitcode and is kept.
pub fn pipeline_level(rustc_level: &str, major: u32) -> &'static str {
    match rustc_level {
        "3" => "O3",
        "s" if major < 23 => "Os",
        "z" if major < 23 => "Oz",
        _ => "O2",
    }
}

/// Links the inputs of `args` into the device image at `args.output`.
pub fn link(args: &LinkArgs, tools: &LlvmTools) -> Result<(), LinkError> {
    let target = Target::from_triple(&args.target).ok_or_else(|| LinkError::Target(args.target.clone()))?;
    let cpu = args.target_cpu.clone().ok_or(LinkError::NoCpu)?;
    let runner = Runner { log: std::env::var_os("OFFLOAD_LINK_LOG").map(PathBuf::from), output: args.output.clone() };
    let link = Link { args, tools, target, cpu, runner, files: Files::beside(&args.output) };
    link.run()?;
    // OFFLOAD_LINK_KEEP=1 keeps the intermediate modules beside the image
    // (as a failed link does).
    if std::env::var_os("OFFLOAD_LINK_KEEP").is_none_or(|v| v != "1") {
        link.files.remove();
    }
    Ok(())
}

/// The intermediate files of one link, beside its output.
struct Files {
    /// 1. the inputs as one module, as text;
    linked_text: PathBuf,
    /// … rewritten (see `link_inputs`);
    rewritten: PathBuf,
    /// … with libdevice;
    linked: PathBuf,
    /// 2. optimized, as text (for `statics` and `recursion`);
    optimized_text: PathBuf,
    /// … with recursion guards, as text, then inlined.
    guarded: PathBuf,
    optimized: PathBuf,
    /// AMD GPUs: the support functions, and the object `ld.lld` links.
    support: PathBuf,
    object: PathBuf,
}

impl Files {
    fn beside(out: &Path) -> Self {
        let with_ext = |ext: &str| -> PathBuf {
            let mut p = out.as_os_str().to_owned();
            p.push(ext);
            PathBuf::from(p)
        };
        Files {
            linked_text: with_ext(".linked.ll"),
            rewritten: with_ext(".rewritten.ll"),
            linked: with_ext(".linked.bc"),
            optimized_text: with_ext(".opt.ll"),
            guarded: with_ext(".guarded.ll"),
            optimized: with_ext(".opt.bc"),
            support: with_ext(".support.ll"),
            object: with_ext(".o"),
        }
    }

    fn remove(&self) {
        for f in
            [&self.linked_text, &self.rewritten, &self.linked, &self.optimized, &self.optimized_text, &self.guarded]
        {
            let _ = std::fs::remove_file(f);
        }
    }
}

fn read(path: &Path) -> Result<String, LinkError> {
    std::fs::read_to_string(path).map_err(|source| LinkError::Io { path: path.to_path_buf(), source })
}

fn write(path: &Path, text: &str) -> Result<(), LinkError> {
    std::fs::write(path, text).map_err(|source| LinkError::Io { path: path.to_path_buf(), source })
}

/// The statics of `found` as the error names them.
fn written_statics_error(found: &[String]) -> LinkError {
    LinkError::WrittenStatics {
        statics: found.iter().map(|s| format!("`{}` (symbol {s})", diagnose::demangle(s))).collect(),
    }
}

/// What step 1 made of the inputs.
struct Module {
    /// libdevice, where the module calls its math functions and
    /// `libdevice::find` finds it (NVPTX only).
    libdevice: Option<PathBuf>,
    /// Kernels can reach a cycle of calls (NVPTX only): see `recursion`.
    recursive: bool,
}

/// One link: its inputs, tools and files; the steps the crate docs list.
struct Link<'a> {
    args: &'a LinkArgs,
    tools: &'a LlvmTools,
    target: Target,
    cpu: String,
    runner: Runner,
    files: Files,
}

impl Link<'_> {
    fn run(&self) -> Result<(), LinkError> {
        let module = self.link_inputs()?;
        let with_libdevice = self.link_libdevice(&module)?;
        let opt_text = self.optimize(&module, with_libdevice)?;
        let written = statics::written_statics(&opt_text);
        if !written.is_empty() {
            return Err(written_statics_error(&written));
        }
        // The module code generation reads: with recursion, the guarded one.
        let codegen_input = if module.recursive { self.guard(&opt_text)? } else { &self.files.optimized_text };
        drop(opt_text);
        match self.target {
            Target::Nvptx64 => self.generate_ptx(codegen_input),
            Target::Amdgcn => self.generate_code_object(codegen_input),
        }
    }

    /// Step 1: the inputs as one module of text (plus, for AMD GPUs, the
    /// support functions Rust cannot express: see AMDGPU_SUPPORT_IR), with
    /// core's panics with values redirected and the panic path inlined (`panics`), read-modify-writes fenced
    /// (`atomics`), shared-memory statics rewritten (`ir`) and wide casts
    /// spelled out (`wide`); then the checks that need the module before
    /// optimization: statics the kernels write, recursion they reach.
    fn link_inputs(&self) -> Result<Module, LinkError> {
        let (target, files) = (self.target, &self.files);
        let mut cmd = Command::new(&self.tools.llvm_link);
        cmd.arg("--ignore-non-bitcode").arg("-S").args(&self.args.files);
        if target == Target::Amdgcn {
            write(&files.support, AMDGPU_SUPPORT_IR)?;
            cmd.arg(&files.support);
        }
        cmd.arg("-o").arg(&files.linked_text);
        self.runner.run(cmd, "llvm-link", "linking the device bitcode into one module")?;
        let text = read(&files.linked_text)?;
        // core's panics with values recorded by offload instead (NVPTX: the
        // panic record is CUDA's), then the panic path inlined, so that its
        // formatting functions' addresses do not cost every kernel its
        // registers (see `panics`).
        let text = if target == Target::Nvptx64 { panics::redirect_core_panics(&text).0 } else { text };
        let (text, _) = panics::inline_panic_path(&text);
        let text = if target == Target::Nvptx64 && atomics::needs_rmw_fences(self.tools.major) {
            atomics::fence_rmw_orderings(&text).0
        } else {
            text
        };
        let libdevice = if target == Target::Nvptx64 { libdevice::find() } else { None };
        let ir = ir::rewrite(&text, libdevice.is_some()).map_err(LinkError::Rewrite)?;
        drop(text);
        // Saturating float → 128-bit integer casts, expanded inline (see `wide`).
        let (ir_text, _) = wide::rewrite(&ir.text);
        write(&files.rewritten, &ir_text)?;
        let graph = recursion::CallGraph::parse(&ir_text);
        // `opt` deletes a static that is only written, with its writes.
        let written = statics::written_statics_before_opt(&ir_text, &graph.reachable_functions(KERNEL_PREFIX));
        if !written.is_empty() {
            return Err(written_statics_error(&written));
        }
        let recursive = target == Target::Nvptx64 && recursion::reaches_recursion(&graph, KERNEL_PREFIX);
        Ok(Module { libdevice: libdevice.filter(|_| ir.uses_libdevice), recursive })
    }

    /// The module as bitcode, with libdevice linked in (`--only-needed`)
    /// if it needs it; returns whether it did.
    fn link_libdevice(&self, module: &Module) -> Result<bool, LinkError> {
        let mut cmd = Command::new(&self.tools.llvm_link);
        cmd.arg(&self.files.rewritten);
        if let Some(lib) = &module.libdevice {
            cmd.arg("--suppress-warnings").arg("--only-needed").arg(lib);
        }
        cmd.arg("-o").arg(&self.files.linked);
        self.runner.run(cmd, "llvm-link", "linking libdevice")?;
        Ok(module.libdevice.is_some())
    }

    /// Step 2: internalize all but the kernels, optimize, expand wide
    /// division and conversions; returns the optimized module's text.
    fn optimize(&self, module: &Module, with_libdevice: bool) -> Result<String, LinkError> {
        let (args, tools, target) = (self.args, self.tools, self.target);
        let mut passes = String::new();
        if with_libdevice {
            passes.push_str("nvvm-reflect,");
        }
        passes.push_str(&format!("internalize,globaldce,default<{}>", pipeline_level(&args.opt_level, tools.major)));
        passes.push(',');
        passes.push_str(&tools.expand_passes());
        let mut cmd = Command::new(&tools.opt);
        // With recursion the guard function and the stack floor it reads are
        // kept (external, so that the floor is not folded to its initial 0),
        // and the result is text for `recursion::insert_guards`.
        let guard_fn = if module.recursive {
            format!(",{},{}", recursion::GUARD_FN, recursion::FLOOR_GLOBAL)
        } else {
            String::new()
        };
        cmd.arg(&self.files.linked)
            .arg(format!("-mtriple={}", target.triple()))
            .arg(format!("-mcpu={}", self.cpu))
            .arg(format!("--internalize-public-api-list={KERNEL_PREFIX}*,{GLOBAL_PREFIX}*{guard_fn}"))
            .arg("--expand-div-rem-bits=64")
            .arg("--expand-fp-convert-bits=64")
            .arg(format!("--passes={passes}"))
            .arg("-S")
            .arg("-o")
            .arg(&self.files.optimized_text);
        if with_libdevice && args.fast_math {
            // libdevice asks `__nvvm_reflect("__CUDA_FTZ")` whether f32 denormals
            // flush to zero, as they do under --fast-math (nvcc's --ftz=true).
            cmd.arg("--nvvm-reflect-add=__CUDA_FTZ=1");
        }
        let extra = std::env::var("OFFLOAD_OPT_FLAGS").unwrap_or_default();
        if !extra.contains("-unroll-threshold") {
            cmd.arg(format!("-unroll-threshold={UNROLL_THRESHOLD}"));
        }
        // AMDGPU's backend has its own unrolling preferences; keep them.
        for (flag, value) in RUNTIME_UNROLL.iter().filter(|_| target == Target::Nvptx64) {
            if !extra.contains(flag) {
                cmd.arg(format!("{flag}{value}"));
            }
        }
        cmd.args(extra.split_whitespace());
        if target == Target::Nvptx64 || !args.debug {
            // LLVM's NVPTX debug info does not survive ptxas reliably (the
            // llvm-bitcode-linker strips it too); keep it only for AMD debug builds.
            cmd.arg("--strip-debug");
        }
        self.runner.run(cmd, "opt", "optimizing the device module")?;
        read(&self.files.optimized_text)
    }

    /// Recursion guards in the optimized module (`recursion`), inlined by
    /// a second `opt`; returns the module code generation reads.
    fn guard(&self, opt_text: &str) -> Result<&Path, LinkError> {
        let with_guards = recursion::insert_guards(opt_text);
        for c in &with_guards.cycles {
            record(
                "OFFLOAD_LINK_LOG",
                &format!("# recursion guarded ({} bytes reserve): {}", c.reserve, c.functions.join(", ")),
            );
        }
        write(&self.files.guarded, &with_guards.text)?;
        // Inline the guards, then drop the guard function itself. Where
        // guards went in, the floor they read and the probe that measures
        // it stay for the host; otherwise both go.
        let probe = if with_guards.cycles.is_empty() {
            String::new()
        } else {
            format!(",{},{}", recursion::FLOOR_GLOBAL, recursion::PROBE_KERNEL)
        };
        let mut cmd = Command::new(&self.tools.opt);
        cmd.arg(&self.files.guarded)
            .arg(format!("-mtriple={}", self.target.triple()))
            .arg(format!("-mcpu={}", self.cpu))
            .arg(format!("--internalize-public-api-list={KERNEL_PREFIX}*,{GLOBAL_PREFIX}*{probe}"))
            .arg("--passes=always-inline,internalize,globaldce")
            .arg("-o")
            .arg(&self.files.optimized);
        self.runner.run(cmd, "opt", "inlining the recursion guards")?;
        Ok(&self.files.optimized)
    }

    /// `llc` for the target and CPU, with the floating-point mode's flags
    /// (`fast_math_flags`: those of `--fast-math` this target takes).
    fn llc(&self, fast_math_flags: &[&str]) -> Command {
        let mut cmd = Command::new(&self.tools.llc);
        cmd.arg(format!("-mtriple={}", self.target.triple())).arg(format!("-mcpu={}", self.cpu));
        if let Some(f) = &self.args.target_feature {
            cmd.arg(format!("-mattr={f}"));
        }
        if self.args.fast_math {
            cmd.args(fast_math_flags);
        } else if self.args.fmad {
            cmd.arg(FMAD_LLC);
        }
        cmd
    }

    /// Step 3 for NVPTX: PTX, then the check that every kernel is an entry
    /// point exactly once.
    fn generate_ptx(&self, input: &Path) -> Result<(), LinkError> {
        let out = &self.args.output;
        let mut cmd = self.llc(FAST_MATH_LLC);
        cmd.arg("-O3").arg(input).arg("-o").arg(out);
        self.runner.run(cmd, "llc", "generating PTX").map_err(|e| self.explain_codegen_failure(e))?;
        let ptx = read(out)?;
        let entries: Vec<String> = ptx_entry_names(&ptx).into_iter().filter(|e| e.starts_with(KERNEL_PREFIX)).collect();
        check_entries(&kernels(&self.args.exports), &entries)?;
        for e in &entries {
            check_entries(std::slice::from_ref(e), &entries)?;
        }
        Ok(())
    }

    /// Step 3 for AMD GPUs: an object file, which `ld.lld` links into a code
    /// object.
    fn generate_code_object(&self, input: &Path) -> Result<(), LinkError> {
        // The target-independent part of FAST_MATH_LLC.
        let mut cmd = self.llc(&FAST_MATH_LLC[..2]);
        cmd.arg("-O3").arg("-filetype=obj").arg(input).arg("-o").arg(&self.files.object);
        self.runner.run(cmd, "llc", "generating AMD GPU machine code").map_err(|e| self.explain_codegen_failure(e))?;
        let lld = self.tools.lld.as_ref().ok_or_else(|| ToolError::Missing {
            tool: "ld.lld".into(),
            major: self.tools.major,
            searched: "ld.lld-N, ld.lld, rust-lld".into(),
        })?;
        let mut cmd = Command::new(lld);
        if lld.file_name().is_some_and(|n| n.to_string_lossy().starts_with("rust-lld")) {
            cmd.arg("-flavor").arg("gnu");
        }
        cmd.arg("-shared").arg(&self.files.object).arg("-o").arg(&self.args.output);
        self.runner.run(cmd, "ld.lld", "linking the AMD GPU code object")
    }

    /// The crates a kernel symbol of this link may start with: the crate
    /// being linked (`CARGO_CRATE_NAME`, which cargo gives rustc and rustc
    /// its linker) and those of its inputs.
    fn crates(&self) -> Vec<String> {
        let mut crates = self.args.input_crates();
        crates.extend(std::env::var("CARGO_CRATE_NAME").ok());
        crates
    }

    /// A failed `llc` explained (see [`explain_codegen_failure`]).
    fn explain_codegen_failure(&self, e: LinkError) -> LinkError {
        explain_codegen_failure(e, &self.files.rewritten, &self.crates())
    }
}

/// A failed `llc` explained from the module as it was before optimization
/// (`ir_text`, the file), when the user's functions were not yet inlined
/// into the kernels: if it uses `f128`, which the backend cannot lower,
/// [`LinkError::F128`] naming the functions; otherwise the tool's failure,
/// with a kernel's entry point named as the user wrote the kernel.
/// `crates`: see [`diagnose::function_name`].
fn explain_codegen_failure(e: LinkError, ir_text: &Path, crates: &[String]) -> LinkError {
    let LinkError::Step(mut failure) = e else { return e };
    let functions = std::fs::read_to_string(ir_text).map(|t| diagnose::f128_functions(&t, crates)).unwrap_or_default();
    if !functions.is_empty() {
        return LinkError::F128 { functions };
    }
    if let Some(f) = &mut failure.failure.function {
        *f = diagnose::function_name(f, crates);
    }
    LinkError::Step(failure)
}

/// Kernel entry names in PTX text (`.entry NAME(`).
pub use offload_image::ptx_entries as ptx_entry_names;

/// Checks that each kernel is an entry exactly once.
pub fn check_entries(kernels: &[String], entries: &[String]) -> Result<(), LinkError> {
    let mut missing = Vec::new();
    for k in kernels {
        match entries.iter().filter(|e| *e == k).count() {
            0 => missing.push(k.clone()),
            1 => {}
            n => return Err(LinkError::DuplicateKernel(k.clone(), n)),
        }
    }
    if !missing.is_empty() {
        return Err(LinkError::MissingKernels { missing });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opt_levels() {
        assert_eq!(pipeline_level("0", 22), "O2");
        assert_eq!(pipeline_level("1", 22), "O2");
        assert_eq!(pipeline_level("2", 22), "O2");
        assert_eq!(pipeline_level("3", 22), "O3");
        assert_eq!(pipeline_level("s", 22), "Os");
        assert_eq!(pipeline_level("z", 22), "Oz");
        // LLVM 23 has no Os/Oz pipelines.
        assert_eq!(pipeline_level("s", 23), "O2");
        assert_eq!(pipeline_level("z", 23), "O2");
        assert_eq!(pipeline_level("3", 23), "O3");
    }

    #[test]
    fn entries_checked_exactly_once() {
        let k = vec!["__offload_kernel_a".to_string()];
        assert!(check_entries(&k, &["__offload_kernel_a".into()]).is_ok());
        assert!(matches!(check_entries(&k, &[]), Err(LinkError::MissingKernels { .. })));
        assert!(matches!(
            check_entries(&k, &["__offload_kernel_a".into(), "__offload_kernel_a".into()]),
            Err(LinkError::DuplicateKernel(_, 2))
        ));
        let ptx = ".visible .entry __offload_kernel_a(\n.param .u64 x\n)\n.func helper()\n";
        assert_eq!(ptx_entry_names(ptx), ["__offload_kernel_a"]);
    }
}
