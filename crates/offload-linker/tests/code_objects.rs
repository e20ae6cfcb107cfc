//! AMD GPU code objects from the device link ([`offload_linker::link`]):
//! for each architecture, an ELF for `EM_AMDGPU` whose header names the
//! architecture (`EF_AMDGPU_MACH_*` in `e_flags`, LLVM's `ELF.h`) and one
//! kernel descriptor (`<kernel>.kd`) per kernel, from a module of two
//! kernels as rustc emits them for `amdgcn-amd-amdhsa`. With every LLVM 22
//! and 23 found (`ld.lld` included); without one the test says so and
//! passes. `cargo-offload`'s end-to-end test builds a crate for one of
//! these architectures.

use object::{Object, ObjectSymbol};
use offload_linker::{link, LinkArgs, LlvmTools};

const MODULE: &str = r#"target triple = "amdgcn-amd-amdhsa"

define amdgpu_kernel void @__offload_kernel_demo_fill(ptr addrspace(1) %out) {
  store i32 7, ptr addrspace(1) %out, align 4
  ret void
}

define amdgpu_kernel void @__offload_kernel_demo_add(ptr addrspace(1) %out, i32 %x) {
  %v = load i32, ptr addrspace(1) %out, align 4
  %s = add i32 %v, %x
  store i32 %s, ptr addrspace(1) %out, align 4
  ret void
}

define void @helper() {
  ret void
}
"#;

/// LLVM 22 (Debian's `*-22`) and 23 (rustup nightly's llvm-tools), those
/// found with `ld.lld`.
fn installed_llvms() -> Vec<LlvmTools> {
    let nightly = std::process::Command::new("rustup")
        .args(["run", "nightly", "rustc", "--print", "sysroot"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| std::path::PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    [(22, None), (23, nightly)]
        .into_iter()
        .filter_map(|(m, sysroot)| LlvmTools::discover(m, sysroot.as_deref()).ok())
        .filter(|t| t.lld.is_some())
        .collect()
}

#[test]
fn amd_code_objects_name_their_architecture() {
    let llvms = installed_llvms();
    if llvms.is_empty() {
        eprintln!("skipped: no LLVM tools with ld.lld");
        return;
    }
    let dir = std::env::temp_dir().join(format!("offload-code-objects-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let input = dir.join("kernels.ll");
    std::fs::write(&input, MODULE).unwrap();
    let kernels = ["__offload_kernel_demo_add", "__offload_kernel_demo_fill"];
    for tools in &llvms {
        // EF_AMDGPU_MACH_AMDGCN_GFX90A, _GFX942, _GFX1100.
        for (arch, mach) in [("gfx90a", 0x3f), ("gfx942", 0x4c), ("gfx1100", 0x41)] {
            let output = dir.join(format!("demo-{}-{arch}.elf", tools.major));
            let args = LinkArgs {
                files: vec![input.clone()],
                exports: kernels.iter().map(|k| k.to_string()).collect(),
                target: "amdgcn-amd-amdhsa".into(),
                target_cpu: Some(arch.into()),
                target_feature: None,
                output: output.clone(),
                opt_level: "0".into(),
                debug: true,
                fast_math: false,
                fmad: false,
            };
            link(&args, tools).unwrap_or_else(|e| panic!("LLVM {} {arch}: {e}", tools.major));
            let bytes = std::fs::read(&output).unwrap();
            let elf = object::File::parse(&*bytes).unwrap();
            let object::FileFlags::Elf { e_flags, .. } = elf.flags() else { panic!("not ELF") };
            // e_machine is EM_AMDGPU (224)
            assert_eq!(u16::from_le_bytes([bytes[18], bytes[19]]), 224, "LLVM {} {arch}", tools.major);
            assert_eq!(e_flags & 0xff, mach, "LLVM {} {arch}: e_flags {e_flags:#x}", tools.major);
            let mut kd: Vec<String> = elf
                .symbols()
                .filter_map(|s| s.name().ok().and_then(|n| n.strip_suffix(".kd")).map(String::from))
                .collect();
            kd.sort();
            assert_eq!(kd, kernels, "LLVM {} {arch}: a descriptor per kernel", tools.major);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
