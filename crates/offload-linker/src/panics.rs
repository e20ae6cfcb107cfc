//! Keeping the panic path from costing every kernel its registers.
//!
//! `core` builds a panic's message as `fmt::Arguments`, which stores the
//! addresses of formatting functions (`<u64 as Display>::fmt`, …) next to
//! the literal pieces, inside `#[cold] #[inline(never)]` helpers such as
//! `core::panicking::panic_bounds_check`. A function whose address is taken
//! may be called indirectly, and ptxas then budgets the maximum ABI register
//! count for every kernel that can reach that code: a SAXPY that can panic
//! on a bounds check used 56 registers instead of 10 (measured with
//! `ptxas -v`), halving occupancy at 1024 threads per block and the
//! bandwidth of memory-bound kernels with it.
//!
//! The device panic handler of optimized builds reads only the literal
//! message and the location (see `offload::device`), so the addresses are
//! dead once the helpers are inlined into their callers. This rewrite, done
//! on the linked module's text before optimization, turns `noinline` into
//! `alwaysinline` for the cold helpers of `core` and the handler itself;
//! the optimizer then inlines them, drops the dead stores, and removes the
//! formatting functions. Builds with debug assertions format messages on the
//! device and keep their cost.

use std::collections::HashMap;

/// Whether a function (by its mangled name) belongs to the panic path:
/// `core`'s helpers and the panic handler. (`offload`'s recorder stays a
/// call: it has no function pointers, and inlined, its copy loops would
/// add registers to every kernel.)
fn is_panic_path(name: &str) -> bool {
    (name.contains("4core") && (name.contains("panicking") || name.contains("_failed") || name.contains("_fail")))
        || name.contains("rust_begin_unwind")
}

/// The attribute group number a `define` line ends with (`… #12 {`).
fn group_of(line: &str) -> Option<(usize, usize, &str)> {
    let brace = line.rfind('{')?;
    let head = line[..brace].trim_end();
    let hash = head.rfind(" #")?;
    let num = &head[hash + 2..];
    if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((hash + 2, hash + 2 + num.len(), num))
}

/// The attribute group a `call` line ends with (`… #65` or `… #65, !noalias !3`).
fn call_group_of(line: &str) -> Option<(usize, usize, &str)> {
    let end = line.find(", !").unwrap_or(line.len());
    let head = line[..end].trim_end();
    let hash = head.rfind(" #")?;
    let num = &head[hash + 2..];
    if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) || !head[..hash].ends_with(')') {
        return None;
    }
    Some((hash + 2, hash + 2 + num.len(), num))
}

/// Rewrites `ir` (LLVM textual IR) as described in the module docs: the
/// panic path's definitions and the call sites that reach them lose
/// `noinline` (rustc marks both). Returns the new text and the number of
/// lines changed.
pub fn inline_panic_path(ir: &str) -> (String, usize) {
    // attribute groups: number → contents
    let mut groups: HashMap<String, String> = HashMap::new();
    let mut max_group = 0usize;
    for line in ir.lines() {
        if let Some(rest) = line.strip_prefix("attributes #") {
            if let Some((num, body)) = rest.split_once(" = ") {
                if let Ok(n) = num.parse::<usize>() {
                    max_group = max_group.max(n);
                    groups.insert(num.to_string(), body.to_string());
                }
            }
        }
    }
    let mut new_groups: HashMap<(String, bool), usize> = HashMap::new();
    let mut extra = String::new();
    let mut changed = 0;
    let mut out = String::with_capacity(ir.len() + 256);
    // Group `num` without `noinline`; with `alwaysinline` for definitions.
    let mut regroup = |num: &str, define: bool| -> Option<usize> {
        let body = groups.get(num)?;
        let words: Vec<&str> = body.trim_matches(|c| c == '{' || c == '}' || c == ' ').split(' ').collect();
        // Definitions always become `alwaysinline` (the panic handler has no
        // `noinline`, but a cold call site alone would not be inlined);
        // call sites change only if they forbid inlining.
        if words.contains(&"optnone") || words.contains(&"alwaysinline") || (!define && !words.contains(&"noinline")) {
            return None;
        }
        Some(*new_groups.entry((num.to_string(), define)).or_insert_with(|| {
            max_group += 1;
            let kept: Vec<&str> = words.iter().copied().filter(|w| *w != "noinline" && !w.is_empty()).collect();
            let always = if define { "alwaysinline " } else { "" };
            extra.push_str(&format!("attributes #{max_group} = {{ {always}{} }}\n", kept.join(" ")));
            max_group
        }))
    };
    for line in ir.lines() {
        let target = if line.starts_with("define ") {
            let name = line.split('@').nth(1).and_then(|r| r.split('(').next()).unwrap_or("");
            is_panic_path(name).then(|| group_of(line)).flatten().map(|g| (g, true))
        } else if line.contains("call ") {
            let callee = line.split(" @").nth(1).and_then(|r| r.split('(').next()).unwrap_or("");
            is_panic_path(callee).then(|| call_group_of(line)).flatten().map(|g| (g, false))
        } else {
            None
        };
        match target.and_then(|((start, end, num), define)| regroup(num, define).map(|m| (start, end, m))) {
            Some((start, end, m)) => {
                out.push_str(&line[..start]);
                out.push_str(&m.to_string());
                out.push_str(&line[end..]);
                changed += 1;
            }
            None => out.push_str(line),
        }
        out.push('\n');
    }
    out.push_str(&extra);
    (out, changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cold_core_panics_become_alwaysinline() {
        let ir = "\
define void @_RNvNtCsX_4core9panicking18panic_bounds_check(i64 %0, i64 %1, ptr %2) unnamed_addr #3 {
  ret void
}
define void @user_kernel(ptr %0) #4 {
  ret void
}
define void @_RNvCsY_7___rustc17rust_begin_unwind(ptr %0) #3 {
  unreachable
}
define void @kernel2(i64 %i) #4 {
  tail call void @_RNvNtCsX_4core9panicking18panic_bounds_check(i64 %i, i64 4, ptr inttoptr (i64 8 to ptr)) #6, !noalias !7
  call void @user_kernel(ptr null) #6
  unreachable
}
attributes #3 = { cold noinline noreturn nounwind }
attributes #4 = { noinline nounwind }
attributes #6 = { noinline noreturn nounwind }
";
        let (out, n) = inline_panic_path(ir);
        assert_eq!(n, 3, "{out}");
        assert!(out.contains("ptr inttoptr (i64 8 to ptr)) #8, !noalias !7"), "call sites lose noinline: {out}");
        assert!(out.contains("call void @user_kernel(ptr null) #6"), "other calls keep it: {out}");
        assert!(out.contains("attributes #8 = { noreturn nounwind }"), "{out}");
        assert!(out.contains("panic_bounds_check(i64 %0, i64 %1, ptr %2) unnamed_addr #7 {"), "{out}");
        assert!(out.contains("rust_begin_unwind(ptr %0) #7 {"), "{out}");
        assert!(out.contains("define void @user_kernel(ptr %0) #4 {"), "user functions keep theirs: {out}");
        assert!(out.contains("define void @kernel2(i64 %i) #4 {"), "{out}");
        assert!(out.contains("attributes #7 = { alwaysinline cold noreturn nounwind }"), "{out}");
        assert!(out.contains("attributes #3 = { cold noinline noreturn nounwind }"), "the old group stays: {out}");
    }

    #[test]
    fn the_handler_is_inlined_even_without_noinline() {
        let ir = "define void @_RNvCsY_7___rustc17rust_begin_unwind(ptr %0) #1 {\n  unreachable\n}\nattributes #1 = { noreturn nounwind }\n";
        let (out, n) = inline_panic_path(ir);
        assert_eq!(n, 1);
        assert!(out.contains("rust_begin_unwind(ptr %0) #2 {"), "{out}");
        assert!(out.contains("attributes #2 = { alwaysinline noreturn nounwind }"), "{out}");
    }

    #[test]
    fn unrelated_modules_are_unchanged() {
        let ir = "define void @k() #0 {\n  ret void\n}\nattributes #0 = { noinline }\n";
        assert_eq!(inline_panic_path(ir), (ir.to_string(), 0));
    }
}
