//! The pre-optimization scan ([`super::written_statics_before_opt`]): which
//! statics the functions the kernels reach write, following pointers
//! through calls.
//!
//! Before `opt`, the kernels' callees are separate functions: in a debug
//! build `COUNT.store(1, Relaxed)` is `AtomicU32::store(@COUNT, 1, 0)`,
//! which calls `as_ptr` and `atomic_store`, whose `store atomic` writes
//! through its parameter. So each function gets a summary, computed to a
//! fixed point over the reachable functions:
//!
//! - the parameters it writes through (a `store`, `atomicrmw`, `cmpxchg` or
//!   `llvm.mem*` to the parameter or a pointer derived from it, or passing
//!   it on to a parameter its callee writes through);
//! - where the pointer it returns comes from (a parameter, a static).
//!
//! A pointer derives from its operands through `getelementptr`, casts,
//! `phi` and `select`, from a call's arguments as the callee's summary
//! says, and from an `alloca` slot it was stored in (debug builds spill
//! pointers there). What is not followed (pointers stored in other memory,
//! calls through pointers) is not seen; the post-optimization scan sees
//! what inlining exposes.

use std::collections::{BTreeSet, HashMap, HashSet};

use super::inst::{destination, operands};
use crate::recursion::{callee, symbols, Callee};

/// Where a pointer may come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Origin<'a> {
    /// A candidate static (see [`super::candidates`]).
    Static(&'a str),
    /// The function's parameter of this index.
    Param(usize),
}

/// What callers need to know about a function.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Summary<'a> {
    /// Parameters it writes through.
    writes: BTreeSet<usize>,
    /// Where the pointer it returns may come from.
    returns: BTreeSet<Origin<'a>>,
}

/// One defined function of the module text.
struct Function<'a> {
    name: &'a str,
    /// Parameter names (`%0`, `%self`), by index.
    params: Vec<&'a str>,
    body: Vec<&'a str>,
}

/// The defined functions of `ir` whose names are in `keep`.
fn functions<'a>(ir: &'a str, keep: &HashSet<&str>) -> Vec<Function<'a>> {
    let mut out = Vec::new();
    let mut current: Option<Function<'a>> = None;
    for line in ir.lines() {
        if let Some(f) = current.as_mut() {
            if line.starts_with('}') {
                out.extend(current.take());
            } else {
                f.body.push(line.trim_start());
            }
            continue;
        }
        if !line.starts_with("define ") || !line.trim_end().ends_with('{') {
            continue;
        }
        let Some(at) = line.find('@') else { continue };
        let (name, end) = crate::recursion::name_after(line, at + 1);
        if !keep.contains(name) {
            continue;
        }
        let params = line[end..]
            .strip_prefix('(')
            .and_then(parenthesized)
            .map(|list| operands(list).into_iter().map(|p| p.rsplit(' ').next().unwrap_or("")).collect())
            .unwrap_or_default();
        current = Some(Function { name, params, body: Vec::new() });
    }
    out
}

/// The `%name` and `@name` tokens of `text`.
fn locals(text: &str) -> impl Iterator<Item = &str> {
    text.match_indices('%').map(move |(i, _)| crate::recursion::name_after(text, i + 1).0)
}

/// The text up to the `)` that closes a parenthesis opened just before `s`.
fn parenthesized(s: &str) -> Option<&str> {
    let mut depth = 1;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' if depth == 1 => return Some(&s[..i]),
            ')' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// The arguments of the call in `inst` to `name`.
fn call_args<'a>(inst: &'a str, name: &str) -> Vec<&'a str> {
    let at = inst.find(&format!("@{name}(")).or_else(|| inst.find(&format!("@\"{name}\"(")));
    let Some(at) = at else { return Vec::new() };
    let open = at + inst[at..].find('(').unwrap_or(0) + 1;
    parenthesized(&inst[open..]).map(operands).unwrap_or_default()
}

/// The scan of one function with the current summaries of its callees.
struct Scan<'f, 'a> {
    f: &'f Function<'a>,
    statics: &'f HashSet<&'a str>,
    summaries: &'f HashMap<&'a str, Summary<'a>>,
    /// Pointer locals and where they may come from.
    derived: HashMap<&'a str, BTreeSet<Origin<'a>>>,
    /// `alloca` slots and the pointers stored in them.
    slots: HashMap<&'a str, BTreeSet<Origin<'a>>>,
    summary: Summary<'a>,
    /// Statics written, in order.
    written: Vec<&'a str>,
}

impl<'f, 'a> Scan<'f, 'a> {
    /// Where the value of `operand` may come from.
    fn origins(&self, operand: &'a str) -> BTreeSet<Origin<'a>> {
        let mut o: BTreeSet<Origin<'a>> =
            symbols(operand).filter(|s| self.statics.contains(s)).map(Origin::Static).collect();
        for l in locals(operand) {
            if let Some(i) = self.f.params.iter().position(|p| p.strip_prefix('%') == Some(l)) {
                o.insert(Origin::Param(i));
            }
            if let Some(d) = self.derived.get(l) {
                o.extend(d.iter().copied());
            }
        }
        o
    }

    fn write(&mut self, to: BTreeSet<Origin<'a>>) {
        for o in to {
            match o {
                Origin::Static(s) if !self.written.contains(&s) => self.written.push(s),
                Origin::Param(i) => {
                    self.summary.writes.insert(i);
                }
                Origin::Static(_) => {}
            }
        }
    }

    /// One instruction; returns whether it learned something that lines
    /// before it may use: a pointer stored in a slot, or one a `phi` merges
    /// (in SSA every other definition comes before its uses).
    fn instruction(&mut self, inst: &'a str) -> bool {
        if !inst.contains("ptr") && !inst.contains(" = alloca ") {
            return false;
        }
        let (lhs, rhs) = match inst.split_once(" = ") {
            Some((l, r)) if l.starts_with('%') => (Some(&l[1..]), r),
            _ => (None, inst),
        };
        let mut grew = false;
        if let Some(dest) = destination(inst) {
            let to = self.origins(dest);
            self.write(to);
            // A pointer spilled to an `alloca` slot.
            if let Some(rest) = rhs.strip_prefix("store ptr ") {
                let value = operands(rest).first().copied().unwrap_or("");
                let from = self.origins(value);
                for slot in locals(dest) {
                    if let Some(known) = self.slots.get_mut(slot) {
                        let before = known.len();
                        known.extend(from.iter().copied());
                        grew |= known.len() > before;
                    }
                }
            }
        }
        if let Some(Callee::Direct(name)) = callee(inst) {
            let args = call_args(inst, name);
            if let Some(s) = self.summaries.get(name) {
                for &i in &s.writes {
                    if let Some(a) = args.get(i) {
                        let to = self.origins(a);
                        self.write(to);
                    }
                }
                if let Some(l) = lhs {
                    let mut from = BTreeSet::new();
                    for r in &s.returns {
                        match r {
                            Origin::Param(i) => from.extend(args.get(*i).map(|a| self.origins(a)).unwrap_or_default()),
                            o => {
                                from.insert(*o);
                            }
                        }
                    }
                    self.derive(l, from);
                }
            }
        } else if let Some(l) = lhs {
            let op = rhs.split_whitespace().next().unwrap_or("");
            if op == "alloca" {
                self.slots.entry(l).or_default();
            } else if op == "load" && rhs.starts_with("load ptr,") {
                let slot = rhs.rsplit_once("ptr ").map(|(_, s)| s).unwrap_or("");
                let from: BTreeSet<Origin<'a>> =
                    locals(slot).filter_map(|s| self.slots.get(s)).flatten().copied().collect();
                self.derive(l, from);
            } else if ["getelementptr", "bitcast", "addrspacecast", "phi", "select"].contains(&op) {
                let from = self.origins(rhs);
                grew |= self.derive(l, from) && op == "phi";
            }
        }
        if let Some(v) = rhs.strip_prefix("ret ptr ") {
            for o in self.origins(v) {
                self.summary.returns.insert(o);
            }
        }
        grew
    }

    fn derive(&mut self, local: &'a str, from: BTreeSet<Origin<'a>>) -> bool {
        let known = self.derived.entry(local).or_default();
        let before = known.len();
        known.extend(from);
        known.len() > before
    }

    /// Scans `f` until what it knows about its locals stops growing.
    fn run(
        f: &'f Function<'a>,
        statics: &'f HashSet<&'a str>,
        summaries: &'f HashMap<&'a str, Summary<'a>>,
    ) -> (Summary<'a>, Vec<&'a str>) {
        let mut scan = Scan {
            f,
            statics,
            summaries,
            derived: HashMap::new(),
            slots: HashMap::new(),
            summary: Summary::default(),
            written: Vec::new(),
        };
        // Blocks may use what later lines define (loops): again until stable.
        for _ in 0..8 {
            let mut grew = false;
            for inst in &f.body {
                grew |= scan.instruction(inst);
            }
            if !grew {
                break;
            }
        }
        (scan.summary, scan.written)
    }
}

/// The statics of `statics` that the functions in `reachable` write: each
/// function scanned with its callees' summaries, and again whenever one of
/// them grows (summaries only grow, and are bounded: a fixed point).
pub(super) fn written_by<'a>(ir: &'a str, statics: &HashSet<&'a str>, reachable: &HashSet<&str>) -> Vec<&'a str> {
    let funcs = functions(ir, reachable);
    let mut callers: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, f) in funcs.iter().enumerate() {
        for c in f.body.iter().filter_map(|l| match callee(l) {
            Some(Callee::Direct(c)) => Some(c),
            _ => None,
        }) {
            callers.entry(c).or_default().push(i);
        }
    }
    let mut summaries: HashMap<&'a str, Summary<'a>> = HashMap::new();
    let mut written: Vec<&'a str> = Vec::new();
    let mut dirty = vec![true; funcs.len()];
    while dirty.iter().any(|&d| d) {
        let mut next = vec![false; funcs.len()];
        for (f, _) in funcs.iter().zip(&dirty).filter(|(_, &d)| d) {
            let (summary, found) = Scan::run(f, statics, &summaries);
            for s in found {
                if !written.contains(&s) {
                    written.push(s);
                }
            }
            if summaries.get(f.name) != Some(&summary) {
                summaries.insert(f.name, summary);
                for &c in callers.get(f.name).into_iter().flatten() {
                    next[c] = true;
                }
            }
        }
        dirty = next;
    }
    written
}
