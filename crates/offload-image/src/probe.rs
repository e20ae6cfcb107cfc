//! The answers of tool probes (`llc --version`, `rustc -vV`, `llc
//! -mcpu=help`) kept across runs, as cargo keeps `rustc -vV` in
//! `.rustc_info.json`: every `cargo offload` command asks a dozen LLVM and
//! Rust executables what they are, and starting one (loading `libLLVM`)
//! costs more than the rest of a `--dry-run`.
//!
//! An answer is keyed by the executable's canonical path, size and
//! modification time and by the arguments, so a new install of the tool is
//! asked again. Only answers that depend on the executable alone belong
//! here; programs found on `PATH` by name, rustup's proxies (whose answer
//! follows `rustup default` and directory overrides) and scripts (`#!`, a
//! wrapper's answer may follow its environment) are always asked. Only
//! successful answers are kept. The cache is
//! [`cache_root`]`/probes`; a cache that cannot be read or written is
//! ignored.

use std::path::{Path, PathBuf};
use std::process::Output;

/// The environment variable that moves offload's cache directory.
pub const CACHE_VAR: &str = "OFFLOAD_CACHE_DIR";

/// Part of every key: bump it when the file format changes.
const FORMAT: &str = "offload-probe 1";

/// `OFFLOAD_CACHE_DIR`, else `$XDG_CACHE_HOME/offload`, else
/// `$HOME/.cache/offload` (the XDG base directory specification's
/// default); `None` without any of them.
pub fn cache_root() -> Option<PathBuf> {
    cache_root_from(|k| std::env::var_os(k))
}

/// [`cache_root`] with the environment read through `var`; an empty value
/// counts as unset.
pub fn cache_root_from(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> Option<PathBuf> {
    let var = |k: &str| var(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    var(CACHE_VAR)
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("offload")))
        .or_else(|| var("HOME").map(|h| h.join(".cache").join("offload")))
}

/// `program args…`'s output: the kept answer if there is one, else `run()`'s
/// (kept if the program exited successfully). `run` is how the caller
/// probes (with its time limit, for example).
pub fn cached(program: &Path, args: &[&str], run: impl FnOnce() -> Option<Output>) -> Option<Output> {
    let Some(file) = entry(program, args) else { return run() };
    if let Some(out) = std::fs::read(&file).ok().and_then(|b| decode(&b)) {
        return Some(out);
    }
    let out = run()?;
    if out.status.success() {
        if let Some(dir) = file.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let _ = crate::file::write_if_changed(&file, &encode(&out));
    }
    Some(out)
}

/// Drops the kept answer of `program args…`, if any: for a caller that
/// found it unreadable (a cache file edited or damaged but well-formed),
/// before it asks again.
pub fn forget(program: &Path, args: &[&str]) {
    if let Some(file) = entry(program, args) {
        let _ = std::fs::remove_file(file);
    }
}

/// The cache file of `program args…`, if its answer may be kept.
fn entry(program: &Path, args: &[&str]) -> Option<PathBuf> {
    if !program.is_absolute() || is_rustup_proxy(program) || is_script(program) {
        return None;
    }
    let key = format!("{FORMAT}\0{}\0{}", crate::file::identity(program), args.join("\0"));
    Some(cache_root()?.join("probes").join(format!("{:016x}", crate::hash::fnv64(key.as_bytes()))))
}

/// Whether `program` is one of rustup's proxies (`~/.cargo/bin/rustc`, a
/// hard link to the `rustup` beside it), a symbolic link to a `rustup`, or
/// a copy of the cargo home's `rustup`.
fn is_rustup_proxy(program: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let target = std::fs::canonicalize(program).unwrap_or_else(|_| program.to_path_buf());
    if target.file_stem().is_some_and(|n| n.to_string_lossy().starts_with("rustup")) {
        return true;
    }
    // A link beside `rustup`, or a copy of the `rustup` that the user's
    // cargo home holds (the same length and bytes).
    let Ok(p) = std::fs::metadata(program) else { return false };
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")));
    let rustups = [Some(program.with_file_name("rustup")), cargo_home.map(|c| c.join("bin").join("rustup"))];
    rustups.into_iter().flatten().any(|rustup| match std::fs::metadata(&rustup) {
        Ok(r) if (p.dev(), p.ino()) == (r.dev(), r.ino()) => true,
        Ok(r) if r.len() == p.len() => std::fs::read(&rustup).ok() == std::fs::read(program).ok(),
        _ => false,
    })
}

/// Whether `program` is a script (`#!`): a wrapper whose answer may follow
/// its environment (`exec ${REAL_RUSTC:-rustc} "$@"`), not its bytes.
fn is_script(program: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 2];
    std::fs::File::open(program).and_then(|mut f| f.read_exact(&mut head)).is_ok_and(|()| &head == b"#!")
}

/// `<FORMAT>\n<stdout length>\n<stdout><stderr>` (only successes are kept).
fn encode(out: &Output) -> Vec<u8> {
    let mut v = format!("{FORMAT}\n{}\n", out.stdout.len()).into_bytes();
    v.extend_from_slice(&out.stdout);
    v.extend_from_slice(&out.stderr);
    v
}

fn decode(bytes: &[u8]) -> Option<Output> {
    use std::os::unix::process::ExitStatusExt;
    let rest = bytes.strip_prefix(format!("{FORMAT}\n").as_bytes())?;
    let nl = rest.iter().position(|&b| b == b'\n')?;
    let len: usize = std::str::from_utf8(&rest[..nl]).ok()?.parse().ok()?;
    let body = &rest[nl + 1..];
    let (stdout, stderr) = (body.get(..len)?, body.get(len..)?);
    Some(Output { status: std::process::ExitStatus::from_raw(0), stdout: stdout.to_vec(), stderr: stderr.to_vec() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    #[test]
    fn the_cache_is_the_users_unless_overridden() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |k: &str| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| std::ffi::OsString::from(v))
        };
        assert_eq!(cache_root_from(env(&[("HOME", "/home/u")])), Some(PathBuf::from("/home/u/.cache/offload")));
        let xdg = &[("HOME", "/home/u"), ("XDG_CACHE_HOME", "/xdg")];
        assert_eq!(cache_root_from(env(xdg)), Some(PathBuf::from("/xdg/offload")));
        let all = &[("HOME", "/home/u"), ("XDG_CACHE_HOME", "/xdg"), (CACHE_VAR, "/c")];
        assert_eq!(cache_root_from(env(all)), Some(PathBuf::from("/c")));
        let empty = &[("HOME", "/home/u"), ("XDG_CACHE_HOME", "/xdg"), (CACHE_VAR, "")];
        assert_eq!(cache_root_from(env(empty)), Some(PathBuf::from("/xdg/offload")), "empty is unset");
        assert_eq!(cache_root_from(env(&[])), None);
    }

    #[test]
    fn scripts_and_programs_named_without_a_path_are_not_kept() {
        let dir = std::env::temp_dir().join(format!("offload-probe-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (script, binary) = (dir.join("wrap-rustc"), dir.join("tool"));
        std::fs::write(&script, "#!/bin/sh\nexec rustc \"$@\"\n").unwrap();
        std::fs::write(&binary, b"\x7fELF....").unwrap();
        assert!(is_script(&script) && !is_script(&binary));
        assert!(entry(Path::new("rustc"), &["-vV"]).is_none(), "found on PATH by name");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn copies_of_rustup_are_proxies() {
        let dir = std::env::temp_dir().join(format!("offload-probe-proxy-{}", std::process::id()));
        let bin = dir.join("home/.cargo/bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(bin.join("rustup"), b"\x7fELF rustup").unwrap();
        let (copy, other) = (dir.join("rustc"), dir.join("llc"));
        std::fs::copy(bin.join("rustup"), &copy).unwrap();
        std::fs::write(&other, b"\x7fELF llc...").unwrap();
        std::env::set_var("CARGO_HOME", dir.join("home/.cargo"));
        assert!(is_rustup_proxy(&copy), "a copy of the cargo home's rustup");
        assert!(!is_rustup_proxy(&other), "same length, other bytes");
        std::env::remove_var("CARGO_HOME");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_kept_answer_is_used_until_forgotten() {
        let dir = std::env::temp_dir().join(format!("offload-probe-keep-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let tool = dir.join("llc");
        std::fs::write(&tool, b"\x7fELF llc").unwrap();
        std::env::set_var(CACHE_VAR, dir.join("cache"));
        let asks = std::cell::Cell::new(0);
        let ask = || {
            asks.set(asks.get() + 1);
            Some(Output {
                status: ExitStatusExt::from_raw(0),
                stdout: b"LLVM version 22.1.8\n".to_vec(),
                stderr: vec![],
            })
        };
        for _ in 0..2 {
            assert_eq!(cached(&tool, &["--version"], ask).unwrap().stdout, b"LLVM version 22.1.8\n");
        }
        assert_eq!(asks.get(), 1, "the second answer is the kept one");
        forget(&tool, &["--version"]);
        cached(&tool, &["--version"], ask).unwrap();
        assert_eq!(asks.get(), 2, "asked again once forgotten");
        std::env::remove_var(CACHE_VAR);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn answers_round_trip_with_any_bytes() {
        let out = Output {
            status: ExitStatusExt::from_raw(0),
            stdout: b"LLVM 22\n\n\x00x".to_vec(),
            stderr: b"w\n".to_vec(),
        };
        let back = decode(&encode(&out)).unwrap();
        assert_eq!((back.status.success(), back.stdout, back.stderr), (true, out.stdout, out.stderr));
        assert!(decode(b"offload-probe 0\n1\nx").is_none(), "another format");
        assert!(decode(format!("{FORMAT}\n9\nshort").as_bytes()).is_none(), "truncated");
    }
}
