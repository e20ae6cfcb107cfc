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
//!
//! Before that, [`redirect_core_panics`] sends `core`'s panics whose
//! messages carry values (an index out of bounds, a slice range,
//! `copy_from_slice` lengths, `Option::expect`'s message) to `offload`'s
//! functions of the same parameters (`offload`'s `report::core_panics`),
//! which record the values for the host to format, so that optimized
//! builds report those messages too, with no `core::fmt` on the GPU.

use std::collections::HashMap;

/// `core`'s panics that carry values, by the end of their mangled names
/// (`core` 1.96 and 1.101: `library/core/src/panicking.rs`,
/// `slice/index.rs`, `slice/mod.rs`, `option.rs`), and the functions of
/// `offload` (`report::core_panics`) that take the same parameters
/// instead.
pub const CORE_PANICS: [(&str, &str); 4] = [
    ("4core9panicking18panic_bounds_check", "__offload_panic_bounds_check"),
    ("4core5slice5index16slice_index_fail", "__offload_panic_slice_index_fail"),
    ("4core5slice20copy_from_slice_impl17len_mismatch_fail", "__offload_panic_len_mismatch_fail"),
    ("4core6option13expect_failed", "__offload_panic_expect_failed"),
];

/// Whether the mangled `symbol` is the `core` function whose whole path is
/// `path` (length-prefixed identifiers from the crate: `4core9panicking…`),
/// in v0 mangling (`_R…C<disambiguator>_<path>`, nothing after it: not an
/// item nested in it, not generic) or legacy mangling
/// (`_ZN<path>17h<16 hex digits>E`).
fn is_core_function(symbol: &str, path: &str) -> bool {
    if symbol.starts_with("_R") {
        // The crate root right before the path: `C4core` or `Cs…_4core`.
        return symbol.strip_suffix(path).is_some_and(|head| head.ends_with('_') || head.ends_with('C'));
    }
    let Some(legacy) = symbol.strip_prefix("_ZN").and_then(|s| s.strip_suffix('E')) else {
        return false;
    };
    match legacy.strip_prefix(path) {
        Some(hash) => hash.len() == 19 && hash.starts_with("17h") && hash[3..].bytes().all(|b| b.is_ascii_hexdigit()),
        None => false,
    }
}

/// The function a `define`/`declare` line (or a `call`) names, and the
/// byte range of its parameter (argument) list, parentheses excluded.
fn callee_and_params(line: &str) -> Option<(&str, std::ops::Range<usize>)> {
    let at = line.find(" @")? + 2;
    let open = at + line[at..].find('(')?;
    let name = &line[at..open];
    if name.is_empty() || name.contains(|c: char| c.is_whitespace() || c == '"') {
        return None;
    }
    let mut depth = 0usize;
    for (i, c) in line[open..].char_indices() {
        match c {
            '(' => depth += 1,
            ')' if depth == 1 => return Some((name, open + 1..open + i)),
            ')' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// The types of a parameter list (`i64 noundef %0, ptr align 8 %1` →
/// `["i64", "ptr"]`): the first word of each parameter at the outer level,
/// parameters split at commas at that level (not in
/// `captures(address, read_provenance)` nor `{ i64, i64 }`).
fn param_types(params: &str) -> Vec<&str> {
    let mut types = Vec::new();
    let (mut depth, mut start, mut ty_end) = (0usize, None::<usize>, None::<usize>);
    for (i, c) in params.char_indices().chain(std::iter::once((params.len(), ','))) {
        match c {
            '(' | '{' | '[' | '<' => depth += 1,
            ')' | '}' | ']' | '>' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                if let Some(s) = start.take() {
                    types.push(&params[s..ty_end.take().unwrap_or(i)]);
                }
                continue;
            }
            c if c.is_whitespace() && depth == 0 => {
                if start.is_some() && ty_end.is_none() {
                    ty_end = Some(i);
                }
                continue;
            }
            _ => {}
        }
        start.get_or_insert(i);
    }
    types
}

/// Rewrites `ir` (LLVM textual IR of the linked module) so that every call
/// to one of [`CORE_PANICS`]' `core` functions calls `offload`'s instead.
/// A pair is left alone unless the module defines `offload`'s function and
/// its parameter types are those of `core`'s (as defined or declared in
/// the module): a `core` or `offload` that differs keeps `core`'s panic.
/// Returns the new text and the number of calls redirected.
pub fn redirect_core_panics(ir: &str) -> (String, usize) {
    // Parameter types of every defined or declared function, by name.
    let mut signatures: HashMap<&str, (Vec<&str>, bool)> = HashMap::new();
    for line in ir.lines().filter(|l| l.starts_with("define ") || l.starts_with("declare ")) {
        if let Some((name, params)) = callee_and_params(line) {
            signatures.insert(name, (param_types(&line[params]), line.starts_with("define ")));
        }
    }
    // core's symbol → offload's, for the pairs that match.
    let mut redirects: HashMap<&str, &str> = HashMap::new();
    for (path, ours) in CORE_PANICS {
        let Some((our_types, true)) = signatures.get(ours) else { continue };
        for (name, (types, _)) in &signatures {
            if is_core_function(name, path) && types == our_types {
                redirects.insert(name, ours);
            }
        }
    }
    if redirects.is_empty() {
        return (ir.to_string(), 0);
    }
    let mut out = String::with_capacity(ir.len());
    let mut changed = 0;
    for line in ir.lines() {
        let target = if line.starts_with("define ") || line.starts_with("declare ") {
            None
        } else {
            callee_and_params(line).and_then(|(name, _)| redirects.get(name).map(|ours| (name, *ours)))
        };
        match target {
            Some((name, ours)) => {
                out.push_str(&line.replacen(&format!("@{name}("), &format!("@{ours}("), 1));
                changed += 1;
            }
            None => out.push_str(line),
        }
        out.push('\n');
    }
    (out, changed)
}

/// Whether a function (by its mangled name) belongs to the panic path:
/// `core`'s helpers and the panic handler. (`offload`'s recorder stays a
/// call: it has no function pointers, and inlined, its copy loops would
/// add registers to every kernel.)
fn is_panic_path(name: &str) -> bool {
    (name.contains("4core") && (name.contains("panicking") || name.contains("_failed") || name.contains("_fail")))
        || name.contains("rust_begin_unwind")
}

/// The attribute group of a `define` line: the first `#N` after the
/// parameters (`… unnamed_addr #12 {`, or `… #12 !guid !7 {` with the
/// metadata attachments LLVM 23 writes there), as its byte range and text.
fn group_of(line: &str) -> Option<(usize, usize, &str)> {
    let (_, params) = callee_and_params(line)?;
    let after = params.end + 1;
    let brace = after + line[after..].rfind('{')?;
    let mut at = after;
    for word in line[after..brace].split(' ') {
        let num = word.strip_prefix('#').filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        if let Some(num) = num {
            return Some((at + 1, at + word.len(), num));
        }
        at += word.len() + 1;
    }
    None
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

    /// LLVM 23 writes metadata attachments between a definition's attribute
    /// group and its body (`#28 !guid !1418 {`).
    #[test]
    fn definitions_with_metadata_attachments_are_rewritten() {
        let ir = "\
define void @_RNvNtCsed7FRaiEwa7_4core9panicking18panic_bounds_check(i64 noundef %0, i64 noundef %1, ptr noalias nofree noundef readonly align 8 captures(address, read_provenance) dereferenceable(24) %2) unnamed_addr #28 !guid !1418 {
  unreachable
}
attributes #28 = { cold convergent minsize noinline noreturn nounwind optsize }
";
        let (out, n) = inline_panic_path(ir);
        assert_eq!(n, 1, "{out}");
        assert!(out.contains("dereferenceable(24) %2) unnamed_addr #29 !guid !1418 {"), "{out}");
        assert!(out.contains("attributes #29 = { alwaysinline cold convergent minsize noreturn nounwind optsize }"));
    }

    /// A module as llvm-link writes it: `core`'s panics with values, called
    /// from a kernel, and `offload`'s functions of the same parameters.
    const CORE_AND_OFFLOAD: &str = "\
define void @_RNvNtCsed7FRaiEwa7_4core9panicking18panic_bounds_check(i64 noundef %0, i64 noundef %1, ptr noalias nofree noundef readonly align 8 captures(address, read_provenance) dereferenceable(24) %2) unnamed_addr #28 !guid !1418 {
  unreachable
}
define void @_RNvNtNtCsed7FRaiEwa7_4core5slice5index16slice_index_fail(i64 noundef %0, i64 noundef %1, i64 noundef %2, ptr noalias nofree noundef readonly align 8 captures(address, read_provenance) dereferenceable(24) %3) unnamed_addr #26 !guid !1855 {
  unreachable
}
define void @_RNvNtCsed7FRaiEwa7_4core6option13expect_failed(ptr noalias nofree noundef nonnull readonly captures(address, read_provenance) %0, i64 noundef %1, ptr noalias noundef readonly align 8 dereferenceable(24) %2) unnamed_addr #26 {
  unreachable
}
define void @__offload_panic_bounds_check(i64 noundef %index, i64 noundef %len, ptr noalias noundef readonly align 8 dereferenceable(24) %location) unnamed_addr #30 {
  unreachable
}
define void @__offload_panic_slice_index_fail(i64 noundef %start, i64 noundef %end, i64 noundef %len, ptr noalias noundef readonly align 8 dereferenceable(24) %location) unnamed_addr #30 {
  unreachable
}
define void @__offload_panic_expect_failed(i64 noundef %msg, i64 noundef %len, ptr noalias noundef readonly align 8 dereferenceable(24) %location) unnamed_addr #30 {
  unreachable
}
define void @kernel(i64 %i, i64 %j) {
  tail call void @_RNvNtCsed7FRaiEwa7_4core9panicking18panic_bounds_check(i64 noundef %i, i64 noundef 32, ptr noalias nofree noundef readonly align 8 captures(address, read_provenance) dereferenceable(24) @anon.4) #66, !noalias !837
  call void @_RNvNtNtCsed7FRaiEwa7_4core5slice5index16slice_index_fail(i64 %i, i64 %j, i64 32, ptr @anon.5) #66
  call void @_RNvNtCsed7FRaiEwa7_4core6option13expect_failed(ptr @msg, i64 5, ptr @anon.6) #66
  call void @_RNCNvNtCsed7FRaiEwa7_4core9panicking18panic_bounds_check0B3_(i64 %i) #66
  unreachable
}
";

    #[test]
    fn calls_to_cores_panics_with_values_go_to_offloads() {
        let (out, n) = redirect_core_panics(CORE_AND_OFFLOAD);
        assert_eq!(n, 2, "{out}");
        assert!(
            out.contains("  tail call void @__offload_panic_bounds_check(i64 noundef %i, i64 noundef 32, ptr noalias nofree noundef readonly align 8 captures(address, read_provenance) dereferenceable(24) @anon.4) #66, !noalias !837\n"),
            "{out}"
        );
        assert!(
            out.contains("  call void @__offload_panic_slice_index_fail(i64 %i, i64 %j, i64 32, ptr @anon.5) #66\n")
        );
        // Parameters that differ (`ptr` and `i64` against `i64` and `i64`): kept.
        assert!(out.contains("call void @_RNvNtCsed7FRaiEwa7_4core6option13expect_failed(ptr @msg"), "{out}");
        // An item nested in `panic_bounds_check` (a closure) is another function.
        assert!(out.contains("call void @_RNCNvNtCsed7FRaiEwa7_4core9panicking18panic_bounds_check0B3_(i64 %i)"));
        // Definitions stay: `opt` drops what nothing calls.
        assert!(out.contains("define void @_RNvNtCsed7FRaiEwa7_4core9panicking18panic_bounds_check(i64 noundef %0"));
    }

    #[test]
    fn without_offloads_functions_cores_panics_stay() {
        let only_core: String =
            CORE_AND_OFFLOAD.split("define void @__offload_panic_bounds_check").next().unwrap().to_string()
                + "define void @kernel(i64 %i) {\n  call void @_RNvNtCsed7FRaiEwa7_4core9panicking18panic_bounds_check(i64 %i, i64 4, ptr @a)\n  unreachable\n}\n";
        assert_eq!(redirect_core_panics(&only_core), (only_core.clone(), 0));
    }

    #[test]
    fn core_functions_are_recognized_in_both_manglings() {
        let path = "4core9panicking18panic_bounds_check";
        assert!(is_core_function("_RNvNtCsed7FRaiEwa7_4core9panicking18panic_bounds_check", path));
        assert!(is_core_function("_RNvNtC4core9panicking18panic_bounds_check", path));
        assert!(is_core_function("_ZN4core9panicking18panic_bounds_check17h0123456789abcdefE", path));
        assert!(!is_core_function("_ZN4core9panicking18panic_bounds_check17h0123456789abcdeE", path), "short hash");
        assert!(!is_core_function("_RNvNtCs1_5mycore9panicking18panic_bounds_check", path), "another crate");
        assert!(!is_core_function("_RINvNtCs1_4core9panicking18panic_bounds_checkjEB2_", path), "generic");
        assert!(!is_core_function("panic_bounds_check", path));
    }

    #[test]
    fn parameter_types_split_at_top_level_commas() {
        let line =
            "define void @f(i64 noundef %0, ptr noalias captures(address, read_provenance) %1, { i64, i64 } %2) #1 {";
        let (name, params) = callee_and_params(line).unwrap();
        assert_eq!(name, "f");
        assert_eq!(param_types(&line[params]), ["i64", "ptr", "{ i64, i64 }"]);
        assert_eq!(param_types(""), Vec::<&str>::new());
    }

    #[test]
    fn unrelated_modules_are_unchanged() {
        let ir = "define void @k() #0 {\n  ret void\n}\nattributes #0 = { noinline }\n";
        assert_eq!(inline_panic_path(ir), (ir.to_string(), 0));
    }
}
