//! Reading what a compiled file says about its kernels: a linked host
//! binary's kernel records (section `offload_kernels`) and its v0 symbol
//! names, and an AMD GPU code object's kernel symbols.
//!
//! These are facts the host phase checks against the device image (see
//! `phases/rustc_host.rs`) and the collect round reads (see `generic.rs`).

use std::path::Path;

use object::{Object, ObjectSection, ObjectSymbol};

/// One launcher's record in a binary's section `offload_kernels`:
/// `symbol\tfile:line`, with `\tgeneric` for a generic kernel (whose
/// `symbol` is the base of its instantiations' symbols). The `#[kernel]`
/// macro writes them (offload-macros, `kernel/launcher.rs`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct KernelRecord {
    pub symbol: String,
    pub location: String,
    pub generic: bool,
}

/// The kernel records of the launchers linked into `exe` (none if it cannot
/// be read or has no such section).
pub fn kernel_records(exe: &Path) -> Vec<KernelRecord> {
    let Ok(bytes) = std::fs::read(exe) else { return Vec::new() };
    let Ok(file) = object::File::parse(&*bytes) else { return Vec::new() };
    let Some(data) = file.section_by_name("offload_kernels").and_then(|s| s.data().ok()) else { return Vec::new() };
    data.split(|&b| b == 0)
        .filter(|r| !r.is_empty())
        .filter_map(|r| {
            let r = String::from_utf8_lossy(r);
            let mut parts = r.split('\t');
            let symbol = parts.next()?.to_string();
            let location = parts.next()?.to_string();
            let generic = parts.next() == Some("generic");
            Some(KernelRecord { symbol, location, generic })
        })
        .collect()
}

/// Where the kernel `symbol` is defined, from `records` (`?` if unknown).
pub fn location_of<'r>(records: &'r [KernelRecord], symbol: &str) -> &'r str {
    records.iter().find(|r| r.symbol == symbol).map(|r| r.location.as_str()).unwrap_or("?")
}

/// The demangled names (`{:#}`, without hashes) of `exe`'s v0 symbols
/// (`_R…`) that contain `needle`; `None` if `exe` cannot be read or has no
/// symbol table (a stripped binary).
pub fn v0_symbols_containing(exe: &Path, needle: &str) -> Option<Vec<String>> {
    let bytes = std::fs::read(exe).ok()?;
    let file = object::File::parse(&*bytes).ok()?;
    let mut any = false;
    let mut out = Vec::new();
    for s in file.symbols() {
        any = true;
        let Ok(name) = s.name() else { continue };
        if name.starts_with("_R") && name.contains(needle) {
            out.push(format!("{:#}", rustc_demangle::demangle(name)));
        }
    }
    any.then_some(out)
}

/// Kernel symbols of an AMD GPU code object: ELF symbols with a `.kd`
/// (kernel descriptor) twin, named without the suffix.
pub fn elf_kernels(bytes: &[u8]) -> Vec<String> {
    let Ok(file) = object::File::parse(bytes) else { return Vec::new() };
    let mut k: Vec<String> =
        file.symbols().filter_map(|s| s.name().ok().and_then(|n| n.strip_suffix(".kd")).map(String::from)).collect();
    k.sort();
    k.dedup();
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_of_a_binary_without_kernels() {
        // This test binary has no records of its own, but a symbol table.
        let exe = std::env::current_exe().unwrap();
        assert_eq!(kernel_records(&exe), vec![]);
        assert_eq!(kernel_records(Path::new("/nonexistent")), vec![]);
        assert!(v0_symbols_containing(&exe, "__offload_kernel_").is_some_and(|v| v.is_empty()));
        assert_eq!(v0_symbols_containing(Path::new("/nonexistent"), "x"), None);
        assert!(elf_kernels(b"not an object").is_empty());
    }

    /// Records in the layout the `#[kernel]` macro writes, in an object file.
    #[test]
    fn records_are_read_from_the_section() {
        use object::write::Object as Obj;
        let mut obj = Obj::new(object::BinaryFormat::Elf, object::Architecture::X86_64, object::Endianness::Little);
        let s = obj.add_section(Vec::new(), b"offload_kernels".to_vec(), object::SectionKind::ReadOnlyData);
        obj.append_section_data(
            s,
            b"__offload_kernel_a_k_1\tsrc/a.rs:3\0\0__offload_kernel_a_g_2\tsrc/a.rs:9\tgeneric\0",
            1,
        );
        let path = std::env::temp_dir().join(format!("offload-records-{}.o", std::process::id()));
        std::fs::write(&path, obj.write().unwrap()).unwrap();
        let records = kernel_records(&path);
        let _ = std::fs::remove_file(&path);
        assert_eq!(
            records,
            [
                KernelRecord { symbol: "__offload_kernel_a_k_1".into(), location: "src/a.rs:3".into(), generic: false },
                KernelRecord { symbol: "__offload_kernel_a_g_2".into(), location: "src/a.rs:9".into(), generic: true },
            ]
        );
        assert_eq!(location_of(&records, "__offload_kernel_a_g_2"), "src/a.rs:9");
        assert_eq!(location_of(&records, "other"), "?");
    }
}
