//! Tests of the recursion guards: the call graph, the reserves, and the
//! guarded IR through the installed LLVMs.

use std::collections::HashMap;

use super::callgraph::*;
use super::*;

const GUARD_DEF: &str = "define void @__offload_stack_guard(i64 %0, ptr %1, i64 %2) unnamed_addr #0 {\n  ret void\n}\n";

#[test]
fn callees_of_call_lines() {
    assert_eq!(callee("  %3 = tail call noundef i64 @_RNvC1a3fib(i64 %2) #4"), Some(Callee::Direct("_RNvC1a3fib")));
    assert_eq!(callee("  call void (ptr, ...) @vprintf(ptr @s, ptr %x)"), Some(Callee::Direct("vprintf")));
    assert_eq!(callee("  %r = call %\"T\" @\"weird name\"(ptr @g)"), Some(Callee::Direct("weird name")));
    assert_eq!(callee("  %5 = call i1 %4(ptr %0, ptr @f)"), Some(Callee::Indirect));
    assert_eq!(callee("  call void asm sideeffect \"exit;\", \"\"()"), None);
    assert_eq!(callee("  %1 = tail call i64 asm \"cvta.to.local.u64 $0, $1;\", \"=l,l\"(i64 %0)"), None);
    assert_eq!(callee("  store ptr @f, ptr %x, align 8"), None);
}

#[test]
fn alloca_sizes() {
    let mut types = HashMap::new();
    types.insert("Pair", "{ i64, i8 }");
    assert_eq!(alloca_size("  %a = alloca [16 x i64], align 8", &types), Some(128));
    assert_eq!(alloca_size("  %b = alloca i32, align 4, addrspace(5)", &types), Some(4));
    assert_eq!(alloca_size("  %c = alloca %Pair, align 8", &types), Some(16));
    assert_eq!(alloca_size("  %d = alloca { [3 x float], ptr }, align 8", &types), Some(24));
    assert_eq!(alloca_size("  %e = alloca i8, i64 40, align 1", &types), Some(40));
    assert_eq!(alloca_size("  %f = alloca i8, i64 %n, align 1", &types), Some(4096));
    assert_eq!(alloca_size("  %g = load i8, ptr %f", &types), None);
}

/// A kernel → a → b → a cycle, and c recursing into itself through a
/// helper that is not in the cycle: both cycles found, only kernels'
/// reach counts before optimization.
#[test]
fn cycles_and_reachability() {
    let ir = "\
define void @__offload_kernel_x() {
  call void @a(i32 1)
  ret void
}
define void @a(i32 %n) {
  %buf = alloca [64 x i8], align 1
  call void @b(i32 %n)
  ret void
}
define void @b(i32 %n) {
  call void @a(i32 %n)
  call void @leaf()
  ret void
}
define void @leaf() {
  %x = alloca [1000 x i8], align 1
  ret void
}
define void @c() {
  call void @c()
  ret void
}
";
    assert!(has_reachable_recursion(ir, "__offload_kernel_"));
    assert!(!has_reachable_recursion(&ir.replace("call void @a(i32 1)", "call void @leaf()"), "__offload_kernel_"));
    let g = CallGraph::parse(ir);
    let names = |c: &Vec<usize>| c.iter().map(|&v| g.nodes[v].name.to_string()).collect::<Vec<_>>();
    let cycles: Vec<Vec<String>> = g.cycles(&vec![true; g.nodes.len()]).iter().map(names).collect();
    assert!(cycles.contains(&vec!["a".to_string(), "b".to_string()]), "{cycles:?}");
    assert!(cycles.contains(&vec!["c".to_string()]), "{cycles:?}");
    assert_eq!(cycles.len(), 2);
    // Reached through a function pointer in a global only.
    let ptr = "@vt = constant [1 x ptr] [ptr @c]\ndefine void @__offload_kernel_y() {\n  %p = load ptr, ptr @vt\n  ret void\n}\ndefine void @c() {\n  call void @c()\n  ret void\n}\n";
    assert!(has_reachable_recursion(ptr, "__offload_kernel_"));
}

#[test]
fn guards_go_into_each_function_of_a_cycle_with_its_reserve() {
    let ir = format!(
        "{GUARD_DEF}\
define void @__offload_kernel_x() {{
  call void @_RNvCs1234_4demo4walk(i32 1)
  ret void
}}
define internal void @_RNvCs1234_4demo4walk(i32 %n) {{
start:
  %buf = alloca [64 x i8], align 1
  call void @_RNvCs1234_4demo4walk(i32 %n)
  call void @leaf()
  ret void
}}
define internal void @leaf() {{
  %x = alloca [1000 x i8], align 1
  %y = call i32 %x(i32 1)
  ret void
}}
"
    );
    let out = insert_guards(&ir);
    // walk: its frame, then the deeper of itself (64 + overhead) and
    // leaf (1000 + overhead + an indirect call), plus the recorder.
    let reserve = 64 + FRAME_OVERHEAD + (1000 + FRAME_OVERHEAD + INDIRECT_CALL) + RECORD_SLACK;
    assert_eq!(out.cycles, vec![GuardedCycle { functions: vec!["_RNvCs1234_4demo4walk".into()], reserve }]);
    let want = format!(
        "define internal void @_RNvCs1234_4demo4walk(i32 %n) {{\nstart:\n  call void @__offload_stack_guard(i64 {reserve}, ptr @__offload_recursion_name.0, i64 10)\n  %buf = alloca"
    );
    assert!(out.text.contains(&want), "{}", out.text);
    assert!(
        out.text.contains("@__offload_recursion_name.0 = private unnamed_addr constant [10 x i8] c\"demo::walk\""),
        "{}",
        out.text
    );
    assert_eq!(out.text.matches("call void @__offload_stack_guard").count(), 1);
    assert!(out
        .text
        .contains("define void @__offload_stack_guard(i64 %0, ptr %1, i64 %2) unnamed_addr alwaysinline #0 {"));
    assert_eq!(
        with_fn_attribute("define internal void @g(ptr addrspace(1) %0) local_unnamed_addr #3 !guid !2 {", "cold"),
        "define internal void @g(ptr addrspace(1) %0) local_unnamed_addr cold #3 !guid !2 {"
    );
    // Without recursion, or without the guard function: unchanged.
    let flat = ir.replace("  call void @_RNvCs1234_4demo4walk(i32 %n)\n", "");
    assert_eq!(insert_guards(&flat).text, flat);
    let old = ir.replace(GUARD_DEF, "");
    assert_eq!(insert_guards(&old).text, old);
}

/// The LLVM tools the device link uses here: Debian's LLVM 22 and
/// rustup nightly's LLVM 23 (its `llvm-tools`), those installed.
fn installed_llvms() -> Vec<crate::tools::LlvmTools> {
    let nightly = std::process::Command::new("rustup")
        .args(["run", "nightly", "rustc", "--print", "sysroot"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| std::path::PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    [(22, None), (23, nightly)]
        .into_iter()
        .filter_map(|(m, sysroot)| crate::tools::LlvmTools::discover(m, sysroot.as_deref()).ok())
        .collect()
}

/// The guards are IR that LLVM accepts, linked as the device link does:
/// `opt` inlines them and drops the guard function, keeps the floor
/// global and the stack probe; `llc` emits the check (against the
/// floor) in the recursive function only, the kernel without recursion
/// is unchanged, and the probe is an entry that is not a kernel.
/// (With every LLVM 22 and 23 found; skipped where there is none.)
#[test]
fn llvm_inlines_the_guards_into_the_recursive_function_only() {
    let llvms = installed_llvms();
    if llvms.is_empty() {
        eprintln!("skipped: no LLVM tools");
        return;
    }
    // `offload`'s guard (src/report/gpu.rs), as rustc emits it.
    let ir = r#"target datalayout = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

@__offload_stack_floor = global i64 0, align 8

define void @__offload_stack_guard(i64 %0, ptr %1, i64 %2) unnamed_addr #0 {
  %4 = alloca [1 x i8], align 1
  store i8 0, ptr %4, align 1
  %5 = ptrtoint ptr %4 to i64
  %6 = call i64 asm "cvta.to.local.u64 ${0}, ${1};", "=&l,l"(i64 %5)
  %floor = load i64, ptr @__offload_stack_floor, align 8
  %limit = add i64 %floor, %0
  %7 = icmp ult i64 %6, %limit
  br i1 %7, label %9, label %8

8:
  ret void

9:
  call void @overflow(ptr %1, i64 %2)
  unreachable
}

define internal void @overflow(ptr %0, i64 %1) #1 {
  call void asm sideeffect "exit;", ""()
  unreachable
}

define internal i64 @_RNvCs1234_4demo4walk(i32 %0, i64 %1) {
  %3 = alloca [16 x i64], align 8
  %4 = icmp eq i32 %0, 0
  br i1 %4, label %10, label %5

5:
  store volatile i64 %1, ptr %3, align 8
  %6 = sub i32 %0, 1
  %7 = call i64 @_RNvCs1234_4demo4walk(i32 %6, i64 %1)
  %8 = load volatile i64, ptr %3, align 8
  %9 = add i64 %7, %8
  ret i64 %9

10:
  ret i64 %1
}

define ptx_kernel void @__offload_kernel_demo_deep(ptr %0, i32 %1) {
  %3 = call i64 @_RNvCs1234_4demo4walk(i32 %1, i64 7)
  store i64 %3, ptr %0, align 8
  ret void
}

define ptx_kernel void @__offload_kernel_demo_flat(ptr %0) {
  store i64 1, ptr %0, align 8
  ret void
}

attributes #0 = { nounwind }
attributes #1 = { cold noinline noreturn nounwind }
"#;
    let out = insert_guards(ir);
    assert_eq!(out.cycles.len(), 1);
    assert_eq!(out.text.matches(&format!("define ptx_kernel void @{PROBE_KERNEL}(ptr %out)")).count(), 1);
    eprintln!("LLVM: {:?}", llvms.iter().map(|t| (t.major, t.llc.clone())).collect::<Vec<_>>());
    for tools in &llvms {
        let dir = std::env::temp_dir().join(format!("offload-recursion-{}-{}", std::process::id(), tools.major));
        std::fs::create_dir_all(&dir).unwrap();
        let (guarded, bc, ptx) = (dir.join("g.ll"), dir.join("g.bc"), dir.join("g.ptx"));
        std::fs::write(&guarded, &out.text).unwrap();
        let run = |cmd: &mut std::process::Command| {
            let o = cmd.output().unwrap();
            assert!(o.status.success(), "{cmd:?}: {}", String::from_utf8_lossy(&o.stderr));
        };
        // The second `opt` run of the device link (lib.rs).
        run(std::process::Command::new(&tools.opt)
            .arg(&guarded)
            .args(["-mtriple=nvptx64-nvidia-cuda", "-mcpu=sm_90"])
            .arg(format!(
                "--internalize-public-api-list={}*,{}*,{FLOOR_GLOBAL},{PROBE_KERNEL}",
                crate::KERNEL_PREFIX,
                crate::GLOBAL_PREFIX
            ))
            .arg("--passes=always-inline,internalize,globaldce")
            .arg("-o")
            .arg(&bc));
        run(std::process::Command::new(&tools.llc)
            .args(["-mtriple=nvptx64-nvidia-cuda", "-mcpu=sm_90", "-O3"])
            .arg(&bc)
            .arg("-o")
            .arg(&ptx));
        let ptx = std::fs::read_to_string(&ptx).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        let llvm = tools.major;
        assert!(!ptx.contains("__offload_stack_guard("), "LLVM {llvm}: the guard function is gone: {ptx}");
        let walk = ptx.split(".func").find(|f| f.contains("_RNvCs1234_4demo4walk(")).expect("walk is a function");
        assert!(walk.contains("cvta.to.local.u64"), "LLVM {llvm}: {walk}");
        assert!(walk.contains(&format!("[{FLOOR_GLOBAL}]")), "LLVM {llvm}: the check reads the floor: {walk}");
        assert!(
            walk.contains(&format!("{}", out.cycles[0].reserve - 1))
                || walk.contains(&format!("{}", out.cycles[0].reserve)),
            "LLVM {llvm}: {walk}"
        );
        let flat = ptx.split(".entry").find(|f| f.contains("__offload_kernel_demo_flat(")).expect("flat is an entry");
        assert!(!flat.contains("cvta.to.local") && !flat.contains(FLOOR_GLOBAL), "LLVM {llvm}: {flat}");
        // The floor: a global the host finds by name.
        assert!(
            ptx.lines().any(|l| l.starts_with(".visible .global") && l.contains(FLOOR_GLOBAL)),
            "LLVM {llvm}: {ptx}"
        );
        // The probe: an entry (with a frame of its own, whose local
        // address it stores) that is not one of the kernels.
        let probe = ptx
            .split(".visible .entry ")
            .find(|f| f.starts_with(&format!("{PROBE_KERNEL}(")))
            .unwrap_or_else(|| panic!("LLVM {llvm}: no probe entry: {ptx}"));
        let probe = probe.split("// -- End function").next().unwrap();
        for want in ["__local_depot", "st.local", "cvta.to.local.u64", "st.global.b64"] {
            assert!(probe.contains(want), "LLVM {llvm}: {want} in {probe}");
        }
        let entries = crate::ptx_entry_names(&ptx);
        assert_eq!(entries.len(), 3, "LLVM {llvm}: {entries:?}");
        let kernels: Vec<String> = entries.into_iter().filter(|e| e.starts_with(crate::KERNEL_PREFIX)).collect();
        let want = ["__offload_kernel_demo_deep".to_string(), "__offload_kernel_demo_flat".to_string()];
        assert!(crate::check_entries(&want, &kernels).is_ok(), "LLVM {llvm}: {kernels:?}");
        assert_eq!(kernels.len(), 2, "LLVM {llvm}: the probe is not a kernel: {kernels:?}");
    }
}

/// The probe's local goes where the module's data layout puts allocas
/// (`A5` or none), and LLVM reads it either way.
#[test]
fn the_probe_follows_the_alloca_address_space() {
    let dl = "target datalayout = \"e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64\"\n";
    assert_eq!(alloca_addrspace(dl), 0);
    assert_eq!(alloca_addrspace("target datalayout = \"e-p:64:64-A5-G1\"\n"), 5);
    assert_eq!(alloca_addrspace("target datalayout = \"e-A5\"\n"), 5);
    assert_eq!(alloca_addrspace("define void @f() {\n  ret void\n}\n"), 0);
    assert!(probe_ir(0).contains("  %slot = alloca i64, align 8\n  store volatile i64 0, ptr %slot"));
    assert!(probe_ir(5).contains(
        "  %slot.local = alloca i64, align 8, addrspace(5)\n  %slot = addrspacecast ptr addrspace(5) %slot.local to ptr\n"
    ));
    for tools in installed_llvms() {
        for (layout, n) in [(dl.to_string(), 0), (dl.replace("n16:32:64", "n16:32:64-A5"), 5)] {
            let module = format!("{layout}target triple = \"nvptx64-nvidia-cuda\"\n{}", probe_ir(n));
            let o = std::process::Command::new(&tools.opt)
                .args(["-passes=verify", "-S", "-o", "-", "-"])
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .and_then(|mut c| {
                    use std::io::Write;
                    c.stdin.take().unwrap().write_all(module.as_bytes())?;
                    c.wait_with_output()
                })
                .unwrap();
            assert!(o.status.success(), "LLVM {} A{n}: {}\n{module}", tools.major, String::from_utf8_lossy(&o.stderr));
        }
    }
}

#[test]
fn unlabeled_entry_blocks_get_the_guard_first() {
    let ir =
        format!("{GUARD_DEF}define void @f(i64 %0) {{\n  %2 = add i64 %0, 1\n  call void @f(i64 %2)\n  ret void\n}}\n");
    let out = insert_guards(&ir);
    assert!(out.text.contains("define void @f(i64 %0) {\n  call void @__offload_stack_guard(i64 "), "{}", out.text);
    assert!(out.text.contains("ptr @__offload_recursion_name.0, i64 1)\n  %2 = add i64 %0, 1\n"), "{}", out.text);
}
