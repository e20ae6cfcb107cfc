//! The counts and codes in the summary lines of the device pass, without
//! the diagnostics it leaves out (the PTX feature warning of rustc before
//! 1.101; rustc's E0061 after a kernel calling a kernel): cargo's `could
//! not compile … due to N previous errors; M warnings emitted` and
//! `generated M warnings` lines ([`recount`]), and rustc's `rustc
//! --explain` notes ([`Explain`]).

use std::collections::HashMap;

/// The diagnostics left out of one target.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Left {
    pub errors: usize,
    pub warnings: usize,
}

/// How a target is named in cargo's summary lines (`` `pkg` (lib) ``,
/// `` `pkg` (bin "name") ``), as a key: `lib:<crate name>` for a library
/// (whose name the line gives as its package's), else the target's name.
pub fn unit_key(t: &cargo_metadata::Target) -> String {
    use cargo_metadata::TargetKind;
    if t.kind.iter().any(|k| matches!(k, TargetKind::Lib | TargetKind::RLib | TargetKind::ProcMacro)) {
        format!("lib:{}", t.name.replace('-', "_"))
    } else {
        t.name.clone()
    }
}

/// The [`unit_key`] of the target a line of cargo's names (`` `pkg` (bin "x") ``).
fn unit_of(line: &str) -> Option<String> {
    let (_, rest) = line.split_once(" `")?;
    let (package, rest) = rest.split_once("` (")?;
    let (desc, _) = rest.split_once(')')?;
    Some(match desc.split_once('"') {
        Some((_, name)) => name.split('"').next()?.to_string(),
        None => format!("lib:{}", package.replace('-', "_")),
    })
}

/// `line` with the count `<sep><N><word>` (the first `word` of `words`
/// that follows the number) replaced by `f(N)`'s text (`None`: the whole
/// `<sep>…<word>` taken out).
fn replace_count(line: &str, sep: &str, words: &[&str], f: impl Fn(usize) -> Option<String>) -> Option<String> {
    let mut from = 0;
    while let Some(i) = line[from..].find(sep) {
        let start = from + i + sep.len();
        let digits = line[start..].find(|c: char| !c.is_ascii_digit()).unwrap_or(line.len() - start);
        if let (Ok(n), Some(word)) = (
            line[start..start + digits].parse::<usize>(),
            words.iter().find(|w| line[start + digits..].starts_with(*w)),
        ) {
            let end = start + digits + word.len();
            return Some(format!("{}{}{}", &line[..from + i], f(n).unwrap_or_default(), &line[end..]));
        }
        from = start;
    }
    None
}

/// One of cargo's stderr lines without the diagnostics of `left` (per
/// [`unit_key`]) in its counts: `could not compile `pkg` (bin "x") due to 2
/// previous errors; 1 warning emitted` → `… due to 1 previous error`,
/// `warning: `pkg` (lib) generated 1 warning` → nothing (`None`); other
/// lines as they are.
pub fn recount(line: &str, left: &HashMap<String, Left>) -> Option<String> {
    let Some(out) = unit_of(line).and_then(|u| left.get(&u).copied()) else { return Some(line.to_string()) };
    let mut line = line.to_string();
    if out.errors > 0 {
        let words = [" previous errors", " previous error"];
        let f = |n: usize| {
            Some(format!(" due to {}", crate::status::count(n.saturating_sub(out.errors).max(1), "previous error")))
        };
        line = replace_count(&line, " due to ", &words, f).unwrap_or(line);
    }
    if out.warnings > 0 {
        let emitted = [" warnings emitted", " warning emitted"];
        let f = |n: usize| {
            (n > out.warnings).then(|| format!("; {} emitted", crate::status::count(n - out.warnings, "warning")))
        };
        if let Some(l) = replace_count(&line, "; ", &emitted, f) {
            return Some(l);
        }
        let f = |n: usize| {
            (n > out.warnings).then(|| format!(" generated {}", crate::status::count(n - out.warnings, "warning")))
        };
        if let Some(l) = replace_count(&line, " generated ", &[" warnings", " warning"], f) {
            return l.contains(" generated ").then_some(l);
        }
    }
    Some(line)
}

/// rustc's notes `Some errors have detailed explanations: E0061, E0277.`
/// and `For more information about an error, try `rustc --explain
/// E0061`.` of one target, without the codes of the errors left out (and
/// not shown elsewhere in the target).
#[derive(Debug, Default)]
pub struct Explain {
    /// The codes the list named, less those left out (after the list).
    listed: Option<Vec<String>>,
}

impl Explain {
    /// The note's message with `gone`'s codes taken out; `None`: the note
    /// says nothing then, left out.
    pub fn note(&mut self, message: &str, gone: impl Fn(&str) -> bool) -> Option<String> {
        if let Some(list) = message.strip_prefix("Some errors have detailed explanations: ") {
            let codes: Vec<String> =
                list.trim_end_matches('.').split(", ").filter(|c| !gone(c)).map(String::from).collect();
            let text = format!("Some errors have detailed explanations: {}.", codes.join(", "));
            let shown = (codes.len() > 1).then_some(text);
            self.listed = Some(codes);
            return shown;
        }
        let (_, named) = message.split_once("`rustc --explain ")?;
        let named = named.trim_end_matches(['.', '`']);
        match &self.listed {
            Some(codes) if codes.len() == 1 => {
                Some(format!("For more information about this error, try `rustc --explain {}`.", codes[0]))
            }
            Some(codes) if !codes.is_empty() && gone(named) => {
                Some(format!("For more information about an error, try `rustc --explain {}`.", codes[0]))
            }
            _ if gone(named) => None,
            _ => Some(message.to_string()),
        }
    }
}

#[cfg(test)]
mod tests;
