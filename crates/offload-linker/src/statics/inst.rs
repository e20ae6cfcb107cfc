//! Reading instructions of LLVM's textual IR: which operand an
//! instruction writes to, and the operands of a list.

/// Whether `operand` refers to the global `@name`.
pub(super) fn mentions(operand: &str, name: &str) -> bool {
    let needle = format!("@{name}");
    operand.match_indices(&needle).any(|(i, _)| {
        let after = operand[i + needle.len()..].bytes().next();
        !matches!(after, Some(b) if b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'$' | b'-'))
    })
}

/// The operands of an instruction's operand list, split at top-level commas.
pub(super) fn operands(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in s.char_indices() {
        match c {
            '(' | '[' | '{' | '<' => depth += 1,
            ')' | ']' | '}' | '>' => depth -= 1,
            ',' if depth == 0 => {
                out.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(s[start..].trim());
    out
}

/// The destination operand of a writing instruction (`ptr …`), if `inst`
/// is one.
pub(super) fn destination(inst: &str) -> Option<&str> {
    fn skip<'a>(prefix: &str, t: &'a str) -> Option<&'a str> {
        t.strip_prefix(prefix).map(str::trim_start)
    }
    let inst = match inst.split_once(" = ") {
        Some((lhs, rhs)) if lhs.starts_with('%') => rhs,
        _ => inst,
    };
    if let Some(rest) = skip("store ", inst) {
        // store [volatile] [atomic] <ty> <value>, ptr <dest>[, …]
        return operands(rest).get(1).copied();
    }
    if let Some(rest) = skip("atomicrmw ", inst) {
        // atomicrmw [volatile] <op> ptr <dest>, <ty> <value> …
        let rest = rest.strip_prefix("volatile ").unwrap_or(rest);
        let rest = rest.split_once(' ')?.1;
        return operands(rest).first().copied();
    }
    if let Some(rest) = skip("cmpxchg ", inst) {
        let rest = rest.strip_prefix("weak ").unwrap_or(rest);
        let rest = rest.strip_prefix("volatile ").unwrap_or(rest);
        return operands(rest).first().copied();
    }
    let call = inst.find("call ")?;
    let callee = &inst[call..];
    if ["@llvm.memcpy", "@llvm.memmove", "@llvm.memset"].iter().any(|m| callee.contains(m)) {
        let args = &callee[callee.find('(')? + 1..];
        return operands(args).first().copied();
    }
    None
}
