//! Kernel entry points in PTX text.

/// Lists the kernel entry names in PTX text: every `.entry NAME(` directive.
pub fn ptx_entries(ptx: &str) -> Vec<String> {
    let mut names = Vec::new();
    for line in ptx.lines() {
        let mut words = line.split_whitespace();
        while let Some(w) = words.next() {
            if w == ".entry" {
                if let Some(name) = words.next() {
                    let name = name.split('(').next().unwrap_or(name);
                    if !name.is_empty() {
                        names.push(name.to_string());
                    }
                }
                break;
            }
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_in_ptx() {
        let ptx = "// .globl k1\n.visible .entry k1(\n\t.param .u64 p\n)\n.entry k2()\n.func f()\n";
        assert_eq!(ptx_entries(ptx), vec!["k1", "k2"]);
    }
}
