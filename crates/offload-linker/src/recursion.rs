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

use std::collections::HashMap;

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

/// A function or global of the module, as the call graph sees it.
#[derive(Debug, Default, Clone)]
struct Node<'a> {
    name: &'a str,
    /// Has a body (`define`).
    defined: bool,
    is_function: bool,
    /// Direct callees (node indices).
    calls: Vec<usize>,
    /// Every symbol the body or initializer mentions (node indices).
    refs: Vec<usize>,
    /// Makes a call through a pointer.
    indirect: bool,
    /// Bytes of its `alloca`s.
    frame: u64,
}

/// The call graph of a module in LLVM's textual IR.
#[derive(Debug, Default)]
pub struct CallGraph<'a> {
    nodes: Vec<Node<'a>>,
    index: HashMap<&'a str, usize>,
}

fn is_name_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'-' | b'$' | b'.' | b'_')
}

/// The symbol name (without `@`, quotes removed) at `s[i..]`, which starts
/// right after an `@` or `%`, and the index after it.
fn name_after(s: &str, i: usize) -> (&str, usize) {
    let b = s.as_bytes();
    if i < b.len() && b[i] == b'"' {
        let end = s[i + 1..].find('"').map_or(b.len(), |e| i + 1 + e);
        return (&s[i + 1..end], (end + 1).min(b.len()));
    }
    let mut j = i;
    while j < b.len() && is_name_char(b[j]) {
        j += 1;
    }
    (&s[i..j], j)
}

/// Every `@symbol` mentioned in `line` (string literals `c"..."` skipped).
fn symbols(line: &str) -> impl Iterator<Item = &str> + '_ {
    let b = line.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < b.len() {
            match b[i] {
                b'c' if b.get(i + 1) == Some(&b'"') => {
                    i = line[i + 2..].find('"').map_or(b.len(), |e| i + 3 + e);
                }
                b'@' => {
                    let (n, j) = name_after(line, i + 1);
                    i = j.max(i + 1);
                    if !n.is_empty() {
                        return Some(n);
                    }
                }
                _ => i += 1,
            }
        }
        None
    })
}

/// What an instruction line calls.
#[derive(Debug, PartialEq, Eq)]
enum Callee<'a> {
    Direct(&'a str),
    Indirect,
}

/// The callee of a `call`/`invoke` instruction; `None` for other lines and
/// for inline assembly.
fn callee(line: &str) -> Option<Callee<'_>> {
    let mut rest = line.trim_start();
    if rest.starts_with('%') {
        rest = rest.split_once(" = ")?.1;
    }
    for prefix in ["tail ", "musttail ", "notail "] {
        rest = rest.strip_prefix(prefix).unwrap_or(rest);
    }
    let rest = rest.strip_prefix("call ").or_else(|| rest.strip_prefix("invoke "))?;
    let b = rest.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'(' if rest[..i].split_whitespace().any(|w| w == "asm") => return None,
            b'@' | b'%' => {
                let (n, j) = name_after(rest, i + 1);
                if b.get(j) == Some(&b'(') {
                    return Some(if b[i] == b'@' { Callee::Direct(n) } else { Callee::Indirect });
                }
                i = j.max(i + 1);
            }
            b'"' => i = rest[i + 1..].find('"').map_or(b.len(), |e| i + 2 + e),
            _ => i += 1,
        }
    }
    None
}

/// Bytes of a value of the IR type `ty` (an estimate: field padding is
/// approximated, unknown types count 64).
fn type_size(ty: &str, types: &HashMap<&str, &str>, depth: u32) -> u64 {
    let ty = ty.trim();
    if depth > 16 {
        return 64;
    }
    if ty == "ptr" || ty.starts_with("ptr addrspace") {
        return 8;
    }
    match ty {
        "half" | "bfloat" => return 2,
        "float" => return 4,
        "double" => return 8,
        "fp128" | "x86_fp80" | "ppc_fp128" => return 16,
        _ => {}
    }
    if let Some(bits) = ty.strip_prefix('i').and_then(|n| n.parse::<u64>().ok()) {
        return bits.div_ceil(8).next_power_of_two();
    }
    let array = |inner: &str| -> Option<u64> {
        let (n, elem) = inner.split_once(" x ")?;
        Some(n.trim().parse::<u64>().ok()?.saturating_mul(type_size(elem, types, depth + 1)))
    };
    if let Some(inner) = ty.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
        return array(inner).unwrap_or(64);
    }
    if let Some(inner) = ty.strip_prefix('<').and_then(|t| t.strip_suffix('>')) {
        if let Some(fields) = inner.strip_prefix('{').and_then(|t| t.strip_suffix('}')) {
            return struct_size(fields, types, depth);
        }
        return array(inner).unwrap_or(64);
    }
    if let Some(fields) = ty.strip_prefix('{').and_then(|t| t.strip_suffix('}')) {
        return struct_size(fields, types, depth);
    }
    if let Some(name) = ty.strip_prefix('%') {
        let name = name.trim_matches('"');
        if let Some(def) = types.get(name) {
            return type_size(def, types, depth + 1);
        }
    }
    64
}

/// Splits `a, {b, c}, [2 x d]` at top-level commas.
fn fields(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in s.char_indices() {
        match c {
            '{' | '[' | '<' | '(' => depth += 1,
            '}' | ']' | '>' | ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if !s[start..].trim().is_empty() {
        out.push(&s[start..]);
    }
    out
}

/// Size of a struct with these fields, each aligned to its size's power of
/// two (at most 8), the whole to its largest field alignment.
fn struct_size(body: &str, types: &HashMap<&str, &str>, depth: u32) -> u64 {
    let (mut offset, mut align) = (0u64, 1u64);
    for f in fields(body) {
        let size = type_size(f, types, depth + 1);
        let a = size.clamp(1, 8).next_power_of_two().min(8);
        offset = offset.next_multiple_of(a).saturating_add(size);
        align = align.max(a);
    }
    offset.next_multiple_of(align)
}

/// Bytes an `alloca` instruction reserves (`None` for other lines; a
/// run-time count is a large unknown: 4 KiB).
fn alloca_size(line: &str, types: &HashMap<&str, &str>) -> Option<u64> {
    let rest = line.split_once(" = alloca ")?.1;
    let parts = fields(rest);
    let ty = parts.first()?.trim();
    let ty = ty.strip_prefix("inalloca ").unwrap_or(ty);
    let mut size = type_size(ty, types, 0);
    if let Some(count) =
        parts.get(1).map(|p| p.trim()).filter(|p| !p.starts_with("align") && !p.starts_with("addrspace"))
    {
        match count.split_whitespace().nth(1).and_then(|n| n.parse::<u64>().ok()) {
            Some(n) => size = size.saturating_mul(n),
            None => size = size.max(4096),
        }
    }
    Some(size)
}

impl<'a> CallGraph<'a> {
    fn node(&mut self, name: &'a str) -> usize {
        if let Some(&i) = self.index.get(name) {
            return i;
        }
        let i = self.nodes.len();
        self.nodes.push(Node { name, ..Node::default() });
        self.index.insert(name, i);
        i
    }

    /// Reads the functions, globals, calls and `alloca`s of a module.
    pub fn parse(ir: &'a str) -> CallGraph<'a> {
        let mut g = CallGraph::default();
        let mut types: HashMap<&str, &str> = HashMap::new();
        for line in ir.lines() {
            if let Some(rest) = line.strip_prefix('%') {
                if let Some((name, def)) = rest.split_once(" = type ") {
                    types.insert(name.trim_matches('"'), def);
                }
            }
        }
        let mut current: Option<usize> = None;
        for line in ir.lines() {
            if let Some(f) = current {
                if line.starts_with('}') {
                    current = None;
                    continue;
                }
                if line.contains("call ") || line.contains("invoke ") {
                    match callee(line) {
                        Some(Callee::Direct(n)) if !n.starts_with("llvm.") => {
                            let c = g.node(n);
                            g.nodes[c].is_function = true;
                            g.nodes[f].calls.push(c);
                        }
                        Some(Callee::Indirect) => g.nodes[f].indirect = true,
                        _ => {}
                    }
                }
                if line.contains(" = alloca ") {
                    if let Some(size) = alloca_size(line, &types) {
                        g.nodes[f].frame = g.nodes[f].frame.saturating_add(size);
                    }
                }
                if line.contains('@') {
                    for s in symbols(line) {
                        let r = g.node(s);
                        g.nodes[f].refs.push(r);
                    }
                }
            } else if line.starts_with("define ") || line.starts_with("declare ") {
                let Some(at) = line.find('@') else { continue };
                let (name, _) = name_after(line, at + 1);
                let f = g.node(name);
                g.nodes[f].is_function = true;
                if line.starts_with("define ") && line.trim_end().ends_with('{') {
                    g.nodes[f].defined = true;
                    current = Some(f);
                }
            } else if line.starts_with('@') {
                let (name, end) = name_after(line, 1);
                let n = g.node(name);
                for s in symbols(&line[end..]) {
                    let r = g.node(s);
                    g.nodes[n].refs.push(r);
                }
            }
        }
        g
    }

    /// The strongly connected components of the direct-call graph among
    /// defined functions that contain a cycle (more than one function, or
    /// one that calls itself), each sorted by name (Tarjan's algorithm).
    fn cycles(&self, within: &[bool]) -> Vec<Vec<usize>> {
        let n = self.nodes.len();
        let mut index = vec![usize::MAX; n];
        let mut low = vec![0usize; n];
        let mut on_stack = vec![false; n];
        let mut stack = Vec::new();
        let mut next = 0;
        let mut out = Vec::new();
        let edges = |v: usize| self.nodes[v].calls.iter().copied().filter(|&c| self.nodes[c].defined && within[c]);
        for root in (0..n).filter(|&v| self.nodes[v].defined && within[v]) {
            if index[root] != usize::MAX {
                continue;
            }
            // Iterative DFS: (node, position in its edge list).
            let mut work = vec![(root, 0usize)];
            index[root] = next;
            low[root] = next;
            next += 1;
            stack.push(root);
            on_stack[root] = true;
            while let Some(&mut (v, ref mut pos)) = work.last_mut() {
                if let Some(w) = edges(v).nth(*pos) {
                    *pos += 1;
                    if index[w] == usize::MAX {
                        index[w] = next;
                        low[w] = next;
                        next += 1;
                        stack.push(w);
                        on_stack[w] = true;
                        work.push((w, 0));
                    } else if on_stack[w] {
                        low[v] = low[v].min(index[w]);
                    }
                    continue;
                }
                work.pop();
                if let Some(&(parent, _)) = work.last() {
                    low[parent] = low[parent].min(low[v]);
                }
                if low[v] == index[v] {
                    let mut scc = Vec::new();
                    loop {
                        let w = stack.pop().expect("v is on the stack");
                        on_stack[w] = false;
                        scc.push(w);
                        if w == v {
                            break;
                        }
                    }
                    if scc.len() > 1 || self.nodes[v].calls.contains(&v) {
                        scc.sort_by(|a, b| self.nodes[*a].name.cmp(self.nodes[*b].name));
                        out.push(scc);
                    }
                }
            }
        }
        out
    }

    /// The nodes reachable from the functions whose names start with
    /// `root_prefix`, through every symbol their bodies (and the globals
    /// they mention) refer to.
    fn reachable(&self, root_prefix: &str) -> Vec<bool> {
        let mut seen = vec![false; self.nodes.len()];
        let mut work: Vec<usize> = (0..self.nodes.len())
            .filter(|&v| self.nodes[v].defined && self.nodes[v].name.starts_with(root_prefix))
            .collect();
        for &v in &work {
            seen[v] = true;
        }
        while let Some(v) = work.pop() {
            for &r in &self.nodes[v].refs {
                if !seen[r] {
                    seen[r] = true;
                    work.push(r);
                }
            }
        }
        seen
    }
}

/// Whether a function that the kernels (symbols starting with
/// `kernel_prefix`) can reach is in a cycle of direct calls. Run on the
/// module before optimization: if not, the link needs no guards.
pub fn has_reachable_recursion(ir: &str, kernel_prefix: &str) -> bool {
    let g = CallGraph::parse(ir);
    let reach = g.reachable(kernel_prefix);
    !g.cycles(&reach).is_empty()
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
                let c_cost = if cycle_of[c] == k {
                    g.nodes[c].frame + FRAME_OVERHEAD
                } else {
                    cost(&g, &cycle_of, &mut memo, c)
                };
                deepest = deepest.max(c_cost);
            }
            r = r.max(node.frame + FRAME_OVERHEAD + deepest);
        }
        reserve[k] = r + RECORD_SLACK;
    }

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

#[cfg(test)]
mod tests {
    use super::*;

    const GUARD_DEF: &str =
        "define void @__offload_stack_guard(i64 %0, ptr %1, i64 %2) unnamed_addr #0 {\n  ret void\n}\n";

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
        // `offload`'s guard (device.rs), as rustc emits it.
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
            let flat =
                ptx.split(".entry").find(|f| f.contains("__offload_kernel_demo_flat(")).expect("flat is an entry");
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
                assert!(
                    o.status.success(),
                    "LLVM {} A{n}: {}\n{module}",
                    tools.major,
                    String::from_utf8_lossy(&o.stderr)
                );
            }
        }
    }

    #[test]
    fn unlabeled_entry_blocks_get_the_guard_first() {
        let ir = format!(
            "{GUARD_DEF}define void @f(i64 %0) {{\n  %2 = add i64 %0, 1\n  call void @f(i64 %2)\n  ret void\n}}\n"
        );
        let out = insert_guards(&ir);
        assert!(out.text.contains("define void @f(i64 %0) {\n  call void @__offload_stack_guard(i64 "), "{}", out.text);
        assert!(out.text.contains("ptr @__offload_recursion_name.0, i64 1)\n  %2 = add i64 %0, 1\n"), "{}", out.text);
    }
}
