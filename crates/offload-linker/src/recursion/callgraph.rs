//! The call graph of a module in LLVM's textual IR, with the frame size
//! of each function: what the guards (`super`) need to find the cycles the
//! kernels reach and the stack one level of each may take.

use std::collections::HashMap;

/// A function or global of the module, as the call graph sees it.
#[derive(Debug, Default, Clone)]
pub(super) struct Node<'a> {
    pub(super) name: &'a str,
    /// Has a body (`define`).
    pub(super) defined: bool,
    pub(super) is_function: bool,
    /// Direct callees (node indices).
    pub(super) calls: Vec<usize>,
    /// Every symbol the body or initializer mentions (node indices).
    pub(super) refs: Vec<usize>,
    /// Makes a call through a pointer.
    pub(super) indirect: bool,
    /// Bytes of its `alloca`s.
    pub(super) frame: u64,
}

/// The call graph of a module in LLVM's textual IR.
#[derive(Debug, Default)]
pub struct CallGraph<'a> {
    pub(super) nodes: Vec<Node<'a>>,
    pub(super) index: HashMap<&'a str, usize>,
}

pub(super) fn is_name_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'-' | b'$' | b'.' | b'_')
}

/// The symbol name (without `@`, quotes removed) at `s[i..]`, which starts
/// right after an `@` or `%`, and the index after it.
pub(crate) fn name_after(s: &str, i: usize) -> (&str, usize) {
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
pub(crate) fn symbols(line: &str) -> impl Iterator<Item = &str> + '_ {
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
pub(crate) enum Callee<'a> {
    Direct(&'a str),
    Indirect,
}

/// The callee of a `call`/`invoke` instruction; `None` for other lines and
/// for inline assembly.
pub(crate) fn callee(line: &str) -> Option<Callee<'_>> {
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
pub(super) fn type_size(ty: &str, types: &HashMap<&str, &str>, depth: u32) -> u64 {
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
pub(super) fn fields(s: &str) -> Vec<&str> {
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
pub(super) fn struct_size(body: &str, types: &HashMap<&str, &str>, depth: u32) -> u64 {
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
pub(super) fn alloca_size(line: &str, types: &HashMap<&str, &str>) -> Option<u64> {
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
    pub(super) fn node(&mut self, name: &'a str) -> usize {
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
    pub(super) fn cycles(&self, within: &[bool]) -> Vec<Vec<usize>> {
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

    /// The defined functions that the functions whose names start with
    /// `root_prefix` can reach (see [`CallGraph::reachable`]), by name.
    pub fn reachable_functions(&self, root_prefix: &str) -> std::collections::HashSet<&'a str> {
        let seen = self.reachable(root_prefix);
        self.nodes.iter().zip(seen).filter(|(n, s)| *s && n.defined).map(|(n, _)| n.name).collect()
    }

    /// The nodes reachable from the functions whose names start with
    /// `root_prefix`, through every symbol their bodies (and the globals
    /// they mention) refer to.
    pub(super) fn reachable(&self, root_prefix: &str) -> Vec<bool> {
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
