//! The device link itself ([`link`]): llvm-link → rewrites → opt → llc
//! (→ ld.lld), as the crate docs describe.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::runner::{record, Runner};
use crate::{
    atomics, diagnose, ir, kernels, libdevice, panics, recursion, statics, wide, LinkArgs, LinkError, LlvmTools,
    Target, ToolError, GLOBAL_PREFIX, KERNEL_PREFIX,
};

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
    let out = &args.output;
    let with_ext = |ext: &str| -> PathBuf {
        let mut p = out.clone().into_os_string();
        p.push(ext);
        PathBuf::from(p)
    };
    let linked_text = with_ext(".linked.ll");
    let rewritten = with_ext(".rewritten.ll");
    let linked = with_ext(".linked.bc");
    // Text, so that the statics kernels write can be found (`statics`) and
    // recursion guards inserted (`recursion`).
    let optimized_text = with_ext(".opt.ll");
    let guarded = with_ext(".guarded.ll");
    let optimized = with_ext(".opt.bc");

    // 1. one module, as text (plus, for AMD GPUs, the support functions Rust
    // cannot express: see AMDGPU_SUPPORT_IR); rewrite; libdevice
    let mut cmd = Command::new(&tools.llvm_link);
    cmd.arg("--ignore-non-bitcode").arg("-S").args(&args.files);
    if target == Target::Amdgcn {
        let support = with_ext(".support.ll");
        std::fs::write(&support, AMDGPU_SUPPORT_IR)
            .map_err(|source| LinkError::Io { path: support.clone(), source })?;
        cmd.arg(&support);
    }
    cmd.arg("-o").arg(&linked_text);
    runner.run(cmd, "llvm-link", "linking the device bitcode into one module")?;
    let text =
        std::fs::read_to_string(&linked_text).map_err(|source| LinkError::Io { path: linked_text.clone(), source })?;
    // The panic path inlined, so that its formatting functions' addresses
    // do not cost every kernel its registers (see `panics`).
    let (text, _) = panics::inline_panic_path(&text);
    // Read-modify-writes keep their memory ordering (see `atomics`).
    let text = if target == Target::Nvptx64 && atomics::needs_rmw_fences(tools.major) {
        atomics::fence_rmw_orderings(&text).0
    } else {
        text
    };
    let libdevice = if target == Target::Nvptx64 { libdevice::find() } else { None };
    let ir = ir::rewrite(&text, libdevice.is_some()).map_err(LinkError::Rewrite)?;
    // Saturating float → 128-bit integer casts, expanded inline (see `wide`).
    let (ir_text, _) = wide::rewrite(&ir.text);
    std::fs::write(&rewritten, &ir_text).map_err(|source| LinkError::Io { path: rewritten.clone(), source })?;
    drop(text);
    // Recursion the kernels can reach: stack checks after optimization.
    let recursive = target == Target::Nvptx64 && recursion::has_reachable_recursion(&ir_text, KERNEL_PREFIX);
    let mut cmd = Command::new(&tools.llvm_link);
    cmd.arg(&rewritten);
    let with_libdevice = ir.uses_libdevice && libdevice.is_some();
    if let (true, Some(lib)) = (ir.uses_libdevice, &libdevice) {
        cmd.arg("--suppress-warnings").arg("--only-needed").arg(lib);
    }
    cmd.arg("-o").arg(&linked);
    runner.run(cmd, "llvm-link", "linking libdevice")?;

    // 2. internalize all but the kernels, optimize, expand wide div/rem
    let kernels = kernels(&args.exports);
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
    let guard_fn =
        if recursive { format!(",{},{}", recursion::GUARD_FN, recursion::FLOOR_GLOBAL) } else { String::new() };
    cmd.arg(&linked)
        .arg(format!("-mtriple={}", target.triple()))
        .arg(format!("-mcpu={cpu}"))
        .arg(format!("--internalize-public-api-list={KERNEL_PREFIX}*,{GLOBAL_PREFIX}*{guard_fn}"))
        .arg("--expand-div-rem-bits=64")
        .arg("--expand-fp-convert-bits=64")
        .arg(format!("--passes={passes}"))
        .arg("-S")
        .arg("-o")
        .arg(&optimized_text);
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
    runner.run(cmd, "opt", "optimizing the device module")?;
    let opt_text = std::fs::read_to_string(&optimized_text)
        .map_err(|source| LinkError::Io { path: optimized_text.clone(), source })?;
    let written = statics::written_statics(&opt_text);
    if !written.is_empty() {
        return Err(LinkError::WrittenStatics {
            statics: written.iter().map(|s| format!("`{:#}` (symbol {s})", rustc_demangle::demangle(s))).collect(),
        });
    }
    // The module code generation reads: with recursion, the guarded one.
    let codegen_input = if recursive {
        let with_guards = recursion::insert_guards(&opt_text);
        drop(opt_text);
        for c in &with_guards.cycles {
            record(
                "OFFLOAD_LINK_LOG",
                &format!("# recursion guarded ({} bytes reserve): {}", c.reserve, c.functions.join(", ")),
            );
        }
        std::fs::write(&guarded, &with_guards.text)
            .map_err(|source| LinkError::Io { path: guarded.clone(), source })?;
        // Inline the guards, then drop the guard function itself. Where
        // guards went in, the floor they read and the probe that measures
        // it stay for the host; otherwise both go.
        let probe = if with_guards.cycles.is_empty() {
            String::new()
        } else {
            format!(",{},{}", recursion::FLOOR_GLOBAL, recursion::PROBE_KERNEL)
        };
        let mut cmd = Command::new(&tools.opt);
        cmd.arg(&guarded)
            .arg(format!("-mtriple={}", target.triple()))
            .arg(format!("-mcpu={cpu}"))
            .arg(format!("--internalize-public-api-list={KERNEL_PREFIX}*,{GLOBAL_PREFIX}*{probe}"))
            .arg("--passes=always-inline,internalize,globaldce")
            .arg("-o")
            .arg(&optimized);
        runner.run(cmd, "opt", "inlining the recursion guards")?;
        &optimized
    } else {
        &optimized_text
    };

    // 3. code generation
    match target {
        Target::Nvptx64 => {
            let mut cmd = Command::new(&tools.llc);
            cmd.arg(format!("-mtriple={}", target.triple())).arg(format!("-mcpu={cpu}"));
            if let Some(f) = &args.target_feature {
                cmd.arg(format!("-mattr={f}"));
            }
            if args.fast_math {
                cmd.args(FAST_MATH_LLC);
            } else if args.fmad {
                cmd.arg(FMAD_LLC);
            }
            cmd.arg("-O3").arg(codegen_input).arg("-o").arg(out);
            runner.run(cmd, "llc", "generating PTX").map_err(|e| explain_codegen_failure(e, &rewritten))?;
            let ptx = std::fs::read_to_string(out).map_err(|source| LinkError::Io { path: out.clone(), source })?;
            let entries: Vec<String> =
                ptx_entry_names(&ptx).into_iter().filter(|e| e.starts_with(KERNEL_PREFIX)).collect();
            check_entries(&kernels, &entries)?;
            for e in &entries {
                check_entries(std::slice::from_ref(e), &entries)?;
            }
        }
        Target::Amdgcn => {
            let obj = with_ext(".o");
            let mut cmd = Command::new(&tools.llc);
            cmd.arg(format!("-mtriple={}", target.triple())).arg(format!("-mcpu={cpu}"));
            if let Some(f) = &args.target_feature {
                cmd.arg(format!("-mattr={f}"));
            }
            if args.fast_math {
                // The target-independent part of FAST_MATH_LLC.
                cmd.args(&FAST_MATH_LLC[..2]);
            } else if args.fmad {
                cmd.arg(FMAD_LLC);
            }
            cmd.arg("-O3").arg("-filetype=obj").arg(codegen_input).arg("-o").arg(&obj);
            runner
                .run(cmd, "llc", "generating AMD GPU machine code")
                .map_err(|e| explain_codegen_failure(e, &rewritten))?;
            let lld = tools.lld.as_ref().ok_or_else(|| ToolError::Missing {
                tool: "ld.lld".into(),
                major: tools.major,
                searched: "ld.lld-N, ld.lld, rust-lld".into(),
            })?;
            let mut cmd = Command::new(lld);
            if lld.file_name().is_some_and(|n| n.to_string_lossy().starts_with("rust-lld")) {
                cmd.arg("-flavor").arg("gnu");
            }
            cmd.arg("-shared").arg(&obj).arg("-o").arg(out);
            runner.run(cmd, "ld.lld", "linking the AMD GPU code object")?;
        }
    }
    // OFFLOAD_LINK_KEEP=1 keeps the intermediate modules beside the image.
    let keep = std::env::var_os("OFFLOAD_LINK_KEEP").is_some_and(|v| v == "1");
    for tmp in [&linked_text, &rewritten, &linked, &optimized, &optimized_text, &guarded].into_iter().filter(|_| !keep)
    {
        let _ = std::fs::remove_file(tmp);
    }
    Ok(())
}

/// A failed `llc` whose module uses `f128` failed for that reason (the
/// backend cannot lower it): [`LinkError::F128`], naming the functions, read
/// from the module as it was before optimization (`ir_text`, the file), when
/// the user's functions were not yet inlined into the kernels.
fn explain_codegen_failure(e: LinkError, ir_text: &Path) -> LinkError {
    if !matches!(e, LinkError::Step(_)) {
        return e;
    }
    let functions = std::fs::read_to_string(ir_text).map(|t| diagnose::f128_functions(&t)).unwrap_or_default();
    if functions.is_empty() {
        e
    } else {
        LinkError::F128 { functions }
    }
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
