//! Recursion in NVPTX device code: bounded, so that recursing too deeply is
//! an error of the launch instead of a fault that ruins the CUDA context.
//!
//! A GPU thread's stack is a slice of its local memory
//! (`CU_LIMIT_STACK_SIZE`, 8 KiB under `offload`). For code whose stack
//! need is static, ptxas computes it and the driver sizes the stack for each
//! launch. A call-graph cycle has no static bound ("Stack size for entry
//! function ... cannot be statically determined"), and a thread that
//! recurses past the end of its stack makes an out-of-range local access:
//! `CUDA_ERROR_ILLEGAL_ADDRESS`, after which CUDA refuses every call of the
//! process. Refusing recursive kernels outright (as OpenCL and SYCL do)
//! would reject the many recursions that stay shallow (tree walks, sorts),
//! and nothing at build time can tell how deep a recursion will go. So the
//! device link bounds it instead:
//!
//! 1. Before optimizing, [`has_reachable_recursion`] looks for a cycle of
//!    direct calls among the functions the kernels can reach. Almost every
//!    module has none, and is linked exactly as before: identical PTX.
//! 2. Otherwise the optimized module (as text) gets, at the entry of every
//!    function that is in a cycle *after* optimization (inlining and
//!    tail-call elimination remove many), a call to `offload`'s
//!    `__offload_stack_guard(reserve, name, len)` ([`insert_guards`]),
//!    which a second `opt` run inlines. It compares the local address of
//!    the current frame (`cvta.to.local` of a local's address) with
//!    [`FLOOR_GLOBAL`] + `reserve`; when it is below, the thread records a
//!    stack overflow naming the function (through the device panic record)
//!    and exits, so the kernel ends normally and the host returns
//!    `offload::Error::StackOverflow`.
//! 3. The floor, the lowest local address of the stack, is measured by the
//!    host, not assumed. The stack pointer of the CUDA ABI starts at a
//!    driver-chosen local address `T` (SASS `LDC R1, c[0x0][0x28]` at every
//!    entry) and the stack grows down from there. `T` is not `L`
//!    (= `CU_LIMIT_STACK_SIZE`, the stack's size) with the stack growing
//!    down to local address 0, as the guard first assumed: an H200 (sm_90,
//!    driver 580) starts kernels at `T` = 0xFFFDC0, near the top of a
//!    16 MiB local window, with `L` = 1 and 64 KiB alike; the stack is
//!    taken to be `[T - L, T)`. So a module with guards also gets a kernel
//!    [`PROBE_KERNEL`]`(ptr out)` ([`probe_ir`]), which writes the local
//!    address of a local of its own 8-byte frame, `T' = T - 8`, to `*out`.
//!    Whenever `offload`'s CUDA backend loads such a module (at start-up
//!    and after a context rebuild, the only times it sets `L`), it
//!    launches the probe on one thread and stores `T' + 64 - L` (64 for the
//!    probe's frame; 0 if negative, the stack-ends-at-0 layout) in
//!    [`FLOOR_GLOBAL`]. The floor is 0 until the host sets it; then the
//!    check is the old one (stack left = local address), which never fires
//!    where `T` is near 16 MiB: a module loaded by something other than
//!    `offload`'s CUDA backend is unprotected. Probing once per context
//!    assumes that every kernel of a context starts at the same `T` (the
//!    driver's constant, not the kernel's); `bench/probe/stack.cu` measures
//!    that, and that `[T - L, T)` is writable and below it is not. The
//!    probe is not a user kernel: its name lacks [`crate::KERNEL_PREFIX`],
//!    so the entry checks and the image's kernel list leave it out.
//!
//! `reserve` must cover what one more level of the cycle may need before
//! its own check runs: the largest frame in the cycle plus the deepest
//! chain of non-recursive calls it makes. Frames are estimated from the
//! optimized IR: the sizes of its `alloca`s plus [`FRAME_OVERHEAD`] for what
//! ptxas adds (return address, saved registers, spills); an indirect call
//! counts [`INDIRECT_CALL`] (formatting through `dyn Write`), a call of an
//! external function [`EXTERNAL_CALL`]. Calls into another cycle count that
//! cycle's entry frame, since its own check takes over there.
//! Recursion through function pointers or trait objects only (no direct
//! call cycle) is not seen; it still faults as before.
//!
//! The floor is conservative where the driver gives a launch more than `L`
//! bytes of stack (a kernel whose static stack need is larger: "The driver
//! automatically increases the per-thread stack size for each kernel launch
//! as needed", `cuCtxSetLimit`): the check then fires up to the difference
//! early, never late.

/// The guard function `offload` defines for the device (see the module
/// docs); the device link keeps it until the guards are inserted.
pub const GUARD_FN: &str = "__offload_stack_guard";
/// The device global (a `u64`, `offload`'s device code defines it) that
/// holds the lowest local address of a thread's stack, measured and set by
/// the host (see the module docs). Kept external only in modules that
/// get guards (it has no `__offload_global_` prefix, so that modules
/// without recursion keep their exact PTX).
pub const FLOOR_GLOBAL: &str = "__offload_stack_floor";
/// The kernel the linker adds to a module with guards ([`probe_ir`]): the
/// host launches it to measure where a thread's stack starts.
pub const PROBE_KERNEL: &str = "__offload_stack_probe";

/// Bytes ptxas may add to a function's `alloca`s in its stack frame: the
/// return address, callee-saved registers of the CUDA ABI, spills.
pub const FRAME_OVERHEAD: u64 = 256;
/// Bytes allowed for an indirect call (its callee is unknown; in device
/// code these are `core::fmt`'s calls through `dyn Write` and formatting
/// functions, a few frames deep).
pub const INDIRECT_CALL: u64 = 2048;
/// Bytes allowed for a call of a function the module only declares
/// (`vprintf`, intrinsics lowered to calls).
pub const EXTERNAL_CALL: u64 = 512;
/// Bytes the overflow path itself needs (recording the overflow).
pub const RECORD_SLACK: u64 = 512;

mod callgraph;
#[cfg(test)]
mod tests;

pub use callgraph::CallGraph;
pub(crate) use callgraph::{callee, name_after, symbols, Callee};

/// Whether a function that the kernels (symbols starting with
/// `kernel_prefix`) can reach is in a cycle of direct calls. Run on the
/// module before optimization: if not, the link needs no guards.
pub fn has_reachable_recursion(ir: &str, kernel_prefix: &str) -> bool {
    reaches_recursion(&CallGraph::parse(ir), kernel_prefix)
}

/// [`has_reachable_recursion`] of a module already parsed.
pub fn reaches_recursion(graph: &CallGraph, kernel_prefix: &str) -> bool {
    let reach = graph.reachable(kernel_prefix);
    !graph.cycles(&reach).is_empty()
}

/// One cycle of the call graph, guarded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuardedCycle {
    /// The functions in the cycle, as their (mangled) symbols.
    pub functions: Vec<String>,
    /// The stack each of them must have left at its entry, in bytes.
    pub reserve: u64,
}

/// The module with the recursion guards inserted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Guarded {
    /// The module as text: with guards and the stack probe if `cycles` is
    /// not empty, else unchanged.
    pub text: String,
    /// The guarded cycles; empty if nothing was inserted.
    pub cycles: Vec<GuardedCycle>,
}

/// A readable name for a symbol: the Rust path without its hash.
fn display_name(symbol: &str) -> String {
    match rustc_demangle::try_demangle(symbol) {
        Ok(d) => format!("{d:#}"),
        Err(_) => symbol.to_string(),
    }
}

/// An IR string constant body (`c"..."` contents) for `s`.
fn ir_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s.as_bytes() {
        if (b.is_ascii_graphic() && b != b'"' && b != b'\\') || b == b' ' {
            out.push(b as char);
        } else {
            out.push_str(&format!("\\{b:02X}"));
        }
    }
    out
}

/// `line`, a `define` line, with function attribute `attr` added where
/// LLVM's grammar has function attributes: after the parameter list and
/// `unnamed_addr`, next to an attribute group reference (`#N`).
fn with_fn_attribute(line: &str, attr: &str) -> String {
    let Some(params) = line.find('(') else { return line.to_string() };
    // The parameter list's closing parenthesis (types like
    // `ptr addrspace(1)` nest).
    let mut depth = 0;
    let mut close = None;
    for (i, c) in line[params..].char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    close = Some(params + i + 1);
                    break;
                }
            }
            _ => {}
        }
    }
    let Some(mut at) = close else { return line.to_string() };
    for keyword in [" unnamed_addr", " local_unnamed_addr"] {
        if line[at..].starts_with(keyword) {
            at += keyword.len();
        }
    }
    format!("{} {attr}{}", &line[..at], &line[at..])
}

/// The alloca address space of a module (the `A<n>` of its
/// `target datalayout`; 0 without one: LLVM IR reference, "Data Layout").
fn alloca_addrspace(ir: &str) -> u32 {
    ir.lines()
        .find_map(|l| l.strip_prefix("target datalayout = \""))
        .and_then(|l| l.split(['-', '"']).find_map(|c| c.strip_prefix('A')?.parse().ok()))
        .unwrap_or(0)
}

/// LLVM IR of the stack probe [`PROBE_KERNEL`]`(ptr out)`: stores to
/// `*out` the local address (`cvta.to.local`, as the guard computes it) of
/// an 8-byte local of its own frame, which is the thread's initial stack
/// pointer minus that frame (ptxas 12.x/13.x: `LDC R1, c[0x0][0x28]`,
/// `VIADD R1, R1, -8`). The local is stored to (volatile), so it has a
/// frame slot. `alloca_as` is the module's alloca address space.
pub fn probe_ir(alloca_as: u32) -> String {
    // `%slot` is the generic address of the local.
    let alloca = match alloca_as {
        0 => "  %slot = alloca i64, align 8\n".to_string(),
        n => format!("  %slot.local = alloca i64, align 8, addrspace({n})\n  %slot = addrspacecast ptr addrspace({n}) %slot.local to ptr\n"),
    };
    format!(
        "\n; The stack probe the host launches to find where a thread's stack starts (offload-linker, `recursion`).\n\
         define ptx_kernel void @{PROBE_KERNEL}(ptr %out) {{\n\
         {alloca}  store volatile i64 0, ptr %slot, align 8\n  \
         %generic = ptrtoint ptr %slot to i64\n  \
         %local = call i64 asm sideeffect \"cvta.to.local.u64 $0, $1;\", \"=l,l\"(i64 %generic)\n  \
         store i64 %local, ptr %out, align 8\n  \
         ret void\n}}\n"
    )
}

/// Inserts a call of [`GUARD_FN`] at the entry of every function in a
/// cycle of direct calls in `ir` (an optimized module, as text), with the
/// cycle's reserve (see the module docs) and the function's name, and
/// appends the stack probe ([`probe_ir`]). A module that does not define
/// [`GUARD_FN`] (an `offload` without it) or has no cycle comes back
/// unchanged.
pub fn insert_guards(ir: &str) -> Guarded {
    let g = CallGraph::parse(ir);
    let unchanged = || Guarded { text: ir.to_string(), cycles: Vec::new() };
    if !g.index.get(GUARD_FN).is_some_and(|&i| g.nodes[i].defined) {
        return unchanged();
    }
    let all = vec![true; g.nodes.len()];
    let cycles = g.cycles(&all);
    if cycles.is_empty() {
        return unchanged();
    }
    let mut cycle_of = vec![usize::MAX; g.nodes.len()];
    for (k, c) in cycles.iter().enumerate() {
        for &f in c {
            cycle_of[f] = k;
        }
    }
    let reserve = reserves(&g, &cycles, &cycle_of);
    let text = with_guards(ir, &g, &cycle_of, &reserve);
    let cycles = cycles
        .iter()
        .zip(reserve)
        .map(|(c, reserve)| GuardedCycle {
            functions: c.iter().map(|&f| g.nodes[f].name.to_string()).collect(),
            reserve,
        })
        .collect();
    Guarded { text, cycles }
}

/// The reserve of each cycle of `cycles` (`cycle_of`: the cycle of each
/// node, or `usize::MAX`): see the module docs.
fn reserves(g: &CallGraph<'_>, cycles: &[Vec<usize>], cycle_of: &[usize]) -> Vec<u64> {
    // Stack bytes of a call of `v` from outside `v`'s cycle, memoized.
    fn cost(g: &CallGraph<'_>, cycle_of: &[usize], memo: &mut [Option<u64>], v: usize) -> u64 {
        let node = &g.nodes[v];
        if !node.defined {
            return EXTERNAL_CALL;
        }
        if cycle_of[v] != usize::MAX {
            // Its own guard checks the rest.
            return node.frame + FRAME_OVERHEAD;
        }
        if let Some(c) = memo[v] {
            return c;
        }
        memo[v] = Some(node.frame + FRAME_OVERHEAD); // no cycles here; guards re-entry
        let mut deepest = if node.indirect { INDIRECT_CALL } else { 0 };
        for &c in &node.calls {
            deepest = deepest.max(cost(g, cycle_of, memo, c));
        }
        let total = node.frame + FRAME_OVERHEAD + deepest;
        memo[v] = Some(total);
        total
    }
    let mut memo = vec![None; g.nodes.len()];
    let mut reserve = vec![0u64; cycles.len()];
    for (k, cycle) in cycles.iter().enumerate() {
        let mut r = 0;
        for &f in cycle {
            let node = &g.nodes[f];
            let mut deepest = if node.indirect { INDIRECT_CALL } else { 0 };
            for &c in &node.calls {
                let c_cost =
                    if cycle_of[c] == k { g.nodes[c].frame + FRAME_OVERHEAD } else { cost(g, cycle_of, &mut memo, c) };
                deepest = deepest.max(c_cost);
            }
            r = r.max(node.frame + FRAME_OVERHEAD + deepest);
        }
        reserve[k] = r + RECORD_SLACK;
    }
    reserve
}

/// `ir` with the guard calls at the entry of each function in a cycle, the
/// guard function made `alwaysinline`, the guards' name strings and the
/// stack probe appended.
fn with_guards(ir: &str, g: &CallGraph<'_>, cycle_of: &[usize], reserve: &[u64]) -> String {
    let mut text = String::with_capacity(ir.len() + 4096);
    let mut names = String::new();
    let mut pending: Option<usize> = None;
    let mut guarded = 0usize;
    for line in ir.lines() {
        if let Some(f) = pending.take() {
            let label = !line.starts_with(' ') && line.trim_end().ends_with(':');
            if label {
                text.push_str(line);
                text.push('\n');
            }
            let name = display_name(g.nodes[f].name);
            let sym = format!("__offload_recursion_name.{guarded}");
            guarded += 1;
            names.push_str(&format!(
                "@{sym} = private unnamed_addr constant [{} x i8] c\"{}\", align 1\n",
                name.len(),
                ir_string(&name)
            ));
            text.push_str(&format!(
                "  call void @{GUARD_FN}(i64 {}, ptr @{sym}, i64 {})\n",
                reserve[cycle_of[f]],
                name.len()
            ));
            if label {
                continue;
            }
        }
        if line.starts_with("define ") && line.trim_end().ends_with('{') {
            if let Some(at) = line.find('@') {
                let (name, _) = name_after(line, at + 1);
                if name == GUARD_FN {
                    // Inlined where it is called (rustc ignores `#[inline]`
                    // on exported functions).
                    text.push_str(&with_fn_attribute(line, "alwaysinline"));
                    text.push('\n');
                    continue;
                }
                if let Some(&f) = g.index.get(name) {
                    if cycle_of[f] != usize::MAX {
                        pending = Some(f);
                    }
                }
            }
        }
        text.push_str(line);
        text.push('\n');
    }
    text.push_str(&names);
    text.push_str(&probe_ir(alloca_addrspace(ir)));
    text
}
