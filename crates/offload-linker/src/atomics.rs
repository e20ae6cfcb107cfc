//! Memory orderings of read-modify-writes that LLVM 22's NVPTX backend drops.
//!
//! Rust lowers `core::sync::atomic`'s `swap`, `fetch_add`, `fetch_sub`,
//! `fetch_and`, `fetch_or`, `fetch_xor`, `fetch_max`, `fetch_min` (and
//! `fetch_nand`) to LLVM `atomicrmw` instructions carrying the requested
//! ordering. The NVPTX backend of LLVM 22 selects every `atomicrmw` that
//! PTX has an instruction for into `atom.<op>` with no `.sem` and no
//! `.scope` qualifier, that is `.relaxed` at `.gpu` scope (PTX ISA, "atom":
//! "the default is .relaxed", "the default scope is .gpu"), whatever the
//! ordering: an `AcqRel` `fetch_add` orders nothing, and message passing
//! through it was seen to read stale data on an H200 (3 stale reads in
//! 81,920 pairs). Its `cmpxchg`, atomic `load` and `store`, and the
//! `atomicrmw`s it expands into compare-exchange loops (`nand`, 8- and
//! 16-bit operands) do keep their orderings. LLVM 23 selects
//! `atom.acquire` / `.release` / `.acq_rel` at `.sys` scope (checked by
//! compiling every `core` atomic operation with each ordering with both
//! toolchains).
//!
//! The device link therefore rewrites, for LLVM before
//! [`RMW_ORDERING_SINCE_LLVM`], every `atomicrmw` whose ordering is
//! stronger than `monotonic` into a monotonic one between fences, as LLVM's
//! `AtomicExpand` pass does for targets that want fences around atomics
//! (`TargetLowering::emitLeadingFence` / `emitTrailingFence`) and as the
//! PTX ISA's memory model builds release and acquire patterns from a fence
//! and a strong operation ("Memory Consistency Model", "Release and Acquire
//! Patterns"):
//!
//! | ordering | rewritten | PTX (sm_70+) |
//! | --- | --- | --- |
//! | `acquire` | `atomicrmw … monotonic` + `fence acquire` | `atom` ; `fence.acq_rel.sys` |
//! | `release` | `fence release` + `atomicrmw … monotonic` | `fence.acq_rel.sys` ; `atom` |
//! | `acq_rel` | `fence release` + `… monotonic` + `fence acquire` | `fence.acq_rel.sys` ; `atom` ; `fence.acq_rel.sys` |
//! | `seq_cst` | `fence seq_cst` + `… monotonic` + `fence acquire` | `fence.sc.sys` ; `atom` ; `fence.acq_rel.sys` |
//!
//! The fences take the instruction's `syncscope` (none: system scope, PTX
//! `.sys`), so `fence seq_cst` becomes `fence.sc.sys`, the leading fence of
//! the PTX ISA's mapping of a sequentially consistent operation. The `atom`
//! itself stays at LLVM 22's `.gpu` scope: atomic with respect to every
//! thread of the device, which is where kernel atomics live (they are
//! copied to the device and back, never shared with the host during a
//! launch).
//!
//! The rewrite runs on the textual IR of `llvm-link -S`, before `opt`.

/// The first LLVM major version whose NVPTX backend emits the ordering of
/// an `atomicrmw` itself; older ones get [`fence_rmw_orderings`].
pub const RMW_ORDERING_SINCE_LLVM: u32 = 23;

/// Whether the NVPTX backend of LLVM `major` needs [`fence_rmw_orderings`].
pub fn needs_rmw_fences(major: u32) -> bool {
    major < RMW_ORDERING_SINCE_LLVM
}

/// The parts of one `atomicrmw` instruction line that the rewrite needs:
/// its indentation, the text up to the ordering, the `syncscope(…)` if any,
/// the ordering, and the rest of the line (`, align 4`, metadata).
struct Rmw<'a> {
    indent: &'a str,
    head: &'a str,
    scope: Option<&'a str>,
    ordering: &'a str,
    tail: &'a str,
}

const ORDERINGS: [&str; 6] = ["unordered", "monotonic", "acquire", "release", "acq_rel", "seq_cst"];

/// Parses `  %r = atomicrmw [volatile] <op> ptr <p>, <ty> <v> [syncscope("s")] <ordering>[, align N][, !md …]`
/// (LLVM Language Reference, "atomicrmw Instruction").
fn parse(line: &str) -> Option<Rmw<'_>> {
    let body = line.trim_start();
    let indent = &line[..line.len() - body.len()];
    let (_, rhs) = body.split_once(" = ")?;
    if !body.starts_with('%') || !rhs.starts_with("atomicrmw ") {
        return None;
    }
    // The instruction ends before `, align` or the first metadata
    // attachment; operands (constant expressions included) contain neither.
    let end = [line.find(", align "), line.find(", !")].into_iter().flatten().min().unwrap_or(line.len());
    let inst = &line[..end];
    let (before, ordering) = inst.rsplit_once(' ')?;
    if !ORDERINGS.contains(&ordering) {
        return None;
    }
    let (head, scope) = match before.rsplit_once(' ') {
        Some((h, s)) if s.starts_with("syncscope(") => (h, Some(s)),
        _ => (before, None),
    };
    Some(Rmw { indent, head, scope, ordering, tail: &line[end..] })
}

/// Rewrites every `atomicrmw` of `ir` whose ordering is `acquire`,
/// `release`, `acq_rel` or `seq_cst` into a `monotonic` one with the fences
/// of the module docs' table. Returns the new text and the number of
/// instructions rewritten. Single-thread (`syncscope("singlethread")`)
/// operations order nothing between threads and are left alone.
pub fn fence_rmw_orderings(ir: &str) -> (String, usize) {
    let mut out = String::with_capacity(ir.len() + 1024);
    let mut count = 0;
    for line in ir.lines() {
        let rmw = match parse(line) {
            Some(r) if matches!(r.ordering, "acquire" | "release" | "acq_rel" | "seq_cst") => r,
            _ => {
                out.push_str(line);
                out.push('\n');
                continue;
            }
        };
        if rmw.scope == Some("syncscope(\"singlethread\")") {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        let scope = rmw.scope.map(|s| format!("{s} ")).unwrap_or_default();
        let leading = match rmw.ordering {
            "release" | "acq_rel" => Some("release"),
            "seq_cst" => Some("seq_cst"),
            _ => None,
        };
        if let Some(l) = leading {
            out.push_str(&format!("{}fence {scope}{l}\n", rmw.indent));
        }
        let scope_sp = rmw.scope.map(|s| format!(" {s}")).unwrap_or_default();
        out.push_str(&format!("{}{scope_sp} monotonic{}\n", rmw.head, rmw.tail));
        if rmw.ordering != "release" {
            out.push_str(&format!("{}fence {scope}acquire\n", rmw.indent));
        }
        count += 1;
    }
    (out, count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_ordering_gets_its_fences() {
        let ir = "\
define void @k(ptr %p) {
start:
  %a = atomicrmw add ptr %p, i32 1 monotonic, align 4
  %b = atomicrmw add ptr %p, i32 1 acquire, align 4
  %c = atomicrmw xchg ptr %p, i64 1 release, align 8, !noalias !3
  %d = atomicrmw volatile umax ptr %p, i32 %x acq_rel, align 4
  %5 = atomicrmw or ptr getelementptr inbounds nuw (i8, ptr @g, i64 8), i8 1 seq_cst, align 1
  %e = atomicrmw fadd ptr %p, float 1.0 syncscope(\"device\") acq_rel, align 4
  %f = atomicrmw add ptr %p, i32 1 syncscope(\"singlethread\") seq_cst, align 4
  %g = load atomic i32, ptr %p seq_cst, align 4
  ret void
}
";
        let (out, n) = fence_rmw_orderings(ir);
        assert_eq!(n, 5, "{out}");
        let want = "\
define void @k(ptr %p) {
start:
  %a = atomicrmw add ptr %p, i32 1 monotonic, align 4
  %b = atomicrmw add ptr %p, i32 1 monotonic, align 4
  fence acquire
  fence release
  %c = atomicrmw xchg ptr %p, i64 1 monotonic, align 8, !noalias !3
  fence release
  %d = atomicrmw volatile umax ptr %p, i32 %x monotonic, align 4
  fence acquire
  fence seq_cst
  %5 = atomicrmw or ptr getelementptr inbounds nuw (i8, ptr @g, i64 8), i8 1 monotonic, align 1
  fence acquire
  fence syncscope(\"device\") release
  %e = atomicrmw fadd ptr %p, float 1.0 syncscope(\"device\") monotonic, align 4
  fence syncscope(\"device\") acquire
  %f = atomicrmw add ptr %p, i32 1 syncscope(\"singlethread\") seq_cst, align 4
  %g = load atomic i32, ptr %p seq_cst, align 4
  ret void
}
";
        assert_eq!(out, want);
    }

    #[test]
    fn other_lines_are_unchanged() {
        let ir = "; atomicrmw add ptr %p, i32 1 seq_cst\n  %x = cmpxchg ptr %p, i32 0, i32 1 acq_rel acquire, align 4\n  call void @f(ptr @\"atomicrmw seq_cst\")\n";
        assert_eq!(fence_rmw_orderings(ir), (ir.to_string(), 0));
    }

    #[test]
    fn only_llvm_before_23_needs_it() {
        assert!(needs_rmw_fences(22));
        assert!(needs_rmw_fences(21));
        assert!(!needs_rmw_fences(23));
    }

    /// What LLVM 22's llc makes of the rewrite (when LLVM 22 is installed):
    /// the fences of the table in the module docs, at system scope.
    #[test]
    fn llc_22_emits_the_fences() {
        let Ok(tools) = crate::LlvmTools::discover(22, None) else {
            eprintln!("skipped: no LLVM 22 tools");
            return;
        };
        let ir = "target triple = \"nvptx64-nvidia-cuda\"\n\
define void @k(ptr %p, ptr %q) {\n\
  %a = atomicrmw add ptr %p, i32 1 acq_rel, align 4\n\
  store i32 %a, ptr %q, align 4\n\
  %b = atomicrmw xchg ptr %p, i32 2 seq_cst, align 4\n\
  store i32 %b, ptr %q, align 4\n\
  %c = atomicrmw umax ptr %p, i32 3 acquire, align 4\n\
  store i32 %c, ptr %q, align 4\n\
  %d = atomicrmw and ptr %p, i32 4 release, align 4\n\
  store i32 %d, ptr %q, align 4\n\
  ret void\n\
}\n";
        let dir = std::env::temp_dir().join(format!("offload-atomics-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (rewritten, n) = fence_rmw_orderings(ir);
        assert_eq!(n, 4);
        std::fs::write(dir.join("k.ll"), rewritten).unwrap();
        let out = std::process::Command::new(&tools.llc)
            .args(["-mtriple=nvptx64-nvidia-cuda", "-mcpu=sm_90", "-O3"])
            .arg(dir.join("k.ll"))
            .arg("-o")
            .arg("-")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let ptx = String::from_utf8_lossy(&out.stdout);
        let ops: Vec<&str> = ptx
            .lines()
            .map(str::trim)
            .filter(|l| l.starts_with("fence") || l.starts_with("atom"))
            .map(|l| l.split_whitespace().next().unwrap())
            .collect();
        assert_eq!(
            ops,
            [
                "fence.acq_rel.sys;",
                "atom.add.u32",
                "fence.acq_rel.sys;",
                "fence.sc.sys;",
                "atom.exch.b32",
                "fence.acq_rel.sys;",
                "atom.max.u32",
                "fence.acq_rel.sys;",
                "fence.acq_rel.sys;",
                "atom.and.b32",
            ],
            "{ptx}"
        );
    }
}
