//! Statics that kernels write.
//!
//! A `static` that device code writes (`COUNT.fetch_add(1, Relaxed)` on a
//! `static COUNT: AtomicU32`) means two different things on the two
//! backends: on the host fallback the kernels change the host's own static,
//! on a GPU a copy inside the device image that the host never reads. The
//! device link therefore refuses such a module and names the static; the
//! fix is `#[offload::device_global]`, whose copy both backends keep on the
//! "device" side and which host code reads with `DeviceGlobal::read`.
//!
//! The candidates are the globals defined in the module that are not
//! `constant`, not in shared memory (`addrspace(3)`), and not offload's own
//! (`__offload…`, which includes device globals) ([`candidates`]). A write
//! is a `store`, `atomicrmw`, `cmpxchg` or `llvm.memcpy`/`memmove`/`memset`
//! whose destination is (a constant expression of) one of them. Two scans
//! find them, and the link fails if either does:
//!
//! - before optimization ([`written_statics_before_opt`]), over the
//!   functions the kernels can reach (`recursion::CallGraph`), following
//!   pointers into callees (`flow`): a static that is only written (`X =
//!   1` on a `static mut`, `X.store(1, …)` on an atomic) is gone after
//!   `opt`, which deletes a write-only internal global with its stores;
//! - after optimization ([`written_statics`]), where the kernels' callees
//!   are inlined: what inlining exposes that the first scan does not follow
//!   (a pointer kept in a struct, say).
//!
//! Neither sees a static that rustc's own optimization already removed:
//! in a build with `opt-level` above 0, a static that device code only
//! writes never reaches the device link (the writes then go nowhere on
//! the GPU, as the host fallback's go to the host's static).

mod flow;
mod inst;

use std::collections::HashSet;

use inst::{destination, mentions};

/// The globals of `ir` that kernels must not write (see the module docs),
/// as the module spells them (quoted if the name needs it).
fn candidates(ir: &str) -> Vec<&str> {
    let mut candidates: Vec<&str> = Vec::new();
    for line in ir.lines() {
        let Some(rest) = line.strip_prefix('@') else { continue };
        let Some((name, def)) = rest.split_once(" = ") else { continue };
        // `global` (not `constant`), in the generic/global address space.
        let words: Vec<&str> = def.split_whitespace().take_while(|w| *w != "global" && *w != "constant").collect();
        let kind = def.split_whitespace().nth(words.len());
        if kind != Some("global") || words.iter().any(|w| w.starts_with("addrspace(3)")) {
            continue;
        }
        let bare = name.trim_matches('"');
        if bare.starts_with("__offload") || bare.starts_with("llvm.") || def.contains("section \".offload.shared\"") {
            continue;
        }
        candidates.push(name);
    }
    candidates
}

/// The candidate globals of the optimized module `ir` (LLVM textual IR)
/// that instructions write: their symbols, in order of first write.
pub fn written_statics(ir: &str) -> Vec<String> {
    let candidates = candidates(ir);
    let mut found: Vec<String> = Vec::new();
    if candidates.is_empty() {
        return found;
    }
    for line in ir.lines() {
        let Some(dest) = destination(line.trim_start()) else { continue };
        for c in &candidates {
            if mentions(dest, c) && !found.iter().any(|f| f == c.trim_matches('"')) {
                found.push(c.trim_matches('"').to_string());
            }
        }
    }
    found
}

/// The candidate globals of the module `ir` before optimization that the
/// functions in `reachable` (those the kernels can reach:
/// `recursion::CallGraph::reachable_functions`) write, directly or through
/// their callees: their symbols, in the order found.
pub fn written_statics_before_opt(ir: &str, reachable: &HashSet<&str>) -> Vec<String> {
    let statics: HashSet<&str> = candidates(ir).into_iter().map(|c| c.trim_matches('"')).collect();
    if statics.is_empty() {
        return Vec::new();
    }
    flow::written_by(ir, &statics, reachable).into_iter().map(String::from).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const IR: &str = r#"@_ZN3app5COUNT17h1E = internal global <{ [4 x i8] }> zeroinitializer, align 4
@_ZN3app5TABLE17h2E = internal constant [4 x float] [float 1.0, float 2.0, float 3.0, float 4.0], align 4
@_ZN3app4HITS17h3E = internal global i32 0, align 4
@_ZN3app3BUF17h4E = internal global [16 x i8] zeroinitializer, align 4
@__offload_global_app_HITS_12345678 = global i32 0, align 4
@__offload_global_panic_slot = global ptr null, align 8
@_ZN3app6SHARED17h5E = internal addrspace(3) global [64 x i8] undef, align 4
@_ZN3app4READ17h6E = internal global i32 5, align 4
@_ZN3app4ADDR17h7E = internal global ptr null, align 8

define void @k(ptr %p, i32 %v) {
  %a = atomicrmw add ptr @_ZN3app5COUNT17h1E, i32 1 monotonic, align 4
  %b = atomicrmw volatile add ptr getelementptr inbounds nuw (i8, ptr @_ZN3app4HITS17h3E, i64 0), i32 1 seq_cst, align 4
  call void @llvm.memset.p0.i64(ptr align 4 @_ZN3app3BUF17h4E, i8 0, i64 16, i1 false)
  %c = atomicrmw add ptr @__offload_global_app_HITS_12345678, i32 1 monotonic, align 4
  store i32 %v, ptr addrspacecast (ptr addrspace(3) @_ZN3app6SHARED17h5E to ptr), align 4
  %r = load i32, ptr @_ZN3app4READ17h6E, align 4
  store ptr @_ZN3app4READ17h6E, ptr %p, align 8
  store i32 %r, ptr %p, align 4
  ret void
}
"#;

    #[test]
    fn finds_the_statics_kernels_write() {
        assert_eq!(written_statics(IR), ["_ZN3app5COUNT17h1E", "_ZN3app4HITS17h3E", "_ZN3app3BUF17h4E"]);
    }

    #[test]
    fn reads_and_own_globals_are_fine() {
        let ir = IR.replace("  %a = atomicrmw", "  %a = load i32, ptr @_ZN3app5COUNT17h1E ; atomicrmw").replace(
            "  %b = atomicrmw volatile add ptr getelementptr inbounds nuw (i8, ptr @_ZN3app4HITS17h3E, i64 0)",
            "  %b = atomicrmw volatile add ptr %p",
        );
        let ir = ir.replace("(ptr align 4 @_ZN3app3BUF17h4E", "(ptr align 4 %p");
        assert_eq!(written_statics(&ir), Vec::<String>::new());
        let cas = "@G = internal global i32 0\n  %x = cmpxchg weak ptr @G, i32 0, i32 1 acq_rel acquire, align 4\n";
        assert_eq!(written_statics(cas), ["G"]);
        assert!(!mentions("ptr @G2", "G"));
    }

    /// A debug build's module before `opt` (names shortened; the calls as
    /// rustc 1.101 emits them for `CALLS.store(n, Relaxed)`: `store` →
    /// `as_ptr`, `atomic_store`).
    const BEFORE_OPT: &str = r#"@_ZN3app5CALLS17h1E = internal global [4 x i8] zeroinitializer, align 4
@_ZN3app4LAST17h2E = internal global [4 x i8] zeroinitializer, align 4
@_ZN3app4READ17h3E = internal global [4 x i8] zeroinitializer, align 4
@_ZN3app3PTR17h4E = internal global ptr null, align 8
@_ZN3app4HOST17h5E = internal global [4 x i8] zeroinitializer, align 4
@_ZN3app3VIA17h6E = internal global [4 x i8] zeroinitializer, align 4
@__offload_global_app_G_12345678 = global [4 x i8] zeroinitializer, align 4

define ptx_kernel void @__offload_kernel_app_count_6b3e2913(i32 %0) unnamed_addr #1 {
  call void @_ZN4core4sync6atomic9AtomicU325store17h7E(ptr align 4 @_ZN3app5CALLS17h1E, i32 %0, i8 0) #19
  store i32 %0, ptr @_ZN3app4LAST17h2E, align 4
  %r = call i32 @_ZN4core4sync6atomic11atomic_load17h8E(ptr align 4 @_ZN3app4READ17h3E, i8 0)
  %p = load ptr, ptr @_ZN3app3PTR17h4E, align 8
  store i32 %r, ptr %p, align 4
  %slot = alloca [8 x i8], align 8
  br label %next

next:
  %v = load ptr, ptr %slot, align 8
  %g = getelementptr inbounds i8, ptr %v, i64 0
  call void @_ZN4core4sync6atomic12atomic_store17h9E(ptr %g, i32 1, i8 0)
  call void @_ZN4core4sync6atomic12atomic_store17h9E(ptr @__offload_global_app_G_12345678, i32 1, i8 0)
  ret void

spill:
  store ptr @_ZN3app3VIA17h6E, ptr %slot, align 8
  br label %next
}

define hidden void @_ZN4core4sync6atomic9AtomicU325store17h7E(ptr align 4 %0, i32 %1, i8 %2) unnamed_addr #0 {
  %4 = call ptr @_ZN4core4sync6atomic9AtomicU326as_ptr17hAE(ptr align 4 %0) #19
  call void @_ZN4core4sync6atomic12atomic_store17h9E(ptr %4, i32 %1, i8 %2) #19
  ret void
}

define internal ptr @_ZN4core4sync6atomic9AtomicU326as_ptr17hAE(ptr align 4 %0) unnamed_addr #0 {
  ret ptr %0
}

define void @_ZN4core4sync6atomic12atomic_store17h9E(ptr %0, i32 %1, i8 %2) unnamed_addr #0 {
  store atomic i32 %1, ptr %0 monotonic, align 4
  ret void
}

define i32 @_ZN4core4sync6atomic11atomic_load17h8E(ptr %0, i8 %1) unnamed_addr #0 {
  %3 = load atomic i32, ptr %0 monotonic, align 4
  ret i32 %3
}

define void @_ZN3app9host_only17hBE() unnamed_addr #0 {
  call void @_ZN4core4sync6atomic12atomic_store17h9E(ptr @_ZN3app4HOST17h5E, i32 1, i8 0)
  ret void
}
"#;

    /// Before optimization: a write through callees (`store` → `as_ptr` →
    /// `atomic_store`), a plain store (`static mut`), a pointer spilled to a
    /// stack slot; not a read, not a write through a pointer a static
    /// holds, not offload's own globals, not code no kernel reaches.
    #[test]
    fn before_opt_writes_are_followed_through_callees() {
        let scan = |ir: &str, prefix: &str| {
            let reachable = crate::recursion::CallGraph::parse(ir).reachable_functions(prefix);
            written_statics_before_opt(ir, &reachable)
        };
        let mut found = scan(BEFORE_OPT, "__offload_kernel_");
        found.sort();
        assert_eq!(found, ["_ZN3app3VIA17h6E", "_ZN3app4LAST17h2E", "_ZN3app5CALLS17h1E"]);
        // The same module after `opt` deleted the write-only statics: the
        // other scan sees nothing, which is why this one exists.
        assert!(written_statics(&BEFORE_OPT.replace("store i32 %0, ptr @_ZN3app4LAST17h2E", "")).is_empty());
        // Without kernels nothing is reachable.
        assert!(scan(BEFORE_OPT, "__no_kernel_").is_empty());
        // Reads only.
        let reads = BEFORE_OPT
            .replace(
                "call void @_ZN4core4sync6atomic9AtomicU325store17h7E(ptr align 4 @_ZN3app5CALLS17h1E",
                "call void @x(ptr align 4 %p",
            )
            .replace("store i32 %0, ptr @_ZN3app4LAST17h2E", "%l = load i32, ptr @_ZN3app4LAST17h2E")
            .replace("store ptr @_ZN3app3VIA17h6E", "store ptr null");
        assert_eq!(scan(&reads, "__offload_kernel_"), Vec::<String>::new());
    }
}
